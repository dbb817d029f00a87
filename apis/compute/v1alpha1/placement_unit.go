package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// PlacementUnit is what placer's pipeline places: replicas of one
// Workload's pod template, in one cluster, proven there as one gang (every
// replica reserved by the cluster's own scheduler before any binds; a unit
// of one binds as soon as it is reserved). The handshake, delivery,
// dependencies, moves and cleanup each work on units: a Workload placed
// in one cluster is one unit of all its replicas there, with a runner-up
// unit of the same replicas in each other nominated cluster (fanOut).
// +kubebuilder:object:generate=false
type PlacementUnit struct {
	// Cluster is where the replicas go.
	Cluster types.NamespacedName
	// First and Count are the replicas (by index) the unit holds.
	First, Count int
	// RunnerUp: a nominated cluster other than the chosen one. Its
	// candidates prove it meanwhile, and never bind while it is not chosen.
	RunnerUp bool
	// Divisible: the unit may be kept in part (a share of a spread
	// Workload, whose candidates wait to be allowed): its cluster's
	// rejection counts every candidate it reserved.
	Divisible bool
}

// Holds reports whether replica i belongs to the unit.
func (u PlacementUnit) Holds(i int) bool { return i >= u.First && i < u.First+u.Count }

// Replicas are the unit's replica indexes, in order.
func (u PlacementUnit) Replicas() []int {
	out := make([]int, u.Count)
	for i := range out {
		out[i] = u.First + i
	}
	return out
}

// PlacementUnits are the units the Workload's status places, the chosen
// cluster's first: every replica in status.clusterRef, and a runner-up
// unit of them in every other nominated cluster that has not rejected
// this generation. None while no cluster is chosen.
func (w *Workload) PlacementUnits() []PlacementUnit {
	if w.Status.ClusterRef == nil {
		return nil
	}
	chosen := w.ClusterKey(w.Status.ClusterRef)
	out := []PlacementUnit{{Cluster: chosen, Count: w.ReplicaCount(), Divisible: w.IsShare() && w.Spec.Placement.Mode != PlacementModeNoReservation}}
	for i := range w.Status.NominatedClusters {
		key := w.ClusterKey(&w.Status.NominatedClusters[i])
		if key == chosen || w.RejectedBy(key) || slices.ContainsFunc(out, func(u PlacementUnit) bool { return u.Cluster == key }) {
			continue
		}
		out = append(out, PlacementUnit{Cluster: key, Count: w.ReplicaCount(), RunnerUp: true})
	}
	return out
}

// WholeUnit is the unit of every replica of the Workload in a cluster.
func (w *Workload) WholeUnit(cluster types.NamespacedName) PlacementUnit {
	return PlacementUnit{Cluster: cluster, Count: w.ReplicaCount()}
}

// Place writes units into the status as the scheduler decides them: the
// chosen unit's cluster in clusterRef, and every unit's cluster, in order,
// in nominatedClusters; no unit places the Workload nowhere.
func (s *WorkloadStatus) Place(units []PlacementUnit) {
	s.ClusterRef, s.NominatedClusters = nil, nil
	for _, u := range units {
		ref := ClusterReference{Name: u.Cluster.Name, Namespace: u.Cluster.Namespace}
		if !u.RunnerUp && s.ClusterRef == nil {
			chosen := ref
			s.ClusterRef = &chosen
		}
		s.NominatedClusters = append(s.NominatedClusters, ref)
	}
}
