package agent

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/config"
)

// The CRDs are installed with the rest of config/member (or the
// placer-member chart), never by the agent: it holds no right on
// CustomResourceDefinitions, and GitOps tools own them alone.
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// EnsureCRDs creates or updates the PodChaperon and ClusterSummary CRDs in
// the target cluster and waits until they are served: for tests and
// benchmarks, with an administrator's config.
func EnsureCRDs(cfg *rest.Config) error {
	crds, err := config.CRDs(mcv1alpha1.Group)
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds})
	return errors.Wrap(err, "cannot install the PodChaperon CRD")
}

// ErrCRDsMissing says the member CRDs are not served (yet).
var ErrCRDsMissing = errors.New("placer's member CRDs are not installed")

// CRDsServed returns nil once the API server serves every kind of the
// member group (PodChaperon, ClusterSummary), ErrCRDsMissing (wrapped,
// naming what is missing) while it does not, and any other error as it
// comes. Discovery needs no right beyond being authenticated.
func CRDsServed(cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return errors.Wrap(err, "cannot make a discovery client")
	}
	gv := mcv1alpha1.GroupVersion.String()
	list, err := dc.ServerResourcesForGroupVersion(gv)
	if kerrors.IsNotFound(err) {
		return errors.Wrapf(ErrCRDsMissing, "%s is not served: apply config/member (or the placer-member chart)", gv)
	}
	if err != nil {
		return errors.Wrapf(err, "cannot discover %s", gv)
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		served[r.Kind] = true
	}
	for _, kind := range []string{"PodChaperon", "ClusterSummary"} {
		if !served[kind] {
			return errors.Wrapf(ErrCRDsMissing, "%s %s is not served: apply config/member (or the placer-member chart)", gv, kind)
		}
	}
	return nil
}
