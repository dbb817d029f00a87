// Package v1alpha1 holds the compute.placer.dev API: KubernetesClusters a
// Workload may be scheduled to, and the Workloads themselves.
// +kubebuilder:object:generate=true
// +groupName=compute.placer.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group and version of this API.
const (
	Group   = "compute.placer.dev"
	Version = "v1alpha1"
)

var (
	// GroupVersion is the group version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Kinds of this API.
var (
	KubernetesClusterKind             = "KubernetesCluster"
	KubernetesClusterGroupVersionKind = GroupVersion.WithKind(KubernetesClusterKind)
	WorkloadKind                      = "Workload"
	WorkloadGroupVersionKind          = GroupVersion.WithKind(WorkloadKind)
)

func init() {
	SchemeBuilder.Register(&KubernetesCluster{}, &KubernetesClusterList{})
	SchemeBuilder.Register(&Workload{}, &WorkloadList{})
	SchemeBuilder.Register(&ClusterBinding{}, &ClusterBindingList{})
}
