// Package agent holds the reconcilers placer runs inside a target cluster.
package agent

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	nodeutil "k8s.io/component-helpers/node/util"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	crevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

const (
	errGetChaperon    = "cannot get PodChaperon"
	errGetPod         = "cannot get candidate Pod"
	errCreatePod      = "cannot create candidate Pod"
	errDeletePod      = "cannot delete candidate Pod"
	errMirrorStatus   = "cannot mirror the Pod's status onto the PodChaperon"
	errMirrorMetadata = "cannot mirror the Pod's annotations onto the PodChaperon"
	errFence          = "cannot fence the candidate"
	errMarkAllowed    = "cannot mark the committed candidate is-allowed before its pod is replaced"
	errGetNode        = "cannot get the candidate Pod's node"

	reasonReplacedPod event.Reason = "ReplacedPod"
	reasonRefusedPod  event.Reason = "RefusedPod"
	reasonFenced      event.Reason = "Fenced"
)

// ChaperonReconciler runs in a target cluster (placer agent): each
// PodChaperon becomes a candidate Pod of the same name, owned by it; the
// Pod's status and its non-placer annotations are mirrored back; a Pod that
// is deleted, evicted, preempted or lost is replaced, and one that ended
// on its own (a batch pod that succeeded or failed) never is. It needs nothing from the
// management cluster, so it keeps pods running while that is unreachable.
type ChaperonReconciler struct {
	client client.Client
	// reader reads a candidate Pod from the API server itself before it is
	// fenced: the cache may not show a binding yet.
	reader client.Reader
	record event.Recorder
	log    logging.Logger

	// boundAt: when the agent first saw each pod (by UID) bound and not
	// started, while it holds that status back (hold).
	mu      sync.Mutex
	boundAt map[types.UID]time.Time
	now     func() time.Time
	// graces: the deletion grace period of chaperons seen deleted
	// (AnnotationDeletionGracePeriod, from the watch's last state), for
	// their Pods' deletion.
	graces sync.Map
}

// settle is how long the status of a pod just bound, not started yet, is
// held back before it is mirrored: its kubelet usually starts it within
// that, and one write then says both. Nothing waits on the bound status
// alone (a candidate that holds is committed by is-reserved; one allowed
// in advance once bound, which settle delays by at most this much).
const settle = time.Second

// +kubebuilder:rbac:groups=multicluster.placer.dev,resources=podchaperons,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=multicluster.placer.dev,resources=podchaperons/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete

