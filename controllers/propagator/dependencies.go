package propagator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
)

// The management side reads the objects that go with the pods from
// watches of exactly those objects (objectWatches).
// +kubebuilder:rbac:groups="",resources=configmaps;serviceaccounts,verbs=get;list;watch

const (
	errCopyDependency    = "cannot copy a dependency into the member"
	errReleaseDependency = "cannot let go of a dependency in the member"
)

// dependencies are what one delivered Workload's pods need, read from
// the sources: the objects to copy, those missing, or why they cannot go
// yet.
type dependencies struct {
	objects []client.Object
	// missing are required objects the Workload's namespace does not
	// hold: the cluster's own may stand in (problemsIn).
	missing []propagator.Ref
	// problems name what cannot be read or cannot go; waiting: a watch
	// has not listed yet (its first list enqueues the Workload); retry: a
	// watch could not start (a kind not served), so no event will come.
	problems []string
	waiting  bool
	retry    bool
	// in memoizes problemsIn per cluster, for this reconcile.
	in map[types.NamespacedName][]string
}

func claimKey(namespace string, r v1alpha1.ResourceReference) shared.ObjectKey {
	return shared.ObjectKey{GVK: schema.FromAPIVersionAndKind(r.APIVersion, r.Kind), Namespace: namespace, Name: r.Name}
}

// watchDependencies points the sources at everything the Workload's pods
// may need in any cluster, and the Secrets its claims and
// ServiceAccounts name: once per reconcile.
func (r *Reconciler) watchDependencies(s *scope) {
	if s.watched || r.sources == nil {
		return
	}
	s.watched = true
	w := s.w
	user := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	refs, claims := propagator.WatchedRefs(w)
	if len(refs)+len(claims) == 0 {
		r.sources.Forget(user)
		return
	}
	keys := make([]shared.ObjectKey, 0, len(refs)+len(claims))
	for _, c := range claims {
		keys = append(keys, claimKey(w.Namespace, c))
	}
	for _, ref := range refs {
		keys = append(keys, shared.CoreKey(ref.Kind, w.Namespace, ref.Name))
	}
	// And what the claims and ServiceAccounts name, as far as their
	// watches (started by an earlier reconcile) know: a change of them
	// enqueues the Workload, which watches again. One use with the whole
	// set, so that no watch stops and starts again within a reconcile.
	for _, c := range claims {
		if name, err := connectionSecret(r.sources, w.Namespace, c); err == nil && name != "" {
			keys = append(keys, shared.CoreKey(propagator.KindSecret, w.Namespace, name))
		}
	}
	for _, ref := range refs {
		for _, name := range imagePullSecrets(r.sources, w.Namespace, ref) {
			keys = append(keys, shared.CoreKey(propagator.KindSecret, w.Namespace, name))
		}
	}
	r.sources.Use(user, keys)
}

// connectionSecret is the Secret a claim of spec.resources names in
// spec.writeConnectionSecretToRef: "" while its watch lists, or an error
// that names the claim (errNotServed, wrapped, for a kind not served yet).
func connectionSecret(src shared.Sources, namespace string, c v1alpha1.ResourceReference) (string, error) {
	k := claimKey(namespace, c)
	u, synced, err := src.Get(k)
	switch {
	case err != nil:
		return "", errors.Wrapf(err, "%s (spec.resources) cannot be read", k)
	case !synced:
		return "", nil
	case u == nil:
		return "", errors.Errorf("%s (spec.resources) does not exist", k)
	}
	name, _, _ := unstructured.NestedString(u.Object, "spec", "writeConnectionSecretToRef", "name")
	ns, _, _ := unstructured.NestedString(u.Object, "spec", "writeConnectionSecretToRef", "namespace")
	switch {
	case name == "":
		return "", errors.Errorf("%s (spec.resources) names no connection Secret in spec.writeConnectionSecretToRef", k)
	case ns != "" && ns != namespace:
		return "", errors.Errorf("%s (spec.resources) writes its connection Secret to namespace %s: only the Workload's namespace %s can go with the pods", k, ns, namespace)
	}
	return name, nil
}

