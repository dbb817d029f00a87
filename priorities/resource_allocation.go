package priorities

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ResourceAllocationName is the name of the ResourceAllocation plugin.
const ResourceAllocationName = "ResourceAllocation"

const requestsKey = "PreScore/" + ResourceAllocationName

// scored are the resources ResourceAllocation weighs.
var scored = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// ResourceAllocation ranks clusters by how much cpu and memory would be
// allocated after placing the Workload's replicas, from the clusters'
// summaries: LeastAllocated prefers the emptiest (spread), MostAllocated
// the fullest (pack). Each resource counts 0–100, averaged.
type ResourceAllocation struct {
	strategy scheduler.ScoringStrategy
}

var (
	_ scheduler.PreScorePlugin = &ResourceAllocation{}
	_ scheduler.ScorePlugin    = &ResourceAllocation{}
)

// NewResourceAllocation returns the plugin with the profile's strategy.
func NewResourceAllocation(h scheduler.Handle) (scheduler.Plugin, error) {
	return &ResourceAllocation{strategy: h.ScoringStrategy()}, nil
}

// Name of the plugin.
func (p *ResourceAllocation) Name() string { return ResourceAllocationName }

// PreScore adds up the requests of all replicas once.
func (p *ResourceAllocation) PreScore(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot, _ []*scheduler.ClusterInfo) *scheduler.Status {
	one := scheduler.ReplicaRequests(w)
	replicas := int64(w.ReplicaCount())
	all := map[corev1.ResourceName]int64{}
	for _, name := range scored {
		q := one[name]
		all[name] = q.MilliValue() * replicas
	}
	s.Write(requestsKey, all)
	return nil
}

// Score is the averaged percentage of free (LeastAllocated) or used
// (MostAllocated) cpu and memory after placement.
func (p *ResourceAllocation) Score(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) (int64, *scheduler.Status) {
	v, ok := s.Read(requestsKey)
	if !ok {
		return 0, errNoPreScore()
	}
	add := v.(map[corev1.ResourceName]int64)
	st := &c.Cluster.Status
	var sum, n int64
	for _, name := range scored {
		alloc := st.Allocatable[name]
		capacity := alloc.MilliValue()
		if capacity <= 0 {
			continue
		}
		used := c.Requested[name]
		requested := min(used.MilliValue()+add[name], capacity)
		if p.strategy == scheduler.MostAllocated {
			sum += requested * 100 / capacity
		} else {
			sum += (capacity - requested) * 100 / capacity
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	return sum / n, nil
}
