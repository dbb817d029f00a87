package local

import (
	"context"

	nodeutil "k8s.io/component-helpers/node/util"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/retry"
)

// WaitForPod watches one pod until cond holds for it or ctx ends.
func WaitForPod(ctx context.Context, cs kubernetes.Interface, namespace, name string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", namespace, fields.OneTermEqualSelector("metadata.name", name))
	ev, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		return ok && e.Type != watch.Deleted && cond(p), nil
	})
	if err != nil {
		return nil, errors.Wrapf(err, "pod %s/%s did not reach the expected state", namespace, name)
	}
	return ev.Object.(*corev1.Pod), nil
}

// WaitForPodGone watches until the pod of that name and UID is gone, or
// ctx ends.
func WaitForPodGone(ctx context.Context, cs kubernetes.Interface, namespace, name string, uid types.UID) error {
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", namespace, fields.OneTermEqualSelector("metadata.name", name))
	gone := func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if o.(*corev1.Pod).UID == uid {
				return false, nil
			}
		}
		return true, nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, gone, func(e watch.Event) (bool, error) {
		p, ok := e.Object.(*corev1.Pod)
		return ok && e.Type == watch.Deleted && p.UID == uid, nil
	})
	return errors.Wrapf(err, "pod %s/%s was not deleted", namespace, name)
}

// WaitForServiceAccount watches until the namespace's service account
// exists: pods are refused until the controller manager has created it.
func WaitForServiceAccount(ctx context.Context, cs kubernetes.Interface, namespace, name string) error {
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "serviceaccounts", namespace, fields.OneTermEqualSelector("metadata.name", name))
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.ServiceAccount{}, nil, func(e watch.Event) (bool, error) {
		return e.Type != watch.Deleted, nil
	})
	return errors.Wrapf(err, "service account %s/%s did not appear", namespace, name)
}

// WaitForNodesReady watches nodes until n of them are Ready and carry no
// not-ready taint, or ctx ends.
func WaitForNodesReady(ctx context.Context, cs kubernetes.Interface, n int) error {
	if n <= 0 {
		// The watch's condition runs only on an event: none may come.
		return nil
	}
	lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "nodes", metav1.NamespaceAll, fields.Everything())
	ready := map[string]bool{}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Node{}, nil, func(e watch.Event) (bool, error) {
		node, ok := e.Object.(*corev1.Node)
		if !ok {
			return false, nil
		}
		ready[node.Name] = e.Type != watch.Deleted && NodeReady(node)
		count := 0
		for _, r := range ready {
			if r {
				count++
			}
		}
		return count >= n, nil
	})
	return errors.Wrapf(err, "fewer than %d nodes became ready", n)
}

// NodeReady reports whether the node is Ready and free of the taint the
// node lifecycle controller keeps on nodes that are not.
func NodeReady(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	_, c := nodeutil.GetNodeCondition(&n.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// EvictByKubelet ends a running pod as its kubelet does under node
// pressure: Failed, with a DisruptionTarget condition (TerminationByKubelet)
// and its containers killed (exit code 137); the pod object stays.
func EvictByKubelet(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod) error {
	// kwok may still be writing the pod's status: each conflict reads it again.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID != pod.UID {
			return errors.Errorf("pod %s/%s was replaced before it could be evicted", pod.Namespace, pod.Name)
		}
		p.Status.Phase, p.Status.Reason = corev1.PodFailed, ""
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet"})
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}
		}
		_, err = cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
}
