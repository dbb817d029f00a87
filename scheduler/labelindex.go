package scheduler

import (
	"math/bits"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// ClusterSet is a set of a snapshot's clusters, by their positions in
// Snapshot.Clusters: one bit each.
type ClusterSet []uint64

func newClusterSet(n int) ClusterSet { return make(ClusterSet, (n+63)/64) }

// Has reports whether the cluster at position i is in the set.
func (s ClusterSet) Has(i int) bool { return s[i/64]&(1<<(uint(i)%64)) != 0 }

func (s ClusterSet) add(i int) { s[i/64] |= 1 << (uint(i) % 64) }

// Len is the number of clusters in the set.
func (s ClusterSet) Len() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

func (s ClusterSet) and(o ClusterSet) {
	for i := range s {
		s[i] &= o[i]
	}
}

func (s ClusterSet) or(o ClusterSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

// fill adds the first n positions.
func (s ClusterSet) fill(n int) {
	for i := range s {
		s[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		s[len(s)-1] = 1<<uint(r) - 1
	}
}

// labelIndex holds a snapshot's clusters by label: for each key, each
// value's positions in Snapshot.Clusters, ascending. A cycle that selects
// by labels reads the clusters it names instead of each cluster's labels:
// its cost grows with the keys and values it asks about, not with the
// fleet.
type labelIndex struct {
	n     int
	byKey map[string]map[string][]int32
}

func newLabelIndex(clusters []*ClusterInfo) *labelIndex {
	x := &labelIndex{n: len(clusters), byKey: map[string]map[string][]int32{}}
	for i, c := range clusters {
		for k, v := range c.Labels {
			vals := x.byKey[k]
			if vals == nil {
				vals = map[string][]int32{}
				x.byKey[k] = vals
			}
			vals[v] = append(vals[v], int32(i))
		}
	}
	return x
}

// sharedLabelIndex is built once, by the first cycle that asks, and shared
// by the snapshots of a cache while no cluster comes, goes or changes its
// labels: their clusters are in the same order.
type sharedLabelIndex struct {
	once sync.Once
	x    *labelIndex
}

// labels is the snapshot's label index.
func (s *Snapshot) labels() *labelIndex {
	s.labelIndex.once.Do(func() { s.labelIndex.x = newLabelIndex(s.Clusters) })
	return s.labelIndex.x
}

// Carrying is the set of clusters that carry every label of sel, with the
// value given.
func (s *Snapshot) Carrying(sel map[string]string) ClusterSet {
	x := s.labels()
	out := newClusterSet(x.n)
	out.fill(x.n)
	for k, v := range sel {
		next := newClusterSet(x.n)
		for _, i := range x.byKey[k][v] {
			next.add(int(i))
		}
		out.and(next)
	}
	return out
}

// MatchingTerms is the set of clusters that match any of the terms by
// node-affinity semantics (terms ORed; each term's expressions ANDed; a
// term with none matches no cluster), as nodeaffinity.NodeSelector.Match
// decides for ClusterInfo.Node. ok is false when a term matches fields
// (the cluster's name), which the index does not hold, or cannot be
// parsed: the caller then matches each cluster.
func (s *Snapshot) MatchingTerms(terms []corev1.NodeSelectorTerm) (ClusterSet, bool) {
	x := s.labels()
	out := newClusterSet(x.n)
	for _, t := range terms {
		if len(t.MatchFields) > 0 {
			return nil, false
		}
		if len(t.MatchExpressions) == 0 {
			continue
		}
		term := newClusterSet(x.n)
		term.fill(x.n)
		for _, e := range t.MatchExpressions {
			op, ok := selectorOperators[e.Operator]
			if !ok {
				return nil, false
			}
			r, err := labels.NewRequirement(e.Key, op, e.Values)
			if err != nil {
				return nil, false
			}
			term.and(x.matching(*r))
		}
		out.or(term)
	}
	return out, true
}

// selectorOperators are node affinity's operators as label selectors
// have them, as nodeaffinity converts them.
var selectorOperators = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

// matching is the set of clusters whose labels satisfy one requirement.
// A requirement reads its own key only, so each of that key's values is
// asked once, with the library's own semantics (labels.Requirement), and
// a cluster without the key as an empty set of labels is.
func (x *labelIndex) matching(r labels.Requirement) ClusterSet {
	out := newClusterSet(x.n)
	vals := x.byKey[r.Key()]
	// One value asked at a time, through a pointer: a struct passed as
	// labels.Labels would be copied to the heap for each.
	l := &oneLabel{}
	if r.Matches(l) {
		// Clusters without the key match (NotIn, DoesNotExist).
		out.fill(x.n)
		for _, pos := range vals {
			for _, i := range pos {
				out[i/64] &^= 1 << (uint(i) % 64)
			}
		}
	}
	for v, pos := range vals {
		*l = oneLabel{key: r.Key(), value: v, has: true}
		if !r.Matches(l) {
			continue
		}
		for _, i := range pos {
			out.add(int(i))
		}
	}
	return out
}

// oneLabel is a set of at most one label, as labels.Labels: a
// requirement asked about each value of its key allocates no map.
type oneLabel struct {
	key, value string
	has        bool
}

func (l *oneLabel) Has(k string) bool { return l.has && k == l.key }

func (l *oneLabel) Get(k string) string {
	v, _ := l.Lookup(k)
	return v
}

func (l *oneLabel) Lookup(k string) (string, bool) {
	if l.Has(k) {
		return l.value, true
	}
	return "", false
}
