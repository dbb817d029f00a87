package controllers

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/propagator"
)

// The management side reads the objects that go with the pods from
// watches of exactly those objects (objectWatches).
// +kubebuilder:rbac:groups="",resources=configmaps;serviceaccounts,verbs=get;list;watch

const (
	errCopyDependency    = "cannot copy a dependency into the member"
	errReleaseDependency = "cannot let go of a dependency in the member"
)

// dependencySources is where the propagator reads the objects that go
// with the pods: objectWatches in the manager, a map in unit tests.
type dependencySources interface {
	use(user types.NamespacedName, keys []objectKey)
	forget(user types.NamespacedName)
	get(k objectKey) (obj *unstructured.Unstructured, synced bool, err error)
}

// dependencies are what one delivered Workload's pods need, read from
// the sources: the objects to copy, or why they cannot go yet.
type dependencies struct {
	objects []client.Object
	// problems name what is missing or cannot be read; waiting: a watch
	// has not listed yet (its first list enqueues the Workload).
	problems []string
	waiting  bool
}

func coreKey(kind, namespace, name string) objectKey {
	return objectKey{GVK: corev1.SchemeGroupVersion.WithKind(kind), Namespace: namespace, Name: name}
}

func claimKey(namespace string, r v1alpha1.ResourceReference) objectKey {
	return objectKey{GVK: schema.FromAPIVersionAndKind(r.APIVersion, r.Kind), Namespace: namespace, Name: r.Name}
}

// watchDependencies points the sources at everything the Workload's pods
// may need in any cluster, and the Secrets its claims and
// ServiceAccounts name: once per reconcile.
func (r *PropagatorReconciler) watchDependencies(s *scope) {
	if s.watched || r.sources == nil {
		return
	}
	s.watched = true
	w := s.w
	user := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	refs, claims := propagator.WatchedRefs(w)
	if len(refs)+len(claims) == 0 {
		r.sources.forget(user)
		return
	}
	keys := make([]objectKey, 0, len(refs)+len(claims))
	for _, c := range claims {
		keys = append(keys, claimKey(w.Namespace, c))
	}
	for _, ref := range refs {
		keys = append(keys, coreKey(ref.Kind, w.Namespace, ref.Name))
	}
	// And what the claims and ServiceAccounts name, as far as their
	// watches (started by an earlier reconcile) know: a change of them
	// enqueues the Workload, which watches again. One use with the whole
	// set, so that no watch stops and starts again within a reconcile.
	for _, c := range claims {
		if name, problem := connectionSecret(r.sources, w.Namespace, c); problem == "" && name != "" {
			keys = append(keys, coreKey(propagator.KindSecret, w.Namespace, name))
		}
	}
	for _, ref := range refs {
		for _, name := range imagePullSecrets(r.sources, w.Namespace, ref) {
			keys = append(keys, coreKey(propagator.KindSecret, w.Namespace, name))
		}
	}
	r.sources.use(user, keys)
}

// connectionSecret is the Secret a claim of spec.resources names in
// spec.writeConnectionSecretToRef: "" while its watch lists, or with a
// problem that names the claim.
func connectionSecret(src dependencySources, namespace string, c v1alpha1.ResourceReference) (name, problem string) {
	k := claimKey(namespace, c)
	u, synced, err := src.get(k)
	switch {
	case err != nil:
		return "", fmt.Sprintf("%s (spec.resources) cannot be read: %v", k, err)
	case !synced:
		return "", ""
	case u == nil:
		return "", fmt.Sprintf("%s (spec.resources) does not exist", k)
	}
	name, _, _ = unstructured.NestedString(u.Object, "spec", "writeConnectionSecretToRef", "name")
	ns, _, _ := unstructured.NestedString(u.Object, "spec", "writeConnectionSecretToRef", "namespace")
	switch {
	case name == "":
		return "", fmt.Sprintf("%s (spec.resources) names no connection Secret in spec.writeConnectionSecretToRef", k)
	case ns != "" && ns != namespace:
		return "", fmt.Sprintf("%s (spec.resources) writes its connection Secret to namespace %s: only the Workload's namespace %s can go with the pods", k, ns, namespace)
	}
	return name, ""
}

// imagePullSecrets are the Secrets a ServiceAccount ref names, if its
// watch has it.
func imagePullSecrets(src dependencySources, namespace string, ref propagator.Ref) []string {
	if ref.Kind != propagator.KindServiceAccount {
		return nil
	}
	sa := &corev1.ServiceAccount{}
	if found, _, err := getTyped(src, coreKey(ref.Kind, namespace, ref.Name), sa); !found || err != nil {
		return nil
	}
	out := make([]string, 0, len(sa.ImagePullSecrets))
	for _, s := range sa.ImagePullSecrets {
		out = append(out, s.Name)
	}
	return out
}

