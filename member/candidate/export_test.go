package candidate

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
)

// MarkReserved writes the is-reserved mark of pod's chaperon as the
// plugin's queue does after Reserve (reserved) or Unreserve, and reports
// whether the write is to be retried.
func MarkReserved(ctx context.Context, mc metadata.Interface, pod *corev1.Pod, reserved bool) (retry bool) {
	name, _ := chaperonOf(pod)
	p := &Plugin{client: mc}
	return p.markReserved(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, markOf(pod, reserved))
}
