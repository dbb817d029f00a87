package agent

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestNodeSummaryChanged(t *testing.T) {
	node := func(mut func(*corev1.Node)) *corev1.Node {
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"zone": "a"}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
			},
		}
		if mut != nil {
			mut(n)
		}
		return n
	}
	cases := map[string]struct {
		mut  func(*corev1.Node)
		want bool
	}{
		"heartbeat only": {func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(time.Now().Add(time.Minute))
		}, false},
		"not ready":       {func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		"cordoned":        {func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		"allocatable":     {func(n *corev1.Node) { n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("8") }, true},
		"topology labels": {func(n *corev1.Node) { n.Labels["zone"] = "b" }, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := nodeSummaryChanged.Update(event.UpdateEvent{ObjectOld: node(nil), ObjectNew: node(tc.mut)}); got != tc.want {
				t.Errorf("Update() = %v, want %v", got, tc.want)
			}
		})
	}
}
