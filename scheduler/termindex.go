package scheduler

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// The cache keeps, for the inter-workload affinity terms that cycles ask
// about, how many placed workloads each selects in each cluster, updated
// as workloads come and go: a cycle then reads a term's domains in the
// number of clusters, not of placed workloads. A term is indexed from the
// snapshot after the one that first asked about it (that one scans); at
// most maxIndexedTerms are kept, the least recently asked going first.
// Snapshots share the counts, which the cache copies before it changes
// them (copy on write), and find a placed workload by UID in shards the
// cache copies the same way.

// maxIndexedTerms bounds the terms the cache counts for: each costs a
// match per placed workload that comes or goes, and an entry per workload
// it selects.
const maxIndexedTerms = 128

// termKey identifies what a term selects: its namespaces, namespace
// selector and label selector, and its topology key. Weights do not
// change domains.
func (t *AffinityTerm) termKey() string {
	var b strings.Builder
	b.WriteString(strings.Join(slices.Sorted(maps.Keys(t.namespaces)), ","))
	b.WriteString("|")
	if t.namespaceSelector != nil {
		b.WriteString(t.namespaceSelector.String())
	} else {
		b.WriteString("<none>")
	}
	b.WriteString("|")
	// Everything and Nothing both print as "": a term with labelSelector
	// {} selects every workload, one without none.
	switch sel := t.selector.String(); {
	case t.selector.Empty():
		b.WriteString("<everything>")
	case sel == "":
		b.WriteString("<nothing>")
	default:
		b.WriteString(sel)
	}
	b.WriteString("|")
	b.WriteString(t.TopologyKey)
	return b.String()
}

// termCounts counts the placed workloads a term selects, per cluster.
type termCounts struct {
	term *AffinityTerm
	// perCluster is shared with snapshots while shared is set.
	perCluster map[types.NamespacedName]int64
	shared     bool
	// members are the selected workloads and their clusters (the cache's
	// alone).
	members map[types.UID]types.NamespacedName
	// asked is the cache's snapshot generation that last asked.
	asked uint64
}

func (tc *termCounts) own() {
	if tc.shared {
		tc.perCluster = maps.Clone(tc.perCluster)
		tc.shared = false
	}
}

// add counts p if the term selects it (p replaces any earlier record).
func (tc *termCounts) add(p *PlacedWorkload, namespaces map[string]labels.Set) {
	tc.remove(p.UID)
	if !tc.term.Matches(p.Namespace, p.Labels, namespaces) {
		return
	}
	tc.own()
	tc.perCluster[p.Cluster]++
	tc.members[p.UID] = p.Cluster
}

// remove uncounts a workload, if it was counted.
func (tc *termCounts) remove(uid types.UID) {
	k, ok := tc.members[uid]
	if !ok {
		return
	}
	tc.own()
	delete(tc.members, uid)
	if tc.perCluster[k]--; tc.perCluster[k] <= 0 {
		delete(tc.perCluster, k)
	}
}

// termIndex is the cache's counted terms, by termKey.
type termIndex struct {
	terms map[string]*termCounts
	gen   uint64
}

// register starts counting a term, from every placed workload.
func (x *termIndex) register(key string, t *AffinityTerm, placed []*PlacedWorkload, namespaces map[string]labels.Set) {
	if _, ok := x.terms[key]; ok {
		return
	}
	if len(x.terms) >= maxIndexedTerms {
		var oldest string
		for k, tc := range x.terms {
			if oldest == "" || tc.asked < x.terms[oldest].asked || tc.asked == x.terms[oldest].asked && k < oldest {
				oldest = k
			}
		}
		delete(x.terms, oldest)
	}
	tc := &termCounts{term: t, perCluster: map[types.NamespacedName]int64{}, members: map[types.UID]types.NamespacedName{}, asked: x.gen}
	for _, p := range placed {
		tc.add(p, namespaces)
	}
	x.terms[key] = tc
}

