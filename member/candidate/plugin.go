// Package candidate is the kube-scheduler plugin of placer's candidate
// scheduler. It turns a target cluster's real kube-scheduler into the
// target side of the handshake: a candidate pod is scheduled for real,
// reserved (Reserve marks its PodChaperon is-reserved=true), and held at
// Permit until the management side marks the chaperon is-allowed=true.
package candidate

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/internal/latest"
)

// Name of the plugin in the scheduler configuration.
const Name = mcv1alpha1.CandidatePluginName

// ProfileName is the schedulerName of candidate pods.
const ProfileName = mcv1alpha1.CandidateSchedulerName

// DefaultPermitTimeout bounds how long a reserved candidate waits for
// is-allowed. It must be at least the manager's handshake timeout (one
// minute by default): a shorter one gives up reservations the management
// side is still waiting for, and under a backlog the cluster reserves the
// same candidates again and again.
const DefaultPermitTimeout = 2 * time.Minute

// annotationWriters is how many is-reserved writes are in flight at once.
const annotationWriters = 4

var chaperons = mcv1alpha1.GroupVersion.WithResource("podchaperons")

// Plugin reserves candidate pods and holds them until their chaperon is allowed.
type Plugin struct {
	handle  fwk.Handle
	client  metadata.Interface
	lister  cache.GenericLister
	timeout time.Duration
	now     func() time.Time
	// marks queues the is-reserved writes of Reserve and Unreserve.
	marks *latest.Queue[types.NamespacedName, reservedMark]
	// after runs f once d has passed (time.AfterFunc; tests replace it).
	after func(d time.Duration, f func())
}

// recheck is how long after Permit said Wait the plugin looks once more
// whether the pod's chaperon is allowed (lookAgain).
const recheck = time.Second

var (
	_ fwk.QueueSortPlugin  = &Plugin{}
	_ fwk.ReservePlugin    = &Plugin{}
	_ fwk.PermitPlugin     = &Plugin{}
	_ fwk.PostFilterPlugin = &Plugin{}
)

// NewFactory returns the plugin factory with the given permit timeout.
func NewFactory(timeout time.Duration) func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, h, timeout)
	}
}

// New starts an informer on PodChaperons and returns the plugin. The
// informer releases a waiting pod as soon as its chaperon is allowed: no polling.
// It watches the chaperons' metadata alone (the plugin reads their
// annotations, never the pod spec they carry), without managedFields.
func New(ctx context.Context, h fwk.Handle, timeout time.Duration) (*Plugin, error) {
	if timeout <= 0 {
		timeout = DefaultPermitTimeout
	}
	mc, err := metadata.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, err
	}
	factory := metadatainformer.NewFilteredSharedInformerFactory(mc, 0, metav1.NamespaceAll, nil)
	inf := factory.ForResource(chaperons)
	if err := inf.Informer().SetTransform(stripManagedFields); err != nil {
		return nil, err
	}
	p := &Plugin{handle: h, client: mc, lister: inf.Lister(), timeout: timeout, now: time.Now,
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
	p.marks = latest.New(annotationWriters, p.markReserved)
	go func() { _ = p.marks.Start(ctx) }()
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.release,
		UpdateFunc: func(_, o any) { p.release(o) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return p, nil
}

// Name of the plugin.
func (p *Plugin) Name() string { return Name }

// chaperonOf returns the name of the pod's controlling PodChaperon, if any.
func chaperonOf(pod *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "PodChaperon" || ref.APIVersion != mcv1alpha1.GroupVersion.String() {
		return "", false
	}
	return ref.Name, true
}

// lessPods orders the scheduling queue as kube-scheduler's PrioritySort
// does (higher pod priority first, then the earlier arrival), except that
// of equal priority the chosen cluster's candidates go before the
// runner-ups of a fan-out (annotated runner-up): a burst of fanned-out
// Workloads does not make the Workloads placed here wait behind those
// proving this cluster only in case another one fails. A pod made for a
// chaperon already allowed (a replacement, once the cluster committed) is
// no runner-up, whatever its annotation says. Less, whose signature is
// kube-scheduler's of each minor version (less.go, less_kube1.37.go), calls it.
func lessPods(pa, pb *corev1.Pod, ta, tb time.Time) bool {
	if qa, qb := corev1helpers.PodPriority(pa), corev1helpers.PodPriority(pb); qa != qb {
		return qa > qb
	}
	if ra, rb := isRunnerUp(pa), isRunnerUp(pb); ra != rb {
		return rb
	}
	return ta.Before(tb)
}

func isRunnerUp(pod *corev1.Pod) bool {
	return pod.Annotations[mcv1alpha1.AnnotationRunnerUp] == "true" && pod.Annotations[mcv1alpha1.AnnotationIsAllowed] != "true"
}

// Reserve marks the pod's chaperon is-reserved=true: this cluster has a
// node for the candidate. The write leaves kube-scheduler's serial
// scheduling cycle: it is queued and applied by the plugin's writers. The
// management side acts on the annotation only once it is written.
//
// A candidate allowed in advance (allow-when-reserved: a gang of one)
// gets no mark: Permit lets it bind at once, and its binding, which the
// agent mirrors onto the chaperon, says what is-reserved would have said
// (the propagator counts such a candidate committed once it is reserved
// or bound). A write to the chaperon, which carries a whole pod spec,
// saved per candidate.
func (p *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	if name, ok := heldChaperonOf(pod); ok {
		p.marks.Set(types.NamespacedName{Namespace: pod.Namespace, Name: name}, markOf(pod, true))
	}
	return nil
}

// Unreserve clears is-reserved: the reservation was given up. Queued as
// Reserve is; the latest of the two for a chaperon is what is written.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	if name, ok := heldChaperonOf(pod); ok {
		p.marks.Set(types.NamespacedName{Namespace: pod.Namespace, Name: name}, markOf(pod, false))
	}
}

