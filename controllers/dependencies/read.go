// Package dependencies is the propagator's component for what goes with
// a Workload's pods: the ConfigMaps, Secrets and ServiceAccount they
// reference (and the connection Secrets of its spec.resources claims),
// read from watches of exactly those objects in the management cluster
// (shared.ObjectWatches), copied into a member's target namespace as the
// Workload's tenant before its pods may bind there (Apply), kept in sync,
// and let go of by their last user (Release). What it learns for the
// Workload's status it returns; the propagator writes it.
package dependencies

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/propagator"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The management side reads the objects that go with the pods from
// watches of exactly those objects (shared.ObjectWatches).
// +kubebuilder:rbac:groups="",resources=configmaps;serviceaccounts,verbs=get;list;watch

const (
	errCopyDependency    = "cannot copy a dependency into the member"
	errReleaseDependency = "cannot let go of a dependency in the member"
)

// Component reads the objects that go with the pods from its sources.
type Component struct{ sources shared.Sources }

// New returns the component over sources (nil: none is read, as if no
// Workload needed any).
func New(sources shared.Sources) *Component { return &Component{sources: sources} }

// Forget stops the watches a Workload that is gone used.
func (c *Component) Forget(w types.NamespacedName) {
	if c != nil && c.sources != nil {
		c.sources.Forget(w)
	}
}

// Reading is one reconcile's reading of one Workload's dependencies: what
// each delivered Workload (its overrides for one cluster applied) needs,
// and what is missing in each member, each read once.
type Reading struct {
	sources shared.Sources
	w       *v1alpha1.Workload
	watched bool
	deps    map[*v1alpha1.Workload]*resolved
}

// Read starts a reading of the Workload's dependencies.
func (c *Component) Read(w *v1alpha1.Workload) *Reading {
	rd := &Reading{w: w, deps: map[*v1alpha1.Workload]*resolved{}}
	if c != nil {
		rd.sources = c.sources
	}
	return rd
}

// Observation is what one delivered Workload's pods need in one member
// and cannot have yet.
type Observation struct {
	// Problems name what cannot be read or sent, and each required
	// object that neither the Workload's namespace nor the member's
	// target namespace holds.
	Problems []string
	// Waiting: a watch has not listed yet; its first list enqueues the
	// Workload.
	Waiting bool
	// Recheck: no watch will tell when a problem ends (a kind the API
	// server may serve later, an object the member may get: placer does
	// not watch members'), so look again later.
	Recheck bool
}

// Holds reports whether the pods may not go yet: a problem, or a watch
// that has not listed.
func (o Observation) Holds() bool { return len(o.Problems) > 0 || o.Waiting }

// Observe says what the pods of w (a delivered Workload) need in m and
// cannot have yet. newPods says whether the pass may start pods there
// (candidates to make, or to allow): only then are the optional objects
// the Workload's namespace does not hold looked for in m (a read of the
// member each), since only a new pod would read placer's copy of another
// source in their place.
func (rd *Reading) Observe(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, newPods bool) (Observation, error) {
	d := rd.resolve(w)
	problems, err := rd.problemsIn(ctx, m, w, newPods)
	return Observation{Problems: problems, Waiting: d.waiting, Recheck: d.retry || len(d.missing) > 0 || newPods && len(d.optional) > 0}, err
}

// resolved is what one delivered Workload's pods need, read from the
// sources: the objects to copy, those missing, or why they cannot go yet.
type resolved struct {
	objects []client.Object
	// missing are required objects the Workload's namespace does not
	// hold: the cluster's own may stand in (problemsIn). optional are
	// the optional ones it does not hold: the pods go without them, but
	// never read placer's copy of another source in their place.
	missing, optional []propagator.Ref
	// problems name what cannot be read or cannot go; waiting: a watch
	// has not listed yet (its first list enqueues the Workload); retry: a
	// watch could not start (a kind not served), so no event will come.
	problems []string
	waiting  bool
	retry    bool
	// in memoizes problemsIn per cluster (and whether the optional ones
	// were looked for), for this reconcile.
	in map[inKey][]string
}

type inKey struct {
	cluster types.NamespacedName
	newPods bool
}

func claimKey(namespace string, r v1alpha1.ResourceReference) shared.ObjectKey {
	return shared.ObjectKey{GVK: schema.FromAPIVersionAndKind(r.APIVersion, r.Kind), Namespace: namespace, Name: r.Name}
}