// upsert and remove keep every counted term up to date.
func (x *termIndex) upsert(p *PlacedWorkload, namespaces map[string]labels.Set) {
	for _, tc := range x.terms {
		tc.add(p, namespaces)
	}
}

func (x *termIndex) remove(uid types.UID) {
	for _, tc := range x.terms {
		tc.remove(uid)
	}
}

// recount counts again the terms that select namespaces by their labels,
// after a namespace's labels changed.
func (x *termIndex) recount(placed []*PlacedWorkload, namespaces map[string]labels.Set) {
	for _, tc := range x.terms {
		if tc.term.namespaceSelector == nil {
			continue
		}
		tc.own()
		tc.perCluster, tc.members = map[types.NamespacedName]int64{}, map[types.UID]types.NamespacedName{}
		for _, p := range placed {
			tc.add(p, namespaces)
		}
	}
}

// freeze hands the current counts to a snapshot.
func (x *termIndex) freeze() map[string]map[types.NamespacedName]int64 {
	x.gen++
	out := make(map[string]map[types.NamespacedName]int64, len(x.terms))
	for k, tc := range x.terms {
		tc.shared = true
		out[k] = tc.perCluster
	}
	return out
}

// asked records what a snapshot's cycles asked about: terms counted are
// kept, terms not counted yet are registered.
func (x *termIndex) asked(a *askedTerms, placed []*PlacedWorkload, namespaces map[string]labels.Set) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	// Those counted already are fresh again first, so that registering
	// the others never drops one that was just asked.
	for key := range a.terms {
		if tc, ok := x.terms[key]; ok {
			tc.asked = x.gen
		}
	}
	registered := 0
	for _, key := range slices.Sorted(maps.Keys(a.terms)) {
		if _, ok := x.terms[key]; ok || registered >= maxRegistrations {
			continue
		}
		x.register(key, a.terms[key], placed, namespaces)
		registered++
	}
	a.terms = nil
}

// maxRegistrations bounds the terms a snapshot starts counting, each a
// scan of the placed workloads under the cache's lock; the rest wait for
// a later snapshot that asks again.
const maxRegistrations = 8

// askedTerms are the terms a snapshot's cycles asked about, for the cache.
type askedTerms struct {
	mu    sync.Mutex
	terms map[string]*AffinityTerm
}

func (a *askedTerms) add(key string, t *AffinityTerm) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.terms == nil {
		a.terms = map[string]*AffinityTerm{}
	}
	a.terms[key] = t
}

// uidShards is how many pieces the UID index is in: a write copies one
// piece that a snapshot shares, not the whole index.
const uidShards = 64

// uidIndex maps a placed workload's UID to its position in the cache's
// placed slice (and so in a snapshot's Placed).
type uidIndex struct {
	shards [uidShards]map[types.UID]int
	shared [uidShards]bool
}

func shardOf(uid types.UID) int {
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h ^= uint32(uid[i])
		h *= 16777619
	}
	return int(h % uidShards)
}

func (x *uidIndex) get(uid types.UID) (int, bool) {
	i, ok := x.shards[shardOf(uid)][uid]
	return i, ok
}

func (x *uidIndex) own(s int) map[types.UID]int {
	switch {
	case x.shards[s] == nil:
		x.shards[s] = map[types.UID]int{}
	case x.shared[s]:
		x.shards[s] = maps.Clone(x.shards[s])
	}
	x.shared[s] = false
	return x.shards[s]
}

func (x *uidIndex) set(uid types.UID, i int) { x.own(shardOf(uid))[uid] = i }

func (x *uidIndex) del(uid types.UID) { delete(x.own(shardOf(uid)), uid) }

// freeze hands the index to a snapshot.
func (x *uidIndex) freeze() *[uidShards]map[types.UID]int {
	out := x.shards
	for s := range x.shared {
		x.shared[s] = true
	}
	return &out
}
