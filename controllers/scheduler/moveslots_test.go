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
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// hookPreFilter runs fn in the first cycle of the Workload named name.
type hookPreFilter struct {
	name string
	fn   func()
}

func (h *hookPreFilter) Name() string { return "Hook" }
func (h *hookPreFilter) PreFilter(_ context.Context, _ *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot) *scheduler.Status {
	if w.Name == h.name && h.fn != nil {
		fn := h.fn
		h.fn = nil
		fn()
	}
	return nil
}

// spreadFixture: cluster a tainted NoExecute (drain), b open; a Divided
// Workload web of 4 replicas, its share web-a (2, on a) and web-b (2, on
// b), each placed in the cache; --max-concurrent-moves=1.
type spreadFixture struct {
	c            client.Client
	cache        *scheduler.Cache
	r            *Reconciler
	web          *v1alpha1.Workload
	shareA       *v1alpha1.Workload
	shareB       *v1alpha1.Workload
	a, b         types.NamespacedName
	profileHooks *hookPreFilter
}

func newSpreadFixture(t *testing.T, readyA int32, extra []client.Object, funcs interceptor.Funcs) *spreadFixture {
	t.Helper()
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	hook := &hookPreFilter{}
	for _, p := range profiles {
		p.PreFilters = append([]scheduler.PreFilterPlugin{hook}, p.PreFilters...)
	}
	web := dividedWeb(4)
	objs := append([]client.Object{web, shareOfWeb(web, "a", 2, readyA), shareOfWeb(web, "b", 2, 2)}, extra...)
	f := &spreadFixture{
		a: types.NamespacedName{Namespace: "default", Name: "a"},
		b: types.NamespacedName{Namespace: "default", Name: "b"},
	}
	var seen map[types.NamespacedName]*v1alpha1.Workload
	f.c, f.cache, f.r, seen = fleetOf(t, profiles, objs, funcs,
		st.Cluster("a", st.NoExecuteSince("drain", time.Now().Add(-10*time.Second)), st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")),
		st.Cluster("b", st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")))
	f.web, f.shareA, f.shareB = seen[client.ObjectKeyFromObject(web)], seen[f.key("web-a")], seen[f.key("web-b")]
	f.r.maxMoves = 1
	f.profileHooks = hook
	return f
}

// dividedWeb is the Divided Workload web of replicas, each 1 CPU, 1 GiB.
func dividedWeb(replicas int32, opts ...st.WorkloadOption) *v1alpha1.Workload {
	return st.Workload("web", append([]st.WorkloadOption{st.Replicas(replicas), st.Requests("1", "1Gi"), func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided}
	}}, opts...)...)
}

// shareOfWeb is web's share in cluster, as the divider writes it: n
// replicas, all scheduled, ready of them Ready.
func shareOfWeb(web *v1alpha1.Workload, cluster string, n, ready int32, opts ...st.WorkloadOption) *v1alpha1.Workload {
	return st.Workload("web-"+cluster, append([]st.WorkloadOption{st.Replicas(n), st.Requests("1", "1Gi"), st.ShareOf("web"), st.PlacedOn(cluster), func(w *v1alpha1.Workload) {
		w.Spec.TargetCluster = &v1alpha1.ClusterReference{Name: cluster, Namespace: "default"}
		w.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "web", UID: web.UID, Controller: ptr.To(true)}}
		w.Finalizers = []string{v1alpha1.FinalizerPropagator}
		w.Status.ReadyReplicas, w.Status.ScheduledReplicas, w.Status.ObservedGeneration = ready, n, w.Generation
	}}, opts...)...)
}

// defaultProfiles are the scheduler's profiles of its default configuration.
func defaultProfiles(t *testing.T) map[string]*scheduler.Profile {
	t.Helper()
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	return profiles
}

func (f *spreadFixture) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: "default", Name: name}
}

func (f *spreadFixture) get(t *testing.T, name string) *v1alpha1.Workload {
	t.Helper()
	w := &v1alpha1.Workload{}
	if err := f.c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: name}, w); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestDecisionLoopTakesMoveSlots: a divider that takes the last place
