package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// Admiralty's keys, accepted as they are so that an Admiralty user's
// manifests work unchanged (design §4.11).
const (
	// AdmiraltyPrefix is the prefix of Admiralty's keys.
	AdmiraltyPrefix = "multicluster.admiralty.io/"
	// LabelSourceNamespace, on a namespace, opens it to source pods.
	LabelSourceNamespace = "multicluster-scheduler"
	// SourceNamespaceEnabled is its value.
	SourceNamespaceEnabled = "enabled"
	// AnnotationElect, on a pod of such a namespace, makes it a source pod.
	AnnotationElect = AdmiraltyPrefix + "elect"
	// AnnotationNoReservation places the pod in NoReservation mode.
	AnnotationNoReservation = AdmiraltyPrefix + "no-reservation"
	// AnnotationProxyPodSchedulingConstraints holds (YAML or JSON) the
	// nodeSelector, affinity and tolerations that pick virtual nodes, that
	// is clusters, beside the spec's own, which still pick the member's
	// nodes.
	AnnotationProxyPodSchedulingConstraints = AdmiraltyPrefix + "proxy-pod-scheduling-constraints"
	// AnnotationUseConstraintsFromSpec makes the spec's nodeSelector,
	// affinity and tolerations pick clusters instead of the member's nodes.
	AnnotationUseConstraintsFromSpec = AdmiraltyPrefix + "use-constraints-from-spec-for-proxy-pod-scheduling"
	// AnnotationSourcePodManifest, on a proxy pod, is the source pod as
	// written (JSON), set by the webhook: its candidates and delegate are
	// made from it.
	AnnotationSourcePodManifest = AdmiraltyPrefix + "sourcepod-manifest"
	// LabelClusterTargetName is Admiralty's label of a virtual node naming
	// its cluster; placer's virtual nodes carry it too.
	LabelClusterTargetName = AdmiraltyPrefix + "cluster-target-name"
)

// Virtual nodes: one Node per KubernetesCluster in the management cluster.
const (
	// ProxySchedulerName is the schedulerName the webhook gives a proxy
	// pod: no kube-scheduler takes it; placer binds it.
	ProxySchedulerName = "placer-proxy"
	// LabelVirtualKubeletProvider (label and taint key) marks a virtual
	// node as virtual-kubelet's convention says.
	LabelVirtualKubeletProvider = "virtual-kubelet.io/provider"
	// VirtualKubeletProvider is placer's value of it.
	VirtualKubeletProvider = "placer"
	// AnnotationVirtualNodeCluster, on a virtual node, is its
	// KubernetesCluster as namespace/name.
	AnnotationVirtualNodeCluster = Group + "/cluster"
	// LabelProxyPod marks a Workload made for a proxy pod (its value is the
	// pod's UID); the pod owns it.
	LabelProxyPod = Group + "/proxy-pod"
	// AnnotationProxyPodGone, "true" on a proxy pod's Workload, says its
	// pod was force-deleted (bound, deleted with no grace period), was
	// unbound with nothing of its Workload that could run, or went before
	// it (one without FinalizerProxyPod): its delegate is deleted without
	// waiting for it to stop, as nothing waits for a force-deleted
	// pod's containers. Otherwise the Workload, and the pod with it, goes
	// once the delegate has stopped.
	AnnotationProxyPodGone = Group + "/proxy-pod-gone"
	// AnnotationRunsIn, on a bound proxy pod, is the KubernetesCluster
	// (namespace/name) its delegate runs in: the one of its virtual node,
	// until its Workload moves.
	AnnotationRunsIn = Group + "/runs-in"
	// AnnotationSourceSignature, on a proxy pod, is the webhook's HMAC of
	// its source manifest: only a manifest the webhook wrote is placed.
	AnnotationSourceSignature = Group + "/source-signature"
)

// VirtualNodeName is the name of a KubernetesCluster's virtual node:
// placer.<namespace>.<name>. A namespace holds no dot, so two clusters
// never share a name.
func VirtualNodeName(cluster types.NamespacedName) string {
	return "placer." + cluster.Namespace + "." + cluster.Name
}

// ClusterOfVirtualNode is the KubernetesCluster of a virtual node's name,
// and false for a name that is not one.
func ClusterOfVirtualNode(node string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(node, "placer.")
	if !ok {
		return types.NamespacedName{}, false
	}
	ns, name, ok := strings.Cut(rest, ".")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
