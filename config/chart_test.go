package config_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
)

// charts are the Helm charts, by the kustomization each must agree with.
var charts = map[string]string{"management": "placer", "member": "placer-member"}

// renderChart renders charts/<chart> as 'helm template' does.
func renderChart(t *testing.T, chart, namespace string, values map[string]any, apiVersions ...string) []*unstructured.Unstructured {
	t.Helper()
	out, err := deploy.RenderChart(filepath.Join(testenv.RepoRoot(t), "charts", chart), namespace, values, apiVersions...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// normalized re-decodes an object as the chart's are, so that both sides
// compare as YAML would read them.
func normalized(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	b, err := yaml.Marshal(o.Object)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.DecodeYAML(o.GetName(), b)
	if err != nil {
		t.Fatal(err)
	}
	return objs[0].Object
}

func key(o *unstructured.Unstructured) string {
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

// TestChartMatchesKustomize: with its default values, each chart renders
// exactly the objects of its kustomization (but the Namespace, which Helm
// creates with --create-namespace), field for field, so the two ways to
// install cannot drift apart.
func TestChartMatchesKustomize(t *testing.T) {
	for side, chart := range charts {
		t.Run(chart, func(t *testing.T) {
			want := map[string]map[string]any{}
			for _, o := range render(t, side) {
				if o.GetKind() != "Namespace" {
					want[key(o)] = normalized(t, o)
				}
			}
			got := map[string]map[string]any{}
			for _, o := range renderChart(t, chart, deploy.Namespace, nil) {
				if _, dup := got[key(o)]; dup {
					t.Errorf("charts/%s renders %s twice", chart, key(o))
				}
				got[key(o)] = o.Object
			}
			for k, w := range want {
				g, ok := got[k]
				if !ok {
					t.Errorf("charts/%s renders no %s (config/%s has it)", chart, k, side)
					continue
				}
				if d := cmp.Diff(w, g); d != "" {
					t.Errorf("charts/%s and config/%s differ on %s (-kustomize +chart):\n%s", chart, side, k, d)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("charts/%s renders %s, which config/%s does not", chart, k, side)
				}
			}
		})
	}
}

// TestChartValues: each value does what values.yaml says, in another
// namespace than the kustomizations'.
func TestChartValues(t *testing.T) {
	const ns = "fleet-system"
	digest := "sha256:" + strings.Repeat("ab", 32)
	common := map[string]any{
		"image":            map[string]any{"repository": "registry.example.com/placer", "tag": "v1.2.3", "digest": digest, "pullPolicy": "Always"},
		"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		"metrics":          map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
	}
	wantImage := "registry.example.com/placer:v1.2.3@" + digest
	schedulerConfig := "apiVersion: compute.placer.dev/v1alpha1\nkind: SchedulerConfiguration\nprofiles:\n- schedulerName: placer-scheduler\n"
	management := map[string]any{
		"manager": map[string]any{
			"replicas": 3, "extraArgs": []any{"--max-concurrent-moves=10", "--zap-log-level", "4"}, "antiAffinity": false,
			"resources":       map[string]any{"requests": map[string]any{"cpu": "1"}},
			"nodeSelector":    map[string]any{"role": "control"},
			"schedulerConfig": schedulerConfig,
		},
		"podDisruptionBudget": map[string]any{"enabled": false},
	}
	member := map[string]any{
		"agent":              map[string]any{"replicas": 1, "heartbeatInterval": "5s"},
		"candidateScheduler": map[string]any{"permitTimeout": "30s", "tolerations": []any{map[string]any{"operator": "Exists"}}},
	}
	for k, v := range common {
		management[k], member[k] = v, v
	}
	sm := "monitoring.coreos.com/v1/ServiceMonitor"

	objs := byKey(renderChart(t, "placer", ns, management, sm))
	m := deployment(t, objs, ns, "placer-manager")
	c := m.Spec.Template.Spec.Containers[0]
	if c.Image != wantImage || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("manager image %s (%s), want %s (Always)", c.Image, c.ImagePullPolicy, wantImage)
	}
	if *m.Spec.Replicas != 3 || m.Spec.Template.Spec.Affinity != nil || m.Spec.Template.Spec.NodeSelector["role"] != "control" || c.Resources.Requests.Cpu().String() != "1" {
		t.Errorf("manager: replicas %d, affinity %v, nodeSelector %v, requests %v", *m.Spec.Replicas, m.Spec.Template.Spec.Affinity, m.Spec.Template.Spec.NodeSelector, c.Resources.Requests)
	}
	if len(m.Spec.Template.Spec.ImagePullSecrets) != 1 || m.Spec.Template.Spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("manager imagePullSecrets %v", m.Spec.Template.Spec.ImagePullSecrets)
	}
	// "4" stays a string: an argument is quoted, whatever it looks like.
	for _, arg := range []string{"--max-concurrent-moves=10", "--zap-log-level", "4", "--scheduler-config=/etc/placer/scheduler-config.yaml"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("manager args %v lack %s", c.Args, arg)
		}
	}
	if len(c.VolumeMounts) != 1 || len(m.Spec.Template.Spec.Volumes) != 1 || m.Spec.Template.Spec.Volumes[0].ConfigMap.Name != "placer-scheduler-config" {
		t.Errorf("manager mounts %v from %v, want the scheduler configuration", c.VolumeMounts, m.Spec.Template.Spec.Volumes)
	}
	if cm, ok := objs["ConfigMap "+ns+"/placer-scheduler-config"]; !ok {
		t.Errorf("no scheduler configuration ConfigMap")
	} else if got, _, _ := unstructured.NestedString(cm.Object, "data", "scheduler-config.yaml"); got != schedulerConfig {
		t.Errorf("scheduler configuration %q, want %q", got, schedulerConfig)
	}
	if _, ok := objs["RoleBinding "+ns+"/placer-scheduler-config-reader"]; !ok {
		t.Errorf("no RoleBinding that lets users read the scheduler configuration")
	}
	if _, ok := objs["PodDisruptionBudget "+ns+"/placer-manager"]; ok {
		t.Errorf("podDisruptionBudget.enabled=false renders a PodDisruptionBudget")
	}
	if s, ok := objs["ServiceMonitor "+ns+"/placer-manager"]; !ok || s.GetLabels()["release"] != "prom" {
		t.Errorf("no ServiceMonitor placer-manager labelled release=prom where the CRD is installed: %v", s)
	}
	binding := &rbacv1.ClusterRoleBinding{}
	fromUnstructured(t, objs["ClusterRoleBinding /placer-manager"], binding)
	if len(binding.Subjects) != 1 || binding.Subjects[0].Namespace != ns {
		t.Errorf("ClusterRoleBinding placer-manager binds %v, want the ServiceAccount in %s", binding.Subjects, ns)
	}
	if _, ok := objs["ServiceAccount "+ns+"/placer-manager"]; !ok {
		t.Errorf("no ServiceAccount placer-manager in %s", ns)
	}
	// Without the CRD, no ServiceMonitor: the install would fail.
	if _, ok := byKey(renderChart(t, "placer", ns, management))["ServiceMonitor "+ns+"/placer-manager"]; ok {
		t.Errorf("a ServiceMonitor is rendered where its CRD is not installed")
	}

	objs = byKey(renderChart(t, "placer-member", ns, member, sm))
	a := deployment(t, objs, ns, "placer-agent")
	if *a.Spec.Replicas != 1 || a.Spec.Template.Spec.Containers[0].Image != wantImage ||
		!slices.Contains(a.Spec.Template.Spec.Containers[0].Args, "--heartbeat-interval=5s") ||
		!slices.Contains(a.Spec.Template.Spec.Containers[0].Args, "--candidate-scheduler-lease="+ns+"/placer-candidate-scheduler") {
		t.Errorf("agent: replicas %d, image %s, args %v", *a.Spec.Replicas, a.Spec.Template.Spec.Containers[0].Image, a.Spec.Template.Spec.Containers[0].Args)
	}
	cs := deployment(t, objs, ns, "placer-candidate-scheduler")
	if args := cs.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--permit-timeout=30s") || !slices.Contains(args, "--leader-election-namespace="+ns) {
		t.Errorf("candidate scheduler args %v", args)
	}
	if len(cs.Spec.Template.Spec.Tolerations) != 1 {
		t.Errorf("candidate scheduler tolerations %v", cs.Spec.Template.Spec.Tolerations)
	}
	for _, k := range []string{"Service " + ns + "/placer-agent-metrics", "ServiceMonitor " + ns + "/placer-agent", "Service " + ns + "/placer-candidate-scheduler-metrics", "ServiceMonitor " + ns + "/placer-candidate-scheduler"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("metrics.serviceMonitor.enabled renders no %s", k)
		}
	}
}

