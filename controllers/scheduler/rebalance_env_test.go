package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	schedulerctrl "github.com/placer-dev/placer/controllers/scheduler"
	"github.com/placer-dev/placer/internal/eventtest"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestRebalance: Workloads that prefer cluster a were placed on b while a
// was not Ready (as after a failover). a comes back, flaps, then stays
// Ready: the WhenPreferred Workload moves back to a only once a has been
// Ready for the window, and says why; the Never one stays on b.
func TestRebalance(t *testing.T) {
	const window = 3 * time.Second
	e := newSchedulerEnvWith(t, schedulerctrl.Options{RebalanceAfter: window}).namespace(t, "rebalance")
	ctx := context.Background()
	a := e.cluster("a", st.Labels("pref", "yes"), st.NotReady(v1alpha1.ReasonUnreachable))
	e.cluster("b")
	prefersA := st.PreferredClusterAffinity(50, st.Term(st.Expr("pref", "Exists")))
	e.workload("back", prefersA, func(w *v1alpha1.Workload) { w.Spec.Placement.Rebalance = v1alpha1.RebalanceWhenPreferred })
	e.workload("stays", prefersA)
	e.wantPlaced("back", "b")
	e.wantPlaced("stays", "b")

	setReady := func(status corev1.ConditionStatus) time.Time { return e.setReady(a, status) }
	onB := func(name string) {
		t.Helper()
		w := &v1alpha1.Workload{}
		if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, w); err != nil {
			t.Fatal(err)
		}
		if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != "b" {
			t.Fatalf("%s moved to %v while a flapped", name, w.Status.ClusterRef)
		}
	}
	// a flaps: Ready for less than the window each time.
	for range 3 {
		setReady(corev1.ConditionTrue)
		time.Sleep(window / 2)
		onB("back")
		setReady(corev1.ConditionFalse)
		time.Sleep(window / 4)
	}
	// Then stays Ready: back moves once the window has passed, not before.
	readyAt := setReady(corev1.ConditionTrue)
	w := e.wantPlacedEventually("back", "a")
	// The condition's time is to the second, as the API keeps it.
	if moved := time.Since(readyAt.Truncate(time.Second)); moved < window {
		t.Errorf("moved back %s after a turned Ready, before the %s window", moved, window)
	}
	if len(w.Status.LeftClusters) != 1 || w.Status.LeftClusters[0].Cluster.Name != "b" || w.Status.LeftClusters[0].Reason != v1alpha1.ReasonRebalanced {
		t.Errorf("leftClusters = %+v, want b, Rebalanced (the propagator takes it from there, make-before-break)", w.Status.LeftClusters)
	}
	if msg := w.Status.GetCondition(v1alpha1.TypeScheduled).Message; !strings.Contains(msg, "prefers cluster rebalance/a") {
		t.Errorf("Scheduled says %q, not why it moved", msg)
	}
	// The one that never rebalances stays, a window later still.
	time.Sleep(window)
	onB("stays")
	// Until an operator asks (placer rebalance): it moves at once, with
	// no window.
	stays := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stays"}}
	if err := e.env.Client.Get(ctx, client.ObjectKeyFromObject(stays), stays); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&stays.ObjectMeta, v1alpha1.AnnotationRebalance, time.Now().UTC().Format(time.RFC3339))
	if err := e.env.Client.Update(ctx, stays); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	e.wantPlacedEventually("stays", "a")
	if took := time.Since(asked); took >= window {
		t.Errorf("asked to rebalance, it took %s to move, the window (%s) or more", took, window)
	}
}

