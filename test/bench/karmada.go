package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pkg/errors"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/fleetwait"
	"github.com/placer-dev/placer/internal/pki"
)

// Karmada beside placer (-karmada): its control plane, built from its
// modules (make karmada), on the same members, each part of it in the
// "karmada" CPU group as a control plane of its own.
const (
	karmadaVersion = "v1.18.2"
	// nsKarmada is its phase: a Deployment per item in Karmada's API
	// server, placed in one member by a PropagationPolicy.
	nsKarmada = "karmada"
	// nsKarmadaDivided is its peer of the divided measure: a Deployment
	// per item, Divided over the members by their room.
	nsKarmadaDivided = "karmada-divided"
	groupKarmada     = "karmada"
	karmadaSystem    = "karmada-system"
	karmadaClusters  = "karmada-cluster"
)

// karmadaControllers are the kube-controller-manager controllers Karmada
// runs on its API server (artifacts/deploy/kube-controller-manager.yaml).
const karmadaControllers = "namespace,garbagecollector,serviceaccount-token,ttl-after-finished,bootstrapsigner,tokencleaner,csrcleaner,csrsigning,clusterrole-aggregation"

var (
	karmadaClusterGV = schema.GroupVersion{Group: "cluster.karmada.io", Version: "v1alpha1"}
	karmadaPolicyGV  = schema.GroupVersion{Group: "policy.karmada.io", Version: "v1alpha1"}
	karmadaBindingGV = schema.GroupVersion{Group: "work.karmada.io", Version: "v1alpha2"}
)

// karmadaPeer is Karmada's control plane: its API server (a local cluster
// without nodes: kube-apiserver, etcd, and kube-controller-manager for
// namespaces and garbage collection, as Karmada deploys it), its
// aggregated API server (Cluster), webhook, controller manager and
// scheduler; the members joined in push mode.
type karmadaPeer struct {
	cluster *local.Cluster
	procs   map[string]*local.Process
	kube    kubernetes.Interface
	// c reads, writes and watches Karmada's own kinds (unstructured) and
	// the APIService.
	c client.WithWatch
}

// karmadaBinDir is where make karmada builds.
func karmadaBinDir(o options) string { return filepath.Join(o.binDir, "karmada", karmadaVersion) }

func (k *karmadaPeer) close() {
	if k == nil {
		return
	}
	for _, p := range k.procs {
		p.Stop(10 * time.Second)
	}
	if k.cluster != nil {
		_ = k.cluster.Close()
	}
}

// spawn starts one of Karmada's processes in its group.
func (k *karmadaPeer) spawn(f *fleet, o options, name string, args ...string) error {
	p, err := local.Spawn(k.cluster.Dir(), name, filepath.Join(karmadaBinDir(o), name), args...)
	if err != nil {
		return err
	}
	k.procs[name] = p
	return f.groups.of(groupKarmada).Add(p.PID())
}

