package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

func node(name, cpu, mem string, ready bool, labels map[string]string) *corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem), corev1.ResourcePods: resource.MustParse("110")}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Status: corev1.NodeStatus{
			Allocatable: res,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

func pod(nodeName, cpu, mem string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name:      "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}},
		}}},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func q(s string) resource.Quantity { return resource.MustParse(s) }

func TestSummarize(t *testing.T) {
	region := func(r, z string) map[string]string {
		return map[string]string{v1alpha1.LabelRegion: r, v1alpha1.LabelZone: z}
	}
	cases := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  Summary
	}{
		{
			name: "no nodes",
			want: Summary{Allocatable: corev1.ResourceList{}, Requested: corev1.ResourceList{}, LargestFreeNode: corev1.ResourceList{}},
		},
		{
			name:  "requests are subtracted per node and the largest room is kept",
			nodes: []*corev1.Node{node("a", "4", "8Gi", true, region("eu", "eu-1")), node("b", "8", "4Gi", true, region("eu", "eu-1"))},
			pods: []*corev1.Pod{
				pod("a", "1", "1Gi", corev1.PodRunning),
				pod("b", "6", "1Gi", corev1.PodRunning),
				pod("b", "1", "1Gi", corev1.PodSucceeded), // finished: holds nothing
				pod("", "1", "1Gi", corev1.PodPending),    // unbound: holds nothing
			},
			want: Summary{
				NodeCount: 2, ReadyNodeCount: 2,
				Allocatable:     corev1.ResourceList{corev1.ResourceCPU: q("12"), corev1.ResourceMemory: q("12Gi"), corev1.ResourcePods: q("220")},
				Requested:       corev1.ResourceList{corev1.ResourceCPU: q("7"), corev1.ResourceMemory: q("2Gi"), corev1.ResourcePods: q("2")},
				LargestFreeNode: corev1.ResourceList{corev1.ResourceCPU: q("3"), corev1.ResourceMemory: q("7Gi")},
				Labels:          region("eu", "eu-1"),
			},
		},
		{
			name:  "not-ready nodes count but hold no capacity; zones disagree",
			nodes: []*corev1.Node{node("a", "4", "8Gi", true, region("eu", "eu-1")), node("b", "64", "64Gi", false, region("eu", "eu-2"))},
			want: Summary{
				NodeCount: 2, ReadyNodeCount: 1,
				Allocatable:     corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi"), corev1.ResourcePods: q("110")},
				Requested:       corev1.ResourceList{},
				LargestFreeNode: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("8Gi")},
				Labels:          map[string]string{v1alpha1.LabelRegion: "eu"},
			},
		},
		{
			name:  "a node without topology labels removes them",
			nodes: []*corev1.Node{node("a", "1", "1Gi", true, region("eu", "eu-1")), node("b", "1", "1Gi", true, nil)},
			want: Summary{
				NodeCount: 2, ReadyNodeCount: 2,
				Allocatable:     corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("2Gi"), corev1.ResourcePods: q("220")},
				Requested:       corev1.ResourceList{},
				LargestFreeNode: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("1Gi")},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.nodes, tc.pods)
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("Summarize() (-want,+got):\n%s", diff)
			}
		})
	}
}
