package predicates

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterTenancyName is the name of the ClusterTenancy plugin.
const ClusterTenancyName = "ClusterTenancy"

// ErrReasonOtherTenant is the reason of ClusterTenancy.
const ErrReasonOtherTenant = "cluster(s) did not serve the Workload's namespace"

// ClusterTenancy fails clusters that do not serve the Workload's namespace:
// a KubernetesCluster serves its own namespace and the namespaces its
// spec.namespaceSelector offers it to that have bound its namespace with
// a ClusterBinding, no other (design §5: consent on both sides). A named
// cluster (spec.targetCluster) is no exception.
type ClusterTenancy struct{}

var (
	_ scheduler.PreFilterPlugin = &ClusterTenancy{}
	_ scheduler.FilterPlugin    = &ClusterTenancy{}
)

const namespaceLabelsKey = "PreFilter/" + ClusterTenancyName

// tenancyState is what PreFilter looks up once per cycle.
type tenancyState struct {
	labels labels.Set
	bound  sets.Set[string]
}

// NewClusterTenancy returns the plugin.
func NewClusterTenancy(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterTenancy{}, nil }

// Name of the plugin.
func (p *ClusterTenancy) Name() string { return ClusterTenancyName }

// PreFilter looks up the labels of the Workload's namespace, and what its
// ClusterBindings bind, once.
func (p *ClusterTenancy) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot) *scheduler.Status {
	ls := snap.Namespaces[w.Namespace]
	if ls == nil {
		ls = labels.Set{}
	}
	s.Write(namespaceLabelsKey, tenancyState{labels: ls, bound: snap.Bound[w.Namespace]})
	return nil
}

// Filter fails a cluster that does not serve the Workload's namespace.
func (p *ClusterTenancy) Filter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	st, ok := s.Read(namespaceLabelsKey)
	if !ok {
		return errNoPreFilter()
	}
	if ts := st.(tenancyState); v1alpha1.Serves(c.Key.Namespace, c.Tenants, w.Namespace, ts.labels, ts.bound) {
		return nil
	}
	return statusOtherTenant
}

// statusOtherTenant is every ClusterTenancy failure: one status, shared.
var statusOtherTenant = scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonOtherTenant).WithPlugin(ClusterTenancyName)
