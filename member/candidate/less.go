//go:build !kube1.37

package candidate

import fwk "k8s.io/kube-scheduler/framework"

// Less is the queue order of kube-scheduler v1.35 and v1.36 (lessPods).
func (p *Plugin) Less(a, b fwk.QueuedPodInfo) bool {
	return lessPods(a.GetPodInfo().GetPod(), b.GetPodInfo().GetPod(), a.GetTimestamp(), b.GetTimestamp())
}
