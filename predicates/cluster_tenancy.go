package predicates

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterTenancyName is the name of the ClusterTenancy plugin.
const ClusterTenancyName = "ClusterTenancy"

// ErrReasonOtherTenant is the reason of ClusterTenancy.
const ErrReasonOtherTenant = "cluster(s) did not serve the Workload's namespace"

// ClusterTenancy fails clusters that do not serve the Workload's namespace:
// a KubernetesCluster serves its own namespace and the namespaces its
// spec.namespaceSelector selects, no other (design §5). A named cluster
// (spec.targetCluster) is no exception.
type ClusterTenancy struct{}

var (
	_ scheduler.PreFilterPlugin = &ClusterTenancy{}
	_ scheduler.FilterPlugin    = &ClusterTenancy{}
)

const namespaceLabelsKey = "PreFilter/" + ClusterTenancyName

// NewClusterTenancy returns the plugin.
func NewClusterTenancy(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterTenancy{}, nil }

// Name of the plugin.
func (p *ClusterTenancy) Name() string { return ClusterTenancyName }

// PreFilter looks up the labels of the Workload's namespace once.
func (p *ClusterTenancy) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot) *scheduler.Status {
	ls := snap.Namespaces[w.Namespace]
	if ls == nil {
		ls = labels.Set{}
	}
	s.Write(namespaceLabelsKey, ls)
	return nil
}

// Filter fails a cluster that does not serve the Workload's namespace.
func (p *ClusterTenancy) Filter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	ls, ok := s.Read(namespaceLabelsKey)
	if !ok {
		return errNoPreFilter
	}
	if v1alpha1.Serves(c.Key.Namespace, c.Tenants, w.Namespace, ls.(labels.Set)) {
		return nil
	}
	return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonOtherTenant)
}
