package v1alpha1

import (
	"strings"

	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ReplicaCount is the desired replica count (1 when unset).
func (w *Workload) ReplicaCount() int {
	if w.Spec.TargetDeployment.Replicas == nil {
		return 1
	}
	return int(*w.Spec.TargetDeployment.Replicas)
}

// ClusterKey is the KubernetesCluster a reference of this Workload names:
// a reference without a namespace is to the Workload's own.
func (w *Workload) ClusterKey(ref *ClusterReference) types.NamespacedName {
	ns := ref.Namespace
	if ns == "" {
		ns = w.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}
}

// RejectedBy reports whether the cluster rejected this generation's
// handshake and may not be tried again yet: the rejection's backoff is
// not over, and the scheduler has not chosen the cluster again since
// (ChosenSince).
func (w *Workload) RejectedBy(key types.NamespacedName) bool {
	rc := w.Rejection(key)
	return rc != nil && !rc.Expired(time.Now()) && !w.ChosenSince(rc)
}

// ChosenSince reports whether the scheduler chose the rejecting cluster
// again after the rejection (it opened up): it is status.clusterRef, and
// the Scheduled condition, which the scheduler alone writes, turned True
// there later than the rejection's time, which the propagator alone
// writes and never sets before the choice it rejects (RejectionTime).
// The two sides so agree on a rejection without writing each other's
// fields.
// A rejection without a time cannot be ordered: a choice of its cluster
// ends it.
func (w *Workload) ChosenSince(rc *RejectedCluster) bool {
	if w.Status.ClusterRef == nil || w.ClusterKey(w.Status.ClusterRef) != w.ClusterKey(&rc.Cluster) {
		return false
	}
	c := w.Status.GetCondition(TypeScheduled)
	return c.Status == corev1.ConditionTrue && (rc.Time == nil || c.LastTransitionTime.After(rc.Time.Time))
}

// RejectionTime is the time to record for a rejection made at now: never
// before the Scheduled condition's last transition (the choice it
// rejects), so that ChosenSince does not read the choice as a later one.
func (w *Workload) RejectionTime(now time.Time) metav1.Time {
	t := metav1.NewTime(now)
	if c := w.Status.GetCondition(TypeScheduled); c.LastTransitionTime.After(now) {
		t = c.LastTransitionTime
	}
	return t
}

// ChoiceAfter is the time the scheduler gives the Scheduled condition's
// transition when it chooses a cluster again despite rc: later than the
// rejection even at the API's precision of a second.
func ChoiceAfter(rc *RejectedCluster, now time.Time) metav1.Time {
	t := now.Truncate(time.Second)
	if rc.Time != nil && !t.After(rc.Time.Time) {
		t = rc.Time.Add(time.Second)
	}
	return metav1.NewTime(t)
}

// Rejection is this generation's rejection by the cluster, expired or
// not; nil when there is none.
func (w *Workload) Rejection(key types.NamespacedName) *RejectedCluster {
	if i := w.RejectionIndex(key); i >= 0 {
		return &w.Status.RejectedClusters[i]
	}
	return nil
}

// RejectionIndex is the index of this generation's rejection by the
// cluster in status.rejectedClusters; -1 when there is none.
func (w *Workload) RejectionIndex(key types.NamespacedName) int {
	return slices.IndexFunc(w.Status.RejectedClusters, func(rc RejectedCluster) bool {
		return rc.Generation == w.Generation && w.ClusterKey(&rc.Cluster) == key
	})
}

// Expired reports whether the rejection's backoff is over at now; one
// without retryAfter never expires.
func (rc *RejectedCluster) Expired(now time.Time) bool {
	return rc.RetryAfter != nil && !now.Before(rc.RetryAfter.Time)
}

// Left is the Workload's entry for a cluster it moved away from; nil when
// there is none.
func (w *Workload) Left(key types.NamespacedName) *LeftCluster {
	for i := range w.Status.LeftClusters {
		if lc := &w.Status.LeftClusters[i]; w.ClusterKey(&lc.Cluster) == key {
			return lc
		}
	}
	return nil
}

// TargetNamespace is where the Workload's pods go in a member cluster: the
// namespace the cluster maps the Workload's namespace to
// (spec.targetNamespaces of its KubernetesCluster), else the Workload's
// targetNamespace, else its own namespace's name.
func (w *Workload) TargetNamespace(mapping map[string]NamespaceName) string {
	if ns := mapping[w.Namespace]; ns != "" {
		return string(ns)
	}
	if w.Spec.TargetNamespace != "" {
		return w.Spec.TargetNamespace
	}
	return w.Namespace
}

// NamedClusters are the clusters the Workload's status places, nominates or
// left it on, each once.
func (w *Workload) NamedClusters() []types.NamespacedName {
	var out []types.NamespacedName
	add := func(ref *ClusterReference) {
		k := w.ClusterKey(ref)
		for _, seen := range out {
			if seen == k {
				return
			}
		}
		out = append(out, k)
	}
	if w.Status.ClusterRef != nil {
		add(w.Status.ClusterRef)
	}
	for i := range w.Status.NominatedClusters {
		add(&w.Status.NominatedClusters[i])
	}
	for i := range w.Status.LeftClusters {
		add(&w.Status.LeftClusters[i].Cluster)
	}
	return out
}

// IsDrain reports whether a reason to leave a cluster is a drain (a
// NoExecute taint of the user's, the cluster's deletion, or a move back to
// a cluster the Workload prefers more), which --max-concurrent-moves
// bounds, rather than the cluster's condition: the cluster left answers.
func IsDrain(reason string) bool {
	return reason == ReasonTainted || reason == ReasonClusterDeleted || reason == ReasonRebalanced
}

// PlacedOn reports whether the Workload is placed on the cluster.
func (w *Workload) PlacedOn(key types.NamespacedName) bool {
	return w.Status.ClusterRef != nil && w.ClusterKey(w.Status.ClusterRef) == key
}

// Finished reports whether every replica's pod ended on its own (a
// Complete or Failed condition): a finished Workload is never delivered
// again, moved, or rolled out; delete it to run it again.
func (w *Workload) Finished() bool {
	return w.Status.GetCondition(TypeComplete).Status == corev1.ConditionTrue ||
		w.Status.GetCondition(TypeFailed).Status == corev1.ConditionTrue
}

// PlacedIn returns the namespaces status.placedNamespaces records in the
// cluster.
func (w *Workload) PlacedIn(key types.NamespacedName) []string {
	var out []string
	for i := range w.Status.PlacedNamespaces {
		if p := &w.Status.PlacedNamespaces[i]; w.ClusterKey(&p.Cluster) == key {
			out = append(out, p.Namespace)
		}
	}
	return out
}

// SetPlaced records (placed) or forgets that placer put objects of the
// Workload in a member namespace; an empty namespace forgets every one of
// the cluster.
func (w *Workload) SetPlaced(key types.NamespacedName, namespace string, placed bool) {
	if placed {
		if !slices.Contains(w.PlacedIn(key), namespace) {
			w.Status.PlacedNamespaces = append(w.Status.PlacedNamespaces, PlacedNamespace{Cluster: ClusterReference{Name: key.Name, Namespace: key.Namespace}, Namespace: namespace})
		}
		return
	}
	w.Status.PlacedNamespaces = slices.DeleteFunc(w.Status.PlacedNamespaces, func(p PlacedNamespace) bool {
		return w.ClusterKey(&p.Cluster) == key && (namespace == "" || p.Namespace == namespace)
	})
	if len(w.Status.PlacedNamespaces) == 0 {
		w.Status.PlacedNamespaces = nil
	}
}

// Counted is the propagator's count of the Workload in the cluster; nil
// when it has none.
func (w *Workload) Counted(key types.NamespacedName) *ClusterCount {
	for i := range w.Status.ClusterCounts {
		if c := &w.Status.ClusterCounts[i]; w.ClusterKey(&c.Cluster) == key {
			return c
		}
	}
	return nil
}

// SetCounted records the propagator's count of the Workload in the cluster
// (leftAt: the status.leftClusters entry it answers, or nil).
func (w *Workload) SetCounted(key types.NamespacedName, replicas int32, leftAt *metav1.Time) {
	c := w.Counted(key)
	if c == nil {
		w.Status.ClusterCounts = append(w.Status.ClusterCounts, ClusterCount{Cluster: ClusterReference{Name: key.Name, Namespace: key.Namespace}})
		c = &w.Status.ClusterCounts[len(w.Status.ClusterCounts)-1]
	}
	c.Replicas, c.LeftAt = replicas, leftAt
}

// ForgetCounted removes the propagator's count of the Workload in the
// cluster.
func (w *Workload) ForgetCounted(key types.NamespacedName) {
	w.Status.ClusterCounts = slices.DeleteFunc(w.Status.ClusterCounts, func(c ClusterCount) bool { return w.ClusterKey(&c.Cluster) == key })
	if len(w.Status.ClusterCounts) == 0 {
		w.Status.ClusterCounts = nil
	}
}

// LeftBehind reports whether the propagator has not yet confirmed that
// nothing of the Workload remains in the cluster it left (lc): its count
// does not answer that move with 0. An entry without a time (an external
// scheduler's) cannot be answered: its scheduler lets it go.
func (w *Workload) LeftBehind(lc *LeftCluster) bool {
	c := w.Counted(w.ClusterKey(&lc.Cluster))
	return c == nil || c.Replicas > 0 || lc.Time == nil || c.LeftAt == nil || !c.LeftAt.Equal(lc.Time)
}

// LeftBehindIn reports whether the Workload left the cluster and the
// propagator has not yet confirmed that nothing of it remains there.
func (w *Workload) LeftBehindIn(key types.NamespacedName) bool {
	lc := w.Left(key)
	return lc != nil && w.LeftBehind(lc)
}

// Leaving reports whether a cluster the Workload left may still hold its
// candidates (LeftBehind).
func (w *Workload) Leaving() bool {
	for i := range w.Status.LeftClusters {
		if w.LeftBehind(&w.Status.LeftClusters[i]) {
			return true
		}
	}
	return false
}

// CountsChosen reports whether the replica counts of the status describe
// the chosen cluster: the propagator has counted candidates there since
// it was chosen. Until it has, after a move they are the last cluster's.
// A status that counts nowhere is one with no counts yet, or one written
// before status.clusterCounts existed, when a move set the counts to 0:
// either way the counts are the chosen cluster's.
func (w *Workload) CountsChosen() bool {
	if w.Status.ClusterRef == nil {
		return false
	}
	if len(w.Status.ClusterCounts) == 0 {
		return true
	}
	c := w.Counted(w.ClusterKey(w.Status.ClusterRef))
	return c != nil && c.LeftAt == nil
}

// Rejections expire: a cluster is tried again after RejectionBackoffBase,
// doubling with each rejection of the same generation up to
// RejectionBackoffMax (and sooner when the cluster opens up: the scheduler
// sees it).
const (
	RejectionBackoffBase = 30 * time.Second
	RejectionBackoffMax  = 10 * time.Minute
)

// RejectionBackoff is how long a cluster's attempts-th rejection lasts.
func RejectionBackoff(attempts int32) time.Duration {
	d := RejectionBackoffBase
	for i := int32(1); i < attempts && d < RejectionBackoffMax; i++ {
		d *= 2
	}
	return min(d, RejectionBackoffMax)
}

// CompareKeys orders keys by "namespace/name": the order placer lists
// clusters and Workloads in, in messages and on the command line.
func CompareKeys(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) }
