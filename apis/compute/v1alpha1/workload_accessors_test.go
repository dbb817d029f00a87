package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// stored is the Workload as the API server keeps it: times to the second.
func stored(t *testing.T, w *Workload) *Workload {
	t.Helper()
	b, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	out := &Workload{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRejectionAndChoice: the propagator writes a rejection, the scheduler
// the Scheduled condition; neither writes the other's field, and both
// agree whether the rejection stands, within one second as well.
func TestRejectionAndChoice(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "c"}
	// RejectedBy reads the backoff on the clock: a second of now.
	second := time.Now().Truncate(time.Second)
	choose := func(w *Workload, at metav1.Time) {
		w.Status.ClusterRef = &ClusterReference{Name: "c"}
		w.Status.SetConditions(xpv2.Condition{Type: TypeScheduled})
		w.Status.SetConditions(xpv2.Condition{Type: TypeScheduled, Status: corev1.ConditionTrue, Reason: ReasonScheduled, LastTransitionTime: at})
	}
	reject := func(w *Workload, now time.Time) {
		at := w.RejectionTime(now)
		retry := metav1.NewTime(now.Add(10 * time.Minute))
		w.Status.RejectedClusters = []RejectedCluster{{Cluster: ClusterReference{Name: "c"}, Reason: ReasonUnschedulable, Generation: w.Generation, Time: &at, RetryAfter: &retry, Attempts: 1}}
	}
	w := &Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "w", Generation: 1}}

	// Chosen, then rejected in the same second.
	choose(w, metav1.NewTime(second.Add(100*time.Millisecond)))
	reject(w, second.Add(300*time.Millisecond))
	w = stored(t, w)
	if !w.RejectedBy(key) || w.ChosenSince(w.Rejection(key)) {
		t.Fatalf("a rejection in the second of its choice does not stand: %+v", w.Status)
	}

	// The scheduler chooses it again in that second too (it opened up).
	again := ChoiceAfter(w.Rejection(key), second.Add(600*time.Millisecond))
	choose(w, again)
	w = stored(t, w)
	if w.RejectedBy(key) || !w.ChosenSince(w.Rejection(key)) {
		t.Fatalf("chosen again at %s after the rejection at %s: the rejection still stands", again, w.Rejection(key).Time)
	}

	// Rejected again before the second the choice was given.
	reject(w, second.Add(800*time.Millisecond))
	w = stored(t, w)
	if !w.RejectedBy(key) {
		t.Fatalf("a rejection of the new choice (at %s, chosen at %s) does not stand", w.Rejection(key).Time, again)
	}

	// Another cluster's choice says nothing of c's rejection.
	w.Status.ClusterRef = &ClusterReference{Name: "b"}
	if w.ChosenSince(w.Rejection(key)) {
		t.Error("a choice of b read as a choice of c")
	}
}

// TestAnswers: a cluster answers when Ready, or not Ready for what only a
// cluster that answered its probe can say; not when its probe failed, its
// kubeconfig is refused, or nothing is known yet.
func TestAnswers(t *testing.T) {
	cases := map[string]struct {
		status corev1.ConditionStatus
		reason xpv2.ConditionReason
		want   bool
	}{
		"Ready":                        {status: corev1.ConditionTrue, reason: ReasonReady, want: true},
		"AgentNotRunning":              {status: corev1.ConditionFalse, reason: ReasonAgentNotRunning, want: true},
		"CandidateSchedulerNotRunning": {status: corev1.ConditionFalse, reason: ReasonCandidateSchedulerNotRunning, want: true},
		"UnsupportedVersion":           {status: corev1.ConditionFalse, reason: ReasonUnsupportedVersion, want: true},
		"ClusterProfileUnhealthy":      {status: corev1.ConditionFalse, reason: ReasonClusterProfileUnhealthy, want: true},
		"Unreachable":                  {status: corev1.ConditionFalse, reason: ReasonUnreachable},
		"ClusterIdentityChanged":       {status: corev1.ConditionFalse, reason: ReasonClusterIdentityChanged},
		"Unauthorized":                 {status: corev1.ConditionFalse, reason: ReasonUnauthorized},
		"SecretNotFound":               {status: corev1.ConditionFalse, reason: ReasonSecretNotFound},
		"KubeconfigRefused":            {status: corev1.ConditionFalse, reason: ReasonKubeconfigRefused},
		"no condition yet":             {},
	}
	for name, tc := range cases {
		kc := &KubernetesCluster{}
		if tc.status != "" {
			kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: tc.status, Reason: tc.reason})
		}
		if got := kc.Answers(); got != tc.want {
			t.Errorf("%s: Answers() = %v, want %v", name, got, tc.want)
		}
	}
}
