// Package apis holds placer's API groups.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"

	computev1alpha1 "github.com/placer-dev/placer/apis/compute/v1alpha1"
	multiclusterv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// AddToScheme adds every placer API group to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	if err := computev1alpha1.AddToScheme(s); err != nil {
		return err
	}
	if err := multiclusterv1alpha1.AddToScheme(s); err != nil {
		return err
	}
	// The standard cluster inventory's ClusterProfile and
	// PlacementDecision, which placer reads and writes.
	return inventoryv1alpha1.AddToScheme(s)
}

// NewScheme returns a scheme with the built-in kinds and every placer kind.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = AddToScheme(s)
	return s
}
