package predicates

import (
	"context"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// NamedClusterName is the name of the NamedCluster plugin.
const NamedClusterName = "NamedCluster"

// ErrReasonNotNamed is the reason of NamedCluster.
const ErrReasonNotNamed = "cluster(s) didn't match the requested cluster name"

// NamedCluster passes only the cluster spec.targetCluster names; its
// namespace defaults to the Workload's.
type NamedCluster struct{}

var _ scheduler.FilterPlugin = &NamedCluster{}

// NewNamedCluster returns the plugin.
func NewNamedCluster(scheduler.Handle) (scheduler.Plugin, error) { return &NamedCluster{}, nil }

// Name of the plugin.
func (p *NamedCluster) Name() string { return NamedClusterName }

// Filter fails every cluster but the named one.
func (p *NamedCluster) Filter(_ context.Context, _ *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if w.Spec.TargetCluster == nil || w.ClusterKey(w.Spec.TargetCluster) == c.Key {
		return nil
	}
	return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonNotNamed)
}
