package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Reasons of a Workload's Scheduled and Ready conditions (the cluster's
// Ready reasons are beside the built-in labels).
const (
	// ReasonScheduled: a cluster was chosen; the message says which and why.
	ReasonScheduled = "Scheduled"
	// ReasonPending: not every replica has a Ready pod yet.
	ReasonPending = "Pending"
	// ReasonProven: every replica of a share is reserved in its cluster,
	// and the share waits to commit with the others (commit Together).
	ReasonProven = "Proven"
	// ReasonAvailable: every replica has a Ready pod.
	ReasonAvailable = "Available"
	// ReasonCompleted: every replica's pod ended on its own and succeeded
	// (Complete, and Ready False: nothing runs any more).
	ReasonCompleted = "Completed"
	// ReasonReplicasFailed: every replica's pod ended on its own, and one
	// or more failed (Failed, and Ready False).
	ReasonReplicasFailed = "ReplicasFailed"
	// ReasonInvalidOverride: a spec.overrides rule that selects the
	// cluster cannot be applied there (a rejection, or Ready on a
	// committed cluster); the message names the rule.
	ReasonInvalidOverride = "InvalidOverride"
	// ReasonMovePending: the Workload must leave its cluster and waits
	// for another one (Scheduled stays True, the message says why).
	ReasonMovePending = "MovePending"

	// ReasonForbidden: the member's API server forbids the Workload's
	// tenant what placer asked (a rejection, or a finalizer patch).
	ReasonForbidden = "Forbidden"
	// ReasonNameConflict: an object placer would deliver exists in the
	// member and is not placer's for this Workload (Ready).
	ReasonNameConflict = "NameConflict"
	// ReasonServiceRefused: the member's API server refused the Service (Ready).
	ReasonServiceRefused = "ServiceRefused"
	// ReasonMissingDependency: a ConfigMap, Secret, ServiceAccount or
	// connection Secret the pods need does not exist (or cannot be read)
	// in the Workload's namespace: nothing new is started until it does
	// (Ready).
	ReasonMissingDependency = "MissingDependency"
)

// Scheduled is the Scheduled condition of a Workload placed on a cluster.
func Scheduled(msg string, generation int64) xpv2.Condition {
	return xpv2.Condition{Type: TypeScheduled, Status: corev1.ConditionTrue, Reason: ReasonScheduled, Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

// NotScheduled is the Scheduled condition of a Workload that is not placed.
func NotScheduled(reason, msg string, generation int64) xpv2.Condition {
	return xpv2.Condition{Type: TypeScheduled, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(reason), Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

// ReadyUnknownOn is the Ready condition of a Workload whose replicas run,
// or ran, on a cluster that is not Ready: how many still run there is not
// known, whichever cluster the Workload is placed on now.
func ReadyUnknownOn(cluster string, generation int64) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionUnknown, Reason: ReasonClusterUnreachable,
		Message:            "cluster " + cluster + " is not Ready: how many replicas run there is not known",
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

// Available is the Ready condition of a Workload whose replicas all run.
func Available(msg string, generation int64) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: ReasonAvailable, Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

// NotReady is the Ready condition of a Workload whose replicas do not all
// run, with the reason (ReasonPending, or what keeps them from running).
func NotReady(reason, msg string, generation int64) xpv2.Condition {
	return xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(reason), Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
}

// Finished is the condition of a Workload whose replicas all ended on
// their own (Complete or Failed, True), and its Ready condition then.
func Finished(t xpv2.ConditionType, reason, msg string, generation int64) (finished, ready xpv2.Condition) {
	finished = xpv2.Condition{Type: t, Status: corev1.ConditionTrue, Reason: xpv2.ConditionReason(reason), Message: msg,
		ObservedGeneration: generation, LastTransitionTime: metav1.Now()}
	return finished, NotReady(reason, msg, generation)
}
