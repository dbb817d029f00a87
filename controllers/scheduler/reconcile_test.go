package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestSchedulerReconcileDecisions checks the reconciler's decisions on a
// fake client: what it writes, and what it leaves alone.
func TestSchedulerReconcileDecisions(t *testing.T) {
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b")}
	type want struct {
		cluster   string // "" for none
		status    corev1.ConditionStatus
		reason    string
		message   string
		result    reconcile.Result
		untouched bool
		// left is "cluster/Reason" of each status.leftClusters entry.
		left string
		// after, when set, is about when the loop looks again (a few
		// seconds less pass while the case runs).
		after time.Duration
	}
	tainted := st.NoExecuteSince("drain", time.Now().Add(-10*time.Second))
	deleting := st.Deleting(time.Now(), v1alpha1.FinalizerDrain)
	tolerate := func(seconds int64) st.WorkloadOption { return st.TolerateFor("drain", seconds) }
	// running: two replicas delivered, scheduled and Ready where it is.
	running := func(w *v1alpha1.Workload) {
		w.Status.Replicas, w.Status.ScheduledReplicas, w.Status.ReadyReplicas = 2, 2, 2
		w.SetCounted(w.ClusterKey(w.Status.ClusterRef), 2, nil)
		w.Status.SetConditions(v1alpha1.Available("2 of 2 replicas ready in "+w.Status.ClusterRef.Name, w.Generation))
	}
	// unreachable: the cluster controller's Ready and condition taint of
	// a cluster that does not answer.
	unreachable := func(kc *v1alpha1.KubernetesCluster) {
		st.NoExecuteSince(v1alpha1.TaintClusterUnreachable, time.Now().Add(-10*time.Second))(kc)
		kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonUnreachable})
	}
	// leftA: it left a (Tainted) at leftAt, and the propagator counted
	// n candidates there since, answering the move at answered.
	leftAt := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	leftA := func(n int32, answered metav1.Time) st.WorkloadOption {
		return func(w *v1alpha1.Workload) {
			w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted, Time: &leftAt}}
			w.SetCounted(types.NamespacedName{Namespace: "default", Name: "a"}, n, &answered)
		}
	}
	draining := st.Workload("other", st.PlacedOn("b"), func(w *v1alpha1.Workload) {
		w.UID = "other"
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "c"}, Reason: v1alpha1.ReasonTainted}}
	})
	cases := []struct {
		name     string
		clusters []*v1alpha1.KubernetesCluster
		// placed are in the scheduler's cache besides the clusters.
		placed   []*v1alpha1.Workload
		maxMoves int
		w        *v1alpha1.Workload
		want     want
	}{
		{name: "an untolerated NoExecute taint moves it; the status names the cluster left and why",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w:        st.Workload("w", st.PlacedOn("a"), running),
			want:     want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonTainted}},
		{name: "a drain whose new cluster rejected it chooses again; the old copy still serves, readyReplicas stays",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b"), st.Cluster("c")},
			w: st.Workload("w", st.PlacedOn("b"), running, func(w *v1alpha1.Workload) {
				w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted, Time: &leftAt}}
				retry := metav1.NewTime(time.Now().Add(time.Minute))
				w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Reason: propagator.ReasonHandshakeTimeout, Generation: w.Generation, RetryAfter: &retry, Attempts: 1}}
			}),
			want: want{cluster: "c", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonTainted}},
		{name: "a drain whose new cluster rejected it, with nowhere else to go, comes back to the old cluster once it is uncordoned",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b")},
			w: st.Workload("w", st.PlacedOn("b"), running, func(w *v1alpha1.Workload) {
				w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted, Time: &leftAt}}
				retry := metav1.NewTime(time.Now().Add(time.Minute))
				w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Reason: v1alpha1.ReasonUnschedulable, Generation: w.Generation, RetryAfter: &retry, Attempts: 1}}
			}),
			want: want{cluster: "a", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: ""}}, // chosen again: its copy there is the chosen cluster's
		{name: "a cluster left where the propagator counts nothing remaining since the move is let go",
			w:    st.Workload("w", st.PlacedOn("b"), running, leftA(0, leftAt)),
			want: want{cluster: "b", status: corev1.ConditionUnknown}}, // Scheduled as it was: none
		{name: "a cluster left where candidates are still counted stays named",
			w:    st.Workload("w", st.PlacedOn("b"), running, leftA(2, leftAt)),
			want: want{untouched: true}},
		{name: "a count of nothing that answers an earlier move does not let a later one go",
			w:    st.Workload("w", st.PlacedOn("b"), running, leftA(0, metav1.NewTime(leftAt.Add(-time.Hour)))),
			want: want{untouched: true}},
		{name: "StopBeforeStart: the Ready count goes with the cluster left",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w: st.Workload("w", st.PlacedOn("a"), running, func(w *v1alpha1.Workload) {
				w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart
			}),
			want: want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonTainted}},
		{name: "a cluster unreachable past the toleration is left; Ready is Unknown, naming it, not the Ready it had there",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", unreachable), st.Cluster("b")},
			w:        st.Workload("w", st.PlacedOn("a"), st.TolerateFor(v1alpha1.TaintClusterUnreachable, 5), running),
			want:     want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonUnreachable}},
		{name: "a cluster that does not answer, drained or deleted, is left with Ready Unknown too",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", unreachable, deleting), st.Cluster("b")},
			w:        st.Workload("w", st.PlacedOn("a"), running),
			want:     want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonClusterDeleted}},
		{name: "a tolerated NoExecute taint keeps it for tolerationSeconds",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w:        st.Workload("w", st.PlacedOn("a"), tolerate(3600)),
			// The taint was added 10 s ago: the loop looks again when the
			// toleration is up.
			want: want{untouched: true, after: 3590 * time.Second}},
		{name: "a drain beyond --max-concurrent-moves waits: MovePending",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			placed:   []*v1alpha1.Workload{draining},
			maxMoves: 1,
			w:        st.Workload("w", st.PlacedOn("a")),
			want:     want{cluster: "a", status: corev1.ConditionTrue, reason: v1alpha1.ReasonMovePending}},
		{name: "within --max-concurrent-moves it moves",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			placed:   []*v1alpha1.Workload{draining},
			maxMoves: 2,
			w:        st.Workload("w", st.PlacedOn("a"), running),
			want:     want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonTainted}},
		{name: "past tolerationSeconds it moves",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w:        st.Workload("w", st.PlacedOn("a"), tolerate(5), running),
			want:     want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonTainted}},
		{name: "a share that must leave says so (MovePending), and moves nowhere by itself: its Workload moves its replicas",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w:        st.Workload("web-a", st.PlacedOn("a"), st.ShareOf("web"), running),
			want: want{cluster: "a", status: corev1.ConditionTrue, reason: v1alpha1.ReasonMovePending,
				message: "cluster default/a has the NoExecute taint drain (not tolerated); it stays until it can move: its Workload web moves its replicas, where its division finds room"}},
		{name: "a share tolerating its cluster's taint is looked at again when the toleration is up",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w:        st.Workload("web-a", st.PlacedOn("a"), st.ShareOf("web"), tolerate(3600)),
			want:     want{untouched: true, after: 3590 * time.Second}},
		{name: "it must leave and no other cluster takes it: it stays, MovePending",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b", st.Cordoned())},
			w:        st.Workload("w", st.PlacedOn("a")),
			want:     want{cluster: "a", status: corev1.ConditionTrue, reason: v1alpha1.ReasonMovePending}},
		{name: "a batch Workload that ran to its end stays where it ended, tainted or not",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", tainted), st.Cluster("b")},
			w: st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
				complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 1 replicas succeeded in a", w.Generation)
				w.Status.SetConditions(complete, ready)
			}),
			want: want{untouched: true}},
		{name: "a cluster being deleted is left",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a", deleting), st.Cluster("b")},
			w:        st.Workload("w", st.PlacedOn("a"), running),
			want:     want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled, left: "a/" + v1alpha1.ReasonClusterDeleted}},
		{name: "a foreign schedulerName is left alone",
			w:    st.Workload("w", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "other" }),
			want: want{untouched: true}},
		{name: "a placed workload stays where it is",
			w:    st.Workload("w", st.PlacedOn("b")),
			want: want{untouched: true}},
		{name: "a rejection of this generation moves it",
			w:    st.Workload("w", st.PlacedOn("a"), st.Rejected("a", 1, "Insufficient cpu")),
			want: want{cluster: "b", status: corev1.ConditionTrue, reason: v1alpha1.ReasonScheduled}},
		{name: "a rejection of an older generation does not",
			w:    st.Workload("w", st.PlacedOn("a"), st.Rejected("a", 0, "Insufficient cpu")),
			want: want{untouched: true}},
		{name: "nothing fits: Unschedulable, retried later as a safety net",
			w: st.Workload("w", st.Selector("gpu", "true")),
			want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "0/2 clusters are available: 2 cluster(s) didn't match the cluster selector.", result: reconcile.Result{RequeueAfter: unschedulableRetry}}},
		{name: "every cluster rejected",
			w: st.Workload("w", st.PlacedOn("a"), st.Rejected("a", 1, "Insufficient cpu"), st.Rejected("b", 1, "Insufficient cpu")),
			want: want{status: corev1.ConditionFalse, reason: v1alpha1.ReasonUnschedulable,
				message: "0/2 clusters are available: 2 cluster(s) rejected the candidate pods (Insufficient cpu).", result: reconcile.Result{RequeueAfter: unschedulableRetry}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(tc.w).WithStatusSubresource(tc.w).Build()
			before := &v1alpha1.Workload{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.w), before); err != nil {
				t.Fatal(err)
			}
			cache := scheduler.NewCache()
			cs := clusters
			if tc.clusters != nil {
				cs = tc.clusters
			}
			for _, kc := range cs {
				cache.UpsertCluster(kc)
			}
			for _, p := range tc.placed {
				cache.UpsertWorkload(p)
			}
			r := newTestScheduler(c, cache, profiles)
			r.maxMoves = tc.maxMoves
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tc.w)})
			if err != nil {
				t.Fatal(err)
			}
			// The decision loop wrote nothing; one writer applies its decision.
			if got := r.writer.Len(); got > 1 {
				t.Fatalf("%d decisions queued, want at most 1", got)
			}
			if r.writer.Len() == 1 {
				r.writer.ApplyNext(context.Background())
			}
			after := &v1alpha1.Workload{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.w), after); err != nil {
				t.Fatal(err)
			}
			if tc.want.after > 0 && (res.RequeueAfter > tc.want.after || res.RequeueAfter < tc.want.after-5*time.Second) {
				t.Errorf("looks again after %s, want about %s", res.RequeueAfter, tc.want.after)
			}
			if tc.want.untouched {
				if diff := cmp.Diff(before, after); diff != "" {
					t.Errorf("the workload changed (-before,+after):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tc.want.result, res); diff != "" {
				t.Errorf("result (-want,+got):\n%s", diff)
			}
			got := ""
			if after.Status.ClusterRef != nil {
				got = after.Status.ClusterRef.Name
			}
			cond := after.Status.GetCondition(v1alpha1.TypeScheduled)
			if got != tc.want.cluster || cond.Status != tc.want.status || string(cond.Reason) != tc.want.reason {
				t.Errorf("placed on %q with %s/%s, want %q with %s/%s", got, cond.Status, cond.Reason, tc.want.cluster, tc.want.status, tc.want.reason)
			}
			if tc.want.message != "" && cond.Message != tc.want.message {
				t.Errorf("message:\n got %s\nwant %s", cond.Message, tc.want.message)
			}
			// The counts, Ready and the rejections are the propagator's:
			// a decision, a move included, leaves them as they were.
			if diff := cmp.Diff(propagatorsFields(before.Status), propagatorsFields(after.Status)); diff != "" {
				t.Errorf("the scheduler wrote the propagator's fields (-before,+after):\n%s", diff)
			}
			var left []string
			for _, lc := range after.Status.LeftClusters {
				left = append(left, lc.Cluster.Name+"/"+lc.Reason)
			}
			if got := strings.Join(left, ","); got != tc.want.left {
				t.Errorf("left %q, want %q", got, tc.want.left)
			}
		})
	}

	t.Run("a deleted workload is not an error", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).Build()
		r := newTestScheduler(c, scheduler.NewCache(), profiles)
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "gone"}}); err != nil {
			t.Fatal(err)
		}
	})
}

