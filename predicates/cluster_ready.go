// Package predicates holds placer's filter plugins: each decides whether a
// Workload may be placed on a cluster and says why not.
package predicates

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterReadyName is the name of the ClusterReady plugin.
const ClusterReadyName = "ClusterReady"

// Reasons of ClusterReady.
const (
	ErrReasonUnreachable = "cluster(s) were unreachable"
	ErrReasonNotReady    = "cluster(s) were not ready"
)

// ClusterReady passes clusters whose Ready condition is True.
type ClusterReady struct{}

var _ scheduler.FilterPlugin = &ClusterReady{}

// NewClusterReady returns the plugin.
func NewClusterReady(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterReady{}, nil }

// Name of the plugin.
func (p *ClusterReady) Name() string { return ClusterReadyName }

// Filter fails clusters that are not Ready, telling unreachable ones apart.
func (p *ClusterReady) Filter(_ context.Context, _ *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if c.Ready.Status == corev1.ConditionTrue {
		return nil
	}
	if c.Ready.Reason == v1alpha1.ReasonUnreachable {
		return statusUnreachable
	}
	return statusNotReady
}

// The plugin's failures: one status each, shared.
var (
	statusUnreachable = scheduler.NewStatus(scheduler.Unschedulable, ErrReasonUnreachable).WithPlugin(ClusterReadyName)
	statusNotReady    = scheduler.NewStatus(scheduler.Unschedulable, ErrReasonNotReady).WithPlugin(ClusterReadyName)
)
