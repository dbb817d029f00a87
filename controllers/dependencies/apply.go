package dependencies

import (
	"context"
	"fmt"
	"slices"
	"strings"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Applied is what Apply did in one member.
type Applied struct {
	// Dependencies replace the cluster's status.dependencies entries,
	// when Set.
	Dependencies []v1alpha1.Dependency
	Set          bool
	// CopiedInto is the member namespace placer copied something into,
	// "" when it copied nothing.
	CopiedInto string
	// Events say what the status should tell of it (a copy the member
	// keeps from placer, say).
	Events []event.Event
}

// Apply puts what the pods of w (as delivered to m) need into m's target
// namespace, as the Workload's tenant, before they may bind there. With
// all, every object: the committed cluster, or one whose candidates bind
// without a hold (or with NoReservation). Otherwise only the
// ServiceAccount, without which the member's API server refuses the
// candidates' pods (ServiceAccount admission): a runner-up never gets a
// Secret or a ConfigMap.
//
// had are the cluster's status.dependencies entries; what was delivered
// with all replaces them, and without all joins them (nothing is let go
// then). One the pods no longer reference is let go there, with all,
// once no outdated pod may use it (outdated). An object of that name that
// is another source's copy refuses the cluster: a *shared.Problem.
func (rd *Reading) Apply(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, all, outdated bool, had []v1alpha1.Dependency) (Applied, error) {
	var out Applied
	d := rd.resolve(w)
	key := m.ClusterKey()
	ref := v1alpha1.ClusterReference{Name: key.Name, Namespace: key.Namespace}
	if len(d.objects) == 0 && (!all || len(had) == 0) {
		return out, nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return out, err
	}
	ns := m.TargetNamespace(w)
	var delivered []v1alpha1.Dependency
	objects := d.copied(all)
	for i, src := range objects {
		kind := kindOf(src)
		dep, err := copyInto(ctx, cl, m, w, ns, kind, src)
		if err != nil {
			// Every object the pass meant to copy stays named, beside
			// what the cluster had, nothing let go: the status reads the
			// same after each pass that fails the same way (no write),
			// and names whatever may be there.
			failed := v1alpha1.Dependency{Kind: kind, Name: src.GetName(), Copied: true}
			if p := (*shared.Problem)(nil); errors.As(err, &p) {
				// The member surely holds no copy of it made now.
				failed = entryOr(had, kind, src.GetName(), v1alpha1.Dependency{Kind: kind, Name: src.GetName(), Message: p.Message})
			} else {
				out.CopiedInto = ns
			}
			delivered = append(delivered, failed)
			for _, next := range objects[i+1:] {
				k := kindOf(next)
				delivered = append(delivered, entryOr(had, k, next.GetName(), v1alpha1.Dependency{Kind: k, Name: next.GetName(),
					Message: fmt.Sprintf("not copied: the copy of %s %s before it failed", kind, src.GetName())}))
			}
			out.Dependencies, out.Set = inCluster(ref, ordered(all, had, delivered)), true
			return out, err
		}
		dep.Cluster = ref
		delivered = append(delivered, dep)
		if dep.Copied {
			out.CopiedInto = ns
		}
		if dep.Message != "" && !slices.Contains(had, dep) {
			reason := v1alpha1.ReasonNameConflict
			if strings.Contains(dep.Message, "placer-member-dependencies") {
				reason = v1alpha1.ReasonForbidden
			}
			out.Events = append(out.Events, event.Warning(event.Reason(reason), errors.New(dep.Message)))
		}
	}
	if !all {
		// Recorded beside what the cluster had, nothing let go: the
		// status names every copy the Workload may use there, so that a
		// cluster whose candidates never came (a pass that failed after
		// the copy) or that the scheduler dropped is pruned, and a copy
		// of a ServiceAccount since renamed is still let go (Release).
		out.Dependencies, out.Set = mergeDependencies(had, delivered), true
		return out, nil
	}
	var gone []propagator.Ref
	for _, old := range had {
		if indexOf(delivered, old.Kind, old.Name) < 0 {
			if outdated || slices.ContainsFunc(d.missing, func(r propagator.Ref) bool { return r.Kind == old.Kind && r.Name == old.Name }) {
				// An old pod may still read it, or its source is gone
				// while the pods still reference it: the copy stays.
				delivered = append(delivered, old)
				continue
			}
			gone = append(gone, propagator.Ref{Kind: old.Kind, Name: old.Name})
		}
	}
	if err := releaseIn(ctx, cl, m, w, ns, gone); err != nil {
		return out, err
	}
	out.Dependencies, out.Set = delivered, true
	return out, nil
}

// Recorded are the cluster's status.dependencies entries as Apply will
// leave them once its copies are made (with all, every object the pods
// use; without, the ServiceAccount alone), in the order it writes them,
// from had, the entries the status has; record says whether they name
// an object had does not. They are written before the copies are made
// (the propagator's recordFirst): a copy whose record would come only
// after it, in a status write that a manager killed in between, or a
// write that loses a race, never makes, would be named nowhere once the
// template names another object or the cluster is dropped, and no
// deletion would let it go.
//
// placed says whether the status names the target namespace already: one
// it does not (the target namespace changed) is recorded too before
// anything is copied there.
func (rd *Reading) Recorded(m cluster.Member, w *v1alpha1.Workload, all bool, had []v1alpha1.Dependency, placed bool) (ds []v1alpha1.Dependency, record bool) {
	key := m.ClusterKey()
	var delivered []v1alpha1.Dependency
	objects := rd.resolve(w).copied(all)
	record = !placed && len(objects) > 0
	for _, src := range objects {
		kind := kindOf(src)
		record = record || indexOf(had, kind, src.GetName()) < 0
		delivered = append(delivered, entryOr(had, kind, src.GetName(), v1alpha1.Dependency{Kind: kind, Name: src.GetName(), Copied: true}))
	}
	return inCluster(v1alpha1.ClusterReference{Name: key.Name, Namespace: key.Namespace}, ordered(all, had, delivered)), record
}

// ordered are the cluster's entries in the order Apply writes them: with
// all, what it delivered in the pods' order, then what had keeps; without,
// had's, each as delivered where it was, then the new ones.
func ordered(all bool, had, delivered []v1alpha1.Dependency) []v1alpha1.Dependency {
	if !all {
		return mergeDependencies(had, delivered)
	}
	out := slices.Clone(delivered)
	for _, old := range had {
		if indexOf(delivered, old.Kind, old.Name) < 0 {
			out = append(out, old)
		}
	}
	return out
}

// copied are the objects Apply copies: all, or the ServiceAccount alone.
func (d *resolved) copied(all bool) []client.Object {
	if all {
		return d.objects
	}
	var out []client.Object
	for _, src := range d.objects {
		if kindOf(src) == propagator.KindServiceAccount {
			out = append(out, src)
		}
	}
	return out
}

// indexOf is the index of the entry of that kind and name in ds, -1 when
// it has none.
func indexOf(ds []v1alpha1.Dependency, kind, name string) int {
	return slices.IndexFunc(ds, func(d v1alpha1.Dependency) bool { return d.Kind == kind && d.Name == name })
}

// entryOr is had's entry of that kind and name, or else.
func entryOr(had []v1alpha1.Dependency, kind, name string, or v1alpha1.Dependency) v1alpha1.Dependency {
	if i := indexOf(had, kind, name); i >= 0 {
		return had[i]
	}
	return or
}

// inCluster sets every entry's cluster.
func inCluster(ref v1alpha1.ClusterReference, ds []v1alpha1.Dependency) []v1alpha1.Dependency {
	for i := range ds {
		ds[i].Cluster = ref
	}
	return ds
}

// Of are the status.dependencies entries of one cluster.
func Of(ds []v1alpha1.Dependency, key types.NamespacedName) []v1alpha1.Dependency {
	var out []v1alpha1.Dependency
	for _, d := range ds {
		if d.Cluster.Name == key.Name && d.Cluster.Namespace == key.Namespace {
			out = append(out, d)
		}
	}
	return out
}

// copyInto makes the member's copy of src in namespace ns hold src's data
// and name w among its users, and says so. An object of that name that is
// not placer's copy is left as it is (the pods use it: Message says so),
// unless it is placer's copy of another source, maybe another tenant's,
// which the pods must not read: that refuses the cluster. A member that
// forbids the tenant to write it keeps what it has.
func copyInto(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns, kind string, src client.Object) (v1alpha1.Dependency, error) {
	dep := v1alpha1.Dependency{Kind: kind, Name: src.GetName()}
	where := fmt.Sprintf("%s %s/%s in %s", kind, ns, src.GetName(), m.ClusterKey())
	source := propagator.Source(src.GetNamespace(), src.GetName())
	want := propagator.NewCopy(src, ns)
	cur := propagator.NewObject(kind)
	err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.GetName()}, cur)
	if kerrors.IsForbidden(err) {
		// The member did not opt in (placer-member-dependencies grants
		// reading and writing together).
		dep.Message = fmt.Sprintf("%s was not copied: the cluster does not let %s read or write it there (bind ClusterRole placer-member-dependencies): the pods use what the cluster has", where, mcv1alpha1.TenantUser(w.Namespace))
		return dep, nil
	}
	switch {
	case kerrors.IsNotFound(err):
		propagator.SetUser(want, string(w.UID), true)
		err = cl.Create(ctx, want)
	case err != nil:
	case propagator.CopiedFrom(cur, source):
		err = syncCopy(ctx, cl, cur, want, string(w.UID))
	case cur.GetLabels()[propagator.LabelDependency] == "true":
		return dep, &shared.Problem{Reason: v1alpha1.ReasonNameConflict, Message: fmt.Sprintf("%s is placer's copy of %s, not of %s: the pods would read another Workload's data", where, cur.GetAnnotations()[propagator.AnnotationSource], source)}
	default:
		dep.Message = fmt.Sprintf("%s was not copied by placer from %s: it is left as it is, and the pods use it", where, source)
		return dep, nil
	}
	if kerrors.IsForbidden(err) {
		// Readable but not writable: a quota or an admission plugin
		// refused it, and the pods must not go without it.
		return dep, &shared.Problem{Reason: v1alpha1.ReasonForbidden, Message: shared.Truncate(fmt.Sprintf("%s: the cluster refused it: %v", where, err))}
	}
	if err != nil {
		return dep, errors.Wrapf(err, "%s: %s", errCopyDependency, where)
	}
	dep.Copied = true
	return dep, nil
}

