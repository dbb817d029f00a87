package candidate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/member/agent"
	"github.com/placer-dev/placer/member/candidate"
)

const timeout = 90 * time.Second

// unreserved: the chaperon carries no is-reserved mark.
func unreserved(ch *mcv1alpha1.PodChaperon) bool {
	_, reserved := ch.Annotations[mcv1alpha1.AnnotationIsReserved]
	return !reserved
}

func chaperon(name, cpu string) *mcv1alpha1.PodChaperon {
	return &mcv1alpha1.PodChaperon{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			SchedulerName: candidate.ProfileName,
			Containers: []corev1.Container{{Name: "app", Image: "pause", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}},
		},
	}
}

// TestCandidateScheduler runs the real kube-scheduler with placer's plugin,
// and the agent, against a real target cluster with no other scheduler.
func TestCandidateScheduler(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	target := testenv.StartTarget(t, local.Options{Name: "target"}, local.Node{Name: "node-0", CPU: "4", Memory: "8Gi"})
	cfg, cs := target.RESTConfig(), target.Clientset
	testenv.RunManager(t, cfg, func(mgr ctrl.Manager) error { return agent.SetupChaperonController(mgr, 0) })
	// As on a read-only root filesystem: any temporary file fails.
	t.Setenv("TMPDIR", "/nonexistent/placer-read-only")
	runCtx, stop := context.WithCancel(ctx)
	schedDone := make(chan error, 1)
	go func() {
		schedDone <- candidate.Run(runCtx, candidate.Options{
			Kubeconfig: target.KubeconfigPath(), QPS: 50, Burst: 100, PermitTimeout: 3 * time.Second,
		})
	}()
	t.Cleanup(func() {
		stop()
		if err := <-schedDone; err != nil {
			t.Errorf("candidate scheduler: %v", err)
		}
	})

	c := testenv.Watcher(t, cfg)

	t.Run("a candidate is reserved, held, and binds once allowed", func(t *testing.T) {
		ch := chaperon("fits", "1")
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true"
		})
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "fits", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "" {
			t.Fatalf("the candidate bound to %s before it was allowed", pod.Spec.NodeName)
		}
		patch := client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"annotations":{"`+mcv1alpha1.AnnotationIsAllowed+`":"true"}}}`))
		if err := c.Patch(ctx, ch, patch); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		// Released by the informer, not by the 3s permit timeout.
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Errorf("the allowed candidate took %s to run; it should be released at once", d)
		}
	})

	t.Run("a candidate allowed when reserved binds without waiting for is-allowed, and without an is-reserved write", func(t *testing.T) {
		ch := chaperon("solo", "1")
		ch.Annotations = map[string]string{mcv1alpha1.AnnotationAllowWhenReserved: "true"}
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Status.Phase == corev1.PodRunning
		})
		// Its binding says it was reserved; a mark queued at Reserve, long
		// before the pod ran, would be here by now.
		if _, ok := ch.Annotations[mcv1alpha1.AnnotationIsAllowed]; ok {
			t.Error("is-allowed was written; nothing should have written it")
		}
		if v, ok := ch.Annotations[mcv1alpha1.AnnotationIsReserved]; ok {
			t.Errorf("is-reserved=%q was written for a candidate allowed in advance", v)
		}
	})

	t.Run("a candidate that fits no node reports the target scheduler's reason", func(t *testing.T) {
		ch := chaperon("too-big", "64")
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			for _, cond := range ch.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
					return true
				}
			}
			return false
		})
		msg := ""
		for _, cond := range ch.Status.Conditions {
			if cond.Type == corev1.PodScheduled {
				msg = cond.Message
			}
		}
		if !strings.Contains(msg, "Insufficient cpu") {
			t.Errorf("PodScheduled message %q does not name the shortfall", msg)
		}
		if ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true" {
			t.Error("an unschedulable candidate was reserved")
		}
	})

	t.Run("a gang of one that found no room within its bind window never binds when room appears", func(t *testing.T) {
		ch := chaperon("late", "6")
		ch.Annotations = map[string]string{mcv1alpha1.AnnotationAllowWhenReserved: "true", mcv1alpha1.AnnotationBindWindow: "3s"}
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Annotations[mcv1alpha1.AnnotationFenced] != ""
		})
		// Room appears, as an autoscaler's node would bring it.
		if err := target.AddNodes(ctx, local.Node{Name: "node-big", CPU: "16", Memory: "32Gi"}); err != nil {
			t.Fatal(err)
		}
		if err := local.WaitForNodesReady(ctx, cs, 2); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if p, err := local.WaitForPod(wctx, cs, "default", "late", func(p *corev1.Pod) bool { return p.Spec.NodeName != "" }); err == nil {
			t.Errorf("the fenced candidate bound to %s once room appeared", p.Spec.NodeName)
		}
	})

	t.Run("a candidate never allowed is unreserved at the permit timeout", func(t *testing.T) {
		ch := chaperon("slow", "1")
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			return ch.Annotations[mcv1alpha1.AnnotationIsReserved] == "true"
		})
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, unreserved)
		pod, err := cs.CoreV1().Pods("default").Get(ctx, "slow", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "" {
			t.Errorf("a candidate never allowed bound to %s", pod.Spec.NodeName)
		}
		// kube-scheduler says so in PodScheduled=False, Unschedulable, and
		// the agent mirrors it: the manager must read that message as a
		// wait that timed out, not as a verdict that it does not fit.
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			for _, cond := range ch.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse {
					return true
				}
			}
			return false
		})
		for _, cond := range ch.Status.Conditions {
			if cond.Type == corev1.PodScheduled && (cond.Reason != corev1.PodReasonUnschedulable || !mcv1alpha1.PermitTimedOut(cond.Message)) {
				t.Errorf("PodScheduled=False %s %q after the permit timeout: not read as a wait that timed out (PermitTimedOut)", cond.Reason, cond.Message)
			}
		}
	})

	// A mark that no running scheduler holds: one a scheduler wrote
	// before it stopped while the candidate waited at Permit (kube-
	// scheduler runs no Unreserve then; a second run in one process is
	// not possible, so the mark is written as it would have left it).
	// Before, nothing cleared it: the manager committed on a reservation
	// no scheduler held, and the pod stayed Pending in a committed cluster.
	t.Run("a reservation no scheduler holds is cleared once the candidate fits nowhere", func(t *testing.T) {
		ch := chaperon("orphaned-mark", "64")
		ch.Annotations = map[string]string{mcv1alpha1.AnnotationIsReserved: "true"}
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, c, ch, &mcv1alpha1.PodChaperonList{}, timeout, unreserved)
	})
	// Before, the mark was written by name: a write that waited (rate
	// limit, retries) while its chaperon was deleted and made again landed
	// on the new one, and the manager counted a reservation nobody held.
	t.Run("a reservation mark meant for a chaperon deleted since never lands on one of its name made again", func(t *testing.T) {
		mc := metadata.NewForConfigOrDie(cfg)
		// No scheduler takes these pods: only the marks written here
		// touch the chaperons.
		made := func() *mcv1alpha1.PodChaperon {
			t.Helper()
			ch := chaperon("again", "1")
			ch.Spec.SchedulerName = "nobody"
			if err := c.Create(ctx, ch); err != nil {
				t.Fatal(err)
			}
			return ch
		}
		podOf := func(ch *mcv1alpha1.PodChaperon) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ch.Namespace, Name: ch.Name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: mcv1alpha1.GroupVersion.String(), Kind: "PodChaperon", Name: ch.Name, UID: ch.UID, Controller: new(true)}}}}
		}
		old := made()
		if err := c.Delete(ctx, old); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, c, old, &mcv1alpha1.PodChaperonList{}, timeout)
		fresh := made()
		t.Cleanup(func() { _ = c.Delete(context.Background(), fresh) })
		if retry := candidate.MarkReserved(ctx, mc, podOf(old), true); retry {
			t.Error("the mark for a chaperon made again is retried, want it dropped")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(fresh), fresh); err != nil {
			t.Fatal(err)
		}
		if v, ok := fresh.Annotations[mcv1alpha1.AnnotationIsReserved]; ok {
			t.Errorf("is-reserved=%q on the chaperon made again, from a mark meant for the one deleted", v)
		}
		// Its own pod's mark lands.
		if retry := candidate.MarkReserved(ctx, mc, podOf(fresh), true); retry {
			t.Error("its own mark is to be retried")
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(fresh), fresh); err != nil {
			t.Fatal(err)
		}
		if fresh.Annotations[mcv1alpha1.AnnotationIsReserved] != "true" {
			t.Errorf("annotations %v: its own mark did not land", fresh.Annotations)
		}
	})
}
