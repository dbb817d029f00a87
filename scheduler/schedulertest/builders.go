// Package schedulertest builds clusters, workloads and snapshots for tests
// of the scheduling plugins, and runs plugins the way the framework does.
package schedulertest

import (
	"context"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// ClusterOption changes a test cluster.
type ClusterOption func(*v1alpha1.KubernetesCluster)

// Cluster returns a Ready cluster in namespace default.
func Cluster(name string, opts ...ClusterOption) *v1alpha1.KubernetesCluster {
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{}}}
	kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady})
	for _, o := range opts {
		o(kc)
	}
	return kc
}

// Labels adds labels.
func Labels(kv ...string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		for i := 0; i+1 < len(kv); i += 2 {
			kc.Labels[kv[i]] = kv[i+1]
		}
	}
}

// InNamespace moves the cluster to another namespace.
func InNamespace(ns string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) { kc.Namespace = ns }
}

// Provider sets spec.provider.
func Provider(p string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) { kc.Spec.Provider = p }
}

// NotReady sets the Ready condition False with the reason.
func NotReady(reason string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: xpv2.ConditionReason(reason)})
	}
}

// Cordoned sets spec.unschedulable.
func Cordoned() ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) { kc.Spec.Unschedulable = true }
}

// Taint adds a taint.
func Taint(key, value string, effect v1alpha1.TaintEffect) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: key, Value: value, Effect: effect})
	}
}

// Deleting marks the cluster deleted at the given time, held by the
// finalizers.
func Deleting(at time.Time, finalizers ...string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		t := metav1.NewTime(at)
		kc.DeletionTimestamp = &t
		kc.Finalizers = finalizers
	}
}

// NoExecuteSince adds a NoExecute taint added at the given time.
func NoExecuteSince(key string, at time.Time) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		t := metav1.NewTime(at)
		kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: key, Effect: v1alpha1.TaintEffectNoExecute, TimeAdded: &t})
	}
}

// Capacity sets the summary: allocatable and requested totals of cpu and
// memory, and the largest free node.
func Capacity(allocCPU, allocMem, reqCPU, reqMem, freeCPU, freeMem string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		kc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(allocCPU), corev1.ResourceMemory: resource.MustParse(allocMem)}
		kc.Status.Requested = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(reqCPU), corev1.ResourceMemory: resource.MustParse(reqMem)}
		kc.Status.LargestFreeNode = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(freeCPU), corev1.ResourceMemory: resource.MustParse(freeMem)}
	}
}

// Extended adds an extended resource's allocatable and requested totals.
func Extended(name, alloc, requested string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		if kc.Status.Allocatable == nil {
			kc.Status.Allocatable, kc.Status.Requested = corev1.ResourceList{}, corev1.ResourceList{}
		}
		if kc.Status.LargestFreeNode == nil {
			kc.Status.LargestFreeNode = corev1.ResourceList{}
		}
		kc.Status.Allocatable[corev1.ResourceName(name)] = resource.MustParse(alloc)
		kc.Status.Requested[corev1.ResourceName(name)] = resource.MustParse(requested)
	}
}

// WorkloadOption changes a test workload.
type WorkloadOption func(*v1alpha1.Workload)

// Workload returns a one-replica Workload in namespace default whose UID is its name.
func Workload(name string, opts ...WorkloadOption) *v1alpha1.Workload {
	one := int32(1)
	w := &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Generation: 1, Labels: map[string]string{}},
		Spec: v1alpha1.WorkloadSpec{
			SchedulerName: v1alpha1.DefaultSchedulerName,
			TargetDeployment: v1alpha1.TargetDeployment{
				Replicas: &one,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}}},
			},
			Placement: v1alpha1.Placement{FanOut: 1, Mode: v1alpha1.PlacementModeReserve},
		},
	}
	for _, o := range opts {
		o(w)
	}
	return w
}

