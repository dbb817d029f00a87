package agent_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/utils/ptr"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

	t.Run("a proxy pod's chaperon carries the whole status, another its summary", func(t *testing.T) {
		if ch.Status.PodIP != "" || len(ch.Status.ContainerStatuses) != 0 {
			t.Errorf("a chaperon not asking for it carries the pod IP %q and %d container statuses", ch.Status.PodIP, len(ch.Status.ContainerStatuses))
		}
		full := &mcv1alpha1.PodChaperon{
			ObjectMeta: metav1.ObjectMeta{Name: "proxy-0", Namespace: "default", Annotations: map[string]string{
				mcv1alpha1.AnnotationMirrorStatus: mcv1alpha1.MirrorStatusFull,
			}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		}
		if err := c.Create(ctx, full); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, full, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning && ch.Status.PodIP != "" && len(ch.Status.ContainerStatuses) == 1
		})
		if err := c.Delete(ctx, full); err != nil {
			t.Fatal(err)
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

	// Before, a pod being deleted was not looked at: its chaperon said
	// Ready for the whole grace period, and a rollout or a move counted
	// on a pod on its way out.
	t.Run("a pod being deleted is not Ready on its chaperon, and is replaced once gone", func(t *testing.T) {
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return podutil.IsPodReadyConditionTrue(ch.Status)
		})
		old, err := cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Its containers take 3 s to stop (kwok's stage for it).
		old.Annotations["kwok.placer.dev/stop-delay"] = "3s"
		if old, err = cs.CoreV1().Pods("default").Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("default").Delete(ctx, "web-0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			c := podutil.GetPodReadyCondition(ch.Status)
			return c != nil && c.Status == corev1.ConditionFalse
		})
		if c := podutil.GetPodReadyCondition(ch.Status); c.Reason != agent.ReasonPodTerminating {
			t.Errorf("Ready %+v, want reason %s", c, agent.ReasonPodTerminating)
		}
		if _, err := local.WaitForPod(ctx, cs, "default", "web-0", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return podutil.IsPodReadyConditionTrue(ch.Status)
		})
	})

	t.Run("a failed (evicted) pod is replaced", func(t *testing.T) {
		// kwok finishes the previous case's deletion by the pod's name: the
		// replacement it met may be replaced once more meanwhile (a kubelet
		// deletes by UID), so the eviction is written on whichever is there.
		var old *corev1.Pod
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var err error
			if old, err = cs.CoreV1().Pods("default").Get(ctx, "web-0", metav1.GetOptions{}); err != nil {
				return err
			}
			old.Status.Phase, old.Status.Reason = corev1.PodFailed, "Evicted"
			_, err = cs.CoreV1().Pods("default").UpdateStatus(ctx, old, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := local.WaitForPod(ctx, cs, "default", "web-0", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		}); err != nil {
			t.Fatal(err)
		}
	})

	// Batch pods (restartPolicy Never): kwok ends a pod annotated with an
	// exit code as a kubelet would.
	batch := func(t *testing.T, name string, annotations map[string]string) *mcv1alpha1.PodChaperon {
		t.Helper()
		b := &mcv1alpha1.PodChaperon{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: annotations},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "app", Image: "batch"}}},
		}
		if err := c.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), b) })
		return b
	}
	// neverAgain checks that no pod of that name appears for a while
	// after the old one was deleted.
	neverAgain := func(t *testing.T, name string, old types.UID) {
		t.Helper()
		if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old}}); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if p, err := local.WaitForPod(wctx, cs, "default", name, func(p *corev1.Pod) bool { return p.UID != old }); err == nil {
			t.Errorf("the pod of a chaperon that ended on its own was created again: %s (%s)", p.UID, p.Status.Phase)
		}
	}

	// endsIn creates a batch chaperon whose pod exits with the code
	// given, waits until the chaperon says the phase, checks that its pod
	// (kept) says it too, and then that a deleted pod is not made again.
	endsIn := func(t *testing.T, name, exitCode string, phase corev1.PodPhase) *mcv1alpha1.PodChaperon {
		t.Helper()
		b := batch(t, name, map[string]string{local.AnnotationExitCode: exitCode, local.AnnotationRunFor: "500ms"})
		testenv.WaitFor(t, c, b, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == phase
		})
		pod, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Status.Phase != phase {
			t.Fatalf("pod is %s, want the %s pod kept", pod.Status.Phase, phase)
		}
		neverAgain(t, name, pod.UID)
		return b
	}

	t.Run("a batch pod that succeeds runs once", func(t *testing.T) {
		endsIn(t, "batch-ok", "0", corev1.PodSucceeded)
	})

	t.Run("a batch pod that fails is not replaced, and says why", func(t *testing.T) {
		b := endsIn(t, "batch-fail", "3", corev1.PodFailed)
		if want := "container app exited with code 3 (Error)"; b.Status.Message != want {
			t.Errorf("chaperon's message %q, want %q", b.Status.Message, want)
		}
	})

	t.Run("an evicted batch pod is replaced", func(t *testing.T) {
		batch(t, "batch-evicted", nil)
		old, err := local.WaitForPod(ctx, cs, "default", "batch-evicted", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if err != nil {
			t.Fatal(err)
		}
		// Through the Eviction API, as a drain of its node does.
		if err := cs.CoreV1().Pods("default").EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "batch-evicted", Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
		again, err := local.WaitForPod(ctx, cs, "default", "batch-evicted", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		})
		if err != nil {
			t.Fatal(err)
		}
		// By its kubelet, for node pressure: Failed, with a DisruptionTarget.
		if err := local.EvictByKubelet(ctx, cs, again); err != nil {
			t.Fatal(err)
		}
		if _, err := local.WaitForPod(ctx, cs, "default", "batch-evicted", func(p *corev1.Pod) bool {
			return p.UID != again.UID && p.Status.Phase == corev1.PodRunning
		}); err != nil {
			t.Fatal(err)
		}
	})

	// windowed is a gang of one, allowed in advance within a bind window;
	// nodeSelector keeps its pod unbound when set.
	windowed := func(t *testing.T, name string, window time.Duration, nodeSelector map[string]string) *mcv1alpha1.PodChaperon {
		t.Helper()
		w := &mcv1alpha1.PodChaperon{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{
				mcv1alpha1.AnnotationAllowWhenReserved: "true", mcv1alpha1.AnnotationBindWindow: window.String()}},
			Spec: corev1.PodSpec{NodeSelector: nodeSelector, Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		}
		if err := c.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), w) })
		return w
	}
	fenced := func(t *testing.T, ch *mcv1alpha1.PodChaperon, want string) {
		t.Helper()
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Annotations[mcv1alpha1.AnnotationFenced] != ""
		})
		if got := ch.Annotations[mcv1alpha1.AnnotationFenced]; got != want {
			t.Errorf("fenced=%q, want %q", got, want)
		}
		// Its pod is gone and never made again.
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if p, err := local.WaitForPod(wctx, cs, "default", ch.Name, func(*corev1.Pod) bool { return true }); err == nil {
			t.Errorf("a fenced candidate has a pod: %s on %q (%s)", p.UID, p.Spec.NodeName, p.Status.Phase)
		}
	}

	t.Run("a candidate not bound when its window ends is fenced: its pod goes, and never comes back", func(t *testing.T) {
		ch := windowed(t, "late", 2*time.Second, map[string]string{"example.com/none": "x"})
		pod, err := local.WaitForPod(ctx, cs, "default", "late", func(*corev1.Pod) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		deadline, ok := mcv1alpha1.PodBindDeadline(pod.Annotations)
		if want := ch.CreationTimestamp.Add(2 * time.Second); !ok || !deadline.Equal(want) {
			t.Errorf("pod's bind deadline %v (%v), want the chaperon's creation plus its window, %v", deadline, ok, want)
		}
		fenced(t, ch, mcv1alpha1.FencedWindow)
	})

	t.Run("a candidate the management side gives up on is fenced before its window ends", func(t *testing.T) {
		ch := windowed(t, "given-up", time.Hour, map[string]string{"example.com/none": "x"})
		if _, err := local.WaitForPod(ctx, cs, "default", "given-up", func(*corev1.Pod) bool { return true }); err != nil {
			t.Fatal(err)
		}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+mcv1alpha1.AnnotationGiveUp+`":"true"}}}`))
		if err := c.Patch(ctx, ch, patch); err != nil {
			t.Fatal(err)
		}
		fenced(t, ch, mcv1alpha1.FencedGivenUp)
	})

	t.Run("a candidate bound inside its window is never fenced", func(t *testing.T) {
		ch := windowed(t, "in-time", 2*time.Second, nil)
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		time.Sleep(time.Until(ch.CreationTimestamp.Add(4 * time.Second)))
		if err := c.Get(ctx, client.ObjectKeyFromObject(ch), ch); err != nil {
			t.Fatal(err)
		}
		if v, ok := ch.Annotations[mcv1alpha1.AnnotationFenced]; ok {
			t.Errorf("a bound candidate was fenced (%q) after its window", v)
		}
		old, err := cs.CoreV1().Pods("default").Get(ctx, "in-time", metav1.GetOptions{})
		if err != nil || old.Status.Phase != corev1.PodRunning {
			t.Fatalf("the bound candidate's pod: %v, %v", old, err)
		}
		// Lost after its window (evicted, its node gone): replaced as any
		// committed pod is, and the replacement binds.
		if err := cs.CoreV1().Pods("default").Delete(ctx, "in-time", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		if _, err := local.WaitForPod(ctx, cs, "default", "in-time", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		}); err != nil {
			t.Fatalf("no replacement of a pod that bound inside its window: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ch), ch); err != nil {
			t.Fatal(err)
		}
		if v, ok := ch.Annotations[mcv1alpha1.AnnotationFenced]; ok {
			t.Errorf("fenced (%q) when its pod, bound inside the window, was replaced", v)
		}
		// Committed (the management side writes nothing for it): the
		// agent marked it is-allowed before the replacement, whose status
		// no longer says it bound, so that it is never fenced, however
		// long the replacement takes to bind.
		if ch.Annotations[mcv1alpha1.AnnotationIsAllowed] != "true" {
			t.Errorf("annotations %v: a candidate bound inside its window was replaced without being marked is-allowed", ch.Annotations)
		}
	})

	t.Run("a lost pod of a candidate with no bind window is replaced without a mark", func(t *testing.T) {
		// A NoReservation candidate (or a replica added to a committed
		// cluster): it binds without is-allowed and is never fenced, so
		// the mark would be a write of a whole pod spec for nothing.
		plain := &mcv1alpha1.PodChaperon{
			ObjectMeta: metav1.ObjectMeta{Name: "unwindowed", Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		}
		if err := c.Create(ctx, plain); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, plain, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		old, err := cs.CoreV1().Pods("default").Get(ctx, "unwindowed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("default").Delete(ctx, "unwindowed", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		if _, err := local.WaitForPod(ctx, cs, "default", "unwindowed", func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		}); err != nil {
			t.Fatalf("no replacement of a lost pod: %v", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(plain), plain); err != nil {
			t.Fatal(err)
		}
		if v, ok := plain.Annotations[mcv1alpha1.AnnotationIsAllowed]; ok {
			t.Errorf("a candidate with no bind window was marked is-allowed (%q) when its pod was replaced", v)
		}
	})

	t.Run("a chaperon deleted with a grace period deletes its pod with it", func(t *testing.T) {
		graced := &mcv1alpha1.PodChaperon{
			ObjectMeta: metav1.ObjectMeta{Name: "graced", Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		}
		if err := c.Create(ctx, graced); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, graced, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		// As the propagator deletes it: annotated, then deleted at once
		// (the agent may see it only once it is gone).
		got := podDeletionGrace(t, cs, "graced", func() {
			patch := []byte(`{"metadata":{"annotations":{"` + mcv1alpha1.AnnotationDeletionGracePeriod + `":"7"}}}`)
			if err := c.Patch(ctx, graced, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
			if err := c.Delete(ctx, graced); err != nil {
				t.Fatal(err)
			}
		})
		if got != 7 {
			t.Errorf("the pod was deleted with a grace period of %d s, want the chaperon's 7", got)
		}
	})

	t.Run("a pod the garbage collector deleted first, for a chaperon deleted in the foreground, gets the chaperon's shorter grace period", func(t *testing.T) {
		stopping := &mcv1alpha1.PodChaperon{
			// Its pod takes 30 s to stop once deleted (kwok's stage), so
			// that it is still there, being deleted, for the agent.
			ObjectMeta: metav1.ObjectMeta{Name: "stopping", Namespace: "default", Annotations: map[string]string{"kwok.placer.dev/stop-delay": "30s"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		}
		if err := c.Create(ctx, stopping); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, stopping, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		// As the garbage collector deletes a blocking dependent: with
		// the pod's own grace period (its spec's 30 s).
		if err := cs.CoreV1().Pods("default").Delete(ctx, "stopping", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=stopping"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// As the propagator deletes a proxy pod's chaperon: annotated
		// with the proxy pod's grace period, then in the foreground.
		patch := []byte(`{"metadata":{"annotations":{"` + mcv1alpha1.AnnotationDeletionGracePeriod + `":"3"}}}`)
		if err := c.Patch(ctx, stopping, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, stopping, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		last := int64(-1)
		for {
			select {
			case e, open := <-w.ResultChan():
				if !open {
					t.Fatalf("the watch ended; the pod's grace period was last %d s", last)
				}
				if p, ok := e.Object.(*corev1.Pod); ok && p.DeletionGracePeriodSeconds != nil {
					if last = *p.DeletionGracePeriodSeconds; last <= 3 {
						return
					}
				}
			case <-wctx.Done():
				t.Fatalf("the pod is still being deleted with a grace period of %d s, want the chaperon's 3", last)
			}
		}
	})

	// Before, such a pod (its node lost, its eviction never confirmed by
	// a kubelet) kept its name, the chaperon's, and the replica went
	// without a pod for as long as the node was lost.
	t.Run("a pod stuck being deleted on a node that is not Ready is replaced, unless its Workload never runs two", func(t *testing.T) {
		// A node no kubelet (nor kwok) serves: never Ready.
		lost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "lost-0", Labels: map[string]string{"placer.test/lost": "true"}}}
		if err := c.Create(ctx, lost); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), lost) })
		// The node lifecycle controller writes it too (its taints).
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(lost), lost); err != nil {
				return err
			}
			lost.Status.Capacity = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi")}
			lost.Status.Allocatable = lost.Status.Capacity
			return c.Status().Update(ctx, lost)
		}); err != nil {
			t.Fatal(err)
		}
		onLost := func(name string, replace bool) (*mcv1alpha1.PodChaperon, *corev1.Pod) {
			t.Helper()
			ch := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{}},
				Spec: corev1.PodSpec{NodeSelector: map[string]string{"placer.test/lost": "true"}, Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					TerminationGracePeriodSeconds: ptr.To[int64](1), Containers: []corev1.Container{{Name: "app", Image: "pause"}}}}
			if replace {
				ch.Annotations[mcv1alpha1.AnnotationReplaceLost] = "true"
			}
			if err := c.Create(ctx, ch); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), ch) })
			pod, err := local.WaitForPod(ctx, cs, "default", name, func(p *corev1.Pod) bool { return p.Spec.NodeName == "lost-0" })
			if err != nil {
				t.Fatal(err)
			}
			// As the taint eviction of a lost node deletes it.
			if err := cs.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			return ch, pod
		}
		_, kept := onLost("singleton-0", false)
		_, old := onLost("replica-0", true)
		if _, err := local.WaitForPod(ctx, cs, "default", "replica-0", func(p *corev1.Pod) bool { return p.UID != old.UID }); err != nil {
			t.Fatalf("no new pod for the replica whose pod is stuck being deleted on a lost node: %v", err)
		}
		still, err := cs.CoreV1().Pods("default").Get(ctx, "singleton-0", metav1.GetOptions{})
		if err != nil || still.UID != kept.UID || still.DeletionTimestamp == nil {
			t.Errorf("the singleton's pod: %v (uid %s, was %s); want it still being deleted, waited for", err, still.UID, kept.UID)
		}
	})

	t.Run("deleting the chaperon deletes the pod", func(t *testing.T) {
		got := podDeletionGrace(t, cs, "web-0", func() {
			if err := c.Delete(ctx, ch); err != nil {
				t.Fatal(err)
			}
		})
		// Its spec's, as any deletion without a grace period of its own.
		if got != corev1.DefaultTerminationGracePeriodSeconds {
			t.Errorf("the pod was deleted with a grace period of %d s, want its spec's %d", got, corev1.DefaultTerminationGracePeriodSeconds)
		}
		testenv.WaitForDeletion(t, c, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"}}, &corev1.PodList{}, timeout)
	})
}