// SetupChaperonController adds the chaperon controller to a target
// cluster's manager, reconciling up to workers chaperons at once (8 when zero).
func SetupChaperonController(mgr ctrl.Manager, workers int) error {
	if workers == 0 {
		workers = 8
	}
	r := &ChaperonReconciler{
		client:  mgr.GetClient(),
		reader:  mgr.GetAPIReader(),
		record:  event.NewAPIRecorder(mgr.GetEventRecorderFor("placer-agent")), //nolint:staticcheck // crossplane-runtime's recorder takes the legacy interface.
		log:     logging.NewLogrLogger(mgr.GetLogger().WithName("chaperon")),
		boundAt: map[types.UID]time.Time{},
		now:     time.Now,
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("chaperon").
		For(&mcv1alpha1.PodChaperon{}, builder.WithPredicates(predicate.Funcs{DeleteFunc: func(e crevent.DeleteEvent) bool {
			r.rememberGrace(e.Object)
			return true
		}})).
		Owns(&corev1.Pod{}).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// Reconcile keeps one candidate Pod for the chaperon and mirrors it back.
func (r *ChaperonReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ch := &mcv1alpha1.PodChaperon{}
	if err := r.client.Get(ctx, req.NamespacedName, ch); err != nil {
		if kerrors.IsNotFound(err) {
			return reconcile.Result{}, r.deleteOrphan(ctx, req)
		}
		return reconcile.Result{}, errors.Wrap(err, errGetChaperon)
	}
	if _, ok := mcv1alpha1.DeletionGrace(ch); ok {
		// The chaperon goes (or is about to), its Pod with a grace
		// period of its own; before the garbage collector's deletion of
		// a chaperon deleted in the foreground, which has none.
		r.rememberGrace(ch)
		return reconcile.Result{}, r.deleteOrphan(ctx, req)
	}
	if ch.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	pod := &corev1.Pod{}
	err := r.client.Get(ctx, req.NamespacedName, pod)
	if err != nil && !kerrors.IsNotFound(err) {
		return reconcile.Result{}, errors.Wrap(err, errGetPod)
	}
	found := err == nil
	fenced, wait, ferr := r.fenceIfDue(ctx, ch, pod, found)
	if fenced || ferr != nil {
		return reconcile.Result{}, ferr
	}
	res, err := r.keepPod(ctx, ch, pod, err)
	if wait > 0 && (res.RequeueAfter == 0 || wait < res.RequeueAfter) {
		// Back when the bind window ends, to fence the candidate then.
		res.RequeueAfter = wait
	}
	return res, err
}

// keepPod keeps the chaperon's pod (got is the outcome of reading it) and
// mirrors it back.
func (r *ChaperonReconciler) keepPod(ctx context.Context, ch *mcv1alpha1.PodChaperon, pod *corev1.Pod, got error) (reconcile.Result, error) {
	err := got
	switch {
	case kerrors.IsNotFound(err) && podutil.IsPodPhaseTerminal(ch.Status.Phase):
		// It ran to completion (or failed) on its own (the agent mirrors
		// a terminal phase only then): a batch pod runs once, and its
		// chaperon keeps how it ended.
		return reconcile.Result{}, nil
	case kerrors.IsNotFound(err):
		return r.createPod(ctx, ch)
	case err != nil:
		return reconcile.Result{}, errors.Wrap(err, errGetPod)
	case !metav1.IsControlledBy(pod, ch):
		// A Pod of that name that is not ours is never touched.
		return reconcile.Result{}, nil
	case pod.DeletionTimestamp != nil:
		// Replaced once it is gone: its deletion event brings us back.
		// Meanwhile it is not Ready, as a ReplicaSet counts a pod being
		// deleted: no rollout or move counts on it (only Ready changes;
		// whatever phase it ends in says nothing of the chaperon's
		// replica, which gets a new pod).
		if _, err := r.allowIfBound(ctx, ch, pod.Status.Conditions); err != nil {
			return reconcile.Result{}, err
		}
		if err := r.terminating(ctx, ch); err != nil {
			return reconcile.Result{}, err
		}
		return r.replaceLost(ctx, ch, pod)
	case pod.Status.Phase == corev1.PodFailed && !EndedOnItsOwn(pod):
		// Evicted, preempted, refused by its kubelet or lost: delete it;
		// its deletion brings a new one.
		if _, err := r.allowIfBound(ctx, ch, pod.Status.Conditions); err != nil {
			return reconcile.Result{}, err
		}
		r.record.Event(ch, event.Normal(reasonReplacedPod, "candidate Pod failed ("+pod.Status.Reason+"); replacing it"))
		return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID})), errDeletePod)
	}
	return r.mirror(ctx, ch, pod)
}

// allowIfBound marks is-allowed a candidate allowed in advance whose pod
// bound inside its window (conds: the pod's, or its chaperon's status
// mirrored from it), once and for good: it is committed (the management
// side counts it so, and writes nothing for it), and its replacement,
// its window over, must bind whenever it can, never be fenced. Called
// before a bound pod goes (its status may never have said it bound: a pod
// refused by its kubelet, or preempted, before the agent mirrored the
// binding), and before a replacement is made (then the status's proof).
// refused: the chaperon is gone, or made again since it was read.
func (r *ChaperonReconciler) allowIfBound(ctx context.Context, ch *mcv1alpha1.PodChaperon, conds []corev1.PodCondition) (refused bool, err error) {
	if ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true" || !boundInWindow(ch, conds) {
		return false, nil
	}
	err = r.client.Patch(ctx, ch, client.RawPatch(types.MergePatchType, mcv1alpha1.IsAllowedPatch(ch.UID)))
	if mcv1alpha1.MarkRefused(err) {
		return true, nil
	}
	return false, errors.Wrap(err, errMarkAllowed)
}

