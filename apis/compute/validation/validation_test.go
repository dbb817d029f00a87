package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestValidateTemplate(t *testing.T) {
	cases := map[string]struct {
		w *v1alpha1.Workload
		// want are substrings of the errors, each naming a field; none
		// means valid.
		want []string
	}{
		"a minimal template is valid": {w: st.Workload("w")},
		"no container": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) { p.Containers = nil })),
			want: []string{"spec.targetDeployment.template.spec.containers: Required value"}},
		"an invalid container name": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) { p.Containers[0].Name = "Bad_Name" })),
			want: []string{`spec.targetDeployment.template.spec.containers[0].name: Invalid value: "Bad_Name"`}},
		"a negative request": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
		})), want: []string{"spec.targetDeployment.template.spec.containers[0].resources.requests[cpu]"}},
		"a request above its limit": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
			p.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		})), want: []string{"spec.targetDeployment.template.spec.containers[0].resources.requests"}},
		"two containers of one name": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) {
			p.Containers = append(p.Containers, p.Containers[0])
		})), want: []string{"spec.targetDeployment.template.spec.containers[1].name: Duplicate value"}},
		"a container port out of range": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) {
			p.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 70000}}
		})), want: []string{"spec.targetDeployment.template.spec.containers[0].ports[0].containerPort"}},
		"a volume mount of no volume": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) {
			p.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}
		})), want: []string{"spec.targetDeployment.template.spec.containers[0].volumeMounts[0].name: Not found"}},
		"placer's handshake annotation": {w: st.Workload("w", func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Annotations = map[string]string{"multicluster.placer.dev/is-allowed": "true"}
		}), want: []string{"spec.targetDeployment.template.metadata.annotations[multicluster.placer.dev/is-allowed]: Forbidden"}},
		"placer's workload label": {w: st.Workload("w", func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Labels = map[string]string{"multicluster.placer.dev/workload-uid": "someone-else"}
		}), want: []string{"spec.targetDeployment.template.metadata.labels[multicluster.placer.dev/workload-uid]: Forbidden"}},
		"a privileged container is valid (Pod Security judges it)": {w: st.Workload("w", st.Pod(func(p *corev1.PodSpec) {
			yes := true
			p.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		}))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateTemplate(tc.w)
			got := errs.ToAggregate()
			if len(tc.want) == 0 {
				if got != nil {
					t.Fatalf("ValidateTemplate() = %v, want valid", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("ValidateTemplate() = valid, want %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Error(), w) {
					t.Errorf("ValidateTemplate() = %v, want it to contain %q", got, w)
				}
			}
		})
	}
}

func TestStricter(t *testing.T) {
	cases := []struct{ a, b, want v1alpha1.PodSecurityLevel }{
		{v1alpha1.PodSecurityPrivileged, v1alpha1.PodSecurityBaseline, v1alpha1.PodSecurityBaseline},
		{v1alpha1.PodSecurityRestricted, v1alpha1.PodSecurityBaseline, v1alpha1.PodSecurityRestricted},
		{v1alpha1.PodSecurityPrivileged, "", v1alpha1.PodSecurityBaseline},
		{"", v1alpha1.PodSecurityPrivileged, v1alpha1.PodSecurityBaseline},
		{"nonsense", v1alpha1.PodSecurityRestricted, v1alpha1.PodSecurityRestricted},
	}
	for _, tc := range cases {
		if got := Stricter(tc.a, tc.b); got != tc.want {
			t.Errorf("Stricter(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestVerdicts: a Workload's template is judged once per generation, and
// again for a new generation, a new Workload of the same name, or after
// Forget.
func TestVerdicts(t *testing.T) {
	var c Verdicts
	w := st.Workload("w")
	w.Generation = 1
	first := c.For(w)
	if c.For(w.DeepCopy()) != first {
		t.Error("judged twice for one generation")
	}
	next := w.DeepCopy()
	next.Generation = 2
	second := c.For(next)
	if second == first {
		t.Error("a new generation kept the old verdict")
	}
	recreated := next.DeepCopy()
	recreated.UID = "recreated"
	third := c.For(recreated)
	if third == second {
		t.Error("a recreated Workload of the same name kept the old one's verdict")
	}
	overridden := c.ForOverridden(recreated, []string{"eu-mirror"})
	if overridden == third || c.ForOverridden(recreated.DeepCopy(), []string{"eu-mirror"}) != overridden {
		t.Error("the verdict on a template as overridden by a set of rules is not its own, once per generation")
	}
	c.Forget(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	if c.For(recreated) == third || c.ForOverridden(recreated, []string{"eu-mirror"}) == overridden {
		t.Error("Forget kept a verdict")
	}
}
