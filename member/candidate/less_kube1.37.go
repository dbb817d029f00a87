//go:build kube1.37

package candidate

import fwk "k8s.io/kube-scheduler/framework"

// Less is the queue order of kube-scheduler v1.37, whose queue holds pods
// and pod groups: pods as lessPods orders them, anything else as
// PrioritySort does.
func (p *Plugin) Less(a, b fwk.QueuedEntityInfo) bool {
	type pod interface{ GetPodInfo() fwk.PodInfo }
	pa, okA := a.(pod)
	pb, okB := b.(pod)
	if okA && okB {
		return lessPods(pa.GetPodInfo().GetPod(), pb.GetPodInfo().GetPod(), a.GetTimestamp(), b.GetTimestamp())
	}
	if qa, qb := a.GetPriority(), b.GetPriority(); qa != qb {
		return qa > qb
	}
	return a.GetTimestamp().Before(b.GetTimestamp())
}
