package scheduler

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// ClusterInfo is the scheduler's immutable view of one KubernetesCluster.
type ClusterInfo struct {
	Cluster *v1alpha1.KubernetesCluster
	Key     types.NamespacedName
	// Labels are the cluster's labels with the built-in labels filled in
	// from its name, namespace, provider and status.
	Labels labels.Set
	// Node presents the cluster to node-affinity helpers: its name and labels.
	Node *corev1.Node
	// labelsOnly is Node without the name, for terms that match labels
	// alone (MatchNode).
	labelsOnly *corev1.Node
	// Ready is the status of the cluster's Ready condition.
	Ready xpv2.Condition
	// Taints are the cluster's taints as node taints.
	Taints []corev1.Taint
	// Requested is what the cluster's summary says its pods request, plus
	// the requests of replicas placed there and not bound yet (assumed
	// decisions included), so that a burst does not pile onto one cluster.
	Requested corev1.ResourceList
	// Tenants selects the management namespaces, besides the cluster's own,
	// whose Workloads the cluster serves; nil serves its own only.
	Tenants labels.Selector
	// OpenedAt is when the cluster last changed in a way that can undo
	// any handshake rejection (labels or taints changed, it became
	// Ready): rejections older than that have expired. RoomAt is when it
	// last gained room (allocatable, ready nodes, room on its largest
	// node): that ends only a rejection for want of room (an
	// unschedulable candidate, a handshake that timed out), not one its
	// admission or a name conflict made, which room never undoes (on a
	// busy cluster, room comes and goes as pods end). The scheduler's
	// cache keeps both; zero when unknown.
	OpenedAt, RoomAt time.Time
}

// NewClusterInfo derives the scheduler's view of a cluster.
func NewClusterInfo(kc *v1alpha1.KubernetesCluster) *ClusterInfo {
	l := labels.Set{}
	for k, v := range kc.Labels {
		l[k] = v
	}
	// A name longer than a label value is known by the value the
	// cluster's own labels and its virtual node carry: no selector can
	// hold more.
	l[v1alpha1.LabelClusterName] = v1alpha1.LabelValueOf(kc.Name)
	l[v1alpha1.LabelClusterNamespace] = kc.Namespace
	if kc.Spec.Provider != "" {
		l[v1alpha1.LabelCloudProvider] = kc.Spec.Provider
	}
	// The Crossplane design's keys, as aliases of the built-ins.
	if p, ok := l[v1alpha1.LabelCloudProvider]; ok {
		l[v1alpha1.LabelCrossplaneProvider] = p
	}
	l[v1alpha1.LabelCrossplaneKubernetes] = v1alpha1.LabelValueOf(kc.Namespace + "." + kc.Name)
	return &ClusterInfo{
		Cluster:    kc,
		Key:        types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name},
		Labels:     l,
		Node:       &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kc.Name, Labels: l}},
		labelsOnly: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}},
		Ready:      kc.Status.GetCondition(xpv2.TypeReady),
		Taints:     nodeTaints(kc.Spec.Taints),
		Tenants:    kc.Tenants(),
		// Read only: the cache copies it before adding to it.
		Requested: kc.Status.Requested,
	}
}

// MatchNode is the node that node-affinity terms are matched against: Node
// when they match fields (the name), else the same labels without a name,
// for which the helpers build no field set.
func (c *ClusterInfo) MatchNode(fields bool) *corev1.Node {
	if fields || c.labelsOnly == nil {
		return c.Node
	}
	return c.labelsOnly
}

func nodeTaints(ts []v1alpha1.ClusterTaint) []corev1.Taint {
	out := make([]corev1.Taint, len(ts))
	for i, t := range ts {
		out[i] = corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), TimeAdded: t.TimeAdded}
	}
	return out
}

// Tolerations returns the Workload's cluster tolerations as pod tolerations.
func Tolerations(w *v1alpha1.Workload) []corev1.Toleration {
	out := make([]corev1.Toleration, len(w.Spec.ClusterTolerations))
	for i, t := range w.Spec.ClusterTolerations {
		out[i] = corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds}
	}
	return out
}

