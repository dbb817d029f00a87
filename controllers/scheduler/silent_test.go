package scheduler

import (
	"context"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestScaleDownKeepsASilentShare: a Divided Workload scaled down (6 to 5)
// while one share's cluster does not answer, within the share's
// toleration of it: that share's replicas are not known to be gone (its
// Ready is Unknown), so they count as it holds them, as a placed Workload
// stays where it is until its toleration is up. Before, the share counted
// by its Ready replicas (0): it was deleted and the other grew to 5, 8
// pods running for 5 until the cluster answered, a move its toleration
// forbids.
func TestScaleDownKeepsASilentShare(t *testing.T) {
	profiles := defaultProfiles(t)
	tol := st.TolerateFor(v1alpha1.TaintClusterUnreachable, 300)
	web := dividedWeb(5, tol)
	share := func(cluster string, silent bool) *v1alpha1.Workload {
		return shareOfWeb(web, cluster, 3, 3, tol, func(w *v1alpha1.Workload) {
			w.Status.SetConditions(v1alpha1.Scheduled("placed on "+cluster, w.Generation), v1alpha1.Available("3 of 3 replicas ready in "+cluster, w.Generation))
			if silent {
				// As the propagator says it of a committed cluster that
				// does not answer.
				w.Status.ReadyReplicas = 0
				w.Status.SetConditions(v1alpha1.ReadyUnknownOn("default/"+cluster, w.Generation))
			}
		})
	}
	room := st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")
	c, _, r, _ := fleetOf(t, profiles, []client.Object{web, share("a", true), share("b", false)}, interceptor.Funcs{},
		st.Cluster("a", st.NotReady(v1alpha1.ReasonUnreachable), st.NoExecuteSince(v1alpha1.TaintClusterUnreachable, time.Now().Add(-10*time.Second)), room),
		st.Cluster("b", room))
	ctx := context.Background()
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
		t.Fatal(err)
	}
	if _, err := r.divide(ctx, w); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *v1alpha1.Workload {
		sh := &v1alpha1.Workload{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, sh); err != nil {
			t.Fatal(err)
		}
		return sh
	}
	a, b := get("web-a"), get("web-b")
	if a.DeletionTimestamp != nil || b.ReplicaCount() > 3 || a.ReplicaCount()+b.ReplicaCount() != 5 {
		t.Errorf("web-a: %d replicas, deleted %t; web-b: %d; want the 5 divided between the shares as they stand, none grown for the silent one",
			a.ReplicaCount(), a.DeletionTimestamp != nil, b.ReplicaCount())
	}
}

// TestMoveBackHoldsItsPlaceUntilOldSharesGo: a move back whose shares
// match where it goes, but one it shrank away is still being deleted (its
// pods stopping, or its cluster not answering): the move goes on, its
// place under --max-concurrent-moves held, until that share is gone, as a
// drain's move holds its place until the old copies are gone. Before, its
// record went at once, and moves could overlap beyond the bound.
func TestMoveBackHoldsItsPlaceUntilOldSharesGo(t *testing.T) {
	profiles := defaultProfiles(t)
	web := dividedWeb(4, func(w *v1alpha1.Workload) {
		w.Status.Rebalancing = &v1alpha1.Rebalancing{Generation: w.Generation, Time: metav1.Now(), Message: "a and b are preferred",
			Shares: []v1alpha1.ClusterReplicas{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Replicas: 2}, {Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Replicas: 2}}}
	})
	share := func(cluster string, n int32) *v1alpha1.Workload { return shareOfWeb(web, cluster, n, n) }
	stopping := share("c", 2)
	stopping.DeletionTimestamp = ptr.To(metav1.Now())
	room := st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")
	c, cache, r, _ := fleetOf(t, profiles, []client.Object{web, share("a", 2), share("b", 2), stopping}, interceptor.Funcs{},
		st.Cluster("a", room), st.Cluster("b", room), st.Cluster("c", room))
	r.maxMoves = 1
	ctx := context.Background()
	if cache.Draining() != 1 {
		t.Fatalf("%d moves counted, want the move back's", cache.Draining())
	}
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
		t.Fatal(err)
	}
	if _, err := r.divide(ctx, w); err != nil {
		t.Fatal(err)
	}
	for r.writer.Len() > 0 {
		r.writer.ApplyNext(ctx)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
		t.Fatal(err)
	}
	cache.UpsertWorkload(w)
	if w.Status.Rebalancing == nil || cache.Draining() != 1 {
		t.Errorf("the move back ended (record %v, %d moves counted) while web-c is still being deleted", w.Status.Rebalancing != nil, cache.Draining())
	}
	// No longer than its deadline: web-c's cluster may never answer.
	w.Status.Rebalancing.Time = metav1.NewTime(time.Now().Add(-moveBackDeadline))
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	if _, err := r.divide(ctx, w); err != nil {
		t.Fatal(err)
	}
	for r.writer.Len() > 0 {
		r.writer.ApplyNext(ctx)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
		t.Fatal(err)
	}
	cache.UpsertWorkload(w)
	if w.Status.Rebalancing != nil || cache.Draining() != 0 {
		t.Errorf("past its deadline, the move back goes on (record %v, %d moves counted): a share that never goes would hold its place for ever", w.Status.Rebalancing != nil, cache.Draining())
	}
}

