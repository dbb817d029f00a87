package predicates

import (
	"context"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterUnschedulableName is the name of the ClusterUnschedulable plugin.
const ClusterUnschedulableName = "ClusterUnschedulable"

// Reasons of ClusterUnschedulable.
const (
	ErrReasonCordoned = "cluster(s) were cordoned"
	ErrReasonDeleting = "cluster(s) were being deleted"
)

// ClusterUnschedulable fails cordoned clusters (spec.unschedulable).
type ClusterUnschedulable struct{}

var _ scheduler.FilterPlugin = &ClusterUnschedulable{}

// NewClusterUnschedulable returns the plugin.
func NewClusterUnschedulable(scheduler.Handle) (scheduler.Plugin, error) {
	return &ClusterUnschedulable{}, nil
}

// Name of the plugin.
func (p *ClusterUnschedulable) Name() string { return ClusterUnschedulableName }

// Filter fails a cordoned cluster, and one being deleted.
func (p *ClusterUnschedulable) Filter(_ context.Context, _ *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if c.Cluster.DeletionTimestamp != nil {
		return statusDeleting
	}
	if c.Cluster.Spec.Unschedulable {
		return statusCordoned
	}
	return nil
}

// The plugin's failures: one status each, shared.
var (
	statusDeleting = scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonDeleting).WithPlugin(ClusterUnschedulableName)
	statusCordoned = scheduler.NewStatus(scheduler.Unschedulable, ErrReasonCordoned).WithPlugin(ClusterUnschedulableName)
)
