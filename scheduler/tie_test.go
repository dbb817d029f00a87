package scheduler

import (
	"hash/fnv"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestTieBreakIsFNV: the allocation-free tie-break is FNV-1a of the UID, a
// zero byte and the cluster's key, as hash/fnv computes it: the order of
// equal clusters for a Workload stays what it was.
func TestTieBreakIsFNV(t *testing.T) {
	for _, tc := range []struct {
		uid types.UID
		key types.NamespacedName
	}{
		{"", types.NamespacedName{}},
		{"3f1c2a9e-0000-4000-8000-000000000001", types.NamespacedName{Namespace: "default", Name: "east"}},
		{"u", types.NamespacedName{Namespace: "", Name: "only-name"}},
		{"ünïcode-üid", types.NamespacedName{Namespace: "platform", Name: "cluster-0042"}},
	} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(tc.uid))
		_, _ = h.Write([]byte{0})
		_, _ = h.Write([]byte(tc.key.String()))
		if got, want := tieBreak(tc.uid, tc.key), h.Sum64(); got != want {
			t.Errorf("tieBreak(%q, %s) = %x, want %x", tc.uid, tc.key, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { tieBreak("some-uid", types.NamespacedName{Namespace: "ns", Name: "name"}) }); n != 0 {
		t.Errorf("tieBreak allocates %v times", n)
	}
}