// WLabels adds labels to the workload.
func WLabels(kv ...string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		for i := 0; i+1 < len(kv); i += 2 {
			w.Labels[kv[i]] = kv[i+1]
		}
	}
}

// ShareOf makes the workload a share of the spread Workload parent:
// annotated, labelled and controlled as the divider makes shares.
func ShareOf(parent string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[v1alpha1.AnnotationShareOf] = parent
		w.Labels[v1alpha1.LabelShareOf] = parent
		controller := true
		w.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: parent, UID: types.UID(parent), Controller: &controller}}
	}
}

// WNamespace moves the workload to another namespace.
func WNamespace(ns string) WorkloadOption {
	return func(w *v1alpha1.Workload) { w.Namespace = ns }
}

// Selector sets spec.clusterSelector.
func Selector(kv ...string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Spec.ClusterSelector = map[string]v1alpha1.LabelValue{}
		for i := 0; i+1 < len(kv); i += 2 {
			w.Spec.ClusterSelector[kv[i]] = v1alpha1.LabelValue(kv[i+1])
		}
	}
}

// Target sets spec.targetCluster.
func Target(name, namespace string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Spec.TargetCluster = &v1alpha1.ClusterReference{Name: name, Namespace: namespace}
	}
}

// Requests sets one replica's cpu and memory requests, and extra resources as name, quantity pairs.
func Requests(cpu, mem string, extra ...string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		for i := 0; i+1 < len(extra); i += 2 {
			r[corev1.ResourceName(extra[i])] = resource.MustParse(extra[i+1])
		}
		w.Spec.TargetDeployment.Template.Spec.Containers[0].Resources.Requests = r
	}
}

// Replicas sets the replica count.
func Replicas(n int32) WorkloadOption {
	return func(w *v1alpha1.Workload) { w.Spec.TargetDeployment.Replicas = &n }
}

// Tolerate adds a cluster toleration.
func Tolerate(key string, op v1alpha1.TolerationOperator, value string, effect v1alpha1.TaintEffect) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Spec.ClusterTolerations = append(w.Spec.ClusterTolerations, v1alpha1.ClusterToleration{Key: key, Operator: op, Value: value, Effect: effect})
	}
}

// TolerateFor adds a toleration of the NoExecute taint key (any value) for
// seconds.
func TolerateFor(key string, seconds int64) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Spec.ClusterTolerations = append(w.Spec.ClusterTolerations, v1alpha1.ClusterToleration{
			Key: key, Operator: "Exists", Effect: v1alpha1.TaintEffectNoExecute, TolerationSeconds: &seconds})
	}
}

func affinity(w *v1alpha1.Workload) *v1alpha1.Affinity {
	if w.Spec.Affinity == nil {
		w.Spec.Affinity = &v1alpha1.Affinity{}
	}
	return w.Spec.Affinity
}

// Expr is a cluster selector requirement.
func Expr(key string, op v1alpha1.SelectorOperator, values ...string) v1alpha1.ClusterSelectorRequirement {
	return v1alpha1.ClusterSelectorRequirement{Key: key, Operator: op, Values: values}
}

// Term is a cluster selector term of ANDed expressions.
func Term(exprs ...v1alpha1.ClusterSelectorRequirement) v1alpha1.ClusterSelectorTerm {
	return v1alpha1.ClusterSelectorTerm{MatchExpressions: exprs}
}

// RequiredClusterAffinity sets required cluster-affinity terms, ORed.
func RequiredClusterAffinity(terms ...v1alpha1.ClusterSelectorTerm) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		a := affinity(w)
		if a.ClusterAffinity == nil {
			a.ClusterAffinity = &v1alpha1.ClusterAffinity{}
		}
		a.ClusterAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &v1alpha1.RequiredClusterSelector{ClusterSelectorTerms: terms}
	}
}

