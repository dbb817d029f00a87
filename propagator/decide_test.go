package propagator

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/internal/chaperontest"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestDecide(t *testing.T) {
	const timeout = 30 * time.Second
	w := st.Workload("web", st.Replicas(2))
	// The same Workload after a pod template change (a new generation).
	w2 := st.Workload("web", st.Replicas(2))
	w2.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
	w2.Generation = 2
	w3 := st.Workload("web", st.Replicas(3))
	share := st.Workload("web-a", st.Replicas(3), st.ShareOf("web"))
	unfit := unschedulable("0/3 nodes are available: 3 Insufficient cpu.")
	// kube-scheduler's message when a candidate's wait at Permit timed out.
	waitedOut := unschedulable("0/1 nodes are available: 1 rejected due to timeout after waiting 2m0s at plugin " + mcv1alpha1.CandidatePluginName + ".")
	refused := func(ch *mcv1alpha1.PodChaperon) {
		ch.Status.Conditions = append(ch.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: mcv1alpha1.ReasonPodRefused, Message: "violates PodSecurity"})
	}
	// A gang of one, allowed in advance within the window its member enforces.
	solo := st.Workload("solo")
	windowed := chaperontest.Windowed(timeout)
	fencedWindow, fencedGivenUp := chaperontest.Fenced(mcv1alpha1.FencedWindow), chaperontest.Fenced(mcv1alpha1.FencedGivenUp)
	cases := []struct {
		name   string
		w      *v1alpha1.Workload
		chs    []*mcv1alpha1.PodChaperon
		chosen bool
		age    time.Duration
		want   Decision
	}{
		{"pending: candidates to create", w, nil, true, 0, Decision{Action: Wait, After: timeout}},
		{"candidates, none reserved: wait out the timeout", w, chaperons(w, ops(), ops()), true, 10 * time.Second, Decision{Action: Wait, After: 20 * time.Second}},
		{"half reserved is not proven (gang)", w, chaperons(w, ops(reserved), ops()), true, time.Second, Decision{Action: Wait, After: 29 * time.Second}},
		{"proven in the chosen cluster: commit", w, chaperons(w, ops(reserved), ops(reserved)), true, time.Second, Decision{Action: Commit}},
		{"committed: deliver", w, chaperons(w, ops(allowed, running), ops(allowed, running)), true, time.Hour, Decision{Action: Deliver}},
		{"committed with a replica that does not fit: still deliver, never reject", w, chaperons(w, ops(allowed, running), ops(unfit)), true, time.Hour, Decision{Action: Deliver}},
		{"unschedulable in the chosen cluster: reject with the target's message", w, chaperons(w, ops(reserved), ops(unfit)), true, time.Second,
			Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"a share, unschedulable in its cluster, a candidate not judged yet: wait for its verdict, so that the rejection counts all it reserved", share, chaperons(share, ops(reserved), ops(unfit), ops()), true, time.Second,
			Decision{Action: Wait, After: 29 * time.Second}},
		{"a share, unschedulable in its cluster, every candidate judged: reject", share, chaperons(share, ops(reserved), ops(unfit), ops(reserved)), true, time.Second,
			Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"a share, unschedulable in its cluster, a candidate never judged: the timeout rejects", share, chaperons(share, ops(reserved), ops(unfit), ops()), true, timeout,
			Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"not a share: the first unschedulable candidate rejects, nothing counts what it reserved", w3, chaperons(w3, ops(reserved), ops(unfit), ops()), true, time.Second,
			Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"the member's API server refused a candidate Pod: reject at once with its message", w, chaperons(w, ops(reserved), ops(refused)), true, time.Second,
			Decision{Action: Reject, Reason: mcv1alpha1.ReasonPodRefused, Message: "violates PodSecurity"}},
		{"a fan-out runner-up refused a candidate Pod: reject", w, chaperons(w, ops(refused), ops()), false, time.Second,
			Decision{Action: Reject, Reason: mcv1alpha1.ReasonPodRefused, Message: "violates PodSecurity"}},
		{"committed, a new replica refused: deliver the others, never reject", w, chaperons(w, ops(allowed, running), ops(refused)), true, time.Hour, Decision{Action: Deliver}},
		{"no answer within the timeout: reject", w, chaperons(w, ops(reserved), ops()), true, timeout,
			Decision{Action: Reject, Reason: ReasonHandshakeTimeout, Message: "not every candidate was reserved within 30s"}},
		{"fan-out runner-up proven: waits, never commits", w, chaperons(w, ops(reserved), ops(reserved)), false, time.Second, Decision{Action: Wait}},
		{"fan-out runner-up unschedulable: reject", w, chaperons(w, ops(unfit), ops()), false, time.Second,
			Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"fan-out runner-up whose wait at Permit timed out (the member reserves it again): no verdict, it waits", w, chaperons(w, ops(reserved), ops(waitedOut)), false, time.Hour, Decision{Action: Wait}},
		{"a wait at Permit timed out in the chosen cluster: no verdict, the handshake's timeout decides", w, chaperons(w, ops(reserved), ops(waitedOut)), true, time.Second, Decision{Action: Wait, After: 29 * time.Second}},
		{"fan-out runner-up slow: no timeout, it is not the chosen one", w, chaperons(w, ops(), ops()), false, time.Hour, Decision{Action: Wait}},
		{"new generation before commit: the old candidates still prove the cluster", w2, chaperons(w, ops(reserved), ops(reserved)), true, time.Second, Decision{Action: Commit}},
		{"gang of one, not bound past the timeout on this clock: the member's window decides, not this clock", solo, chaperons(solo, ops(windowed)), true, time.Hour, Decision{Action: Wait}},
		{"gang of one bound inside its window: deliver", solo, chaperons(solo, ops(windowed, running)), true, time.Hour, Decision{Action: Deliver}},
		{"gang of one fenced by its member when its window ended: reject", solo, chaperons(solo, ops(windowed, fencedWindow)), true, time.Second,
			Decision{Action: Reject, Reason: ReasonHandshakeTimeout, Message: "the candidate was not bound within its bind window, as the cluster counts it; the cluster fenced it"}},
		{"gang of one unschedulable: fence it before rejecting, since room may appear", solo, chaperons(solo, ops(windowed, unfit)), true, time.Second,
			Decision{Action: Fence, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"gang of one unschedulable, give-up asked, not confirmed yet: still fence", solo, chaperons(solo, ops(windowed, unfit, chaperontest.GiveUpAsked)), true, time.Second,
			Decision{Action: Fence, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"gang of one unschedulable and fenced: reject with the target's message", solo, chaperons(solo, ops(windowed, unfit, fencedGivenUp)), true, time.Second,
			Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: "0/3 nodes are available: 3 Insufficient cpu."}},
		{"gang of one refused by the member's API server: fence (the agent retries the pod)", solo, chaperons(solo, ops(windowed, refused)), true, time.Second,
			Decision{Action: Fence, Reason: mcv1alpha1.ReasonPodRefused, Message: "violates PodSecurity"}},
		{"new generation after commit: deliver, which rolls out", w2, chaperons(w, ops(allowed, running), ops(allowed, running)), true, time.Second, Decision{Action: Deliver}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := v1alpha1.PlacementUnit{Count: tc.w.ReplicaCount(), RunnerUp: !tc.chosen, Divisible: tc.w.IsShare()}
			got := Decide(u, Observe(tc.w, tc.chs), tc.age, timeout)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decide() (-want,+got):\n%s", diff)
			}
		})
	}
}
