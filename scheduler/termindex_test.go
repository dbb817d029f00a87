package scheduler

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// TestIndexedDomainsMatchTheScan: the domains a cycle reads from the
// cache's counts are, after any sequence of placements, moves, deletions,
// namespace label changes and cluster deletions, exactly those a scan of
// the snapshot's placed workloads gives, self excluded, for every term.
func TestIndexedDomainsMatchTheScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := NewCache()
	clusters := make([]string, 8)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("c%d", i)
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: clusters[i],
			Labels: map[string]string{"region": fmt.Sprintf("r%d", i%3), "zone": fmt.Sprintf("z%d", i%4)}}}
		if i == 7 {
			delete(kc.Labels, "zone") // a cluster without the key counts nowhere
		}
		kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady})
		c.UpsertCluster(kc)
	}
	namespaces := []string{"a", "b", "c"}
	for _, ns := range namespaces {
		c.UpsertNamespace(ns, map[string]string{"team": ns})
	}
	workload := func(i int) *v1alpha1.Workload {
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: namespaces[rng.IntN(len(namespaces))], Name: fmt.Sprintf("w%d", i),
			UID: types.UID(fmt.Sprintf("uid-%d", i)), Labels: map[string]string{"app": fmt.Sprintf("app%d", rng.IntN(4)), "tier": fmt.Sprintf("t%d", rng.IntN(2))}}}
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "default", Name: clusters[rng.IntN(len(clusters))]}
		return w
	}
	sel := func(kv ...string) *v1alpha1.LabelSelector {
		s := &v1alpha1.LabelSelector{MatchLabels: map[string]v1alpha1.LabelValue{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.MatchLabels[kv[i]] = v1alpha1.LabelValue(kv[i+1])
		}
		return s
	}
	specs := []v1alpha1.WorkloadAffinityTerm{
		{LabelSelector: sel("app", "app1"), TopologyKey: "region"},
		{LabelSelector: sel("app", "app2", "tier", "t1"), TopologyKey: "zone"},
		{LabelSelector: sel("tier", "t0"), TopologyKey: v1alpha1.LabelClusterName, Namespaces: []string{"a", "b"}},
		{LabelSelector: sel("app", "app3"), TopologyKey: "region", NamespaceSelector: sel("team", "c")},
		{LabelSelector: &v1alpha1.LabelSelector{}, TopologyKey: "zone", NamespaceSelector: &v1alpha1.LabelSelector{}},
		// No labelSelector selects nothing, {} everything: the same key
		// for both would give one the other's counts.
		{TopologyKey: "zone", NamespaceSelector: &v1alpha1.LabelSelector{}},
	}
	var placed []*v1alpha1.Workload
	next := 0
	check := func(step int) {
		t.Helper()
		// Twice: the first snapshot asks (and scans), the next reads the counts.
		for range 2 {
			snap := c.Snapshot()
			scan := *snap
			scan.termCounts, scan.asked = nil, nil
			selves := []types.UID{"", "uid-none"}
			for range 3 {
				if len(placed) > 0 {
					selves = append(selves, placed[rng.IntN(len(placed))].UID)
				}
			}
			for _, spec := range specs {
				for _, ns := range namespaces {
					term, err := NewAffinityTerm(ns, &spec, 1)
					if err != nil {
						t.Fatal(err)
					}
					for _, self := range selves {
						got := term.Domains(snap, self)
						want := term.Domains(&scan, self)
						if !maps.Equal(got, want) {
							t.Fatalf("step %d, term %+v in %s, self %q: indexed %v, scan %v", step, spec, ns, self, got, want)
						}
					}
				}
			}
			// Force a new snapshot, so the asked terms get counted.
			c.UpsertNamespace("x", map[string]string{"step": fmt.Sprint(step)})
		}
	}
	for step := range 300 {
		switch op := rng.IntN(10); {
		case op < 5 || len(placed) == 0: // place a new one
			w := workload(next)
			next++
			c.UpsertWorkload(w)
			placed = append(placed, w)
		case op < 7: // move or relabel one
			i := rng.IntN(len(placed))
			w := placed[i].DeepCopy()
			if rng.IntN(2) == 0 {
				w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "default", Name: clusters[rng.IntN(len(clusters))]}
			} else {
				w.Labels["app"] = fmt.Sprintf("app%d", rng.IntN(4))
			}
			c.UpsertWorkload(w)
			placed[i] = w
		case op < 8: // delete one
			i := rng.IntN(len(placed))
			c.DeleteWorkload(placed[i])
			placed = append(placed[:i], placed[i+1:]...)
		case op < 9: // a namespace changes team
			c.UpsertNamespace(namespaces[rng.IntN(len(namespaces))], map[string]string{"team": namespaces[rng.IntN(len(namespaces))]})
		default: // a cluster goes, or comes back
			k := types.NamespacedName{Namespace: "default", Name: clusters[rng.IntN(len(clusters))]}
			if c.Cluster(k) != nil && rng.IntN(2) == 0 {
				c.DeleteCluster(k)
			} else {
				kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name, Labels: map[string]string{"region": "r9", "zone": "z9"}}}
				c.UpsertCluster(kc)
			}
		}
		if step%10 == 0 {
			check(step)
		}
	}
	check(300)
	if len(c.terms.terms) == 0 {
		t.Fatal("no term was ever counted: the test compared the scan with itself")
	}
}
