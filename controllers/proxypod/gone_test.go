package proxypod

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
)

// TestPodGone: the Workload of a proxy pod that is gone already (force-
// deleted: a pod being deleted stays until its Workload has gone) is
// marked so before its deletion, and nothing waits for its delegate to
// stop (the propagator's stopsFirst); that of a pod being deleted is not,
// and its delegate stops before the pod goes; also when the pod was
// deleted --cascade=orphan (its delegate is what runs for it).
func TestPodGone(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	workloadOf := func(uid types.UID) *v1alpha1.Workload {
		w := workloadOfPod(key, uid)
		// The propagator's: the Workload stays, being deleted.
		w.Finalizers = []string{v1alpha1.FinalizerPropagator}
		// Chosen: its delegate may run there, the pod not bound yet.
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "default", Name: "a"}
		return w
	}
	deleting := proxyPod(key, "p1")
	// A finalizer of the test's keeps it, being deleted.
	deleting.Finalizers, deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = []string{"test/keep"}, &metav1.Time{Time: metav1.Now().Time}, new(int64)
	// kubectl delete pod --cascade=orphan: the garbage collector took the
	// pod's reference off its Workload, whose label still names the pod.
	orphaned := workloadOf("p1")
	orphaned.OwnerReferences = nil
	// Its manifest annotation taken off after admission (the webhook sees
	// creates only): still a pod of placer's proxy scheduler, whose
	// schedulerName no one can change. Before, the pass took it for no
	// proxy pod: it stayed Terminating, its delegate running.
	unannotated := deleting.DeepCopy()
	delete(unannotated.Annotations, v1alpha1.AnnotationSourcePodManifest)
	cases := map[string]struct {
		objs     []client.Object
		wantGone bool
	}{
		"the pod is gone":                                             {objs: []client.Object{workloadOf("p1")}, wantGone: true},
		"the pod is being deleted":                                    {objs: []client.Object{workloadOf("p1"), deleting}},
		"the pod is being deleted, its Workload orphaned":             {objs: []client.Object{orphaned, deleting}},
		"the pod is gone, its Workload orphaned":                      {objs: []client.Object{orphaned.DeepCopy()}, wantGone: true},
		"the pod is being deleted, its manifest annotation taken off": {objs: []client.Object{workloadOf("p1"), unannotated}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := workloadAfterPass(t, key, tc.objs...)
			if w.DeletionTimestamp == nil {
				t.Error("the Workload is not being deleted")
			}
			if gone := w.Annotations[v1alpha1.AnnotationProxyPodGone] == "true"; gone != tc.wantGone {
				t.Errorf("marked gone: %t, want %t", gone, tc.wantGone)
			}
		})
	}
}

// TestLabelledShareKept: a Workload another Workload controls (a share,
// with its parent's labels) is never taken for an orphaned proxy pod's by
// its proxy-pod label.
func TestLabelledShareKept(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	share := workloadOfPod(key, "p1")
	isController := true
	share.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Name: "db", UID: "parent", Controller: &isController}}
	w := workloadAfterPass(t, key, share)
	if w.DeletionTimestamp != nil || w.Annotations[v1alpha1.AnnotationProxyPodGone] != "" {
		t.Errorf("a share with a proxy-pod label is deleted (%v) or marked gone (%q) as an orphaned proxy pod's Workload", w.DeletionTimestamp, w.Annotations[v1alpha1.AnnotationProxyPodGone])
	}
}

// workloadAfterPass runs one pass of the proxy pods' controller on objs
// for key, and returns the Workload of that name as it leaves it.
func workloadAfterPass(t *testing.T, key types.NamespacedName, objs ...client.Object) *v1alpha1.Workload {
	t.Helper()
	w := &v1alpha1.Workload{}
	afterPass(t, key, w, objs...)
	return w
}

// afterPass runs one pass of the proxy pods' controller on objs for key,
// and reads into got the object of that name as it leaves it.
func afterPass(t *testing.T, key types.NamespacedName, got client.Object, objs ...client.Object) {
	t.Helper()
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithStatusSubresource(&corev1.Pod{}).Build()
	p := &Proxies{Client: c, Members: clustertest.Members{}, Record: event.NewNopRecorder()}
	if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
}