// getTyped returns k from the sources as a typed object (into, which it
// fills): found is false when it does not exist.
func getTyped(src dependencySources, k objectKey, into runtime.Object) (found, synced bool, err error) {
	u, synced, err := src.get(k)
	if u == nil {
		return false, synced, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into); err != nil {
		return false, true, errors.Wrapf(err, "cannot decode %s", k)
	}
	return true, true, nil
}

// resolve reads what the pods of a delivered Workload (its overrides for
// one cluster applied) need, once per reconcile and delivered Workload.
func (r *PropagatorReconciler) resolve(s *scope, w *v1alpha1.Workload) *dependencies {
	if d, ok := s.deps[w]; ok {
		return d
	}
	d := &dependencies{}
	if s.deps == nil {
		s.deps = map[*v1alpha1.Workload]*dependencies{}
	}
	s.deps[w] = d
	refs, claims := propagator.Refs(w)
	if len(refs)+len(claims) == 0 || r.sources == nil {
		return d
	}
	r.watchDependencies(s)
	for _, c := range claims {
		name, problem := connectionSecret(r.sources, w.Namespace, c)
		switch {
		case problem != "":
			d.problems = append(d.problems, problem)
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
		k := coreKey(ref.Kind, w.Namespace, ref.Name)
		obj := propagator.NewObject(ref.Kind)
		if obj == nil {
			d.problems = append(d.problems, fmt.Sprintf("%s: only a Secret or a ConfigMap of apiVersion v1 goes with the pods", k))
			continue
		}
		found, synced, err := getTyped(r.sources, k, obj)
		switch {
		case err != nil:
			d.problems = append(d.problems, fmt.Sprintf("%s cannot be read: %v", k, err))
		case !synced:
			d.waiting = true
		case !found && !ref.Optional:
			d.problems = append(d.problems, fmt.Sprintf("%s does not exist", k))
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

// holdForDependencies holds a Workload whose pods (as delivered to the
// chosen cluster) need an object that is missing or cannot be read:
// nothing new starts anywhere, and Ready says which object, with an
// Event; what runs keeps running, and the object's watch releases it.
// done: a watch has not listed yet; its first list enqueues the Workload.
func (r *PropagatorReconciler) holdForDependencies(s *scope, delivered *v1alpha1.Workload) (held, done bool) {
	d := r.resolve(s, delivered)
	if len(d.problems) == 0 {
		return d.waiting, d.waiting
	}
	s.held = true
	msg := "the pods wait for their dependencies: " + strings.Join(d.problems, "; ")
	prev := s.orig.Status.GetCondition(xpv2.TypeReady)
	s.w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonMissingDependency, msg, s.w.Generation))
	if prev.Reason != v1alpha1.ReasonMissingDependency || prev.Message != msg {
		s.statusEvent(event.Warning(v1alpha1.ReasonMissingDependency, errors.New(msg)))
	}
	return true, false
}

// copyKey is one copy in one member, for one Workload.
type copyKey struct {
	host, namespace, kind, name string
	workload                    types.UID
}

// copied remembers, per copy and Workload, the source's resourceVersion
// last copied (and the conflict seen, if any): a reconcile whose sources
// did not change sends the member nothing. Only a shortcut: what is
// correct is in the member (the copies' annotations), so a restarted
// manager looks once more.
type copied struct {
	mu sync.Mutex
	m  map[copyKey]copiedAs
}

type copiedAs struct{ version, conflict string }

func (c *copied) get(k copyKey) (copiedAs, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *copied) set(k copyKey, v copiedAs) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[copyKey]copiedAs{}
	}
	c.m[k] = v
}

