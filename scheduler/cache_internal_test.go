package scheduler

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// TestSamePlacementComparesEveryField: a record that differs in any field
// a cycle reads is a new placement (a new snapshot). A field added to
// PlacedWorkload fails here until it has a case, and samePlacement (which
// lists the fields by hand) is checked for it.
func TestSamePlacementComparesEveryField(t *testing.T) {
	base := PlacedWorkload{
		UID: "u", Namespace: "ns", Name: "w", Labels: labels.Set{"app": "web"},
		Cluster: types.NamespacedName{Namespace: "default", Name: "a"},
		Unbound: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
	change := map[string]func(*PlacedWorkload){
		"Namespace":    func(p *PlacedWorkload) { p.Namespace = "other" },
		"Name":         func(p *PlacedWorkload) { p.Name = "other" },
		"Labels":       func(p *PlacedWorkload) { p.Labels = labels.Set{"app": "db"} },
		"Cluster":      func(p *PlacedWorkload) { p.Cluster.Name = "b" },
		"AntiAffinity": func(p *PlacedWorkload) { p.AntiAffinity = []*AffinityTerm{{TopologyKey: "zone"}} },
		"Unbound":      func(p *PlacedWorkload) { p.Unbound = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")} },
		"Draining":     func(p *PlacedWorkload) { p.Draining = true },
		"Rebalance":    func(p *PlacedWorkload) { p.Rebalance = true },
	}
	// Not compared on purpose: the key of the record, and the cache's own
	// number for its cluster.
	ignored := map[string]bool{"UID": true, "slot": true}
	rt := reflect.TypeFor[PlacedWorkload]()
	for i := range rt.NumField() {
		name := rt.Field(i).Name
		if ignored[name] {
			continue
		}
		f, ok := change[name]
		if !ok {
			t.Errorf("PlacedWorkload.%s has no case here: does samePlacement compare it?", name)
			continue
		}
		b := base
		f(&b)
		if samePlacement(&base, &b) {
			t.Errorf("a record with another %s is the same placement", name)
		}
	}
	if b := base; !samePlacement(&base, &b) {
		t.Error("a record is not the same placement as its copy")
	}
}