// TestNotAProxyLeftAlone: a pod of placer's proxy scheduler that was never
// a proxy pod (no manifest, no Workload: let through untouched, say, and
// bound by hand to a real node) is not ended by placer when it is
// deleted: its kubelet does that.
func TestNotAProxyLeftAlone(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	pod := proxyPod(key, "p1")
	delete(pod.Annotations, v1alpha1.AnnotationSourcePodManifest)
	pod.Spec.NodeName = "node-1"
	pod.Status.Phase = corev1.PodRunning
	pod.Finalizers, pod.DeletionTimestamp = []string{"test/keep"}, &metav1.Time{Time: metav1.Now().Time}
	got := &corev1.Pod{}
	afterPass(t, key, got, pod)
	if got.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running: placer ended a pod it never placed", got.Status.Phase)
	}
}

// TestGraceOfAnUnboundPod: the API server deletes an unbound pod with a
// grace period of 0 whatever was asked, so that 0 says nothing of the
// user's wish: the delegate (which may have bound meanwhile) is deleted
// with its own. Before, that 0 was passed on, and the delegate killed at
// once. A bound proxy pod's 0 is a force delete, passed on as ever.
func TestGraceOfAnUnboundPod(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	for name, tc := range map[string]struct {
		node      string
		wantGrace bool
	}{
		"unbound: the delegate's own grace period": {},
		"bound, force-deleted: passed on":          {node: "placer.default.a", wantGrace: true},
	} {
		t.Run(name, func(t *testing.T) {
			pod := proxyPod(key, "p1")
			pod.Spec.NodeName, pod.Spec.TerminationGracePeriodSeconds = tc.node, ptr.To[int64](30)
			// A Job's tracking finalizer keeps it, being deleted.
			pod.Finalizers, pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = []string{"batch.kubernetes.io/job-tracking"}, &metav1.Time{Time: metav1.Now().Time}, new(int64)
			w := workloadOfPod(key, "p1")
			w.Finalizers = []string{v1alpha1.FinalizerPropagator}
			got := workloadAfterPass(t, key, w, pod)
			if got.DeletionTimestamp == nil {
				t.Error("the Workload is not being deleted")
			}
			if _, ok := mcv1alpha1.DeletionGrace(got); ok != tc.wantGrace {
				t.Errorf("deletion grace passed to the Workload: %t, want %t (annotations %v)", ok, tc.wantGrace, got.Annotations)
			}
		})
	}
}

// endedDelegate is a Job's proxy pod being deleted (its Job's finalizer
// keeps it), bound and Running as last seen, whose delegate has since
// succeeded in member-1, in a management API whose calls go through
// funcs; and the proxy pods' controller over them.
func endedDelegate(funcs interceptor.Funcs) (client.Client, *Proxies, *corev1.Pod, *v1alpha1.Workload) {
	key := types.NamespacedName{Namespace: "apps", Name: "job-1"}
	cluster := types.NamespacedName{Namespace: "default", Name: "member-1"}
	pod := proxyPod(key, "p1")
	pod.Spec.NodeName = v1alpha1.VirtualNodeName(cluster)
	pod.Status = readyStatus()
	pod.Finalizers = []string{"batch.kubernetes.io/job-tracking"}
	pod.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	w := workloadOfPod(key, pod.UID)
	w.Finalizers = []string{v1alpha1.FinalizerPropagator}
	w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: cluster.Namespace, Name: cluster.Name}
	ch := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "job-1-x", Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}}
	members := clustertest.Members{clustertest.NewMember(cluster.Name, clustertest.WithObjects(ch))}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(pod, w).WithStatusSubresource(pod).WithInterceptorFuncs(funcs).Build()
	return c, &Proxies{Client: c, Members: members, Record: event.NewNopRecorder()}, pod, w
}

// TestDeletedAfterItsDelegateEnded: a proxy pod deleted after its
// delegate succeeded (a Job's, whose status the pod did not show yet)
// ends Succeeded, as its delegate did, not Failed "Deleted": its Job
// counts a completion; and keeps that end once its Workload is gone.
// Before, it ended Failed whatever its delegate did.
func TestDeletedAfterItsDelegateEnded(t *testing.T) {
	ctx := context.Background()
	c, p, pod, w := endedDelegate(interceptor.Funcs{})
	key := client.ObjectKeyFromObject(pod)
	if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase %s (%s), want Succeeded as its delegate", got.Status.Phase, got.Status.Reason)
	}
	// Its Workload gone (the propagator's finalizer done), the pass that
	// lets the pod go keeps that end.
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	w.Finalizers = nil
	if err := c.Update(ctx, w); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), w); !kerrors.IsNotFound(err) {
		t.Fatalf("the Workload is still there (%v): the case proves nothing", err)
	}
	if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("its Workload gone: phase %s (%s), want Succeeded", got.Status.Phase, got.Status.Reason)
	}
}

