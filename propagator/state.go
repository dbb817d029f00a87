package propagator

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// State is what a cluster's candidates say about the handshake there.
// Counts are per replica: a replica whose old and new chaperons stand side
// by side during a rolling update counts once.
type State struct {
	// Missing replicas have no chaperon at all.
	Missing []int
	// Extra chaperons are beyond the replica count, or not named as placer
	// names them.
	Extra []*mcv1alpha1.PodChaperon
	// Reserved and Allowed count the replicas with a chaperon so marked
	// (Allowed first: a replica with one allowed chaperon is allowed).
	Reserved, Allowed int
	// Unschedulable holds the target scheduler's message when a candidate
	// cannot be placed there, and Unplaceable counts the replicas whose
	// candidate it found so (neither reserved nor allowed).
	Unschedulable string
	Unplaceable   int
	// Refused holds the member API server's message when it refused to
	// create a candidate Pod (admission: validation, Pod Security, quota).
	Refused string
	// Scheduled and Ready count the replicas with a bound or Ready pod.
	Scheduled, Ready int
	// Succeeded and Failed count the replicas whose pod ended on its own
	// (a batch pod: the agent mirrors a terminal phase only then).
	Succeeded, Failed int
	// FailedMessage is what the agent said of a failed replica's pod.
	FailedMessage string
	// ToAllow are reserved candidates not yet allowed (and NoReservation
	// candidates within their bind window, not bound yet): allowed at the
	// commit, or as the committed cluster reserves them.
	ToAllow []*mcv1alpha1.PodChaperon
	// Outdated chaperons were made from an older pod template.
	Outdated []*mcv1alpha1.PodChaperon
	// Windowed are candidates that may still bind without is-allowed,
	// inside the bind window their member enforces (design §4.9): not
	// bound, not fenced. A cluster holding one is given up only once its
	// member has fenced them.
	Windowed []*mcv1alpha1.PodChaperon
	// Fenced are candidates the member fenced (they have no pod and never
	// will), and FencedWhy the reason it gave (mcv1alpha1.Fenced*).
	Fenced    []*mcv1alpha1.PodChaperon
	FencedWhy string

	replicas map[int]*replica
}

// replica is one replica's chaperons in a cluster.
type replica struct {
	current      *mcv1alpha1.PodChaperon
	outdated     []*mcv1alpha1.PodChaperon
	currentReady bool
	ready        bool
	// allowed, reserved and scheduled: by any of its chaperons.
	allowed, reserved, scheduled bool
	// unschedulable: the target scheduler found its candidate so.
	unschedulable bool
	// succeeded, failed: its pod ended so.
	succeeded, failed bool
}

// Ended reports whether every replica's pod ended on its own.
func (s State) Ended(replicas int) bool {
	return replicas > 0 && len(s.Missing) == 0 && s.Succeeded+s.Failed >= replicas
}

// Judged reports whether the target scheduler has judged every replica's
// candidate: reserved (or allowed), or found unschedulable.
func (s State) Judged(replicas int) bool {
	return len(s.Missing) == 0 && s.Reserved+s.Allowed+s.Unplaceable >= replicas
}

// Proven reports whether every replica's candidate is reserved (or allowed).
func (s State) Proven(replicas int) bool {
	return len(s.Missing) == 0 && s.Reserved+s.Allowed >= replicas
}

func podCondition(ch *mcv1alpha1.PodChaperon, t corev1.PodConditionType) *corev1.PodCondition {
	_, c := podutil.GetPodConditionFromList(ch.Status.Conditions, t)
	return c
}

