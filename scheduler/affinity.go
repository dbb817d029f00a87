package scheduler

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// AffinityTerm is a WorkloadAffinityTerm parsed once per cycle.
type AffinityTerm struct {
	selector          labels.Selector
	namespaces        sets.Set[string]
	namespaceSelector labels.Selector
	TopologyKey       string
	Weight            int64

	// Fast paths for the common shapes, which Matches runs once per placed
	// Workload per term: one namespace, and a selector of matchLabels only.
	oneNamespace string
	matchLabels  [][2]string
	// key identifies what the term selects (termKey), set on first use.
	key string
}

// NewAffinityTerm parses a term of a Workload in namespace ns. As for pods:
// a nil labelSelector matches nothing; with neither namespaces nor a
// namespaceSelector the term covers the Workload's own namespace.
func NewAffinityTerm(ns string, t *v1alpha1.WorkloadAffinityTerm, weight int32) (*AffinityTerm, error) {
	at := &AffinityTerm{TopologyKey: t.TopologyKey, Weight: int64(weight), namespaces: sets.New(t.Namespaces...), selector: labels.Nothing()}
	if t.LabelSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(t.LabelSelector.AsMetav1())
		if err != nil {
			return nil, errors.Wrap(err, "labelSelector")
		}
		at.selector = s
	}
	if t.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(t.NamespaceSelector.AsMetav1())
		if err != nil {
			return nil, errors.Wrap(err, "namespaceSelector")
		}
		at.namespaceSelector = s
	}
	if len(t.Namespaces) == 0 && t.NamespaceSelector == nil {
		at.namespaces.Insert(ns)
	}
	if at.namespaces.Len() == 1 && at.namespaceSelector == nil {
		at.oneNamespace = at.namespaces.UnsortedList()[0]
	}
	if t.LabelSelector != nil && len(t.LabelSelector.MatchExpressions) == 0 && len(t.LabelSelector.MatchLabels) > 0 {
		for k, v := range t.LabelSelector.MatchLabels {
			at.matchLabels = append(at.matchLabels, [2]string{k, string(v)})
		}
	}
	return at, nil
}

// Matches reports whether the term selects a workload with the given
// namespace and labels.
func (t *AffinityTerm) Matches(namespace string, l labels.Set, namespaceLabels map[string]labels.Set) bool {
	if t.oneNamespace != "" {
		if namespace != t.oneNamespace {
			return false
		}
	} else if !t.namespaces.Has(namespace) {
		if t.namespaceSelector == nil || !t.namespaceSelector.Matches(namespaceLabels[namespace]) {
			return false
		}
	}
	if t.matchLabels != nil {
		for _, kv := range t.matchLabels {
			if got, ok := l[kv[0]]; !ok || got != kv[1] {
				return false
			}
		}
		return true
	}
	return t.selector.Matches(l)
}

// Domains counts, per value of the term's topology key, the placed
// workloads (other than self) the term selects. Workloads whose cluster is
// unknown or lacks the key count nowhere.
func (t *AffinityTerm) Domains(snap *Snapshot, self types.UID) map[string]int64 {
	if t.key == "" {
		t.key = t.termKey()
	}
	if snap.asked != nil {
		snap.asked.add(t.key, t)
	}
	if counts, ok := snap.termCounts[t.key]; ok {
		return t.indexedDomains(snap, counts, self)
	}
	d := map[string]int64{}
	for i, p := range snap.Placed {
		c := snap.PlacedOn(i)
		if c == nil || p.UID == self || !t.Matches(p.Namespace, p.Labels, snap.Namespaces) {
			continue
		}
		if v, ok := c.Labels[t.TopologyKey]; ok {
			d[v]++
		}
	}
	return d
}

// indexedDomains is Domains from the cache's counts: per cluster in the
// snapshot, then self taken off where it is counted.
func (t *AffinityTerm) indexedDomains(snap *Snapshot, counts map[types.NamespacedName]int64, self types.UID) map[string]int64 {
	d := map[string]int64{}
	for k, n := range counts {
		c := snap.byKey[k]
		if c == nil {
			continue
		}
		if v, ok := c.Labels[t.TopologyKey]; ok {
			d[v] += n
		}
	}
	if i, ok := snap.placedIndex(self); ok {
		p, c := snap.Placed[i], snap.PlacedOn(i)
		if c != nil && t.Matches(p.Namespace, p.Labels, snap.Namespaces) {
			if v, ok := c.Labels[t.TopologyKey]; ok {
				if d[v]--; d[v] <= 0 {
					delete(d, v)
				}
			}
		}
	}
	return d
}

// RequiredTerms parses the required terms of an affinity.
func RequiredTerms(ns string, a *v1alpha1.WorkloadAffinity) ([]*AffinityTerm, error) {
	if a == nil {
		return nil, nil
	}
	out := make([]*AffinityTerm, 0, len(a.RequiredDuringSchedulingIgnoredDuringExecution))
	for i := range a.RequiredDuringSchedulingIgnoredDuringExecution {
		t, err := NewAffinityTerm(ns, &a.RequiredDuringSchedulingIgnoredDuringExecution[i], 1)
		if err != nil {
			return nil, errors.Wrapf(err, "requiredDuringSchedulingIgnoredDuringExecution[%d]", i)
		}
		out = append(out, t)
	}
	return out, nil
}

// PreferredTerms parses the preferred terms of an affinity, with their weights.
func PreferredTerms(ns string, a *v1alpha1.WorkloadAffinity) ([]*AffinityTerm, error) {
	if a == nil {
		return nil, nil
	}
	out := make([]*AffinityTerm, 0, len(a.PreferredDuringSchedulingIgnoredDuringExecution))
	for i := range a.PreferredDuringSchedulingIgnoredDuringExecution {
		p := &a.PreferredDuringSchedulingIgnoredDuringExecution[i]
		t, err := NewAffinityTerm(ns, &p.WorkloadAffinityTerm, p.Weight)
		if err != nil {
			return nil, errors.Wrapf(err, "preferredDuringSchedulingIgnoredDuringExecution[%d]", i)
		}
		out = append(out, t)
	}
	return out, nil
}

// WorkloadAffinityOf returns the Workload's workload affinity, or nil.
func WorkloadAffinityOf(w *v1alpha1.Workload) *v1alpha1.WorkloadAffinity {
	if w.Spec.Affinity == nil {
		return nil
	}
	return w.Spec.Affinity.WorkloadAffinity
}

// WorkloadAntiAffinityOf returns the Workload's workload anti-affinity, or nil.
func WorkloadAntiAffinityOf(w *v1alpha1.Workload) *v1alpha1.WorkloadAffinity {
	if w.Spec.Affinity == nil {
		return nil
	}
	return w.Spec.Affinity.WorkloadAntiAffinity
}
