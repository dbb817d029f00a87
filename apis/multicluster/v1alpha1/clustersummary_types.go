package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterSummaryName is the name of the one ClusterSummary the agent keeps
// in its cluster.
const ClusterSummaryName = "placer"

// A ClusterSummary is what a target cluster tells the management side about
// its nodes: counts and sums, never the nodes or pods themselves (design
// §5). The agent computes it from its own informers and keeps it current;
// the manager's identity may only read it.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=placer
// +kubebuilder:printcolumn:name="NODES",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="READY",type=integer,JSONPath=`.status.readyNodeCount`
// +kubebuilder:printcolumn:name="SCHEDULER",type=boolean,JSONPath=`.status.candidateScheduler.running`
// +kubebuilder:printcolumn:name="HEARTBEAT",type=date,JSONPath=`.status.heartbeatTime`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterSummary struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Status ClusterSummaryStatus `json:"status,omitempty"`
}

// ClusterSummaryStatus adds up a cluster's schedulable nodes.
type ClusterSummaryStatus struct {
	// NodeCount is the number of nodes.
	NodeCount int32 `json:"nodeCount"`
	// ReadyNodeCount is the number of nodes that are Ready and not cordoned.
	ReadyNodeCount int32 `json:"readyNodeCount"`
	// Allocatable is the sum of the allocatable resources of the ready nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	// Requested is the sum of the requests of the pods bound to them.
	// +optional
	Requested corev1.ResourceList `json:"requested,omitempty"`
	// LargestFreeNode is the most cpu and the most memory left on any one
	// ready node.
	// +optional
	LargestFreeNode corev1.ResourceList `json:"largestFreeNode,omitempty"`
	// Labels are the topology labels (region, zone) every node carries
	// with the same value.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// ClusterID is the cluster's identity: the UID of its kube-system
	// namespace (as KEP-2149's cluster ID property recommends), which
	// survives a change of the API server's address and differs between
	// clusters. Empty when the agent cannot read it.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// HeartbeatTime is when the agent last wrote this summary. It writes
	// at least once per heartbeat interval, changed or not: a summary that
	// stops changing means the agent is not running, and the management
	// side stops counting the cluster Ready.
	// +optional
	HeartbeatTime *metav1.Time `json:"heartbeatTime,omitempty"`
	// CandidateScheduler says whether the cluster's candidate scheduler
	// runs, as its leader election Lease shows: without it every handshake
	// in this cluster would time out.
	// +optional
	CandidateScheduler *ComponentStatus `json:"candidateScheduler,omitempty"`
}

// ComponentStatus is whether one of placer's components in the cluster runs.
type ComponentStatus struct {
	// Running is true while the component renews its Lease.
	Running bool `json:"running"`
	// Message says what the agent saw: the Lease's holder and when it was
	// last renewed, or why the component does not count as running.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterSummaryList is a list of ClusterSummaries.
// +kubebuilder:object:root=true
type ClusterSummaryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterSummary `json:"items"`
}
