package join

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
)

// UnjoinOptions of an unjoin.
type UnjoinOptions struct {
	// Name and Namespace of the KubernetesCluster.
	Name, Namespace string
	// Management is a client of the management cluster.
	Management client.WithWatch
	// Member is the admin's configuration of the member; nil leaves the
	// member as it is (one that no longer answers).
	Member *rest.Config
	// Uninstall deletes the member side (config/member) too.
	Uninstall bool
	// Wait bounds the drain.
	Wait time.Duration
}

// Unjoin drains the member and takes it away: the KubernetesCluster is
// deleted and waited for (the manager holds it until its Workloads have
// moved and what placer sent there is gone), then its Secret, then, in the
// member, the manager's identity (deleting the ServiceAccount revokes
// every token of it) and the bindings of its roles, and with Uninstall the
// member side.
func Unjoin(ctx context.Context, o UnjoinOptions) error {
	key := types.NamespacedName{Namespace: o.Namespace, Name: o.Name}
	if err := drain(ctx, o.Management, key, o.Wait); err != nil {
		return err
	}
	secret := types.NamespacedName{Namespace: o.Namespace, Name: o.Name + "-kubeconfig"}
	if err := checkSecret(ctx, o.Management, secret); err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secret.Namespace, Name: secret.Name}}
	if err := o.Management.Delete(ctx, s); resource.IgnoreNotFound(err) != nil {
		return errors.Wrapf(err, "cannot delete Secret %s", secret)
	}
	if o.Member == nil {
		return nil
	}
	cs, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return errors.Wrap(err, "cannot make a client of the member")
	}
	if err := forget(ctx, cs); err != nil {
		return err
	}
	if err := closeNamespaces(ctx, cs); err != nil {
		return err
	}
	if o.Uninstall {
		return uninstall(ctx, o.Member)
	}
	return nil
}

// drain deletes the KubernetesCluster and waits, with a watch, until it is
// gone.
func drain(ctx context.Context, c client.WithWatch, key types.NamespacedName, wait time.Duration) error {
	kc := &v1alpha1.KubernetesCluster{}
	if err := c.Get(ctx, key, kc); err != nil {
		return errors.Wrapf(resource.IgnoreNotFound(err), "cannot read KubernetesCluster %s", key)
	}
	if err := c.Delete(ctx, kc); resource.IgnoreNotFound(err) != nil {
		return errors.Wrapf(err, "cannot delete KubernetesCluster %s", key)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w, err := c.Watch(ctx, &v1alpha1.KubernetesClusterList{}, client.InNamespace(key.Namespace), client.MatchingFields{"metadata.name": key.Name},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: kc.ResourceVersion}})
	if err != nil {
		return errors.Wrapf(err, "cannot watch KubernetesCluster %s", key)
	}
	defer w.Stop()
	// Gone before the watch began.
	if err := c.Get(ctx, key, kc); kerrors.IsNotFound(err) {
		return nil
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.Errorf("the watch of KubernetesCluster %s ended before it was gone", key)
			}
			if ev.Type == watch.Deleted {
				return nil
			}
		case <-ctx.Done():
			return errors.Errorf("KubernetesCluster %s is still draining after %s (its status and Events say what it waits for; is placer's manager running?)", key, wait)
		}
	}
}

// forget removes the manager's identity from the member: the bindings of
// roles to it, its token Role, and the ServiceAccount.
func forget(ctx context.Context, cs kubernetes.Interface) error {
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot list the member's ClusterRoleBindings")
	}
	for i := range crbs.Items {
		crb := &crbs.Items[i]
		if !slices.ContainsFunc(crb.Subjects, isManager) {
			continue
		}
		if slices.ContainsFunc(crb.Subjects, func(s rbacv1.Subject) bool { return !isManager(s) }) {
			// A binding someone shared with the manager keeps its other
			// subjects.
			if err := dropManager(ctx, cs, crb.Name); err != nil {
				return err
			}
			continue
		}
		if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, crb.Name, metav1.DeleteOptions{}); resource.IgnoreNotFound(err) != nil {
			return errors.Wrapf(err, "cannot delete ClusterRoleBinding %s", crb.Name)
		}
	}
	for _, del := range []func() error{
		func() error {
			return cs.RbacV1().RoleBindings(deploy.Namespace).Delete(ctx, TokenRole, metav1.DeleteOptions{})
		},
		func() error {
			return cs.RbacV1().Roles(deploy.Namespace).Delete(ctx, TokenRole, metav1.DeleteOptions{})
		},
		func() error {
			return cs.CoreV1().ServiceAccounts(deploy.Namespace).Delete(ctx, ServiceAccount, metav1.DeleteOptions{})
		},
	} {
		if err := del(); resource.IgnoreNotFound(err) != nil {
			return errors.Wrap(err, "cannot remove the manager's identity from the member")
		}
	}
	return nil
}

