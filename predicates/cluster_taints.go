package predicates

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterTaintsName is the name of the ClusterTaints plugin.
const ClusterTaintsName = "ClusterTaints"

// ErrReasonUntoleratedTaint is the reason of ClusterTaints, with the taint.
const ErrReasonUntoleratedTaint = "cluster(s) had untolerated taint {%s: %s}"

const tolerationsKey = "PreFilter/" + ClusterTaintsName

// ClusterTaints fails clusters with a NoSchedule or NoExecute taint the
// Workload does not tolerate, with node-taint semantics.
type ClusterTaints struct{}

var (
	_ scheduler.PreFilterPlugin = &ClusterTaints{}
	_ scheduler.FilterPlugin    = &ClusterTaints{}
)

// NewClusterTaints returns the plugin.
func NewClusterTaints(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterTaints{}, nil }

// Name of the plugin.
func (p *ClusterTaints) Name() string { return ClusterTaintsName }

// PreFilter converts the Workload's tolerations once.
func (p *ClusterTaints) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot) *scheduler.Status {
	s.Write(tolerationsKey, scheduler.Tolerations(w))
	return nil
}

// Filter fails a cluster with an untolerated NoSchedule or NoExecute taint.
func (p *ClusterTaints) Filter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if len(c.Taints) == 0 {
		return nil
	}
	tolerations, ok := s.Read(tolerationsKey)
	if !ok {
		return errNoPreFilter()
	}
	taint, untolerated := v1helper.FindMatchingUntoleratedTaint(logr.Discard(), c.Taints, tolerations.([]corev1.Toleration), func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	if !untolerated {
		return nil
	}
	return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, fmt.Sprintf(ErrReasonUntoleratedTaint, taint.Key, taint.Value))
}
