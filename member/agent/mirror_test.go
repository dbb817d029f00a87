package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
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

func TestHold(t *testing.T) {
	now := time.Unix(1000, 0)
	r := &ChaperonReconciler{boundAt: map[types.UID]time.Time{}, now: func() time.Time { return now }}
	bound := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	running := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}

	if d := r.hold("a", corev1.PodStatus{}, bound); d != settle {
		t.Errorf("a pod just bound waits %s, want %s", d, settle)
	}
	now = now.Add(400 * time.Millisecond)
	if d := r.hold("a", corev1.PodStatus{}, bound); d != settle-400*time.Millisecond {
		t.Errorf("seen again after 400ms, it waits %s, want the rest of %s", d, settle)
	}
	if d := r.hold("a", corev1.PodStatus{}, running); d != 0 || len(r.boundAt) != 0 {
		t.Errorf("once started it waits %s (want 0, written with its binding), %d held", d, len(r.boundAt))
	}

	r.hold("b", corev1.PodStatus{}, bound)
	now = now.Add(settle)
	if d := r.hold("b", corev1.PodStatus{}, bound); d != 0 || len(r.boundAt) != 0 {
		t.Errorf("after %s a pod still not started waits %s, want 0 (mirrored bound), %d held", settle, d, len(r.boundAt))
	}
	for name, tc := range map[string]struct{ cur, next corev1.PodStatus }{
		"unschedulable, which the management side acts on": {corev1.PodStatus{}, unschedulable},
		"bound, over a chaperon that says bound already":   {bound, bound},
		"Running": {bound, running},
	} {
		if d := r.hold("c", tc.cur, tc.next); d != 0 {
			t.Errorf("%s: waits %s, want 0", name, d)
		}
	}
}
