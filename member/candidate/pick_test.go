package candidate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/placer-dev/placer/internal/skew"
)

// versionServer serves /version as a member's API server answers it,
// each request the next of versions (by turns).
func versionServer(t *testing.T, versions ...string) (kubeconfig string, asked *atomic.Int32) {
	t.Helper()
	asked = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		n := asked.Add(1)
		_ = json.NewEncoder(w).Encode(version.Info{GitVersion: versions[int(n-1)%len(versions)]})
	}))
	t.Cleanup(srv.Close)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["m"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["m"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "m"}
	cfg.CurrentContext = "m"
	kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	return kubeconfig, asked
}

func TestOwnMinor(t *testing.T) {
	// This test binary is built with go.mod's k8s.io/kubernetes.
	if got, want := OwnMinor(), minorOf(skew.CandidateSchedulerVersion); got != want {
		t.Errorf("OwnMinor() = %q, want %q", got, want)
	}
}

// TestRunPicked: the paths of RunPicked that do not start another binary
// in this one's place (the end-to-end tests run those, on members of each
// supported minor version).
func TestRunPicked(t *testing.T) {
	t.Run("a member whose version needs another build, which is missing", func(t *testing.T) {
		kubeconfig, _ := versionServer(t, "v1.37.2")
		dir := t.TempDir()
		err := RunPicked(context.Background(), Options{Kubeconfig: kubeconfig, BinariesDir: dir})
		if err == nil || !strings.Contains(err.Error(), "placer-candidate-1.37") || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "v1.37.2") {
			t.Errorf("RunPicked: %v, want an error naming placer-candidate-1.37, %s and the member's version", err, dir)
		}
	})
	t.Run("started for another build than this one", func(t *testing.T) {
		kubeconfig, _ := versionServer(t, "v1.37.2")
		t.Setenv(envPicked, "v1.37.2")
		// The binary is there, but it is this one (built with v1.35.4).
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, skew.CandidateBinary("v1.37.2")), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		err := RunPicked(context.Background(), Options{Kubeconfig: kubeconfig, BinariesDir: dir})
		if err == nil || !strings.Contains(err.Error(), "kube-scheduler 1.35") {
			t.Errorf("RunPicked: %v, want an error naming this build's kube-scheduler 1.35", err)
		}
	})
	t.Run("a member no candidate scheduler may run against: it says why and stops", func(t *testing.T) {
		kubeconfig, _ := versionServer(t, "v1.34.2")
		err := RunPicked(context.Background(), Options{Kubeconfig: kubeconfig, BinariesDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "v1.34.2") || !strings.Contains(err.Error(), skew.CandidateSchedulerVersion) {
			t.Errorf("RunPicked: %v, want an error naming v1.34.2 and the candidate schedulers", err)
		}
	})
	t.Run("the member cannot be reached", func(t *testing.T) {
		kubeconfig, _ := versionServer(t, "v1.35.4")
		b, _ := os.ReadFile(kubeconfig)
		cfg, err := clientcmd.Load(b)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Clusters["m"].Server = "http://127.0.0.1:1"
		if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
			t.Fatal(err)
		}
		if err := RunPicked(context.Background(), Options{Kubeconfig: kubeconfig}); err == nil || !strings.Contains(err.Error(), "cannot read the member's version") {
			t.Errorf("RunPicked: %v, want cannot read the member's version", err)
		}
	})
}

// TestWaitForChange: a new version is believed once read twice in a row,
// never while the API servers of a rolling upgrade answer by turns.
func TestWaitForChange(t *testing.T) {
	config := func(kubeconfig string) *rest.Config {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	// 1.36 and 1.37 by turns: the first needs v1.35.4's build, the second not.
	kubeconfig, asked := versionServer(t, "v1.36.3", "v1.37.2")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool, 1)
	go func() { done <- waitForChange(ctx, config(kubeconfig), 5*time.Millisecond, "v1.36.3", "v1.35.4") }()
	for asked.Load() < 10 {
		select {
		case changed := <-done:
			t.Fatalf("waitForChange returned (changed: %t) after %d answers by turns; want it to wait", changed, asked.Load())
		case <-time.After(5 * time.Millisecond):
		}
	}
	cancel()
	if <-done {
		t.Error("after its context ended, waitForChange says the version changed")
	}

	// Upgraded for good: it returns after two answers of the new version.
	kubeconfig, asked = versionServer(t, "v1.37.2")
	if changed := waitForChange(context.Background(), config(kubeconfig), 5*time.Millisecond, "v1.36.3", "v1.35.4"); !changed || asked.Load() != 2 {
		t.Errorf("waitForChange: changed %t after %d answers, want true after 2", changed, asked.Load())
	}
}
