package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	clusterctrl "github.com/placer-dev/placer/controllers/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/member/agent"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

const waitTimeout = 90 * time.Second

// secretNames are the connection Secrets the tests register; the manager
// may read these and no other.
var secretNames = []string{"member-kubeconfig", "impostor-kubeconfig", "malformed-kubeconfig", "nocontext-kubeconfig", "late-kubeconfig", "exec-kubeconfig", "metadata-kubeconfig", "private-kubeconfig"}

// startManager runs the cluster controller against the management API
// server until the test ends, as an identity holding the manager's
// generated ClusterRole except for Secrets, which it may read only by name
// (RBAC resourceNames): a controller that lists or watches Secrets beyond
// the referenced ones is refused.
func startManager(t *testing.T, env *testenv.Env) *cluster.Registry {
	t.Helper()
	ctx := context.Background()
	role, err := config.ManagementRole()
	if err != nil {
		t.Fatal(err)
	}
	role.Name = "cluster-controller-test"
	rules := role.Rules[:0]
	for _, r := range role.Rules {
		r.Resources = slices.DeleteFunc(r.Resources, func(res string) bool { return res == "secrets" })
		if len(r.Resources) > 0 || len(r.NonResourceURLs) > 0 {
			rules = append(rules, r)
		}
	}
	role.Rules = rules
	const user = "cluster-controller"
	objs := []client.Object{
		role,
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "referenced-secrets"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch"}, ResourceNames: secretNames}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "referenced-secrets"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "referenced-secrets"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}},
		// A Secret no KubernetesCluster references: never read.
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "someone-elses"}, StringData: map[string]string{"password": "hunter2"}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var reg *cluster.Registry
	testenv.RunManager(t, env.UserConfig(t, user), func(mgr ctrl.Manager) (err error) {
		if err := shared.IndexWorkloads(mgr); err != nil {
			return err
		}
		reg, err = clusterctrl.Setup(mgr, clusterctrl.Options{
			ProbeInterval:  time.Second,
			HeartbeatGrace: 3 * time.Second,
			Registry:       cluster.Options{ProbeTimeout: time.Second, Policy: cluster.KubeconfigPolicy{AllowLoopback: true}},
		})
		return err
	})
	return reg
}

func register(t *testing.T, env *testenv.Env, name string, kubeconfig []byte) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-kubeconfig"}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if kubeconfig != nil {
		if err := env.Client.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	kc := &v1alpha1.KubernetesCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec:       v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: s.Name}, Provider: "kwok"},
	}
	if err := env.Client.Create(ctx, kc); err != nil {
		t.Fatal(err)
	}
}

// edit returns a kubeconfig changed by f.
func edit(t *testing.T, kubeconfig []byte, f func(*clientcmdapi.Config)) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	f(cfg)
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func watcher(t *testing.T, env *testenv.Env) client.WithWatch {
	return testenv.Watcher(t, env.Config)
}

func waitReady(t *testing.T, wc client.WithWatch, name string, reason string, extra func(*v1alpha1.KubernetesCluster) bool) *v1alpha1.KubernetesCluster {
	t.Helper()
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, waitTimeout, func(kc *v1alpha1.KubernetesCluster) bool {
		c := kc.Status.GetCondition(xpv2.TypeReady)
		return string(c.Reason) == reason && (extra == nil || extra(kc))
	})
	return kc
}

