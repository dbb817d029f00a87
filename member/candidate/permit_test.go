package candidate

import (
	"cmp"
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// TestPermit: what Permit lets bind, by the candidate's chaperon as the
// plugin's watch holds it and, for one allowed in advance that the watch
// has not seen, as the API server has it.
func TestPermit(t *testing.T) {
	const ns, name, uid = "apps", "web-1234-0", types.UID("chaperon-uid")
	chaperon := func(uid types.UID, annotations map[string]string, change ...func(*metav1.PartialObjectMetadata)) *metav1.PartialObjectMetadata {
		m := &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: mcv1alpha1.GroupVersion.String(), Kind: "PodChaperon"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, Annotations: annotations},
		}
		for _, c := range change {
			c(m)
		}
		return m
	}
	deleting := func(m *metav1.PartialObjectMetadata) { m.DeletionTimestamp = &metav1.Time{Time: time.Now()} }
	pod := func(unheld bool, deadline time.Time) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: mcv1alpha1.GroupVersion.String(), Kind: "PodChaperon", Name: name, UID: uid, Controller: new(true)}}}}
		if unheld {
			p.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] = "true"
		}
		if !deadline.IsZero() {
			p.Annotations[mcv1alpha1.AnnotationBindDeadline] = deadline.UTC().Format(time.RFC3339)
		}
		return p
	}
	later := time.Now().Add(time.Hour)
	allowed := map[string]string{mcv1alpha1.AnnotationIsAllowed: "true"}
	cases := []struct {
		name string
		pod  *corev1.Pod
		// watched is the chaperon the plugin's watch holds; stored, the
		// one the API server has (watched's when not set).
		watched, stored *metav1.PartialObjectMetadata
		// readFails: the API server does not answer.
		readFails bool
		want      fwk.Code
		reason    string
	}{
		{name: "allowed in advance, its chaperon watched: binds", pod: pod(true, later), watched: chaperon(uid, nil), want: fwk.Success},
		{name: "allowed in advance, its chaperon not watched yet but stored: binds", pod: pod(true, later), stored: chaperon(uid, nil), want: fwk.Success},
		{name: "allowed in advance, its chaperon gone: does not bind", pod: pod(true, later), want: fwk.UnschedulableAndUnresolvable, reason: ErrReasonChaperonGone},
		{name: "allowed in advance, its chaperon being deleted: does not bind", pod: pod(true, later), watched: chaperon(uid, nil, deleting), want: fwk.UnschedulableAndUnresolvable, reason: ErrReasonChaperonGone},
		{name: "allowed in advance, a chaperon of its name made again: does not bind", pod: pod(true, later), watched: chaperon("another", nil), want: fwk.UnschedulableAndUnresolvable, reason: ErrReasonChaperonGone},
		{name: "allowed in advance, its window passed: does not bind", pod: pod(true, time.Now().Add(-time.Second)), watched: chaperon(uid, nil), want: fwk.UnschedulableAndUnresolvable, reason: ErrReasonWindowPassed},
		{name: "allowed in advance, given up on: does not bind", pod: pod(true, later), watched: chaperon(uid, map[string]string{mcv1alpha1.AnnotationGiveUp: "true"}), want: fwk.UnschedulableAndUnresolvable, reason: ErrReasonGivenUp},
		{name: "allowed in advance, an older chaperon of its name still watched, its own stored: binds", pod: pod(true, later), watched: chaperon("another", nil), stored: chaperon(uid, nil), want: fwk.Success},
		{name: "allowed in advance, its own chaperon stored being deleted, an older one watched: does not bind", pod: pod(true, later), watched: chaperon("another", nil), stored: chaperon(uid, nil, deleting), want: fwk.UnschedulableAndUnresolvable, reason: ErrReasonChaperonGone},
		{name: "allowed in advance, not watched, the API server does not answer: an error (retried), no verdict", pod: pod(true, later), readFails: true, want: fwk.Error},
		{name: "held, its chaperon allowed but being deleted: waits", pod: pod(false, time.Time{}), watched: chaperon(uid, allowed, deleting), want: fwk.Wait},
		{name: "held, its chaperon allowed: binds", pod: pod(false, time.Time{}), watched: chaperon(uid, allowed), want: fwk.Success},
		{name: "held, a chaperon of its name made again and allowed: waits", pod: pod(false, time.Time{}), watched: chaperon("another", allowed), want: fwk.Wait},
		{name: "held, its chaperon not allowed: waits", pod: pod(false, time.Time{}), watched: chaperon(uid, nil), want: fwk.Wait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
			if tc.watched != nil {
				if err := indexer.Add(tc.watched); err != nil {
					t.Fatal(err)
				}
			}
			scheme := runtime.NewScheme()
			scheme.AddKnownTypeWithName(mcv1alpha1.GroupVersion.WithKind("PodChaperon"), &metav1.PartialObjectMetadata{})
			var objs []runtime.Object
			if stored := cmp.Or(tc.stored, tc.watched); stored != nil {
				objs = append(objs, stored.DeepCopy())
			}
			mc := metadatafake.NewSimpleMetadataClient(scheme, objs...)
			if tc.readFails {
				mc.PrependReactor("get", "podchaperons", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("connection refused")
				})
			}
			p := &Plugin{client: mc, lister: cache.NewGenericLister(indexer, chaperons.GroupResource()), timeout: time.Minute, now: time.Now, after: func(time.Duration, func()) {}}
			status, _ := p.Permit(context.Background(), nil, tc.pod, "node-0")
			if got := status.Code(); got != tc.want {
				t.Fatalf("Permit = %v (%s), want %v", got, status.Message(), tc.want)
			}
			if tc.reason != "" && status.Message() != tc.reason {
				t.Errorf("Permit says %q, want %q", status.Message(), tc.reason)
			}
		})
	}
}

