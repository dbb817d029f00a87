package propagator

import (
	"fmt"
	"time"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// Action is what the propagator does next with one cluster's candidates.
type Action int

// The actions of the handshake, per cluster.
const (
	// Wait: candidates are being created, or not every one is reserved yet.
	Wait Action = iota
	// Commit: the chosen cluster is proven; allow every reserved candidate.
	Commit
	// Deliver: the cluster is committed; allow new candidates as they are
	// reserved (scale up, rolling update) and roll out template changes.
	Deliver
	// Reject: record the cluster in status.rejectedClusters.
	Reject
	// Fence: the cluster is to be rejected, but a candidate there may
	// still bind without is-allowed: ask the member to fence it
	// (give-up), and reject once it confirms.
	Fence
	// Hold: the committed cluster refuses the current template (admission
	// refuses it there): what runs keeps running, nothing of the new
	// template goes there, and the cluster is not rejected.
	Hold
)

// Reasons of a rejection.
const (
	ReasonHandshakeTimeout = v1alpha1.ReasonHandshakeTimeout
)

// Decision is the next step for one cluster.
type Decision struct {
	Action Action
	// Reason and Message of a rejection; Message also says what a Wait
	// waits for when the counts do not show it.
	Reason, Message string
	// After is when to look again while waiting; zero waits for an event.
	After time.Duration
}

// Decide runs the handshake's state machine for one cluster (design §4):
// pending (candidates missing) → candidates → proven → committed, or
// rejected when the target's scheduler finds a candidate unschedulable or
// the chosen cluster does not reserve every candidate within timeout.
// The unit's cluster is the chosen one (status.clusterRef) unless it is a
// runner-up of a fan-out, which proves itself meanwhile but never
// commits. age is how long the oldest candidate there has existed.
//
// Exactly once does not rest on timing (design §4.9): a cluster where a
// candidate may still bind without is-allowed (State.Windowed) is never
// rejected on this process's clock. Its rejection is a Fence until its
// member confirms, and its timeout is the member's own bind window.
func Decide(u v1alpha1.PlacementUnit, st State, age, timeout time.Duration) Decision {
	chosen := !u.RunnerUp
	var d Decision
	switch {
	case st.Allowed > 0:
		// Once a candidate is allowed the cluster is committed: later
		// replicas are proven there, never elsewhere; one that does not fit
		// stays pending.
		return Decision{Action: Deliver}
	case len(st.Missing) > 0:
		return Decision{Action: Wait, After: timeout}
	case st.Refused != "":
		// The member's API server refused a candidate Pod: no waiting
		// changes that; the cluster rejects at once with its message.
		d = Decision{Action: Reject, Reason: mcv1alpha1.ReasonPodRefused, Message: st.Refused}
	case chosen && st.Proven(u.Count):
		return Decision{Action: Commit}
	case st.Unschedulable != "" && chosen && u.Divisible && !st.Judged(u.Count) && age < timeout:
		// A share rejects once its cluster's scheduler has judged every
		// candidate, so that the rejection counts all it did reserve (the
		// share keeps those, RejectedCluster.Reserved): the marks of the
		// reserved ones may reach here after an unschedulable one's.
		return Decision{Action: Wait, After: timeout - age}
	case st.Unschedulable != "":
		d = Decision{Action: Reject, Reason: v1alpha1.ReasonUnschedulable, Message: st.Unschedulable}
	case len(st.Fenced) > 0:
		d = Decision{Action: Reject, Reason: ReasonHandshakeTimeout, Message: "the candidate was not bound within its bind window, as the cluster counts it; the cluster fenced it"}
		if st.FencedWhy == mcv1alpha1.FencedGivenUp {
			d.Message = "placer gave up on the candidate and the cluster fenced it"
		}
	case !chosen:
		return Decision{Action: Wait}
	case age >= timeout && len(st.Windowed) > 0:
		// The member's window, not this clock, ends it: its fence mark
		// (or the pod's binding) brings the Workload back.
		return Decision{Action: Wait}
	case age >= timeout:
		d = Decision{Action: Reject, Reason: ReasonHandshakeTimeout, Message: fmt.Sprintf("not every candidate was reserved within %s", timeout)}
	default:
		return Decision{Action: Wait, After: timeout - age}
	}
	if len(st.Windowed) > 0 {
		d.Action = Fence
	}
	return d
}

// Stage is how far the chosen unit may go in a reconcile, before any
// member is asked.
type Stage int

const (
	// Prove: the chosen unit is proven, committed or delivered.
	Prove Stage = iota
	// Finished: a batch Workload ran to its end. It runs once: nothing is
	// created again (not a pod deleted since, not a new template), its
	// counts and conditions stay as it ended, and it is never moved.
	Finished
	// HeldForMove: a Workload moving StopBeforeStart whose clusters left
	// have not all confirmed that the pods there are gone: nothing goes
	// to the new cluster, nor to a runner-up, meanwhile.
	HeldForMove
)

// StageOf says how far a placed Workload's chosen unit may go.
func StageOf(w *v1alpha1.Workload) Stage {
	switch {
	case w.Finished():
		return Finished
	case w.Spec.Placement.Move == v1alpha1.MoveStopBeforeStart && w.Leaving():
		return HeldForMove
	}
	return Prove
}
