package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestExplain explains a Workload against a real API server: a cluster
// that is not Ready, one whose scheduler rejected the candidates, and the
// chosen one, with every predicate's verdict and the scores.
func TestExplain(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	createClusters(t, env,
		st.Cluster("east", st.Labels("region", "us-east"), st.Capacity("16", "64Gi", "2", "4Gi", "8", "32Gi")),
		st.Cluster("west", st.Labels("region", "us-west"), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("down", st.Labels("region", "us-east"), st.NotReady(v1alpha1.ReasonUnreachable), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("tiny", st.Labels("region", "eu"), st.Capacity("1", "1Gi", "0", "0", "1", "1Gi")),
	)
	w := st.Workload("web", st.Requests("2", "1Gi"), st.PreferredClusterAffinity(50, st.Term(st.Expr("region", "In", "us-west"))))
	w.Spec.Overrides = []v1alpha1.Override{{Name: "eu-mirror", ClusterSelector: st.Term(st.Expr("region", "In", "eu")), Image: &v1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}}}
	w.UID, w.Generation = "", 0
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "east", Namespace: "default"}
	w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "west", Namespace: "default"}, Reason: v1alpha1.ReasonUnschedulable,
		Message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.", Generation: w.Generation,
		Attempts: 2, RetryAfter: &metav1.Time{Time: time.Now().Add(time.Hour)}, Reserved: 1}}
	w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "down", Namespace: "default"}, Reason: v1alpha1.ReasonUnreachable,
		Message: "the cluster does not answer"}}
	w.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: "down", Namespace: "default"}, Replicas: 2}}
	w.Status.Replicas, w.Status.ReadyReplicas = 2, 2
	w.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: "Available", LastTransitionTime: metav1.Now(), Message: "2 of 2 replicas ready in east"})
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}

	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"placed on:   default/east (2/2 replicas ready)",
		"default/east: feasible, rank 1",
		"handshake: committed; every replica ready",
		"ResourceAllocation",
		"default/west: not feasible",
		"HandshakeRejected      FAIL",
		"handshake: rejected (Unschedulable): 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. (it reserved 1 of the candidates first) (rejection 2; tried again at ",
		"handshake: left (Unreachable): the cluster does not answer; 2 replica(s) still there to clean up",
		"default/down: not feasible",
		"ClusterReady           FAIL",
		"default/tiny: not feasible",
		"ResourceFit            FAIL",
		"overrides: eu-mirror (app image mirror.eu.example.com/library/pause)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain output lacks %q", want)
		}
	}
	if n := strings.Count(got, "overrides: none apply"); n != 3 {
		t.Errorf("%d clusters without overrides, want 3 (all but tiny)", n)
	}
	// Every predicate's verdict is there, for every cluster, failed or not.
	if n := strings.Count(got, "ClusterSelector        pass"); n != 4 {
		t.Errorf("ClusterSelector verdicts = %d, want 4 (one per cluster)", n)
	}
	// Tenancy and Pod Security are explained like any predicate.
	for _, p := range []string{"ClusterTenancy", "PodSecurity"} {
		if n := len(regexp.MustCompile(`(?m)^\s*`+p+`\s+pass`).FindAllString(got, -1)); n != 4 {
			t.Errorf("%s verdicts = %d, want 4 (one per cluster)", p, n)
		}
	}

	// -o json: the same explanation as data.
	out.Reset()
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "web"}, "json"); err != nil {
		t.Fatal(err)
	}
	var e Explanation
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		t.Fatalf("-o json is not JSON: %v\n%s", err, out)
	}
	if e.PlacedOn != "default/east" || !e.ServedByPlacer || e.ClustersConsidered != 4 || e.Feasible != 1 || len(e.Clusters) != 4 {
		t.Errorf("-o json: placed on %q, served %v, %d considered, %d feasible, %d clusters", e.PlacedOn, e.ServedByPlacer, e.ClustersConsidered, e.Feasible, len(e.Clusters))
	} else {
		first := e.Clusters[0]
		if first.Cluster != "default/east" || !first.Feasible || first.Rank != 1 || len(first.Priorities) == 0 || first.Handshake != "committed; every replica ready" {
			t.Errorf("-o json: first cluster %+v", first)
		}
		failedFit := false
		for _, c := range e.Clusters {
			for _, v := range c.Predicates {
				if c.Cluster == "default/tiny" && v.Plugin == "ResourceFit" && !v.Pass && v.Reason != "" {
					failedFit = true
				}
			}
		}
		if !failedFit {
			t.Errorf("-o json: no failed ResourceFit verdict with its reason for default/tiny")
		}
	}
	out.Reset()
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "web"}, "yaml"); err != nil || !strings.Contains(out.String(), "placedOn: default/east") {
		t.Errorf("-o yaml: %v\n%s", err, out)
	}
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "web"}, "wide"); err == nil {
		t.Error("-o wide is accepted")
	}

	// A foreign schedulerName is explained as such.
	other := st.Workload("ext", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "someone-else" })
	other.UID, other.Generation = "", 0
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "ext"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `schedulerName "someone-else" is not served by placer's scheduler`) {
		t.Errorf("foreign scheduler not explained:\n%s", out.String())
	}

	// Moving back: placed on east, it prefers us-west, which turned
	// Ready just now.
	back := st.Workload("back", st.Requests("1", "1Gi"), st.PreferredClusterAffinity(50, st.Term(st.Expr("region", "In", "us-west"))))
	back.Spec.Placement.Rebalance = v1alpha1.RebalanceWhenPreferred
	back.UID, back.Generation = "", 0
	if err := env.Client.Create(ctx, back); err != nil {
		t.Fatal(err)
	}
	back.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "east", Namespace: "default"}
	if err := env.Client.Status().Update(ctx, back); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "back"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Moving back:",
		"WhenPreferred: moves back to a cluster it prefers more in ", "once that cluster has been Ready, and it placed here, for 5m0s",
		"placer rebalance now would move it: it prefers cluster default/west",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain of back lacks %q:\n%s", want, out.String())
		}
	}
}