// TestDeletedAfterItsDelegateEndedConflict: the pod's end meets a
// conflict (the cache behind the pod): its Workload stays, for the next
// pass to write that end first. Before, the Workload went on, its
// delegate's chaperon was deleted, and the pod ended Failed "Deleted".
func TestDeletedAfterItsDelegateEndedConflict(t *testing.T) {
	ctx := context.Background()
	c, p, pod, w := endedDelegate(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
		return kerrors.NewConflict(corev1.Resource("pods"), o.GetName(), errors.New("the object has been modified"))
	}})
	if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pod)}); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp != nil {
		t.Error("the Workload is being deleted while the pod's end is not written: its delegate's end would be lost")
	}
}

// TestFinalizerHolds: a proxy pod being deleted, held by placer's
// finalizer, goes only once its Workload has (its delegate stopped), also
// when unbound, which the API server deletes with no grace period whatever
// was asked (its delegate may have bound meanwhile): its Workload is not
// marked gone. A bound pod force-deleted waits for nothing: its Workload
// marked gone (also when being deleted already), the pod let go in the
// same pass; so does an unbound one of whose Workload nothing can run (no
// cluster named, no chaperon in any member).
func TestFinalizerHolds(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	for name, tc := range map[string]struct {
		node string
		// unchosen: its Workload has no chosen cluster (no delegate can
		// run for an unbound pod).
		unchosen bool
		// deleting: its Workload is being deleted already (the pod was
		// deleted before, and waits for its delegate to stop).
		deleting bool
		// left: its Workload left cluster a (unchosen since), whose old
		// copy may still serve there; candidateInA: a's watch shows a
		// chaperon of it.
		left, candidateInA bool
		grace              int64
		wantGone           bool
	}{
		// Before, both waited for nothing: the delegate may run on in a.
		"unbound, its Workload with no chosen cluster, having left one":               {unchosen: true, left: true},
		"unbound, its Workload with no chosen cluster, a candidate of it in a member": {unchosen: true, candidateInA: true},
		// Before, a Workload being deleted already was never marked: the
		// propagator went on waiting for a delegate that does not stop
		// (its member's node lost), --force or not.
		"bound, force-deleted after a deletion that waits":                     {node: "placer.default.a", deleting: true, wantGone: true},
		"unbound (grace 0 from the API server), its Workload chosen a cluster": {},
		"unbound, its Workload with no chosen cluster: waits for nothing":      {unchosen: true, wantGone: true},
		"bound, deleted with a grace period":                                   {node: "placer.default.a", grace: 30},
		"bound, force-deleted":                                                 {node: "placer.default.a", wantGone: true},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			pod := proxyPod(key, "p1")
			pod.Spec.NodeName = tc.node
			pod.Finalizers, pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = []string{v1alpha1.FinalizerProxyPod}, &metav1.Time{Time: metav1.Now().Time}, ptr.To(tc.grace)
			w := workloadOfPod(key, "p1")
			w.Finalizers = []string{v1alpha1.FinalizerPropagator}
			if !tc.unchosen {
				w.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "default", Name: "a"}
			}
			if tc.deleting {
				w.DeletionTimestamp = &metav1.Time{Time: metav1.Now().Time}
			}
			if tc.left {
				w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Namespace: "default", Name: "a"}, Reason: v1alpha1.ReasonUnreachable}}
			}
			a := clustertest.NewMember("a")
			if tc.candidateInA {
				a = clustertest.NewMember("a", clustertest.WithObjects(&mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "db-1-x",
					Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}}}))
			}
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(pod, w).WithStatusSubresource(&corev1.Pod{}).Build()
			p := &Proxies{Client: c, Members: clustertest.Members{a}, Record: event.NewNopRecorder()}
			if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, key, w); err != nil || w.DeletionTimestamp == nil {
				t.Fatalf("the Workload is not being deleted (%v)", err)
			}
			if gone := w.Annotations[v1alpha1.AnnotationProxyPodGone] == "true"; gone != tc.wantGone {
				t.Errorf("marked gone: %t, want %t", gone, tc.wantGone)
			}
			err := c.Get(ctx, key, &corev1.Pod{})
			if tc.wantGone {
				if !kerrors.IsNotFound(err) {
					t.Errorf("the pod is still there (%v), want it let go at once", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("the pod went while its Workload (its delegate) is still there: %v", err)
			}
			// Its Workload gone (the propagator's finalizer done), the
			// next pass lets the pod go.
			w.Finalizers = nil
			if err := c.Update(ctx, w); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
			if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if err := c.Get(ctx, key, &corev1.Pod{}); !kerrors.IsNotFound(err) {
				t.Errorf("its Workload gone, the pod is still there (%v)", err)
			}
		})
	}
}