func TestClusterController(t *testing.T) {
	env := testenv.Start(t)
	wc := watcher(t, env)
	reg := startManager(t, env)
	member := testenv.StartTarget(t, local.Options{Name: "member"},
		local.Node{Name: "n1", CPU: "4", Memory: "8Gi", Labels: map[string]string{v1alpha1.LabelRegion: "eu-west", v1alpha1.LabelZone: "eu-west-1a"}},
		local.Node{Name: "n2", CPU: "8", Memory: "16Gi", Labels: map[string]string{v1alpha1.LabelRegion: "eu-west", v1alpha1.LabelZone: "eu-west-1b"}},
	)
	// The manager acts as the least-privilege identity of config/member:
	// it never reads the member's Nodes or Pods, only the agent's summary.
	if err := config.GrantManager(context.Background(), member.Clientset, "placer-manager"); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := member.KubeconfigFor("placer-manager")
	if err != nil {
		t.Fatal(err)
	}
	register(t, env, "member", kubeconfig)

	t.Run("without the agent the cluster is not Ready and has no capacity", func(t *testing.T) {
		kc := waitReady(t, wc, "member", v1alpha1.ReasonAgentNotRunning, nil)
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "has not published a capacity summary") {
			t.Errorf("Ready message = %q, want it to say the agent has published no summary", msg)
		}
		if kc.Status.ReadyNodeCount != 0 || len(kc.Status.Allocatable) != 0 {
			t.Errorf("capacity without a summary: %d ready nodes, allocatable %v", kc.Status.ReadyNodeCount, kc.Status.Allocatable)
		}
	})
	// The candidate scheduler's Lease, renewed here as kube-scheduler's
	// leader election would while renew is true.
	lease := types.NamespacedName{Namespace: "placer-system", Name: "placer-candidate-scheduler"}
	var renew atomic.Bool
	renew.Store(true)
	holdLease(t, member.Clientset, lease, &renew)
	agentOpts := agent.Options{HeartbeatInterval: time.Second, CandidateSchedulerLease: lease}
	stopAgent := testenv.StartAgent(t, member.RESTConfig(), agentOpts)
	root := t

	t.Run("reachable cluster publishes status and built-in labels", func(t *testing.T) {
		kc := waitReady(t, wc, "member", v1alpha1.ReasonReady, func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.ReadyNodeCount == 2 && kc.Labels[v1alpha1.LabelRegion] != ""
		})
		if kc.Status.Version != local.KubernetesVersion {
			t.Errorf("version = %q, want %q", kc.Status.Version, local.KubernetesVersion)
		}
		cpu := kc.Status.Allocatable[corev1.ResourceCPU]
		if cpu.String() != "12" {
			t.Errorf("allocatable cpu = %s, want 12", cpu.String())
		}
		free := kc.Status.LargestFreeNode[corev1.ResourceMemory]
		if free.String() != "16Gi" {
			t.Errorf("largest free memory = %s, want 16Gi", free.String())
		}
		want := map[string]string{
			v1alpha1.LabelClusterName:      "member",
			v1alpha1.LabelClusterNamespace: "default",
			v1alpha1.LabelClusterVersion:   local.KubernetesVersion,
			v1alpha1.LabelCloudProvider:    "kwok",
			v1alpha1.LabelRegion:           "eu-west",
		}
		for k, v := range want {
			if kc.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, kc.Labels[k], v)
			}
		}
		if _, ok := kc.Labels[v1alpha1.LabelZone]; ok {
			t.Errorf("zone label published although the nodes disagree: %v", kc.Labels)
		}
	})

	t.Run("a fresh connection to the member tells the registry once its watch has listed the chaperons", func(t *testing.T) {
		key := types.NamespacedName{Namespace: "default", Name: "member"}
		synced := make(chan types.NamespacedName, 4)
		reg.OnSynced(func(_ context.Context, k types.NamespacedName) { synced <- k })
		defer reg.OnSynced(func(context.Context, types.NamespacedName) {})
		// As after an outage: the cluster controller watches with it next.
		if _, err := reg.Reconnect(key, kubeconfig); err != nil {
			t.Fatal(err)
		}
		select {
		case k := <-synced:
			if k != key {
				t.Errorf("told of %s, want %s", k, key)
			}
			// The cluster controller may have reconnected once more.
			if conn := reg.Get(key); conn == nil || !conn.Synced() {
				t.Error("told before the fresh watch listed the chaperons")
			}
		case <-time.After(waitTimeout):
			t.Fatal("never told that the fresh connection's watch listed the member's chaperons")
		}
	})

	t.Run("the connection counts the runner-up candidates waiting in the member, from its watch", func(t *testing.T) {
		ctx := context.Background()
		mc, err := client.New(member.RESTConfig(), client.Options{Scheme: testenv.Scheme()})
		if err != nil {
			t.Fatal(err)
		}
		conn := reg.Get(types.NamespacedName{Namespace: "default", Name: "member"})
		if conn == nil {
			t.Fatal("no connection for a Ready cluster")
		}
		// The watch tells the registry of each chaperon it sees, in order:
		// once it tells of the last one written, it holds every earlier one.
		seen := make(chan types.NamespacedName, 16)
		reg.OnChaperon(func(w types.NamespacedName) { seen <- w })
		defer reg.OnChaperon(func(types.NamespacedName) {})
		write := func(f func() error, workload string) {
			t.Helper()
			if err := f(); err != nil {
				t.Fatal(err)
			}
			for {
				select {
				case k := <-seen:
					if k.Name == workload {
						return
					}
				case <-time.After(waitTimeout):
					t.Fatalf("the connection's watch never saw the chaperon of %s", workload)
				}
			}
		}
		chaperon := func(name string, role propagator.Role, allowed bool) *mcv1alpha1.PodChaperon {
			ch := propagator.NewChaperon(st.Workload(name, func(w *v1alpha1.Workload) { w.UID = types.UID(name) }), "default", 0, role)
			if allowed {
				ch.Annotations[mcv1alpha1.AnnotationIsAllowed] = "true"
			}
			return ch
		}
		waiting, allowed, chosen := chaperon("waiting", propagator.RunnerUp, false), chaperon("allowed", propagator.RunnerUp, false), chaperon("chosen", propagator.Held, false)
		for _, ch := range []*mcv1alpha1.PodChaperon{waiting, allowed, chosen} {
			write(func() error { return mc.Create(ctx, ch) }, ch.Labels[mcv1alpha1.LabelWorkloadUID])
		}
		if n, err := conn.HeldRunnerUps(ctx); err != nil || n != 2 {
			t.Errorf("HeldRunnerUps() = %d, %v; want 2 (a chosen cluster's candidate does not count)", n, err)
		}
		// The runner-up's cluster was chosen and committed: is-allowed.
		write(func() error {
			return mc.Patch(ctx, allowed, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+mcv1alpha1.AnnotationIsAllowed+`":"true"}}}`)))
		}, "allowed")
		if n, err := conn.HeldRunnerUps(ctx); err != nil || n != 1 {
			t.Errorf("HeldRunnerUps() = %d, %v; want 1 (a runner-up allowed since does not count)", n, err)
		}
		write(func() error { return mc.Delete(ctx, waiting) }, "waiting")
		if n, err := conn.HeldRunnerUps(ctx); err != nil || n != 0 {
			t.Errorf("HeldRunnerUps() = %d, %v after the runner-up went; want 0", n, err)
		}
		for _, ch := range []*mcv1alpha1.PodChaperon{allowed, chosen} {
			if err := mc.Delete(ctx, ch); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("a node added changes the summary", func(t *testing.T) {
		if err := member.AddNodes(context.Background(), local.Node{Name: "n3", CPU: "32", Memory: "64Gi", Extended: map[string]string{"nvidia.com/gpu": "4"}, Labels: map[string]string{v1alpha1.LabelRegion: "eu-west"}}); err != nil {
			t.Fatal(err)
		}
		kc := waitReady(t, wc, "member", v1alpha1.ReasonReady, func(kc *v1alpha1.KubernetesCluster) bool { return kc.Status.ReadyNodeCount == 3 })
		if kc.Status.NodeCount != 3 {
			t.Errorf("nodeCount = %d, want 3", kc.Status.NodeCount)
		}
		gpu := kc.Status.Allocatable["nvidia.com/gpu"]
		cpu := kc.Status.LargestFreeNode[corev1.ResourceCPU]
		if gpu.String() != "4" || cpu.String() != "32" {
			t.Errorf("allocatable gpu = %s (want 4), largest free cpu = %s (want 32)", gpu.String(), cpu.String())
		}
	})

	t.Run("a stopped member becomes Unreachable and recovers", func(t *testing.T) {
		member.StopAPIServer()
		waitReady(t, wc, "member", v1alpha1.ReasonUnreachable, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := member.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		waitReady(t, wc, "member", v1alpha1.ReasonReady, nil)
	})

	t.Run("a candidate scheduler that stops renewing its Lease makes the cluster not Ready until it renews again", func(t *testing.T) {
		waitReady(t, wc, "member", v1alpha1.ReasonReady, nil)
		renew.Store(false)
		kc := waitReady(t, wc, "member", v1alpha1.ReasonCandidateSchedulerNotRunning, nil)
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, lease.String()) || !strings.Contains(msg, "expired") {
			t.Errorf("Ready message = %q, want it to name the expired Lease %s", msg, lease)
		}
		renew.Store(true)
		waitReady(t, wc, "member", v1alpha1.ReasonReady, nil)
	})

	t.Run("a stopped agent makes the cluster not Ready; restarted, it is Ready again", func(t *testing.T) {
		waitReady(t, wc, "member", v1alpha1.ReasonReady, nil)
		stopAgent()
		kc := waitReady(t, wc, "member", v1alpha1.ReasonAgentNotRunning, nil)
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "has not renewed its capacity summary") {
			t.Errorf("Ready message = %q, want it to say the agent stopped renewing its summary", msg)
		}
		// It runs on after this subtest, until the test ends.
		stopAgent = testenv.StartAgent(root, member.RESTConfig(), agentOpts)
		waitReady(t, wc, "member", v1alpha1.ReasonReady, nil)
	})

	t.Run("rotating the Secret replaces the connection", func(t *testing.T) {
		key := types.NamespacedName{Namespace: "default", Name: "member"}
		old := reg.Get(key)
		if old == nil {
			t.Fatal("no connection for a Ready cluster")
		}
		rotated, err := member.KubeconfigFor("placer-rotated", "system:masters")
		if err != nil {
			t.Fatal(err)
		}
		s := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "member-kubeconfig"}, s); err != nil {
			t.Fatal(err)
		}
		s.Data["kubeconfig"] = rotated
		if err := env.Client.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		select {
		case <-old.Done():
		case <-time.After(waitTimeout):
			t.Fatal("the old connection was not closed after the Secret changed")
		}
		waitReady(t, wc, "member", v1alpha1.ReasonReady, nil)
	})

	t.Run("bad credentials are Unauthorized", func(t *testing.T) {
		register(t, env, "impostor", edit(t, kubeconfig, func(cfg *clientcmdapi.Config) {
			for _, a := range cfg.AuthInfos {
				a.ClientCertificateData, a.ClientKeyData, a.Token = nil, nil, "not-a-valid-token"
			}
		}))
		waitReady(t, wc, "impostor", v1alpha1.ReasonUnauthorized, nil)
	})

	t.Run("a malformed kubeconfig is reported without its contents", func(t *testing.T) {
		const secretToken = "s3cr3t-t0ken-must-not-leak"
		register(t, env, "malformed", []byte("apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user: {token: "+secretToken+"}\n  : : [unbalanced"))
		kc := waitReady(t, wc, "malformed", v1alpha1.ReasonBadKubeconfig, nil)
		assertNoLeak(t, env, kc, secretToken)

		register(t, env, "nocontext", []byte("apiVersion: v1\nkind: Config\nusers:\n- name: x\n  user: {token: "+secretToken+"}\n"))
		kc = waitReady(t, wc, "nocontext", v1alpha1.ReasonBadKubeconfig, nil)
		assertNoLeak(t, env, kc, secretToken)
	})

	t.Run("a kubeconfig that would run a program or reach the manager's own files is refused, naming the field", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "exec-ran")
		register(t, env, "exec", edit(t, kubeconfig, func(cfg *clientcmdapi.Config) {
			for _, a := range cfg.AuthInfos {
				a.Exec = &clientcmdapi.ExecConfig{Command: "/bin/sh", Args: []string{"-c", "touch " + marker}, APIVersion: "client.authentication.k8s.io/v1"}
				a.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
			}
		}))
		kc := waitReady(t, wc, "exec", v1alpha1.ReasonKubeconfigRefused, nil)
		msg := kc.Status.GetCondition(xpv2.TypeReady).Message
		for _, want := range []string{"].exec", "].tokenFile"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message %q does not name %s", msg, want)
			}
		}
		assertNoLeak(t, env, kc, "/var/run/secrets")
		if _, err := os.Stat(marker); err == nil {
			t.Error("the exec plugin ran in the manager")
		}
	})

	t.Run("a cloud metadata address is refused", func(t *testing.T) {
		register(t, env, "metadata", edit(t, kubeconfig, func(cfg *clientcmdapi.Config) {
			for _, c := range cfg.Clusters {
				c.Server = "https://169.254.169.254"
			}
		}))
		kc := waitReady(t, wc, "metadata", v1alpha1.ReasonKubeconfigRefused, nil)
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "].server") || !strings.Contains(msg, "link-local") {
			t.Errorf("message %q does not name the server as link-local", msg)
		}
	})

	t.Run("a private address is refused unless the cluster's namespace is labelled for private clusters", func(t *testing.T) {
		register(t, env, "private", edit(t, kubeconfig, func(cfg *clientcmdapi.Config) {
			for _, c := range cfg.Clusters {
				c.Server = "https://10.255.255.1:6443"
			}
		}))
		kc := waitReady(t, wc, "private", v1alpha1.ReasonKubeconfigRefused, nil)
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "].server") || !strings.Contains(msg, v1alpha1.LabelPrivateClusters) {
			t.Errorf("message %q does not name the server and the label that allows it", msg)
		}
		ns := &corev1.Namespace{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "default"}, ns); err != nil {
			t.Fatal(err)
		}
		metav1.SetMetaDataLabel(&ns.ObjectMeta, v1alpha1.LabelPrivateClusters, "true")
		if err := env.Client.Update(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
		// Allowed, the address is dialled (and nothing answers there).
		testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, waitTimeout, func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.GetCondition(xpv2.TypeReady).Reason != v1alpha1.ReasonKubeconfigRefused
		})
		if c := kc.Status.GetCondition(xpv2.TypeReady); c.Reason != v1alpha1.ReasonUnreachable {
			t.Errorf("Ready %s %q once allowed, want Unreachable: dialled, nothing answers there", c.Reason, c.Message)
		}
		delete(ns.Labels, v1alpha1.LabelPrivateClusters)
		if err := env.Client.Update(context.Background(), ns); err != nil {
			t.Fatal(err)
		}
		waitReady(t, wc, "private", v1alpha1.ReasonKubeconfigRefused, nil)
	})

	t.Run("a missing Secret is reported, then picked up when created", func(t *testing.T) {
		register(t, env, "late", nil)
		kc := waitReady(t, wc, "late", v1alpha1.ReasonSecretNotFound, nil)
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "default/late-kubeconfig") {
			t.Errorf("message %q does not name the Secret", msg)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "late-kubeconfig"}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
		if err := env.Client.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		waitReady(t, wc, "late", v1alpha1.ReasonReady, nil)
	})

	t.Run("deleting a cluster closes its connection", func(t *testing.T) {
		key := types.NamespacedName{Namespace: "default", Name: "late"}
		conn := reg.Get(key)
		if conn == nil {
			t.Fatal("no connection for a Ready cluster")
		}
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "late"}}
		if err := env.Client.Delete(context.Background(), kc); err != nil {
			t.Fatal(err)
		}
		select {
		case <-conn.Done():
		case <-time.After(waitTimeout):
			t.Fatal("the connection of a deleted cluster was not closed")
		}
		if reg.Get(key) != nil {
			t.Error("the registry still holds a deleted cluster")
		}
	})
}

