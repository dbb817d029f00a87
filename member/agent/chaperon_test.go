package agent_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctrl "sigs.k8s.io/controller-runtime"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"

	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/member/agent"
)

const timeout = 90 * time.Second

// TestChaperonController runs the agent's controller against a real
// cluster (kube-scheduler for the pods, kwok for the nodes).
func TestChaperonController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	target := testenv.StartTarget(t, local.Options{Name: "target", Scheduler: true}, local.Node{Name: "node-0", CPU: "4", Memory: "8Gi"})
	cfg, cs := target.RESTConfig(), target.Clientset
	testenv.RunManager(t, cfg, func(mgr ctrl.Manager) error { return agent.SetupChaperonController(mgr, 0) })
	c := testenv.Watcher(t, cfg)
	ch := &mcv1alpha1.PodChaperon{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"team": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
	}
	if err := c.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}

	t.Run("the chaperon becomes a pod whose status is mirrored back", func(t *testing.T) {
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(pod, ch) || pod.Labels["app"] != "web" || pod.Annotations["team"] != "a" {
			t.Errorf("pod metadata not copied from its chaperon: owners %v, labels %v, annotations %v", pod.OwnerReferences, pod.Labels, pod.Annotations)
		}
		if pod.Spec.NodeName != "node-0" {
			t.Errorf("pod on node %q", pod.Spec.NodeName)
		}
	})

	t.Run("a pod annotation is mirrored; placer's own are not", func(t *testing.T) {
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Annotations["example.com/checked"] = "yes"
		pod.Annotations[mcv1alpha1.AnnotationIsAllowed] = "true"
		if _, err := cs.CoreV1().Pods("default").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Annotations["example.com/checked"] == "yes"
		})
		if _, ok := ch.Annotations[mcv1alpha1.AnnotationIsAllowed]; ok {
			t.Error("a placer annotation was copied from the pod onto the chaperon")
		}
	})

	t.Run("a deleted pod is replaced", func(t *testing.T) {
		old, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("default").Delete(ctx, "web-0", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		p, err := local.WaitForPod(ctx, cs, "default", "web-0", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		})
		if err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(p, ch) {
			t.Error("the replacement is not owned by the chaperon")
		}
	})

	t.Run("a failed (evicted) pod is replaced", func(t *testing.T) {
		old, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		old.Status.Phase, old.Status.Reason = corev1.PodFailed, "Evicted"
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, old, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := local.WaitForPod(ctx, cs, "default", "web-0", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("deleting the chaperon deletes the pod", func(t *testing.T) {
		if err := c.Delete(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}, &corev1.PodList{}, timeout)
	})
}
