// Package testenv starts a real kube-apiserver and etcd (envtest) with
// placer's CRDs, built from the pinned modules into bin/.
package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/cluster/local"
)

// RepoRoot is the folder holding go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, ok := local.RepoRoot()
	if !ok {
		t.Fatal("cannot find go.mod above the working directory")
	}
	return root
}

// Scheme knows the built-in kinds and placer's.
func Scheme() *runtime.Scheme { return apis.NewScheme() }

// Env is a running API server with placer's CRDs installed.
type Env struct {
	Config *rest.Config
	Client client.Client

	env *envtest.Environment
}

// UserConfig returns a client configuration of a user authenticated by a
// client certificate, with no rights but those the test grants it.
func (e *Env) UserConfig(t testing.TB, name string, groups ...string) *rest.Config {
	t.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return u.Config()
}

// KubeconfigFile writes a kubeconfig of a user authenticated by a client
// certificate (in groups) into the test's temporary directory, for a
// command run as a user runs it, and returns its path.
func (e *Env) KubeconfigFile(t testing.TB, name string, groups ...string) string {
	t.Helper()
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Start starts the API server and stops it when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	return StartVersion(t, local.KubernetesVersion)
}

// StartVersion starts an API server of a Kubernetes version of
// local.KubernetesVersions (etcd is the same for all), as Start does.
func StartVersion(t testing.TB, version string) *Env {
	t.Helper()
	root := RepoRoot(t)
	binDir := os.Getenv("PLACER_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(root, "bin")
	}
	e := &envtest.Environment{
		ControlPlane: envtest.ControlPlane{
			APIServer: &envtest.APIServer{Path: filepath.Join(binDir, "k8s", version, "kube-apiserver")},
			Etcd:      &envtest.Etcd{Path: filepath.Join(local.KubernetesBinDir(binDir), "etcd")},
		},
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "management"), filepath.Join(root, "config", "crd", "member"), filepath.Join(root, "config", "crd", "inventory")},
		ErrorIfCRDPathMissing:    true,
		BinaryAssetsDirectory:    local.KubernetesBinDir(binDir),
		DownloadBinaryAssets:     false,
		ControlPlaneStopTimeout:  0,
		AttachControlPlaneOutput: false,
	}
	cfg, err := e.Start()
	if err != nil {
		t.Fatalf("start envtest (binaries from %s; run 'make tools'): %v", e.BinaryAssetsDirectory, err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Config: cfg, Client: c, env: e}
}
