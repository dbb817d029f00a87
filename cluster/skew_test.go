package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestUnsupportedVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v1.35.4": true, "v1.35.0-eks-1234": true, "v1.36.1": true, "v1.36.0-gke.100": true,
		"v1.34.9": false, "v1.37.0": false, "v2.35.0": false, "not-a-version": false,
	} {
		msg := UnsupportedVersion(v)
		if (msg == "") != ok {
			t.Errorf("%s: %q, want supported %v", v, msg, ok)
		}
		if !ok && (!strings.Contains(msg, v) || !strings.Contains(msg, CandidateSchedulerVersion)) {
			t.Errorf("%s: the message does not name both versions: %q", v, msg)
		}
	}
}

// TestCandidateSchedulerVersion: the version the skew check assumes is the
// one go.mod builds the candidate scheduler from.
func TestCandidateSchedulerVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(b)
	if m == nil || string(m[1]) != CandidateSchedulerVersion {
		t.Errorf("go.mod builds k8s.io/kubernetes %s, CandidateSchedulerVersion is %s", m, CandidateSchedulerVersion)
	}
}