// propagatorsFields are the status fields the propagator alone writes.
func propagatorsFields(s v1alpha1.WorkloadStatus) v1alpha1.WorkloadStatus {
	return v1alpha1.WorkloadStatus{
		ConditionedStatus: xpv2.ConditionedStatus{Conditions: []xpv2.Condition{s.GetCondition(xpv2.TypeReady)}},
		RejectedClusters:  s.RejectedClusters, ClusterCounts: s.ClusterCounts, PlacedNamespaces: s.PlacedNamespaces, Dependencies: s.Dependencies,
		Replicas: s.Replicas, ScheduledReplicas: s.ScheduledReplicas, ReadyReplicas: s.ReadyReplicas, Succeeded: s.Succeeded, Failed: s.Failed,
		ReadyOfDesired: s.ReadyOfDesired, ObservedGeneration: s.ObservedGeneration,
	}
}

// newTestScheduler is the scheduler's decision loop and writers over a
// client, without a manager: the test runs the writers by hand.
func newTestScheduler(c client.Client, cache *scheduler.Cache, profiles map[string]*scheduler.Profile) *Reconciler {
	r := &Reconciler{client: c, cache: cache, profiles: profiles, log: logging.NewNopLogger(), trigger: &shared.Trigger{}, served: map[string]bool{}}
	for name := range profiles {
		r.served[name] = true
	}
	r.writer = newStatusWriter(c, c, cache, r.trigger, 1, event.NewNopRecorder(), r.log)
	return r
}

