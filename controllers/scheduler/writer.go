package scheduler

import (
	"context"
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
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/internal/latest"
	"github.com/placer-dev/placer/scheduler"
)

// decision is what the scheduler writes to one Workload's status: its
// cluster, the nominated clusters and the Scheduled condition.
type decision struct {
	// w is the Workload as the decision was made from it.
	w *v1alpha1.Workload
	// units are where the decision places the Workload (none: nowhere);
	// keep: it leaves the placement as it is.
	units []v1alpha1.PlacementUnit
	keep  bool
	cond  xpv2.Condition
	// left replaces status.leftClusters when not nil.
	left []v1alpha1.LeftCluster
	// chosenAgain: the decision chooses a cluster again despite its
	// rejection; cond says so, and its transition time when
	// (ChoiceAfter).
	chosenAgain bool
	// event is recorded once the decision is written, if its message is
	// news (report); none when its reason is empty.
	event  event.Event
	report bool
}

func newDecision(w *v1alpha1.Workload, units []v1alpha1.PlacementUnit, cond xpv2.Condition) *decision {
	return &decision{w: w, units: units, cond: cond}
}

// keepDecision leaves the Workload's placement as it is.
func keepDecision(w *v1alpha1.Workload, cond xpv2.Condition) *decision {
	return &decision{w: w, keep: true, cond: cond}
}

// placement is what the decision writes to status.clusterRef and
// status.nominatedClusters.
func (d *decision) placement() (*v1alpha1.ClusterReference, []v1alpha1.ClusterReference) {
	if d.keep {
		return d.w.Status.ClusterRef, d.w.Status.NominatedClusters
	}
	s := &v1alpha1.WorkloadStatus{}
	s.Place(d.units)
	return s.ClusterRef, s.NominatedClusters
}

// apply writes the decision into a Workload's status: the scheduler's
// fields alone (clusterRef, nominatedClusters, leftClusters, Scheduled).
// The counts and Ready are the propagator's: it counts again in the new
// cluster, and says what the clusters left still serve.
func (d *decision) apply(w *v1alpha1.Workload) {
	w.Status.ClusterRef, w.Status.NominatedClusters = d.placement()
	if d.left != nil {
		w.Status.LeftClusters = nil
		if len(d.left) > 0 {
			w.Status.LeftClusters = d.left
		}
	}
	if d.cond.Type != "" {
		w.Status.SetConditions(d.cond)
	}
}

// leftAfter are the Workload's status.leftClusters once the decision is
// made: without the clusters where the propagator counts nothing of it
// any more (Workload.LeftBehind), and without the chosen cluster (chosen
// again: what is there is the chosen cluster's now).
func (d *decision) leftAfter() []v1alpha1.LeftCluster {
	ref, _ := d.placement()
	out := []v1alpha1.LeftCluster{}
	for _, lc := range d.w.Status.LeftClusters {
		if d.w.LeftBehind(&lc) && (ref == nil || d.w.ClusterKey(ref) != d.w.ClusterKey(&lc.Cluster)) {
			out = append(out, lc)
		}
	}
	return out
}

// assumed is the Workload as the cache assumes it: its status as the
// decision leaves it.
func (d *decision) assumed() *v1alpha1.Workload {
	w := *d.w
	w.Status = *d.w.Status.DeepCopy()
	d.apply(&w)
	return &w
}

// orNil returns the decision, or nil when the status already says it.
func (d *decision) orNil() *decision {
	prev := d.w.Status.GetCondition(v1alpha1.TypeScheduled)
	ref, nominated := d.placement()
	if left := d.leftAfter(); d.left == nil && len(left) != len(d.w.Status.LeftClusters) {
		d.left = left
	}
	// An empty condition leaves Scheduled as it is.
	same := d.cond.Type == "" || prev.Equal(d.cond)
	if equality.Semantic.DeepEqual(ref, d.w.Status.ClusterRef) && equality.Semantic.DeepEqual(nominated, d.w.Status.NominatedClusters) && same &&
		(d.left == nil || equality.Semantic.DeepEqual(d.left, d.w.Status.LeftClusters)) && !d.chosenAgain {
		return nil
	}
	if d.cond.Type == "" {
		return d
	}
	if prev.Status == d.cond.Status && !d.chosenAgain && !prev.LastTransitionTime.IsZero() && equality.Semantic.DeepEqual(ref, d.w.Status.ClusterRef) {
		// Only a change of status, or of cluster, is a transition: the
		// propagator counts a handshake's patience from it.
		d.cond.LastTransitionTime = prev.LastTransitionTime
	}
	d.report = prev.Message != d.cond.Message
	return d
}