func (c *copied) forget(k copyKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// deliverDependencies copies what the pods of w (as delivered to m) need
// into m's target namespace, as the Workload's tenant, before they may
// bind there. With all, every object: the committed cluster, or one whose
// candidates bind without a hold. Otherwise only the ServiceAccount,
// without which the member's API server refuses the candidates' pods
// (ServiceAccount admission): a runner-up never gets a Secret or a
// ConfigMap. The copies of the committed cluster go into
// status.dependencies; one it no longer needs is let go there.
func (r *PropagatorReconciler) deliverDependencies(ctx context.Context, s *scope, m cluster.Member, w *v1alpha1.Workload, all bool) error {
	d := r.resolve(s, w)
	if len(d.objects) == 0 && (!all || len(s.orig.Status.Dependencies) == 0) {
		return nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return err
	}
	ns := m.TargetNamespace(w)
	var status []v1alpha1.Dependency
	for _, src := range d.objects {
		kind := kindOf(src)
		if !all && kind != propagator.KindServiceAccount {
			continue
		}
		conflict, err := r.copyInto(ctx, cl, m, w, ns, kind, src)
		if err != nil {
			return err
		}
		status = append(status, v1alpha1.Dependency{Kind: kind, Name: src.GetName(), Conflict: conflict})
		if conflict != "" && !hasConflict(s.orig.Status.Dependencies, kind, src.GetName(), conflict) {
			s.statusEvent(event.Warning(v1alpha1.ReasonNameConflict, errors.New(conflict)))
		}
	}
	if !all || m.ClusterKey() != s.target {
		return nil
	}
	var gone []propagator.Ref
	for _, old := range s.orig.Status.Dependencies {
		if !hasDependency(status, old.Kind, old.Name) {
			gone = append(gone, propagator.Ref{Kind: old.Kind, Name: old.Name})
		}
	}
	if err := r.releaseIn(ctx, cl, m, w, ns, gone); err != nil {
		return err
	}
	s.w.Status.Dependencies = status
	return nil
}

// copyInto makes the member's copy of src in namespace ns hold src's data
// and name w among its users. An object of that name that is not
// placer's copy of src is left as it is: conflict says so.
func (r *PropagatorReconciler) copyInto(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns, kind string, src client.Object) (conflict string, err error) {
	key := copyKey{host: m.Host(), namespace: ns, kind: kind, name: src.GetName(), workload: w.UID}
	if c, ok := r.copied.get(key); ok && c.version == src.GetResourceVersion() {
		return c.conflict, nil
	}
	source := propagator.Source(src.GetNamespace(), src.GetName())
	want := propagator.NewCopy(src, ns)
	cur := propagator.NewObject(kind)
	err = cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.GetName()}, cur)
	switch {
	case kerrors.IsNotFound(err):
		propagator.SetUser(want, string(w.UID), true)
		if err := cl.Create(ctx, want); err != nil {
			return "", errors.Wrapf(err, "%s: %s %s/%s in %s", errCopyDependency, kind, ns, src.GetName(), m.ClusterKey())
		}
	case err != nil:
		return "", errors.Wrapf(err, "%s: %s %s/%s in %s", errCopyDependency, kind, ns, src.GetName(), m.ClusterKey())
	case !propagator.CopiedFrom(cur, source):
		conflict = fmt.Sprintf("%s %s/%s in %s was not copied by placer from %s: it is left as it is, and the pods use it", kind, ns, src.GetName(), m.ClusterKey(), source)
	default:
		synced := propagator.Sync(cur, want)
		used := propagator.SetUser(cur, string(w.UID), true)
		if synced || used {
			if err := cl.Update(ctx, cur); err != nil {
				return "", errors.Wrapf(err, "%s: %s %s/%s in %s", errCopyDependency, kind, ns, src.GetName(), m.ClusterKey())
			}
		}
	}
	r.copied.set(key, copiedAs{version: src.GetResourceVersion(), conflict: conflict})
	return conflict, nil
}

// releaseIn removes w from the users of its copies of refs in one member
// namespace, deleting each copy it was the last user of (with a
// precondition on its resourceVersion, so that a Workload that starts
// using it meanwhile keeps it). What the member forbids the tenant to
// read, placer cannot have made; an object that is not placer's copy is
// not touched.
func (r *PropagatorReconciler) releaseIn(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload, ns string, refs []propagator.Ref) error {
	for _, ref := range refs {
		r.copied.forget(copyKey{host: m.Host(), namespace: ns, kind: ref.Kind, name: ref.Name, workload: w.UID})
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
			err = cl.Delete(ctx, cur, client.Preconditions{UID: &[]types.UID{cur.GetUID()}[0], ResourceVersion: &[]string{cur.GetResourceVersion()}[0]})
		}
		if err := client.IgnoreNotFound(err); err != nil {
			return errors.Wrapf(err, "%s: %s %s/%s in %s", errReleaseDependency, ref.Kind, ns, ref.Name, m.ClusterKey())
		}
	}
	return nil
}

// releaseAll lets go of every copy the Workload may use in a member: what
// status.dependencies names and what its pods reference now.
func (r *PropagatorReconciler) releaseAll(ctx context.Context, cl client.Client, m cluster.Member, w *v1alpha1.Workload) error {
	refs, _ := propagator.WatchedRefs(w)
	for _, d := range w.Status.Dependencies {
		refs = propagator.AddRef(refs, propagator.Ref{Kind: d.Kind, Name: d.Name})
	}
	if len(refs) == 0 {
		return nil
	}
	return r.releaseIn(ctx, cl, m, w, m.TargetNamespace(w), refs)
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

func hasDependency(ds []v1alpha1.Dependency, kind, name string) bool {
	for _, d := range ds {
		if d.Kind == kind && d.Name == name {
			return true
		}
	}
	return false
}

func hasConflict(ds []v1alpha1.Dependency, kind, name, conflict string) bool {
	for _, d := range ds {
		if d.Kind == kind && d.Name == name {
			return d.Conflict == conflict
		}
	}
	return false
}