// writerFixture is an unplaced Workload in a fake management API whose
// status patches go through patch, a cache with cluster a, and the
// scheduler over both with a queue of its own; the Workload has been
// decided once, and the decision waits for a writer.
type writerFixture struct {
	c     client.Client
	cache *scheduler.Cache
	r     *Reconciler
	q     workqueue.TypedRateLimitingInterface[reconcile.Request]
	key   types.NamespacedName
	fresh *v1alpha1.Workload
}

func newWriterFixture(t *testing.T, patch func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error) *writerFixture {
	t.Helper()
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	w := st.Workload("w")
	f := &writerFixture{key: client.ObjectKeyFromObject(w), fresh: &v1alpha1.Workload{}}
	f.c = fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(w).WithStatusSubresource(w).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: patch}).Build()
	f.cache = scheduler.NewCache()
	f.cache.UpsertCluster(st.Cluster("a"))
	f.r = newTestScheduler(f.c, f.cache, profiles)
	f.q = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(f.q.ShutDown)
	useQueue(t, f.r.trigger, f.q)
	ctx := context.Background()
	if err := f.c.Get(ctx, f.key, f.fresh); err != nil {
		t.Fatal(err)
	}
	f.cache.UpsertWorkload(f.fresh)
	if _, err := f.r.Reconcile(ctx, reconcile.Request{NamespacedName: f.key}); err != nil {
		t.Fatal(err)
	}
	return f
}