// statusWriter applies the scheduler's decisions to the API server with a
// pool of workers (latest.Queue: a Workload's writes in order, one at a
// time, the latest decision replacing one not yet written), so the
// decision loop never waits on a write. A write carries the
// resourceVersion the decision was made from: one that meets a newer
// Workload forgets the assumption and sends the Workload back to the
// decision loop, after a backoff.
type statusWriter struct {
	*latest.Queue[types.NamespacedName, *decision]
	client client.Client
	// reader is the manager's cache: after a failed write the cache
	// goes back to its copy, which is at least as new as the decision's.
	reader  client.Reader
	cache   *scheduler.Cache
	trigger *shared.Trigger
	record  event.Recorder
	log     logging.Logger
	backoff workqueue.TypedRateLimiter[types.NamespacedName]
}

func newStatusWriter(c client.Client, reader client.Reader, cache *scheduler.Cache, t *shared.Trigger, workers int, record event.Recorder, log logging.Logger) *statusWriter {
	if workers <= 0 {
		workers = 8
	}
	s := &statusWriter{
		client: c, reader: reader, cache: cache, trigger: t, record: record, log: log,
		backoff: workqueue.NewTypedItemExponentialFailureRateLimiter[types.NamespacedName](shared.ConflictRetry, 10*time.Second),
	}
	s.Queue = latest.New(workers, func(ctx context.Context, key types.NamespacedName, d *decision) bool {
		if s.write(ctx, key, d) {
			s.trigger.Enqueue(key)
		}
		return false
	})
	return s
}

// Submit queues a decision.
func (s *statusWriter) Submit(d *decision) {
	s.Set(types.NamespacedName{Namespace: d.w.Namespace, Name: d.w.Name}, d)
}

// write applies one decision; again asks the decision loop to look at the
// Workload once more now, because the informer already brought the write
// (a failed write is decided again after a backoff).
func (s *statusWriter) write(ctx context.Context, key types.NamespacedName, d *decision) (again bool) {
	w := d.w.DeepCopy()
	d.apply(w)
	res, err := shared.PatchStatus(ctx, s.client, s.reader, w, d.w)
	if res != shared.StatusUnchanged {
		schedulerWrites.WithLabelValues(string(res)).Inc()
	}
	if res != shared.StatusWritten && res != shared.StatusUnchanged {
		// The Workload changed (or is gone) since the decision: forget
		// it; the decision loop decides again from what is there: at once
		// when the cache already has it (the propagator wrote while the
		// decision waited for its turn), after a backoff otherwise.
		cur := &v1alpha1.Workload{}
		if s.reader.Get(ctx, key, cur) != nil || cur.UID != d.w.UID {
			cur = d.w
		}
		s.cache.Forget(cur)
		if err != nil {
			s.log.Info("cannot write a scheduling decision", "workload", key.String(), "error", err)
		}
		if res == shared.StatusSuperseded {
			return true
		}
		s.trigger.EnqueueAfter(key, s.backoff.When(key))
		return false
	}
	if w.ResourceVersion == d.w.ResourceVersion {
		// Nothing was written (the status already said it): no copy of
		// a write will come to confirm the assumption.
		s.cache.Forget(d.w)
		return true
	}
	s.backoff.Forget(key)
	if d.report {
		if d.event.Reason != "" && !podSays(w, d.event) {
			s.record.Event(w, d.event)
		}
		s.log.Info(d.cond.Message, "workload", key.String(), "scheduled", d.cond.Status == corev1.ConditionTrue)
	}
	return s.cache.Written(w.UID, w.ResourceVersion)
}

// podSays reports whether a proxy pod tells a person what the Event would
// tell of its Workload: a proxy pod's Workload is placer's, made for the
// pod, whose own Scheduled Event (at its binding) says where it runs; its
// Workload's would be a management write per pod nobody reads. A move's
// Event (why it moved) and Warnings still go to the Workload.
func podSays(w *v1alpha1.Workload, e event.Event) bool {
	_, proxy := w.Labels[v1alpha1.LabelProxyPod]
	return proxy && e.Type == event.TypeNormal && e.Reason == v1alpha1.ReasonScheduled
}
