package priorities

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// TaintTolerationName is the name of the TaintToleration plugin.
const TaintTolerationName = "TaintToleration"

const tolerationsKey = "PreScore/" + TaintTolerationName

// TaintToleration ranks clusters with fewer untolerated PreferNoSchedule
// taints higher.
type TaintToleration struct{}

var (
	_ scheduler.PreScorePlugin = &TaintToleration{}
	_ scheduler.ScorePlugin    = &TaintToleration{}
)

// NewTaintToleration returns the plugin.
func NewTaintToleration(scheduler.Handle) (scheduler.Plugin, error) { return &TaintToleration{}, nil }

// Name of the plugin.
func (p *TaintToleration) Name() string { return TaintTolerationName }

// PreScore keeps the tolerations with effect PreferNoSchedule or none.
func (p *TaintToleration) PreScore(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, _ *scheduler.Snapshot, _ []*scheduler.ClusterInfo) *scheduler.Status {
	var ts []corev1.Toleration
	for _, t := range scheduler.Tolerations(w) {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			ts = append(ts, t)
		}
	}
	s.Write(tolerationsKey, ts)
	return nil
}

// Score is minus the number of untolerated PreferNoSchedule taints.
func (p *TaintToleration) Score(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) (int64, *scheduler.Status) {
	v, ok := s.Read(tolerationsKey)
	if !ok {
		return 0, errNoPreScore()
	}
	tolerations := v.([]corev1.Toleration)
	var n int64
	for i := range c.Taints {
		t := &c.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !v1helper.TolerationsTolerateTaint(logr.Discard(), tolerations, t, false) {
			n++
		}
	}
	return -n, nil
}