// fenceIfDue fences a candidate that may bind without is-allowed once the
// management side gave up on it or its bind window has passed on this
// cluster's clock (design §4.9): unless it is bound already, its pod is
// deleted (only if unchanged since read from the API server, so a binding
// that lands meanwhile wins) and the chaperon is marked fenced, after
// which it never gets a pod again. Until its window ends, wait says when
// to look again. found says whether pod was read.
func (r *ChaperonReconciler) fenceIfDue(ctx context.Context, ch *mcv1alpha1.PodChaperon, pod *corev1.Pod, found bool) (fenced bool, wait time.Duration, err error) {
	if ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true" || boundInWindow(ch, ch.Status.Conditions) || found && pod.Spec.NodeName != "" && metav1.IsControlledBy(pod, ch) {
		// Allowed, or bound (inside its window): nothing to fence, and a
		// pod that goes later is replaced as any other.
		return false, 0, nil
	}
	why := ch.Annotations[mcv1alpha1.AnnotationFenced]
	if why == "" && ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" {
		why = mcv1alpha1.FencedGivenUp
	}
	if why == "" {
		deadline, ok := ch.BindDeadline()
		if !ok {
			return false, 0, nil
		}
		if wait = deadline.Sub(r.now()); wait > 0 {
			return false, wait, nil
		}
		why = mcv1alpha1.FencedWindow
	}
	if ch.Annotations[mcv1alpha1.AnnotationFenced] == "" {
		// Read live: the cache may not show a binding, or a pod, yet.
		live := &corev1.Pod{}
		err := r.reader.Get(ctx, types.NamespacedName{Namespace: ch.Namespace, Name: ch.Name}, live)
		if resource.IgnoreNotFound(err) != nil {
			return false, 0, errors.Wrap(err, errGetPod)
		}
		pod, found = live, err == nil
	}
	if found && metav1.IsControlledBy(pod, ch) {
		if pod.Spec.NodeName != "" {
			// It bound inside its window: the management side sees it so.
			return false, 0, nil
		}
		rv := pod.ResourceVersion
		if err := r.client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID, ResourceVersion: &rv}); resource.IgnoreNotFound(err) != nil {
			// A conflict: the pod changed (bound?) since it was read.
			return false, 0, errors.Wrap(err, errFence)
		}
	}
	if ch.Annotations[mcv1alpha1.AnnotationFenced] != "" {
		return true, 0, nil
	}
	// By its UID: never onto a chaperon of the name made since it was read.
	if err := r.client.Patch(ctx, ch, client.RawPatch(types.MergePatchType, mcv1alpha1.MarkPatch(ch.UID, mcv1alpha1.AnnotationFenced, why))); err != nil {
		if mcv1alpha1.MarkRefused(err) {
			return true, 0, nil
		}
		return false, 0, errors.Wrap(err, errFence)
	}
	msg := "the candidate was not bound when its bind window ended: it will not bind here"
	if why == mcv1alpha1.FencedGivenUp {
		msg = "the management cluster gave up on the candidate before it was bound: it will not bind here"
	}
	r.record.Event(ch, event.Normal(reasonFenced, msg))
	return true, 0, nil
}

