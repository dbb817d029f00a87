package predicates

import (
	"context"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// WorkloadAntiAffinityName is the name of the WorkloadAntiAffinity plugins.
const WorkloadAntiAffinityName = "WorkloadAntiAffinity"

// Reasons of WorkloadAntiAffinity.
const (
	ErrReasonAntiAffinity         = "cluster(s) didn't satisfy workload anti-affinity rules"
	ErrReasonExistingAntiAffinity = "cluster(s) didn't satisfy existing workloads' anti-affinity rules"
)

const antiAffinityKey = "PreFilter/" + WorkloadAntiAffinityName

// WorkloadAntiAffinity fails clusters in a topology domain that holds a
// placed Workload a required anti-affinity term selects, and, symmetrically,
// clusters in a domain whose placed Workloads' required anti-affinity
// selects this one. Clusters without the topology key are in no domain.
type WorkloadAntiAffinity struct{}

var (
	_ scheduler.PreFilterPlugin = &WorkloadAntiAffinity{}
	_ scheduler.FilterPlugin    = &WorkloadAntiAffinity{}
)

// NewWorkloadAntiAffinity returns the plugin.
func NewWorkloadAntiAffinity(scheduler.Handle) (scheduler.Plugin, error) {
	return &WorkloadAntiAffinity{}, nil
}

// Name of the plugin.
func (p *WorkloadAntiAffinity) Name() string { return WorkloadAntiAffinityName }

// topologyPair is one topology domain: a label key and value.
type topologyPair struct{ key, value string }

type antiAffinityState struct {
	terms   []*scheduler.AffinityTerm
	domains []map[string]int64
	// existing are the domains placed Workloads' anti-affinity forbids to this one.
	existing map[topologyPair]bool
}

// PreFilter computes, once per cycle, the forbidden domains of every term
// and of every placed Workload's terms that select this Workload.
func (p *WorkloadAntiAffinity) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot) *scheduler.Status {
	terms, err := scheduler.RequiredTerms(w.Namespace, scheduler.WorkloadAntiAffinityOf(w))
	if err != nil {
		return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, "spec.affinity.workloadAntiAffinity."+err.Error())
	}
	st := &antiAffinityState{terms: terms, domains: make([]map[string]int64, len(terms)), existing: map[topologyPair]bool{}}
	for i, t := range terms {
		st.domains[i] = t.Domains(snap, w.UID)
	}
	for i, pw := range snap.Placed {
		if pw.UID == w.UID || len(pw.AntiAffinity) == 0 {
			continue
		}
		c := snap.PlacedOn(i)
		if c == nil {
			continue
		}
		for _, t := range pw.AntiAffinity {
			if v, ok := c.Labels[t.TopologyKey]; ok && t.Matches(w.Namespace, w.Labels, snap.Namespaces) {
				st.existing[topologyPair{t.TopologyKey, v}] = true
			}
		}
	}
	s.Write(antiAffinityKey, st)
	return nil
}

// Filter fails a cluster in a forbidden domain.
func (p *WorkloadAntiAffinity) Filter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	v, ok := s.Read(antiAffinityKey)
	if !ok {
		return errNoPreFilter()
	}
	st := v.(*antiAffinityState)
	for i, t := range st.terms {
		if value, ok := c.Labels[t.TopologyKey]; ok && st.domains[i][value] > 0 {
			return scheduler.NewStatus(scheduler.Unschedulable, ErrReasonAntiAffinity)
		}
	}
	for pair := range st.existing {
		if v, ok := c.Labels[pair.key]; ok && v == pair.value {
			return scheduler.NewStatus(scheduler.Unschedulable, ErrReasonExistingAntiAffinity)
		}
	}
	return nil
}