// PreferredClusterAffinity adds a preferred cluster-affinity term.
func PreferredClusterAffinity(weight int32, term v1alpha1.ClusterSelectorTerm) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		a := affinity(w)
		if a.ClusterAffinity == nil {
			a.ClusterAffinity = &v1alpha1.ClusterAffinity{}
		}
		a.ClusterAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.ClusterAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			v1alpha1.PreferredClusterSelectorTerm{Weight: weight, Preference: term})
	}
}

// WTerm is a workload affinity term selecting labels in the topology key.
func WTerm(topologyKey string, matchLabels ...string) v1alpha1.WorkloadAffinityTerm {
	ml := map[string]v1alpha1.LabelValue{}
	for i := 0; i+1 < len(matchLabels); i += 2 {
		ml[matchLabels[i]] = v1alpha1.LabelValue(matchLabels[i+1])
	}
	return v1alpha1.WorkloadAffinityTerm{TopologyKey: topologyKey, LabelSelector: &v1alpha1.LabelSelector{MatchLabels: ml}}
}

// RequiredAffinity adds required workload-affinity terms.
func RequiredAffinity(terms ...v1alpha1.WorkloadAffinityTerm) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		a := affinity(w)
		if a.WorkloadAffinity == nil {
			a.WorkloadAffinity = &v1alpha1.WorkloadAffinity{}
		}
		a.WorkloadAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.WorkloadAffinity.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

// RequiredAntiAffinity adds required workload anti-affinity terms.
func RequiredAntiAffinity(terms ...v1alpha1.WorkloadAffinityTerm) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		a := affinity(w)
		if a.WorkloadAntiAffinity == nil {
			a.WorkloadAntiAffinity = &v1alpha1.WorkloadAffinity{}
		}
		a.WorkloadAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.WorkloadAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, terms...)
	}
}

// PreferredAffinity adds a weighted workload-affinity term.
func PreferredAffinity(weight int32, term v1alpha1.WorkloadAffinityTerm) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		a := affinity(w)
		if a.WorkloadAffinity == nil {
			a.WorkloadAffinity = &v1alpha1.WorkloadAffinity{}
		}
		a.WorkloadAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.WorkloadAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			v1alpha1.WeightedWorkloadAffinityTerm{Weight: weight, WorkloadAffinityTerm: term})
	}
}

// PreferredAntiAffinity adds a weighted workload anti-affinity term.
func PreferredAntiAffinity(weight int32, term v1alpha1.WorkloadAffinityTerm) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		a := affinity(w)
		if a.WorkloadAntiAffinity == nil {
			a.WorkloadAntiAffinity = &v1alpha1.WorkloadAffinity{}
		}
		a.WorkloadAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.WorkloadAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			v1alpha1.WeightedWorkloadAffinityTerm{Weight: weight, WorkloadAffinityTerm: term})
	}
}

// PlacedOn sets status.clusterRef.
func PlacedOn(cluster string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: cluster, Namespace: "default"}
	}
}

// Nominated lists the clusters, in order, in status.nominatedClusters.
func Nominated(clusters ...string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		for _, n := range clusters {
			w.Status.NominatedClusters = append(w.Status.NominatedClusters, v1alpha1.ClusterReference{Name: n, Namespace: "default"})
		}
	}
}

// Rejected records a handshake rejection by the cluster for the given generation.
func Rejected(cluster string, generation int64, message string) WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Status.RejectedClusters = append(w.Status.RejectedClusters, v1alpha1.RejectedCluster{
			Cluster: v1alpha1.ClusterReference{Name: cluster, Namespace: "default"}, Reason: "Unschedulable", Message: message, Generation: generation,
		})
	}
}