// setReady turns the cluster's Ready condition to status (Unreachable
// when not True), now, and returns when.
func (e *schedulerEnv) setReady(kc *v1alpha1.KubernetesCluster, status corev1.ConditionStatus) time.Time {
	e.t.Helper()
	ctx := context.Background()
	if err := e.env.Client.Get(ctx, client.ObjectKeyFromObject(kc), kc); err != nil {
		e.t.Fatal(err)
	}
	at := metav1.Now()
	kc.Status.Conditions = nil
	kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: status, Reason: v1alpha1.ReasonReady, LastTransitionTime: at})
	if status != corev1.ConditionTrue {
		kc.Status.Conditions[0].Reason = v1alpha1.ReasonUnreachable
	}
	if err := e.env.Client.Status().Update(ctx, kc); err != nil {
		e.t.Fatal(err)
	}
	return at.Time
}

// wantPlacedEventually waits until the Workload is placed on the cluster,
// and returns it.
func (e *schedulerEnv) wantPlacedEventually(name, cluster string) *v1alpha1.Workload {
	e.t.Helper()
	w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	testenv.WaitFor(e.t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		return w.Status.ClusterRef != nil && w.Status.ClusterRef.Name == cluster
	})
	return w
}

// TestRebalanceAskedExpires: a request of placer rebalance older than
// RebalanceRequestTTL, or made before the Workload's last placement, asks
// nothing.
func TestRebalanceAskedExpires(t *testing.T) {
	e := newSchedulerEnvWith(t, schedulerctrl.Options{RebalanceAfter: time.Hour}).namespace(t, "asked")
	ctx := context.Background()
	e.cluster("a", st.Labels("pref", "yes"), st.NotReady(v1alpha1.ReasonUnreachable))
	e.cluster("b")
	prefersA := st.PreferredClusterAffinity(50, st.Term(st.Expr("pref", "Exists")))
	old := time.Now().Add(-v1alpha1.RebalanceRequestTTL - time.Minute).UTC().Format(time.RFC3339)
	// Within the request's two minutes, but before the placement.
	before := time.Now().Add(-30 * time.Second).UTC().Format(time.RFC3339)
	for name, at := range map[string]string{"expired": old, "before-placed": before, "not-a-time": "soon"} {
		e.workload(name, prefersA, func(w *v1alpha1.Workload) { w.Annotations = map[string]string{v1alpha1.AnnotationRebalance: at} })
		e.wantPlaced(name, "b")
	}
	e.workload("asked-now", prefersA)
	e.wantPlaced("asked-now", "b")
	// a turns Ready: none of them was asked to move now.
	e.setReady(&v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "a"}}, corev1.ConditionTrue)
	// Each is looked at again (a label of the user's); one asked now
	// moves, so the scheduler has looked.
	for _, name := range []string{"expired", "before-placed", "not-a-time", "asked-now"} {
		w := &v1alpha1.Workload{}
		if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, w); err != nil {
			t.Fatal(err)
		}
		metav1.SetMetaDataLabel(&w.ObjectMeta, "looked", "again")
		if name == "asked-now" {
			metav1.SetMetaDataAnnotation(&w.ObjectMeta, v1alpha1.AnnotationRebalance, time.Now().UTC().Format(time.RFC3339))
		}
		if err := e.env.Client.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	e.wantPlacedEventually("asked-now", "a")
	time.Sleep(time.Second)
	for _, name := range []string{"expired", "before-placed", "not-a-time"} {
		w := &v1alpha1.Workload{}
		if err := e.env.Client.Get(ctx, client.ObjectKey{Namespace: e.ns, Name: name}, w); err != nil {
			t.Fatal(err)
		}
		if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != "b" {
			t.Errorf("%s moved to %v on a request that asks nothing", name, w.Status.ClusterRef)
		}
	}
}

