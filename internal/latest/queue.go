// Package latest applies the latest value per key with a pool of workers.
package latest

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Queue hands the latest value set for a key to apply, with a pool of
// workers: a key is never applied by two workers at once (the work queue
// guarantees it), and a value set while its key is being applied is
// applied after, replacing any value not applied yet. Writes that leave a
// hot loop (a scheduling cycle, a decision loop) go through it.
type Queue[K comparable, V any] struct {
	apply   func(ctx context.Context, key K, v V) (retry bool)
	workers int
	queue   workqueue.TypedRateLimitingInterface[K]

	mu   sync.Mutex
	next map[K]V
}

// New returns a queue that applies values with the given number of
// workers. When apply asks to retry, the value is applied again after a
// per-key exponential backoff, unless a newer one was set meanwhile.
func New[K comparable, V any](workers int, apply func(ctx context.Context, key K, v V) (retry bool)) *Queue[K, V] {
	return &Queue[K, V]{
		apply:   apply,
		workers: max(workers, 1),
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[K]()),
		next:    map[K]V{},
	}
}

// Set queues the value for the key.
func (q *Queue[K, V]) Set(key K, v V) {
	q.mu.Lock()
	q.next[key] = v
	q.mu.Unlock()
	q.queue.Add(key)
}

// Len is how many keys wait to be applied.
func (q *Queue[K, V]) Len() int { return q.queue.Len() }

// Start runs the workers until ctx ends (a controller-runtime Runnable).
func (q *Queue[K, V]) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range q.workers {
		wg.Go(func() {
			for q.ApplyNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	q.queue.ShutDown()
	wg.Wait()
	return nil
}

// ApplyNext applies the next key's latest value, waiting for one; false
// once the queue is shut down.
func (q *Queue[K, V]) ApplyNext(ctx context.Context) bool {
	key, shutdown := q.queue.Get()
	if shutdown {
		return false
	}
	defer q.queue.Done(key)
	q.mu.Lock()
	v, ok := q.next[key]
	delete(q.next, key)
	q.mu.Unlock()
	if !ok {
		return true
	}
	if !q.apply(ctx, key, v) || ctx.Err() != nil {
		q.queue.Forget(key)
		return true
	}
	q.mu.Lock()
	if _, newer := q.next[key]; !newer {
		q.next[key] = v
	}
	q.mu.Unlock()
	q.queue.AddRateLimited(key)
	return true
}
