package shared

import (
	"context"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// errUpdateWorkload wraps a status write that failed.
const errUpdateWorkload = "cannot update Workload status"

// ConflictRetry is how soon a write that lost a race is retried.
const ConflictRetry = 100 * time.Millisecond

// IgnoreConflict turns a conflict, which only means the cache was behind,
// into a quiet immediate retry.
func IgnoreConflict(err error) (reconcile.Result, error) {
	if kerrors.IsConflict(errors.Cause(err)) {
		return reconcile.Result{RequeueAfter: ConflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// Closer runs f when the manager stops.
type Closer func()

func (f Closer) Start(ctx context.Context) error {
	<-ctx.Done()
	f()
	return nil
}

// PatchLocked applies change to obj and writes it as a merge patch that
// carries obj's resourceVersion: what another writer added meanwhile (a
// finalizer, a taint) is never dropped; the conflict retries.
func PatchLocked[T client.Object](ctx context.Context, c client.Client, obj T, change func(T)) error {
	orig := obj.DeepCopyObject().(T)
	change(obj)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// StatusWrite is what became of a Workload status write.
type StatusWrite string

const (
	// StatusUnchanged: the status says it already; nothing was sent.
	StatusUnchanged StatusWrite = "unchanged"
	StatusWritten   StatusWrite = "written"
	// StatusConflict: the Workload changed since orig (or is gone).
	StatusConflict StatusWrite = "conflict"
	// StatusSuperseded: the cache already holds the Workload changed
	// since orig, so the write would meet a conflict; nothing was sent.
	StatusSuperseded StatusWrite = "superseded"
	StatusError      StatusWrite = "error"
)

// PatchStatus writes a Workload's status, changed from orig, as a merge
// patch carrying orig's resourceVersion. A conflict, met or foreseen from
// the cache (another controller wrote first), is not an error: the caller
// decides again soon from what is there. derive, if any, sets fields
// that follow from the others (the propagator's readyOfDesired) once
// the status is to be written anyway: never a write of their own.
func PatchStatus(ctx context.Context, c client.Client, cache client.Reader, w, orig *v1alpha1.Workload, derive ...func(*v1alpha1.Workload)) (StatusWrite, error) {
	keepTransitionTimes(&orig.Status.ConditionedStatus, &w.Status.ConditionedStatus)
	if equality.Semantic.DeepEqual(orig.Status, w.Status) {
		return StatusUnchanged, nil
	}
	if newerInCache(ctx, cache, orig) {
		return StatusSuperseded, nil
	}
	for _, d := range derive {
		d(w)
	}
	err := c.Status().Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return StatusWritten, nil
	case kerrors.IsConflict(err), kerrors.IsNotFound(err):
		return StatusConflict, nil
	default:
		return StatusError, errors.Wrap(err, errUpdateWorkload)
	}
}

// newerInCache reports whether the cache holds the Workload newer than w:
// a write carrying w's resourceVersion would meet a conflict, and the
// copy's event brings the Workload back to its controllers anyway.
func newerInCache(ctx context.Context, cache client.Reader, w *v1alpha1.Workload) bool {
	cur := &v1alpha1.Workload{}
	if cache.Get(ctx, client.ObjectKeyFromObject(w), cur) != nil || cur.UID != w.UID {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(cur.ResourceVersion, w.ResourceVersion)
	return err == nil && cmp > 0
}

// keepTransitionTimes gives every condition of cur that is as orig has it
// (Condition.Equal: all but the time) orig's transition time. A reconcile
// that sets a condition on its way to setting it back (delivery's
// Available, then Unknown for a chosen cluster that does not answer) made
// no transition: without this its fresh timestamp, finer than the stored
// whole seconds, would send a write on every pass.
func keepTransitionTimes(orig, cur *xpv2.ConditionedStatus) {
	for i, c := range cur.Conditions {
		for _, o := range orig.Conditions {
			if o.Equal(c) {
				cur.Conditions[i].LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}

// WrittenWorkloads remembers the Workloads a controller wrote until its
// cache has caught up with them: a reconcile that starts from the cache
// right after its own write would otherwise decide from the copy before
// it, and its next write, carrying that copy's resourceVersion, would
// meet a conflict of its own making.
type WrittenWorkloads struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*v1alpha1.Workload
}

// Remember records a Workload as a write returned it.
func (c *WrittenWorkloads) Remember(w *v1alpha1.Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]*v1alpha1.Workload{}
	}
	c.m[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}] = w.DeepCopy()
}

// Forget drops what was written of a Workload that is gone.
func (c *WrittenWorkloads) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// Latest returns the newer of the cache's copy and the last one written
// (forgotten once the cache has it).
func (c *WrittenWorkloads) Latest(key types.NamespacedName, cached *v1alpha1.Workload) *v1alpha1.Workload {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.m[key]
	if !ok {
		return cached
	}
	if cached.UID != w.UID {
		delete(c.m, key)
		return cached
	}
	if cmp, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, w.ResourceVersion); err != nil || cmp >= 0 {
		delete(c.m, key)
		return cached
	}
	return w.DeepCopy()
}

// RequestsFor are the reconcile requests of a list's items.
func RequestsFor[T any, P interface {
	*T
	client.Object
}](items []T) []reconcile.Request {
	out := make([]reconcile.Request, len(items))
	for i := range items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(P(&items[i]))}
	}
	return out
}