// decideAgain takes the Workload from the queue, decides and writes.
func (f *writerFixture) decideAgain(t *testing.T) {
	t.Helper()
	req, _ := f.q.Get()
	f.q.Done(req)
	if req.NamespacedName != f.key {
		t.Fatalf("requeued %v, want %v", req, f.key)
	}
	ctx := context.Background()
	if _, err := f.r.Reconcile(ctx, req); err != nil {
		t.Fatal(err)
	}
	f.r.writer.ApplyNext(ctx)
	if err := f.c.Get(ctx, f.key, f.fresh); err != nil {
		t.Fatal(err)
	}
}

// TestSchedulerWriteConflict: a decision whose write meets a changed
// Workload is forgotten (the cache no longer holds it placed) and the
// Workload goes back to the decision loop after a backoff, which decides
// and writes again.
func TestSchedulerWriteConflict(t *testing.T) {
	conflicts := 1
	f := newWriterFixture(t, func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		if conflicts > 0 {
			conflicts--
			return kerrors.NewConflict(schema.GroupResource{Group: v1alpha1.Group, Resource: "workloads"}, obj.GetName(), errors.New("changed"))
		}
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	})
	if !f.cache.Assumed(f.fresh.UID) {
		t.Fatal("the decision was not assumed")
	}
	f.r.writer.ApplyNext(context.Background())
	if f.cache.Assumed(f.fresh.UID) || f.cache.PendingCount(f.r.served) != 1 {
		t.Fatalf("after the conflict: assumed %t, %d pending; want the decision forgotten", f.cache.Assumed(f.fresh.UID), f.cache.PendingCount(f.r.served))
	}
	f.decideAgain(t) // after the backoff
	if f.fresh.Status.ClusterRef == nil || f.fresh.Status.ClusterRef.Name != "a" {
		t.Fatalf("after deciding again: placed on %v, want a", f.fresh.Status.ClusterRef)
	}
}

// TestSchedulerWriteSuperseded: a decision whose Workload the cache
// already holds changed (the propagator wrote while the decision waited
// for a writer) is not sent, since it would meet a conflict: it is
// forgotten and decided again at once from the newer copy, which keeps
// what the other writer wrote.
func TestSchedulerWriteSuperseded(t *testing.T) {
	patches := 0
	f := newWriterFixture(t, func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
		patches++
		return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
	})
	ctx := context.Background()
	// Another controller writes before the decision's turn comes.
	other := f.fresh.DeepCopy()
	other.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: "Other", LastTransitionTime: metav1.Now()})
	if err := f.c.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	patches = 0
	f.r.writer.ApplyNext(ctx)
	if patches != 0 {
		t.Errorf("%d status patches sent for a decision older than the cache's copy, want none (it would meet a conflict)", patches)
	}
	if f.cache.Assumed(f.fresh.UID) {
		t.Error("the superseded decision is still assumed")
	}
	if f.q.Len() != 1 {
		t.Fatalf("%d requests queued at once, want the Workload decided again now, not after a backoff", f.q.Len())
	}
	f.decideAgain(t)
	if patches != 1 || f.fresh.Status.ClusterRef == nil || f.fresh.Status.ClusterRef.Name != "a" {
		t.Fatalf("after deciding again: %d patches, placed on %v; want one, on a", patches, f.fresh.Status.ClusterRef)
	}
	if f.fresh.Status.GetCondition(xpv2.TypeReady).Reason != "Other" {
		t.Errorf("the other writer's Ready condition was lost: %+v", f.fresh.Status.Conditions)
	}
}

