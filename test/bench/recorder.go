package main

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// record is what the benchmark saw of one workload (or baseline pod).
type record struct {
	phase, name string
	replicas    int
	created     time.Time
	// scheduled: clusterRef written (placer) or the pod bound (baseline).
	scheduled time.Time
	// candidates: every replica has a chaperon in some member; pods:
	// every replica has a pod there (placer only).
	candidates, pods time.Time
	// committed: every replica's chaperon is-allowed, or allowed when
	// reserved and reserved (placer only).
	committed time.Time
	// bound: every replica's pod bound to a node.
	bound time.Time
	// running: every replica's pod Running.
	running time.Time

	allowed, boundReplicas, runningReplicas, candidateReplicas, podReplicas map[string]bool
	// proxy: a proxy pod's record (the front end): Running is the proxy
	// pod's, stamped by watchProxyPods, not its delegate's.
	proxy bool
}

// phaseCounts are the handshake's costs in one phase.
type phaseCounts struct {
	chaperons int // chaperons (candidate pods) created
	reserved  int // candidates a target scheduler reserved (is-reserved) or bound
	// reservations counts every transition to reserved (or bound): more
	// than reserved when a candidate is reserved again (a permit timeout).
	reservations int
}

// recorder stamps records from watch events: Workloads in the management
// cluster, chaperons and pods in every member. Times are when this
// process saw the event.
type recorder struct {
	mu      sync.Mutex
	recs    map[string]*record // by namespace/name
	counts  map[string]*phaseCounts
	seen    map[string]bool // chaperon UIDs counted, and reserved ones
	done    map[string]int  // completed records per phase
	changed chan struct{}
	// shareOf maps a share of a Divided Workload to the Workload.
	shareOf map[string]string
}

func newRecorder() *recorder {
	return &recorder{recs: map[string]*record{}, counts: map[string]*phaseCounts{}, seen: map[string]bool{}, done: map[string]int{}, changed: make(chan struct{}, 1),
		shareOf: map[string]string{}}
}

func (r *recorder) add(rec *record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(rec)
}

func (r *recorder) addLocked(rec *record) {
	rec.allowed, rec.boundReplicas, rec.runningReplicas = map[string]bool{}, map[string]bool{}, map[string]bool{}
	rec.candidateReplicas, rec.podReplicas = map[string]bool{}, map[string]bool{}
	r.recs[rec.phase+"/"+rec.name] = rec
	if r.counts[rec.phase] == nil {
		r.counts[rec.phase] = &phaseCounts{}
	}
}

// reset forgets a phase's records and counts, for a new measure in its
// namespace.
func (r *recorder) reset(phase string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, rec := range r.recs {
		if rec.phase == phase {
			delete(r.recs, k)
		}
	}
	r.counts[phase], r.done[phase] = &phaseCounts{}, 0
}

func (r *recorder) completed(phase string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.done[phase]
}

func (r *recorder) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func handler(f func(any)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{AddFunc: f, UpdateFunc: func(_, o any) { f(o) }}
}

// watchManagement stamps 'scheduled' from the Workloads' status.
func (r *recorder) watchManagement(ctx context.Context, f *fleet) error {
	c, err := crcache.New(f.mgmt.RESTConfig(), crcache.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.Workload{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler(func(o any) {
		w, ok := o.(*v1alpha1.Workload)
		if !ok {
			return
		}
		now := time.Now()
		r.mu.Lock()
		defer r.mu.Unlock()
		key := w.Namespace + "/" + w.Name
		if of := w.Annotations[v1alpha1.AnnotationShareOf]; of != "" {
			// A share of a Divided Workload: its chaperons and pods
			// count for the Workload's record.
			r.shareOf[key] = w.Namespace + "/" + of
			key = r.shareOf[key]
		}
		if rec := r.recs[key]; rec != nil && rec.scheduled.IsZero() && (w.Status.ClusterRef != nil || len(w.Status.Placements) > 0) {
			rec.scheduled = now
		}
	})); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	c.WaitForCacheSync(ctx)
	return nil
}

// watchMember stamps 'committed' from chaperons, 'running' (and the
// baseline's 'scheduled') from pods, and counts candidates.
func (r *recorder) watchMember(ctx context.Context, f *fleet, i int) error {
	m := f.members[i]
	c, err := crcache.New(m.RESTConfig(), crcache.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return err
	}
	inf, err := c.GetInformer(ctx, &mcv1alpha1.PodChaperon{})
	if err != nil {
		return err
	}
	if _, err := inf.AddEventHandler(handler(func(o any) { r.chaperon(o) })); err != nil {
		return err
	}
	go func() { _ = c.Start(ctx) }()
	c.WaitForCacheSync(ctx)

	factory := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(m.RESTConfig()), 0)
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(handler(func(o any) { r.pod(o) })); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return nil
}