// waiting is a framework handle's waiting pods: those added after Permit
// returned Wait, as kube-scheduler adds them.
type waiting struct {
	fwk.Handle
	pods map[types.UID]*waitingPod
}

func (w *waiting) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	if wp, ok := w.pods[uid]; ok {
		return wp
	}
	return nil
}

func (w *waiting) IterateOverWaitingPods(f func(fwk.WaitingPod)) {
	for _, wp := range w.pods {
		f(wp)
	}
}

type waitingPod struct {
	fwk.WaitingPod
	pod     *corev1.Pod
	allowed bool
}

func (wp *waitingPod) GetPod() *corev1.Pod { return wp.pod }
func (wp *waitingPod) Allow(string)        { wp.allowed = true }

// TestPermitLooksAgain: a held candidate's chaperon allowed after Permit
// read it and before kube-scheduler added the pod to its waiting pods
// (release then finds none to allow) is allowed by the plugin's one look
// a moment later (lookAgain). Before, the pod waited its whole Permit
// timeout (minutes), then was reserved again.
func TestPermitLooksAgain(t *testing.T) {
	const ns, name, uid = "apps", "web-1234-0", types.UID("chaperon-uid")
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	chaperon := &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: mcv1alpha1.GroupVersion.String(), Kind: "PodChaperon"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
	}
	if err := indexer.Add(chaperon); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: "pod-uid",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: mcv1alpha1.GroupVersion.String(), Kind: "PodChaperon", Name: name, UID: uid, Controller: new(true)}}}}
	h := &waiting{pods: map[types.UID]*waitingPod{}}
	var later []func()
	p := &Plugin{handle: h, lister: cache.NewGenericLister(indexer, chaperons.GroupResource()), timeout: time.Minute, now: time.Now,
		after: func(_ time.Duration, f func()) { later = append(later, f) }}
	if status, _ := p.Permit(context.Background(), nil, pod, "node-0"); status.Code() != fwk.Wait {
		t.Fatalf("Permit = %v, want Wait", status.Code())
	}
	// Allowed now: the watch's event finds no pod waiting yet.
	allowed := chaperon.DeepCopy()
	allowed.Annotations = map[string]string{mcv1alpha1.AnnotationIsAllowed: "true"}
	if err := indexer.Update(allowed); err != nil {
		t.Fatal(err)
	}
	p.release(allowed)
	// Then kube-scheduler adds the pod to its waiting pods.
	wp := &waitingPod{pod: pod}
	h.pods[pod.UID] = wp
	for _, f := range later {
		f()
	}
	if !wp.allowed {
		t.Error("the pod waits for its Permit timeout, its chaperon allowed")
	}
}
