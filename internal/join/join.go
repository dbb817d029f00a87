// Package join registers a member cluster with placer, and takes it away
// again, as 'placer join' and 'placer unjoin' do: run by an admin with the
// member's own kubeconfig (its exec plugins, if any, run on the admin's
// machine, never in the manager), it installs the member side, makes the
// manager's identity there a ServiceAccount with a bound, expiring token
// and the least-privilege roles of config/member, opens the namespaces
// asked for to their tenants, and writes the connection Secret and the
// KubernetesCluster into the management cluster. The manager renews the
// token (cluster.AnnotationRenewToken).
package join

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/skew"
)

// Names of what join makes in a member.
const (
	// ServiceAccount is the manager's identity in the member, in
	// deploy.Namespace.
	ServiceAccount = "placer-manager"
	// TokenRole lets ServiceAccount request tokens of itself, and of no
	// other ServiceAccount, so that the manager can renew its own.
	TokenRole = "placer-manager-token"
	// DefaultTokenTTL is how long a token lasts unless asked otherwise.
	DefaultTokenTTL = 24 * time.Hour
)

// Opening opens a member namespace to the Workloads of a management
// namespace (a tenant).
type Opening struct {
	// Namespace of the member, created if it does not exist.
	Namespace string
	// Tenant is the management namespace whose Workloads may use it.
	Tenant string
}

// ParseOpening reads "NAMESPACE" or "NAMESPACE=TENANT"; the tenant is
// defaultTenant when not given.
func ParseOpening(s, defaultTenant string) (Opening, error) {
	ns, tenant, ok := strings.Cut(s, "=")
	if !ok {
		tenant = defaultTenant
	}
	if ns == "" || tenant == "" {
		return Opening{}, errors.Errorf("--open %q: want NAMESPACE or NAMESPACE=TENANT", s)
	}
	return Opening{Namespace: ns, Tenant: tenant}, nil
}

// Options of a join.
type Options struct {
	// Name and Namespace of the KubernetesCluster in the management
	// cluster; its Secret is Name-kubeconfig beside it.
	Name, Namespace string
	// Member is the admin's configuration of the member.
	Member *rest.Config
	// Management is a client of the management cluster.
	Management client.Client
	// Install applies the member side (config/member) first, with Image
	// (if set) as every container's image.
	Install bool
	Image   string
	// Open are the namespaces opened, and Dependencies whether the
	// tenants' ConfigMaps, Secrets and ServiceAccounts may follow there.
	Open         []Opening
	Dependencies bool
	// Streams lets kubectl logs, exec and attach of the tenants' proxy
	// pods reach their delegates in the opened namespaces.
	Streams bool
	// TokenTTL is the token's lifetime (DefaultTokenTTL when zero; the
	// member's API server may shorten it, and never goes under 10 minutes).
	TokenTTL time.Duration
	// Server is the member's API server as the manager reaches it; the
	// admin's address of it when empty.
	Server string
	// Provider and Labels of the KubernetesCluster.
	Provider string
	Labels   map[string]string
}

// Result says what join wrote.
type Result struct {
	Cluster types.NamespacedName
	Secret  types.NamespacedName
	// Expires is when the token expires unless the manager renews it.
	Expires time.Time
}

// Join registers the member as Options say. Running it again renews the
// token and keeps everything else.
func Join(ctx context.Context, o Options) (*Result, error) {
	if o.TokenTTL == 0 {
		o.TokenTTL = DefaultTokenTTL
	}
	secret := types.NamespacedName{Namespace: o.Namespace, Name: o.Name + "-kubeconfig"}
	if err := checkSecret(ctx, o.Management, secret); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(o.Member)
	if err != nil {
		return nil, errors.Wrap(err, "cannot make a client of the member")
	}
	// A member no candidate scheduler may run against is refused before
	// anything is written in it, as the manager would refuse it.
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the member's version")
	}
	if msg := skew.UnsupportedVersion(v.GitVersion); msg != "" {
		return nil, errors.New("cannot join the member: " + msg)
	}
	if o.Install {
		if err := install(ctx, o.Member, o.Image); err != nil {
			return nil, err
		}
	}
	if err := identity(ctx, cs); err != nil {
		return nil, err
	}
	for _, op := range o.Open {
		if err := open(ctx, cs, op, o.Dependencies, o.Streams); err != nil {
			return nil, err
		}
	}
	sa := types.NamespacedName{Namespace: deploy.Namespace, Name: ServiceAccount}
	token, err := cluster.RequestToken(ctx, cs, sa, o.TokenTTL)
	if err != nil {
		return nil, err
	}
	kubeconfig, err := memberKubeconfig(o, token)
	if err != nil {
		return nil, err
	}
	if err := register(ctx, o, secret, kubeconfig); err != nil {
		return nil, err
	}
	times, _ := cluster.ReadTokenTimes(token)
	return &Result{Cluster: types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, Secret: secret, Expires: times.Expires}, nil
}

// ManagerUser is the username the manager has in a joined member.
func ManagerUser() string {
	return "system:serviceaccount:" + deploy.Namespace + ":" + ServiceAccount
}