// boundInWindow reports whether a windowed chaperon's pod bound inside
// its window, by the PodScheduled condition of the pod (or of the
// chaperon's status, mirrored from it): the member's API server stamps it
// at the binding, on the clock that stamped the chaperon's creation.
// Bound after it (a NoReservation pod the member's own scheduler bound
// while the agent was stopped past the window) is no commit: its
// replacement is not allowed on its word.
func boundInWindow(ch *mcv1alpha1.PodChaperon, conds []corev1.PodCondition) bool {
	deadline, ok := ch.BindDeadline()
	if !ok {
		return false
	}
	_, c := podutil.GetPodConditionFromList(conds, corev1.PodScheduled)
	return c != nil && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.After(deadline)
}

// EndedOnItsOwn reports whether a terminal pod ended as its containers
// did, which a batch pod (restartPolicy Never or OnFailure) does once: it
// succeeded, or a container it ran failed (an init container included).
// A pod of restartPolicy Always,
// one that was disrupted (evicted by its kubelet or the API, preempted,
// deleted with its node: the DisruptionTarget condition, or kubelet's
// Evicted reason) and one whose containers never ran (refused at its
// kubelet's admission) did not, and is replaced.
func EndedOnItsOwn(pod *corev1.Pod) bool {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded:
		return true
	case pod.Status.Phase != corev1.PodFailed, pod.Spec.RestartPolicy == corev1.RestartPolicyAlways, pod.Status.Reason == reasonEvicted:
		return false
	}
	if _, c := podutil.GetPodConditionFromList(pod.Status.Conditions, corev1.DisruptionTarget); c != nil && c.Status == corev1.ConditionTrue {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Terminated != nil {
			return true
		}
	}
	// An init container that failed (restartPolicy Never) ends the pod
	// before its containers start: they say PodInitializing, never
	// Terminated.
	for _, cs := range pod.Status.InitContainerStatuses {
		if cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
			return true
		}
	}
	return false
}

// reasonEvicted is the reason kubelet gives a pod it evicts for node pressure.
const reasonEvicted = "Evicted"

// deleteOrphan deletes the Pod of a chaperon that is gone (or going,
// with a deletion grace period to pass on). The garbage
// collector would too, through the owner reference, but only after it has
// rediscovered the PodChaperon kind, which can take half a minute.
func (r *ChaperonReconciler) deleteOrphan(ctx context.Context, req reconcile.Request) error {
	pod := &corev1.Pod{}
	if err := r.client.Get(ctx, req.NamespacedName, pod); err != nil {
		r.graces.Delete(req.NamespacedName)
		return errors.Wrap(resource.IgnoreNotFound(err), errGetPod)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "PodChaperon" || owner.Name != req.Name {
		r.graces.Delete(req.NamespacedName)
		return nil
	}
	opts := []client.DeleteOption{client.Preconditions{UID: &pod.UID}}
	g, ok := r.graces.Load(req.NamespacedName)
	// That chaperon's, not one of the same name's before it.
	ok = ok && g.(grace).chaperon == owner.UID
	if ok {
		opts = append(opts, client.GracePeriodSeconds(g.(grace).seconds))
	}
	if pod.DeletionTimestamp != nil && !(ok && pod.DeletionGracePeriodSeconds != nil && g.(grace).seconds < *pod.DeletionGracePeriodSeconds) {
		// Being deleted already, and not for longer than the chaperon
		// says. Deleted for longer (the garbage collector came first, for
		// a chaperon deleted in the foreground, with the pod's spec's
		// grace): deleted again with the shorter one, as the API server
		// allows.
		r.graces.Delete(req.NamespacedName)
		return nil
	}
	if err := r.client.Delete(ctx, pod, opts...); resource.IgnoreNotFound(err) != nil {
		return errors.Wrap(err, errDeletePod)
	}
	r.graces.Delete(req.NamespacedName)
	return nil
}

// rememberGrace keeps the deletion grace period a chaperon carries for
// its Pod's deletion, which may come after the chaperon is gone.
func (r *ChaperonReconciler) rememberGrace(o client.Object) {
	if g, ok := mcv1alpha1.DeletionGrace(o); ok {
		r.graces.Store(types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}, grace{chaperon: o.GetUID(), seconds: g})
	}
}

