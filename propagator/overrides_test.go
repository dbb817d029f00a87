package propagator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestOverrideImage(t *testing.T) {
	cases := []struct {
		image string
		o     v1alpha1.ImageOverride
		want  string
	}{
		{"nginx:1.25", v1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}, "mirror.eu.example.com/library/nginx:1.25"},
		{"nginx", v1alpha1.ImageOverride{Tag: "1.26"}, "nginx:1.26"},
		{"registry.k8s.io/pause:3.10", v1alpha1.ImageOverride{Registry: "mirror:5000"}, "mirror:5000/pause:3.10"},
		{"ghcr.io/team/app:v1", v1alpha1.ImageOverride{Repository: "other/app"}, "ghcr.io/other/app:v1"},
		{"ghcr.io/team/app:v1@sha256:" + sha, v1alpha1.ImageOverride{Registry: "mirror.example.com"}, "mirror.example.com/team/app:v1@sha256:" + sha},
		{"ghcr.io/team/app@sha256:" + sha, v1alpha1.ImageOverride{Tag: "v2"}, "ghcr.io/team/app:v2"},
	}
	for _, tc := range cases {
		got, err := overrideImage(tc.image, &tc.o)
		if err != nil || got != tc.want {
			t.Errorf("overrideImage(%q, %+v) = %q, %v; want %q", tc.image, tc.o, got, err, tc.want)
		}
	}
	if _, err := overrideImage("Not An Image", &v1alpha1.ImageOverride{Tag: "x"}); err == nil {
		t.Error("an image that is no reference was overridden")
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestOverridden(t *testing.T) {
	eu := scheduler.NewClusterInfo(st.Cluster("eu", st.Labels(v1alpha1.LabelRegion, "europe-west1")))
	us := scheduler.NewClusterInfo(st.Cluster("us", st.Labels(v1alpha1.LabelRegion, "us-east-1")))
	inEU := st.Term(st.Expr(v1alpha1.LabelRegion, "In", "europe-west1"))
	w := st.Workload("web", st.Pod(func(p *corev1.PodSpec) {
		p.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
		p.Containers = []corev1.Container{{Name: "app", Image: "ghcr.io/team/app:v1", Env: []corev1.EnvVar{{Name: "MODE", Value: "a"}, {Name: "KEEP", Value: "k"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}}
		p.NodeSelector = map[string]string{"disk": "ssd"}
	}), func(w *v1alpha1.Workload) {
		w.Spec.Overrides = []v1alpha1.Override{
			{Name: "eu-mirror", ClusterSelector: inEU, Image: &v1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}},
			{Name: "eu-app", ClusterSelector: inEU, Containers: []string{"app"}, Env: []corev1.EnvVar{{Name: "MODE", Value: "eu"}, {Name: "NEW", Value: "n"}},
				Args: []string{"--eu"}, Resources: &v1alpha1.ResourceOverride{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
				NodeSelector: map[string]string{"disk": "nvme", "zone": "b"}, Labels: map[string]string{"region": "eu"}, Annotations: map[string]string{"note": "eu"}},
			{Name: "everywhere", ClusterSelector: v1alpha1.ClusterSelectorTerm{}, Containers: []string{"init"}, Command: []string{"true"}},
		}
	})
	base := w.DeepCopy()

	got, applied, err := Overridden(w, eu)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"eu-mirror", "eu-app", "everywhere"}, applied); diff != "" {
		t.Errorf("applied (-want,+got):\n%s", diff)
	}
	tmpl := got.Spec.TargetDeployment.Template
	app, init := tmpl.Spec.Containers[0], tmpl.Spec.InitContainers[0]
	if app.Image != "mirror.eu.example.com/team/app:v1" || init.Image != "mirror.eu.example.com/library/busybox" {
		t.Errorf("images %q, %q: want both from the mirror", app.Image, init.Image)
	}
	if diff := cmp.Diff([]corev1.EnvVar{{Name: "MODE", Value: "eu"}, {Name: "KEEP", Value: "k"}, {Name: "NEW", Value: "n"}}, app.Env); diff != "" {
		t.Errorf("env (-want,+got):\n%s", diff)
	}
	if len(init.Env) != 0 || len(init.Args) != 0 || len(init.Command) != 1 || len(app.Command) != 0 {
		t.Errorf("a rule for one container changed another: init %+v, app command %v", init, app.Command)
	}
	if cpu, mem := app.Resources.Requests[corev1.ResourceCPU], app.Resources.Requests[corev1.ResourceMemory]; cpu.String() != "2" || mem.String() != "64Mi" {
		t.Errorf("requests cpu %s, memory %s; want 2 (overridden) and 64Mi (kept)", cpu.String(), mem.String())
	}
	if tmpl.Spec.NodeSelector["disk"] != "nvme" || tmpl.Spec.NodeSelector["zone"] != "b" || tmpl.Labels["region"] != "eu" || tmpl.Annotations["note"] != "eu" {
		t.Errorf("nodeSelector %v, labels %v, annotations %v", tmpl.Spec.NodeSelector, tmpl.Labels, tmpl.Annotations)
	}
	if TemplateHash(got) == TemplateHash(w) {
		t.Error("the overridden template has the base template's hash: a rule change would not roll out")
	}
	if diff := cmp.Diff(base, w); diff != "" {
		t.Errorf("Overridden changed the Workload itself (-before,+after):\n%s", diff)
	}

	got, applied, err = Overridden(w, us)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"everywhere"}, applied); diff != "" {
		t.Errorf("applied in us (-want,+got):\n%s", diff)
	}
	if img := got.Spec.TargetDeployment.Template.Spec.Containers[0].Image; img != "ghcr.io/team/app:v1" {
		t.Errorf("image in us %q: an eu rule applied", img)
	}

	plain := st.Workload("plain")
	if got, applied, err := Overridden(plain, eu); err != nil || got != plain || applied != nil {
		t.Errorf("a Workload without overrides: %p (want %p), %v, %v", got, plain, applied, err)
	}
}
