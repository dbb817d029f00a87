// Package priorities holds placer's score plugins: each gives every
// feasible cluster a raw score, which the framework normalizes to 1–10 and
// weighs.
package priorities

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterAffinityName is the name of the ClusterAffinity plugins.
const ClusterAffinityName = "ClusterAffinity"

const preferredKey = "PreScore/" + ClusterAffinityName

// ClusterAffinity scores a cluster with the sum of the weights of the
// preferred cluster-affinity terms it matches.
type ClusterAffinity struct{}

var (
	_ scheduler.PreScorePlugin   = &ClusterAffinity{}
	_ scheduler.BatchScorePlugin = &ClusterAffinity{}
)

// NewClusterAffinity returns the plugin.
func NewClusterAffinity(scheduler.Handle) (scheduler.Plugin, error) { return &ClusterAffinity{}, nil }

// Name of the plugin.
func (p *ClusterAffinity) Name() string { return ClusterAffinityName }

// PreScore parses the preferred terms once.
func (p *ClusterAffinity) PreScore(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot, _ []*scheduler.ClusterInfo) *scheduler.Status {
	pa, err := scheduler.PreferredClusterAffinity(w)
	if err != nil {
		return scheduler.NewStatus(scheduler.Error, err.Error())
	}
	s.Write(preferredKey, pa)
	return nil
}

// Score sums the weights of the matching terms.
func (p *ClusterAffinity) Score(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) (int64, *scheduler.Status) {
	v, ok := s.Read(preferredKey)
	if !ok {
		return 0, errNoPreScore()
	}
	pa := v.(scheduler.PreferredAffinity)
	if pa.Scorer == nil {
		return 0, nil
	}
	return pa.Scorer.Score(c.MatchNode(pa.Fields)), nil
}

// ScoreAll scores the feasible clusters from the snapshot's label index:
// each term's clusters once, then each cluster's weights by position.
// Terms on fields are matched cluster by cluster (Score).
func (p *ClusterAffinity) ScoreAll(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, snap *scheduler.Snapshot, pos []int32, raw []int64) bool {
	v, ok := s.Read(preferredKey)
	if !ok {
		return false
	}
	pa := v.(scheduler.PreferredAffinity)
	if pa.Fields {
		return false
	}
	clear(raw)
	for _, t := range pa.Terms {
		set, ok := snap.MatchingTerms([]corev1.NodeSelectorTerm{t.Preference})
		if !ok {
			return false
		}
		for i, at := range pos {
			if set.Has(int(at)) {
				raw[i] += int64(t.Weight)
			}
		}
	}
	return true
}
