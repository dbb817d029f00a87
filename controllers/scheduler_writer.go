package controllers

import (
	"context"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// decision is what the scheduler writes to one Workload's status: its
// cluster, the nominated clusters and the Scheduled condition.
type decision struct {
	// w is the Workload as the decision was made from it.
	w          *v1alpha1.Workload
	clusterRef *v1alpha1.ClusterReference
	nominated  []v1alpha1.ClusterReference
	cond       xpv2.Condition
	// event is recorded once the decision is written, if its message is
	// news (report); none when its reason is empty.
	event  event.Event
	report bool
}

func newDecision(w *v1alpha1.Workload, ref *v1alpha1.ClusterReference, nominated []v1alpha1.ClusterReference, cond xpv2.Condition) *decision {
	return &decision{w: w, clusterRef: ref, nominated: nominated, cond: cond}
}

// orNil returns the decision, or nil when the status already says it.
func (d *decision) orNil() *decision {
	prev := d.w.Status.GetCondition(v1alpha1.TypeScheduled)
	if !d.moves() && equality.Semantic.DeepEqual(d.nominated, d.w.Status.NominatedClusters) && prev.Equal(d.cond) {
		return nil
	}
	if prev.Status == d.cond.Status && !prev.LastTransitionTime.IsZero() {
		// Only a change of status is a transition.
		d.cond.LastTransitionTime = prev.LastTransitionTime
	}
	d.report = prev.Message != d.cond.Message
	return d
}

// moves reports whether the decision changes the Workload's cluster.
func (d *decision) moves() bool {
	return !equality.Semantic.DeepEqual(d.clusterRef, d.w.Status.ClusterRef)
}

// statusWriter applies the scheduler's decisions to the API server with a
// pool of workers, so the decision loop never waits on a write. A
// Workload's writes are applied in order, one at a time (the work queue
// never hands one key to two workers), the latest decision replacing one
// not yet written. A write carries the resourceVersion the decision was
// made from: one that meets a newer Workload forgets the assumption and
// sends the Workload back to the decision loop, after a backoff.
type statusWriter struct {
	client  client.Client
	cache   *scheduler.Cache
	trigger *trigger
	workers int
	record  event.Recorder
	log     logging.Logger

	queue   workqueue.TypedInterface[types.NamespacedName]
	backoff workqueue.TypedRateLimiter[types.NamespacedName]

	mu sync.Mutex
	// next is the decision to write per Workload; busy the Workloads
	// being written; skipped those the decision loop passed over
	// meanwhile, looked at again once the write is done.
	next    map[types.NamespacedName]*decision
	busy    map[types.NamespacedName]bool
	skipped map[types.NamespacedName]bool
}

func newStatusWriter(c client.Client, cache *scheduler.Cache, t *trigger, workers int, record event.Recorder, log logging.Logger) *statusWriter {
	if workers <= 0 {
		workers = 8
	}
	return &statusWriter{
		client: c, cache: cache, trigger: t, workers: workers, record: record, log: log,
		queue:   workqueue.NewTyped[types.NamespacedName](),
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](conflictRetry, 10*time.Second),
		next:    map[types.NamespacedName]*decision{},
		busy:    map[types.NamespacedName]bool{},
		skipped: map[types.NamespacedName]bool{},
	}
}

// Submit queues a decision.
func (s *statusWriter) Submit(d *decision) {
	key := types.NamespacedName{Namespace: d.w.Namespace, Name: d.w.Name}
	s.mu.Lock()
	s.next[key] = d
	s.mu.Unlock()
	s.queue.Add(key)
}

// Busy reports whether a decision about the Workload is queued or being
// written; if so, the Workload is sent back to the decision loop when the
// write is done.
func (s *statusWriter) Busy(key types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, queued := s.next[key]
	if queued || s.busy[key] {
		s.skipped[key] = true
		return true
	}
	return false
}

// Start runs the writers until ctx ends.
func (s *statusWriter) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			for s.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	s.queue.ShutDown()
	wg.Wait()
	return nil
}

func (s *statusWriter) processNext(ctx context.Context) bool {
	key, shutdown := s.queue.Get()
	if shutdown {
		return false
	}
	defer s.queue.Done(key)
	s.mu.Lock()
	d := s.next[key]
	delete(s.next, key)
	s.busy[key] = true
	s.mu.Unlock()

	again := d != nil && s.write(ctx, key, d)

	s.mu.Lock()
	delete(s.busy, key)
	again = again || s.skipped[key]
	delete(s.skipped, key)
	s.mu.Unlock()
	if again {
		s.trigger.Enqueue(key)
	}
	return true
}

// write applies one decision; again asks the decision loop to look at the
// Workload once more now (a failed write is retried after a backoff).
func (s *statusWriter) write(ctx context.Context, key types.NamespacedName, d *decision) (again bool) {
	w := d.w.DeepCopy()
	w.Status.ClusterRef, w.Status.NominatedClusters = d.clusterRef, d.nominated
	w.Status.SetConditions(d.cond)
	written, err := patchStatus(ctx, s.client, w, d.w)
	schedulerWrites.WithLabelValues(writeResult(written, err)).Inc()
	if err != nil || !written {
		// The Workload changed (or is gone) since the decision: forget
		// it; the decision loop decides again from what is there.
		s.cache.Forget(d.w)
		if err != nil {
			s.log.Info("cannot write a scheduling decision", "workload", key.String(), "error", err)
		}
		s.trigger.EnqueueAfter(key, s.backoff.When(key))
		return false
	}
	s.backoff.Forget(key)
	if d.report {
		if d.event.Reason != "" {
			s.record.Event(w, d.event)
		}
		s.log.Info(d.cond.Message, "workload", key.String(), "scheduled", d.cond.Status == corev1.ConditionTrue)
	}
	return s.cache.Written(w.UID, w.ResourceVersion)
}

func writeResult(written bool, err error) string {
	switch {
	case err != nil:
		return "error"
	case !written:
		return "conflict"
	default:
		return "written"
	}
}