// syncCopy brings placer's copy cur in line with want and names uid among
// its users. A copy that cannot change in place (immutable, or a Secret of
// another type: propagator.Replaces) is replaced when it changed (deleted
// with a precondition, and created again with its users).
func syncCopy(ctx context.Context, cl client.Client, cur, want client.Object, uid string) error {
	replace := propagator.Replaces(cur, want)
	changed := propagator.Sync(cur, want)
	used := propagator.SetUser(cur, uid, true)
	switch {
	case changed && replace:
		for _, u := range propagator.Users(cur) {
			propagator.SetUser(want, u, true)
		}
		if err := cl.Delete(ctx, cur, preconditions(cur)); err != nil {
			return err
		}
		return cl.Create(ctx, want)
	case changed || used:
		return cl.Update(ctx, cur)
	}
	return nil
}

func preconditions(o client.Object) client.Preconditions {
	uid, rv := o.GetUID(), o.GetResourceVersion()
	return client.Preconditions{UID: &uid, ResourceVersion: &rv}
}

// releaseIn removes w from the users of its copies of refs in one member
// namespace, deleting each copy it was the last user of (with a
// precondition on its resourceVersion, so that a Workload that starts
// using it meanwhile keeps it). What the member forbids the tenant to
// read, placer cannot have made; an object that is not placer's copy is
// not touched.
func releaseIn(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns string, refs []propagator.Ref) error {
	for _, ref := range refs {
		cur := propagator.NewObject(ref.Kind)
		if cur == nil {
			continue
		}
		err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, cur)
		if kerrors.IsNotFound(err) || kerrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return errors.Wrapf(err, "%s: %s %s/%s in %s", errReleaseDependency, ref.Kind, ns, ref.Name, m.ClusterKey())
		}
		if !propagator.CopiedFrom(cur, propagator.Source(w.Namespace, ref.Name)) || !propagator.SetUser(cur, string(w.UID), false) {
			continue
		}
		if len(propagator.Users(cur)) > 0 {
			err = cl.Update(ctx, cur)
		} else {
			err = cl.Delete(ctx, cur, preconditions(cur))
		}
		if err := client.IgnoreNotFound(err); err != nil {
			return errors.Wrapf(err, "%s: %s %s/%s in %s", errReleaseDependency, ref.Kind, ns, ref.Name, m.ClusterKey())
		}
	}
	return nil
}