// heldChaperonOf returns the name of the pod's chaperon when the pod is
// a candidate that waits to be allowed: not one allowed in advance.
func heldChaperonOf(pod *corev1.Pod) (string, bool) {
	name, ok := chaperonOf(pod)
	return name, ok && pod.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] != "true"
}

// PostFilter clears the is-reserved mark of a held candidate that fits
// no node: this scheduler holds no reservation for it (a candidate it
// reserved waits at Permit, not in a scheduling cycle), so a mark there
// is one left by a scheduler that stopped while the candidate waited
// (kube-scheduler runs no Unreserve then, and drops the plugin's queued
// writes), or by a leader replaced since. Left, the manager would commit
// on a reservation nobody holds, and the pod would stay Pending in a
// committed cluster. It writes only when the watch shows the mark. It
// runs after the default PostFilter plugins: one that finds the pod room
// (preemption) ends the cycle first, and the pod is reserved again.
func (p *Plugin) PostFilter(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	if name, ok := heldChaperonOf(pod); ok {
		ch, _ := p.chaperon(ctx, pod, name, false)
		if ch != nil && ch.GetAnnotations()[mcv1alpha1.AnnotationIsReserved] == "true" {
			p.marks.Set(types.NamespacedName{Namespace: pod.Namespace, Name: name}, markOf(pod, false))
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable)
}

// Permit lets an allowed candidate bind, and one allowed in advance (a
// gang of one: its pod carries allow-when-reserved); it holds any other
// until its chaperon is allowed or the timeout passes (then the pod is
// unreserved and retried).
//
// A candidate allowed in advance that carries a bind deadline binds only
// before it, on this cluster's clock, and never once the management side
// gave up on it or the agent fenced it (design §4.9): the manager counts
// the cluster as given up only after that, so what it gave up on cannot run.
//
// Such a candidate whose chaperon is gone (deleted: the manager let the
// cluster go), being deleted, or made again under its name (the pod's
// controller reference names another UID) does not bind: its pod is an
// orphan the agent or the garbage collector deletes. The watch may be a
// moment behind the pod's, so a chaperon it has not seen is read live
// first; a read that fails retries the pod.
func (p *Plugin) Permit(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	name, ok := chaperonOf(pod)
	if !ok {
		return nil, 0
	}
	unheld := pod.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] == "true"
	ch, err := p.chaperon(ctx, pod, name, unheld)
	if ch != nil && ch.GetAnnotations()[mcv1alpha1.AnnotationIsAllowed] == "true" {
		return nil, 0
	}
	if unheld {
		switch {
		case err != nil:
			// Retried after a backoff (an error, not a verdict the
			// manager would read as "does not fit").
			return fwk.AsStatus(fmt.Errorf("cannot read the candidate's chaperon %s: %w", name, err)), 0
		case ch == nil:
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonChaperonGone), 0
		}
		if deadline, ok := mcv1alpha1.PodBindDeadline(pod.Annotations); ok && !p.now().Before(deadline) {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonWindowPassed), 0
		}
		if a := ch.GetAnnotations(); a[mcv1alpha1.AnnotationGiveUp] == "true" || a[mcv1alpha1.AnnotationFenced] != "" {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonGivenUp), 0
		}
		return nil, 0
	}
	p.after(recheck, func() { p.lookAgain(pod) })
	return fwk.NewStatus(fwk.Wait, "waiting for the management cluster to allow the candidate"), p.timeout
}

