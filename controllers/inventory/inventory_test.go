package inventory

import (
	"testing"

	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
)

func TestLabelsOf(t *testing.T) {
	cp := &inventoryv1alpha1.ClusterProfile{}
	cp.Labels = map[string]string{inventoryv1alpha1.LabelClusterSetKey: "prod", "topology.kubernetes.io/region": "eu", "compute.placer.dev/cloud-provider": "gcp", "team": "a"}
	cp.Status.Properties = []inventoryv1alpha1.Property{
		{Name: "cpu-class", Value: "small"},
		{Name: "region.example.com", Value: "eu-west-1"},
		{Name: "not a label", Value: "x"},
		{Name: "notes", Value: "does not fit a label value"},
		// Keys placer or Kubernetes own: left out.
		{Name: "zone", Value: "a"},
	}
	got := labelsOf(cp)
	want := map[string]any{
		inventoryv1alpha1.LabelClusterSetKey:       "prod",
		"team":                                     "a",
		LabelPropertyPrefix + "zone":               "a",
		LabelPropertyPrefix + "cpu-class":          "small",
		LabelPropertyPrefix + "region.example.com": "eu-west-1",
	}
	if len(got) != len(want) {
		t.Errorf("labels %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %v, want %v", k, got[k], v)
		}
	}
}
