package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/placer-dev/placer/internal/release"
	"github.com/placer-dev/placer/internal/skew"
)

// placerBinary is the placer binary built for this run: each member runs
// its candidate scheduler as a process of its own, as in a real cluster
// (kube-scheduler keeps process-wide state and runs once per process).
// Beside it, as in placer's image, the candidate schedulers built with
// other kube-scheduler versions (hack/candidate), which 'placer
// candidate-scheduler' starts for members that need them.
var placerBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "placer-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	placerBinary = filepath.Join(dir, "placer")
	// Stamped as a release stamps it: each candidate scheduler's
	// kubernetes_build_info says which build runs.
	build := exec.Command("go", "build", "-ldflags", release.KubeLDFlags(skew.CandidateSchedulerVersion), "-o", placerBinary, "github.com/placer-dev/placer/cmd/placer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot build placer:", err)
		os.Exit(1)
	}
	for _, v := range skew.CandidateSchedulers[1:] {
		out := filepath.Join(dir, skew.CandidateBinary(v))
		if err := release.BuildCandidate(context.Background(), filepath.Join("..", ".."), v, "linux/"+runtime.GOARCH, "e2e", out); err != nil {
			fmt.Fprintln(os.Stderr, "cannot build a candidate scheduler:", err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