// createClusters creates KubernetesClusters with their status.
func createClusters(t *testing.T, env *testenv.Env, kcs ...*v1alpha1.KubernetesCluster) {
	t.Helper()
	ctx := context.Background()
	for _, kc := range kcs {
		status := kc.Status
		for i := range status.Conditions {
			status.Conditions[i].LastTransitionTime = metav1.Now()
		}
		kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: kc.Name}
		if err := env.Client.Create(ctx, kc); err != nil {
			t.Fatal(err)
		}
		kc.Status = status
		if err := env.Client.Status().Update(ctx, kc); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExplainProxyPod: pod/NAME explains a proxy pod's Workload, and says
// plainly when the pod is not one.
func TestExplainProxyPod(t *testing.T) {
	for arg, want := range map[string]struct {
		name string
		pod  bool
	}{"web": {"web", false}, "workload/ns/web": {"ns/web", false}, "pod/web-1": {"web-1", true}, "pods/ns/web-1": {"ns/web-1", true}} {
		if name, pod := kindOf(arg); name != want.name || pod != want.pod {
			t.Errorf("kindOf(%q) = %q, %v; want %q, %v", arg, name, pod, want.name, want.pod)
		}
	}
	env := testenv.Start(t)
	ctx := context.Background()
	proxy := st.Workload("web-1", st.WLabels(v1alpha1.LabelProxyPod, "uid-1"))
	plain := st.Workload("web")
	for _, w := range []*v1alpha1.Workload{proxy, plain} {
		w.UID, w.Generation = "", 0
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	if err := proxyPodWorkload(ctx, env.Client, types.NamespacedName{Namespace: "default", Name: "web-1"}); err != nil {
		t.Errorf("a proxy pod's Workload: %v", err)
	}
	if err := proxyPodWorkload(ctx, env.Client, types.NamespacedName{Namespace: "default", Name: "web"}); err == nil || !strings.Contains(err.Error(), "not a proxy pod's") {
		t.Errorf("a Workload of its own taken for a proxy pod's: %v", err)
	}
	if err := proxyPodWorkload(ctx, env.Client, types.NamespacedName{Namespace: "default", Name: "nginx"}); err == nil || !strings.Contains(err.Error(), "not placed by placer") {
		t.Errorf("an ordinary pod: %v", err)
	}
}

// TestExplainAsTenant explains a Workload as its tenant does, with no
// rights but the placer-tenant-view role (config/rbac/tenant, which view,
// edit and admin aggregate) in its own namespace: it works, shows the
// namespace's own clusters, says what it could not read, and never shows
// another namespace's objects.
func TestExplainAsTenant(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	b, err := config.Files.ReadFile("rbac/tenant/roles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal([]byte(doc), role); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, role); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"team-a", "platform", "other"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	// aliceViews gives the tenant's user view (placer's part of it) in ns.
	aliceViews := func(ns string) {
		if err := env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-view"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "placer-tenant-view"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}}); err != nil {
			t.Fatal(err)
		}
	}
	aliceViews("team-a")
	inNamespace := func(ns string) st.ClusterOption {
		return func(kc *v1alpha1.KubernetesCluster) { kc.Namespace = ns }
	}
	offered := func(kc *v1alpha1.KubernetesCluster) { kc.Spec.NamespaceSelector = &metav1.LabelSelector{} }
	createClusters(t, env,
		st.Cluster("own", inNamespace("team-a"), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("shared", inNamespace("platform"), offered, st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("hidden", inNamespace("other"), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
	)
	if err := env.Client.Create(ctx, &v1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "platform"},
		Spec: v1alpha1.ClusterBindingSpec{ClusterNamespace: "platform"}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*v1alpha1.Workload{st.Workload("app", st.Requests("1", "1Gi")), st.Workload("neighbour", st.Requests("1", "1Gi"))} {
		w.UID, w.Generation = "", 0
		w.Namespace = "team-a"
		if w.Name == "neighbour" {
			w.Namespace = "other"
		}
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "team-a", Name: "app"}

	// An administrator sees every cluster.
	out := &bytes.Buffer{}
	if err := explain(ctx, out, env.Client, profiles, key); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"team-a/own:", "platform/shared:", "other/hidden:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("as an administrator, explain lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out.String(), "Read with your rights") {
		t.Errorf("as an administrator, explain says it could not read something:\n%s", out)
	}

	// The tenant, with its namespace's rights alone.
	alice, err := client.New(env.UserConfig(t, "alice"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := explain(ctx, out, alice, profiles, key); err != nil {
		t.Fatalf("explain as the tenant: %v", err)
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"A scheduling cycle now, over 1 cluster(s), 1 feasible",
		"team-a/own: feasible, rank 1",
		"the KubernetesClusters of namespace platform, which a ClusterBinding names, are not readable with your rights",
		"the Workloads of other namespaces than team-a are not readable with your rights",
		"namespace team-a's labels are not readable with your rights",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain as the tenant lacks %q", want)
		}
	}
	for _, never := range []string{"other/", "hidden", "neighbour", "platform/shared"} {
		if strings.Contains(got, never) {
			t.Errorf("explain as the tenant shows %q, of a namespace it may not read", never)
		}
	}

	// A role of the tenant's own that reads Workloads alone: explain still
	// answers, and says what it could not read.
	if err := env.Client.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "workloads-only"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{v1alpha1.Group}, Resources: []string{"workloads"}, Verbs: []string{"get", "list"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "carol-workloads-only"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "workloads-only"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "carol"}}}); err != nil {
		t.Fatal(err)
	}
	carol, err := client.New(env.UserConfig(t, "carol"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := explain(ctx, out, carol, profiles, key); err != nil {
		t.Fatalf("explain with Workloads alone readable: %v", err)
	}
	for _, want := range []string{"the ClusterBindings of namespace team-a are not readable", "the KubernetesClusters of namespace team-a are not readable", "over 0 cluster(s)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain with Workloads alone readable lacks %q:\n%s", want, out)
		}
	}

	// Given the right to read the clusters it binds, the tenant sees them.
	aliceViews("platform")
	out.Reset()
	if err := explain(ctx, out, alice, profiles, key); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "platform/shared:") || strings.Contains(out.String(), "KubernetesClusters of namespace platform") {
		t.Errorf("with view in platform, the tenant's explain does not show platform/shared:\n%s", out)
	}
}

func TestCommandNameAsKubectlPlugin(t *testing.T) {
	if got := commandName("/usr/local/bin/kubectl-placer"); got != "kubectl placer" {
		t.Errorf("as kubectl-placer: %q", got)
	}
	if got := commandName("./placer"); got != "placer" {
		t.Errorf("as placer: %q", got)
	}
}

// TestSchedulerConfigFromCluster: explain and drain read the manager's
// scheduler configuration from the cluster (the ConfigMap the chart
// mounts into the manager), no local file needed.
func TestSchedulerConfigFromCluster(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "placer-system"}}); err != nil {
		t.Fatal(err)
	}
	names := func(f schedulerConfigFlags, c client.Client) ([]string, string, error) {
		conf, note, err := f.load(ctx, c)
		if err != nil {
			return nil, note, err
		}
		var out []string
		for _, p := range conf.Profiles {
			out = append(out, p.SchedulerName)
		}
		return out, note, nil
	}
	f := schedulerConfigFlags{namespace: "placer-system"}

	// None: the manager runs the default profile, and so does explain.
	if got, note, err := names(f, env.Client); err != nil || strings.Join(got, ",") != v1alpha1.DefaultSchedulerName || note != "" {
		t.Errorf("without a ConfigMap: %v %q %v, want the default profile", got, note, err)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "placer-system", Name: SchedulerConfigMap},
		Data: map[string]string{SchedulerConfigKey: "profiles:\n- schedulerName: placer-scheduler\n- schedulerName: gpu-scheduler\n"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if got, _, err := names(f, env.Client); err != nil || strings.Join(got, ",") != "placer-scheduler,gpu-scheduler" {
		t.Errorf("from the ConfigMap: %v %v, want placer-scheduler,gpu-scheduler", got, err)
	}
	// A local file still wins.
	file := filepath.Join(t.TempDir(), "conf.yaml")
	if err := os.WriteFile(file, []byte("profiles:\n- schedulerName: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _, err := names(schedulerConfigFlags{file: file, namespace: "placer-system"}, env.Client); err != nil || strings.Join(got, ",") != "from-file" {
		t.Errorf("--scheduler-config: %v %v, want from-file", got, err)
	}
	// A user who may not read it is told the default is assumed.
	stranger, err := client.New(env.UserConfig(t, "stranger"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if got, note, err := names(f, stranger); err != nil || strings.Join(got, ",") != v1alpha1.DefaultSchedulerName || !strings.Contains(note, "not readable with your rights") {
		t.Errorf("forbidden: %v %q %v, want the default profile and a note", got, note, err)
	}
	// A broken one is an error naming it, not a silent default.
	cm.Data[SchedulerConfigKey] = "profiles: []\n"
	if err := env.Client.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if _, _, err := names(f, env.Client); err == nil || !strings.Contains(err.Error(), "ConfigMap placer-system/placer-scheduler-config") {
		t.Errorf("an empty configuration: %v, want an error naming the ConfigMap", err)
	}
}

// TestExplainDivided explains a Divided Workload: its shares as its status
// lists them, and how a cycle now divides it, with each cluster left out
// and why.
func TestExplainDivided(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	createClusters(t, env,
		st.Cluster("east", st.Labels(v1alpha1.LabelRegion, "us-east"), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		// Cordoned: its share stays, as the divider keeps it.
		st.Cluster("west", st.Labels(v1alpha1.LabelRegion, "us-west"), st.Cordoned(), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("nolabel", st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
	)
	w := st.Workload("web", st.Replicas(6), st.Requests("1", "1Gi"), func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided,
			SpreadConstraints: []v1alpha1.SpreadConstraint{{TopologyKey: v1alpha1.LabelRegion, MinGroups: 2}}}
	})
	w.UID, w.Generation = "", 0
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Status.Placements = []v1alpha1.SharePlacement{
		{Cluster: v1alpha1.ClusterReference{Name: "east", Namespace: "default"}, Workload: "web-east", Replicas: 3, ReadyReplicas: 3, Reason: "3 of 6 replicas by room weight 16 of 32"},
		{Cluster: v1alpha1.ClusterReference{Name: "west", Namespace: "default"}, Workload: "web-west", Replicas: 3, ReadyReplicas: 2, Reason: "3 of 6 replicas by room weight 16 of 32"},
	}
	w.Status.Replicas, w.Status.ReadyReplicas = 6, 5
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := explainText(t, env, "web")
	for _, want := range []string{
		"placed as:   shares (5/6 replicas ready)",
		"default/east: 3 replica(s), 3 ready (Workload web-east)",
		"default/west: 3 replica(s), 2 ready (Workload web-west)",
		"A division now, from those shares:",
		"default/east: 3 replica(s): 3 of 6 replicas by room weight",
		"default/west: 3 replica(s): 3 of 6 replicas",
		"default/nolabel: no share: no label topology.kubernetes.io/region",
		// Afresh, the cordoned west takes nothing, and minGroups 2 finds
		// one region only.
		"Moving back:\n  nothing to move back: no division afresh holds every replica",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain output lacks %q", want)
		}
	}

	// Fled to east (as after a failover): afresh, nolabel takes its half
	// back, and WhenPreferred moves it there; under way, explain says so.
	for _, name := range []string{"fled", "returning"} {
		f := st.Workload(name, st.Replicas(4), st.Requests("1", "1Gi"), func(w *v1alpha1.Workload) {
			w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided,
				StaticWeights: []v1alpha1.StaticClusterWeight{{Weight: 1}}}
			w.Spec.Placement.Rebalance = v1alpha1.RebalanceWhenPreferred
		})
		f.UID, f.Generation = "", 0
		if err := env.Client.Create(ctx, f); err != nil {
			t.Fatal(err)
		}
		f.Status.Placements = []v1alpha1.SharePlacement{{Cluster: v1alpha1.ClusterReference{Name: "east", Namespace: "default"}, Workload: name + "-east", Replicas: 4, ReadyReplicas: 4}}
		if name == "returning" {
			f.Status.Rebalancing = &v1alpha1.Rebalancing{Generation: 1, Time: metav1.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Message: "the division it would be given afresh (…) moves 2 of its 4 replicas",
				Shares: []v1alpha1.ClusterReplicas{{Cluster: v1alpha1.ClusterReference{Name: "east", Namespace: "default"}, Replicas: 2}, {Cluster: v1alpha1.ClusterReference{Name: "nolabel", Namespace: "default"}, Replicas: 2}}}
		}
		if err := env.Client.Status().Update(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	got = explainText(t, env, "fled")
	for _, want := range []string{
		"afresh it would be divided default/east 2, default/nolabel 2: 2 of its 4 replicas would move",
		"WhenPreferred: moves back there once every cluster it grows in has been Ready, and its division unchanged, for 5m0s",
		"placer rebalance now would move it there",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain output of fled lacks %q", want)
		}
	}
	if got := explainText(t, env, "returning"); !strings.Contains(got, "Moving back:\n  under way since 2026-11-27T10:00:00Z: the division it would be given afresh (…) moves 2 of its 4 replicas") {
		t.Errorf("explain output of returning does not say its move back is under way")
	}
}

// explainText is placer explain's text of a Workload of namespace default,
// with the default scheduler profile.
func explainText(t *testing.T, env *testenv.Env, name string) string {
	t.Helper()
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	if err := explain(context.Background(), out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: name}); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	return out.String()
}

// Before the member answers a first handshake the propagator writes no
// count: a person is shown the desired replicas, not "0 of 0".
func TestShownReplicas(t *testing.T) {
	three := int32(3)
	w := &v1alpha1.Workload{}
	w.Spec.TargetDeployment.Replicas = &three
	if got := shownReplicas(w); got != 3 {
		t.Errorf("not counted yet: %d, want the desired 3", got)
	}
	w.Status.Replicas = 4 // counted: a scale-down not done yet
	if got := shownReplicas(w); got != 4 {
		t.Errorf("counted: %d, want the count 4", got)
	}
}
