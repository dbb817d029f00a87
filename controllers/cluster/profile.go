package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
)

// profileKey is the single-object watch of a cluster's ClusterProfile.
func profileKey(kc *v1alpha1.KubernetesCluster) shared.ObjectKey {
	return shared.ObjectKey{GVK: inventoryv1alpha1.GroupVersion.WithKind("ClusterProfile"), Namespace: kc.Namespace, Name: kc.Spec.ClusterProfileRef.Name}
}

// profileKubeconfig builds the kubeconfig of a cluster from its
// ClusterProfile and the admin's access providers, or returns why it
// cannot. The kubeconfig runs the provider's exec plugin (AllowExec).
func (r *Reconciler) profileKubeconfig(ctx context.Context, kc *v1alpha1.KubernetesCluster) ([]byte, *inventoryv1alpha1.ClusterProfile, *xpv2.Condition, error) {
	ref := kc.Namespace + "/" + kc.Spec.ClusterProfileRef.Name
	if !r.profiles.Allows(kc.Namespace) {
		why := "the manager has no access providers (--clusterprofile-provider-file)"
		if r.profiles.Access != nil {
			why = fmt.Sprintf("the manager reads ClusterProfiles only in %s (--clusterprofile-namespace), with the admin's credentials", strings.Join(r.profiles.Namespaces, ", "))
		}
		c := notReadyCondition(v1alpha1.ReasonClusterProfileRefused, fmt.Sprintf("ClusterProfile %s: %s", ref, why))
		return nil, nil, &c, nil
	}
	cp := &inventoryv1alpha1.ClusterProfile{}
	if err := r.getWatched(ctx, kc, profileKey(kc), inventoryv1alpha1.GroupVersion.WithResource("clusterprofiles").GroupResource(), cp); err != nil {
		if !answered(err) {
			// No answer about the ClusterProfile (a timeout, a busy
			// server): nothing changes, and the read is tried again.
			return nil, nil, nil, errors.Wrapf(err, "cannot get ClusterProfile %s", ref)
		}
		c := notReadyCondition(v1alpha1.ReasonClusterProfileNotFound, fmt.Sprintf("ClusterProfile %s: %v", ref, errors.Wrap(err, "cannot get the ClusterProfile")))
		if kerrors.IsNotFound(err) {
			c.Message = fmt.Sprintf("ClusterProfile %s not found", ref)
		}
		return nil, nil, &c, nil
	}
	if owner := metav1.GetControllerOf(kc); ownedByProfile(owner) && owner.UID != cp.UID {
		// Deleted and made again under the name (another cluster,
		// maybe): this cluster was the one deleted's, and goes with it
		// (the garbage collector deletes it). It is never reached through
		// the new one.
		c := notReadyCondition(v1alpha1.ReasonClusterProfileNotFound, fmt.Sprintf("ClusterProfile %s was deleted and made again (UID %s; this cluster's was %s): this cluster goes with the one deleted", ref, cp.UID, owner.UID))
		return nil, nil, &c, nil
	}
	b, err := kubeconfigFromProfile(r.profiles.Access, cp)
	if err != nil {
		c := notReadyCondition(v1alpha1.ReasonClusterProfileRefused, fmt.Sprintf("ClusterProfile %s: %v", ref, err))
		return nil, nil, &c, nil
	}
	return b, cp, nil, nil
}

// kubeconfigFromProfile is the kubeconfig the standard's access library
// builds for a ClusterProfile: its server and CA, and the credentials of
// the first of its access providers the admin configured (with the
// ClusterProfile's own exec arguments and environment where the provider's
// policy takes them, and its per-cluster exec configuration). A proxy is
// not supported (the manager dials members itself, by its policy).
func kubeconfigFromProfile(ac *access.Config, cp *inventoryv1alpha1.ClusterProfile) ([]byte, error) {
	for _, p := range append(slices.Clone(cp.Status.AccessProviders), cp.Status.CredentialProviders...) {
		if p.Cluster.ProxyURL != "" && slices.ContainsFunc(ac.Providers, func(c access.Provider) bool { return c.Name == p.Name }) {
			return nil, errors.Errorf("access provider %q: proxy-url is not supported", p.Name)
		}
	}
	// The library adds the ClusterProfile's arguments and environment to
	// the provider's exec configuration itself: each call gets a copy.
	fresh := &access.Config{Providers: make([]access.Provider, len(ac.Providers))}
	for i, p := range ac.Providers {
		p.ExecConfig = p.ExecConfig.DeepCopy()
		fresh.Providers[i] = p
	}
	rc, err := fresh.BuildConfigFromCP(cp)
	if err != nil {
		return nil, errors.Wrap(err, "cannot build its connection from the manager's access providers")
	}
	cl := &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData, TLSServerName: rc.ServerName}
	if rc.ExecProvider != nil && rc.ExecProvider.Config != nil {
		// The ClusterProfile's per-cluster exec configuration, which a
		// plugin with provideClusterInfo reads.
		cl.Extensions = map[string]runtime.Object{execExtension: rc.ExecProvider.Config}
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["member"] = cl
	cfg.AuthInfos["member"] = &clientcmdapi.AuthInfo{Exec: rc.ExecProvider}
	cfg.Contexts["member"] = &clientcmdapi.Context{Cluster: "member", AuthInfo: "member"}
	cfg.CurrentContext = "member"
	b, err := clientcmd.Write(*cfg)
	return b, errors.Wrap(err, "cannot write the ClusterProfile's kubeconfig")
}

// execExtension is the kubeconfig cluster extension of an exec plugin's
// per-cluster configuration (client.authentication.k8s.io).
const execExtension = "client.authentication.k8s.io/exec"

// profileHealth is what the ClusterProfile says of the cluster's health:
// a ControlPlaneHealthy condition that is not True makes it not Ready.
func profileHealth(cp *inventoryv1alpha1.ClusterProfile, h *cluster.Health) {
	if cp == nil || h.Reason != "" {
		return
	}
	for _, c := range cp.Status.Conditions {
		if c.Type == inventoryv1alpha1.ClusterConditionControlPlaneHealthy && c.Status != metav1.ConditionTrue {
			h.Reason = v1alpha1.ReasonClusterProfileUnhealthy
			h.Message = fmt.Sprintf("%s; its ClusterProfile says %s is %s (%s: %s)", h.Message, c.Type, c.Status, c.Reason, c.Message)
		}
	}
}

// ownedByProfile reports whether a controller reference is a
// ClusterProfile's (the importer's clusters).
func ownedByProfile(owner *metav1.OwnerReference) bool {
	return owner != nil && owner.Kind == "ClusterProfile" && owner.APIVersion == inventoryv1alpha1.GroupVersion.String()
}