// PlacedWorkload is a Workload placed in a cluster, as affinity sees it.
type PlacedWorkload struct {
	UID       types.UID
	Namespace string
	Name      string
	Labels    labels.Set
	Cluster   types.NamespacedName
	// AntiAffinity are the workload's required anti-affinity terms, parsed
	// once, for the symmetric check: a newcomer they select keeps away.
	AntiAffinity []*AffinityTerm
	// Unbound are the requests of its replicas not bound yet.
	Unbound corev1.ResourceList
	// Draining: it is still leaving a cluster it was moved away from for a
	// taint or a deletion (a drain, bounded fleet-wide).
	Draining bool
	// Rebalance: it moves back to a cluster it prefers more
	// (spec.placement.rebalance WhenPreferred).
	Rebalance bool
	// slot numbers Cluster in the cache's snapshots.
	slot int
}

// Snapshot is the fleet as one scheduling cycle sees it. It is immutable.
type Snapshot struct {
	Clusters []*ClusterInfo
	byKey    map[types.NamespacedName]*ClusterInfo
	Placed   []*PlacedWorkload
	// placedOn[i] is the cluster Placed[i] is on, nil if it is not in the
	// snapshot; resolved once so affinity terms need no lookups.
	placedOn   []*ClusterInfo
	Namespaces map[string]labels.Set
	// Bound holds, per management namespace, the cluster namespaces its
	// ClusterBindings bind (v1alpha1.Serves).
	Bound map[string]sets.Set[string]
	// RejectionSeen, when set, says when the process first saw a
	// Workload's rejection by a cluster (Cache.RejectionSeen).
	RejectionSeen func(uid types.UID, cluster types.NamespacedName, attempts int32) (time.Time, bool)
	// termCounts are the cache's counts of the placed workloads each
	// indexed affinity term selects, per cluster (termindex.go); uids
	// find a placed workload by UID; asked collects the terms cycles ask
	// about, for the cache. All nil in a snapshot not from a cache.
	termCounts map[string]map[types.NamespacedName]int64
	uids       *[uidShards]map[types.UID]int
	asked      *askedTerms
	// labelIndex is the clusters by label, built by the first cycle that
	// asks; a cache's snapshots of the same clusters share it.
	labelIndex *sharedLabelIndex
}

// placedIndex is the position of a placed workload in Placed.
func (s *Snapshot) placedIndex(uid types.UID) (int, bool) {
	if s.uids == nil || uid == "" {
		return 0, false
	}
	i, ok := s.uids[shardOf(uid)][uid]
	if !ok || i >= len(s.Placed) || s.Placed[i].UID != uid {
		return 0, false
	}
	return i, true
}

// NewSnapshot builds a snapshot; clusters are sorted by namespace and name.
func NewSnapshot(clusters []*ClusterInfo, placed []*PlacedWorkload, namespaces map[string]labels.Set) *Snapshot {
	return newSnapshot(clusters, placed, namespaces, nil)
}

// newSnapshot builds a snapshot; bySlot, when not nil, holds the clusters
// by the slot numbers of the placed workloads' clusters (the cache's).
func newSnapshot(clusters []*ClusterInfo, placed []*PlacedWorkload, namespaces map[string]labels.Set, bySlot []*ClusterInfo) *Snapshot {
	sort.Slice(clusters, func(i, j int) bool {
		a, b := clusters[i].Key, clusters[j].Key
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	s := &Snapshot{Clusters: clusters, byKey: make(map[types.NamespacedName]*ClusterInfo, len(clusters)), Placed: placed, Namespaces: namespaces,
		labelIndex: &sharedLabelIndex{}}
	for _, c := range clusters {
		s.byKey[c.Key] = c
	}
	s.placedOn = make([]*ClusterInfo, len(placed))
	for i, p := range placed {
		if bySlot != nil {
			s.placedOn[i] = bySlot[p.slot]
		} else {
			s.placedOn[i] = s.byKey[p.Cluster]
		}
	}
	return s
}

// PlacedOn returns the cluster of the i-th placed workload, or nil.
func (s *Snapshot) PlacedOn(i int) *ClusterInfo { return s.placedOn[i] }

// Cluster returns the cluster with the given key, or nil.
func (s *Snapshot) Cluster(key types.NamespacedName) *ClusterInfo { return s.byKey[key] }
