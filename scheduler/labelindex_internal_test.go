package scheduler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

func labelledCluster(name string, kv ...string) *v1alpha1.KubernetesCluster {
	l := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[kv[i]] = kv[i+1]
	}
	return &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: l}}
}

// carrying are the names of the snapshot's clusters carrying the labels.
func carrying(s *Snapshot, sel map[string]string) []string {
	var out []string
	set := s.Carrying(sel)
	for i, c := range s.Clusters {
		if set.Has(i) {
			out = append(out, c.Key.Name)
		}
	}
	return out
}

// TestCacheLabelIndex: the cache's snapshots share one label index while
// the clusters and their labels stay, and a snapshot after a cluster comes,
// goes or relabels answers from its own clusters.
func TestCacheLabelIndex(t *testing.T) {
	c := NewCache()
	c.UpsertCluster(labelledCluster("b", "tier", "prod"))
	c.UpsertCluster(labelledCluster("d", "tier", "dev"))
	prod := map[string]string{"tier": "prod"}
	check := func(step string, want ...string) *Snapshot {
		t.Helper()
		s := c.Snapshot()
		if got := carrying(s, prod); !equalStrings(got, want) {
			t.Fatalf("%s: tier=prod carried by %v, want %v", step, got, want)
		}
		return s
	}
	first := check("start", "b")

	// Requests change (a summary, an assumed Workload): the same clusters
	// and labels, the same index.
	kc := labelledCluster("b", "tier", "prod")
	kc.Status.Requested = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	c.UpsertCluster(kc)
	again := check("requests changed", "b")
	if again == first || again.labelIndex != first.labelIndex {
		t.Error("a change of requests alone built the label index again")
	}

	c.UpsertCluster(labelledCluster("a", "tier", "prod")) // before b: every position moves
	check("a added", "a", "b")
	c.UpsertCluster(labelledCluster("b", "tier", "dev"))
	check("b relabelled", "a")
	c.UpsertCluster(labelledCluster("c", "tier", "prod"))
	c.DeleteCluster(first.Clusters[0].Key) // b
	check("c added, b deleted", "a", "c")
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