// closeNamespaces takes back what opened member namespaces to tenants
// (config.OpenNamespace, config.OpenDependencies, or the README's commands
// by hand): the tenants' bindings of placer's namespace roles, and the
// ClusterRoles that let the manager act for a tenant, unless a binding of
// someone else's still names one. The namespaces stay: they may hold the
// admin's own objects.
func closeNamespaces(ctx context.Context, cs kubernetes.Interface) error {
	rbs, err := cs.RbacV1().RoleBindings(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot list the member's RoleBindings")
	}
	for _, rb := range rbs.Items {
		if rb.RoleRef.Kind == "ClusterRole" && (rb.RoleRef.Name == config.ManagerNamespaceRole || rb.RoleRef.Name == config.DependenciesRole || rb.RoleRef.Name == mcv1alpha1.StreamsRole) &&
			slices.ContainsFunc(rb.Subjects, isTenant) {
			if err := dropTenants(ctx, cs, rb.Namespace, rb.Name); err != nil {
				return err
			}
		}
	}
	// forget has run: a binding left naming an impersonation role is
	// someone else's, and keeps its role.
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot list the member's ClusterRoleBindings")
	}
	used := map[string]bool{}
	for _, crb := range crbs.Items {
		used[crb.RoleRef.Name] = true
	}
	crs, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	if err != nil {
		return errors.Wrap(err, "cannot list the member's ClusterRoles")
	}
	for _, cr := range crs.Items {
		if !strings.HasPrefix(cr.Name, config.ImpersonateRolePrefix) || used[cr.Name] {
			continue
		}
		if err := cs.RbacV1().ClusterRoles().Delete(ctx, cr.Name, metav1.DeleteOptions{}); resource.IgnoreNotFound(err) != nil {
			return errors.Wrapf(err, "cannot delete ClusterRole %s", cr.Name)
		}
	}
	return nil
}

// dropTenants removes the tenants' users from a RoleBinding, from its
// latest copy, and deletes it when no other subject is left (only that
// copy: one that gained a subject meanwhile is read again).
func dropTenants(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rb, err := cs.RbacV1().RoleBindings(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rb.Subjects = slices.DeleteFunc(rb.Subjects, isTenant)
		if len(rb.Subjects) > 0 {
			_, err = cs.RbacV1().RoleBindings(namespace).Update(ctx, rb, metav1.UpdateOptions{})
			return err
		}
		return cs.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rb.ResourceVersion}})
	})
	return errors.Wrapf(resource.IgnoreNotFound(err), "cannot take RoleBinding %s/%s back from placer's tenants", namespace, name)
}

// isTenant reports whether a subject is a tenant's user (mcv1alpha1.TenantUser).
func isTenant(s rbacv1.Subject) bool {
	return s.Kind == rbacv1.UserKind && strings.HasPrefix(s.Name, mcv1alpha1.TenantUserPrefix)
}

// dropManager removes the manager from a ClusterRoleBinding's subjects,
// from its latest copy.
func dropManager(ctx context.Context, cs kubernetes.Interface, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crb, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		crb.Subjects = slices.DeleteFunc(crb.Subjects, isManager)
		_, err = cs.RbacV1().ClusterRoleBindings().Update(ctx, crb, metav1.UpdateOptions{})
		return err
	})
	return errors.Wrapf(resource.IgnoreNotFound(err), "cannot remove the manager from ClusterRoleBinding %s", name)
}

// isManager reports whether a subject is the manager's identity.
func isManager(s rbacv1.Subject) bool {
	return s.Kind == rbacv1.UserKind && s.Name == ManagerUser() ||
		s.Kind == rbacv1.ServiceAccountKind && s.Namespace == deploy.Namespace && s.Name == ServiceAccount
}

// uninstall deletes what install applied, in reverse order.
func uninstall(ctx context.Context, cfg *rest.Config) error {
	objs, err := deploy.Render("member")
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	for i := len(objs) - 1; i >= 0; i-- {
		if err := c.Delete(ctx, objs[i]); resource.IgnoreNotFound(err) != nil {
			return errors.Wrapf(err, "cannot delete %s %s", objs[i].GetKind(), objs[i].GetName())
		}
	}
	return nil
}
