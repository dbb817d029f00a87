package predicates

import (
	"context"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// WorkloadAffinityName is the name of the WorkloadAffinity plugins.
const WorkloadAffinityName = "WorkloadAffinity"

// ErrReasonWorkloadAffinity is the reason of WorkloadAffinity.
const ErrReasonWorkloadAffinity = "cluster(s) didn't match workload affinity rules"

const workloadAffinityKey = "PreFilter/" + WorkloadAffinityName

// WorkloadAffinity passes clusters in a topology domain (the value of each
// term's topologyKey among cluster labels) that already holds a placed
// Workload each required term selects. As kube-scheduler allows for pods,
// the first of a group that selects itself may go anywhere its terms'
// topology keys exist.
type WorkloadAffinity struct{}

var (
	_ scheduler.PreFilterPlugin = &WorkloadAffinity{}
	_ scheduler.FilterPlugin    = &WorkloadAffinity{}
)

// NewWorkloadAffinity returns the plugin.
func NewWorkloadAffinity(scheduler.Handle) (scheduler.Plugin, error) {
	return &WorkloadAffinity{}, nil
}

// Name of the plugin.
func (p *WorkloadAffinity) Name() string { return WorkloadAffinityName }

type affinityState struct {
	terms   []*scheduler.AffinityTerm
	domains []map[string]int64
	// selfAffine: no placed Workload matches any term, and the Workload
	// matches all its own terms.
	selfAffine bool
}

// PreFilter computes, once per cycle, the topology domains of every term.
func (p *WorkloadAffinity) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot) *scheduler.Status {
	terms, err := scheduler.RequiredTerms(w.Namespace, scheduler.WorkloadAffinityOf(w))
	if err != nil {
		return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, "spec.affinity.workloadAffinity."+err.Error())
	}
	st := &affinityState{terms: terms, domains: make([]map[string]int64, len(terms))}
	anyMatch, matchesSelf := false, true
	for i, t := range terms {
		st.domains[i] = t.Domains(snap, w.UID)
		anyMatch = anyMatch || len(st.domains[i]) > 0
		matchesSelf = matchesSelf && t.Matches(w.Namespace, w.Labels, snap.Namespaces)
	}
	st.selfAffine = !anyMatch && matchesSelf
	s.Write(workloadAffinityKey, st)
	return nil
}

// Filter fails a cluster outside the domains of a required term.
func (p *WorkloadAffinity) Filter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	v, ok := s.Read(workloadAffinityKey)
	if !ok {
		return errNoPreFilter()
	}
	st := v.(*affinityState)
	for i, t := range st.terms {
		value, ok := c.Labels[t.TopologyKey]
		if !ok {
			return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonWorkloadAffinity)
		}
		if !st.selfAffine && st.domains[i][value] == 0 {
			return scheduler.NewStatus(scheduler.Unschedulable, ErrReasonWorkloadAffinity)
		}
	}
	return nil
}
