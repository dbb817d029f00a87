package priorities

import (
	"context"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// Names of the workload-affinity score plugins.
const (
	WorkloadAffinityName     = "WorkloadAffinity"
	WorkloadAntiAffinityName = "WorkloadAntiAffinity"
)

// WorkloadAffinity scores a cluster by the preferred workload-affinity
// terms: each adds its weight for every placed Workload it selects in the
// cluster's topology domain. As WorkloadAntiAffinity, the same sum is
// subtracted, so clusters near the selected Workloads rank last.
type WorkloadAffinity struct {
	name string
	sign int64
	of   func(*v1alpha1.Workload) *v1alpha1.WorkloadAffinity
}

var (
	_ scheduler.PreScorePlugin = &WorkloadAffinity{}
	_ scheduler.ScorePlugin    = &WorkloadAffinity{}
)

// NewWorkloadAffinity returns the affinity plugin.
func NewWorkloadAffinity(scheduler.Handle) (scheduler.Plugin, error) {
	return &WorkloadAffinity{name: WorkloadAffinityName, sign: 1, of: scheduler.WorkloadAffinityOf}, nil
}

// NewWorkloadAntiAffinity returns the anti-affinity plugin.
func NewWorkloadAntiAffinity(scheduler.Handle) (scheduler.Plugin, error) {
	return &WorkloadAffinity{name: WorkloadAntiAffinityName, sign: -1, of: scheduler.WorkloadAntiAffinityOf}, nil
}

// Name of the plugin.
func (p *WorkloadAffinity) Name() string { return p.name }

type preferredState struct {
	terms   []*scheduler.AffinityTerm
	domains []map[string]int64
}

func (p *WorkloadAffinity) key() string { return "PreScore/" + p.name }

// PreScore counts, once per cycle, the selected Workloads per domain of every term.
func (p *WorkloadAffinity) PreScore(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot, _ []*scheduler.ClusterInfo) *scheduler.Status {
	terms, err := scheduler.PreferredTerms(w.Namespace, p.of(w))
	if err != nil {
		return scheduler.NewStatus(scheduler.Error, err.Error())
	}
	st := &preferredState{terms: terms, domains: make([]map[string]int64, len(terms))}
	for i, t := range terms {
		st.domains[i] = t.Domains(snap, w.UID)
	}
	s.Write(p.key(), st)
	return nil
}

// Score sums weight × selected Workloads in the cluster's domain, signed.
func (p *WorkloadAffinity) Score(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) (int64, *scheduler.Status) {
	v, ok := s.Read(p.key())
	if !ok {
		return 0, errNoPreScore()
	}
	st := v.(*preferredState)
	var score int64
	for i, t := range st.terms {
		if value, ok := c.Labels[t.TopologyKey]; ok {
			score += t.Weight * st.domains[i][value]
		}
	}
	return p.sign * score, nil
}
