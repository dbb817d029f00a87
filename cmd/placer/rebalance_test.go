package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestRebalanceCommand asks placed Workloads to rebalance against a real
// API server, then follows them: one moves (as the scheduler would write
// it), one stays; a pending one is not asked.
func TestRebalanceCommand(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	c := testenv.Watcher(t, env.Config)
	createIn := func(ns, name, on string) types.NamespacedName {
		t.Helper()
		w := st.Workload(name)
		w.UID, w.Generation, w.Namespace = "", 0, ns
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		if on != "" {
			w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: on, Namespace: "default"}
			if err := c.Status().Update(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		return types.NamespacedName{Namespace: ns, Name: name}
	}
	create := func(name, on string) types.NamespacedName { return createIn("default", name, on) }
	// Namespaces followed before default (by name): one whose Workload
	// stays must not hold back the others.
	for _, ns := range []string{"a-held", "b-moves"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	held, elsewhere := createIn("a-held", "held", "b"), createIn("b-moves", "elsewhere", "b")
	moves, stays, pending, early := create("moves", "b"), create("stays", "b"), create("pending", ""), create("early", "b")
	// A Divided Workload, its shares in b and c.
	divided := st.Workload("divided", st.Replicas(12), func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided}
	})
	divided.UID, divided.Generation = "", 0
	if err := c.Create(ctx, divided); err != nil {
		t.Fatal(err)
	}
	setShares := func(shares string, moving bool) {
		t.Helper()
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(divided), w); err != nil {
			t.Error(err)
			return
		}
		w.Status.Shares, w.Status.Rebalancing = shares, nil
		if moving {
			w.Status.Rebalancing = &v1alpha1.Rebalancing{Generation: w.Generation, Time: metav1.Now(),
				Shares: []v1alpha1.ClusterReplicas{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Replicas: 4}}}
		}
		if err := c.Status().Update(ctx, w); err != nil {
			t.Error(err)
		}
	}
	setShares("b=6,c=6", false)
	spread := client.ObjectKeyFromObject(divided)
	now := time.Now()
	was, err := askRebalance(ctx, c, []types.NamespacedName{moves, stays, pending, early, spread, held, elsewhere}, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(was) != 6 || was[moves] != "default/b" || was[stays] != "default/b" || was[early] != "default/b" || was[spread] != "shares b=6,c=6" {
		t.Errorf("asked %v, want moves, stays and early, all on default/b, and divided on shares b=6,c=6", was)
	}
	// One moves before the command follows: the follow's list sees it.
	moveToA := func(key types.NamespacedName) {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, key, w); err != nil {
			return
		}
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "a", Namespace: "default"}
		_ = c.Status().Update(ctx, w)
	}
	moveToA(early)
	for key, want := range map[types.NamespacedName]string{moves: now.UTC().Format(time.RFC3339), pending: ""} {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, key, w); err != nil {
			t.Fatal(err)
		}
		if got := w.Annotations[v1alpha1.AnnotationRebalance]; got != want {
			t.Errorf("%s annotated %q, want %q", key, got, want)
		}
	}
	// The scheduler moves one of them while the command follows.
	go func() {
		time.Sleep(500 * time.Millisecond)
		moveToA(moves)
		moveToA(elsewhere)
		// The Divided one moves back: under way, it has not moved yet.
		setShares("a=4,b=6,c=6", true)
		time.Sleep(500 * time.Millisecond)
		setShares("a=4,b=4,c=4", false)
	}()
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := followRebalance(fctx, &out, c, was); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Workload default/moves moved from default/b to default/a", "Workload default/early moved from default/b to default/a", "Workload default/stays stays on default/b",
		"Workload default/divided moved from shares b=6,c=6 to shares a=4,b=4,c=4",
		"Workload b-moves/elsewhere moved from default/b to default/a", "Workload a-held/held stays on default/b"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Names and --all together, or neither, are refused.
	for _, args := range [][]string{{}, {"--all", "moves"}} {
		cmd := newRebalanceCommand()
		cmd.SetArgs(args)
		cmd.SetOut(&bytes.Buffer{})
		if err := cmd.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "--all") {
			t.Errorf("rebalance %v: %v, want refused naming --all", args, err)
		}
	}
}