// imagePullSecrets are the Secrets a ServiceAccount ref names, if its
// watch has it.
func imagePullSecrets(src shared.Sources, namespace string, ref propagator.Ref) []string {
	if ref.Kind != propagator.KindServiceAccount {
		return nil
	}
	sa := &corev1.ServiceAccount{}
	if found, _, err := shared.GetTyped(src, shared.CoreKey(ref.Kind, namespace, ref.Name), sa); !found || err != nil {
		return nil
	}
	out := make([]string, 0, len(sa.ImagePullSecrets))
	for _, s := range sa.ImagePullSecrets {
		out = append(out, s.Name)
	}
	return out
}

// resolve reads what the pods of a delivered Workload (its overrides for
// one cluster applied) need, once per reconcile and delivered Workload.
func (r *Reconciler) resolve(s *scope, w *v1alpha1.Workload) *dependencies {
	if d, ok := s.deps[w]; ok {
		return d
	}
	d := &dependencies{}
	if s.deps == nil {
		s.deps = map[*v1alpha1.Workload]*dependencies{}
	}
	s.deps[w] = d
	if r.sources == nil {
		return d
	}
	// First, so that watches no reference needs any more stop.
	r.watchDependencies(s)
	refs, claims := propagator.Refs(w)
	if len(refs)+len(claims) == 0 {
		return d
	}
	problem := func(k shared.ObjectKey, err error) {
		d.problems = append(d.problems, fmt.Sprintf("%s cannot be read: %v", k, err))
		d.retry = d.retry || errors.Is(err, shared.ErrNotServed)
	}
	for _, c := range claims {
		name, err := connectionSecret(r.sources, w.Namespace, c)
		switch {
		case err != nil:
			d.problems = append(d.problems, err.Error())
			d.retry = d.retry || errors.Is(err, shared.ErrNotServed)
		case name == "":
			d.waiting = true
		default:
			refs = propagator.AddRef(refs, propagator.Ref{Kind: propagator.KindSecret, Name: name})
		}
	}
	for _, ref := range refs {
		for _, name := range imagePullSecrets(r.sources, w.Namespace, ref) {
			// The kubelet pulls without a missing one, as it does anywhere.
			refs = propagator.AddRef(refs, propagator.Ref{Kind: propagator.KindSecret, Name: name, Optional: true})
		}
	}
	for _, ref := range refs {
		k := shared.CoreKey(ref.Kind, w.Namespace, ref.Name)
		obj := propagator.NewObject(ref.Kind)
		if obj == nil {
			d.problems = append(d.problems, fmt.Sprintf("%s: only a Secret or a ConfigMap of apiVersion v1 goes with the pods", k))
			continue
		}
		found, synced, err := shared.GetTyped(r.sources, k, obj)
		switch {
		case err != nil:
			problem(k, err)
		case !synced:
			d.waiting = true
		case !found && !ref.Optional:
			d.missing = append(d.missing, ref)
		case !found:
		case isTokenSecret(obj):
			d.problems = append(d.problems, fmt.Sprintf("%s is a ServiceAccount token of the management cluster: placer does not copy it", k))
		default:
			d.objects = append(d.objects, obj)
		}
	}
	return d
}

func isTokenSecret(o client.Object) bool {
	s, ok := o.(*corev1.Secret)
	return ok && s.Type == corev1.SecretTypeServiceAccountToken
}

