package main

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Karmada's phase reports its own API server's writes as the control
// plane's, the management's left out, and the other phases the reverse.
func TestDiffWritesByControlPlane(t *testing.T) {
	before := map[string]writes{
		"mgmt":       {"workloads POST": 10},
		groupKarmada: {"works POST": 5},
		"member-0":   {"pods POST": 1},
		"member-1":   {"pods POST": 2},
	}
	after := map[string]writes{
		"mgmt":       {"workloads POST": 12},
		groupKarmada: {"works POST": 35, "resourcebindings POST": 30},
		"member-0":   {"pods POST": 21},
		"member-1":   {"pods POST": 12},
	}
	k := diffWrites(after, before, controlPlane(nsKarmada))
	if k.mgmt.of("works") != 30 || k.mgmt.of("resourcebindings") != 30 || k.mgmt.of("workloads") != 0 {
		t.Errorf("karmada's control plane wrote %v; want works 30, resourcebindings 30 and no Workloads", k.mgmt)
	}
	if k.members.of("pods") != 30 {
		t.Errorf("members wrote %v; want 30 pods summed", k.members)
	}
	p := diffWrites(after, before, controlPlane("fanout-1"))
	if p.mgmt.of("workloads") != 2 || p.mgmt.of("works") != 0 || p.members.of("works") != 0 {
		t.Errorf("placer's phase: management %v, members %v; want 2 Workloads and none of Karmada's writes", p.mgmt, p.members)
	}
}

func TestKarmadaClusterReady(t *testing.T) {
	cluster := func(taints []any, conds ...map[string]any) unstructured.Unstructured {
		c := unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}, "status": map[string]any{}}}
		if taints != nil {
			c.Object["spec"].(map[string]any)["taints"] = taints
		}
		var cs []any
		for _, cond := range conds {
			cs = append(cs, cond)
		}
		c.Object["status"].(map[string]any)["conditions"] = cs
		return c
	}
	ready := map[string]any{"type": "Ready", "status": "True"}
	cases := map[string]struct {
		c    unstructured.Unstructured
		want bool
	}{
		"Ready, untainted":         {cluster(nil, map[string]any{"type": "Other", "status": "False"}, ready), true},
		"Ready, still tainted":     {cluster([]any{map[string]any{"key": "cluster.karmada.io/not-ready", "effect": "NoSchedule"}}, ready), false},
		"not Ready":                {cluster(nil, map[string]any{"type": "Ready", "status": "False"}), false},
		"no condition yet":         {cluster(nil), false},
		"Ready unknown, untainted": {cluster(nil, map[string]any{"type": "Ready", "status": "Unknown"}), false},
	}
	for name, tc := range cases {
		if got := karmadaClusterReady(tc.c); got != tc.want {
			t.Errorf("%s: ready = %v, want %v", name, got, tc.want)
		}
	}
}

// A policy places the Deployments labelled with its member in that member
// only, Duplicated (no replicaScheduling: Karmada's default; an empty one
// would default to Divided without a preference, which its scheduler
// refuses).
func TestKarmadaPolicy(t *testing.T) {
	p := karmadaPolicy("member-1")
	names, _, _ := unstructured.NestedStringSlice(p.Object, "spec", "placement", "clusterAffinity", "clusterNames")
	if strings.Join(names, ",") != "member-1" {
		t.Errorf("clusterNames %v; want member-1 only", names)
	}
	sel, _, _ := unstructured.NestedSlice(p.Object, "spec", "resourceSelectors")
	if len(sel) != 1 {
		t.Fatalf("resourceSelectors %v; want one", sel)
	}
	match, _, _ := unstructured.NestedStringMap(sel[0].(map[string]any), "labelSelector", "matchLabels")
	if match[labelKarmadaMember] != "member-1" || sel[0].(map[string]any)["kind"] != "Deployment" {
		t.Errorf("resourceSelectors %v; want the Deployments labelled member-1", sel)
	}
	if _, found, _ := unstructured.NestedMap(p.Object, "spec", "placement", "replicaScheduling"); found {
		t.Error("replicaScheduling set; want Karmada's default, Duplicated")
	}
}

// The divided measure's policy divides every Deployment of its namespace
// over all the members by the replicas each has room for.
func TestKarmadaDividedPolicy(t *testing.T) {
	p := karmadaDividedPolicy([]string{"member-0", "member-1"})
	if p.GetNamespace() != nsKarmadaDivided {
		t.Errorf("namespace %q; want %q", p.GetNamespace(), nsKarmadaDivided)
	}
	names, _, _ := unstructured.NestedStringSlice(p.Object, "spec", "placement", "clusterAffinity", "clusterNames")
	if strings.Join(names, ",") != "member-0,member-1" {
		t.Errorf("clusterNames %v; want every member", names)
	}
	rs, _, _ := unstructured.NestedMap(p.Object, "spec", "placement", "replicaScheduling")
	weight, _, _ := unstructured.NestedString(rs, "weightPreference", "dynamicWeight")
	if rs["replicaSchedulingType"] != "Divided" || rs["replicaDivisionPreference"] != "Weighted" || weight != "AvailableReplicas" {
		t.Errorf("replicaScheduling %v; want Divided, weighted by available replicas", rs)
	}
	if controlPlane(nsKarmadaDivided) != groupKarmada || baselineKind[nsKarmadaDivided] != "deployment" {
		t.Error("the divided peer's writes are not Karmada's, or its pods are not counted per Deployment")
	}
}