// grace is a deleted chaperon's deletion grace period for its Pod.
type grace struct {
	chaperon types.UID
	seconds  int64
}

// refusedRetry is how soon a Pod the API server refused is tried again:
// a quota may have grown; a template the server finds invalid will not,
// and the propagator has rejected the cluster meanwhile.
const refusedRetry = time.Minute

func (r *ChaperonReconciler) createPod(ctx context.Context, ch *mcv1alpha1.PodChaperon) (reconcile.Result, error) {
	// Its replacement's status will no longer say it bound: is-allowed
	// says it first. (One with no window, a replica added to a committed
	// cluster, binds without is-allowed and is never fenced: no mark.)
	if refused, err := r.allowIfBound(ctx, ch, ch.Status.Conditions); refused || err != nil {
		return reconcile.Result{}, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        ch.Name,
			Namespace:   ch.Namespace,
			Labels:      ch.Labels,
			Annotations: ch.Annotations,
		},
		Spec: *ch.Spec.DeepCopy(),
	}
	if deadline, ok := ch.BindDeadline(); ok && ch.Annotations[mcv1alpha1.AnnotationIsAllowed] != "true" {
		// The candidate scheduler reads the window's end off the pod; a
		// replacement of one that bound inside it has none.
		pod.Annotations = maps.Clone(ch.Annotations)
		pod.Annotations[mcv1alpha1.AnnotationBindDeadline] = deadline.UTC().Format(time.RFC3339)
	}
	// A replacement must be scheduled anew.
	pod.Spec.NodeName = ""
	if err := controllerutil.SetControllerReference(ch, pod, r.client.Scheme()); err != nil {
		return reconcile.Result{}, errors.Wrap(err, errCreatePod)
	}
	err := r.client.Create(ctx, pod)
	switch {
	case kerrors.IsAlreadyExists(err):
		return reconcile.Result{}, nil
	case refused(err):
		// Admission said no (validation, Pod Security, quota): no retry
		// storm, and the propagator learns it at once, in the API
		// server's words, from the chaperon's PodScheduled condition.
		return reconcile.Result{RequeueAfter: refusedRetry}, r.reportRefused(ctx, ch, err)
	case err != nil:
		return reconcile.Result{}, errors.Wrap(err, errCreatePod)
	}
	// No Event for a creation: the pod, of the chaperon's name, says it,
	// and its scheduler's Scheduled Event where it went. An Event per
	// candidate was a write per pod (one of about eight member writes per
	// placed pod). What goes wrong still gets one (RefusedPod,
	// ReplacedPod).
	return reconcile.Result{}, nil
}

// refused reports an error of the API server's admission, which a retry
// of the same request does not change.
func refused(err error) bool {
	return kerrors.IsInvalid(err) || kerrors.IsForbidden(err) || kerrors.IsBadRequest(err) || kerrors.IsRequestEntityTooLargeError(err)
}

// reportRefused sets the chaperon's PodScheduled condition to False with
// reason PodRefused and the API server's message.
func (r *ChaperonReconciler) reportRefused(ctx context.Context, ch *mcv1alpha1.PodChaperon, cause error) error {
	msg := "the cluster's API server refused the candidate Pod: " + string(kerrors.ReasonForError(cause))
	var s kerrors.APIStatus
	if errors.As(cause, &s) {
		msg = "the cluster's API server refused the candidate Pod: " + s.Status().Message
	}
	c := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: mcv1alpha1.ReasonPodRefused, Message: msg}
	if _, prev := podutil.GetPodConditionFromList(ch.Status.Conditions, corev1.PodScheduled); prev != nil && prev.Reason == c.Reason && prev.Message == c.Message {
		return nil
	}
	r.record.Event(ch, event.Warning(reasonRefusedPod, errors.New(msg)))
	c.LastTransitionTime = metav1.Now()
	orig := ch.DeepCopy()
	ch.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{c}}
	// A merge patch, as mirror writes the status: the agent is its one writer.
	return errors.Wrap(resource.IgnoreNotFound(r.client.Status().Patch(ctx, ch, client.MergeFrom(orig))), errMirrorStatus)
}