func conditionTrue(ch *mcv1alpha1.PodChaperon, t corev1.PodConditionType) bool {
	c := podCondition(ch, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Observe reads the chaperons of one Workload in one cluster, wherever
// they are there, as the unit of all its replicas.
func Observe(w *v1alpha1.Workload, chaperons []*mcv1alpha1.PodChaperon) State {
	return ObserveUnit(w, v1alpha1.PlacementUnit{Count: w.ReplicaCount()}, chaperons, "")
}

// ObserveUnit reads the chaperons of one Workload in the unit's cluster
// whose pods belong in member namespace ns: one elsewhere (the target
// namespace changed) is outdated, as one of an older pod template is, and
// is replaced by a rolling update; one of a replica outside the unit is
// extra.
func ObserveUnit(w *v1alpha1.Workload, u v1alpha1.PlacementUnit, chaperons []*mcv1alpha1.PodChaperon, ns string) State {
	noReservation := w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation
	hash := TemplateHash(w)
	current := func(ch *mcv1alpha1.PodChaperon) bool {
		return ch.Labels[mcv1alpha1.LabelTemplateHash] == hash && (ns == "" || ch.Namespace == ns)
	}
	// A batch replica whose outdated pod ended ran once: a chaperon of the
	// current template made beside it (a rolling update's surge) is
	// extra, and the replica keeps its end (as Rollout leaves it).
	ranOnce := map[string]bool{}
	for _, ch := range chaperons {
		if !current(ch) && podutil.IsPodPhaseTerminal(ch.Status.Phase) {
			ranOnce[ch.Labels[mcv1alpha1.LabelReplica]] = true
		}
	}
	st := State{replicas: map[int]*replica{}}
	for _, ch := range chaperons {
		i, err := strconv.Atoi(ch.Labels[mcv1alpha1.LabelReplica])
		if err != nil || !u.Holds(i) || ch.Name != chaperonName(w, ch.Labels[mcv1alpha1.LabelTemplateHash], i) ||
			ranOnce[ch.Labels[mcv1alpha1.LabelReplica]] && current(ch) && !podutil.IsPodPhaseTerminal(ch.Status.Phase) {
			st.Extra = append(st.Extra, ch)
			continue
		}
		r := st.replicas[i]
		if r == nil {
			r = &replica{}
			st.replicas[i] = r
		}
		st.observe(r, ch, current(ch), noReservation)
	}
	for _, i := range u.Replicas() {
		r := st.replicas[i]
		if r == nil {
			st.Missing = append(st.Missing, i)
			continue
		}
		switch {
		case r.allowed:
			st.Allowed++
		case r.reserved:
			st.Reserved++
		case r.unschedulable:
			st.Unplaceable++
		}
		if r.scheduled {
			st.Scheduled++
		}
		if r.ready {
			st.Ready++
		}
		switch {
		case r.succeeded:
			st.Succeeded++
		case r.failed:
			st.Failed++
		}
	}
	return st
}

// observe reads one chaperon of replica r: current (the pod template of
// the Workload, in the unit's member namespace) or outdated, and what the
// handshake and its pod say.
func (st *State) observe(r *replica, ch *mcv1alpha1.PodChaperon, current, noReservation bool) {
	ready := conditionTrue(ch, corev1.PodReady)
	if current {
		r.current, r.currentReady = ch, ready
	} else {
		r.outdated = append(r.outdated, ch)
		st.Outdated = append(st.Outdated, ch)
	}
	r.ready = r.ready || ready
	reserved := ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true"
	scheduled := conditionTrue(ch, corev1.PodScheduled)
	// A candidate allowed in advance is committed once its cluster has
	// reserved (or bound) it: until then it proves nothing. Bound inside
	// its window, it is committed with no write: its member's agent marks
	// it is-allowed itself before it replaces a pod it loses later (whose
	// status no longer says it bound), so that it is never fenced.
	// One allowed in advance with no window at all (a rolling update's, a
	// replica added to a committed cluster) is made only where the
	// Workload is committed, and binds whenever it can: committed, also
	// while a pod that replaces a lost one has not bound yet.
	// Its pod's own verdict (unschedulable) is still told (Ready's
	// Pending message), though it rejects nothing there.
	_, windowed := ch.BindWindow()
	inAdvance := ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] == "true"
	proven := ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true" || inAdvance && (reserved || scheduled)
	allowed := proven || inAdvance && !windowed
	if noReservation {
		// The member's own scheduler binds at once: a bound candidate is
		// committed. One made before the cluster was (a bind window, its
		// member's fence after) is allowed once it is, so that it binds
		// whenever it can and is never fenced.
		allowed, proven = allowed || scheduled, proven || scheduled
		if windowed && !allowed && ch.DeletionTimestamp == nil && ch.Annotations[mcv1alpha1.AnnotationFenced] == "" {
			st.ToAllow = append(st.ToAllow, ch)
		}
	}
	if reserved && !allowed {
		st.ToAllow = append(st.ToAllow, ch)
	}
	if c := podCondition(ch, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && !proven && !reserved {
		switch c.Reason {
		case corev1.PodReasonUnschedulable:
			// A wait at Permit that timed out says the cluster had
			// room: no verdict (it reserves the candidate again).
			if !mcv1alpha1.PermitTimedOut(c.Message) {
				st.Unschedulable, r.unschedulable = c.Message, true
			}
		case mcv1alpha1.ReasonPodRefused:
			st.Refused = c.Message
		}
	}
	if why := ch.Annotations[mcv1alpha1.AnnotationFenced]; why != "" && !allowed {
		st.Fenced, st.FencedWhy = append(st.Fenced, ch), why
	} else if _, ok := ch.BindWindow(); ok && !allowed && ch.DeletionTimestamp == nil {
		st.Windowed = append(st.Windowed, ch)
	}
	r.allowed, r.reserved, r.scheduled = r.allowed || allowed, r.reserved || reserved, r.scheduled || scheduled
	switch ch.Status.Phase {
	case corev1.PodSucceeded:
		r.succeeded = true
	case corev1.PodFailed:
		r.failed = true
		if st.FailedMessage == "" {
			st.FailedMessage = "pod " + ch.Name + " failed"
			if ch.Status.Message != "" {
				st.FailedMessage += ": " + ch.Status.Message
			}
		}
	}
}