// TestDividedRebalance: Divided Workloads that weigh a, b and c alike were
// divided over b and c while a was not Ready (as after a failover). a
// comes back, flaps, then stays Ready: a WhenPreferred Workload moves back
// to the division it would be given afresh (4 each) only once a has been
// Ready for the window; make-before-break, its share in a is made first,
// and b's and c's shrink only once it is Ready; with
// --max-concurrent-moves=1 a second one waits for the first to finish; the
// Never one stays until placer rebalance asks.
func TestDividedRebalance(t *testing.T) {
	const window = 3 * time.Second
	e := newSchedulerEnvWith(t, schedulerctrl.Options{RebalanceAfter: window, MaxConcurrentMoves: 1}).namespace(t, "divided-back")
	ctx := context.Background()
	room := st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi")
	a := e.cluster("a", room, st.NotReady(v1alpha1.ReasonUnreachable))
	e.cluster("b", room)
	e.cluster("c", room)
	// Their first division must see b and c both, or it is b alone.
	e.seen("b", "c")
	alike := divided(0, 0, v1alpha1.StaticClusterWeight{Weight: 1})
	ready := func(sh *v1alpha1.Workload) { e.shareReady(sh.Name) }
	fled := func(s map[string]*v1alpha1.Workload) bool {
		return len(s) == 2 && s["b"] != nil && s["c"] != nil && s["b"].ReplicaCount() == 6 && s["c"].ReplicaCount() == 6
	}
	for _, name := range []string{"one", "two", "stays"} {
		e.workload(name, st.Replicas(12), st.Requests("100m", "64Mi"), alike, func(w *v1alpha1.Workload) {
			if name != "stays" {
				w.Spec.Placement.Rebalance = v1alpha1.RebalanceWhenPreferred
			}
		})
		for _, sh := range e.sharesOf(name, fled) {
			ready(sh)
		}
	}
	setReady := func(status corev1.ConditionStatus) time.Time { return e.setReady(a, status) }
	stillFled := func(name string) {
		t.Helper()
		if s := e.sharesOf(name, func(map[string]*v1alpha1.Workload) bool { return true }); !fled(s) {
			t.Fatalf("%s's shares are %v, want b 6, c 6", name, counts(s))
		}
		if mb := e.get(name).Status.Rebalancing; mb != nil {
			t.Fatalf("%s moves back (%s)", name, mb.Message)
		}
	}
	// a flaps: Ready for less than the window each time.
	for range 3 {
		setReady(corev1.ConditionTrue)
		time.Sleep(window / 2)
		stillFled("one")
		stillFled("two")
		setReady(corev1.ConditionFalse)
		time.Sleep(window / 4)
	}
	readyAt := setReady(corev1.ConditionTrue)

	// One of the two begins to move back: a share of 4 in a, b and c kept
	// at 6 until it is Ready; the other waits for the place.
	var first, second string
	testenv.WaitFor(t, e.wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns}}, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		if (w.Name == "one" || w.Name == "two") && w.Status.Rebalancing != nil {
			first, second = w.Name, map[string]string{"one": "two", "two": "one"}[w.Name]
		}
		return first != ""
	})
	if e.get(second).Status.Rebalancing != nil {
		t.Fatal("both Workloads move back at once with --max-concurrent-moves=1")
	}
	// The record's time is to the second, as the API keeps it, and so is
	// a's Ready time the divider judged from.
	if mb := e.get(first).Status.Rebalancing; mb.Time.Add(time.Second).Sub(readyAt.Truncate(time.Second)) < window {
		t.Errorf("began to move back at %s, a turned Ready at %s: before the %s window", mb.Time, readyAt, window)
	}
	grown := e.sharesOf(first, func(s map[string]*v1alpha1.Workload) bool { return s["a"] != nil })
	if got := counts(grown); got["a"] != 4 || got["b"] != 6 || got["c"] != 6 {
		t.Errorf("%s's shares while its share in a is not Ready: %v, want a 4, b 6, c 6 (make-before-break)", first, got)
	}
	w := e.get(first)
	if msg := w.Status.GetCondition(v1alpha1.TypeScheduled).Message; !strings.Contains(msg, "moving back to divided-back/a 4, divided-back/b 4, divided-back/c 4") {
		t.Errorf("Scheduled says %q, not where it moves back to", msg)
	}
	time.Sleep(window)
	stillFled(second)
	if e.get(second).Status.Rebalancing != nil {
		t.Fatal("both Workloads move back at once with --max-concurrent-moves=1")
	}

	// a's share Ready: b's and c's shrink to 4; once they are Ready the
	// move is done, and the second Workload's begins.
	ready(grown["a"])
	shrunk := e.sharesOf(first, func(s map[string]*v1alpha1.Workload) bool {
		return s["b"] != nil && s["c"] != nil && s["b"].ReplicaCount() == 4 && s["c"].ReplicaCount() == 4
	})
	stillFled(second)
	ready(shrunk["b"])
	ready(shrunk["c"])
	testenv.WaitFor(t, e.wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: first}}, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		return w.Status.Rebalancing == nil && w.Status.Shares == "a=4,b=4,c=4"
	})
	ready(e.sharesOf(second, func(s map[string]*v1alpha1.Workload) bool { return s["a"] != nil && s["a"].ReplicaCount() == 4 })["a"])
	for _, sh := range e.sharesOf(second, func(s map[string]*v1alpha1.Workload) bool {
		return s["b"] != nil && s["c"] != nil && s["b"].ReplicaCount() == 4 && s["c"].ReplicaCount() == 4
	}) {
		ready(sh)
	}
	testenv.WaitFor(t, e.wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: second}}, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		return w.Status.Rebalancing == nil && w.Status.Shares == "a=4,b=4,c=4"
	})

	// The one that never rebalances stays, until an operator asks: then
	// it moves at once, with no window.
	stillFled("stays")
	stays := e.get("stays")
	asked := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRebalance, time.Now().UTC().Format(time.RFC3339))
	if err := e.env.Client.Patch(ctx, stays, client.RawPatch(types.MergePatchType, []byte(asked))); err != nil {
		t.Fatal(err)
	}
	grown = e.sharesOf("stays", func(s map[string]*v1alpha1.Workload) bool { return s["a"] != nil && s["a"].ReplicaCount() == 4 })

	// a reserves 2 of its 4 and rejects the others: the move ends where it
	// is. What it grew and did not make Ready counts for nothing, so b and
	// c keep their 6 (their Ready replicas never shrunk for a's), and a's
	// share goes.
	before := counts(grown)
	e.shareStatus(grown["a"].Name, func(w *v1alpha1.Workload) {
		w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: e.ns}, Reason: "Unschedulable",
			Message: "0/1 nodes are available: 1 Insufficient cpu.", Generation: w.Generation, Time: ptr.To(metav1.Now()),
			RetryAfter: ptr.To(metav1.NewTime(metav1.Now().Add(time.Hour))), Reserved: 2}}
	})
	testenv.WaitFor(t, e.wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stays"}}, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		return w.Status.Rebalancing == nil && w.Status.Shares == "b=6,c=6"
	})
	for _, name := range []string{"b", "c"} {
		if now := e.get(grown[name].Name); now.Generation != grown[name].Generation || now.ReplicaCount() != 6 {
			t.Errorf("stays' share in %s changed (generation %d → %d, %d replicas) while the move back ended: want it kept at 6 (%v)", name, grown[name].Generation, now.Generation, now.ReplicaCount(), before)
		}
	}
	if ended := eventtest.Listed(t, e.env.Client, e.ns, func(ev *corev1.Event) bool {
		return ev.InvolvedObject.Name == "stays" && ev.Reason == "MoveBackEnded" && strings.Contains(ev.Message, "reserved only 2")
	}); len(ended) == 0 {
		t.Error("no MoveBackEnded Event of stays saying a reserved only 2")
	}
	if rc := e.get("stays").Rejection(types.NamespacedName{Namespace: e.ns, Name: "a"}); rc == nil {
		t.Error("stays does not keep a's rejection: the next pass could move back into it at once")
	}
}
