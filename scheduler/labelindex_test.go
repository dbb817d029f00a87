package scheduler_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/priorities"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// randomFleet: clusters with a few keys, each present or not, of few
// values, some numeric, some not, and some not Ready or cordoned (earlier
// filters fail those first).
func randomFleet(rng *rand.Rand, n int) []*v1alpha1.KubernetesCluster {
	var out []*v1alpha1.KubernetesCluster
	for i := range n {
		var kv []string
		for _, k := range []string{"a", "b", "num", "tier"} {
			if rng.IntN(4) == 0 {
				continue
			}
			v := fmt.Sprint(rng.IntN(4))
			if k == "tier" {
				v = []string{"prod", "dev", "x1"}[rng.IntN(3)]
			}
			if k == "num" && rng.IntN(5) == 0 {
				v = "many"
			}
			kv = append(kv, k, v)
		}
		opts := []st.ClusterOption{st.Labels(kv...), st.Provider([]string{"aws", "gcp"}[i%2]), st.Capacity("64", "256Gi", "0", "0", "8", "32Gi")}
		switch rng.IntN(8) {
		case 0:
			opts = append(opts, st.NotReady("down"))
		case 1:
			opts = append(opts, st.Cordoned())
		}
		out = append(out, st.Cluster(fmt.Sprintf("c%03d", i), opts...))
	}
	return out
}

// fleetSize: the sets' word boundaries first (one cluster, 63 to 65, 128,
// 130), then up to 150 clusters at random.
func fleetSize(rng *rand.Rand, round int) int {
	if edges := []int{1, 63, 64, 65, 128, 130}; round < len(edges) {
		return edges[round]
	}
	return 1 + rng.IntN(150)
}

func randomExpr(rng *rand.Rand) v1alpha1.ClusterSelectorRequirement {
	key := []string{"a", "b", "num", "tier", "absent"}[rng.IntN(5)]
	vals := func() []string {
		var v []string
		for range 1 + rng.IntN(2) {
			v = append(v, fmt.Sprint(rng.IntN(4)))
		}
		return v
	}
	switch rng.IntN(6) {
	case 0:
		return st.Expr(key, "In", vals()...)
	case 1:
		return st.Expr(key, "NotIn", vals()...)
	case 2:
		return st.Expr(key, "Exists")
	case 3:
		return st.Expr(key, "DoesNotExist")
	case 4:
		return st.Expr(key, "Gt", fmt.Sprint(rng.IntN(4)))
	default:
		return st.Expr(key, "Lt", fmt.Sprint(rng.IntN(4)))
	}
}

func randomTerms(rng *rand.Rand) []v1alpha1.ClusterSelectorTerm {
	var terms []v1alpha1.ClusterSelectorTerm
	for range 1 + rng.IntN(3) {
		var exprs []v1alpha1.ClusterSelectorRequirement
		for range rng.IntN(3) { // an empty term now and then: it matches nothing
			exprs = append(exprs, randomExpr(rng))
		}
		terms = append(terms, st.Term(exprs...))
	}
	return terms
}

// TestMatchingTermsAsNodeAffinity: the index's set is exactly the clusters
// nodeaffinity matches, for random terms over a random fleet.
func TestMatchingTermsAsNodeAffinity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		snap := st.Snapshot(randomFleet(rng, fleetSize(rng, round)), nil, nil)
		w := st.Workload("w", st.RequiredClusterAffinity(randomTerms(rng)...))
		ra, errs := scheduler.RequiredClusterAffinity(w)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		terms := ra.Terms
		sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: terms})
		if err != nil {
			t.Fatal(err)
		}
		set, ok := snap.MatchingTerms(terms)
		if !ok {
			t.Fatalf("round %d: terms on labels only not indexed: %v", round, terms)
		}
		matched := 0
		for i, c := range snap.Clusters {
			if want := sel.Match(c.Node); set.Has(i) != want {
				t.Fatalf("round %d: cluster %s labels %v, terms %v: index says %t, nodeaffinity %t", round, c.Key.Name, c.Labels, terms, set.Has(i), want)
			}
			if set.Has(i) {
				matched++
			}
		}
		if set.Len() != matched {
			t.Fatalf("round %d: Len %d, %d matched", round, set.Len(), matched)
		}
	}
	snap := st.Snapshot(randomFleet(rng, 3), nil, nil)
	fields := []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"c000"}}}}}
	if _, ok := snap.MatchingTerms(fields); ok {
		t.Error("a term on fields was answered from the label index, which holds no names")
	}
}