// checkSecret refuses to overwrite a Secret that join did not write.
func checkSecret(ctx context.Context, c client.Client, key types.NamespacedName) error {
	s := &corev1.Secret{}
	err := c.Get(ctx, key, s)
	switch {
	case kerrors.IsNotFound(err):
		return nil
	case err != nil:
		return errors.Wrapf(err, "cannot read Secret %s", key)
	case s.Annotations[cluster.AnnotationRenewToken] == "":
		return errors.Errorf("Secret %s exists and was not written by placer join (it has no annotation %s): delete it, or join under another name", key, cluster.AnnotationRenewToken)
	}
	return nil
}

// install applies config/member, as 'kubectl apply --server-side -k'.
func install(ctx context.Context, cfg *rest.Config, image string) error {
	objs, err := deploy.Render("member")
	if err != nil {
		return err
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" && image != "" {
			if err := setImage(o, image); err != nil {
				return err
			}
		}
	}
	return errors.Wrap(deploy.ApplyAll(ctx, cfg, objs), "cannot install the member side")
}

// setImage sets every container's image of a Deployment.
func setImage(o *unstructured.Unstructured, image string) error {
	containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return errors.Wrapf(err, "Deployment %s", o.GetName())
	}
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok {
			m["image"] = image
		}
	}
	return unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers")
}

// identity makes the manager's ServiceAccount, binds the read-only role
// to it and lets it request its own tokens.
func identity(ctx context.Context, cs kubernetes.Interface) error {
	if err := ensureNamespace(ctx, cs, deploy.Namespace); err != nil {
		return err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: ServiceAccount}}
	if _, err := cs.CoreV1().ServiceAccounts(deploy.Namespace).Create(ctx, sa, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
		return errors.Wrapf(err, "cannot create ServiceAccount %s/%s", deploy.Namespace, ServiceAccount)
	}
	if err := config.GrantManager(ctx, cs, ManagerUser()); err != nil {
		return err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: TokenRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"serviceaccounts/token"}, Verbs: []string{"create"}, ResourceNames: []string{ServiceAccount}}}}
	if _, err := cs.RbacV1().Roles(deploy.Namespace).Create(ctx, role, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
		return errors.Wrapf(err, "cannot create Role %s/%s", deploy.Namespace, TokenRole)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: deploy.Namespace, Name: TokenRole},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: TokenRole},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: deploy.Namespace, Name: ServiceAccount}}}
	if _, err := cs.RbacV1().RoleBindings(deploy.Namespace).Create(ctx, rb, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
		return errors.Wrapf(err, "cannot create RoleBinding %s/%s", deploy.Namespace, TokenRole)
	}
	return nil
}

// open opens a member namespace to a tenant (config.OpenNamespace).
func open(ctx context.Context, cs kubernetes.Interface, op Opening, dependencies, streams bool) error {
	if err := ensureNamespace(ctx, cs, op.Namespace); err != nil {
		return err
	}
	if err := config.OpenNamespace(ctx, cs, ManagerUser(), op.Tenant, op.Namespace); err != nil {
		return err
	}
	if dependencies {
		if err := config.OpenDependencies(ctx, cs, op.Tenant, op.Namespace); err != nil {
			return err
		}
	}
	if streams {
		return config.OpenStreams(ctx, cs, op.Tenant, op.Namespace)
	}
	return nil
}

func ensureNamespace(ctx context.Context, cs kubernetes.Interface, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
		return errors.Wrapf(err, "cannot create namespace %s", name)
	}
	return nil
}

// memberKubeconfig is the manager's kubeconfig of the member: its server
// and CA, and the token, inline (no file, no exec plugin).
func memberKubeconfig(o Options, token string) ([]byte, error) {
	server := o.Server
	if server == "" {
		server = o.Member.Host
	}
	ca := o.Member.CAData
	if len(ca) == 0 && o.Member.CAFile != "" {
		b, err := os.ReadFile(o.Member.CAFile)
		if err != nil {
			return nil, errors.Wrap(err, "cannot read the member's CA file")
		}
		ca = b
	}
	return local.Kubeconfig(o.Name, server, ca, ServiceAccount, &clientcmdapi.AuthInfo{Token: token})
}

// register writes the Secret and the KubernetesCluster into the
// management cluster.
func register(ctx context.Context, o Options, key types.NamespacedName, kubeconfig []byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err := controllerutil.CreateOrUpdate(ctx, o.Management, s, func() error {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[cluster.AnnotationRenewToken] = deploy.Namespace + "/" + ServiceAccount
		s.Data = map[string][]byte{"kubeconfig": kubeconfig}
		return nil
	})
	if err != nil {
		return errors.Wrapf(err, "cannot write Secret %s", key)
	}
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}}
	_, err = controllerutil.CreateOrUpdate(ctx, o.Management, kc, func() error {
		if kc.Labels == nil {
			kc.Labels = map[string]string{}
		}
		for k, v := range o.Labels {
			kc.Labels[k] = v
		}
		kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: key.Name}
		if o.Provider != "" {
			kc.Spec.Provider = o.Provider
		}
		return nil
	})
	return errors.Wrapf(err, "cannot write KubernetesCluster %s/%s", o.Namespace, o.Name)
}

// String is a one-line account of the result, for the CLI.
func (r *Result) String() string {
	return fmt.Sprintf("KubernetesCluster %s joined: Secret %s holds a token of ServiceAccount %s/%s that expires at %s unless the manager renews it",
		r.Cluster, r.Secret, deploy.Namespace, ServiceAccount, r.Expires.UTC().Format(time.RFC3339))
}