// mirror copies onto the chaperon what the management side reads of the
// Pod's status (its phase, reason and message, and the PodScheduled and
// Ready conditions, without probe times: not every probe, container
// status and address, which would cost a write each), and the Pod's
// annotations outside placer's own prefix (those are the chaperon's, set
// by the scheduler plugin and the propagator). Both are merge patches: the
// agent is the one writer of a chaperon's status, and annotations merge
// key by key. A chaperon annotated mirror-status=full (a proxy pod's)
// carries the Pod's whole status.
//
// The status of a pod just bound is held back a moment (hold), so that
// it is mirrored with the pod's start in one write. The chaperon (its pod
// spec too) is copied only for a patch that is sent.
func (r *ChaperonReconciler) mirror(ctx context.Context, ch *mcv1alpha1.PodChaperon, pod *corev1.Pod) (reconcile.Result, error) {
	var changed map[string]string
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, mcv1alpha1.AnnotationPrefix) || ch.Annotations[k] == v {
			continue
		}
		if changed == nil {
			changed = map[string]string{}
		}
		changed[k] = v
	}
	if len(changed) > 0 {
		orig := ch.DeepCopy()
		if ch.Annotations == nil {
			ch.Annotations = map[string]string{}
		}
		maps.Copy(ch.Annotations, changed)
		if err := r.client.Patch(ctx, ch, client.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errMirrorMetadata)
		}
	}
	status := mirrored(pod.Status)
	if ch.Annotations[mcv1alpha1.AnnotationMirrorStatus] == mcv1alpha1.MirrorStatusFull {
		status = *pod.Status.DeepCopy()
	}
	if !worthMirroring(ch.Status, status) {
		return reconcile.Result{}, nil
	}
	if wait := r.hold(pod.UID, ch.Status, status); wait > 0 {
		// The pod's start (an update of it) or this requeue brings it back.
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	orig := ch.DeepCopy()
	ch.Status = status
	return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(r.client.Status().Patch(ctx, ch, client.MergeFrom(orig))), errMirrorStatus)
}

// terminating marks the chaperon not Ready while its pod is being
// deleted, unless it says so already.
func (r *ChaperonReconciler) terminating(ctx context.Context, ch *mcv1alpha1.PodChaperon) error {
	i, c := podutil.GetPodConditionFromList(ch.Status.Conditions, corev1.PodReady)
	if c == nil || c.Status == corev1.ConditionFalse {
		return nil
	}
	orig := ch.DeepCopy()
	ch.Status.Conditions[i] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: ReasonPodTerminating,
		Message: "the pod is being deleted; a new one replaces it once it is gone", LastTransitionTime: metav1.Now()}
	// Optimistically locked: a copy behind a newer mirror must not write
	// its conditions back over it.
	return errors.Wrap(resource.IgnoreNotFound(r.client.Status().Patch(ctx, ch, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))), errMirrorStatus)
}