// assertNoLeak checks that a kubeconfig's secret appears neither in the
// cluster's status nor in any Event.
func assertNoLeak(t *testing.T, env *testenv.Env, kc *v1alpha1.KubernetesCluster, secret string) {
	t.Helper()
	b, _ := yaml.Marshal(kc)
	if strings.Contains(string(b), secret) {
		t.Errorf("the kubeconfig's token appears in the KubernetesCluster:\n%s", b)
	}
	events := &corev1.EventList{}
	if err := env.Client.List(context.Background(), events, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if strings.Contains(e.Message, secret) {
			t.Errorf("the kubeconfig's token appears in an Event: %s", e.Message)
		}
	}
}

// holdLease creates the Lease and renews it every second while renew is
// true, with a 3 s duration, until the test ends.
func holdLease(t *testing.T, cs kubernetes.Interface, key types.NamespacedName, renew *atomic.Bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: key.Namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("test-scheduler"), LeaseDurationSeconds: ptr.To[int32](3), RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	l, err := cs.CoordinationV1().Leases(key.Namespace).Create(ctx, l, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if !renew.Load() {
				continue
			}
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if next, err := cs.CoordinationV1().Leases(key.Namespace).Update(ctx, l, metav1.UpdateOptions{}); err == nil {
				l = next
			}
		}
	}()
}
