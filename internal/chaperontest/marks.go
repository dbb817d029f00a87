// Package chaperontest puts PodChaperons in the states the handshake
// reads (reserved, allowed, bound, ended, refused by the member's
// scheduler), for the propagator's unit tests.
package chaperontest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// Mark changes a chaperon.
type Mark = func(*mcv1alpha1.PodChaperon)

// Reserved: the member's scheduler reserved a node for the candidate.
func Reserved(ch *mcv1alpha1.PodChaperon) {
	ch.Annotations[mcv1alpha1.AnnotationIsReserved] = "true"
}

// Allowed: the propagator let the candidate bind.
func Allowed(ch *mcv1alpha1.PodChaperon) { ch.Annotations[mcv1alpha1.AnnotationIsAllowed] = "true" }

// NoHold: the candidate binds as soon as it is reserved.
func NoHold(ch *mcv1alpha1.PodChaperon) {
	ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] = "true"
}

// Running: the candidate is bound and Ready.
func Running(ch *mcv1alpha1.PodChaperon) {
	ch.Status.Conditions = append(ch.Status.Conditions,
		corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}

// PodScheduledFalse: the member's scheduler could not place the candidate,
// for the reason and in the words given.
func PodScheduledFalse(reason, msg string) Mark {
	return func(ch *mcv1alpha1.PodChaperon) {
		ch.Status.Conditions = append(ch.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason, Message: msg})
	}
}

// Ended: the candidate ran and ended in the phase given.
func Ended(phase corev1.PodPhase, msg string) Mark {
	return func(ch *mcv1alpha1.PodChaperon) {
		ch.Status.Phase, ch.Status.Message = phase, msg
		ch.Status.Conditions = append(ch.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
	}
}

// CreatedAgo: the chaperon was created d ago.
func CreatedAgo(d time.Duration) Mark {
	return func(ch *mcv1alpha1.PodChaperon) { ch.CreationTimestamp = metav1.NewTime(time.Now().Add(-d)) }
}

// Windowed: the candidate binds without is-allowed, but only within a
// bind window of d that its member enforces.
func Windowed(d time.Duration) Mark {
	return func(ch *mcv1alpha1.PodChaperon) {
		NoHold(ch)
		ch.Annotations[mcv1alpha1.AnnotationBindWindow] = d.String()
	}
}

// GiveUpAsked: the propagator asked the member to fence the candidate.
func GiveUpAsked(ch *mcv1alpha1.PodChaperon) { ch.Annotations[mcv1alpha1.AnnotationGiveUp] = "true" }

// Fenced: the member fenced the candidate, for the reason given
// (mcv1alpha1.Fenced*).
func Fenced(why string) Mark {
	return func(ch *mcv1alpha1.PodChaperon) { ch.Annotations[mcv1alpha1.AnnotationFenced] = why }
}

// RejectionsSeen: the candidate was made when the Workload's status held
// the rejections of its cluster given ("<generation>/<count>").
func RejectionsSeen(v string) Mark {
	return func(ch *mcv1alpha1.PodChaperon) { ch.Annotations[mcv1alpha1.AnnotationRejectionsSeen] = v }
}
