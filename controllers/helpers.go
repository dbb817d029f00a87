package controllers

import (
	"context"
	"fmt"
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

// Helpers shared by placer's controllers.

// conflictRetry is how soon a write that lost a race is retried.
const conflictRetry = 100 * time.Millisecond

// ignoreConflict turns a conflict, which only means the cache was behind,
// into a quiet immediate retry.
func ignoreConflict(err error) (reconcile.Result, error) {
	if kerrors.IsConflict(errors.Cause(err)) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// closer runs f when the manager stops.
type closer func()

func (f closer) Start(ctx context.Context) error {
	<-ctx.Done()
	f()
	return nil
}

// patchLocked applies change to obj and writes it as a merge patch that
// carries obj's resourceVersion: what another writer added meanwhile (a
// finalizer, a taint) is never dropped; the conflict retries.
func patchLocked[T client.Object](ctx context.Context, c client.Client, obj T, change func(T)) error {
	orig := obj.DeepCopyObject().(T)
	change(obj)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// statusWrite is what became of a Workload status write.
type statusWrite string

const (
	// statusUnchanged: the status says it already; nothing was sent.
	statusUnchanged statusWrite = "unchanged"
	statusWritten   statusWrite = "written"
	// statusConflict: the Workload changed since orig (or is gone).
	statusConflict statusWrite = "conflict"
	// statusSuperseded: the cache already holds the Workload changed
	// since orig, so the write would meet a conflict; nothing was sent.
	statusSuperseded statusWrite = "superseded"
	statusError      statusWrite = "error"
)

// patchStatus writes a Workload's status, changed from orig, as a merge
// patch carrying orig's resourceVersion. A conflict, met or foreseen from
// the cache (another controller wrote first), is not an error: the caller
// decides again soon from what is there. A write also sets the
// ready/desired column (readyOfDesired) from the counts.
func patchStatus(ctx context.Context, c client.Client, cache client.Reader, w, orig *v1alpha1.Workload) (statusWrite, error) {
	keepTransitionTimes(&orig.Status.ConditionedStatus, &w.Status.ConditionedStatus)
	if equality.Semantic.DeepEqual(orig.Status, w.Status) {
		return statusUnchanged, nil
	}
	if newerInCache(ctx, cache, orig) {
		return statusSuperseded, nil
	}
	// Only with a write that happens anyway: never a write of its own.
	w.Status.ReadyOfDesired = fmt.Sprintf("%d/%d", w.Status.ReadyReplicas, w.ReplicaCount())
	err := c.Status().Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return statusWritten, nil
	case kerrors.IsConflict(err), kerrors.IsNotFound(err):
		return statusConflict, nil
	default:
		return statusError, errors.Wrap(err, errUpdateWorkload)
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

// writtenWorkloads remembers the Workloads a controller wrote until its
// cache has caught up with them: a reconcile that starts from the cache
// right after its own write would otherwise decide from the copy before
// it, and its next write, carrying that copy's resourceVersion, would
// meet a conflict of its own making.
type writtenWorkloads struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*v1alpha1.Workload
}

// remember records a Workload as a write returned it.
func (c *writtenWorkloads) remember(w *v1alpha1.Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[types.NamespacedName]*v1alpha1.Workload{}
	}
	c.m[types.NamespacedName{Namespace: w.Namespace, Name: w.Name}] = w.DeepCopy()
}

// forget drops what was written of a Workload that is gone.
func (c *writtenWorkloads) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, key)
}

// latest returns the newer of the cache's copy and the last one written
// (forgotten once the cache has it).
func (c *writtenWorkloads) latest(key types.NamespacedName, cached *v1alpha1.Workload) *v1alpha1.Workload {
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

// requestsFor are the reconcile requests of a list's items.
func requestsFor[T any, P interface {
	*T
	client.Object
}](items []T) []reconcile.Request {
	out := make([]reconcile.Request, len(items))
	for i := range items {
		out[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(P(&items[i]))}
	}
	return out
}