// TestDrainEnded: only a drain (a taint of the user's, a deletion) that
// leaves leftClusters frees a place under --max-concurrent-moves.
func TestDrainEnded(t *testing.T) {
	left := func(reasons ...string) *v1alpha1.Workload {
		w := st.Workload("w")
		for i, r := range reasons {
			w.Status.LeftClusters = append(w.Status.LeftClusters, v1alpha1.LeftCluster{Cluster: v1alpha1.ClusterReference{Name: string(rune('a' + i))}, Reason: r})
		}
		return w
	}
	cases := []struct {
		name          string
		before, after *v1alpha1.Workload
		want          bool
	}{
		{"a drain ended", left(v1alpha1.ReasonTainted), left(), true},
		{"a deletion's drain ended", left(v1alpha1.ReasonClusterDeleted), left(), true},
		{"a failover ended", left(v1alpha1.ReasonUnreachable), left(), false},
		{"a drain goes on", left(v1alpha1.ReasonTainted), left(v1alpha1.ReasonTainted), false},
		{"a drain began", left(), left(v1alpha1.ReasonTainted), false},
	}
	for _, tc := range cases {
		if got := drainEnded(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: drainEnded = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDrainWakesOnlyWhatCanMove drains n Workloads off a cluster with
// --max-concurrent-moves slots, playing the informer (each written
// status comes back to the event handlers) and the propagator (a move
// ends, one at a time, when the loop is idle): each Workload is looked at
// a bounded number of times, not once per move that ends before its own
// (on 8e684f7, every drain's end woke every Workload still waiting: 820
// reconciles for 40 Workloads and 3 places, 43,085 for 300 and 10; now
// 154 and 1,180).
func TestDrainWakesOnlyWhatCanMove(t *testing.T) {
	const n, slots = 40, 3
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("w%03d", i)
	}
	f := newDrainFleet(t, names, slots)
	for _, name := range names {
		f.q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: name}})
	}
	var moving []types.NamespacedName
	reconciles, ended := 0, 0
	for ended < n {
		reconciles += f.run(t, func(got *v1alpha1.Workload) {
			if key := client.ObjectKeyFromObject(got); got.Left(types.NamespacedName{Namespace: "default", Name: "a"}) != nil && !slices.Contains(moving, key) {
				moving = append(moving, key)
			}
		})
		if len(moving) == 0 {
			t.Fatalf("%d of %d moves ended and none is under way: the drain stalled", ended, n)
		}
		if len(moving) > slots {
			t.Fatalf("%d moves at once, want at most %d", len(moving), slots)
		}
		// The propagator ends the oldest move: the old copy is gone.
		key := moving[0]
		moving = moving[1:]
		w := f.seen[key].DeepCopy()
		w.Status.LeftClusters = nil
		if err := f.c.Status().Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		f.observe(t, key)
		ended++
	}
	for key, w := range f.seen {
		if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != "b" {
			t.Errorf("%s is on %v, want b", key, w.Status.ClusterRef)
		}
	}
	t.Logf("%d Workloads drained with %d slots: %d reconciles", n, slots, reconciles)
	// Each Workload is looked at a few times: first, when its MovePending
	// comes back, when woken for a place, when its move comes back.
	if reconciles > 5*n {
		t.Errorf("%d reconciles to drain %d Workloads, want at most %d: waiters are woken when they cannot move", reconciles, n, 5*n)
	}
}

// TestMoveWaiters: waiters are woken in the order they began to wait, no
// more than the places free less those woken and not yet looked at; one
// whose cluster no longer makes it leave is let out of line.
func TestMoveWaiters(t *testing.T) {
	k := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	var m moveWaiters
	for _, name := range []string{"a", "b", "c", "d"} {
		m.wait(k(name))
	}
	m.wait(k("a"))
	if got := m.wake(2); !slices.Equal(got, []types.NamespacedName{k("a"), k("b")}) {
		t.Errorf("wake(2) = %v, want a and b, the first in line", got)
	}
	if got := m.wake(2); len(got) != 0 {
		t.Errorf("wake(2) = %v with a and b woken and not yet looked at, want none", got)
	}
	// a found no place after all and waits again, at the end; b moved.
	m.wait(k("a"))
	m.done(k("b"))
	if got := m.wake(2); !slices.Equal(got, []types.NamespacedName{k("c"), k("d")}) {
		t.Errorf("wake(2) = %v, want c and d", got)
	}
	m.done(k("c"))
	m.done(k("d"))
	m.wait(k("e"))
	if got := m.dropExcept([]types.NamespacedName{k("e")}); !slices.Equal(got, []types.NamespacedName{k("a")}) {
		t.Errorf("dropExcept(e) = %v, want a, whose cluster no longer makes it leave", got)
	}
	if m.waiting(k("a")) || !m.waiting(k("e")) {
		t.Errorf("waiting: a %v, e %v; want false, true", m.waiting(k("a")), m.waiting(k("e")))
	}
	// e is woken, and the loop sees it without deciding about its move.
	m.wake(1)
	if !m.looked(k("e")) || m.looked(k("e")) {
		t.Error("looked: want true once for a woken Workload the loop saw without deciding, then false")
	}
}

