package config

import (
	"bytes"
	"context"
	_ "embed"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// Names of the member-side roles of the manager's identity.
const (
	ManagerRole          = "placer-manager"
	ManagerNamespaceRole = "placer-manager-namespace"
)

//go:embed member/manager-role.yaml
var managerRoles []byte

// ManagerRoles returns the ClusterRoles a member grants placer's manager:
// the cluster-wide read-only one and the one bound per opened namespace.
func ManagerRoles() ([]*rbacv1.ClusterRole, error) {
	var out []*rbacv1.ClusterRole
	for _, doc := range bytes.Split(managerRoles, []byte("\n---\n")) {
		r := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(doc, r); err != nil {
			return nil, errors.Wrap(err, "cannot decode member/manager-role.yaml")
		}
		out = append(out, r)
	}
	return out, nil
}

// GrantManager installs the manager's roles in a member and binds them to
// user: read-only cluster-wide, writes in the given namespaces. What
// exists already is left as it is.
func GrantManager(ctx context.Context, cs kubernetes.Interface, user string, namespaces ...string) error {
	roles, err := ManagerRoles()
	if err != nil {
		return err
	}
	for _, r := range roles {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create ClusterRole %s", r.Name)
		}
	}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ManagerRole + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ManagerRole},
		Subjects:   subjects,
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
		return errors.Wrapf(err, "cannot create ClusterRoleBinding %s", crb.Name)
	}
	for _, ns := range namespaces {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ManagerRole + "-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ManagerNamespaceRole},
			Subjects:   subjects,
		}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !kerrors.IsAlreadyExists(err) {
			return errors.Wrapf(err, "cannot create RoleBinding %s/%s", ns, rb.Name)
		}
	}
	return nil
}