// under --max-concurrent-moves while the decision loop decides a drain
// (between its look at the count and its Assume) leaves the loop no place:
// one of the two moves, the other waits. Before, both moved.
func TestDecisionLoopTakesMoveSlots(t *testing.T) {
	single := st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
		w.Status.SetConditions(v1alpha1.Scheduled("placed on default/a", w.Generation))
	})
	f := newSpreadFixture(t, 2, []client.Object{single}, interceptor.Funcs{})
	ctx := context.Background()
	// The divider's claim and mark of web-a (claimMoves, markLeaving), as
	// divide makes them.
	divider := func() {
		s := &divideScope{w: f.web, shares: map[types.NamespacedName]*v1alpha1.Workload{f.a: f.shareA},
			gone: map[types.NamespacedName]string{f.a: "tainted"}, leaving: map[types.NamespacedName]string{f.a: v1alpha1.ReasonTainted},
			waiting: map[types.NamespacedName]string{}}
		unlock := f.r.claimMoves(s)
		defer unlock()
		if err := f.r.markLeaving(ctx, s); err != nil {
			t.Error(err)
		}
	}
	done := make(chan struct{})
	// In the decision loop's cycle for w: a divider that finds moveSlots
	// free claims at once (today: the loop holds nothing); one that finds
	// it held waits for it, as a divider's worker would.
	f.profileHooks.name, f.profileHooks.fn = "w", func() {
		if f.r.moveSlots.TryLock() {
			f.r.moveSlots.Unlock()
			divider()
			close(done)
			return
		}
		go func() { divider(); close(done) }()
	}
	if _, err := f.r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(single)}); err != nil {
		t.Fatal(err)
	}
	<-done
	for f.r.writer.Len() > 0 {
		f.r.writer.ApplyNext(ctx)
	}
	w, a := f.get(t, "w"), f.get(t, "web-a")
	moved, marked := !w.PlacedOn(f.a), a.Annotations[v1alpha1.AnnotationShareLeaving] != ""
	if n := f.cache.Draining(); n > f.r.maxMoves || moved && marked {
		t.Errorf("%d moves counted with --max-concurrent-moves=%d: w moved %t (Scheduled %s), web-a marked leaving %t",
			n, f.r.maxMoves, moved, w.Status.GetCondition(v1alpha1.TypeScheduled).Reason, marked)
	}
}

// TestShareMarkedBeforeReplacementGrows (a): a share that must leave and
// has no Ready replica is deleted in the same pass; its move still counts
// until it is gone, as one with Ready replicas does. Before, it was
// deleted before markLeaving, which skipped it: the move was never
// counted, and its place went to the next.
func TestShareMarkedBeforeReplacementGrows(t *testing.T) {
	f := newSpreadFixture(t, 0, nil, interceptor.Funcs{})
	ctx := context.Background()
	if _, err := f.r.divide(ctx, f.web); err != nil {
		t.Fatal(err)
	}
	b, a := f.get(t, "web-b"), f.get(t, "web-a")
	if b.ReplicaCount() != 4 {
		t.Fatalf("web-b holds %d replicas, want 4 (web-a's moved to b)", b.ReplicaCount())
	}
	if a.Annotations[v1alpha1.AnnotationShareLeaving] == "" || f.cache.Draining() != 1 {
		t.Errorf("web-a's move to b: marked %q, %d moves counted (deleted %v); want it marked and counted",
			a.Annotations[v1alpha1.AnnotationShareLeaving], f.cache.Draining(), a.DeletionTimestamp != nil)
	}
}

// TestNoShareGrowsForAnUnmarkedMove (b): when the mark cannot be written
// (an error, or the manager stops there), no share has grown for the
// move: a move under way is one the API records. Before, web-b grew to 4
// while web-a was unmarked and nothing counted the move.
func TestNoShareGrowsForAnUnmarkedMove(t *testing.T) {
	f := newSpreadFixture(t, 2, nil, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if obj.GetName() == "web-a" {
				return context.DeadlineExceeded
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	if _, err := f.r.divide(context.Background(), f.web); err == nil {
		t.Fatal("divide: no error, want the failed mark's")
	}
	b, a := f.get(t, "web-b"), f.get(t, "web-a")
	if b.ReplicaCount() != 2 {
		t.Errorf("web-b grew to %d for web-a's move, which is not marked (%s; %d moves counted)", b.ReplicaCount(), a.Annotations[v1alpha1.AnnotationShareLeaving], f.cache.Draining())
	}
}

// TestShareWaiterWokenByAMoveEndedWhileLooking: the move that holds the
// last place ends between a divider's look at the count and its place in
// line: that end woke no one (the divider was not in line yet). Before,
// its share then waited for the next move's end, for ever when there was
// none.
func TestShareWaiterWokenByAMoveEndedWhileLooking(t *testing.T) {
	// single moves from a to b: it holds the one place.
	single := st.Workload("single", st.PlacedOn("b"), func(w *v1alpha1.Workload) {
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted}}
	})
	f := newSpreadFixture(t, 2, []client.Object{single}, interceptor.Funcs{})
	if f.cache.Draining() != 1 {
		t.Fatalf("%d moves counted, want single's", f.cache.Draining())
	}
	ctx := context.Background()
	f.r.beforeWait = func() {
		f.r.beforeWait = nil
		before := f.get(t, "single")
		ended := before.DeepCopy()
		ended.Status.LeftClusters = nil
		if err := f.c.Status().Update(ctx, ended); err != nil {
			t.Error(err)
		}
		f.r.updateWorkload(before, f.get(t, "single"))
	}
	if _, err := f.r.divide(ctx, f.web); err != nil {
		t.Fatal(err)
	}
	if f.r.beforeWait != nil {
		t.Fatal("the divider never waited: the case proves nothing")
	}
	if !f.r.shareWaiters.looked(f.key("web")) {
		t.Errorf("web waits in line (%t) with %d of %d places taken: nothing woke it", f.r.shareWaiters.waiting(f.key("web")), f.cache.Draining(), f.r.maxMoves)
	}
}

