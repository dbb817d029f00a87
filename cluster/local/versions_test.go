package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// TestKubernetesVersionsBuilt: every version a local cluster may run is
// one the Makefile builds, each other than go.mod's from its own module
// requiring exactly that k8s.io/kubernetes.
func TestKubernetesVersionsBuilt(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MEMBER_K8S_VERSIONS := (.*)$`).FindSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile sets no MEMBER_K8S_VERSIONS")
	}
	if got, want := strings.Fields(string(m[1])), KubernetesVersions[1:]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the Makefile builds members of %v, KubernetesVersions names %v", got, want)
	}
	for _, v := range KubernetesVersions[1:] {
		sv := utilversion.MustParseSemantic(v)
		gomod := filepath.Join("..", "..", "hack", "kube", fmt.Sprintf("%d.%d", sv.Major(), sv.Minor()), "go.mod")
		b, err := os.ReadFile(gomod)
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^\s*(require )?k8s\.io/kubernetes ` + regexp.QuoteMeta(v) + `\b`).Match(b) {
			t.Errorf("%s does not require k8s.io/kubernetes %s", gomod, v)
		}
	}
}

// TestUnknownKubernetesVersion: a version the Makefile does not build is
// refused, naming those it does.
func TestUnknownKubernetesVersion(t *testing.T) {
	_, err := Start(context.Background(), Options{Name: "old", Dir: t.TempDir(), KubernetesVersion: "v1.30.0"})
	if err == nil || !strings.Contains(err.Error(), "v1.30.0") || !strings.Contains(err.Error(), KubernetesVersion) {
		t.Errorf("Start: %v, want an error naming v1.30.0 and the versions built", err)
	}
}
