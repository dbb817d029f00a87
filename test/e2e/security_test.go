package e2e

import (
	"context"
	"strings"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestSecurity tries, on real clusters and with every component as
// config/ deploys it, what a tenant of a shared placer could try, and
// shows each refused with a reason. (The kubeconfig attacks — exec,
// tokenFile, a metadata address — are in TestClusterController and
// cluster's TestRefusedKubeconfigReachesNothing.)
func TestSecurity(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	m := startMember(t, "m", false, local.Node{Name: "m-0", CPU: "8", Memory: "16Gi"})
	// Member namespaces: shared is opened to two tenants (management
	// namespaces default and team-b); strict enforces restricted Pod Security.
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "shared"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "strict", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}},
	} {
		if _, err := m.target.Clientset.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := config.GrantManager(ctx, m.target.Clientset, "placer-manager"); err != nil {
		t.Fatal(err)
	}
	for _, open := range [][2]string{{"default", "default"}, {"default", "shared"}, {"default", "strict"}, {"team-b", "shared"}, {"team-d", "shared"}, {"team-e", "shared"}} {
		if err := config.OpenNamespace(ctx, m.target.Clientset, "placer-manager", open[0], open[1]); err != nil {
			t.Fatal(err)
		}
	}
	// Management namespaces: team-b is served by the platform's cluster,
	// team-c is not; rogue registers a cluster of its own.
	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"placer.dev/tenant": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-c"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-d", Labels: map[string]string{"placer.dev/tenant": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "team-e", Labels: map[string]string{"placer.dev/tenant": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "rogue"}},
	} {
		if err := env.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	mgmt := install(t, env.Config, "management")["placer-manager"]
	ports := managerPorts{health: freeAddr(t), metrics: freeAddr(t), webhook: freeAddr(t)}
	// The API server calls its webhooks at this manager.
	if err := deploy.WebhooksAt(ctx, env.Config, ports.webhook); err != nil {
		t.Fatal(err)
	}
	runManager(t, managerArgs(mgmt, ports), t.TempDir())
	kubeconfig, err := m.target.KubeconfigFor("placer-manager")
	if err != nil {
		t.Fatal(err)
	}
	registerIn := func(ns, name string, sel *metav1.LabelSelector, mapping map[string]v1alpha1.NamespaceName) {
		t.Helper()
		if err := env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"kubeconfig": kubeconfig}}); err != nil {
			t.Fatal(err)
		}
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: name}, NamespaceSelector: sel, TargetNamespaces: mapping}}
		if err := env.Client.Create(ctx, kc); err != nil {
			t.Fatal(err)
		}
	}
	// The platform's cluster maps team-d's Workloads into shared.
	registerIn("default", "m", &metav1.LabelSelector{MatchLabels: map[string]string{"placer.dev/tenant": "true"}}, map[string]v1alpha1.NamespaceName{"team-d": "shared"})
	// The same member, registered by another tenant in its own namespace
	// and offered to every namespace.
	registerIn("rogue", "rogue", &metav1.LabelSelector{}, nil)
	// team-b and team-d accept what the platform (namespace default)
	// offers them; team-e, offered too, has not accepted yet.
	bind := func(t *testing.T, ns, clusterNamespace string) {
		t.Helper()
		cb := &v1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: clusterNamespace}, Spec: v1alpha1.ClusterBindingSpec{ClusterNamespace: clusterNamespace}}
		if err := env.Client.Create(ctx, cb); err != nil {
			t.Fatal(err)
		}
	}
	bind(t, "team-b", "default")
	bind(t, "team-d", "default")
	wc := testenv.Watcher(t, env.Config)
	for _, key := range [][2]string{{"default", "m"}, {"rogue", "rogue"}} {
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key[0], Name: key[1]}}
		testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && kc.Status.ReadyNodeCount == 1
		})
	}

	create := func(t *testing.T, ns, name string, opts ...st.WorkloadOption) *v1alpha1.Workload {
		t.Helper()
		w := st.Workload(name, append([]st.WorkloadOption{st.WNamespace(ns), st.Requests("100m", "64Mi")}, opts...)...)
		w.UID, w.Generation = "", 0
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	scheduled := func(t *testing.T, w *v1alpha1.Workload, status corev1.ConditionStatus) xpv2.Condition {
		t.Helper()
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			c := w.Status.GetCondition(v1alpha1.TypeScheduled)
			return c.Status == status && c.ObservedGeneration == w.Generation
		})
		return w.Status.GetCondition(v1alpha1.TypeScheduled)
	}
	ready := func(t *testing.T, w *v1alpha1.Workload) {
		t.Helper()
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
	}
	chaperonsIn := func(t *testing.T, ns string, w *v1alpha1.Workload) []mcv1alpha1.PodChaperon {
		t.Helper()
		l := &mcv1alpha1.PodChaperonList{}
		if err := m.client.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(w.UID)}); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	wantNoCandidates := func(t *testing.T, w *v1alpha1.Workload) {
		t.Helper()
		l := &mcv1alpha1.PodChaperonList{}
		if err := m.client.List(ctx, l, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(w.UID)}); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) > 0 {
			t.Errorf("%d chaperons of %s/%s reached the member", len(l.Items), w.Namespace, w.Name)
		}
	}

	t.Run("a namespace the cluster does not serve gets nothing of it", func(t *testing.T) {
		w := create(t, "team-c", "app")
		// The scheduler's cache may see a cluster's Ready a moment after
		// this test did: a first decision may count it not ready, and the
		// cluster's update decides again.
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			c := w.Status.GetCondition(v1alpha1.TypeScheduled)
			return c.Status == corev1.ConditionFalse && strings.Contains(c.Message, "2 cluster(s) did not serve the Workload's namespace")
		})
		wantNoCandidates(t, w)
	})

	t.Run("a rogue tenant's cluster attracts no other tenant's Workload, even named", func(t *testing.T) {
		w := create(t, "default", "unconstrained")
		scheduled(t, w, corev1.ConditionTrue)
		if w.Status.ClusterRef.Name != "m" || w.Status.ClusterRef.Namespace != "default" {
			t.Errorf("placed on %s/%s, want default/m", w.Status.ClusterRef.Namespace, w.Status.ClusterRef.Name)
		}
		named := create(t, "default", "named", st.Target("rogue", "rogue"))
		c := scheduled(t, named, corev1.ConditionFalse)
		if !strings.Contains(c.Message, "did not serve the Workload's namespace") {
			t.Errorf("Scheduled message %q does not say rogue/rogue does not serve default", c.Message)
		}
	})

	t.Run("a cluster offered to a namespace attracts nothing of it until the namespace binds it", func(t *testing.T) {
		w := create(t, "team-e", "waits", func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "shared" })
		c := scheduled(t, w, corev1.ConditionFalse)
		if !strings.Contains(c.Message, "2 cluster(s) did not serve the Workload's namespace") {
			t.Errorf("Scheduled message %q does not say neither cluster serves team-e", c.Message)
		}
		wantNoCandidates(t, w)
		bind(t, "team-e", "default")
		ready(t, w)
		if w.Status.ClusterRef.Namespace != "default" || w.Status.ClusterRef.Name != "m" {
			t.Errorf("placed on %s/%s, want default/m, the one it bound", w.Status.ClusterRef.Namespace, w.Status.ClusterRef.Name)
		}
	})

	t.Run("a tenant cannot deliver into a member namespace opened to another", func(t *testing.T) {
		w := create(t, "team-b", "intruder", func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "default" })
		c := scheduled(t, w, corev1.ConditionFalse)
		if len(w.Status.RejectedClusters) != 1 || w.Status.RejectedClusters[0].Reason != "Forbidden" ||
			!strings.Contains(w.Status.RejectedClusters[0].Message, mcv1alpha1.TenantUser("team-b")) {
			t.Errorf("rejectedClusters = %+v, want default/m Forbidden for %s", w.Status.RejectedClusters, mcv1alpha1.TenantUser("team-b"))
		}
		if !strings.Contains(c.Message, "rejected") {
			t.Errorf("Scheduled message %q does not say the cluster rejected it", c.Message)
		}
		if n := len(chaperonsIn(t, "default", w)); n != 0 {
			t.Errorf("%d chaperons of team-b in the member namespace default", n)
		}
	})

	t.Run("Workloads of one name in two tenants share a member namespace without colliding", func(t *testing.T) {
		a := create(t, "default", "web", func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "shared" })
		b := create(t, "team-b", "web", func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "shared" })
		ready(t, a)
		ready(t, b)
		ca, cb := chaperonsIn(t, "shared", a), chaperonsIn(t, "shared", b)
		if len(ca) != 1 || len(cb) != 1 || ca[0].Name == cb[0].Name {
			t.Errorf("chaperons in shared: %d of default/web, %d of team-b/web, names must differ", len(ca), len(cb))
		}
	})

	t.Run("a cluster's namespace mapping decides where a tenant's pods go", func(t *testing.T) {
		plain := create(t, "team-d", "mapped")
		insist := create(t, "team-d", "insists", func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "default" })
		for _, w := range []*v1alpha1.Workload{plain, insist} {
			ready(t, w)
			if n := len(chaperonsIn(t, "shared", w)); n != 1 {
				t.Errorf("%s/%s: %d chaperons in shared, want 1", w.Namespace, w.Name, n)
			}
		}
	})

	t.Run("a privileged pod is refused before any member sees it, naming the check", func(t *testing.T) {
		w := create(t, "default", "root", st.Pod(func(p *corev1.PodSpec) {
			p.HostPID = true
			p.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			p.Volumes = []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}))
		c := scheduled(t, w, corev1.ConditionFalse)
		for _, want := range []string{`required Pod Security "baseline"`, "privileged", "host namespaces", "hostPath volumes"} {
			if !strings.Contains(c.Message, want) {
				t.Errorf("Scheduled message %q does not say %q", c.Message, want)
			}
		}
		wantNoCandidates(t, w)
	})

	t.Run("a placed Workload's template turned privileged is not rolled out", func(t *testing.T) {
		w := create(t, "default", "turncoat")
		ready(t, w)
		before := chaperonsIn(t, "default", w)
		w.Spec.TargetDeployment.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		if err := env.Client.Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			c := w.Status.GetCondition(xpv2.TypeReady)
			return c.Reason == "PodSecurity" && c.ObservedGeneration == w.Generation
		})
		if msg := w.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "privileged") {
			t.Errorf("Ready message %q does not name the check", msg)
		}
		after := chaperonsIn(t, "default", w)
		if len(after) != len(before) || len(after) == 0 || after[0].Name != before[0].Name || after[0].Spec.Containers[0].SecurityContext != nil {
			t.Errorf("chaperons changed: %d before, %d after; the old template's must stay and no privileged one may come", len(before), len(after))
		}
	})

	t.Run("an external scheduler's choice is admitted like placer's own", func(t *testing.T) {
		w := create(t, "default", "external", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "someone-else" })
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "rogue", Name: "rogue"}
		if err := env.Client.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return len(w.Status.RejectedClusters) > 0 })
		if rc := w.Status.RejectedClusters[0]; rc.Reason != "NamespaceNotServed" || rc.Cluster.Name != "rogue" {
			t.Errorf("rejectedClusters = %+v, want rogue/rogue NamespaceNotServed", w.Status.RejectedClusters)
		}
		wantNoCandidates(t, w)
	})

	t.Run("the handshake annotation cannot be smuggled in a template", func(t *testing.T) {
		w := st.Workload("bypass", st.Replicas(1), func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Annotations = map[string]string{mcv1alpha1.AnnotationIsAllowed: "true"}
			w.Spec.Placement.FanOut = 3
		})
		w.UID, w.Generation = "", 0
		err := env.Client.Create(ctx, w)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.targetDeployment.template.metadata.annotations") {
			t.Fatalf("creating a Workload whose template says is-allowed: %v, want Invalid naming the annotations", err)
		}
	})

	t.Run("an invalid template is refused at once, naming the field", func(t *testing.T) {
		w := create(t, "default", "badname", st.Pod(func(p *corev1.PodSpec) { p.Containers[0].Name = "Bad_Name" }))
		c := scheduled(t, w, corev1.ConditionFalse)
		if c.Reason != v1alpha1.ReasonInvalidTemplate || !strings.Contains(c.Message, "spec.targetDeployment.template.spec.containers[0].name") {
			t.Errorf("Scheduled = %s: %q, want InvalidTemplate naming containers[0].name", c.Reason, c.Message)
		}
		wantNoCandidates(t, w)
	})

	t.Run("a pod the member's API server refuses rejects the cluster at once, in its words", func(t *testing.T) {
		// Baseline at placer, restricted in the member namespace: only the
		// member can tell, and it says so when the agent creates the pod.
		w := create(t, "default", "lax", func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "strict" })
		scheduled(t, w, corev1.ConditionFalse)
		if len(w.Status.RejectedClusters) != 1 || w.Status.RejectedClusters[0].Reason != mcv1alpha1.ReasonPodRefused ||
			!strings.Contains(w.Status.RejectedClusters[0].Message, "violates PodSecurity") {
			t.Fatalf("rejectedClusters = %+v, want default/m PodRefused with the member's Pod Security message", w.Status.RejectedClusters)
		}
		// Well before the 30-second handshake timeout.
		if d := w.Status.RejectedClusters[0].Time.Sub(w.CreationTimestamp.Time); d > 20e9 {
			t.Errorf("rejected %s after creation; a refusal needs no timeout", d)
		}
	})
}