// Snapshot builds a snapshot of clusters and placed workloads; namespaces
// are given as name → labels.
func Snapshot(clusters []*v1alpha1.KubernetesCluster, placed []*v1alpha1.Workload, namespaces map[string]map[string]string) *scheduler.Snapshot {
	infos := make([]*scheduler.ClusterInfo, len(clusters))
	for i, c := range clusters {
		infos[i] = scheduler.NewClusterInfo(c)
	}
	pws := make([]*scheduler.PlacedWorkload, 0, len(placed))
	for _, w := range placed {
		pws = append(pws, scheduler.NewPlacedWorkload(w))
	}
	ns := map[string]labels.Set{}
	for k, v := range namespaces {
		ns[k] = v
	}
	return scheduler.NewSnapshot(infos, pws, ns)
}

// Filter runs a filter plugin (and its PreFilter) over every cluster of
// the snapshot and returns the failure reasons by cluster name; passing
// clusters map to "".
func Filter(t *testing.T, f scheduler.PluginFactory, w *v1alpha1.Workload, snap *scheduler.Snapshot) map[string]string {
	t.Helper()
	pl, err := f(handle{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, state := context.Background(), scheduler.NewCycleState()
	out := map[string]string{}
	if pf, ok := pl.(scheduler.PreFilterPlugin); ok {
		if s := pf.PreFilter(ctx, state, w, snap); !s.IsSuccess() {
			for _, c := range snap.Clusters {
				out[c.Key.Name] = s.Message()
			}
			return out
		}
	}
	for _, c := range snap.Clusters {
		out[c.Key.Name] = pl.(scheduler.FilterPlugin).Filter(ctx, state, w, c).Message()
	}
	return out
}

// Score runs a score plugin (and its PreScore) over every cluster of the
// snapshot and returns the raw scores by cluster name.
func Score(t *testing.T, f scheduler.PluginFactory, strategy scheduler.ScoringStrategy, w *v1alpha1.Workload, snap *scheduler.Snapshot) map[string]int64 {
	t.Helper()
	pl, err := f(handle{strategy: strategy})
	if err != nil {
		t.Fatal(err)
	}
	ctx, state := context.Background(), scheduler.NewCycleState()
	if ps, ok := pl.(scheduler.PreScorePlugin); ok {
		if s := ps.PreScore(ctx, state, w, snap, snap.Clusters); !s.IsSuccess() {
			t.Fatalf("PreScore: %s", s.Message())
		}
	}
	out := map[string]int64{}
	for _, c := range snap.Clusters {
		v, s := pl.(scheduler.ScorePlugin).Score(ctx, state, w, c)
		if !s.IsSuccess() {
			t.Fatalf("Score %s: %s", c.Key.Name, s.Message())
		}
		out[c.Key.Name] = v
	}
	return out
}

type handle struct{ strategy scheduler.ScoringStrategy }

func (h handle) ScoringStrategy() scheduler.ScoringStrategy {
	if h.strategy == "" {
		return scheduler.LeastAllocated
	}
	return h.strategy
}

// RegionFleet is two clusters in region eu, one in us and one without a
// region: the fleet the workload-affinity tests share.
func RegionFleet() []*v1alpha1.KubernetesCluster {
	return []*v1alpha1.KubernetesCluster{
		Cluster("eu-1", Labels(v1alpha1.LabelRegion, "eu")),
		Cluster("eu-2", Labels(v1alpha1.LabelRegion, "eu")),
		Cluster("us-1", Labels(v1alpha1.LabelRegion, "us")),
		Cluster("none"),
	}
}

// ServeNamespaces sets spec.namespaceSelector to match these labels.
func ServeNamespaces(kv ...string) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			sel.MatchLabels[kv[i]] = kv[i+1]
		}
		kc.Spec.NamespaceSelector = sel
	}
}

// PodSecurity sets spec.podSecurity.
func PodSecurity(level v1alpha1.PodSecurityLevel) ClusterOption {
	return func(kc *v1alpha1.KubernetesCluster) { kc.Spec.PodSecurity = level }
}

// Pod changes the pod template's spec.
func Pod(f func(*corev1.PodSpec)) WorkloadOption {
	return func(w *v1alpha1.Workload) { f(&w.Spec.TargetDeployment.Template.Spec) }
}