// useQueue hands the trigger a queue, as the controller's start would.
func useQueue(t *testing.T, tr *shared.Trigger, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	t.Helper()
	if err := tr.Source().Start(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

// TestChosenAgainTwice: a cluster that rejected the Workload twice, and
// opened up after each rejection, is chosen again each time with a
// transition later than that rejection, so the propagator proves it
// again. The second choice's condition differs from the first's (it
// names the rejection), or the status write would keep the first one's
// time (shared.PatchStatus keeps an equal condition's), which is not
// later than the second rejection: the scheduler would decide the same
// again and again while the propagator waited.
func TestChosenAgainTwice(t *testing.T) {
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	a := types.NamespacedName{Namespace: "default", Name: "a"}
	retry := metav1.NewTime(time.Now().Add(10 * time.Minute))
	rejectedAt := func(attempts int32, at metav1.Time) []v1alpha1.RejectedCluster {
		return []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonUnschedulable,
			Generation: 1, Time: &at, RetryAfter: &retry, Attempts: attempts}}
	}
	w := st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
		w.Status.SetConditions(v1alpha1.Scheduled("placed on default/a", 1))
		w.Status.Conditions[0].LastTransitionTime = metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
		w.Status.RejectedClusters = rejectedAt(1, metav1.NewTime(time.Now().Add(-30*time.Second).Truncate(time.Second)))
	})
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(w).WithStatusSubresource(w).Build()
	cache := scheduler.NewCache()
	capacity := []string{"8", "16", "32"}
	cache.UpsertCluster(st.Cluster("a", st.Capacity(capacity[0], "32Gi", "0", "0", capacity[0], "32Gi")))
	r := newTestScheduler(c, cache, profiles)
	chooseAgain := func(i int) *v1alpha1.Workload {
		t.Helper()
		// a opens up (its allocatable grows), in a second later than the rejection.
		if !cache.UpsertCluster(st.Cluster("a", st.Capacity(capacity[i], "32Gi", "0", "0", capacity[i], "32Gi"))) {
			t.Fatal("a did not open up")
		}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatal(err)
		}
		if r.writer.Len() != 1 {
			t.Fatalf("choice %d: %d decisions queued, want 1", i, r.writer.Len())
		}
		r.writer.ApplyNext(context.Background())
		got := &v1alpha1.Workload{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
			t.Fatal(err)
		}
		// As the informer brings the written copy.
		cache.UpsertWorkload(got)
		rc := got.Rejection(a)
		if !got.PlacedOn(a) || !got.ChosenSince(rc) || got.RejectedBy(a) {
			t.Fatalf("choice %d: Scheduled %+v after the rejection at %s: the propagator would not prove a again", i, got.Status.GetCondition(v1alpha1.TypeScheduled), rc.Time)
		}
		return got
	}
	first := chooseAgain(1)
	// The propagator rejects it again, in the second of the choice.
	second := first.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime
	first.Status.RejectedClusters = rejectedAt(2, first.RejectionTime(second.Time))
	if err := c.Status().Update(context.Background(), first); err != nil {
		t.Fatal(err)
	}
	cache.UpsertWorkload(first)
	// An opening counts once in a later second than the rejection.
	time.Sleep(time.Until(second.Add(time.Second)))
	chooseAgain(2)
}

// events records the Events a recorder is given.
type events struct{ got []string }

func (r *events) Event(obj runtime.Object, e event.Event) {
	o, _ := obj.(client.Object)
	r.got = append(r.got, o.GetName()+" "+string(e.Type)+" "+string(e.Reason))
}

func (r *events) WithAnnotations(...string) event.Recorder { return r }

// TestProxyPodWorkloadEvents: placing an ordinary Workload posts its
// Normal Scheduled Event; placing a proxy pod's Workload posts none (the
// pod's own Scheduled Event, at its binding, says where it runs: a
// management write less per proxy pod), while a Warning (it fits
// nowhere) and a move's Event still go to the Workload.
func TestProxyPodWorkloadEvents(t *testing.T) {
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	plain := st.Workload("plain")
	proxy := st.Workload("proxy", st.WLabels(v1alpha1.LabelProxyPod, "pod-uid"))
	// Its selector matches no cluster: it fits nowhere.
	nowhere := st.Workload("nowhere", st.WLabels(v1alpha1.LabelProxyPod, "other-pod-uid"), st.Selector("region", "absent"))
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(plain, proxy, nowhere).WithStatusSubresource(&v1alpha1.Workload{}).Build()
	cache := scheduler.NewCache()
	cache.UpsertCluster(st.Cluster("a"))
	r := newTestScheduler(c, cache, profiles)
	rec := &events{}
	r.writer.record = rec
	ctx := context.Background()
	for _, w := range []*v1alpha1.Workload{plain, proxy, nowhere} {
		fresh := &v1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(w), fresh); err != nil {
			t.Fatal(err)
		}
		cache.UpsertWorkload(fresh)
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(w)}); err != nil {
			t.Fatal(err)
		}
		r.writer.ApplyNext(ctx)
	}
	placed := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(proxy), placed); err != nil {
		t.Fatal(err)
	}
	if placed.Status.ClusterRef == nil || placed.Status.ClusterRef.Name != "a" {
		t.Fatalf("the proxy pod's Workload is placed on %v, want a", placed.Status.ClusterRef)
	}
	want := []string{"plain Normal " + string(v1alpha1.ReasonScheduled), "nowhere Warning " + string(reasonFailedScheduling)}
	if !slices.Equal(rec.got, want) {
		t.Errorf("Events %q, want %q", rec.got, want)
	}
	// A move's Event says why it moved, which the pod's does not: it goes
	// to the Workload.
	if podSays(placed, event.Normal(reasonMoved, "moved from a: drained")) {
		t.Error("a proxy pod's Workload gets no Moved Event, want one")
	}
}

