package predicates

import (
	"context"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ResourceFitName is the name of the ResourceFit plugin.
const ResourceFitName = "ResourceFit"

// ErrReasonInsufficient is the reason of ResourceFit, with the resource.
const ErrReasonInsufficient = "cluster(s) had no room for one replica (Insufficient %s)"

const requestsKey = "PreFilter/" + ResourceFitName

// ResourceFit is a cheap pre-check of capacity: cpu and memory must fit the
// largest free node, other resources (GPUs) the cluster's free total. The
// handshake in the target has the last word. Clusters without a summary yet pass.
type ResourceFit struct{}

var (
	_ scheduler.PreFilterPlugin = &ResourceFit{}
	_ scheduler.FilterPlugin    = &ResourceFit{}
)

// NewResourceFit returns the plugin.
func NewResourceFit(scheduler.Handle) (scheduler.Plugin, error) { return &ResourceFit{}, nil }

// Name of the plugin.
func (p *ResourceFit) Name() string { return ResourceFitName }

// request is one resource a replica asks for.
type request struct {
	name corev1.ResourceName
	want resource.Quantity
}

// PreFilter adds up one replica's requests once, and keeps those the
// filter checks, by name (so the first that does not fit is always the
// same one).
func (p *ResourceFit) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot) *scheduler.Status {
	requests := scheduler.ReplicaRequests(w)
	checked := make([]request, 0, len(requests))
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		want := requests[name]
		if want.IsZero() || name == corev1.ResourcePods || name == corev1.ResourceEphemeralStorage {
			continue
		}
		checked = append(checked, request{name: name, want: want})
	}
	s.Write(requestsKey, checked)
	return nil
}

// Filter fails a cluster that cannot hold one replica.
func (p *ResourceFit) Filter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	v, ok := s.Read(requestsKey)
	if !ok {
		return errNoPreFilter()
	}
	st := &c.Cluster.Status
	if st.LargestFreeNode == nil {
		return nil
	}
	for _, r := range v.([]request) {
		name, want := r.name, r.want
		free := st.LargestFreeNode[name]
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			free = st.Allocatable[name].DeepCopy()
			free.Sub(c.Requested[name])
		}
		if free.Cmp(want) < 0 {
			return scheduler.NewStatus(scheduler.Unschedulable, fmt.Sprintf(ErrReasonInsufficient, name))
		}
	}
	return nil
}
