package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// placerBinary is the placer binary built for this run: each member runs
// its candidate scheduler as a process of its own, as in a real cluster
// (kube-scheduler keeps process-wide state and runs once per process).
var placerBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "placer-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	placerBinary = filepath.Join(dir, "placer")
	build := exec.Command("go", "build", "-o", placerBinary, "github.com/placer-dev/placer/cmd/placer")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot build placer:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
