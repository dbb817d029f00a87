package v1alpha1

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// BindWindow returns how long after its creation the chaperon's candidate
// may bind without is-allowed, when it has such a window.
func (ch *PodChaperon) BindWindow() (time.Duration, bool) {
	d, err := time.ParseDuration(ch.Annotations[AnnotationBindWindow])
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

// BindDeadline is when the chaperon's bind window ends: its
// creationTimestamp, which the member's API server set, plus the window.
func (ch *PodChaperon) BindDeadline() (time.Time, bool) {
	d, ok := ch.BindWindow()
	if !ok {
		return time.Time{}, false
	}
	return ch.CreationTimestamp.Add(d), true
}

// PodBindDeadline reads the deadline the agent wrote onto a candidate
// Pod's annotations. A value that does not parse is a deadline passed:
// the pod then binds only once allowed.
func PodBindDeadline(annotations map[string]string) (t time.Time, ok bool) {
	v, ok := annotations[AnnotationBindDeadline]
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, true
	}
	return t, true
}

// HeldRunnerUp reports whether the chaperon is a runner-up's candidate
// still waiting: made for a cluster that was not the chosen one, not
// allowed since (that cluster was chosen and committed), not being deleted.
func (ch *PodChaperon) HeldRunnerUp() bool {
	return ch.Annotations[AnnotationRunnerUp] == "true" && ch.Annotations[AnnotationIsAllowed] != "true" && ch.DeletionTimestamp == nil
}

// IsAllowedPatch is the JSON merge patch that marks the chaperon of a
// UID is-allowed=true: the management side's at commit, and the agent's
// for a candidate that bound inside its window before it replaces its pod.
func IsAllowedPatch(uid types.UID) []byte { return MarkPatch(uid, AnnotationIsAllowed, "true") }

// MarkPatch is the JSON merge patch that sets one of the chaperon's marks
// (an annotation; an empty value removes it), and nothing else, on the
// chaperon of a UID: the API server refuses it (Invalid: a UID never
// changes) on a chaperon of that name made since the one it was meant for,
// which must never get a mark decided on another (MarkRefused). No UID
// names none.
func MarkPatch(uid types.UID, annotation, value string) []byte {
	meta := map[string]any{"annotations": map[string]any{annotation: nil}}
	if value != "" {
		meta["annotations"] = map[string]any{annotation: value}
	}
	if uid != "" {
		meta["uid"] = string(uid)
	}
	b, _ := json.Marshal(map[string]any{"metadata": meta}) // strings only: it cannot fail
	return b
}

// MarkRefused reports whether a mark's patch (MarkPatch) failed because its
// chaperon is gone, or is one of the name made since (the API server
// refuses its UID): either way the mark is not written, and never will
// be.
func MarkRefused(err error) bool {
	if kerrors.IsNotFound(err) {
		return true
	}
	// Invalid for its UID alone: any other refusal is an error to say.
	var status kerrors.APIStatus
	if !kerrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		return false
	}
	for _, c := range status.Status().Details.Causes {
		if c.Field == "metadata.uid" {
			return true
		}
	}
	return false
}

// PermitTimedOut reports whether a PodScheduled=False message is
// kube-scheduler's for a candidate whose wait for is-allowed at the
// candidate plugin's Permit timed out: the cluster had room and reserved
// it, then gave the reservation up (and reserves it again when it can).
// That is no verdict that the candidate does not fit there. It reads
// as kube-scheduler writes it, "0/1 nodes are available: 1 rejected due
// to timeout after waiting 2m0s at plugin PlacerCandidate."
// (member/candidate TestCandidateScheduler checks it against the real one).
func PermitTimedOut(message string) bool {
	i := strings.Index(message, "rejected due to timeout after waiting ")
	return i >= 0 && strings.Contains(message[i:], " at plugin "+CandidatePluginName)
}
