package skew

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestCandidateFor(t *testing.T) {
	for v, want := range map[string]string{
		"v1.35.4": "v1.35.4", "v1.35.0-eks-1234": "v1.35.4", "v1.36.1": "v1.35.4", "v1.36.0-gke.100": "v1.35.4",
		"v1.37.2": "v1.37.2", "v1.37.0+k3s1": "v1.37.2", "v1.38.0": "v1.37.2",
		"v1.34.9": "", "v1.39.0": "", "v2.35.0": "", "not-a-version": "",
	} {
		if got := CandidateFor(v); got != want {
			t.Errorf("CandidateFor(%s) = %q, want %q", v, got, want)
		}
		msg := UnsupportedVersion(v)
		if (msg == "") != (want != "") {
			t.Errorf("%s: %q, want supported %v", v, msg, want != "")
		}
		if want == "" && (!strings.Contains(msg, v) || !strings.Contains(msg, "v1.35.4") || !strings.Contains(msg, "v1.37.2")) {
			t.Errorf("%s: the message does not name the member's version and the candidate schedulers': %q", v, msg)
		}
	}
	if got := SupportedMinors(); got != "v1.35 to v1.38" {
		t.Errorf("SupportedMinors() = %q", got)
	}
}

// TestCandidateSchedulerVersion: the versions the skew check assumes are
// the ones go.mod and hack/candidate's modules build the candidate schedulers
// from, oldest first.
func TestCandidateSchedulerVersion(t *testing.T) {
	kubernetes := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`)
	built := func(gomod string) string {
		b, err := os.ReadFile(gomod)
		if err != nil {
			t.Fatal(err)
		}
		m := kubernetes.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s requires no k8s.io/kubernetes", gomod)
		}
		return string(m[1])
	}
	if v := built(filepath.Join("..", "..", "go.mod")); v != CandidateSchedulerVersion || CandidateSchedulers[0] != v {
		t.Errorf("go.mod builds k8s.io/kubernetes %s; CandidateSchedulerVersion is %s, CandidateSchedulers[0] %s", v, CandidateSchedulerVersion, CandidateSchedulers[0])
	}
	for i, want := range CandidateSchedulers[1:] {
		v := utilversion.MustParseSemantic(want)
		if v.Minor() <= utilversion.MustParseSemantic(CandidateSchedulers[i]).Minor() {
			t.Errorf("CandidateSchedulers are not oldest first: %v", CandidateSchedulers)
		}
		gomod := filepath.Join("..", "..", "hack", "candidate", fmt.Sprintf("%d.%d", v.Major(), v.Minor()), "go.mod")
		if got := built(gomod); got != want {
			t.Errorf("%s builds k8s.io/kubernetes %s, CandidateSchedulers names %s", gomod, got, want)
		}
	}
}
