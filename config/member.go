package config

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// Names of the member-side roles of the manager's identity.
const (
	ManagerRole          = "placer-member-access"
	ManagerNamespaceRole = "placer-member-access-namespace"
	// DependenciesRole is the opt-in role that lets a tenant's
	// ConfigMaps, Secrets and ServiceAccounts follow its pods.
	DependenciesRole = "placer-member-dependencies"
	// ImpersonateRolePrefix names the ClusterRole that lets the manager
	// act for one tenant: placer-impersonate-<management namespace>.
	ImpersonateRolePrefix = "placer-impersonate-"
)

// clusterRoles decodes the ClusterRoles of a multi-document file of Files.
func clusterRoles(file string) ([]*rbacv1.ClusterRole, error) {
	b, err := Files.ReadFile(file)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot read %s", file)
	}
	var out []*rbacv1.ClusterRole
	docs := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", file)
		}
		if !bytes.Contains(doc, []byte("kind:")) {
			continue // comments only
		}
		r := &rbacv1.ClusterRole{}
		if err := yaml.UnmarshalStrict(doc, r); err != nil {
			return nil, errors.Wrapf(err, "cannot decode %s", file)
		}
		out = append(out, r)
	}
}

// ManagerRoles returns the ClusterRoles a member grants placer's manager:
// the cluster-wide read-only one and the one bound per opened namespace.
func ManagerRoles() ([]*rbacv1.ClusterRole, error) {
	return clusterRoles("member/manager-role.yaml")
}

// DependenciesRoles returns the opt-in ClusterRole of dependencies-role.yaml.
func DependenciesRoles() ([]*rbacv1.ClusterRole, error) {
	return clusterRoles("member/dependencies-role.yaml")
}

// StreamsRoles returns the opt-in ClusterRole of streams-role.yaml.
func StreamsRoles() ([]*rbacv1.ClusterRole, error) {
	return clusterRoles("member/streams-role.yaml")
}

// createRoles creates ClusterRoles, leaving those that exist as they are.
func createRoles(ctx context.Context, cs kubernetes.Interface, roles []*rbacv1.ClusterRole) error {
	for _, r := range roles {
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
			return errors.Wrapf(err, "cannot create ClusterRole %s", r.Name)
		}
	}
	return nil
}

// bindUser binds ClusterRoles to a user cluster-wide.
func bindUser(ctx context.Context, cs kubernetes.Interface, user string, roles ...string) error {
	for _, role := range roles {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role + "-" + strings.ReplaceAll(user, ":", "-")},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
			return errors.Wrapf(err, "cannot create ClusterRoleBinding %s", crb.Name)
		}
	}
	return nil
}

// GrantManager installs the manager's roles in a member and binds the
// cluster-wide read-only one to user, the manager's identity there. What
// exists already is left as it is. The manager writes nothing as itself:
// OpenNamespace lets it act for a tenant in a namespace.
func GrantManager(ctx context.Context, cs kubernetes.Interface, user string) error {
	roles, err := ManagerRoles()
	if err != nil {
		return err
	}
	if err := createRoles(ctx, cs, roles); err != nil {
		return err
	}
	return bindUser(ctx, cs, user, ManagerRole)
}

// OpenNamespace opens a member namespace to the Workloads of one management
// namespace (tenant), as config/member/manager-role.yaml describes: the
// tenant's user (mcv1alpha1.TenantUser) may manage chaperons and Services
// there, and managerUser may impersonate that user and no other.
func OpenNamespace(ctx context.Context, cs kubernetes.Interface, managerUser, tenant, namespace string) error {
	tenantUser := mcv1alpha1.TenantUser(tenant)
	imp := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: ImpersonateRolePrefix + tenant},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{tenantUser}}},
	}
	if err := createRoles(ctx, cs, []*rbacv1.ClusterRole{imp}); err != nil {
		return err
	}
	if err := bindUser(ctx, cs, managerUser, imp.Name); err != nil {
		return err
	}
	return bindTenant(ctx, cs, tenant, namespace, ManagerNamespaceRole)
}

// OpenDependencies lets the Workloads of a tenant that namespace is open
// to (OpenNamespace) copy the ConfigMaps, Secrets and ServiceAccounts
// their pods need there: it installs config/member/dependencies-role.yaml
// if it is not, and binds it to the tenant's user in the namespace.
func OpenDependencies(ctx context.Context, cs kubernetes.Interface, tenant, namespace string) error {
	return openOptIn(ctx, cs, DependenciesRoles, DependenciesRole, tenant, namespace)
}

// OpenStreams lets kubectl logs, exec and attach of the proxy pods of a
// tenant that namespace is open to reach their delegates there: it
// installs config/member/streams-role.yaml if it is not, and binds it to
// the tenant's user in the namespace.
func OpenStreams(ctx context.Context, cs kubernetes.Interface, tenant, namespace string) error {
	return openOptIn(ctx, cs, StreamsRoles, mcv1alpha1.StreamsRole, tenant, namespace)
}

// openOptIn installs an opt-in ClusterRole (roles reads its file) if it
// is not, and binds role to the tenant's user in the namespace.
func openOptIn(ctx context.Context, cs kubernetes.Interface, roles func() ([]*rbacv1.ClusterRole, error), role, tenant, namespace string) error {
	rs, err := roles()
	if err != nil {
		return err
	}
	if err := createRoles(ctx, cs, rs); err != nil {
		return err
	}
	return bindTenant(ctx, cs, tenant, namespace, role)
}

// bindTenant binds a ClusterRole to a tenant's user in one namespace.
func bindTenant(ctx context.Context, cs kubernetes.Interface, tenant, namespace, role string) error {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role + "-" + tenant},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: mcv1alpha1.TenantUser(tenant)}},
	}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, rb, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
		return errors.Wrapf(err, "cannot create RoleBinding %s/%s", namespace, rb.Name)
	}
	return nil
}
