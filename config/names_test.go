package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// takenShortNames are short names other projects' kinds use in clusters
// placer shares: Kueue's Workload is wl, and Kubernetes' own
// scheduling.k8s.io Workload (alpha in 1.35) takes workloads as a plural.
var takenShortNames = []string{"wl", "workload", "workloads"}

// TestNames: every kind of placer's is in the category placer (kubectl
// get placer lists them all), no short name is one another project's kind
// uses, and no two of placer's kinds share one; a Workload is reached by
// its own short name, pwl.
func TestNames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("crd", "*", "*.placer.dev_*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("CRDs under config/crd: %v (%v), want 5", files, err)
	}
	owner := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		n := crd.Spec.Names
		if !slices.Contains(n.Categories, "placer") {
			t.Errorf("%s: categories %v, want placer among them", crd.Name, n.Categories)
		}
		for _, s := range n.ShortNames {
			if slices.Contains(takenShortNames, s) {
				t.Errorf("%s: short name %q is another project's kind's", crd.Name, s)
			}
			if other, ok := owner[s]; ok {
				t.Errorf("%s and %s share the short name %q", other, crd.Name, s)
			}
			owner[s] = crd.Name
		}
	}
	if owner["pwl"] != "workloads.compute.placer.dev" {
		t.Errorf("short name pwl is %q's, want workloads.compute.placer.dev's", owner["pwl"])
	}
}