// lookAgain allows the pod if it waits and its own chaperon is allowed by
// now. kube-scheduler adds a pod to its waiting pods only once every
// Permit plugin returned: an is-allowed the watch brought in between
// found no pod to release (release), and the pod would wait for its whole
// Permit timeout. One look, a moment later, not a poll.
func (p *Plugin) lookAgain(pod *corev1.Pod) {
	wp := p.handle.GetWaitingPod(pod.UID)
	if wp == nil {
		return
	}
	name, _ := chaperonOf(pod)
	o, err := p.lister.ByNamespace(pod.Namespace).Get(name)
	if err != nil {
		return
	}
	p.release(o)
}

// Reasons Permit gives for a candidate allowed in advance that may not bind.
const (
	ErrReasonWindowPassed = "the candidate's window to bind without is-allowed has passed"
	ErrReasonGivenUp      = "the management cluster gave up on the candidate"
	ErrReasonChaperonGone = "the candidate's chaperon is gone or being deleted"
)

// liveReadTimeout bounds Permit's read of a chaperon its watch does not
// show as the pod's: it runs in kube-scheduler's scheduling cycle.
const liveReadTimeout = 5 * time.Second

// chaperon returns the metadata of the pod's own chaperon (name, the
// UID of the pod's controller reference, not being deleted), as the
// plugin's watch last saw it; when the watch does not hold it (not seen
// yet, or an older chaperon of that name still there), as the API server
// has it, if live is set. Nil, nil: there is none (one the watch shows
// being deleted is not read again).
func (p *Plugin) chaperon(ctx context.Context, pod *corev1.Pod, name string, live bool) (metav1.Object, error) {
	uid := metav1.GetControllerOf(pod).UID
	own := func(m metav1.Object) bool { return m.GetUID() == uid && m.GetDeletionTimestamp() == nil }
	if o, err := p.lister.ByNamespace(pod.Namespace).Get(name); err == nil {
		if m, ok := o.(metav1.Object); ok && m.GetUID() == uid {
			if !own(m) {
				return nil, nil
			}
			return m, nil
		}
	}
	if !live {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, liveReadTimeout)
	defer cancel()
	m, err := p.client.Resource(chaperons).Namespace(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case kerrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case !own(m):
		return nil, nil
	}
	return m, nil
}

// stripManagedFields drops the informer's copies' managedFields, which
// the plugin never reads. Its own, not controller-runtime's
// TransformStripManagedFields: the candidate scheduler is also built
// against other kube-scheduler minors (hack/candidate), whose modules do
// not take controller-runtime.
func stripManagedFields(o any) (any, error) {
	if m, ok := o.(metav1.Object); ok && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return o, nil
}

// release lets the waiting pod of an allowed chaperon bind (its own: a
// pod of an earlier chaperon of that name is not).
func (p *Plugin) release(o any) {
	u, ok := o.(metav1.Object)
	if !ok || u.GetAnnotations()[mcv1alpha1.AnnotationIsAllowed] != "true" || u.GetDeletionTimestamp() != nil {
		return
	}
	// Candidate pods carry their chaperon's name; few pods wait at a time.
	p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		pod := wp.GetPod()
		if name, ok := chaperonOf(pod); ok && pod.Namespace == u.GetNamespace() && name == u.GetName() && metav1.GetControllerOf(pod).UID == u.GetUID() {
			wp.Allow(Name)
		}
	})
}

// reservedMark is an is-reserved mark for the chaperon of a UID: the
// pod's controller.
type reservedMark struct {
	uid      types.UID
	reserved bool
}

func markOf(pod *corev1.Pod, reserved bool) reservedMark {
	m := reservedMark{reserved: reserved}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		m.uid = ref.UID
	}
	return m
}

// markReserved writes is-reserved onto a chaperon (or removes it); the
// plugin's latest.Queue calls it off the scheduling cycle, with the latest
// mark per chaperon, and retries a failed write with a backoff. The patch
// names the chaperon's UID, which the API server never lets change: a
// chaperon of that name made since (the one marked was deleted while the
// write waited or was retried) refuses it, as one gone does, and the write
// is dropped. Before, the mark went onto the new chaperon, and the
// manager counted a reservation nobody held.
func (p *Plugin) markReserved(ctx context.Context, key types.NamespacedName, m reservedMark) (retry bool) {
	value := ""
	if m.reserved {
		value = "true"
	}
	patch := mcv1alpha1.MarkPatch(m.uid, mcv1alpha1.AnnotationIsReserved, value)
	_, err := p.client.Resource(chaperons).Namespace(key.Namespace).Patch(ctx, key.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil || kerrors.IsNotFound(err) || m.uid != "" && mcv1alpha1.MarkRefused(err) {
		return false
	}
	if ctx.Err() == nil {
		klog.FromContext(ctx).Error(err, "cannot write is-reserved", "chaperon", klog.KRef(key.Namespace, key.Name), "reserved", m.reserved)
	}
	return true
}
