package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels and annotations linking a chaperon (and its pod) to its Workload,
// read on both sides: the manager sets them, the member's agent, candidate
// scheduler and the manager's member connections select by them.
const (
	LabelWorkloadUID   = AnnotationPrefix + "workload-uid"
	LabelReplica       = AnnotationPrefix + "replica"
	LabelTemplateHash  = AnnotationPrefix + "template-hash"
	AnnotationWorkload = AnnotationPrefix + "workload"
)

// Annotation keys of the handshake.
const (
	AnnotationPrefix     = "multicluster.placer.dev/"
	AnnotationIsReserved = AnnotationPrefix + "is-reserved"
	AnnotationIsAllowed  = AnnotationPrefix + "is-allowed"
	// AnnotationAllowWhenReserved marks a candidate that may bind as soon
	// as it is reserved, without waiting for is-allowed: a gang of one (a
	// single replica in the chosen cluster) or a replica added to a
	// committed cluster. Set when the chaperon is created; the agent
	// copies it onto the pod, where the candidate scheduler reads it.
	AnnotationAllowWhenReserved = AnnotationPrefix + "allow-when-reserved"
	// AnnotationRunnerUp marks a candidate made in a nominated cluster
	// that was not the chosen one when it was made (a runner-up of a
	// fan-out). Set when the chaperon is created; the agent copies it onto
	// the pod, and the candidate scheduler schedules the candidates of the
	// chosen cluster before it (of equal pod priority).
	AnnotationRunnerUp = AnnotationPrefix + "runner-up"
	// AnnotationMirrorStatus "full" (set by the propagator when the
	// chaperon is created for a proxy pod's Workload) asks the agent to
	// mirror the candidate Pod's whole status (container statuses, restart
	// counts, exit codes, addresses), which the proxy pod shows; without
	// it the agent mirrors what the management side reads (phase, reason,
	// message, PodScheduled and Ready), a write saved per container change.
	AnnotationMirrorStatus = AnnotationPrefix + "mirror-status"
	// MirrorStatusFull is the value of AnnotationMirrorStatus that asks
	// for the whole status.
	MirrorStatusFull = "full"

	// AnnotationDeletionGracePeriod (whole seconds) is the grace period
	// the candidate Pod is deleted with when its chaperon goes: a proxy
	// pod deleted with a grace period of its own (kubectl delete
	// --grace-period) passes it on. The proxy pods' controller sets it on
	// the Workload before it deletes it, the propagator on each chaperon
	// before it deletes that, and the agent deletes the Pod with it.
	AnnotationDeletionGracePeriod = AnnotationPrefix + "deletion-grace-period-seconds"

	// AnnotationReplaceLost ("true", set by the propagator unless the
	// Workload moves StopBeforeStart) lets the agent replace a pod stuck
	// being deleted on a node that is gone or not Ready (no kubelet is
	// there to end it) once its grace period has passed: it deletes it
	// with no grace, as a ReplicaSet would count it gone and make another.
	// A copy still running behind that node's partition is ended by its
	// kubelet when it comes back. Without it (a singleton that must never
	// run twice), the pod is waited for, as a StatefulSet waits.
	AnnotationReplaceLost = AnnotationPrefix + "replace-lost"

	// AnnotationBindWindow (a Go duration, set by the propagator when it
	// creates an allow-when-reserved chaperon for a cluster not yet
	// committed) bounds, on the member's own clock, how long the candidate
	// may bind without is-allowed: from the chaperon's creationTimestamp
	// (the member's API server's clock). The agent writes that deadline
	// onto the pod (AnnotationBindDeadline); the candidate scheduler binds
	// no such pod after it, and the agent then fences the candidate.
	AnnotationBindWindow = AnnotationPrefix + "bind-window"
	// AnnotationBindDeadline (RFC 3339, on the candidate Pod only) is when
	// the bind window of its chaperon ends, as the member counts it.
	AnnotationBindDeadline = AnnotationPrefix + "bind-deadline"
	// AnnotationGiveUp (set by the propagator) asks the member to fence a
	// candidate that may bind without is-allowed: the management side has
	// given up on it (its cluster rejected it, or refused its pod).
	AnnotationGiveUp = AnnotationPrefix + "give-up"
	// AnnotationFenced (set by the agent) confirms that the candidate has
	// no pod and never will: it was not bound when its window passed
	// (FencedWindow) or when the management side gave up on it
	// (FencedGivenUp). Only then does the propagator count the cluster as
	// given up: it never judges a member's timestamps by its own clock.
	AnnotationFenced = AnnotationPrefix + "fenced"
	// AnnotationRejectionsSeen (set by the propagator with the bind
	// window) is how many rejections of the Workload by this cluster its
	// status held when the candidate was made, as "<generation>/<count>".
	// A fenced candidate whose count the status has passed since was
	// fenced before a rejection already recorded (its deletion failed
	// then, or the manager restarted): it is replaced, and never rejects
	// its cluster a second time.
	AnnotationRejectionsSeen = AnnotationPrefix + "rejections-seen"

	// CandidateSchedulerName is the scheduler profile of the candidate
	// scheduler in every member: chaperons in Reserve mode name it.
	CandidateSchedulerName = "placer-candidate"
	// CandidatePluginName is the candidate scheduler's plugin (Reserve,
	// Permit), as kube-scheduler names it in its messages.
	CandidatePluginName = "PlacerCandidate"

	// ReasonPodRefused is the reason of a chaperon's PodScheduled=False
	// condition when the member's API server refused to create its Pod;
	// the message is the API server's.
	ReasonPodRefused = "PodRefused"
)

// Values of AnnotationFenced: why the member fenced a candidate.
const (
	FencedWindow  = "window"
	FencedGivenUp = "given-up"
)

// TenantUserPrefix prefixes the user placer's manager impersonates in a
// member for the Workloads of one management namespace (a tenant):
// "placer:tenant:team-a" acts for the Workloads of namespace team-a. A
// member opens a namespace to a tenant by binding roles to that user.
const TenantUserPrefix = "placer:tenant:"

// StreamsRole is the opt-in ClusterRole a member binds to a tenant's user
// in a namespace it opened, so that kubectl logs, exec and attach of the
// tenant's proxy pods reach their delegates there
// (config/member/streams-role.yaml).
const StreamsRole = "placer-member-pod-streams"

// TenantUser is the user placer acts as in members for the Workloads of a
// management namespace.
func TenantUser(namespace string) string { return TenantUserPrefix + namespace }

// A PodChaperon holds a candidate pod in a target cluster: its labels and
// annotations and spec become the pod's, and the pod's status is mirrored
// back into its status.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=chap;chaperon,categories=placer
// +kubebuilder:printcolumn:name="RESERVED",type=string,JSONPath=`.metadata.annotations.multicluster\.placer\.dev/is-reserved`
// +kubebuilder:printcolumn:name="ALLOWED",type=string,JSONPath=`.metadata.annotations.multicluster\.placer\.dev/is-allowed`
// +kubebuilder:printcolumn:name="NODE",type=string,JSONPath=`.spec.nodeName`
// +kubebuilder:printcolumn:name="PHASE",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type PodChaperon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   corev1.PodSpec   `json:"spec"`
	Status corev1.PodStatus `json:"status,omitempty"`
}

// PodChaperonList is a list of PodChaperons.
// +kubebuilder:object:root=true
type PodChaperonList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodChaperon `json:"items"`
}