// TestNarrowedCycleAsEveryFilter: a cycle that narrows by the label index
// fails the same clusters, with the same first failure, and ranks the same
// clusters in the same order as one that runs every filter on every
// cluster (AllFilters).
func TestNarrowedCycleAsEveryFilter(t *testing.T) {
	p := defaultProfile(t)
	rng := rand.New(rand.NewPCG(3, 4))
	narrowedSome := false
	for round := range 200 {
		snap := st.Snapshot(randomFleet(rng, fleetSize(rng, round)), nil, nil)
		opts := []st.WorkloadOption{st.Requests("1", "1Gi"), st.RequiredClusterAffinity(randomTerms(rng)...)}
		if rng.IntN(2) == 0 {
			opts = append(opts, st.Selector("a", fmt.Sprint(rng.IntN(4))))
		}
		if rng.IntN(3) == 0 {
			opts = append(opts, st.Selector("cloudProvider", "aws"))
		}
		w := st.Workload(fmt.Sprintf("w%d", round), opts...)
		got := p.Schedule(context.Background(), w, snap, scheduler.Options{})
		want := p.Schedule(context.Background(), w, snap, scheduler.Options{AllFilters: true})
		if g, wt := failures(got), failures(want); !slices.Equal(g, wt) {
			t.Fatalf("round %d: narrowed cycle failed\n%v\nevery filter failed\n%v", round, g, wt)
		}
		if g, wt := totals(got), totals(want); !slices.Equal(g, wt) {
			t.Fatalf("round %d: narrowed ranking %v, every filter's %v", round, g, wt)
		}
		for _, f := range got.Failed {
			if n := f.Status.Plugin(); n == "ClusterSelector" || n == "ClusterAffinity" {
				narrowedSome = true
			}
		}
	}
	if !narrowedSome {
		t.Fatal("no cluster failed the selector or the affinity: the test compared nothing narrowed")
	}
}

func failures(r *scheduler.Result) []string {
	out := make([]string, len(r.Failed))
	for i, f := range r.Failed {
		out[i] = f.Cluster.Key.Name + ": " + f.Status.Plugin() + ": " + f.Status.Message()
	}
	return out
}

// totals are the ranked clusters with their totals, best first.
func totals(r *scheduler.Result) []string {
	out := make([]string, len(r.Ranked))
	for i, c := range r.Ranked {
		out[i] = fmt.Sprintf("%s=%d", c.Cluster.Key.Name, c.Total)
	}
	return out
}

// TestScoreAllAsScore: the preferred terms' scores from the label index
// are each cluster's own Score, for random terms over a random fleet.
func TestScoreAllAsScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	p := &priorities.ClusterAffinity{}
	ctx := context.Background()
	for round := range 300 {
		snap := st.Snapshot(randomFleet(rng, fleetSize(rng, round)), nil, nil)
		var opts []st.WorkloadOption
		for _, term := range randomTerms(rng) {
			opts = append(opts, st.PreferredClusterAffinity(int32(rng.IntN(100)), term))
		}
		w := st.Workload("w", opts...)
		state := scheduler.NewCycleState()
		if s := p.PreScore(ctx, state, w, snap, snap.Clusters); !s.IsSuccess() {
			t.Fatal(s.Message())
		}
		pos := make([]int32, 0, len(snap.Clusters))
		for i := range snap.Clusters {
			if rng.IntN(3) > 0 { // some clusters infeasible
				pos = append(pos, int32(i))
			}
		}
		raw := make([]int64, len(pos))
		for i := range raw {
			raw[i] = -1 // whatever a plugin before left
		}
		if !p.ScoreAll(ctx, state, w, snap, pos, raw) {
			t.Fatalf("round %d: terms on labels only not scored from the index", round)
		}
		for i, at := range pos {
			c := snap.Clusters[at]
			want, s := p.Score(ctx, state, w, c)
			if !s.IsSuccess() {
				t.Fatal(s.Message())
			}
			if raw[i] != want {
				t.Fatalf("round %d: cluster %s labels %v: ScoreAll %d, Score %d (terms %v)", round, c.Key.Name, c.Labels, raw[i], want, w.Spec.Affinity.ClusterAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
			}
		}
	}
}
