package propagator

import (
	"context"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/dependencies"
	"github.com/placer-dev/placer/propagator"
	"k8s.io/apimachinery/pkg/types"
)

// holdForDependencies holds a Workload whose pods (as delivered to the
// chosen cluster) need an object that is missing or cannot be read:
// nothing new starts anywhere, and Ready says which object, with an
// Event; what runs keeps running, and the object's watch releases it. It
// stops while a watch has not listed yet: its first list enqueues the
// Workload.
func (r *Reconciler) holdForDependencies(ctx context.Context, s *scope) (next, error) {
	p := s.chosen
	o, err := s.deps.Observe(ctx, p.member, p.delivered)
	if err != nil {
		return stop, err
	}
	problems := o.Problems
	switch {
	case len(problems) == 0 && o.Waiting:
		return stop, nil
	case len(problems) == 0:
		return proceed, nil
	}
	if o.Recheck {
		// No watch will tell: a kind the API server may serve later, or
		// an object the member may get (placer does not watch members').
		s.requeueAfter(rejectionBackoffBase)
	}
	msg := "the pods wait for their dependencies: " + strings.Join(problems, "; ")
	committed, err := committedIn(ctx, p.member, p.delivered)
	if err != nil {
		return stop, err
	}
	if committed {
		// Committed: what runs keeps running and is counted, a replica
		// removed goes; nothing new starts (deliver says why in Ready).
		p.problem = &deliveryProblem{Reason: v1alpha1.ReasonMissingDependency, Message: msg}
		return proceed, nil
	}
	prev := s.orig.Status.GetCondition(xpv2.TypeReady)
	s.w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonMissingDependency, msg, s.w.Generation))
	if prev.Reason != v1alpha1.ReasonMissingDependency || prev.Message != msg {
		s.statusEvent(event.Warning(v1alpha1.ReasonMissingDependency, errors.New(msg)))
	}
	return settle, nil
}

// deliverDependencies puts what the pods of w (as delivered to m) need
// into m (dependencies.Reading.Apply) and writes what it did into the
// status: the cluster's status.dependencies entries (with all), the
// namespace placer copied into, the Events.
func (r *Reconciler) deliverDependencies(ctx context.Context, s *scope, m cluster.Member, w *v1alpha1.Workload, all bool, st propagator.State) error {
	key := m.ClusterKey()
	applied, err := s.deps.Apply(ctx, m, w, all, len(st.Outdated) > 0, dependencies.Of(s.orig.Status.Dependencies, key))
	if applied.CopiedInto != "" {
		s.w.SetPlaced(key, applied.CopiedInto, true)
	}
	for _, e := range applied.Events {
		s.statusEvent(e)
	}
	if err == nil && applied.Set {
		setDependencies(s.w, key, applied.Dependencies)
	}
	return err
}

// setDependencies replaces the status entries of one cluster.
func setDependencies(w *v1alpha1.Workload, key types.NamespacedName, ds []v1alpha1.Dependency) {
	kept := slices.DeleteFunc(slices.Clone(w.Status.Dependencies), func(d v1alpha1.Dependency) bool {
		return d.Cluster.Name == key.Name && d.Cluster.Namespace == key.Namespace
	})
	kept = append(kept, ds...)
	if len(kept) == 0 {
		kept = nil
	}
	w.Status.Dependencies = kept
}

// releaseLeft lets go of the copies in a member, once nothing of the
// Workload remains there (a cluster it left, or one where its first
// candidate could not be made), and forgets them.
func releaseLeft(ctx context.Context, s *scope, m cluster.Member) error {
	cl, err := m.Tenant(s.w.Namespace)
	if err != nil {
		return err
	}
	if err := dependencies.Release(ctx, cl, m, s.w, m.TargetNamespace(s.w)); err != nil {
		return err
	}
	// And wherever the status says placer put something (the target
	// namespace may have changed since): its Service too.
	for _, ns := range s.w.PlacedIn(m.ClusterKey()) {
		if err := leaveNamespace(ctx, cl, m, s.w, ns); err != nil {
			return err
		}
	}
	s.w.SetPlaced(m.ClusterKey(), "", false)
	setDependencies(s.w, m.ClusterKey(), nil)
	return nil
}
