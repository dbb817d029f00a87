// Package v1alpha1 holds the multicluster.placer.dev API, installed in every
// target cluster: PodChaperons, which hold candidate pods, and the
// ClusterSummary the agent publishes.
// +kubebuilder:object:generate=true
// +groupName=multicluster.placer.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Group and version of this API.
const (
	Group   = "multicluster.placer.dev"
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

func init() {
	SchemeBuilder.Register(&PodChaperon{}, &PodChaperonList{}, &ClusterSummary{}, &ClusterSummaryList{})
}
