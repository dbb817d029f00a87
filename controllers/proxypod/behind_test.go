package proxypod

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// TestCacheBehind: a pass that finds the cache still holding the copy of
// a proxy pod from which a pass changed it (here, its PodScheduled
// condition: its Workload fits nowhere) writes nothing, and is no error:
// the change's own event brings the next pass. Before, such a pass wrote
// again from the old copy, and met a conflict (an error, on the queue's
// backoff). A copy changed by someone else since is handled as ever.
func TestCacheBehind(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "apps", Name: "web-1"}
	pod := proxyPod(key, "p1")
	w := workloadOfPod(key, pod.UID)
	w.Generation = 1
	w.Status.SetConditions(v1alpha1.NotScheduled(v1alpha1.ReasonUnschedulable, "0/3 clusters fit", 1))
	// The cache: the copy it holds is the one stale points at, when set.
	var stale *corev1.Pod
	writes := 0
	// noop: the API server takes the next status write and changes
	// nothing (the same resourceVersion back).
	noop := false
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(pod, w).WithStatusSubresource(pod, w).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
				if p, ok := o.(*corev1.Pod); ok && stale != nil {
					stale.DeepCopyInto(p)
					return nil
				}
				return c.Get(ctx, k, o, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
				writes++
				if noop {
					noop = false
					return nil
				}
				return c.SubResource(sub).Update(ctx, o, opts...)
			},
		}).Build()
	p := &Proxies{Client: c, Record: event.NewNopRecorder()}
	pass := func() {
		t.Helper()
		if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	before := &corev1.Pod{}
	if err := c.Get(ctx, key, before); err != nil {
		t.Fatal(err)
	}
	pass()
	if writes != 1 {
		t.Fatalf("%d status writes by the first pass, want 1 (PodScheduled False)", writes)
	}
	// Another pass (the Workload changed, a chaperon) before the cache has
	// the pod's new copy.
	stale = before
	pass()
	if writes != 1 {
		t.Errorf("%d status writes, want none more from the copy the first pass changed", writes)
	}
	// Someone else changed the pod since (a label): the pass works from
	// that copy, which already says why; nothing to write.
	stale = nil
	now := &corev1.Pod{}
	if err := c.Get(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	if _, c := podutil.GetPodConditionFromList(now.Status.Conditions, corev1.PodScheduled); c == nil || c.Status != corev1.ConditionFalse {
		t.Fatalf("the pod's PodScheduled is %+v, want False", c)
	}
	now.Labels = map[string]string{"tier": "web"}
	if err := c.Update(ctx, now); err != nil {
		t.Fatal(err)
	}
	// Its condition is dropped by a writer of its own: the next pass,
	// from a copy no pass changed, says it again.
	now.Status.Conditions = nil
	if err := c.Status().Update(ctx, now); err != nil {
		t.Fatal(err)
	}
	writes = 0
	pass()
	if writes != 1 {
		t.Errorf("%d status writes from a copy changed by someone else, want 1", writes)
	}
	// A write that changed nothing brings no event: the next pass from
	// the same copy is not held back.
	if err := c.Get(ctx, key, now); err != nil {
		t.Fatal(err)
	}
	now.Status.Conditions = nil
	if err := c.Status().Update(ctx, now); err != nil {
		t.Fatal(err)
	}
	noop, writes = true, 0
	pass()
	stale = now.DeepCopy()
	pass()
	if writes != 2 {
		t.Errorf("%d status writes, want 2: the pass after a write that changed nothing writes again", writes)
	}
}

// TestProxyWorkloadEvents: a proxy pod's pass is brought by every event
// of its Workload, and by another Workload's deletion only (it may have
// held the pod's name); not by another Workload's creates and status
// changes, which before were each a pass finding no pod of that name.
func TestProxyWorkloadEvents(t *testing.T) {
	proxy := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-1", Labels: map[string]string{v1alpha1.LabelProxyPod: "p1"}}}
	other := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web"}}
	// Its label taken off: still the pod's, by its controller.
	unlabelled := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-2",
		OwnerReferences: []metav1.OwnerReference{OwnerOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-2", UID: "p2"}})}}}
	for _, c := range []struct {
		what string
		got  bool
		want bool
	}{
		{"a proxy pod's Workload created", proxyWorkloadEvents.Create(ctrlevent.CreateEvent{Object: proxy}), true},
		{"a proxy pod's Workload changed", proxyWorkloadEvents.Update(ctrlevent.UpdateEvent{ObjectOld: proxy, ObjectNew: proxy}), true},
		{"a proxy pod's Workload deleted", proxyWorkloadEvents.Delete(ctrlevent.DeleteEvent{Object: proxy}), true},
		{"another Workload created", proxyWorkloadEvents.Create(ctrlevent.CreateEvent{Object: other}), false},
		{"another Workload changed", proxyWorkloadEvents.Update(ctrlevent.UpdateEvent{ObjectOld: other, ObjectNew: other}), false},
		{"another Workload deleted", proxyWorkloadEvents.Delete(ctrlevent.DeleteEvent{Object: other}), true},
		{"a pod's Workload without the label changed", proxyWorkloadEvents.Update(ctrlevent.UpdateEvent{ObjectOld: unlabelled, ObjectNew: unlabelled}), true},
	} {
		if c.got != c.want {
			t.Errorf("%s: a pass %t, want %t", c.what, c.got, c.want)
		}
	}
}

// proxyPod is a proxy pod (its source saved, placer's scheduler) named key.
func proxyPod(key types.NamespacedName, uid types.UID) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: key.Namespace, Name: key.Name, UID: uid,
		Annotations: map[string]string{v1alpha1.AnnotationSourcePodManifest: "{}"},
	}, Spec: corev1.PodSpec{SchedulerName: v1alpha1.ProxySchedulerName}}
}

// workloadOfPod is the Workload named key of the proxy pod uid: labelled
// and controlled as the controller makes it.
func workloadOfPod(key types.NamespacedName, uid types.UID) *v1alpha1.Workload {
	return &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{
		Namespace: key.Namespace, Name: key.Name, UID: "w1",
		Labels:          map[string]string{v1alpha1.LabelProxyPod: string(uid)},
		OwnerReferences: []metav1.OwnerReference{OwnerOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: key.Name, UID: uid}})},
	}}
}
