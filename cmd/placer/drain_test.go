package main

import (
	"bytes"
	"context"
	"k8s.io/client-go/tools/clientcmd"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/cordon"
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
		kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: name}
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
	key := types.NamespacedName{Namespace: "default", Name: "a"}

	taints := func() []v1alpha1.ClusterTaint {
		kc := &v1alpha1.KubernetesCluster{}
		if err := env.Client.Get(ctx, key, kc); err != nil {
			t.Fatal(err)
		}
		return kc.Spec.Taints
	}
	for range 2 {
		if err := cordon.Drain(ctx, env.Client, key); err != nil {
			t.Fatal(err)
		}
	}
	if got := taints(); len(got) != 1 || !cordon.IsDrainTaint(got[0]) || got[0].TimeAdded == nil {
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
	onA.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted}}
	onA.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Replicas: 2}}
	if err := env.Client.Status().Update(ctx, onA); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("follow returned while copies are left on the cluster: %v\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	// Before on-a's copies go, another Workload moves away with no
	// cluster to take it yet: its copies on a count.
	unplaced := place("unplaced", "b")
	unplaced.Status.ClusterRef = nil
	unplaced.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted}}
	unplaced.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Replicas: 1}}
	if err := env.Client.Status().Update(ctx, unplaced); err != nil {
		t.Fatal(err)
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
	for _, want := range []string{"Workload default/on-a: placed there", "Workload default/on-a: moved to default/b (Tainted); 2 replica(s) still there to clean up", "Workload default/on-a runs in default/b; nothing of it left in default/a",
		"Workload default/unplaced: moved to nowhere yet (Tainted); 1 replica(s) still there to clean up", "Workload default/unplaced deleted", "drained"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "on-b") {
		t.Errorf("output names a Workload of another cluster:\n%s", out.String())
	}

	// placer cordon, as a user runs it: unschedulable, and uncordon
	// clears it with the drain taint.
	cordonCmd := newCordonCommand()
	cordonCmd.SetArgs([]string{"--kubeconfig", env.KubeconfigFile(t, "platform-admin", "system:masters"), "default/a"})
	var cordoned bytes.Buffer
	cordonCmd.SetOut(&cordoned)
	if err := cordonCmd.ExecuteContext(ctx); err != nil {
		t.Fatal(err)
	}
	unschedulable := func() bool {
		kc := &v1alpha1.KubernetesCluster{}
		if err := env.Client.Get(ctx, key, kc); err != nil {
			t.Fatal(err)
		}
		return kc.Spec.Unschedulable
	}
	if !unschedulable() || !strings.Contains(cordoned.String(), "KubernetesCluster default/a cordoned") {
		t.Errorf("placer cordon default/a: unschedulable %v, output %q", unschedulable(), cordoned.String())
	}
	// As kubectl: --context picks the context, whose namespace names the
	// cluster when neither -n nor the argument does.
	if err := cordon.Uncordon(ctx, env.Client, key); err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.KubeconfigFile(t, "platform-admin-2", "system:masters")
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := kc.Contexts[kc.CurrentContext]
	current.Namespace = "elsewhere"
	team := *current
	team.Namespace = "default"
	kc.Contexts["team"] = &team
	if err := clientcmd.WriteToFile(*kc, kubeconfig); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) error {
		cmd := newCordonCommand()
		cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig}, args...))
		cmd.SetOut(&bytes.Buffer{})
		return cmd.ExecuteContext(ctx)
	}
	if err := run("a"); err == nil || !strings.Contains(err.Error(), "elsewhere/a") {
		t.Errorf("placer cordon a in a context of namespace elsewhere: %v, want elsewhere/a not found", err)
	}
	if err := run("--context", "team", "a"); err != nil || !unschedulable() {
		t.Errorf("placer cordon --context team a: %v, unschedulable %v; want default/a cordoned", err, unschedulable())
	}
	if err := cordon.Uncordon(ctx, env.Client, key); err != nil {
		t.Fatal(err)
	}
	// -n names the namespace, and -o prints the cluster as kubectl does.
	var printed bytes.Buffer
	cmd := newCordonCommand()
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-n", "default", "-o", "jsonpath={.metadata.namespace}/{.metadata.name} {.spec.unschedulable}", "a"})
	cmd.SetOut(&printed)
	if err := cmd.ExecuteContext(ctx); err != nil || printed.String() != "default/a true" {
		t.Errorf("placer cordon -n default -o jsonpath=… a: %v, printed %q, want \"default/a true\"", err, printed.String())
	}
	printed.Reset()
	cmd = newUncordonCommand()
	cmd.SetArgs([]string{"--kubeconfig", kubeconfig, "-n", "default", "-o", "name", "a"})
	cmd.SetOut(&printed)
	if err := cmd.ExecuteContext(ctx); err != nil || strings.TrimSpace(printed.String()) != "kubernetescluster.compute.placer.dev/a" {
		t.Errorf("placer uncordon -o name: %v, printed %q", err, printed.String())
	}
	if got := taints(); slices.ContainsFunc(got, cordon.IsDrainTaint) || unschedulable() {
		t.Errorf("after uncordon: taints %+v, unschedulable %v", got, unschedulable())
	}
}

// TestStayOf: what keeps following a cluster, in each mode.
func TestStayOf(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	served := servedBy(scheduler.DefaultConfiguration())
	left := func(w *v1alpha1.Workload) {
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a"}, Reason: v1alpha1.ReasonTainted}}
		w.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: "a"}, Replicas: 1}}
	}
	cases := []struct {
		name string
		w    *v1alpha1.Workload
		want stay
		// done in the modes drained, moved, cleaned.
		done [3]bool
	}{
		{"placed there", st.Workload("w", st.PlacedOn("a")), placedThere, [3]bool{false, false, true}},
		{"waiting to move", st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
			w.Status.SetConditions(xpv2.Condition{Type: v1alpha1.TypeScheduled, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonMovePending})
		}), waitingToMove, [3]bool{false, true, true}},
		{"another scheduler's", st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "other" }), foreign, [3]bool{false, true, true}},
		{"ran to its end there", st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
			complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "done", w.Generation)
			w.Status.SetConditions(complete, ready)
		}), endedThere, [3]bool{true, true, true}},
		{"moved, copies left", st.Workload("w", st.PlacedOn("b"), left), copiesLeft, [3]bool{false, true, false}},
		{"deleted, its member not answering", st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) { w.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
			copiesLeft, [3]bool{false, true, false}},
		{"elsewhere", st.Workload("w", st.PlacedOn("b")), none, [3]bool{true, true, true}},
	}
	for _, tc := range cases {
		got, why := stayOf(tc.w, key, served)
		if got != tc.want || (got == none) != (why == "") {
			t.Errorf("%s: stayOf = %v %q, want %v", tc.name, got, why, tc.want)
		}
		for i, u := range []until{drained, moved, cleaned} {
			if d := u.done(got); d != tc.done[i] {
				t.Errorf("%s: done in mode %d = %v, want %v", tc.name, u, d, tc.done[i])
			}
		}
	}
}