// start starts Karmada's parts on its API server (the cluster StartAll
// started) and joins the members; it returns once every member is a
// Ready, untainted Cluster and the phase's PropagationPolicies exist.
func (k *karmadaPeer) start(ctx context.Context, f *fleet, o options) error {
	c := k.cluster
	cfg := c.RESTConfig()
	k.kube = kubernetes.NewForConfigOrDie(cfg)
	scheme := runtime.NewScheme()
	if err := apiregistrationv1.AddToScheme(scheme); err != nil {
		return err
	}
	var err error
	if k.c, err = client.NewWithWatch(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	for _, ns := range []string{karmadaSystem, karmadaClusters, nsKarmada, nsKarmadaDivided} {
		if _, err := k.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if err := k.startAggregated(ctx, f, o); err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: []string{filepath.Join(karmadaBinDir(o), "crds")}}); err != nil {
		return errors.Wrap(err, "cannot install Karmada's CRDs")
	}
	if err := k.startWebhook(ctx, f, o); err != nil {
		return err
	}
	for _, m := range f.members {
		if err := k.join(ctx, m); err != nil {
			return errors.Wrapf(err, "cannot join %s to Karmada", m.Name())
		}
	}
	// Its clients' limits are placer's components', and so are its work
	// queues' (a token bucket of 10 per second by default).
	qps := []string{fmt.Sprintf("--kube-api-qps=%g", o.componentQPS), fmt.Sprintf("--kube-api-burst=%d", o.componentBurst),
		fmt.Sprintf("--rate-limiter-qps=%d", int(o.componentQPS)), fmt.Sprintf("--rate-limiter-bucket-size=%d", o.componentBurst)}
	common := []string{"--kubeconfig=" + c.KubeconfigPath(), "--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0"}
	if !o.karmadaModels {
		common = append(common, "--feature-gates=CustomizedClusterResourceModeling=false")
	}
	if err := k.spawn(f, o, "karmada-controller-manager", append(append(common, qps...),
		fmt.Sprintf("--cluster-api-qps=%g", o.componentQPS), fmt.Sprintf("--cluster-api-burst=%d", o.componentBurst))...); err != nil {
		return err
	}
	if err := k.spawn(f, o, "karmada-scheduler", append(common, qps...)...); err != nil {
		return err
	}
	if err := k.waitClustersReady(ctx, f); err != nil {
		return err
	}
	policies := []*unstructured.Unstructured{karmadaDividedPolicy(memberNames(f))}
	for _, m := range f.members {
		policies = append(policies, karmadaPolicy(m.Name()))
	}
	for _, p := range policies {
		if err := k.c.Create(ctx, p); err != nil {
			return errors.Wrap(err, "cannot create a PropagationPolicy")
		}
	}
	// Karmada creates the namespaces in every member (its namespace
	// controller); a Deployment's pods wait for their ServiceAccount.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for _, m := range f.members {
		for _, ns := range []string{nsKarmada, nsKarmadaDivided} {
			if err := local.WaitForServiceAccount(ctx, kubernetes.NewForConfigOrDie(m.RESTConfig()), ns, "default"); err != nil {
				return errors.Wrapf(err, "Karmada's namespace %s in %s", ns, m.Name())
			}
		}
	}
	logf("Karmada %s: %d members joined in push mode, Ready", karmadaVersion, len(f.members))
	return nil
}

// labelKarmadaMember names the member a Deployment of Karmada's phase is
// placed in.
const labelKarmadaMember = "bench.placer.dev/member"

// karmadaPolicy places the phase's Deployments labelled with a member in
// that member ("a PropagationPolicy to one cluster"), as the spread
// baseline places its pods: Duplicated, Karmada's default, which divides
// nothing. (Letting its scheduler choose one of the members, Divided and
// Aggregated, costs an estimate of every cluster's room per binding:
// docs/benchmarks.md, "Beside Karmada".)
func karmadaPolicy(member string) *unstructured.Unstructured {
	return propagationPolicy("to-"+member, nsKarmada,
		map[string]any{"labelSelector": map[string]any{"matchLabels": map[string]any{labelKarmadaMember: member}}},
		map[string]any{"clusterAffinity": map[string]any{"clusterNames": []any{member}}})
}

// karmadaDividedPolicy divides each Deployment of the divided measure's
// namespace over every member, weighted by the replicas each has room for
// (Karmada's dynamic weight), as placer's Divided divides by room.
func karmadaDividedPolicy(members []string) *unstructured.Unstructured {
	names := make([]any, len(members))
	for i, m := range members {
		names[i] = m
	}
	return propagationPolicy("divided", nsKarmadaDivided, nil, map[string]any{
		"clusterAffinity": map[string]any{"clusterNames": names},
		"replicaScheduling": map[string]any{"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
			"weightPreference": map[string]any{"dynamicWeight": "AvailableReplicas"}},
	})
}

// propagationPolicy is a PropagationPolicy of the Deployments of its
// namespace (those the selector's fields, when any, select) with a
// placement.
func propagationPolicy(name, ns string, selector, placement map[string]any) *unstructured.Unstructured {
	sel := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}
	maps.Copy(sel, selector)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": karmadaPolicyGV.String(),
		"kind":       "PropagationPolicy",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       map[string]any{"resourceSelectors": []any{sel}, "placement": placement},
	}}
}

// bindingsGone waits until Karmada's API server holds no ResourceBinding
// in a phase's namespace: a binding goes once its Works are deleted, so
// the next phase does not start beside Karmada's deletions.
func (k *karmadaPeer) bindingsGone(ctx context.Context, ns string) error {
	rb, list := karmadaObject(karmadaBindingGV, "ResourceBinding", ns, "")
	return fleetwait.Gone(ctx, k.c, rb, list)
}

