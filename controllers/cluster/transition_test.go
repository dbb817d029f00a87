package cluster

import (
	"context"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/eventtest"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestReadySinceItsTransition: a Ready condition whose status and reason
// stay, its message changing (a Secret not found, then forbidden; a Ready
// member's new node count), keeps the time it turned so, as Kubernetes'
// conditions do: the Secret's grace (secretGrace) and a move back's wait
// for a Ready cluster count from then. Before, every new message started
// them again. Unreachable is the exception: its time is its last
// failure's, with which the health check finds its watches stale.
func TestReadySinceItsTransition(t *testing.T) {
	then := metav1.NewTime(time.Now().Add(-50 * time.Second).Truncate(time.Second))
	for name, tc := range map[string]struct {
		was, now xpv2.Condition
		keep     bool
	}{
		"SecretNotFound, another message": {notReadyCondition(v1alpha1.ReasonSecretNotFound, "Secret default/a-kubeconfig not found"),
			notReadyCondition(v1alpha1.ReasonSecretNotFound, "Secret default/a-kubeconfig: forbidden"), true},
		"Unreachable, another error": {notReadyCondition(v1alpha1.ReasonUnreachable, "the cluster does not answer: connection refused"),
			notReadyCondition(v1alpha1.ReasonUnreachable, "the cluster does not answer: i/o timeout"), false},
		"Ready, another node count": {xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady, Message: "v1.35.4 answers; 3 of 3 nodes ready"},
			xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReady, Message: "v1.35.4 answers; 3 of 4 nodes ready", LastTransitionTime: metav1.Now()}, true},
		"another reason": {notReadyCondition(v1alpha1.ReasonSecretNotFound, "Secret default/a-kubeconfig not found"),
			notReadyCondition(v1alpha1.ReasonUnreachable, "the cluster does not answer: i/o timeout"), false},
	} {
		t.Run(name, func(t *testing.T) {
			tc.was.LastTransitionTime = then
			kc := st.Cluster("a", func(kc *v1alpha1.KubernetesCluster) { kc.Status.SetConditions(tc.was) })
			c := indexedClient([]client.Object{kc}, kc)
			r := &Reconciler{client: c, record: &eventtest.Recorder{}}
			got := &v1alpha1.KubernetesCluster{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(kc), got); err != nil {
				t.Fatal(err)
			}
			if err := r.publish(context.Background(), got, tc.now, nil); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(kc), got); err != nil {
				t.Fatal(err)
			}
			rc := got.Status.GetCondition(xpv2.TypeReady)
			if rc.Message != tc.now.Message {
				t.Fatalf("Ready says %q, want %q", rc.Message, tc.now.Message)
			}
			if kept := rc.LastTransitionTime.Equal(&then); kept != tc.keep {
				t.Errorf("Ready since %v (kept the time it turned so: %t), want kept %t", rc.LastTransitionTime, kept, tc.keep)
			}
		})
	}
}