// TestShareNameTakenByAnother: a share whose name is taken by a Workload
// that is not one of its Workload's shares (a user's web-a, or spread
// web-x's share on cluster y beside spread web's on cluster x-y) takes a
// name of its own. Before, its create failed with AlreadyExists on every
// pass: its replicas ran nowhere, for ever.
func TestShareNameTakenByAnother(t *testing.T) {
	profiles := defaultProfiles(t)
	web := dividedWeb(2)
	users := st.Workload("web-a", st.PlacedOn("a"))
	c, _, r, _ := fleetOf(t, profiles, []client.Object{web, users}, interceptor.Funcs{}, st.Cluster("a", st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")))
	ctx := context.Background()
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
		t.Fatal(err)
	}
	if _, err := r.divide(ctx, w); err != nil {
		t.Fatal(err)
	}
	l := &v1alpha1.WorkloadList{}
	if err := c.List(ctx, l); err != nil {
		t.Fatal(err)
	}
	var share *v1alpha1.Workload
	for i := range l.Items {
		if metav1.IsControlledBy(&l.Items[i], w) {
			share = &l.Items[i]
		}
	}
	if share == nil || share.Name == "web-a" || share.ReplicaCount() != 2 {
		t.Fatalf("share of web in a: %v, want one of 2 replicas under a name of its own", share)
	}
	again := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(users), again); err != nil || metav1.GetControllerOf(again) != nil || again.Annotations[v1alpha1.AnnotationShareOf] != "" {
		t.Errorf("the user's web-a changed: %v, %v", err, again.OwnerReferences)
	}
}

// TestMoveBackOfAnotherSchedulersWorkloadEnds: a spread Workload handed to
// another scheduler in the middle of a move back: the move ends where it
// is, its record and its place under --max-concurrent-moves gone. Before,
// the divider passed it over, and the record held one place for ever.
func TestMoveBackOfAnotherSchedulersWorkloadEnds(t *testing.T) {
	profiles := defaultProfiles(t)
	web := dividedWeb(4, func(w *v1alpha1.Workload) {
		w.Spec.SchedulerName = "someone-else"
		w.Status.Rebalancing = &v1alpha1.Rebalancing{Generation: w.Generation, Time: metav1.Now(), Message: "a is preferred"}
	})
	c, cache, r, _ := fleetOf(t, profiles, []client.Object{web}, interceptor.Funcs{}, st.Cluster("a"))
	r.maxMoves = 1
	if cache.Draining() != 1 {
		t.Fatalf("%d moves counted, want the move back's", cache.Draining())
	}
	ctx := context.Background()
	if _, err := r.reconcileDivision(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(web)}); err != nil {
		t.Fatal(err)
	}
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
		t.Fatal(err)
	}
	cache.UpsertWorkload(w)
	if w.Status.Rebalancing != nil || cache.Draining() != 0 {
		t.Errorf("the move back of another scheduler's Workload goes on: record %v, %d moves counted", w.Status.Rebalancing != nil, cache.Draining())
	}
}

// TestShareNameOfAWorkloadMadeAgain: a spread Workload deleted and made
// again while its old share in a cluster is still being deleted: the new
// share of that cluster waits for it, as a share of the Workload itself
// would, never runs beside it under another name; and a name taken by a
// Workload the cache does not show yet is no success.
func TestShareNameOfAWorkloadMadeAgain(t *testing.T) {
	profiles := defaultProfiles(t)
	web := dividedWeb(2)
	old := st.Workload("web-a", st.Replicas(2), st.ShareOf("web"), st.PlacedOn("a"), func(w *v1alpha1.Workload) {
		w.UID = "old-share"
		w.Spec.TargetCluster = &v1alpha1.ClusterReference{Name: "a", Namespace: "default"}
		w.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "web", UID: "the-web-before", Controller: ptr.To(true)}}
		w.Finalizers, w.DeletionTimestamp = []string{v1alpha1.FinalizerPropagator}, ptr.To(metav1.Now())
	})
	for name, tc := range map[string]struct {
		objs  []client.Object
		funcs interceptor.Funcs
	}{
		"the old share being deleted": {objs: []client.Object{web, old}},
		"a name taken by a Workload not in the cache yet": {objs: []client.Object{web}, funcs: interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
				if o.GetName() == "web-a" {
					return kerrors.NewAlreadyExists(v1alpha1.GroupVersion.WithResource("workloads").GroupResource(), o.GetName())
				}
				return c.Create(ctx, o, opts...)
			}}},
	} {
		t.Run(name, func(t *testing.T) {
			c, _, r, _ := fleetOf(t, profiles, tc.objs, tc.funcs, st.Cluster("a", st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")))
			ctx := context.Background()
			w := &v1alpha1.Workload{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(web), w); err != nil {
				t.Fatal(err)
			}
			_, err := r.divide(ctx, w)
			l := &v1alpha1.WorkloadList{}
			if lerr := c.List(ctx, l); lerr != nil {
				t.Fatal(lerr)
			}
			var made []string
			for i := range l.Items {
				if metav1.IsControlledBy(&l.Items[i], w) {
					made = append(made, l.Items[i].Name)
				}
			}
			if len(made) > 0 || err == nil {
				t.Errorf("shares made %v (error %v); want none, and the pass to say why", made, err)
			}
		})
	}
}
