package scheduler

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
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
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	tol := st.TolerateFor(v1alpha1.TaintClusterUnreachable, 300)
	web := st.Workload("web", st.Replicas(5), st.Requests("1", "1Gi"), tol, func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided}
	})
	share := func(cluster string, silent bool) *v1alpha1.Workload {
		return st.Workload("web-"+cluster, st.Replicas(3), st.Requests("1", "1Gi"), tol, st.ShareOf("web"), st.PlacedOn(cluster), func(w *v1alpha1.Workload) {
			w.Spec.TargetCluster = &v1alpha1.ClusterReference{Name: cluster, Namespace: "default"}
			w.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "web", UID: web.UID, Controller: ptr.To(true)}}
			w.Finalizers = []string{v1alpha1.FinalizerPropagator}
			w.Status.ReadyReplicas, w.Status.ScheduledReplicas, w.Status.ObservedGeneration = 3, 3, w.Generation
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
