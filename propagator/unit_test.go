package propagator

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/chaperontest"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestPlacementUnits: the status places the chosen cluster's unit of
// every replica first, then a runner-up unit in each other nominated
// cluster that has not rejected this generation, each once.
func TestPlacementUnits(t *testing.T) {
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	rejectedC := func(w *v1alpha1.Workload) {
		later := metav1.NewTime(time.Now().Add(time.Hour))
		w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "c", Namespace: "default"}, Generation: w.Generation, RetryAfter: &later}}
	}
	cases := []struct {
		name string
		w    *v1alpha1.Workload
		want []v1alpha1.PlacementUnit
	}{
		{"no cluster chosen: none", st.Workload("w", st.Replicas(3), st.Nominated("a")), nil},
		{"one cluster: one unit of every replica", st.Workload("w", st.Replicas(3), st.PlacedOn("a")), []v1alpha1.PlacementUnit{{Cluster: key("a"), Count: 3}}},
		{"fan-out: runner-ups after the chosen, none twice, none that rejected", st.Workload("w", st.Replicas(2), st.PlacedOn("b"), st.Nominated("a", "b", "c", "a", "d"), rejectedC),
			[]v1alpha1.PlacementUnit{{Cluster: key("b"), Count: 2}, {Cluster: key("a"), Count: 2, RunnerUp: true}, {Cluster: key("d"), Count: 2, RunnerUp: true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.w.PlacementUnits()); diff != "" {
				t.Errorf("PlacementUnits() (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestObserveUnit: a unit counts only its own replicas; a candidate of a
// replica outside it is extra there, and it is proven by its own count.
func TestObserveUnit(t *testing.T) {
	w := st.Workload("web", st.Replicas(4))
	chs := chaperons(w, ops(chaperontest.Reserved), ops(chaperontest.Reserved), ops(chaperontest.Reserved))
	u := v1alpha1.PlacementUnit{First: 1, Count: 3}
	got := ObserveUnit(w, u, chs, "")
	if diff := cmp.Diff([]int{3}, got.Missing); diff != "" {
		t.Errorf("Missing (-want,+got):\n%s", diff)
	}
	if len(got.Extra) != 1 || got.Extra[0].Name != chs[0].Name || got.Reserved != 2 {
		t.Errorf("Extra %d (want replica 0's), Reserved %d (want 2)", len(got.Extra), got.Reserved)
	}
	two := v1alpha1.PlacementUnit{First: 1, Count: 2}
	if d := Decide(two, ObserveUnit(w, two, chs, ""), 0, time.Minute); d.Action != Commit {
		t.Errorf("a unit of replicas 1 and 2, both reserved: %+v, want Commit", d)
	}
	if d := Decide(u, got, 0, time.Minute); d.Action != Wait {
		t.Errorf("a unit of replicas 1 to 3, one missing: %+v, want Wait", d)
	}
}

// TestStageOf: how far a placed Workload's chosen unit may go.
func TestStageOf(t *testing.T) {
	done := st.Workload("w", st.PlacedOn("a"))
	complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 1 replicas succeeded in a", done.Generation)
	done.Status.SetConditions(complete, ready)
	left := []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "b"}}}
	stopFirst := st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
		w.Spec.Placement.Move, w.Status.LeftClusters = v1alpha1.MoveStopBeforeStart, left
	})
	startFirst := st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) { w.Status.LeftClusters = left })
	for name, tc := range map[string]struct {
		w    *v1alpha1.Workload
		want Stage
	}{
		"placed":                       {st.Workload("w", st.PlacedOn("a")), Prove},
		"ran to its end":               {done, Finished},
		"StopBeforeStart, left behind": {stopFirst, HeldForMove},
		"StartBeforeStop, left behind": {startFirst, Prove},
	} {
		if got := StageOf(tc.w); got != tc.want {
			t.Errorf("%s: StageOf() = %d, want %d", name, got, tc.want)
		}
	}
}

// TestPlace: the units the scheduler decides are the units the status
// then places (Place, then PlacementUnits), and no unit places nowhere.
func TestPlace(t *testing.T) {
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	for name, units := range map[string][]v1alpha1.PlacementUnit{
		"one cluster": {{Cluster: key("a"), Count: 3}},
		"fan-out":     {{Cluster: key("b"), Count: 2}, {Cluster: key("a"), Count: 2, RunnerUp: true}, {Cluster: key("c"), Count: 2, RunnerUp: true}},
	} {
		w := st.Workload("w", st.Replicas(int32(units[0].Count)))
		w.Status.Place(units)
		if diff := cmp.Diff(units, w.PlacementUnits()); diff != "" {
			t.Errorf("%s: (-placed,+read back):\n%s", name, diff)
		}
		if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != units[0].Cluster.Name || len(w.Status.NominatedClusters) != len(units) {
			t.Errorf("%s: clusterRef %v, nominated %v", name, w.Status.ClusterRef, w.Status.NominatedClusters)
		}
	}
	w := st.Workload("w", st.PlacedOn("a"), st.Nominated("a"))
	w.Status.Place(nil)
	if w.Status.ClusterRef != nil || w.Status.NominatedClusters != nil || w.PlacementUnits() != nil {
		t.Errorf("no unit: clusterRef %v, nominated %v", w.Status.ClusterRef, w.Status.NominatedClusters)
	}
}

// TestCount: a Workload's counts are the sum of its units' own; it has
// ended only when every unit has, and a unit's pending message shows.
func TestCount(t *testing.T) {
	w := st.Workload("web", st.Replicas(4))
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	a := v1alpha1.PlacementUnit{Cluster: key("a"), First: 0, Count: 2}
	b := v1alpha1.PlacementUnit{Cluster: key("b"), First: 2, Count: 2}
	up, done := ops(allowed, running), ops(allowed, chaperontest.Ended(corev1.PodSucceeded, ""))
	stuck := ops(chaperontest.PodScheduledFalse(corev1.PodReasonUnschedulable, "0/3 nodes are available"))
	cases := []struct {
		name   string
		shares []Share
		want   Counts
	}{
		{"one unit of every replica", []Share{{w.WholeUnit(key("a")), Observe(w, chaperons(w, up, up, up, stuck))}},
			Counts{Replicas: 4, Scheduled: 3, Ready: 3, Pending: "0/3 nodes are available", Clusters: "a"}},
		{"two units: summed, each on its own replicas", []Share{
			{a, ObserveUnit(w, a, chaperons(w, up, up, up, up), "")},
			{b, ObserveUnit(w, b, chaperons(w, up, up, up, stuck), "")}},
			Counts{Replicas: 4, Scheduled: 3, Ready: 3, Pending: "0/3 nodes are available", Clusters: "a, b"}},
		{"one unit ended, the other not: not ended", []Share{
			{a, ObserveUnit(w, a, chaperons(w, done, done, up, up), "")},
			{b, ObserveUnit(w, b, chaperons(w, done, done, up, up), "")}},
			Counts{Replicas: 4, Scheduled: 4, Ready: 2, Succeeded: 2, Clusters: "a, b"}},
		{"every unit ended", []Share{
			{a, ObserveUnit(w, a, chaperons(w, done, done, done, done), "")},
			{b, ObserveUnit(w, b, chaperons(w, done, done, done, done), "")}},
			Counts{Replicas: 4, Scheduled: 4, Succeeded: 4, Ended: true, Clusters: "a, b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Count(tc.shares)); diff != "" {
				t.Errorf("Count() (-want,+got):\n%s", diff)
			}
		})
	}
}
