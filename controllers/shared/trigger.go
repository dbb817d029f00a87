package shared

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