// replaceLost deletes, with no grace, a pod being deleted past its grace
// period on a node that is gone or not Ready, when its chaperon allows it
// (AnnotationReplaceLost): no kubelet is there to end it, and its name,
// the chaperon's, would keep the replica from a new pod for as long as
// the node is lost. Otherwise it is looked at again once its grace period
// has passed, and while its node is Ready (its kubelet ends it) a while
// later.
func (r *ChaperonReconciler) replaceLost(ctx context.Context, ch *mcv1alpha1.PodChaperon, pod *corev1.Pod) (reconcile.Result, error) {
	if ch.Annotations[mcv1alpha1.AnnotationReplaceLost] != "true" || pod.Spec.NodeName == "" {
		return reconcile.Result{}, nil
	}
	if wait := pod.DeletionTimestamp.Sub(r.now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait + settle}, nil
	}
	node := &corev1.Node{}
	err := r.client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node)
	if resource.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, errors.Wrap(err, errGetNode)
	}
	if err == nil {
		if _, c := nodeutil.GetNodeCondition(&node.Status, corev1.NodeReady); c != nil && c.Status == corev1.ConditionTrue {
			return reconcile.Result{RequeueAfter: lostRecheck}, nil
		}
	}
	err = r.client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
	if err == nil {
		r.record.Event(ch, event.Normal(reasonReplacedPod, "candidate Pod stuck being deleted on node "+pod.Spec.NodeName+", which is gone or not Ready: deleted with no grace, to be replaced"))
	}
	return reconcile.Result{}, errors.Wrap(resource.IgnoreNotFound(err), errDeletePod)
}

// lostRecheck is how long a pod past its grace period, on a node still
// Ready, is left to its kubelet before it is looked at again.
const lostRecheck = 30 * time.Second

// ReasonPodTerminating is the reason of a chaperon's Ready condition while
// its pod is being deleted.
const ReasonPodTerminating = "PodTerminating"

// hold says how much longer the status next of a pod waits before it is
// mirrored onto a chaperon that carries cur: only that of a pod just
// bound and not started (Pending, PodScheduled true, which the chaperon
// does not say yet) waits, until settle after the agent first saw it.
func (r *ChaperonReconciler) hold(uid types.UID, cur, next corev1.PodStatus) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	justBound := next.Phase == corev1.PodPending && scheduled(next) && !scheduled(cur)
	if !justBound {
		delete(r.boundAt, uid)
		return 0
	}
	now := r.now()
	at, ok := r.boundAt[uid]
	if !ok {
		if len(r.boundAt) > 1000 {
			// Pods deleted while held leave their entry: let old ones go.
			maps.DeleteFunc(r.boundAt, func(_ types.UID, t time.Time) bool { return now.Sub(t) > 10*settle })
		}
		r.boundAt[uid] = now
		return settle
	}
	if wait := settle - now.Sub(at); wait > 0 {
		return wait
	}
	delete(r.boundAt, uid)
	return 0
}

func scheduled(s corev1.PodStatus) bool {
	_, c := podutil.GetPodConditionFromList(s.Conditions, corev1.PodScheduled)
	return c != nil && c.Status == corev1.ConditionTrue
}

// worthMirroring reports whether a chaperon whose status is cur must
// carry next. A new pod's first status (Pending, nothing scheduled yet)
// says nothing the management side reads that an empty status does not:
// not written, a write saved per candidate. Once the chaperon carries a
// status (of this pod, or of one it replaces), every change is.
func worthMirroring(cur, next corev1.PodStatus) bool {
	if equality.Semantic.DeepEqual(cur, next) {
		return false
	}
	empty := func(s corev1.PodStatus) bool {
		return len(s.Conditions) == 0 && s.Reason == "" && s.Message == "" && (s.Phase == "" || s.Phase == corev1.PodPending)
	}
	return !empty(cur) || !empty(next)
}

// mirrored is the part of a Pod's status a chaperon carries.
func mirrored(s corev1.PodStatus) corev1.PodStatus {
	out := corev1.PodStatus{Phase: s.Phase, Reason: s.Reason, Message: s.Message}
	if s.Phase == corev1.PodFailed && s.Message == "" {
		// What the management side says of a failed batch pod.
		for _, cs := range s.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				out.Message = fmt.Sprintf("container %s exited with code %d (%s)", cs.Name, t.ExitCode, t.Reason)
				break
			}
		}
	}
	for _, c := range s.Conditions {
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodReady {
			c.LastProbeTime = metav1.Time{}
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}
