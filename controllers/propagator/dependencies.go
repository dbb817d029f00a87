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
	"github.com/placer-dev/placer/controllers/shared"
	"k8s.io/apimachinery/pkg/types"
)

// dependencies puts into each unit's cluster what its pods need before
// they may bind there (dependencies.Reading.Apply, as the tenant):
// everything where the unit commits now or is committed, or where its new
// candidates bind without a hold (or the member's own scheduler binds
// them); only the ServiceAccount where candidates that wait are made
// (without it the member refuses their pods); nothing elsewhere. It is
// the one phase that delivers them; a cluster left and a deleted Workload
// let them go (releaseLeft, cleanup).
//
// A chosen unit whose pods need an object that is missing or cannot be
// read is held first (holdChosen); a runner-up so missing gets no
// candidates, and is not rejected for it. A member that refuses a copy
// (an object of that name that is not placer's) rejects the unit's
// cluster (refused); a committed one keeps what runs, takes nothing new,
// and Ready says why (proof.problem).
func (r *Reconciler) dependencies(ctx context.Context, s *scope) (next, error) {
	if p := s.chosen; p != nil {
		if n, err := r.holdChosen(ctx, s, p); n != proceed || err != nil {
			return n, err
		}
	}
	type delivery struct {
		p   *proof
		all bool
		// had are the cluster's status entries before the record.
		had []v1alpha1.Dependency
	}
	var todo []delivery
	for _, p := range s.proofs() {
		deliver, all := p.delivery()
		if !deliver || p.problem != nil {
			continue
		}
		if p.unit.RunnerUp {
			o, err := s.deps.Observe(ctx, p.member, p.delivered, len(p.state.Missing) > 0)
			if err != nil {
				return stop, err
			}
			if p.needs = o; o.Holds() {
				continue
			}
		}
		todo = append(todo, delivery{p: p, all: all, had: dependencies.Of(s.orig.Status.Dependencies, p.unit.Cluster)})
	}
	var records []record
	for _, d := range todo {
		key, ns := d.p.unit.Cluster, d.p.member.TargetNamespace(d.p.delivered)
		if ds, ok := s.deps.Recorded(d.p.member, d.p.delivered, d.all, d.had, slices.Contains(s.orig.PlacedIn(key), ns)); ok {
			records = append(records, record{key: key, deps: ds, namespace: ns})
		}
	}
	if n, err := r.recordFirst(ctx, s, records); n != proceed || err != nil {
		return n, err
	}
	for _, d := range todo {
		p := d.p
		err := r.applyDependencies(ctx, s, p, d.all, d.had)
		var dp *deliveryProblem
		switch {
		case err == nil:
		case errors.As(err, &dp) && p.state.Allowed > 0:
			// Committed: what runs keeps running; nothing new binds there.
			p.problem = dp
		default:
			if n, err := r.refused(s, p, err); n == stop {
				return n, err
			}
		}
	}
	return proceed, nil
}

// record is what a pass is about to copy into one cluster whose status
// does not name all of it yet: the cluster's entries as they will read
// (dependencies.Reading.Recorded), and the namespace.
type record struct {
	key       types.NamespacedName
	deps      []v1alpha1.Dependency
	namespace string
}

// addTo puts the record into w's status: the cluster's entries, the
// namespace among those placer put objects in.
func (rc record) addTo(w *v1alpha1.Workload) {
	setDependencies(w, rc.key, rc.deps)
	w.SetPlaced(rc.key, rc.namespace, true)
}

// recordFirst writes the status.dependencies entries and placed
// namespaces of the copies this pass is about to make, as they will read
// once made (dependencies.Reading.Recorded), before any is made: what
// placer puts in a member is recorded first (design §4.9), so that a
// manager killed after a copy, or a pass whose status write loses a race,
// leaves no copy that no status names once the template names another
// object or the cluster is dropped. The pass's own write would have
// carried the same entries after the copies, and has nothing of them left
// to write: a pass that writes nothing else (a gang of one's first) makes
// no more writes than before, one that commits a held gang one more (and
// the commit's own record, recordCommit, another). A
// record that loses a race stops the pass, which the newer copy brings
// back. A pass that fails the same way again finds its entries named
// already, and records nothing.
func (r *Reconciler) recordFirst(ctx context.Context, s *scope, records []record) (next, error) {
	if len(records) == 0 {
		return proceed, nil
	}
	return r.writeFirst(ctx, s, func(w *v1alpha1.Workload) {
		for _, rc := range records {
			rc.addTo(w)
		}
	})
}

// writeFirst writes what add sets in the status before the pass acts on
// it in a member (recordFirst, recordCommit); the pass goes on from what
// is written, and its own write carries the rest. A write that loses a
// race stops the pass, which the newer copy brings back.
func (r *Reconciler) writeFirst(ctx context.Context, s *scope, add func(*v1alpha1.Workload)) (next, error) {
	rec := s.orig.DeepCopy()
	add(rec)
	res, err := shared.PatchStatus(ctx, r.client, r.client, rec, s.orig, derived...)
	propagatorWrites.WithLabelValues(string(res)).Inc()
	switch {
	case err != nil:
		return stop, err
	case res == shared.StatusUnchanged:
		// The status holds it already.
		add(s.w)
		return proceed, nil
	case res != shared.StatusWritten:
		return stop, nil
	}
	// The pass goes on from what is written (the fields derived in a
	// write too): its own write carries the rest, on the new
	// resourceVersion.
	r.written.Remember(rec)
	s.orig.ResourceVersion, s.orig.Status = rec.ResourceVersion, *rec.Status.DeepCopy()
	s.w.ResourceVersion = rec.ResourceVersion
	add(s.w)
	for _, d := range derived {
		d(s.w)
	}
	return proceed, nil
}