// karmadaObject is one of Karmada's objects, by kind, namespace and name
// (all of a namespace with no name), and a list of its kind, to watch.
func karmadaObject(gv schema.GroupVersion, kind, ns, name string) (*unstructured.Unstructured, *unstructured.UnstructuredList) {
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gv.WithKind(kind))
	o.SetNamespace(ns)
	o.SetName(name)
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gv.WithKind(kind + "List"))
	return o, list
}

// memberNames are the members' names.
func memberNames(f *fleet) []string {
	out := make([]string, len(f.members))
	for i, m := range f.members {
		out[i] = m.Name()
	}
	return out
}

// client is a clientset of Karmada's API server with the benchmark's
// creating limits.
func (k *karmadaPeer) client(limiter flowcontrol.RateLimiter) kubernetes.Interface {
	cfg := k.cluster.RESTConfig()
	cfg.RateLimiter = limiter
	return kubernetes.NewForConfigOrDie(cfg)
}

// startAggregated starts the aggregated API server, which serves Cluster
// from the API server's etcd, and registers it (an ExternalName Service:
// the aggregator dials its name and the APIService's port).
func (k *karmadaPeer) startAggregated(ctx context.Context, f *fleet, o options) error {
	addr, err := local.FreeAddr()
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(addr)
	kc := k.cluster.KubeconfigPath()
	if err := k.spawn(f, o, "karmada-aggregated-apiserver", "--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--etcd-servers="+k.cluster.EtcdURL(), "--bind-address=127.0.0.1", "--secure-port="+port,
		"--cert-dir="+filepath.Join(k.cluster.Dir(), "aggregated-apiserver")); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: karmadaSystem, Name: "karmada-aggregated-apiserver"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"}}
	if _, err := k.kube.CoreV1().Services(karmadaSystem).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	var p int32
	if _, err := fmt.Sscan(port, &p); err != nil {
		return err
	}
	as := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.cluster.karmada.io"}, Spec: apiregistrationv1.APIServiceSpec{
		Group: "cluster.karmada.io", Version: "v1alpha1", GroupPriorityMinimum: 2000, VersionPriority: 10,
		// Its certificate is its own, self-signed, for localhost.
		InsecureSkipTLSVerify: true,
		Service:               &apiregistrationv1.ServiceReference{Namespace: karmadaSystem, Name: svc.Name, Port: ptr.To(p)},
	}}
	if err := k.c.Create(ctx, as); err != nil {
		return err
	}
	// The API server says when the APIService is Available.
	return awaitObject(ctx, k, "karmada-aggregated-apiserver", as, &apiregistrationv1.APIServiceList{}, func(as *apiregistrationv1.APIService) bool {
		return slices.ContainsFunc(as.Status.Conditions, func(c apiregistrationv1.APIServiceCondition) bool {
			return c.Type == apiregistrationv1.Available && c.Status == apiregistrationv1.ConditionTrue
		})
	})
}

// awaitObject watches (fleetwait.Until) until cond holds for obj, for at
// most two minutes, or until the process that brings it about exits.
func awaitObject[T client.Object](ctx context.Context, k *karmadaPeer, process string, obj T, list client.ObjectList, cond func(T) bool) error {
	p := k.procs[process]
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	err := fleetwait.Until(ctx, k.c, obj, list, cond)
	select {
	case <-p.Done():
		return errors.Errorf("%s exited: %s", process, p.LogTail(20))
	default:
	}
	return errors.Wrapf(err, "waiting for %s (last lines: %s)", process, p.LogTail(5))
}

// await checks a condition every half second for two minutes, or until
// the process it waits for exits: for what no watch shows (a port that
// serves).
func (k *karmadaPeer) await(ctx context.Context, process string, done func(context.Context) (bool, error)) error {
	p := k.procs[process]
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var last error
	err := apiwait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.Done():
			return false, errors.Errorf("%s exited: %s", process, p.LogTail(20))
		default:
		}
		ok, err := done(ctx)
		last = err
		return ok && err == nil, nil
	})
	if err != nil && last != nil {
		err = errors.Wrapf(err, "last check: %v", last)
	}
	return errors.Wrapf(err, "waiting for %s (last lines: %s)", process, p.LogTail(5))
}

