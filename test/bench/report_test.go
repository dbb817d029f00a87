package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

func TestSummarizeHops(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	placed := &record{name: "w", replicas: 1, created: at(0), scheduled: at(30), candidates: at(50), pods: at(65), bound: at(90), running: at(120)}
	baseline := &record{name: "p", replicas: 1, created: at(0), scheduled: at(20), bound: at(20), running: at(45)}
	// A multi-replica item is left out of the steps, as of → Running.
	multi := &record{name: "m", replicas: 3, created: at(0), scheduled: at(1), candidates: at(2), pods: at(3), bound: at(4), running: at(5)}

	// Seen out of order (three watches): a step seen backwards is zero.
	early := &record{name: "e", replicas: 1, created: at(0), scheduled: at(30), candidates: at(50), pods: at(45), bound: at(90), running: at(120)}
	if d, _ := hopsOf(early); d[2] != 0 || d[3] != 45*time.Millisecond {
		t.Errorf("out of order: → pod %v, → bound %v, want 0 and 45ms", d[2], d[3])
	}

	r := summarize("fanout-1", "", []*record{placed, multi}, phaseCounts{})
	want := []time.Duration{30, 20, 15, 25, 30}
	for i, w := range want {
		if len(r.hops[i]) != 1 || r.hops[i][0] != w*time.Millisecond {
			t.Errorf("%s: %v, want [%v]", hopNames[i], r.hops[i], w*time.Millisecond)
		}
	}

	b := summarize("baseline", "", []*record{baseline}, phaseCounts{})
	// The baseline's pod is bound when it is Scheduled: no chaperon, pod
	// or binding step of its own.
	for i, w := range []time.Duration{20, -1, -1, -1, 25} {
		switch {
		case w < 0 && len(b.hops[i]) != 0:
			t.Errorf("baseline %s: %v, want none", hopNames[i], b.hops[i])
		case w >= 0 && (len(b.hops[i]) != 1 || b.hops[i][0] != w*time.Millisecond):
			t.Errorf("baseline %s: %v, want [%v]", hopNames[i], b.hops[i], w*time.Millisecond)
		}
	}
}

// TestRecorderStamps feeds the recorder a chaperon and a pod as its
// watches would: a step is stamped once every replica is seen, a pod
// being deleted is none.
func TestRecorderStamps(t *testing.T) {
	r := newRecorder()
	r.add(&record{phase: "fanout-1", name: "w", replicas: 2, created: time.Now()})
	meta := func(name, replica string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "fanout-1", Name: name, UID: types.UID(name),
			Labels:      map[string]string{mcv1alpha1.LabelReplica: replica},
			Annotations: map[string]string{mcv1alpha1.AnnotationWorkload: "fanout-1/w"}}
	}
	rec := func() *record { return r.records("fanout-1")[0] }

	r.chaperon(&mcv1alpha1.PodChaperon{ObjectMeta: meta("w-0", "0")})
	if !rec().candidates.IsZero() {
		t.Fatal("candidates stamped with one replica of two seen")
	}
	r.chaperon(&mcv1alpha1.PodChaperon{ObjectMeta: meta("w-1", "1")})
	if rec().candidates.IsZero() {
		t.Fatal("candidates not stamped with both replicas seen")
	}

	r.pod(&corev1.Pod{ObjectMeta: meta("w-0", "0")})
	gone := meta("w-1", "1")
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	r.pod(&corev1.Pod{ObjectMeta: gone})
	if !rec().pods.IsZero() {
		t.Fatal("pods stamped with a pod being deleted counted")
	}
	r.pod(&corev1.Pod{ObjectMeta: meta("w-1", "1")})
	if rec().pods.IsZero() {
		t.Fatal("pods not stamped with both replicas' pods seen")
	}

	// Running: the item completes once, when its last replica runs.
	running := func(name, replica string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: meta(name, replica), Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	r.pod(running("w-0", "0"))
	if got := r.completed("fanout-1"); got != 0 || !rec().running.IsZero() {
		t.Fatalf("%d completed with one replica of two running, want 0", got)
	}
	r.pod(running("w-1", "1"))
	r.pod(running("w-1", "1"))
	if got := r.completed("fanout-1"); got != 1 || rec().running.IsZero() || rec().bound.IsZero() {
		t.Fatalf("%d completed (running %v, bound %v) with both replicas running, seen twice; want 1, both stamped", got, rec().running, rec().bound)
	}
}

// TestRecorderShares: the pods of a Divided Workload's shares count for
// the Workload's record, each share's replicas apart (both shares have a
// replica 0).
func TestRecorderShares(t *testing.T) {
	r := newRecorder()
	r.add(&record{phase: "divided", name: "d", replicas: 2, created: time.Now()})
	r.shareOf["divided/d-member-0"], r.shareOf["divided/d-member-1"] = "divided/d", "divided/d"
	running := func(share string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "divided", Name: share + "-0", UID: types.UID(share),
			Labels:      map[string]string{mcv1alpha1.LabelReplica: "0"},
			Annotations: map[string]string{mcv1alpha1.AnnotationWorkload: "divided/" + share}},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	r.pod(running("d-member-0"))
	if got := r.completed("divided"); got != 0 {
		t.Fatalf("%d completed with one share's replica running, want 0", got)
	}
	r.pod(running("d-member-1"))
	if got := r.completed("divided"); got != 1 {
		t.Fatalf("%d completed with both shares' replicas running, want 1", got)
	}
}