// TestFinalizerOfNoProxyReleased: a proxy pod whose manifest annotation
// was taken off, bound and deleted with a grace period, its Workload gone,
// is ended and let go as any proxy pod (placer's finalizer says it is
// one), not left Terminating for ever: Failed, its finalizer off, and
// deleted with no grace period, as a kubelet confirms it.
func TestFinalizerOfNoProxyReleased(t *testing.T) {
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	pod := proxyPod(key, "p1")
	delete(pod.Annotations, v1alpha1.AnnotationSourcePodManifest)
	pod.Spec.NodeName = "placer.default.a"
	// A finalizer of the test's keeps it for the test to read.
	pod.Finalizers, pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = []string{v1alpha1.FinalizerProxyPod, "test/keep"}, &metav1.Time{Time: metav1.Now().Time}, ptr.To[int64](30)
	var graceZero bool
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(pod).WithStatusSubresource(&corev1.Pod{}).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			graceZero = graceZero || do.GracePeriodSeconds != nil && *do.GracePeriodSeconds == 0
			return c.Delete(ctx, o, opts...)
		},
	}).Build()
	p := &Proxies{Client: c, Members: clustertest.Members{}, Record: event.NewNopRecorder()}
	if _, err := p.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Pod{}
	if err := c.Get(context.Background(), key, got); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Finalizers, []string{"test/keep"}) || got.Status.Phase != corev1.PodFailed || !graceZero {
		t.Errorf("finalizers %v, phase %s, deleted with no grace period %t; want placer's finalizer off, Failed, deleted with none", got.Finalizers, got.Status.Phase, graceZero)
	}
}

// TestGoneMarkOnTheCopyDecidedFrom: the mark that lets a pod go without
// waiting is written on the copy of its Workload the decision was made
// from: one changed since (the scheduler chose a cluster meanwhile) is a
// conflict, and the pod stays for the next pass to decide again. Before,
// the mark landed on the changed Workload: deleted without waiting for a
// delegate about to bind.
func TestGoneMarkOnTheCopyDecidedFrom(t *testing.T) {
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "apps", Name: "db-1"}
	pod := proxyPod(key, "p1")
	pod.Finalizers, pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = []string{v1alpha1.FinalizerProxyPod}, &metav1.Time{Time: metav1.Now().Time}, new(int64)
	w := workloadOfPod(key, "p1")
	w.Finalizers = []string{v1alpha1.FinalizerPropagator}
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(pod, w).WithStatusSubresource(&corev1.Pod{}, &v1alpha1.Workload{}).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if chosen, ok := o.(*v1alpha1.Workload); ok {
				// The scheduler's decision lands first.
				cur := &v1alpha1.Workload{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(chosen), cur); err != nil {
					return err
				}
				if cur.Status.ClusterRef == nil {
					cur.Status.ClusterRef = &v1alpha1.ClusterReference{Namespace: "default", Name: "a"}
					if err := c.Status().Update(ctx, cur); err != nil {
						return err
					}
				}
			}
			return c.Patch(ctx, o, patch, opts...)
		},
	}).Build()
	p := &Proxies{Client: c, Members: clustertest.Members{}, Record: event.NewNopRecorder()}
	if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.Workload{}
	if err := c.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations[v1alpha1.AnnotationProxyPodGone] == "true" || got.DeletionTimestamp != nil {
		t.Errorf("the Workload chosen a cluster meanwhile is marked gone (%t) or deleted (%v): nothing would wait for its delegate", got.Annotations[v1alpha1.AnnotationProxyPodGone] == "true", got.DeletionTimestamp)
	}
	if err := c.Get(ctx, key, &corev1.Pod{}); err != nil {
		t.Errorf("the pod went (%v), want it held for the next pass", err)
	}
}