// TestDrainNoLongerCountedWakes: a draining Workload whose new cluster
// rejects it, with nowhere else to go, becomes pending: the cache stops
// counting its move, and the Workload waiting in line for that place
// under --max-concurrent-moves goes. Before, nothing woke it (only a
// drain's end did), and it stayed on its tainted cluster, a `placer drain
// --wait` with it. (A helper's hunt found it, with this test.)
func TestDrainNoLongerCountedWakes(t *testing.T) {
	f := newDrainFleet(t, []string{"w1", "w2"}, 1)
	seen, q := f.seen, f.q
	k1 := types.NamespacedName{Namespace: "default", Name: "w1"}
	k2 := types.NamespacedName{Namespace: "default", Name: "w2"}
	q.Add(reconcile.Request{NamespacedName: k1})
	f.run(t, nil)
	q.Add(reconcile.Request{NamespacedName: k2})
	f.run(t, nil)
	if !seen[k1].PlacedOn(types.NamespacedName{Namespace: "default", Name: "b"}) {
		t.Fatalf("w1 not moved to b: %+v", seen[k1].Status.ClusterRef)
	}
	// b rejects w1 (the propagator's write).
	w1 := seen[k1].DeepCopy()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	retry := metav1.NewTime(time.Now().Add(time.Minute))
	w1.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Reason: "HandshakeTimeout", Generation: w1.Generation, Time: &now, RetryAfter: &retry, Attempts: 1}}
	if err := f.c.Status().Update(context.Background(), w1); err != nil {
		t.Fatal(err)
	}
	f.observe(t, k1)
	q.Add(reconcile.Request{NamespacedName: k1}) // the informer's event of the rejection
	f.run(t, nil)
	if seen[k1].Status.ClusterRef != nil {
		t.Fatalf("w1 placed on %v after b rejected it, want pending (nothing else fits)", seen[k1].Status.ClusterRef)
	}
	if seen[k2].PlacedOn(types.NamespacedName{Namespace: "default", Name: "a"}) && f.cache.Draining() < f.r.maxMoves {
		t.Errorf("w2 still waits on a (%s) though %d of %d places are taken, and nothing is queued to wake it",
			seen[k2].Status.GetCondition(v1alpha1.TypeScheduled).Reason, f.cache.Draining(), f.r.maxMoves)
	}
}

// TestMoveEndedWhileLookingWakes: a Workload woken for a place finds it
// taken (by a drain that never waited in line), and the move that holds
// it ends between the Workload's look at the count and its place back in
// line (the informer's handlers and the loop's other workers run beside
// it). That end woke no one: the Workload still counted as woken and not
// yet looked, and its pass wrote nothing (it said MovePending already)
// whose event would bring it back. Before, it then waited for the next move's end,
// for ever when there was none.
func TestMoveEndedWhileLookingWakes(t *testing.T) {
	f := newDrainFleet(t, []string{"w1", "w2", "w3"}, 1)
	k1 := types.NamespacedName{Namespace: "default", Name: "w1"}
	k2 := types.NamespacedName{Namespace: "default", Name: "w2"}
	k3 := types.NamespacedName{Namespace: "default", Name: "w3"}
	b := types.NamespacedName{Namespace: "default", Name: "b"}
	f.q.Add(reconcile.Request{NamespacedName: k1})
	f.run(t, nil)
	f.q.Add(reconcile.Request{NamespacedName: k2})
	f.run(t, nil)
	if !f.seen[k1].PlacedOn(b) || f.seen[k2].Status.GetCondition(v1alpha1.TypeScheduled).Reason != v1alpha1.ReasonMovePending {
		t.Fatalf("w1 on %v, w2 says %s; want w1 moving to b, w2 waiting", f.seen[k1].Status.ClusterRef, f.seen[k2].Status.GetCondition(v1alpha1.TypeScheduled).Reason)
	}
	// endMove: the propagator's write that ends a move, and its event.
	endMove := func(key types.NamespacedName) {
		w := f.seen[key].DeepCopy()
		w.Status.LeftClusters = nil
		if err := f.c.Status().Update(context.Background(), w); err != nil {
			t.Error(err)
		}
		f.observe(t, key)
	}
	// w1's move ends: w2 is woken. Before its pass, w3 (leaving, never in
	// line) takes the place.
	endMove(k1)
	if _, err := f.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: k3}); err != nil {
		t.Fatal(err)
	}
	for f.r.writer.Len() > 0 {
		f.r.writer.ApplyNext(context.Background())
	}
	f.observe(t, k3)
	if !f.seen[k3].PlacedOn(b) || f.cache.Draining() != 1 {
		t.Fatalf("w3 on %v, %d moves counted; want it moving to b, counted", f.seen[k3].Status.ClusterRef, f.cache.Draining())
	}
	// The loop takes w3's decision back (its event) at once, before w2's
	// turn, as it does long before a move ends.
	first, _ := f.q.Get()
	echo, _ := f.q.Get()
	if first.NamespacedName != k2 || echo.NamespacedName != k3 || f.q.Len() != 0 {
		t.Fatalf("queued %v, %v and %d more; want w2 woken, then w3's decision back", first, echo, f.q.Len())
	}
	if _, err := f.r.Reconcile(context.Background(), echo); err != nil {
		t.Fatal(err)
	}
	f.q.Done(echo)
	f.q.Done(first)
	f.q.Add(first)
	// w3's move ends while w2's pass has looked at the count, and w3's
	// own pass (its event, on another of the loop's workers) runs then
	// too: neither wakes w2, which is not in line yet.
	f.r.beforeWait = func() {
		f.r.beforeWait = nil
		endMove(k3)
		if _, err := f.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: k3}); err != nil {
			t.Error(err)
		}
	}
	f.run(t, nil)
	if !f.seen[k2].PlacedOn(b) {
		t.Errorf("w2 still on %v (%s) with %d of %d places taken: nothing woke it",
			f.seen[k2].Status.ClusterRef, f.seen[k2].Status.GetCondition(v1alpha1.TypeScheduled).Reason, f.cache.Draining(), f.r.maxMoves)
	}
}

