package agent

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/config"
)

// EnsureCRDs creates or updates the PodChaperon CRD in the target cluster
// and waits until it is served.
func EnsureCRDs(cfg *rest.Config) error {
	crds, err := config.CRDs(mcv1alpha1.Group)
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds})
	return errors.Wrap(err, "cannot install the PodChaperon CRD")
}
