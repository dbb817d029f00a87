package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestExplain explains a Workload against a real API server: a cluster
// that is not Ready, one whose scheduler rejected the candidates, and the
// chosen one, with every predicate's verdict and the scores.
func TestExplain(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	for _, kc := range []*v1alpha1.KubernetesCluster{
		st.Cluster("east", st.Labels("region", "us-east"), st.Capacity("16", "64Gi", "2", "4Gi", "8", "32Gi")),
		st.Cluster("west", st.Labels("region", "us-west"), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("down", st.Labels("region", "us-east"), st.NotReady(v1alpha1.ReasonUnreachable), st.Capacity("16", "64Gi", "0", "0", "8", "32Gi")),
		st.Cluster("tiny", st.Labels("region", "eu"), st.Capacity("1", "1Gi", "0", "0", "1", "1Gi")),
	} {
		status := kc.Status
		for i := range status.Conditions {
			status.Conditions[i].LastTransitionTime = metav1.Now()
		}
		kc.Spec.ConnectionSecretRef.Name = kc.Name
		if err := env.Client.Create(ctx, kc); err != nil {
			t.Fatal(err)
		}
		kc.Status = status
		if err := env.Client.Status().Update(ctx, kc); err != nil {
			t.Fatal(err)
		}
	}
	w := st.Workload("web", st.Requests("2", "1Gi"), st.PreferredClusterAffinity(50, st.Term(st.Expr("region", "In", "us-west"))))
	w.Spec.Overrides = []v1alpha1.Override{{Name: "eu-mirror", ClusterSelector: st.Term(st.Expr("region", "In", "eu")), Image: &v1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}}}
	w.UID, w.Generation = "", 0
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "east", Namespace: "default"}
	w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "west", Namespace: "default"}, Reason: v1alpha1.ReasonUnschedulable,
		Message: "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.", Generation: w.Generation,
		Attempts: 2, RetryAfter: &metav1.Time{Time: time.Now().Add(time.Hour)}}}
	w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "down", Namespace: "default"}, Reason: v1alpha1.ReasonUnreachable,
		Message: "the cluster does not answer"}}
	w.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: "down", Namespace: "default"}, Replicas: 2}}
	w.Status.Replicas, w.Status.ReadyReplicas = 2, 2
	w.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: "Available", LastTransitionTime: metav1.Now(), Message: "2 of 2 replicas ready in east"})
	if err := env.Client.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}

	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	out := &bytes.Buffer{}
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "web"}); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"placed on:   default/east (2/2 replicas ready)",
		"default/east: feasible, rank 1",
		"handshake: committed; every replica ready",
		"ResourceAllocation",
		"default/west: not feasible",
		"HandshakeRejected      FAIL",
		"handshake: rejected (Unschedulable): 0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. (rejection 2; tried again at ",
		"handshake: left (Unreachable): the cluster does not answer; 2 replica(s) still there to clean up",
		"default/down: not feasible",
		"ClusterReady           FAIL",
		"default/tiny: not feasible",
		"ResourceFit            FAIL",
		"overrides: eu-mirror (app image mirror.eu.example.com/library/pause)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain output lacks %q", want)
		}
	}
	if n := strings.Count(got, "overrides: none apply"); n != 3 {
		t.Errorf("%d clusters without overrides, want 3 (all but tiny)", n)
	}
	// Every predicate's verdict is there, for every cluster, failed or not.
	if n := strings.Count(got, "ClusterSelector        pass"); n != 4 {
		t.Errorf("ClusterSelector verdicts = %d, want 4 (one per cluster)", n)
	}
	// Tenancy and Pod Security are explained like any predicate.
	for _, p := range []string{"ClusterTenancy", "PodSecurity"} {
		if n := len(regexp.MustCompile(`(?m)^\s*`+p+`\s+pass`).FindAllString(got, -1)); n != 4 {
			t.Errorf("%s verdicts = %d, want 4 (one per cluster)", p, n)
		}
	}

	// A foreign schedulerName is explained as such.
	other := st.Workload("ext", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "someone-else" })
	other.UID, other.Generation = "", 0
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := explain(ctx, out, env.Client, profiles, types.NamespacedName{Namespace: "default", Name: "ext"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `schedulerName "someone-else" is not served by placer's scheduler`) {
		t.Errorf("foreign scheduler not explained:\n%s", out.String())
	}
}

func TestCommandNameAsKubectlPlugin(t *testing.T) {
	if got := commandName("/usr/local/bin/kubectl-placer"); got != "kubectl placer" {
		t.Errorf("as kubectl-placer: %q", got)
	}
	if got := commandName("./placer"); got != "placer" {
		t.Errorf("as placer: %q", got)
	}
}