// watch points the sources at everything the Workload's pods may need in
// any cluster, and the Secrets its claims and ServiceAccounts name: once
// per reading.
func (rd *Reading) watch() {
	if rd.watched || rd.sources == nil {
		return
	}
	rd.watched = true
	w := rd.w
	user := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	refs, claims := propagator.WatchedRefs(w)
	if len(refs)+len(claims) == 0 {
		rd.sources.Forget(user)
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
		if name, err := connectionSecret(rd.sources, w.Namespace, c); err == nil && name != "" {
			keys = append(keys, shared.CoreKey(propagator.KindSecret, w.Namespace, name))
		}
	}
	for _, ref := range refs {
		for _, name := range imagePullSecrets(rd.sources, w.Namespace, ref) {
			keys = append(keys, shared.CoreKey(propagator.KindSecret, w.Namespace, name))
		}
	}
	rd.sources.Use(user, keys)
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
// one cluster applied) need, once per reading and delivered Workload.
func (rd *Reading) resolve(w *v1alpha1.Workload) *resolved {
	if d, ok := rd.deps[w]; ok {
		return d
	}
	d := &resolved{}
	rd.deps[w] = d
	if rd.sources == nil {
		return d
	}
	// First, so that watches no reference needs any more stop.
	rd.watch()
	refs, claims := propagator.Refs(w)
	if len(refs)+len(claims) == 0 {
		return d
	}
	problem := func(k shared.ObjectKey, err error) {
		d.problems = append(d.problems, fmt.Sprintf("%s cannot be read: %v", k, err))
		d.retry = d.retry || errors.Is(err, shared.ErrNotServed)
	}
	for _, c := range claims {
		name, err := connectionSecret(rd.sources, w.Namespace, c)
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
		for _, name := range imagePullSecrets(rd.sources, w.Namespace, ref) {
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
		found, synced, err := shared.GetTyped(rd.sources, k, obj)
		switch {
		case err != nil:
			problem(k, err)
		case !synced:
			d.waiting = true
		case !found && !ref.Optional:
			d.missing = append(d.missing, ref)
		case !found:
			d.optional = append(d.optional, ref)
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
func (rd *Reading) problemsIn(ctx context.Context, m cluster.Member, w *v1alpha1.Workload, newPods bool) ([]string, error) {
	d := rd.resolve(w)
	key := inKey{cluster: m.ClusterKey(), newPods: newPods}
	if p, ok := d.in[key]; ok {
		return p, nil
	}
	problems := slices.Clone(d.problems)
	refs := slices.Clone(d.missing)
	if newPods {
		refs = append(refs, d.optional...)
	}
	if len(refs) == 0 {
		return problems, nil
	}
	cl, err := m.Tenant(w.Namespace)
	if err != nil {
		return nil, err
	}
	ns := m.TargetNamespace(w)
	for _, ref := range refs {
		obj := propagator.NewObject(ref.Kind)
		err := cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj)
		switch {
		case err == nil && propagator.IsCopy(obj) && !propagator.CopiedFrom(obj, propagator.Source(w.Namespace, ref.Name)):
			// What placer copied there for another source, maybe another
			// tenant's, is never read in place of the Workload's own.
			problems = append(problems, fmt.Sprintf("%s does not exist, and %s/%s in %s is placer's copy of %s, which the pods may not read",
				shared.CoreKey(ref.Kind, w.Namespace, ref.Name), ns, ref.Name, m.ClusterKey(), obj.GetAnnotations()[propagator.AnnotationSource]))
		case err == nil, kerrors.IsForbidden(err):
		case kerrors.IsNotFound(err) && ref.Optional:
			// The pods go without it.
		case kerrors.IsNotFound(err):
			problems = append(problems, fmt.Sprintf("%s does not exist (nor does %s/%s in %s)", shared.CoreKey(ref.Kind, w.Namespace, ref.Name), ns, ref.Name, m.ClusterKey()))
		default:
			return nil, errors.Wrapf(err, "%s: %s %s/%s in %s", errCopyDependency, ref.Kind, ns, ref.Name, m.ClusterKey())
		}
	}
	if d.in == nil {
		d.in = map[inKey][]string{}
	}
	d.in[key] = problems
	return problems, nil
}