func (r *recorder) chaperon(o any) {
	ch, ok := o.(*mcv1alpha1.PodChaperon)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := r.counts[ch.Namespace]
	if counts == nil {
		return
	}
	uid := string(ch.UID)
	if !r.seen[uid] {
		r.seen[uid] = true
		counts.chaperons++
	}
	// Reserved: is-reserved, or bound (a candidate allowed in advance
	// binds at once, with no is-reserved write).
	isReserved := ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true" || scheduled(ch)
	if isReserved && !r.seen[uid+"/reserved"] {
		r.seen[uid+"/reserved"] = true
		counts.reserved++
	}
	if isReserved && !r.seen[uid+"/now-reserved"] {
		counts.reservations++
	}
	r.seen[uid+"/now-reserved"] = isReserved
	rec, replica := r.recordOf(ch.Namespace, workloadName(ch.Annotations), ch.Labels[mcv1alpha1.LabelReplica])
	if rec == nil {
		return
	}
	rec.stampAll(rec.candidateReplicas, replica, &rec.candidates, now)
	committed := ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true" ||
		ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] == "true" && isReserved
	if !committed {
		return
	}
	rec.stampAll(rec.allowed, replica, &rec.committed, now)
}

func (r *recorder) pod(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	name, replica := workloadName(p.Annotations), p.Labels[mcv1alpha1.LabelReplica]
	base := isBaseline(p.Namespace)
	if base {
		var ok bool
		if name, replica, ok = recordOf(p); !ok {
			return
		}
	}
	var rec *record
	if base {
		rec = r.recs[p.Namespace+"/"+name]
	} else {
		rec, replica = r.recordOf(p.Namespace, name, replica)
	}
	if rec == nil {
		return
	}
	if base && p.Spec.NodeName != "" && rec.scheduled.IsZero() {
		rec.scheduled = now
	}
	if !base && p.DeletionTimestamp == nil {
		rec.stampAll(rec.podReplicas, replica, &rec.pods, now)
	}
	if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
		rec.stampAll(rec.boundReplicas, replica, &rec.bound, now)
	}
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || rec.proxy {
		return
	}
	if rec.stampAll(rec.runningReplicas, replica, &rec.running, now) {
		r.done[rec.phase]++
		r.notify()
	}
}

// recordOf is the record of a Workload's chaperon or pod, and the key of
// its replica there: a share's count for the Workload it is a share of,
// each share's replicas apart.
func (r *recorder) recordOf(namespace, workload, replica string) (*record, string) {
	key := namespace + "/" + workload
	if parent, ok := r.shareOf[key]; ok {
		return r.recs[parent], workload + "/" + replica
	}
	return r.recs[key], replica
}

// stampAll marks the replica seen in one of rec's per-replica sets and
// stamps at with now the first time every replica is; stamped reports
// that it did.
func (rec *record) stampAll(seen map[string]bool, replica string, at *time.Time, now time.Time) (stamped bool) {
	seen[replica] = true
	if len(seen) < rec.replicas || !at.IsZero() {
		return false
	}
	*at = now
	return true
}

// workloadName is the name part of the chaperon's workload annotation.
func workloadName(a map[string]string) string {
	_, name, _ := strings.Cut(a[mcv1alpha1.AnnotationWorkload], "/")
	return name
}

// wait returns once n records of the phase completed, or at the timeout.
func (r *recorder) wait(ctx context.Context, phase string, n int, timeout time.Duration) int {
	deadline := time.After(timeout)
	for {
		if got := r.completed(phase); got >= n {
			return got
		}
		select {
		case <-r.changed:
		case <-deadline:
			return r.completed(phase)
		case <-ctx.Done():
			return r.completed(phase)
		}
	}
}

// records returns a phase's records.
func (r *recorder) records(phase string) []*record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*record
	for _, rec := range r.recs {
		if rec.phase == phase {
			cp := *rec
			out = append(out, &cp)
		}
	}
	return out
}

func (r *recorder) phaseCounts(phase string) phaseCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.counts[phase]; c != nil {
		return *c
	}
	return phaseCounts{}
}

// scheduled: the chaperon's pod is bound (its mirrored PodScheduled).
func scheduled(ch *mcv1alpha1.PodChaperon) bool {
	_, c := podutil.GetPodConditionFromList(ch.Status.Conditions, corev1.PodScheduled)
	return c != nil && c.Status == corev1.ConditionTrue
}