// holdChosen holds a Workload whose pods (as delivered to the chosen
// cluster) need an object that is missing or cannot be read: nothing new
// starts anywhere, runner-ups' candidates go, and Ready says which
// object, with an Event; what runs keeps running, and the object's watch
// releases it. It stops while a
// watch has not listed yet: its first list enqueues the Workload.
func (r *Reconciler) holdChosen(ctx context.Context, s *scope, p *proof) (next, error) {
	// Pods start there in this pass if candidates are made, or allowed.
	o, err := s.deps.Observe(ctx, p.member, p.delivered, len(p.state.Missing)+len(p.state.ToAllow) > 0)
	if err != nil {
		return stop, err
	}
	p.needs = o
	switch {
	case len(o.Problems) == 0 && o.Waiting:
		return stop, nil
	case len(o.Problems) == 0:
		return proceed, nil
	}
	if o.Recheck {
		// No watch will tell: a kind the API server may serve later, or
		// an object the member may get (placer does not watch members').
		s.requeueAfter(v1alpha1.RejectionBackoffBase)
	}
	msg := "the pods wait for their dependencies: " + strings.Join(o.Problems, "; ")
	if p.state.Allowed > 0 {
		// Committed: what runs keeps running and is counted, a replica
		// removed goes; nothing new starts (deliver says why in Ready).
		p.problem = &deliveryProblem{Reason: v1alpha1.ReasonMissingDependency, Message: msg}
		return proceed, nil
	}
	for _, u := range s.units[1:] {
		// Held, runner-ups give their room back until the object comes.
		delete(s.keep, u.Cluster)
	}
	prev := s.orig.Status.GetCondition(xpv2.TypeReady)
	s.w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonMissingDependency, msg, s.w.Generation))
	if prev.Reason != v1alpha1.ReasonMissingDependency || prev.Message != msg {
		s.statusEvent(event.Warning(v1alpha1.ReasonMissingDependency, errors.New(msg)))
	}
	return settle, nil
}

// applyDependencies puts what the unit's pods need into its member (all,
// or only the ServiceAccount) and writes what it did into the status: the
// cluster's status.dependencies entries (had before the pass recorded
// what it was about to copy), the namespace placer copied into, the
// Events.
func (r *Reconciler) applyDependencies(ctx context.Context, s *scope, p *proof, all bool, had []v1alpha1.Dependency) error {
	key := p.unit.Cluster
	// What the pods no longer reference stays recorded while an old pod
	// may still read it, and while the Workload is still placed in
	// another namespace there (its pods left it without their cleanup):
	// that namespace's cleanup lets go of what the status names there.
	ns := p.member.TargetNamespace(p.delivered)
	outdated := len(p.state.Outdated) > 0 || slices.ContainsFunc(s.orig.PlacedIn(key), func(n string) bool { return n != ns })
	applied, err := s.deps.Apply(ctx, p.member, p.delivered, all, outdated, had)
	if applied.CopiedInto != "" {
		s.w.SetPlaced(key, applied.CopiedInto, true)
	}
	for _, e := range applied.Events {
		s.statusEvent(e)
	}
	if applied.Set {
		// Also when it failed: whatever it may have copied stays named.
		setDependencies(s.w, key, applied.Dependencies)
	}
	return err
}

// setDependencies replaces the status entries of one cluster where they
// are (so that an unchanged delivery leaves the status as it was, and
// writes nothing), or after the others' when it had none.
func setDependencies(w *v1alpha1.Workload, key types.NamespacedName, ds []v1alpha1.Dependency) {
	ofKey := func(d v1alpha1.Dependency) bool {
		return d.Cluster.Name == key.Name && d.Cluster.Namespace == key.Namespace
	}
	at := slices.IndexFunc(w.Status.Dependencies, ofKey)
	if at < 0 {
		at = len(w.Status.Dependencies)
	}
	kept := slices.DeleteFunc(slices.Clone(w.Status.Dependencies[at:]), ofKey)
	kept = append(append(slices.Clone(w.Status.Dependencies[:at]), ds...), kept...)
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
	// The target namespace, and wherever the status says placer put
	// something (the target namespace may have changed since).
	namespaces := append([]string{m.TargetNamespace(s.w)}, s.w.PlacedIn(m.ClusterKey())...)
	slices.Sort(namespaces)
	for _, ns := range slices.Compact(namespaces) {
		if err := leaveNamespace(ctx, cl, m, s.w, ns); err != nil {
			return err
		}
	}
	forgetRecords(s.w, m.ClusterKey())
	return nil
}

// forgetRecords takes out of the status what it records placer put in the
// cluster (status.dependencies, status.placedNamespaces): let go there, or
// the cluster deleted.
func forgetRecords(w *v1alpha1.Workload, key types.NamespacedName) {
	w.SetPlaced(key, "", false)
	setDependencies(w, key, nil)
}