// problemsIn says why w's pods (as delivered to m) cannot go to m yet:
// what cannot be read or sent, and each required object that neither the
// Workload's namespace nor m's target namespace holds (looked up there as
// the tenant). A member that does not let the tenant read it there keeps
// what it has: placer copies nothing there, and holds nothing for it,
// as before it copied anything (the opt-in is the member's).
func (r *Reconciler) problemsIn(ctx context.Context, s *scope, m cluster.Member, w *v1alpha1.Workload) ([]string, error) {
	d := r.resolve(s, w)
	if p, ok := d.in[m.ClusterKey()]; ok {
		return p, nil
	}
	problems := slices.Clone(d.problems)
	if len(d.missing) == 0 {
		return problems, nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return nil, err
	}
	ns := m.TargetNamespace(w)
	for _, ref := range d.missing {
		obj := propagator.NewObject(ref.Kind)
		err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj)
		switch {
		case err == nil && propagator.IsCopy(obj) && !propagator.CopiedFrom(obj, propagator.Source(w.Namespace, ref.Name)):
			// What placer copied there for another source, maybe another
			// tenant's, is never read in place of the Workload's own.
			problems = append(problems, fmt.Sprintf("%s does not exist, and %s/%s in %s is placer's copy of %s, which the pods may not read",
				shared.CoreKey(ref.Kind, w.Namespace, ref.Name), ns, ref.Name, m.ClusterKey(), obj.GetAnnotations()[propagator.AnnotationSource]))
		case err == nil, kerrors.IsForbidden(err):
		case kerrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("%s does not exist (nor does %s/%s in %s)", shared.CoreKey(ref.Kind, w.Namespace, ref.Name), ns, ref.Name, m.ClusterKey()))
		default:
			return nil, errors.Wrapf(err, "%s: %s %s/%s in %s", errCopyDependency, ref.Kind, ns, ref.Name, m.ClusterKey())
		}
	}
	if d.in == nil {
		d.in = map[types.NamespacedName][]string{}
	}
	d.in[m.ClusterKey()] = problems
	return problems, nil
}

