package examples

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

func TestEveryWorkloadStatesWhereItLands(t *testing.T) {
	exs, err := Workloads()
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) < 12 {
		t.Fatalf("%d Workload examples, want at least 12", len(exs))
	}
	seen := map[string]bool{}
	for _, ex := range exs {
		if ex.Expect == "" || ex.Why == "" {
			t.Errorf("%s: expect %q, why %q", ex.File, ex.Expect, ex.Why)
		}
		if seen[ex.Workload.Name] {
			t.Errorf("%s: Workload name %s used twice", ex.File, ex.Workload.Name)
		}
		seen[ex.Workload.Name] = true
	}
}

// TestRegistrationExampleHoldsNoSecret: the README creates the member's
// kubeconfig Secret, then applies examples/00-kubernetescluster.yaml; a
// Secret in that file would replace the real one with a placeholder.
func TestRegistrationExampleHoldsNoSecret(t *testing.T) {
	b, err := files.ReadFile("00-kubernetescluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	for _, doc := range strings.Split(string(b), "\n---\n") {
		tm := &metav1.TypeMeta{}
		if err := yaml.Unmarshal([]byte(doc), tm); err != nil {
			t.Fatal(err)
		}
		if tm.Kind == "Secret" {
			t.Errorf("examples/00-kubernetescluster.yaml holds a Secret: applied after the README's 'kubectl create secret', it would replace the real kubeconfig")
		}
		if tm.Kind == "KubernetesCluster" {
			kinds++
		}
	}
	if kinds != 1 {
		t.Errorf("examples/00-kubernetescluster.yaml holds %d KubernetesClusters, want 1", kinds)
	}
}
