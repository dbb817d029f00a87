package predicates

import (
	"context"
	"strings"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterSelectorName is the name of the ClusterSelector plugin.
const ClusterSelectorName = "ClusterSelector"

// ErrReasonSelector is the reason of ClusterSelector.
const ErrReasonSelector = "cluster(s) didn't match the cluster selector"

const selectorKey = "PreFilter/" + ClusterSelectorName

// statusSelector is every ClusterSelector failure: one status, shared.
var statusSelector = scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, ErrReasonSelector).WithPlugin(ClusterSelectorName)

// ClusterSelector passes clusters carrying every label of
// spec.clusterSelector. Keys may be the Crossplane attribute names
// (clusterName, clusterNamespace, clusterVersion, cloudProvider), which
// stand for the built-in labels.
type ClusterSelector struct{}

var (
	_ scheduler.PreFilterPlugin = &ClusterSelector{}
	_ scheduler.NarrowingPlugin = &ClusterSelector{}
)

// NewClusterSelector returns the plugin.
func NewClusterSelector(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterSelector{}, nil }

// Name of the plugin.
func (p *ClusterSelector) Name() string { return ClusterSelectorName }

// ResolveAliases returns the selector with attribute names replaced by the
// labels they stand for.
func ResolveAliases(sel map[string]string) map[string]string {
	out := make(map[string]string, len(sel))
	for k, v := range sel {
		if label, ok := v1alpha1.LabelAliases[k]; ok {
			k = label
		}
		if k == v1alpha1.LabelClusterVersion && v != "" && !strings.HasPrefix(v, "v") {
			// The Crossplane design writes clusterVersion: '1.11.4'.
			v = "v" + v
		}
		out[k] = v
	}
	return out
}

// selected is a label the selector asks for.
type selected struct{ key, value string }

// PreFilter resolves the aliases once, into a slice: each cluster's check
// then ranges over it without a map's iteration.
func (p *ClusterSelector) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot) *scheduler.Status {
	sel := ResolveAliases(v1alpha1.Labels(w.Spec.ClusterSelector))
	pairs := make([]selected, 0, len(sel))
	for k, v := range sel {
		pairs = append(pairs, selected{key: k, value: v})
	}
	s.Write(selectorKey, pairs)
	return nil
}

// Narrow gives the verdicts from the snapshot's label index: the clusters
// carrying every selected label. No selector passes every cluster, in
// Filter at no cost.
func (p *ClusterSelector) Narrow(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot) (scheduler.ClusterSet, *scheduler.Status, bool) {
	sel, ok := s.Read(selectorKey)
	if !ok || len(w.Spec.ClusterSelector) == 0 {
		return nil, nil, false
	}
	pairs := sel.([]selected)
	m := make(map[string]string, len(pairs))
	for _, l := range pairs {
		m[l.key] = l.value
	}
	return snap.Carrying(m), statusSelector, true
}

// Filter fails a cluster that lacks a selected label or value.
func (p *ClusterSelector) Filter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if len(w.Spec.ClusterSelector) == 0 {
		return nil
	}
	sel, ok := s.Read(selectorKey)
	if !ok {
		return errNoPreFilter()
	}
	for _, l := range sel.([]selected) {
		if got, ok := c.Labels[l.key]; !ok || got != l.value {
			return statusSelector
		}
	}
	return nil
}
