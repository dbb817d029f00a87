// Package propagator holds the management side of the handshake: which
// candidates a Workload needs in a cluster, and what their state says.
package propagator

import (
	"hash/fnv"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
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

// TargetNamespace is where the Workload's pods go in a member cluster: the
// namespace the cluster maps the Workload's namespace to
// (spec.targetNamespaces of its KubernetesCluster), else the Workload's
// targetNamespace, else its own namespace's name.
func TargetNamespace(w *v1alpha1.Workload, mapping map[string]v1alpha1.NamespaceName) string {
	if ns := mapping[w.Namespace]; ns != "" {
		return string(ns)
	}
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

// NewChaperon returns the chaperon of one replica: the pod template,
// scheduled by the candidate scheduler, labelled with the Workload's UID and
// the replica index.
func NewChaperon(w *v1alpha1.Workload, namespace string, replica int) *mcv1alpha1.PodChaperon {
	tmpl := w.Spec.TargetDeployment.Template
	// placer's own keys are never copied from a template (the API refuses
	// them; an object stored before that rule is not trusted either).
	labels := map[string]string{}
	for k, v := range tmpl.Labels {
		if !v1alpha1.IsReservedKey(k) {
			labels[k] = v
		}
	}
	labels[LabelWorkloadUID] = string(w.UID)
	labels[LabelReplica] = strconv.Itoa(replica)
	labels[LabelTemplateHash] = TemplateHash(w)
	annotations := map[string]string{}
	for k, v := range tmpl.Annotations {
		if !v1alpha1.IsReservedKey(k) {
			annotations[k] = v
		}
	}
	annotations[AnnotationWorkload] = w.Namespace + "/" + w.Name
	spec := *tmpl.Spec.DeepCopy()
	if w.Spec.Placement.Mode != v1alpha1.PlacementModeNoReservation {
		spec.SchedulerName = candidate.ProfileName
	}
	return &mcv1alpha1.PodChaperon{
		ObjectMeta: metav1.ObjectMeta{Name: ChaperonName(w, replica), Namespace: namespace, Labels: labels, Annotations: annotations},
		Spec:       spec,
	}
}

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
	// cannot be placed there.
	Unschedulable string
	// Refused holds the member API server's message when it refused to
	// create a candidate Pod (admission: validation, Pod Security, quota).
	Refused string
	// Scheduled and Ready count the replicas with a bound or Ready pod.
	Scheduled, Ready int
	// ToAllow are reserved candidates not yet allowed.
	ToAllow []*mcv1alpha1.PodChaperon
	// Outdated chaperons were made from an older pod template.
	Outdated []*mcv1alpha1.PodChaperon

	replicas map[int]*replica
}

// replica is one replica's chaperons in a cluster.
type replica struct {
	current      *mcv1alpha1.PodChaperon
	outdated     []*mcv1alpha1.PodChaperon
	currentReady bool
	ready        bool
}

// Proven reports whether every replica's candidate is reserved (or allowed).
func (s State) Proven(replicas int) bool {
	return len(s.Missing) == 0 && s.Reserved+s.Allowed >= replicas
}

func podCondition(ch *mcv1alpha1.PodChaperon, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range ch.Status.Conditions {
		if ch.Status.Conditions[i].Type == t {
			return &ch.Status.Conditions[i]
		}
	}
	return nil
}

func conditionTrue(ch *mcv1alpha1.PodChaperon, t corev1.PodConditionType) bool {
	c := podCondition(ch, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Observe reads the chaperons of one Workload in one cluster.
func Observe(w *v1alpha1.Workload, chaperons []*mcv1alpha1.PodChaperon) State {
	n := Replicas(w)
	noReservation := w.Spec.Placement.Mode == v1alpha1.PlacementModeNoReservation
	hash := TemplateHash(w)
	st := State{replicas: map[int]*replica{}}
	type marks struct{ allowed, reserved, scheduled bool }
	seen := map[int]*marks{}
	for _, ch := range chaperons {
		i, err := strconv.Atoi(ch.Labels[LabelReplica])
		if err != nil || i < 0 || i >= n || ch.Name != chaperonName(w, ch.Labels[LabelTemplateHash], i) {
			st.Extra = append(st.Extra, ch)
			continue
		}
		r := st.replicas[i]
		if r == nil {
			r, seen[i] = &replica{}, &marks{}
			st.replicas[i] = r
		}
		ready := conditionTrue(ch, corev1.PodReady)
		if ch.Labels[LabelTemplateHash] == hash {
			r.current, r.currentReady = ch, ready
		} else {
			r.outdated = append(r.outdated, ch)
			st.Outdated = append(st.Outdated, ch)
		}
		r.ready = r.ready || ready
		m := seen[i]
		allowed := ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true"
		reserved := ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true"
		scheduled := conditionTrue(ch, corev1.PodScheduled)
		if noReservation {
			// The member's own scheduler binds at once: a bound candidate is committed.
			allowed = scheduled
		}
		if reserved && !allowed {
			st.ToAllow = append(st.ToAllow, ch)
		}
		if c := podCondition(ch, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && !allowed && !reserved {
			switch c.Reason {
			case corev1.PodReasonUnschedulable:
				st.Unschedulable = c.Message
			case mcv1alpha1.ReasonPodRefused:
				st.Refused = c.Message
			}
		}
		m.allowed, m.reserved, m.scheduled = m.allowed || allowed, m.reserved || reserved, m.scheduled || scheduled
	}
	for i := range n {
		r, m := st.replicas[i], seen[i]
		if r == nil {
			st.Missing = append(st.Missing, i)
			continue
		}
		switch {
		case m.allowed:
			st.Allowed++
		case m.reserved:
			st.Reserved++
		}
		if m.scheduled {
			st.Scheduled++
		}
		if r.ready {
			st.Ready++
		}
	}
	return st
}

// Step is one step of a rolling update in the committed cluster.
type Step struct {
	// Delete are outdated chaperons to delete now.
	Delete []*mcv1alpha1.PodChaperon
	// Create are the replicas that get a chaperon from the current template
	// beside their outdated one (surge).
	Create []int
}

// Rollout returns the next step toward the current pod template, following
// the strategy as a Deployment does. Recreate deletes every outdated
// chaperon at once. RollingUpdate (the default, 25% / 25%) first deletes
// the outdated chaperons of replicas whose new pod is Ready, then starts
// new chaperons beside outdated ones while at most maxSurge (rounded up)
// chaperons exceed the replica count, then deletes outdated chaperons while
// at most maxUnavailable (rounded down) replicas have no Ready pod. Both
// zero means maxUnavailable 1. Replicas are taken in index order.
func Rollout(w *v1alpha1.Workload, st State) Step {
	step := Step{}
	if len(st.Outdated) == 0 {
		return step
	}
	strategy := w.Spec.TargetDeployment.Strategy
	if strategy.Type == "Recreate" {
		step.Delete = st.Outdated
		return step
	}
	n := Replicas(w)
	maxSurge, maxUnavailable := intstr.FromString("25%"), intstr.FromString("25%")
	if ru := strategy.RollingUpdate; ru != nil {
		if ru.MaxSurge != nil {
			maxSurge = *ru.MaxSurge
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable = *ru.MaxUnavailable
		}
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(&maxSurge, n, true)
	if err != nil || surge < 0 {
		surge = 0
	}
	unavailable, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, n, false)
	if err != nil || unavailable < 0 {
		unavailable = 0
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}

	total := 0
	var waiting []int // replicas with only outdated chaperons
	for i := range n {
		r := st.replicas[i]
		if r == nil {
			continue
		}
		total += len(r.outdated)
		if r.current != nil {
			total++
		}
		switch {
		case len(r.outdated) == 0:
		case r.current != nil && r.currentReady:
			step.Delete = append(step.Delete, r.outdated...)
			total -= len(r.outdated)
		case r.current == nil:
			waiting = append(waiting, i)
		}
	}
	budget := surge - (total - n)
	for len(waiting) > 0 && budget > 0 {
		step.Create = append(step.Create, waiting[0])
		waiting, budget = waiting[1:], budget-1
	}
	budget = unavailable - (n - st.Ready)
	for _, i := range waiting {
		r := st.replicas[i]
		if r.ready {
			if budget <= 0 {
				continue
			}
			budget--
		}
		// An outdated replica that is not Ready costs no availability.
		step.Delete = append(step.Delete, r.outdated...)
	}
	return step
}
