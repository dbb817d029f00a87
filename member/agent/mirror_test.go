package agent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestWorthMirroring(t *testing.T) {
	pending := corev1.PodStatus{Phase: corev1.PodPending}
	bound := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	ready := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	cases := map[string]struct {
		cur, next corev1.PodStatus
		want      bool
	}{
		"a new pod's first status, on a chaperon without one": {corev1.PodStatus{}, pending, false},
		"the same status again":                               {bound, bound, false},
		"bound":                                               {corev1.PodStatus{}, bound, true},
		"Running and Ready":                                   {bound, ready, true},
		"a replacement's first status over the old pod's Ready": {ready, pending, true},
		"unschedulable, a reason the management side reads":     {corev1.PodStatus{}, corev1.PodStatus{Phase: corev1.PodPending, Reason: "Unschedulable"}, true},
	}
	for name, tc := range cases {
		if got := worthMirroring(tc.cur, tc.next); got != tc.want {
			t.Errorf("%s: worthMirroring = %v, want %v", name, got, tc.want)
		}
	}
}
