package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
)

// The baselines a user would compare placer with, each in a namespace of
// its own: the same pods straight into member-0 (its kube-scheduler), the
// same pods round-robin over every member, and a Deployment per item in
// member-0 (its controller manager makes the pods). Their creating
// clients share one token bucket: the same offered rate as placer's.
const (
	nsBaseline    = "baseline"
	nsSpread      = "baseline-spread"
	nsDeployments = "deployments"
)

// baselineNamespaces are the baselines' namespaces, in the order they run.
var baselineNamespaces = []string{nsBaseline, nsSpread, nsDeployments}

// baselineKind says how a baseline namespace's pods map to records: one
// record per bare pod, or one per Deployment (by its pods' group label).
var baselineKind = map[string]string{nsBaseline: "pod", nsSpread: "pod", nsDeployments: "deployment", nsKarmada: "deployment", nsKarmadaDivided: "deployment"}

// isBaseline reports whether a phase is one of the baselines.
func isBaseline(phase string) bool { return baselineKind[phase] != "" }

// recordOf maps a baseline pod to its record's name and the replica it
// is, and ok false for a pod of no baseline.
func recordOf(p *corev1.Pod) (name, replica string, ok bool) {
	switch baselineKind[p.Namespace] {
	case "pod":
		return p.Name, "0", true
	case "deployment":
		return p.Labels["group"], p.Name, p.Labels["group"] != ""
	}
	return "", "", false
}

// baselinePhase is one baseline: its namespace, what it is, and how it
// creates an item (records added by the caller).
type baselinePhase struct {
	ns, what string
	create   func(ctx context.Context, it item, i int) error
}

// baselines builds the baseline phases over the members' clients, which
// share the benchmark's client rate.
func baselines(f *fleet, o options) []baselinePhase {
	limiter := flowcontrol.NewTokenBucketRateLimiter(float32(o.qps), o.burst)
	clients := make([]kubernetes.Interface, len(f.members))
	for i, m := range f.members {
		cfg := m.RESTConfig()
		cfg.RateLimiter = limiter
		clients[i] = kubernetes.NewForConfigOrDie(cfg)
	}
	pods := func(ns string, member func(i int) int) func(context.Context, item, int) error {
		return func(ctx context.Context, it item, i int) error {
			for r := range it.replicas {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName(it, r), Labels: map[string]string{"group": it.name}}, Spec: podSpec}
				if _, err := clients[member(i*it.replicas+r)].CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					return err
				}
			}
			return nil
		}
	}
	// A Deployment per item; to Karmada, labelled with the member its
	// policies place it in, round-robin.
	deployments := func(ns string, c kubernetes.Interface) func(context.Context, item, int) error {
		return func(ctx context.Context, it item, i int) error {
			var meta map[string]string
			if ns == nsKarmada {
				meta = map[string]string{labelKarmadaMember: f.members[i%len(f.members)].Name()}
			}
			return createDeployment(ctx, c, ns, it, meta)
		}
	}
	out := []baselinePhase{
		{nsBaseline, "stock kube-scheduler, pods created in member-0", pods(nsBaseline, func(int) int { return 0 })},
		{nsSpread, fmt.Sprintf("stock kube-schedulers, the same pods round-robin over the %d members", len(f.members)), pods(nsSpread, func(i int) int { return i % len(clients) })},
		{nsDeployments, "a Deployment per item in member-0: its controller manager, then its kube-scheduler", deployments(nsDeployments, clients[0])},
	}
	if f.karmada != nil {
		out = append(out, baselinePhase{nsKarmada, fmt.Sprintf("Karmada %s: a Deployment per item in its API server, a PropagationPolicy placing it in one member, round-robin over the %d, pushed there; the member's controller manager, then its kube-scheduler", karmadaVersion, len(f.members)),
			deployments(nsKarmada, f.karmada.client(limiter))})
	}
	return out
}

// karmadaDivided is the divided measure's peer, with -karmada: a
// Deployment per item in Karmada's API server, divided over the members
// by their room.
func karmadaDivided(f *fleet, o options) []baselinePhase {
	if f.karmada == nil {
		return nil
	}
	c := f.karmada.client(flowcontrol.NewTokenBucketRateLimiter(float32(o.qps), o.burst))
	return []baselinePhase{{nsKarmadaDivided, fmt.Sprintf("Karmada %s: a Deployment per item in its API server, Divided over the %d members, weighted by their available replicas", karmadaVersion, len(f.members)),
		func(ctx context.Context, it item, _ int) error {
			return createDeployment(ctx, c, nsKarmadaDivided, it, nil)
		}}}
}

// createDeployment creates an item's Deployment, its pods labelled with
// the item's name.
func createDeployment(ctx context.Context, c kubernetes.Interface, ns string, it item, labels map[string]string) error {
	sel := map[string]string{"group": it.name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: it.name, Labels: labels}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(it.replicas)),
		Selector: &metav1.LabelSelector{MatchLabels: sel},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: podSpec},
	}}
	_, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	return err
}

// podName is a bare pod's name: the item's, and the replica's index for
// a multi-replica item.
func podName(it item, r int) string {
	if it.replicas > 1 {
		return fmt.Sprintf("%s-%d", it.name, r)
	}
	return it.name
}

// records are a baseline's records of an item: one per bare pod, or one
// for a Deployment.
func baselineRecords(ns string, it item) []*record {
	if baselineKind[ns] == "deployment" {
		return []*record{{phase: ns, name: it.name, replicas: it.replicas}}
	}
	out := make([]*record, it.replicas)
	for r := range it.replicas {
		out[r] = &record{phase: ns, name: podName(it, r), replicas: 1}
	}
	return out
}

// kcmQPS is the members' kube-controller-manager's --kube-api-qps: at
// least twice what a burst of Deployments asks of it (about three writes
// per pod at the client's rate), never its default 20.
func kcmQPS(o options) int {
	if o.kcmQPS > 0 {
		return o.kcmQPS
	}
	return max(20, int(6*o.qps))
}