// startWebhook starts Karmada's webhook with a certificate of its own CA,
// and registers the mutations its controllers rely on: the permanent IDs
// of PropagationPolicies and ResourceBindings (which its detector and
// binding controller select by) and of Works.
func (k *karmadaPeer) startWebhook(ctx context.Context, f *fleet, o options) error {
	ca, err := pki.NewAuthority("karmada-webhook")
	if err != nil {
		return err
	}
	crt, key, err := ca.Issue(pki.Request{CommonName: "karmada-webhook", Hosts: []string{"127.0.0.1"}, Lifetime: 24 * time.Hour})
	if err != nil {
		return err
	}
	dir := filepath.Join(k.cluster.Dir(), "webhook")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), key, 0o600); err != nil {
		return err
	}
	addr, err := local.FreeAddr()
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(addr)
	if err := k.spawn(f, o, "karmada-webhook", "--kubeconfig="+k.cluster.KubeconfigPath(), "--bind-address=127.0.0.1", "--secure-port="+port,
		"--cert-dir="+dir, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		fmt.Sprintf("--kube-api-qps=%g", o.componentQPS), fmt.Sprintf("--kube-api-burst=%d", o.componentBurst)); err != nil {
		return err
	}
	if err := k.await(ctx, "karmada-webhook", func(ctx context.Context) (bool, error) {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // a readiness probe of loopback
		if err != nil {
			return false, err
		}
		return true, conn.Close()
	}); err != nil {
		return err
	}
	// As Karmada's own configuration has them (artifacts/deploy).
	createUpdate := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	mutations := []struct {
		name, group, resource, path string
		ops                         []admissionregistrationv1.OperationType
	}{
		{"propagationpolicy.karmada.io", "policy.karmada.io", "propagationpolicies", "mutate-propagationpolicy", createUpdate},
		{"clusterpropagationpolicy.karmada.io", "policy.karmada.io", "clusterpropagationpolicies", "mutate-clusterpropagationpolicy", createUpdate},
		{"resourcebinding.karmada.io", "work.karmada.io", "resourcebindings", "mutate-resourcebinding", create},
		{"clusterresourcebinding.karmada.io", "work.karmada.io", "clusterresourcebindings", "mutate-clusterresourcebinding", create},
		{"work.karmada.io", "work.karmada.io", "works", "mutate-work", createUpdate},
	}
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "karmada-mutating"}}
	for _, m := range mutations {
		cfg.Webhooks = append(cfg.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: m.name,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: m.ops,
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{m.group}, APIVersions: []string{"*"}, Resources: []string{m.resource}},
			}},
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + "/" + m.path), CABundle: ca.CertPEM()},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(3)),
		})
	}
	_, err = k.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
	return err
}

// join registers a member as a push-mode Cluster: a token of a service
// account bound to cluster-admin in the member (what karmadactl join
// makes), in a Secret beside the member's CA.
func (k *karmadaPeer) join(ctx context.Context, m *local.Cluster) error {
	cs := kubernetes.NewForConfigOrDie(m.RESTConfig())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "karmada"}}
	if _, err := cs.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "karmada"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(48 * 3600))}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(filepath.Join(m.Dir(), "ca.crt"))
	if err != nil {
		return err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: karmadaClusters, Name: m.Name()},
		Data: map[string][]byte{"token": []byte(tr.Status.Token), "caBundle": ca}}
	if _, err := k.kube.CoreV1().Secrets(karmadaClusters).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": karmadaClusterGV.String(),
		"kind":       "Cluster",
		"metadata":   map[string]any{"name": m.Name()},
		"spec": map[string]any{
			"syncMode":    "Push",
			"apiEndpoint": m.Server(),
			"secretRef":   map[string]any{"namespace": karmadaClusters, "name": m.Name()},
		},
	}}
	return k.c.Create(ctx, cluster)
}

// waitClustersReady waits until every member's Cluster is Ready and
// carries no taint (Karmada's not-ready taint comes off after Ready).
func (k *karmadaPeer) waitClustersReady(ctx context.Context, f *fleet) error {
	for _, m := range f.members {
		c, list := karmadaObject(karmadaClusterGV, "Cluster", "", m.Name())
		if err := awaitObject(ctx, k, "karmada-controller-manager", c, list, func(c *unstructured.Unstructured) bool { return karmadaClusterReady(*c) }); err != nil {
			return err
		}
	}
	return nil
}

// karmadaClusterReady: a Cluster whose Ready condition is True and which
// has no taint.
func karmadaClusterReady(c unstructured.Unstructured) bool {
	taints, _, _ := unstructured.NestedSlice(c.Object, "spec", "taints")
	if len(taints) > 0 {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
	for _, cond := range conds {
		m, ok := cond.(map[string]any)
		if ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}
