// Package propagator holds the management side of the handshake: which
// candidates a Workload needs in a cluster, and what their state says.
package propagator

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	hashutil "k8s.io/kubernetes/pkg/util/hash"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// ChaperonName is the name of a replica's chaperon (and pod) under the
// current pod template: workload-hash-replica, as a Deployment names its
// pods after their ReplicaSet, so that during a rolling update the new
// chaperon of a replica can stand beside the old one (maxSurge).
func ChaperonName(w *v1alpha1.Workload, replica int) string {
	return chaperonName(w, TemplateHash(w), replica)
}

// chaperonName makes a name unique per management namespace, Workload, pod
// template and replica: Workloads of one name in two tenants' namespaces
// may deliver into one member namespace. The hash covers the namespace,
// the name and the template hash; the Workload's name is cut so the whole
// fits a DNS label (63 characters), as pod host names must.
func chaperonName(w *v1alpha1.Workload, templateHash string, replica int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(w.Namespace + "/" + w.Name + "/" + templateHash))
	suffix := "-" + rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10)) + "-" + strconv.Itoa(replica)
	prefix := w.Name
	if max := validation.DNS1123LabelMaxLength - len(suffix); len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-.")
	}
	return prefix + suffix
}

// TemplateHash identifies the pod template a chaperon was made from, as
// Deployments label their ReplicaSets.
func TemplateHash(w *v1alpha1.Workload) string {
	h := fnv.New32a()
	hashutil.DeepHashObject(h, &w.Spec.TargetDeployment.Template)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// Role is what a cluster's candidates are made for.
type Role int

const (
	// Held candidates are the chosen cluster's: each waits at Permit for
	// is-allowed (a gang, proven whole before any binds).
	Held Role = iota
	// NoHold candidates are the chosen cluster's that bind as soon as they
	// are reserved (allow-when-reserved): a gang of one, or a replica
	// added to a committed cluster.
	NoHold
	// RunnerUp candidates are made in a nominated cluster that is not the
	// chosen one (fan-out): they hold, and the member's candidate
	// scheduler takes the chosen cluster's candidates first.
	RunnerUp
)

// NewChaperon returns the chaperon of one replica: the pod template,
// scheduled by the candidate scheduler, labelled with the Workload's UID and
// the replica index, annotated as its role says.
func NewChaperon(w *v1alpha1.Workload, namespace string, replica int, role Role) *mcv1alpha1.PodChaperon {
	tmpl := w.Spec.TargetDeployment.Template
	// placer's own keys are never copied from a template (the API refuses
	// them; an object stored before that rule is not trusted either).
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		if !v1alpha1.IsReservedKey(k) {
			labels[k] = v
		}
	}
	labels[mcv1alpha1.LabelWorkloadUID] = string(w.UID)
	labels[mcv1alpha1.LabelReplica] = strconv.Itoa(replica)
	hash := TemplateHash(w)
	labels[mcv1alpha1.LabelTemplateHash] = hash
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		if !v1alpha1.IsReservedKey(k) {
			annotations[k] = v
		}
	}
	annotations[mcv1alpha1.AnnotationWorkload] = w.Namespace + "/" + w.Name
	if _, proxy := w.Labels[v1alpha1.LabelProxyPod]; proxy {
		// A proxy pod shows the delegate's whole status.
		annotations[mcv1alpha1.AnnotationMirrorStatus] = mcv1alpha1.MirrorStatusFull
	}
	if w.Spec.Placement.Move != v1alpha1.MoveStopBeforeStart {
		annotations[mcv1alpha1.AnnotationReplaceLost] = "true"
	}
	spec := *tmpl.Spec.DeepCopy()
	noReservation := w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation
	if !noReservation {
		spec.SchedulerName = mcv1alpha1.CandidateSchedulerName
	}
	switch {
	case role == NoHold:
		// NoReservation: the member's own scheduler binds it, with no
		// hold; the mark says so, as for a gang of one, so that a bind
		// window can be set (SetBindWindow).
		annotations[mcv1alpha1.AnnotationAllowWhenReserved] = "true"
	case role == RunnerUp && !noReservation:
		annotations[mcv1alpha1.AnnotationRunnerUp] = "true"
	}
	return &mcv1alpha1.PodChaperon{
		ObjectMeta: metav1.ObjectMeta{Name: chaperonName(w, hash, replica), Namespace: namespace, Labels: labels, Annotations: annotations},
		Spec:       spec,
	}
}

// BindsUnheld reports whether the unit's candidates are made to bind
// without a hold (role NoHold: allow-when-reserved) before its cluster is
// committed: in the chosen cluster, a gang of one (a unit of a single
// replica), or a NoReservation unit, but not a share whose commit is held.
// Such a candidate carries a bind window (SetBindWindow), and only its
// member can tell that it did not bind (design §4.9). A held
// NoReservation share's candidates bind unheld all the same (the member's
// own scheduler binds them): MayBindUnheld is the rule for their window.
func BindsUnheld(w *v1alpha1.Workload, u v1alpha1.PlacementUnit) bool {
	return !u.RunnerUp && !w.CommitHeld() && (u.Count == 1 || w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation)
}

// MayBindUnheld reports whether the unit's candidates may bind without
// placer's word before its cluster is committed: those BindsUnheld says,
// and a NoReservation share's whose commit is held (its member's own
// scheduler binds them; nothing holds them). Each carries a bind window.
func MayBindUnheld(w *v1alpha1.Workload, u v1alpha1.PlacementUnit) bool {
	return BindsUnheld(w, u) || !u.RunnerUp && w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation
}

// SetBindWindow gives a candidate allowed in advance (or any of a
// NoReservation Workload, MayBindUnheld), made for the
// Workload w in the cluster key, a bind window: its member lets it bind
// without is-allowed only within window of the chaperon's creation, as
// the member's clock counts, and fences it after. It also records the
// rejections by that cluster the status holds now (FencedBefore).
func SetBindWindow(ch *mcv1alpha1.PodChaperon, w *v1alpha1.Workload, key types.NamespacedName, window time.Duration) {
	if ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] == "true" || w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation {
		ch.Annotations[mcv1alpha1.AnnotationBindWindow] = window.String()
		ch.Annotations[mcv1alpha1.AnnotationRejectionsSeen] = rejectionsSeen(w, key)
	}
}

// rejectionsSeen is "<generation>/<count>" of the Workload's rejections by
// the cluster its status holds now: every rejection recorded changes it.
func rejectionsSeen(w *v1alpha1.Workload, key types.NamespacedName) string {
	n := int32(0)
	if rc := w.Rejection(key); rc != nil {
		n = rc.Attempts
	}
	return fmt.Sprintf("%d/%d", w.Generation, n)
}

// FencedBefore reports whether a candidate of w in the cluster key was
// fenced before a rejection the status holds already: the status has
// recorded a rejection by that cluster since it was made. Such a leftover
// (its deletion after that rejection failed, or the manager restarted)
// says nothing of the handshake under way, and is replaced. A candidate
// made before its mark existed is read as current.
func FencedBefore(ch *mcv1alpha1.PodChaperon, w *v1alpha1.Workload, key types.NamespacedName) bool {
	seen, ok := ch.Annotations[mcv1alpha1.AnnotationRejectionsSeen]
	return ok && ch.Annotations[mcv1alpha1.AnnotationFenced] != "" && seen != rejectionsSeen(w, key)
}