// podDeletionGrace runs do and returns the grace period the pod of that
// name is then deleted with, from a watch started before.
func podDeletionGrace(t *testing.T, cs kubernetes.Interface, name string, do func()) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := cs.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	do()
	for e := range w.ResultChan() {
		if p, ok := e.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil {
			return *p.DeletionGracePeriodSeconds
		}
	}
	t.Fatalf("pod %s was not deleted", name)
	return 0
}

func TestEndedOnItsOwn(t *testing.T) {
	terminated := []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}}
	cases := map[string]struct {
		policy corev1.RestartPolicy
		status corev1.PodStatus
		want   bool
	}{
		"succeeded":          {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodSucceeded}, true},
		"failed, Never":      {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: terminated}, true},
		"failed, OnFailure":  {corev1.RestartPolicyOnFailure, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: terminated}, true},
		"running":            {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodRunning}, false},
		"failed, Always":     {corev1.RestartPolicyAlways, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: terminated}, false},
		"evicted by kubelet": {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", ContainerStatuses: terminated}, false},
		"refused by kubelet": {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu"}, false},
		// Before, taken for a disrupted pod and replaced, for ever, with
		// no backoff: its replica never counted Failed.
		"failed, Never, its init container failed": {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodFailed,
			InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}}},
			ContainerStatuses:     []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}}, true},
		"disrupted (DisruptionTarget)": {corev1.RestartPolicyNever, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: terminated, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}}, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy}, Status: tc.status}
			if got := agent.EndedOnItsOwn(pod); got != tc.want {
				t.Errorf("EndedOnItsOwn = %v, want %v", got, tc.want)
			}
		})
	}
}
