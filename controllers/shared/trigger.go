package shared

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Trigger lets code outside controller-runtime (informers on member
// clusters) enqueue reconciles without blocking: the workqueue dedupes
// them. Requests made before the controller starts are dropped; its
// initial list enqueues every object anyway.
type Trigger struct {
	mu sync.RWMutex
	q  workqueue.TypedRateLimitingInterface[reconcile.Request]
}

// Source is the controller source that hands the trigger its queue.
func (t *Trigger) Source() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.q = q
		return nil
	})
}

// SourceAfter is Source, a source the controller waits for before its
// workers start until every synced says true: handlers that feed a cache
// of the controller's own (informer registrations' HasSynced) have taken
// in their informers' first lists. controller-runtime waits only for its
// own handlers; a decision made before would read a partial cache.
func (t *Trigger) SourceAfter(synced ...toolscache.InformerSynced) source.Source {
	return syncedSource{Source: t.Source(), synced: synced}
}

type syncedSource struct {
	source.Source
	synced []toolscache.InformerSynced
}

// WaitForSync returns once every synced says true, or fails when ctx ends
// first (the controller's cache sync timeout).
func (s syncedSource) WaitForSync(ctx context.Context) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return errors.New("the handlers feeding the controller's own cache did not take in their informers' lists")
	}
	return nil
}

// Enqueue asks for a reconcile of the named object.
func (t *Trigger) Enqueue(key types.NamespacedName) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.q != nil {
		t.q.Add(reconcile.Request{NamespacedName: key})
	}
}

// EnqueueAfter asks for a reconcile of the named object after d.
func (t *Trigger) EnqueueAfter(key types.NamespacedName, d time.Duration) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.q != nil {
		t.q.AddAfter(reconcile.Request{NamespacedName: key}, d)
	}
}