// TestChartInstall installs both charts, with values, into a fresh
// cluster as 'helm install --create-namespace' would (CRDs first), and
// checks that the API server takes every object, strictly, and has it.
func TestChartInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, cl := freshCluster(ctx, t, "chart")
	const ns = "fleet-system"
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The cluster is the management cluster and a member: the member chart
	// leaves the roles both would create to the placer chart.
	values := map[string]map[string]any{
		"placer":        {"manager": map[string]any{"schedulerConfig": "profiles: []\n"}, "imagePullSecrets": []any{map[string]any{"name": "regcred"}}},
		"placer-member": {"installSharedRoles": false},
	}
	for _, chart := range []string{"placer", "placer-member"} {
		objs := renderChart(t, chart, ns, values[chart])
		for _, o := range objs {
			if err := cl.Create(ctx, o.DeepCopy(), client.DryRunAll, client.FieldValidation("Strict")); err != nil {
				t.Errorf("charts/%s: the API server refuses %s: %v", chart, key(o), err)
			}
		}
		if err := deploy.ApplyAll(ctx, c.RESTConfig(), objs); err != nil {
			t.Fatalf("charts/%s: %v", chart, err)
		}
		for _, o := range objs {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			if err := cl.Get(ctx, client.ObjectKeyFromObject(o), got); err != nil {
				t.Errorf("charts/%s: %s is not there: %v", chart, key(o), err)
			}
		}
	}
}

func byKey(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		out[key(o)] = o
	}
	return out
}

func deployment(t *testing.T, objs map[string]*unstructured.Unstructured, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	o, ok := objs["Deployment "+ns+"/"+name]
	if !ok {
		t.Fatalf("no Deployment %s/%s", ns, name)
	}
	fromUnstructured(t, o, d)
	return d
}

func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	if o == nil {
		t.Fatalf("no object to decode into %T", into)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
		t.Fatal(err)
	}
}
