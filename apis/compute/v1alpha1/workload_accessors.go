package v1alpha1

import "k8s.io/apimachinery/pkg/types"

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

// RejectedBy reports whether the cluster rejected this generation's handshake.
func (w *Workload) RejectedBy(key types.NamespacedName) bool {
	for i := range w.Status.RejectedClusters {
		rc := &w.Status.RejectedClusters[i]
		if rc.Generation == w.Generation && w.ClusterKey(&rc.Cluster) == key {
			return true
		}
	}
	return false
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
