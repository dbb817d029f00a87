package candidate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// TestLess: pod priority first, then the chosen cluster's candidates
// before runner-ups, then the earlier arrival.
func TestLess(t *testing.T) {
	t0 := time.Now()
	queued := func(name string, priority int32, runnerUp bool, at time.Duration, annotations ...string) *framework.QueuedPodInfo {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}}, Spec: corev1.PodSpec{Priority: ptr.To(priority)}}
		if runnerUp {
			pod.Annotations[mcv1alpha1.AnnotationRunnerUp] = "true"
		}
		for _, k := range annotations {
			pod.Annotations[k] = "true"
		}
		pi, err := framework.NewPodInfo(pod)
		if err != nil {
			t.Fatal(err)
		}
		return &framework.QueuedPodInfo{PodInfo: pi, Timestamp: t0.Add(at)}
	}
	cases := []struct {
		name string
		a, b *framework.QueuedPodInfo
		want bool
	}{
		{"the chosen cluster's candidate before an older runner-up", queued("chosen", 0, false, time.Second), queued("runner-up", 0, true, 0), true},
		{"a runner-up after a newer candidate of the chosen cluster", queued("runner-up", 0, true, 0), queued("chosen", 0, false, time.Second), false},
		{"a runner-up of higher priority first", queued("runner-up", 10, true, time.Second), queued("chosen", 0, false, 0), true},
		{"of two runner-ups, the older", queued("old", 0, true, 0), queued("new", 0, true, time.Second), true},
		{"a replacement in a runner-up that committed since is no runner-up", queued("replacement", 0, true, 0, mcv1alpha1.AnnotationIsAllowed), queued("chosen", 0, false, time.Second), true},
		{"of two chosen ones, the newer goes after", queued("new", 0, false, time.Second), queued("old", 0, false, 0), false},
	}
	p := &Plugin{}
	for _, tc := range cases {
		if got := p.Less(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: Less(%s, %s) = %t, want %t", tc.name, tc.a.Pod.Name, tc.b.Pod.Name, got, tc.want)
		}
	}
}
