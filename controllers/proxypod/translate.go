// Package proxypod is placer's front end for ordinary pods, as Admiralty's
// users run them (design §4.11): a mutating webhook turns a source pod
// into a proxy pod, each proxy pod is placed as the gang of one of a
// Workload it owns (the same scheduler, handshake, dependencies and moves
// as any Workload), the proxy pod is bound to its cluster's virtual node
// once the delegate runs there, and its status follows the delegate's.
package proxypod

import (
	"encoding/json"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Constraints are the scheduling constraints that pick virtual nodes,
// that is clusters: Admiralty's proxy-pod-scheduling-constraints.
type Constraints struct {
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Affinity     *corev1.Affinity    `json:"affinity,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

var annotationsPath = field.NewPath("metadata", "annotations")

// IsSource reports whether a pod of a namespace with these labels is a
// source pod: the namespace is labelled multicluster-scheduler=enabled and
// the pod annotated multicluster.admiralty.io/elect.
func IsSource(pod *corev1.Pod, namespaceLabels map[string]string) bool {
	_, elect := pod.Annotations[v1alpha1.AnnotationElect]
	return elect && namespaceLabels[v1alpha1.LabelSourceNamespace] == v1alpha1.SourceNamespaceEnabled
}

// IsProxy reports whether a pod is a proxy pod (the webhook made it one).
func IsProxy(pod *corev1.Pod) bool {
	_, saved := pod.Annotations[v1alpha1.AnnotationSourcePodManifest]
	return saved && pod.Spec.SchedulerName == v1alpha1.ProxySchedulerName
}

// constraintsOf returns the constraints that pick the source pod's
// clusters, and the pod as its delegate runs (without them when they
// came from its spec), or the annotation's error, naming it.
func constraintsOf(source *corev1.Pod) (Constraints, *corev1.Pod, *field.Error) {
	delegate := source.DeepCopy()
	var c Constraints
	if raw, ok := source.Annotations[v1alpha1.AnnotationProxyPodSchedulingConstraints]; ok {
		if err := yaml.UnmarshalStrict([]byte(raw), &c); err != nil {
			return c, nil, field.Invalid(annotationsPath.Key(v1alpha1.AnnotationProxyPodSchedulingConstraints), raw,
				"must hold nodeSelector, affinity and tolerations (YAML or JSON): "+err.Error())
		}
	}
	if _, ok := source.Annotations[v1alpha1.AnnotationUseConstraintsFromSpec]; ok {
		c.NodeSelector = mergeSelectors(c.NodeSelector, source.Spec.NodeSelector)
		if source.Spec.Affinity != nil && source.Spec.Affinity.NodeAffinity != nil {
			if c.Affinity == nil {
				c.Affinity = &corev1.Affinity{}
			}
			c.Affinity.NodeAffinity = source.Spec.Affinity.NodeAffinity.DeepCopy()
		}
		c.Tolerations = append(c.Tolerations, source.Spec.Tolerations...)
		delegate.Spec.NodeSelector = nil
		if delegate.Spec.Affinity != nil {
			delegate.Spec.Affinity.NodeAffinity = nil
		}
		delegate.Spec.Tolerations = nil
	}
	return c, delegate, nil
}

func mergeSelectors(a, b map[string]string) map[string]string {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := maps.Clone(a)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, b)
	return out
}

// clusterKey maps a virtual-node label key to the cluster label it stands
// for: Admiralty's cluster-target-name is placer's cluster-name.
func clusterKey(k string) string {
	if k == v1alpha1.LabelClusterTargetName {
		return v1alpha1.LabelClusterName
	}
	return k
}

// apply sets what the constraints say on a Workload's spec: the node
// selector is the cluster selector, node affinity is cluster affinity,
// tolerations (but those of virtual nodes themselves) are cluster
// tolerations.
func (c Constraints) apply(spec *v1alpha1.WorkloadSpec) {
	if len(c.NodeSelector) > 0 {
		spec.ClusterSelector = map[string]v1alpha1.LabelValue{}
		for k, v := range c.NodeSelector {
			spec.ClusterSelector[clusterKey(k)] = v1alpha1.LabelValue(v)
		}
	}
	if c.Affinity != nil && c.Affinity.NodeAffinity != nil {
		spec.Affinity = &v1alpha1.Affinity{ClusterAffinity: clusterAffinity(c.Affinity.NodeAffinity)}
	}
	for _, t := range c.Tolerations {
		if t.Key == v1alpha1.LabelVirtualKubeletProvider || strings.HasPrefix(t.Key, "node.kubernetes.io/") {
			continue
		}
		spec.ClusterTolerations = append(spec.ClusterTolerations, clusterToleration(t, t.Key))
	}
}

// conditionTaints are the node condition taints whose tolerations a pod
// carries anyway (the DefaultTolerationSeconds admission plugin adds them,
// 300 s) and the cluster taints that mean the same of a cluster: how long
// the pod stays on a cluster that does not answer, or is not ready, before
// it moves, as on a node.
var conditionTaints = map[string]string{
	corev1.TaintNodeUnreachable: v1alpha1.TaintClusterUnreachable,
	corev1.TaintNodeNotReady:    v1alpha1.TaintClusterNotReady,
}

// conditionTolerations are the pod's tolerations of node conditions, as
// tolerations of the same conditions of clusters.
func conditionTolerations(ts []corev1.Toleration) []v1alpha1.ClusterToleration {
	var out []v1alpha1.ClusterToleration
	for _, t := range ts {
		if key, ok := conditionTaints[t.Key]; ok && (t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
			out = append(out, clusterToleration(t, key))
		}
	}
	return out
}

func clusterToleration(t corev1.Toleration, key string) v1alpha1.ClusterToleration {
	return v1alpha1.ClusterToleration{
		Key: key, Operator: v1alpha1.TolerationOperator(t.Operator), Value: t.Value,
		Effect: v1alpha1.TaintEffect(t.Effect), TolerationSeconds: t.TolerationSeconds,
	}
}

func clusterAffinity(na *corev1.NodeAffinity) *v1alpha1.ClusterAffinity {
	out := &v1alpha1.ClusterAffinity{}
	if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
		out.RequiredDuringSchedulingIgnoredDuringExecution = &v1alpha1.RequiredClusterSelector{}
		for _, t := range r.NodeSelectorTerms {
			out.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms = append(
				out.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms, clusterTerm(t))
		}
	}
	for _, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		out.PreferredDuringSchedulingIgnoredDuringExecution = append(out.PreferredDuringSchedulingIgnoredDuringExecution,
			v1alpha1.PreferredClusterSelectorTerm{Weight: p.Weight, Preference: clusterTerm(p.Preference)})
	}
	return out
}

func clusterTerm(t corev1.NodeSelectorTerm) v1alpha1.ClusterSelectorTerm {
	out := v1alpha1.ClusterSelectorTerm{}
	for _, e := range t.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, v1alpha1.ClusterSelectorRequirement{
			Key: clusterKey(e.Key), Operator: v1alpha1.SelectorOperator(e.Operator), Values: e.Values})
	}
	for _, e := range t.MatchFields {
		// A virtual node's metadata.name names its cluster.
		values := make([]string, 0, len(e.Values))
		for _, v := range e.Values {
			if key, ok := v1alpha1.ClusterOfVirtualNode(v); ok {
				v = key.Name
			}
			values = append(values, v)
		}
		out.MatchFields = append(out.MatchFields, v1alpha1.ClusterFieldSelectorRequirement{
			Key: e.Key, Operator: v1alpha1.SelectorOperator(e.Operator), Values: values})
	}
	return out
}

// SourceOf returns the source pod a proxy pod was made from, as saved.
func SourceOf(proxy *corev1.Pod) (*corev1.Pod, error) {
	source := &corev1.Pod{}
	if err := json.Unmarshal([]byte(proxy.Annotations[v1alpha1.AnnotationSourcePodManifest]), source); err != nil {
		return nil, err
	}
	return source, nil
}

// WorkloadFor returns the Workload that places a source pod: named as
// the pod, controlled by it (its uid and name are those of the proxy pod),
// one replica of the pod as written (but the constraints that picked
// clusters), placed as the pod's annotations say. It moves make-before-
// break (StartBeforeStop), but a StatefulSet's pod, which must never run
// twice: StopBeforeStart, as Kubernetes replaces a StatefulSet's pod on a
// node that stopped answering only once the pod is confirmed gone.
func WorkloadFor(source *corev1.Pod, owner metav1.OwnerReference) (*v1alpha1.Workload, *field.Error) {
	c, delegate, ferr := constraintsOf(source)
	if ferr != nil {
		return nil, ferr
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: maps.Clone(delegate.Labels), Annotations: map[string]string{}},
		Spec:       delegate.Spec,
	}
	for k, v := range delegate.Annotations {
		if !strings.HasPrefix(k, v1alpha1.AdmiraltyPrefix) {
			tmpl.Annotations[k] = v
		}
	}
	tmpl.Spec.NodeName = ""
	tmpl.Spec.SchedulerName = ""
	// Gates hold the proxy pod in the management cluster (its queue's);
	// none of them belongs to a member, where nothing would lift it.
	tmpl.Spec.SchedulingGates = nil
	w := &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name: owner.Name, Namespace: source.Namespace,
			Labels:          map[string]string{v1alpha1.LabelProxyPod: string(owner.UID)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: v1alpha1.WorkloadSpec{
			SchedulerName:    v1alpha1.DefaultSchedulerName,
			TargetDeployment: v1alpha1.TargetDeployment{Replicas: ptr.To[int32](1), Template: tmpl},
			Placement:        v1alpha1.Placement{FanOut: 1, Mode: v1alpha1.PlacementModeReserve, Move: moveOf(source)},
		},
	}
	if _, ok := source.Annotations[v1alpha1.AnnotationNoReservation]; ok {
		w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation
	}
	c.apply(&w.Spec)
	w.Spec.ClusterTolerations = append(w.Spec.ClusterTolerations, conditionTolerations(source.Spec.Tolerations)...)
	return w, nil
}

// moveOf is a source pod's move policy (WorkloadFor).
func moveOf(source *corev1.Pod) v1alpha1.MovePolicy {
	if c := metav1.GetControllerOfNoCopy(source); c != nil && c.Kind == "StatefulSet" && strings.HasPrefix(c.APIVersion, "apps/") {
		return v1alpha1.MoveStopBeforeStart
	}
	return v1alpha1.MoveStartBeforeStop
}

// OwnerOf is the controller reference of a proxy pod over its Workload.
// It does not block the pod's deletion: the proxy pods' controller
// deletes the Workload first, and a blocking reference would need the
// right to update pods/finalizers where owner references are enforced.
func OwnerOf(pod *corev1.Pod) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}
}
