package predicates

import (
	"context"
	"fmt"
	"strings"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	"github.com/placer-dev/placer/scheduler"
)

// PodSecurityName is the name of the PodSecurity plugin.
const PodSecurityName = "PodSecurity"

// ErrReasonPodSecurity is the reason of PodSecurity, with the level and the
// checks the pod template fails.
const ErrReasonPodSecurity = "cluster(s) required Pod Security %q: %s"

const podSecurityKey = "PreFilter/" + PodSecurityName

// PodSecurity fails clusters whose Pod Security level the Workload's pod
// template does not meet (upstream pod-security-admission checks), so a
// privileged or host-namespace pod never reaches a member that did not
// accept it. The level is the cluster's spec.podSecurity, or the
// Workload's namespace's pod-security.kubernetes.io/enforce label when
// that is stricter.
type PodSecurity struct{}

var (
	_ scheduler.PreFilterPlugin = &PodSecurity{}
	_ scheduler.FilterPlugin    = &PodSecurity{}
)

// NewPodSecurity returns the plugin.
func NewPodSecurity(scheduler.Handle) (scheduler.Plugin, error) { return &PodSecurity{}, nil }

// Name of the plugin.
func (p *PodSecurity) Name() string { return PodSecurityName }

// podSecurityState holds the namespace's labels and the template's
// verdict, whose checks are evaluated per level when a cluster first asks.
type podSecurityState struct {
	namespaceLabels map[string]string
	verdict         *validation.Verdict
}

// VerdictKey is where a caller of Schedule puts the verdict on the
// Workload's template that it keeps for the generation
// (scheduler.Options.State), a *validation.Verdict.
const VerdictKey = "Verdict"

// PreFilter takes the verdict on the template the caller keeps for its
// generation (VerdictKey), or judges it for this cycle.
func (p *PodSecurity) PreFilter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, snap *scheduler.Snapshot) *scheduler.Status {
	verdict, _ := s.Read(VerdictKey)
	v, ok := verdict.(*validation.Verdict)
	if !ok {
		v = validation.Judge(w)
	}
	s.Write(podSecurityKey, &podSecurityState{namespaceLabels: snap.Namespaces[w.Namespace], verdict: v})
	return nil
}

// Filter fails a cluster whose level the template does not meet.
func (p *PodSecurity) Filter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	v, ok := s.Read(podSecurityKey)
	if !ok {
		return errNoPreFilter()
	}
	st := v.(*podSecurityState)
	level := validation.Level(c.Cluster, st.namespaceLabels)
	if failed := st.verdict.Fails(level); len(failed) > 0 {
		return scheduler.NewStatus(scheduler.UnschedulableAndUnresolvable, fmt.Sprintf(ErrReasonPodSecurity, level, strings.Join(failed, "; ")))
	}
	return nil
}
