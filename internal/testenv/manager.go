package testenv

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/member/agent"
)

// RunManager builds a controller-runtime manager for cfg, lets setup add
// controllers to it, runs it, and stops it when the test ends.
func RunManager(t *testing.T, cfg *rest.Config, setup func(ctrl.Manager) error) {
	t.Helper()
	StartManager(t, cfg, setup)
}

// StartManager is RunManager that also returns a stop function, for tests
// that stop and restart a manager; stopping twice is harmless.
func StartManager(t *testing.T, cfg *rest.Config, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	ctrl.SetLogger(testr.New(t))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// As the components' caches are (cmd/placer newManager).
		Cache: cache.Options{DefaultTransform: cache.TransformStripManagedFields()},
		// Tests run the same controllers against several clusters in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := setup(mgr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Watcher returns a client that can also watch, for WaitFor.
func Watcher(t testing.TB, cfg *rest.Config) client.WithWatch {
	t.Helper()
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return wc
}

// Target is a started target cluster with the PodChaperon CRD installed,
// its nodes Ready and its default service account present.
type Target struct {
	*local.Cluster
	Clientset kubernetes.Interface
}

// StartTarget starts a local target cluster with the given nodes and the
// member's CRDs, and stops it when the test ends.
func StartTarget(t *testing.T, opts local.Options, nodes ...local.Node) *Target {
	t.Helper()
	target := StartCluster(t, opts, nodes...)
	if err := agent.EnsureCRDs(target.RESTConfig()); err != nil {
		t.Fatal(err)
	}
	return target
}

// StartCluster starts a local cluster with the given nodes and nothing of
// placer, as a new user's, and stops it when the test ends.
func StartCluster(t *testing.T, opts local.Options, nodes ...local.Node) *Target {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := local.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.AddNodes(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	if err := local.WaitForNodesReady(ctx, cs, len(nodes)); err != nil {
		t.Fatal(err)
	}
	if err := local.WaitForServiceAccount(ctx, cs, "default", "default"); err != nil {
		t.Fatal(err)
	}
	return &Target{Cluster: c, Clientset: cs}
}

// StartAgent runs placer's agent (chaperon and summary controllers) in a
// target cluster until the test ends or stop is called; a zero summary
// interval is 200 ms.
func StartAgent(t *testing.T, cfg *rest.Config, o agent.Options) (stop func()) {
	t.Helper()
	if o.SummaryInterval == 0 {
		o.SummaryInterval = 200 * time.Millisecond
	}
	return StartManager(t, cfg, func(mgr ctrl.Manager) error { return agent.Setup(mgr, o) })
}
