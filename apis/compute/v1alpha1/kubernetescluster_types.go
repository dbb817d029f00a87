package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// SecretKeySelector names a key of a Secret in the same namespace.
type SecretKeySelector struct {
	// Name of the Secret, in the namespace of the referring object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Key in the Secret's data that holds the kubeconfig.
	// +kubebuilder:default=kubeconfig
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// TaintEffect is what a cluster taint does to workloads that do not tolerate it.
// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
type TaintEffect string

// Taint effects, as for nodes.
const (
	TaintEffectNoSchedule       TaintEffect = "NoSchedule"
	TaintEffectPreferNoSchedule TaintEffect = "PreferNoSchedule"
	TaintEffectNoExecute        TaintEffect = "NoExecute"
)

// ClusterTaint repels workloads that do not tolerate it, as a node taint does pods.
type ClusterTaint struct {
	// Key of the taint, a qualified name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`

	// Value of the taint.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`

	// Effect of the taint on workloads that do not tolerate it. NoExecute
	// moves a placed Workload that does not tolerate it to another cluster.
	Effect TaintEffect `json:"effect"`

	// TimeAdded is when a NoExecute taint was added: a toleration's
	// tolerationSeconds count from it. The cluster controller sets it on
	// a NoExecute taint that has none.
	// +optional
	TimeAdded *metav1.Time `json:"timeAdded,omitempty"`
}

// Condition taints: the cluster controller sets them, NoExecute, while a
// cluster does not answer or is not ready for placement, and removes them
// when it recovers, as the node lifecycle controller does for nodes.
const (
	TaintClusterUnreachable = "compute.placer.dev/unreachable"
	TaintClusterNotReady    = "compute.placer.dev/not-ready"
)

// TaintClusterDraining is the NoExecute taint `placer drain` sets: every
// Workload that does not tolerate it moves away, proven elsewhere first.
const TaintClusterDraining = "compute.placer.dev/draining"

// ClusterProfileReference names a ClusterProfile
// (multicluster.x-k8s.io/v1alpha1, the standard cluster inventory) in the
// KubernetesCluster's namespace.
type ClusterProfileReference struct {
	// Name of the ClusterProfile.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// KubernetesClusterSpec says how to reach a cluster and whether it takes new work.
// +kubebuilder:validation:XValidation:rule="has(self.connectionSecretRef) != has(self.clusterProfileRef)",message="exactly one of connectionSecretRef and clusterProfileRef is required"
// +kubebuilder:validation:XValidation:rule="has(self.clusterProfileRef) == has(oldSelf.clusterProfileRef)",message="clusterProfileRef cannot be added or removed: a cluster is reached through its ClusterProfile or through a Secret for its whole life"
type KubernetesClusterSpec struct {
	// ConnectionSecretRef names the Secret, in this namespace, holding a
	// kubeconfig for the cluster (a tenant's: inline credentials only).
	// +optional
	ConnectionSecretRef *SecretKeySelector `json:"connectionSecretRef,omitempty"`

	// ClusterProfileRef names the ClusterProfile, in this namespace, the
	// cluster comes from (the standard inventory, KEP-4322): it is reached
	// with the credentials the manager's access providers give for it
	// (--clusterprofile-provider-file, the admin's configuration, never a
	// tenant's), only in the namespaces the manager imports ClusterProfiles
	// from (--clusterprofile-namespace); its labels and properties become
	// the cluster's labels, and a ControlPlaneHealthy condition that is
	// not True makes it not Ready. The manager creates such
	// KubernetesClusters itself, one per ClusterProfile.
	// +optional
	ClusterProfileRef *ClusterProfileReference `json:"clusterProfileRef,omitempty"`

	// Unschedulable cordons the cluster: no new workloads are placed on it.
	// +optional
	Unschedulable bool `json:"unschedulable,omitempty"`

	// Taints repel workloads that do not tolerate them.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Taints []ClusterTaint `json:"taints,omitempty"`

	// Provider is the cloud or platform the cluster runs on; it is published
	// as the compute.placer.dev/cloud-provider label.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	// +optional
	Provider string `json:"provider,omitempty"`

	// NamespaceSelector selects the management namespaces, besides the
	// cluster's own, to which this cluster is offered: their Workloads may
	// be placed on it once the namespace accepts the offer with a
	// ClusterBinding naming this cluster's namespace (consent on both
	// sides). When unset the cluster serves its own namespace only; an
	// empty selector ({}) offers it to every namespace. A KubernetesCluster
	// is a tenant's registration: nothing of another tenant lands on it
	// unless both say so.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// PodSecurity is the Pod Security Standard level
	// (https://kubernetes.io/docs/concepts/security/pod-security-standards/)
	// every Workload's pod template must meet to be placed on this cluster;
	// a Workload's namespace may ask for a stricter one with the
	// pod-security.kubernetes.io/enforce label. Checked before any
	// candidate exists in the cluster.
	// +kubebuilder:default=baseline
	// +optional
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// TargetNamespaces maps management namespaces to the member namespaces
	// their Workloads deliver into, whatever a Workload's targetNamespace
	// says. A Workload of a namespace not listed delivers into its
	// targetNamespace or, when that is empty, into its own namespace's name.
	// +kubebuilder:validation:MaxProperties=256
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 63 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="keys must be namespace names (DNS-1123 labels)"
	// +optional
	TargetNamespaces map[string]NamespaceName `json:"targetNamespaces,omitempty"`
}

// NamespaceName is a namespace's name: a DNS-1123 label.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
type NamespaceName string

// PodSecurityLevel is a Pod Security Standard level.
// +kubebuilder:validation:Enum=privileged;baseline;restricted
type PodSecurityLevel string

// Pod Security Standard levels.
const (
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// KubernetesClusterStatus is what the cluster controller last learned of the cluster.
type KubernetesClusterStatus struct {
	xpv2.ConditionedStatus `json:",inline"`

	// Version is the gitVersion the cluster's /version reports.
	// +optional
	Version string `json:"version,omitempty"`

	// NodeCount is the number of nodes in the cluster.
	// +optional
	NodeCount int32 `json:"nodeCount,omitempty"`

	// ReadyNodeCount is the number of Ready nodes that accept new pods.
	// +optional
	ReadyNodeCount int32 `json:"readyNodeCount,omitempty"`

	// Allocatable is the sum of the allocatable resources of the schedulable nodes.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// Requested is the sum of the requests of the pods bound to those nodes.
	// +optional
	Requested corev1.ResourceList `json:"requested,omitempty"`

	// LargestFreeNode is the most room left on one schedulable node: the
	// largest free cpu and the largest free memory, each over all nodes.
	// +optional
	LargestFreeNode corev1.ResourceList `json:"largestFreeNode,omitempty"`

	// LastProbeTime is when the cluster last answered a probe.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`

	// ClusterID is the identity of the member placer places in: the UID
	// of its kube-system namespace, as its agent publishes it, which a new
	// API server address does not change. Recorded the first time the
	// agent publishes it; a kubeconfig that reaches a cluster with another
	// identity makes the cluster not Ready (ClusterIdentityChanged) and
	// placer sends it nothing, until the kubeconfig points back or the
	// KubernetesCluster is deleted.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// ObservedGeneration is the generation of the spec this status is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// A KubernetesCluster is a member cluster Workloads may be scheduled to.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=kc;kcluster,categories=placer
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:printcolumn:name="VERSION",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="NODES",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="REASON",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].reason`,priority=1
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type KubernetesCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KubernetesClusterSpec   `json:"spec"`
	Status KubernetesClusterStatus `json:"status,omitempty"`
}

// KubernetesClusterList is a list of KubernetesClusters.
// +kubebuilder:object:root=true
type KubernetesClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubernetesCluster `json:"items"`
}

// Answers reports whether the cluster's API server answered its last
// probe: Ready, or not Ready for what only an answering cluster can say
// (placer's agent or candidate scheduler not running there, a version
// placer does not support, a ClusterProfile that says it is unhealthy).
// Such a cluster takes no new placement, but is sent what cleans up
// there: a delete, a live list (its own garbage collector removes a
// deleted chaperon's pod, with no agent). An answer older than a probe's
// interval may be stale, as Ready may.
func (kc *KubernetesCluster) Answers() bool {
	c := kc.Status.GetCondition(xpv2.TypeReady)
	switch {
	case c.Status == corev1.ConditionTrue:
		return true
	case c.Status != corev1.ConditionFalse:
		return false
	}
	switch c.Reason {
	case ReasonAgentNotRunning, ReasonCandidateSchedulerNotRunning, ReasonUnsupportedVersion, ReasonClusterProfileUnhealthy:
		return true
	}
	return false
}

// Tenants parses spec.namespaceSelector: the management namespaces, besides
// its own, whose Workloads the cluster serves. Nil when unset (its own
// only); a selector that does not parse selects nothing.
func (kc *KubernetesCluster) Tenants() labels.Selector {
	if kc.Spec.NamespaceSelector == nil {
		return nil
	}
	s, err := metav1.LabelSelectorAsSelector(kc.Spec.NamespaceSelector)
	if err != nil {
		return labels.Nothing()
	}
	return s
}

// Serves reports whether a cluster of namespace clusterNamespace, with
// tenants (from Tenants), serves the Workloads of a management namespace
// with these labels whose ClusterBindings bind the clusters of the
// namespaces in bound: its own namespace's, or one it is offered to and
// that has bound it (consent on both sides).
func Serves(clusterNamespace string, tenants labels.Selector, namespace string, namespaceLabels labels.Set, bound sets.Set[string]) bool {
	return clusterNamespace == namespace || tenants != nil && tenants.Matches(namespaceLabels) && bound.Has(clusterNamespace)
}

// BoundNamespaces are the cluster namespaces a namespace's ClusterBindings bind.
func BoundNamespaces(bindings []ClusterBinding) sets.Set[string] {
	out := sets.New[string]()
	for i := range bindings {
		out.Insert(bindings[i].Spec.ClusterNamespace)
	}
	return out
}
