package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// syncBuffer is a bytes.Buffer safe to read while a command writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDrain drains a cluster against a real API server: the taint is set
// once, --wait follows the Workloads until none is placed there or has
// copies left there, and uncordon takes the taint away. The scheduler does
// not run here: the test moves the Workloads as it would.
func TestDrain(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		kc := st.Cluster(name)
		kc.Spec.ConnectionSecretRef.Name = name
		kc.Status = v1alpha1.KubernetesClusterStatus{}
		if err := env.Client.Create(ctx, kc); err != nil {
			t.Fatal(err)
		}
	}
	place := func(name, cluster string) *v1alpha1.Workload {
		w := st.Workload(name)
		w.UID, w.Generation = "", 0
		if err := env.Client.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: cluster, Namespace: "default"}
		if err := env.Client.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	onA := place("on-a", "a")
	place("on-b", "b")
	// Moved away, but no cluster took it yet: its copies on a still count.
	unplaced := place("unplaced", "a")
	unplaced.Status.ClusterRef = nil
	unplaced.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted, Remaining: 1}}
	if err := env.Client.Status().Update(ctx, unplaced); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "default", Name: "a"}

	taints := func() []v1alpha1.ClusterTaint {
		kc := &v1alpha1.KubernetesCluster{}
		if err := env.Client.Get(ctx, key, kc); err != nil {
			t.Fatal(err)
		}
		return kc.Spec.Taints
	}
	for range 2 {
		if err := drain(ctx, env.Client, key); err != nil {
			t.Fatal(err)
		}
	}
	if got := taints(); len(got) != 1 || !isDrainTaint(got[0]) || got[0].TimeAdded == nil {
		t.Fatalf("taints after draining twice = %+v, want one %s:NoExecute with a timeAdded", got, v1alpha1.TaintClusterDraining)
	}

	wc := testenv.Watcher(t, env.Config)
	out := &syncBuffer{}
	done := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go func() { done <- follow(wctx, out, wc, key, drained, servedBy(scheduler.DefaultConfiguration())) }()
	select {
	case err := <-done:
		t.Fatalf("follow returned while a Workload is on the cluster: %v\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	// The move: placed on b, two copies left on a.
	onA.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "b", Namespace: "default"}
	onA.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted, Remaining: 2}}
	if err := env.Client.Status().Update(ctx, onA); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("follow returned while copies are left on the cluster: %v\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	onA.Status.LeftClusters = nil
	if err := env.Client.Status().Update(ctx, onA); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("follow returned while an unplaced Workload's copies are left on the cluster: %v\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	if err := env.Client.Delete(ctx, unplaced); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("follow: %v\n%s", err, out.String())
	}
	for _, want := range []string{"Workload default/on-a: placed there", "Workload default/on-a: moved to default/b (Tainted); 2 replica(s) left there to clean up", "Workload default/on-a runs in default/b; nothing of it left in default/a",
		"Workload default/unplaced: moved to nowhere yet (Tainted); 1 replica(s) left there to clean up", "Workload default/unplaced deleted", "drained"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "on-b") {
		t.Errorf("output names a Workload of another cluster:\n%s", out.String())
	}

	if err := uncordon(ctx, env.Client, key); err != nil {
		t.Fatal(err)
	}
	if got := taints(); slices.ContainsFunc(got, isDrainTaint) {
		t.Errorf("taints after uncordon = %+v", got)
	}
}
