package agent

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	nodeutil "k8s.io/component-helpers/node/util"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// Summary is the aggregate view of a cluster's nodes that the management
// side is allowed to see; the agent publishes it as a ClusterSummary.
type Summary = mcv1alpha1.ClusterSummaryStatus

// schedulable reports whether new pods may land on the node.
func schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	_, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// Summarize adds up the allocatable resources of the schedulable nodes and
// the requests of the pods bound to them, and finds the most room left on
// any one node for cpu and for memory.
func Summarize(nodes []*corev1.Node, pods []*corev1.Pod) Summary {
	s := Summary{
		NodeCount:       int32(len(nodes)),
		Allocatable:     corev1.ResourceList{},
		Requested:       corev1.ResourceList{},
		LargestFreeNode: corev1.ResourceList{},
	}
	requested := map[string]corev1.ResourceList{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		add(requestedOn(requested, p.Spec.NodeName), resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		requestedOn(requested, p.Spec.NodeName)[corev1.ResourcePods] = *resource.NewQuantity(podCount(requested, p.Spec.NodeName)+1, resource.DecimalSI)
	}
	s.Labels = commonTopology(nodes)
	for _, n := range nodes {
		if !schedulable(n) {
			continue
		}
		s.ReadyNodeCount++
		add(s.Allocatable, n.Status.Allocatable)
		used := requested[n.Name]
		add(s.Requested, used)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			free := n.Status.Allocatable[r].DeepCopy()
			free.Sub(used[r])
			if cur, ok := s.LargestFreeNode[r]; !ok || free.Cmp(cur) > 0 {
				s.LargestFreeNode[r] = free
			}
		}
	}
	return s
}

// commonTopology returns the region and zone labels every node carries with
// one value; nil when there are none.
func commonTopology(nodes []*corev1.Node) map[string]string {
	if len(nodes) == 0 {
		return nil
	}
	topology := map[string]string{}
	for _, key := range []string{v1alpha1.LabelRegion, v1alpha1.LabelZone} {
		if v, ok := nodes[0].Labels[key]; ok {
			topology[key] = v
		}
	}
	for _, n := range nodes[1:] {
		for key, v := range topology {
			if n.Labels[key] != v {
				delete(topology, key)
			}
		}
	}
	if len(topology) == 0 {
		return nil
	}
	return topology
}

func requestedOn(m map[string]corev1.ResourceList, node string) corev1.ResourceList {
	if m[node] == nil {
		m[node] = corev1.ResourceList{}
	}
	return m[node]
}

func podCount(m map[string]corev1.ResourceList, node string) int64 {
	q := m[node][corev1.ResourcePods]
	return q.Value()
}

func add(to, from corev1.ResourceList) {
	for k, v := range from {
		cur := to[k]
		cur.Add(v)
		to[k] = cur
	}
}
