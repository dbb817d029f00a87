package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterBindingSpec names the management namespace whose offered
// KubernetesClusters a tenant's namespace accepts.
type ClusterBindingSpec struct {
	// ClusterNamespace is the management namespace whose KubernetesClusters
	// are bound: those of them whose spec.namespaceSelector selects this
	// binding's namespace may receive its Workloads. Creating or changing a
	// binding needs the "bind" verb on kubernetesclusters in that
	// namespace (the ValidatingAdmissionPolicy placer-cluster-binding
	// checks it), so a tenant binds only what the clusters' owner gave it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClusterNamespace string `json:"clusterNamespace"`
}

// A ClusterBinding is a tenant's consent to the KubernetesClusters another
// namespace offers it (as OCM's ManagedClusterSetBinding): a cluster
// serves the Workloads of its own namespace and, besides, of a namespace
// its spec.namespaceSelector selects only once that namespace holds a
// ClusterBinding naming the cluster's namespace. A cluster cannot attract
// a tenant's Workloads by selecting its namespace alone.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=cb,categories=placer
// +kubebuilder:printcolumn:name="CLUSTER-NAMESPACE",type=string,JSONPath=`.spec.clusterNamespace`
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterBindingSpec `json:"spec"`
}

// ClusterBindingList is a list of ClusterBindings.
// +kubebuilder:object:root=true
type ClusterBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterBinding `json:"items"`
}