// Release lets go of every copy the Workload may use in namespace ns of a
// member, with the tenant's client cl: what its status says was delivered
// there, and what its pods reference now.
func Release(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns string) error {
	refs, _ := propagator.WatchedRefs(w)
	for _, d := range Of(w.Status.Dependencies, m.ClusterKey()) {
		refs = propagator.AddRef(refs, propagator.Ref{Kind: d.Kind, Name: d.Name})
	}
	if len(refs) == 0 {
		return nil
	}
	return releaseIn(ctx, cl, m, w, ns, refs)
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return propagator.KindConfigMap
	case *corev1.Secret:
		return propagator.KindSecret
	case *corev1.ServiceAccount:
		return propagator.KindServiceAccount
	}
	return ""
}

// mergeDependencies are had's entries with delivered's in place of those
// of the same kind and name, in had's order, then delivered's new ones.
func mergeDependencies(had, delivered []v1alpha1.Dependency) []v1alpha1.Dependency {
	out := make([]v1alpha1.Dependency, 0, len(had)+len(delivered))
	same := func(a v1alpha1.Dependency) func(v1alpha1.Dependency) bool {
		return func(b v1alpha1.Dependency) bool { return a.Kind == b.Kind && a.Name == b.Name }
	}
	for _, old := range had {
		if i := slices.IndexFunc(delivered, same(old)); i >= 0 {
			old = delivered[i]
		}
		out = append(out, old)
	}
	for _, dep := range delivered {
		if !slices.ContainsFunc(had, same(dep)) {
			out = append(out, dep)
		}
	}
	return out
}