// holdForDependencies holds a Workload whose pods (as delivered to the
// chosen cluster) need an object that is missing or cannot be read:
// nothing new starts anywhere, and Ready says which object, with an
// Event; what runs keeps running, and the object's watch releases it. It
// stops while a watch has not listed yet: its first list enqueues the
// Workload.
func (r *Reconciler) holdForDependencies(ctx context.Context, s *scope) (next, error) {
	p := s.chosen
	problems, err := r.problemsIn(ctx, s, p.member, p.delivered)
	if err != nil {
		return stop, err
	}
	d := r.resolve(s, p.delivered)
	switch {
	case len(problems) == 0 && d.waiting:
		return stop, nil
	case len(problems) == 0:
		return proceed, nil
	}
	if d.retry || len(d.missing) > 0 {
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
		p.problem = &deliveryProblem{reason: v1alpha1.ReasonMissingDependency, msg: msg}
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
// into m's target namespace, as the Workload's tenant, before they may
// bind there. With all, every object: the committed cluster, or one whose
// candidates bind without a hold (or with NoReservation). Otherwise only
// the ServiceAccount, without which the member's API server refuses the
// candidates' pods (ServiceAccount admission): a runner-up never gets a
// Secret or a ConfigMap.
//
// What was delivered with all goes into status.dependencies, per
// cluster; one the pods no longer reference is let go there once no
// outdated pod may use it (st.Outdated). An object of that name that is
// another source's copy refuses the cluster: a *deliveryProblem.
func (r *Reconciler) deliverDependencies(ctx context.Context, s *scope, m cluster.Member, w *v1alpha1.Workload, all bool, st propagator.State) error {
	d := r.resolve(s, w)
	key := m.ClusterKey()
	ref := v1alpha1.ClusterReference{Name: key.Name, Namespace: key.Namespace}
	had := dependenciesOf(s.orig.Status.Dependencies, key)
	if len(d.objects) == 0 && (!all || len(had) == 0) {
		return nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	ns := m.TargetNamespace(w)
	var delivered []v1alpha1.Dependency
	for _, src := range d.objects {
		kind := kindOf(src)
		if !all && kind != propagator.KindServiceAccount {
			continue
		}
		dep, err := copyInto(ctx, cl, m, w, ns, kind, src)
		if err != nil {
			return err
		}
		dep.Cluster = ref
		delivered = append(delivered, dep)
		if dep.Copied {
			s.w.SetPlaced(key, ns, true)
		}
		if dep.Message != "" && !slices.Contains(had, dep) {
			reason := v1alpha1.ReasonNameConflict
			if strings.Contains(dep.Message, "placer-member-dependencies") {
				reason = v1alpha1.ReasonForbidden
			}
			s.statusEvent(event.Warning(event.Reason(reason), errors.New(dep.Message)))
		}
	}
	if !all {
		return nil
	}
	var gone []propagator.Ref
	for _, old := range had {
		if !slices.ContainsFunc(delivered, func(dep v1alpha1.Dependency) bool { return dep.Kind == old.Kind && dep.Name == old.Name }) {
			if len(st.Outdated) > 0 || slices.ContainsFunc(d.missing, func(r propagator.Ref) bool { return r.Kind == old.Kind && r.Name == old.Name }) {
				// An old pod may still read it, or its source is gone
				// while the pods still reference it: the copy stays.
				delivered = append(delivered, old)
				continue
			}
			gone = append(gone, propagator.Ref{Kind: old.Kind, Name: old.Name})
		}
	}
	if err := releaseIn(ctx, cl, m, w, ns, gone); err != nil {
		return err
	}
	setDependencies(s.w, key, delivered)
	return nil
}

// dependenciesOf are the status entries of one cluster.
func dependenciesOf(ds []v1alpha1.Dependency, key types.NamespacedName) []v1alpha1.Dependency {
	var out []v1alpha1.Dependency
	for _, d := range ds {
		if d.Cluster.Name == key.Name && d.Cluster.Namespace == key.Namespace {
			out = append(out, d)
		}
	}
	return out
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
		return dep, &deliveryProblem{reason: v1alpha1.ReasonNameConflict, msg: fmt.Sprintf("%s is placer's copy of %s, not of %s: the pods would read another Workload's data", where, cur.GetAnnotations()[propagator.AnnotationSource], source)}
	default:
		dep.Message = fmt.Sprintf("%s was not copied by placer from %s: it is left as it is, and the pods use it", where, source)
		return dep, nil
	}
	if kerrors.IsForbidden(err) {
		// Readable but not writable: a quota or an admission plugin
		// refused it, and the pods must not go without it.
		return dep, &deliveryProblem{reason: v1alpha1.ReasonForbidden, msg: truncate(fmt.Sprintf("%s: the cluster refused it: %v", where, err))}
	}
	if err != nil {
		return dep, errors.Wrapf(err, "%s: %s", errCopyDependency, where)
	}
	dep.Copied = true
	return dep, nil
}

// syncCopy brings placer's copy cur in line with want and names uid among
// its users. An immutable copy whose data changed is replaced (deleted
// with a precondition, and created again with its users).
func syncCopy(ctx context.Context, cl client.Client, cur, want client.Object, uid string) error {
	changed := propagator.Sync(cur, want)
	used := propagator.SetUser(cur, uid, true)
	switch {
	case changed && propagator.Immutable(cur):
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

// releaseAll lets go of every copy the Workload may use in namespace ns of a member: what
// its status says was delivered there, and what its pods reference now.
func releaseAll(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns string) error {
	refs, _ := propagator.WatchedRefs(w)
	for _, d := range dependenciesOf(w.Status.Dependencies, m.ClusterKey()) {
		refs = propagator.AddRef(refs, propagator.Ref{Kind: d.Kind, Name: d.Name})
	}
	if len(refs) == 0 {
		return nil
	}
	return releaseIn(ctx, cl, m, w, ns, refs)
}

// releaseLeft lets go of the copies in a member, once nothing of the
// Workload remains there (a cluster it left, or one where its first
// candidate could not be made), and forgets them.
func releaseLeft(ctx context.Context, s *scope, m cluster.Member) error {
	cl, err := m.Tenant(s.w.Namespace)
	if err != nil {
		return err
	}
	if err := releaseAll(ctx, cl, m, s.w, m.TargetNamespace(s.w)); err != nil {
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
