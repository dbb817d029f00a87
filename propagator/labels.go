// Package propagator holds the management side of the handshake: which
// candidates a Workload needs in a cluster, and what their state says.
package propagator

import (
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	hashutil "k8s.io/kubernetes/pkg/util/hash"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/propagator/candidate"
)

// Labels and annotations linking a chaperon to its Workload.
const (
	LabelWorkloadUID   = mcv1alpha1.AnnotationPrefix + "workload-uid"
	LabelReplica       = mcv1alpha1.AnnotationPrefix + "replica"
	LabelTemplateHash  = mcv1alpha1.AnnotationPrefix + "template-hash"
	AnnotationWorkload = mcv1alpha1.AnnotationPrefix + "workload"
)

// TargetNamespace is where the Workload's pods go in the target cluster.
func TargetNamespace(w *v1alpha1.Workload) string {
	if w.Spec.TargetNamespace != "" {
		return w.Spec.TargetNamespace
	}
	return w.Namespace
}

// Replicas is the Workload's desired replica count.
func Replicas(w *v1alpha1.Workload) int {
	if w.Spec.TargetDeployment.Replicas == nil {
		return 1
	}
	return int(*w.Spec.TargetDeployment.Replicas)
}

// ChaperonName is the name of a replica's chaperon (and pod).
func ChaperonName(w *v1alpha1.Workload, replica int) string {
	return fmt.Sprintf("%s-%d", w.Name, replica)
}

// TemplateHash identifies the pod template a chaperon was made from, as
// Deployments label their ReplicaSets.
func TemplateHash(w *v1alpha1.Workload) string {
	h := fnv.New32a()
	hashutil.DeepHashObject(h, &w.Spec.TargetDeployment.Template)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// NewChaperon returns the chaperon of one replica: the pod template,
// scheduled by the candidate scheduler, labelled with the Workload's UID and
// the replica index.
func NewChaperon(w *v1alpha1.Workload, replica int) *mcv1alpha1.PodChaperon {
	tmpl := w.Spec.TargetDeployment.Template
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		labels[k] = v
	}
	labels[LabelWorkloadUID] = string(w.UID)
	labels[LabelReplica] = strconv.Itoa(replica)
	labels[LabelTemplateHash] = TemplateHash(w)
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		annotations[k] = v
	}
	annotations[AnnotationWorkload] = w.Namespace + "/" + w.Name
	spec := *tmpl.Spec.DeepCopy()
	if w.Spec.Placement.Mode != v1alpha1.PlacementModeNoReservation {
		spec.SchedulerName = candidate.ProfileName
	}
	return &mcv1alpha1.PodChaperon{
		ObjectMeta: metav1.ObjectMeta{Name: ChaperonName(w, replica), Namespace: TargetNamespace(w), Labels: labels, Annotations: annotations},
		Spec:       spec,
	}
}

func podScheduled(ch *mcv1alpha1.PodChaperon) bool {
	for _, c := range ch.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// State is what a cluster's candidates say about the handshake there.
type State struct {
	// Missing replicas have no chaperon yet.
	Missing []int
	// Extra chaperons are beyond the replica count.
	Extra []*mcv1alpha1.PodChaperon
	// Reserved and Allowed count the replicas' chaperons so marked.
	Reserved, Allowed int
	// Unschedulable holds the target scheduler's message when a candidate
	// cannot be placed there.
	Unschedulable string
	// Scheduled and Ready count the bound and Ready pods.
	Scheduled, Ready int
	// ToAllow are reserved candidates not yet allowed.
	ToAllow []*mcv1alpha1.PodChaperon
	// Outdated chaperons were made from an older pod template.
	Outdated []*mcv1alpha1.PodChaperon
}

// Proven reports whether every replica's candidate is reserved (or allowed).
func (s State) Proven(replicas int) bool {
	return len(s.Missing) == 0 && s.Reserved+s.Allowed >= replicas
}

// Observe reads the chaperons of one Workload in one cluster.
func Observe(w *v1alpha1.Workload, chaperons []*mcv1alpha1.PodChaperon) State {
	n := Replicas(w)
	noReservation := w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation
	hash := TemplateHash(w)
	st := State{}
	have := map[int]bool{}
	for _, ch := range chaperons {
		i, err := strconv.Atoi(ch.Labels[LabelReplica])
		if err != nil || i >= n || ch.Name != ChaperonName(w, i) {
			st.Extra = append(st.Extra, ch)
			continue
		}
		have[i] = true
		if ch.Labels[LabelTemplateHash] != hash {
			st.Outdated = append(st.Outdated, ch)
		}
		allowed := ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true"
		reserved := ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true"
		if noReservation {
			// The member's own scheduler binds at once: a bound candidate is committed.
			allowed = podScheduled(ch)
		}
		switch {
		case allowed:
			st.Allowed++
		case reserved:
			st.Reserved++
			st.ToAllow = append(st.ToAllow, ch)
		}
		for _, c := range ch.Status.Conditions {
			switch {
			case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && !allowed && !reserved:
				st.Unschedulable = c.Message
			case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue:
				st.Scheduled++
			case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue:
				st.Ready++
			}
		}
	}
	for i := range n {
		if !have[i] {
			st.Missing = append(st.Missing, i)
		}
	}
	return st
}

// ToReplace returns the outdated chaperons to delete now, so that they come
// back from the current template: all of them with the Recreate strategy;
// with RollingUpdate (the default) only as many as keep the Workload within
// maxUnavailable (default 25%, at least one). Replicas are replaced in
// place, under the same names, so maxSurge is not used.
func ToReplace(w *v1alpha1.Workload, st State) []*mcv1alpha1.PodChaperon {
	if len(st.Outdated) == 0 {
		return nil
	}
	strategy := w.Spec.TargetDeployment.Strategy
	if strategy.Type == "Recreate" {
		return st.Outdated
	}
	n := Replicas(w)
	maxUnavailable := intstr.FromString("25%")
	if ru := strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	allowed, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, n, false)
	if err != nil || allowed < 1 {
		allowed = 1
	}
	budget := allowed - (n - st.Ready)
	if budget <= 0 {
		return nil
	}
	return st.Outdated[:min(budget, len(st.Outdated))]
}
