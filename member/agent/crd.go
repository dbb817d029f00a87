package agent

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/config"
)

// The agent installs and updates placer's member CRDs and no other: a
// create cannot be limited to a name by RBAC, every other verb is.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=create
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;update;patch,resourceNames=podchaperons.multicluster.placer.dev;clustersummaries.multicluster.placer.dev
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// EnsureCRDs creates or updates the PodChaperon and ClusterSummary CRDs in
// the target cluster and waits until they are served.
func EnsureCRDs(cfg *rest.Config) error {
	crds, err := config.CRDs(mcv1alpha1.Group)
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds})
	return errors.Wrap(err, "cannot install the PodChaperon CRD")
}