// TestFinishedLeavingShareFreesItsPlace: a batch share marked leaving (a
// drain) and its replacement both run to their end before a divider pass
// (the manager down meanwhile): the Workload is finished, nothing divides
// or deletes its shares again, and the finished share's move is over.
// Before, it counted as a move in flight for as long as it was kept: one
// place under --max-concurrent-moves held for ever. The place it frees
// goes to the Workload waiting in line.
func TestFinishedLeavingShareFreesItsPlace(t *testing.T) {
	f := newSpreadFixture(t, 2, nil, interceptor.Funcs{})
	ctx := context.Background()
	ended := func(w *v1alpha1.Workload) {
		fin, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "done", w.Generation)
		w.Status.SetConditions(fin, ready)
		w.Status.ReadyReplicas, w.Status.Succeeded, w.Status.ObservedGeneration = 0, int32(w.ReplicaCount()), w.Generation
	}
	a := f.get(t, "web-a")
	a.Annotations[v1alpha1.AnnotationShareLeaving] = v1alpha1.ReasonTainted
	if err := f.c.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	f.cache.UpsertWorkload(f.get(t, "web-a"))
	if f.cache.Draining() != 1 {
		t.Fatalf("%d moves counted, want web-a's", f.cache.Draining())
	}
	b := f.get(t, "web-b")
	b.Spec.TargetDeployment.Replicas = ptr.To(int32(4))
	if err := f.c.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	// A drained Workload waits in line for the place.
	waiter := f.key("other")
	f.r.waiters.wait(waiter)
	for _, name := range []string{"web-a", "web-b"} {
		before := f.get(t, name)
		sh := before.DeepCopy()
		ended(sh)
		if err := f.c.Status().Update(ctx, sh); err != nil {
			t.Fatal(err)
		}
		f.r.updateWorkload(before, f.get(t, name))
	}
	if _, err := f.r.divide(ctx, f.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	if got := f.get(t, "web-a"); got.DeletionTimestamp == nil && f.cache.Draining() > 0 {
		t.Errorf("the finished share web-a is kept and counts as a move in flight (%d of %d places)", f.cache.Draining(), f.r.maxMoves)
	}
	if !f.r.waiters.looked(waiter) {
		t.Errorf("the place web-a's end freed woke no one: the Workload waiting in line waits on")
	}
}

// TestShareEndedBeforeItsMarkIsNotCounted: a share that ran to its end
// between the divider's read and its leaving mark, whose finished copy the
// informer brought before the mark's own count: the mark's answer says it
// ended, and it is not counted as a move in flight. Before, the count
// came after the finished copy and stayed for as long as the share did.
func TestShareEndedBeforeItsMarkIsNotCounted(t *testing.T) {
	f := newSpreadFixture(t, 2, nil, interceptor.Funcs{})
	ctx := context.Background()
	read := f.get(t, "web-a")
	ended := read.DeepCopy()
	fin, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "done", ended.Generation)
	ended.Status.SetConditions(fin, ready)
	if err := f.c.Status().Update(ctx, ended); err != nil {
		t.Fatal(err)
	}
	f.cache.UpsertWorkload(f.get(t, "web-a"))
	s := &divideScope{w: f.web, shares: map[types.NamespacedName]*v1alpha1.Workload{f.a: read},
		gone: map[types.NamespacedName]string{f.a: "tainted"}, leaving: map[types.NamespacedName]string{f.a: v1alpha1.ReasonTainted},
		waiting: map[types.NamespacedName]string{}}
	if err := f.r.markLeaving(ctx, s); err != nil {
		t.Fatal(err)
	}
	if f.cache.Draining() != 0 {
		t.Errorf("%d moves counted for a share that ran to its end", f.cache.Draining())
	}
}