// drainFleet is a scheduler over a fake API server, clusters a (tainted
// NoExecute: its Workloads must leave) and b, and Workloads of the names
// given placed on a, with slots places under --max-concurrent-moves; the
// test plays the informer (observe) and the queue's workers (run).
type drainFleet struct {
	c     client.Client
	cache *scheduler.Cache
	r     *Reconciler
	q     workqueue.TypedRateLimitingInterface[reconcile.Request]
	seen  map[types.NamespacedName]*v1alpha1.Workload
}

func newDrainFleet(t *testing.T, names []string, slots int) *drainFleet {
	t.Helper()
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for _, n := range names {
		w := st.Workload(n, st.PlacedOn("a"), func(w *v1alpha1.Workload) { w.UID = types.UID(w.Name) })
		w.Status.SetConditions(v1alpha1.Scheduled("placed on default/a", w.Generation))
		objs = append(objs, w)
	}
	f := &drainFleet{}
	f.c, f.cache, f.r, f.seen = fleetOf(t, profiles, objs, interceptor.Funcs{},
		st.Cluster("a", st.NoExecuteSince("drain", time.Now().Add(-10*time.Second))), st.Cluster("b"))
	f.r.maxMoves = slots
	f.q = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(f.q.ShutDown)
	useQueue(t, f.r.trigger, f.q)
	return f
}

// fleetOf is a scheduler with profiles over a fake management API holding
// objs (its calls through funcs) and a cache of the clusters and of objs
// as the API has them (seen, by key): a drain's, a divider's.
func fleetOf(t *testing.T, profiles map[string]*scheduler.Profile, objs []client.Object, funcs interceptor.Funcs, clusters ...*v1alpha1.KubernetesCluster) (client.WithWatch, *scheduler.Cache, *Reconciler, map[types.NamespacedName]*v1alpha1.Workload) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Workload{}).WithInterceptorFuncs(funcs).Build()
	cache := scheduler.NewCache()
	for _, kc := range clusters {
		cache.UpsertCluster(kc)
	}
	seen := map[types.NamespacedName]*v1alpha1.Workload{}
	for _, o := range objs {
		got := &v1alpha1.Workload{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), got); err != nil {
			t.Fatal(err)
		}
		cache.UpsertWorkload(got)
		seen[client.ObjectKeyFromObject(o)] = got
	}
	r := newTestScheduler(c, cache, profiles)
	r.writes = c
	r.divisions = &shared.Trigger{}
	return c, cache, r, seen
}

// observe plays the informer for one Workload.
func (f *drainFleet) observe(t *testing.T, key types.NamespacedName) *v1alpha1.Workload {
	t.Helper()
	got := &v1alpha1.Workload{}
	if err := f.c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	f.r.updateWorkload(f.seen[key], got)
	f.seen[key] = got
	return got
}

// run reconciles what is queued until nothing is, each pass's writes
// applied and observed; it returns how many passes ran, calling each
// with the Workload as the pass left it.
func (f *drainFleet) run(t *testing.T, each func(*v1alpha1.Workload)) int {
	t.Helper()
	n := 0
	for f.q.Len() > 0 {
		req, _ := f.q.Get()
		n++
		if _, err := f.r.Reconcile(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		for f.r.writer.Len() > 0 {
			f.r.writer.ApplyNext(context.Background())
		}
		f.q.Forget(req)
		f.q.Done(req)
		if got := f.observe(t, req.NamespacedName); each != nil {
			each(got)
		}
	}
	return n
}
