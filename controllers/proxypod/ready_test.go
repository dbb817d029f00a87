package proxypod

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/clustertest"
)

// readyStatus is a running pod's status, Ready.
func readyStatus() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
	}}
}

// TestStaleReady: a bound proxy pod is not Ready while nothing says that
// its delegate runs. Before, it kept the Ready of its last delegate: when
// that one was replaced (evicted, lost) and the replacement did not bind,
// and for as long as its cluster did not answer (the member's last word,
// in placer's watch, is all placer has), so that a Deployment, a
// PodDisruptionBudget and a Service's endpoints counted a replica that
// does not run. While its cluster's chaperons are not listed yet (the
// manager just started) nothing is known, and nothing changes.
func TestStaleReady(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "apps", Name: "web-1"}
	cases := []struct {
		name    string
		members cluster.Members
		silent  bool
		// want: Ready's status and reason after the pass.
		want   corev1.ConditionStatus
		reason string
	}{
		{name: "its cluster's chaperons listed, no delegate bound there: not Ready", members: clustertest.Members{clustertest.NewMember("member-1")},
			want: corev1.ConditionFalse, reason: reasonDelegateNotBound},
		{name: "its cluster does not answer: not Ready", members: noMembers{}, silent: true, want: corev1.ConditionFalse, reason: v1alpha1.ReasonClusterUnreachable},
		{name: "its cluster's chaperons not listed yet (the manager just started): the status stays", members: noMembers{}, want: corev1.ConditionTrue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := proxyPod(key, "p1")
			pod.Spec.NodeName = v1alpha1.VirtualNodeName(types.NamespacedName{Namespace: "default", Name: "member-1"})
			pod.Status = readyStatus()
			w := workloadOfPod(key, pod.UID)
			w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "default", Name: "member-1"}
			if tc.silent {
				w.Status.SetConditions(v1alpha1.ReadyUnknownOn("default/member-1", 1))
			}
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(pod, w).WithStatusSubresource(pod, w).Build()
			p := &Proxies{Client: c, Members: tc.members, Record: event.NewNopRecorder()}
			if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			got := &corev1.Pod{}
			if err := c.Get(ctx, key, got); err != nil {
				t.Fatal(err)
			}
			for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
				if _, cond := podutil.GetPodCondition(&got.Status, ct); cond == nil || cond.Status != tc.want || cond.Reason != tc.reason {
					t.Errorf("%s = %+v, want %s (%q)", ct, cond, tc.want, tc.reason)
				}
			}
			if got.Status.Phase != corev1.PodRunning || got.Spec.NodeName != pod.Spec.NodeName {
				t.Errorf("phase %s on %q: the rest of the status, and the binding, stay", got.Status.Phase, got.Spec.NodeName)
			}
			// A second pass writes nothing more.
			rv := got.ResourceVersion
			if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, key, got); err != nil || got.ResourceVersion != rv {
				t.Errorf("a second pass wrote again (resourceVersion %s, was %s; %v)", got.ResourceVersion, rv, err)
			}
		})
	}
}

// TestStatusOf: the delegate's status, but not Ready while its cluster
// does not answer.
func TestStatusOf(t *testing.T) {
	delegate := &mcv1alpha1.PodChaperon{Status: readyStatus()}
	pod := proxyPod(types.NamespacedName{Namespace: "apps", Name: "web-1"}, "p1")
	cases := []struct {
		name  string
		ready xpv2.Condition
		want  corev1.ConditionStatus
	}{
		{"its Workload Ready: the delegate's Ready", v1alpha1.Available("1 of 1 replicas ready in a", 1), corev1.ConditionTrue},
		{"its Workload not Ready for its replicas: the delegate's Ready, which says why", v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 1 replicas ready in a", 1), corev1.ConditionTrue},
		{"its cluster does not answer: not Ready, whatever the member said last", v1alpha1.ReadyUnknownOn("default/a", 1), corev1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := workloadOfPod(types.NamespacedName{Namespace: "apps", Name: "web-1"}, pod.UID)
			w.Status.SetConditions(tc.ready)
			s := statusOf(delegate, pod, w)
			for _, ct := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
				if _, c := podutil.GetPodCondition(&s, ct); c == nil || c.Status != tc.want {
					t.Errorf("%s = %+v, want %s", ct, c, tc.want)
				}
			}
			// The pod showing it, a later pass finds the same status: no
			// write (a review found each pass stamped a new transition
			// time, a write per pass for as long as the cluster was
			// silent).
			shown := pod.DeepCopy()
			shown.Status = s
			if again := statusOf(delegate, shown, w); !equality.Semantic.DeepEqual(again, s) {
				t.Errorf("a later pass changes the status it showed:\n%+v\nwas\n%+v", again.Conditions, s.Conditions)
			}
			if _, c := podutil.GetPodCondition(&delegate.Status, corev1.PodReady); c.Status != corev1.ConditionTrue {
				t.Error("the delegate's own status was changed")
			}
		})
	}
}
