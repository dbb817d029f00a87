package agent

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// remadeOnFirstPatch is a chaperon store in which the chaperon is deleted
// and made again under its name (a new UID) just before the agent's first
// patch of it lands. It refuses a merge patch naming another UID, as a
// real API server does (apis TestMarksNameTheirChaperon shows it); the
// fake client alone would take the patch's UID.
func remadeOnFirstPatch(t *testing.T, objs ...client.Object) client.Client {
	remade := false
	return fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithStatusSubresource(&mcv1alpha1.PodChaperon{}).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			ch, ok := o.(*mcv1alpha1.PodChaperon)
			if !ok {
				return c.Patch(ctx, o, p, opts...)
			}
			if !remade {
				remade = true
				again := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: ch.Namespace, Name: ch.Name}, Spec: ch.Spec}
				if err := c.Delete(ctx, ch.DeepCopy()); err != nil {
					t.Fatal(err)
				}
				if err := c.Create(ctx, again); err != nil {
					t.Fatal(err)
				}
			}
			data, err := p.Data(o)
			if err != nil {
				return err
			}
			var patch struct {
				Metadata struct {
					UID types.UID `json:"uid"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(data, &patch); err != nil {
				return err
			}
			stored := &mcv1alpha1.PodChaperon{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(ch), stored); err != nil {
				return err
			}
			if patch.Metadata.UID != "" && patch.Metadata.UID != stored.UID {
				return kerrors.NewInvalid(mcv1alpha1.GroupVersion.WithKind("PodChaperon").GroupKind(), ch.Name,
					field.ErrorList{field.Invalid(field.NewPath("metadata", "uid"), patch.Metadata.UID, "field is immutable")})
			}
			return c.Patch(ctx, o, p, opts...)
		},
	}).Build()
}

// windowedChaperon is a gang of one's candidate whose bind window ended a
// minute ago.
func windowedChaperon() *mcv1alpha1.PodChaperon {
	return &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "first",
		CreationTimestamp: metav1.NewTime(time.Now().Add(-2 * time.Minute)),
		Annotations:       map[string]string{mcv1alpha1.AnnotationAllowWhenReserved: "true", mcv1alpha1.AnnotationBindWindow: "1m0s"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}}}
}

// scheduledAt is a PodScheduled condition the member's API server stamped
// at the binding, that long after the chaperon's creation.
func scheduledAt(ch *mcv1alpha1.PodChaperon, after time.Duration) []corev1.PodCondition {
	return []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(ch.CreationTimestamp.Add(after))}}
}

func reconcileChaperon(t *testing.T, c client.Client) *mcv1alpha1.PodChaperon {
	t.Helper()
	r := &ChaperonReconciler{client: c, reader: c, record: event.NewNopRecorder(), log: logging.NewNopLogger(), boundAt: map[types.UID]time.Time{}, now: time.Now}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "web-0"}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := &mcv1alpha1.PodChaperon{}
	if err := c.Get(context.Background(), req.NamespacedName, got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFenceMarksItsOwnChaperon: the agent's fenced mark, decided on the
// chaperon it read, never lands on one of that name made since (which
// the manager would read as fenced, and reject its cluster for). Before,
// the mark was a patch by name.
func TestFenceMarksItsOwnChaperon(t *testing.T) {
	got := reconcileChaperon(t, remadeOnFirstPatch(t, windowedChaperon()))
	if got.UID == "first" {
		t.Fatal("the chaperon was not made again: the case proves nothing")
	}
	if why := got.Annotations[mcv1alpha1.AnnotationFenced]; why != "" {
		t.Errorf("the chaperon made again is marked fenced (%s), decided on the one before", why)
	}
}

// TestSelfAllowMarksItsOwnChaperon: the agent's own is-allowed, for a
// candidate that bound inside its window before it replaces its lost pod,
// never lands on a chaperon of that name made since: that one would bind
// with no hold and no window. Before, the mark was a patch by name.
func TestSelfAllowMarksItsOwnChaperon(t *testing.T) {
	ch := windowedChaperon()
	// Its status says it bound inside its window; its pod is gone.
	ch.Status.Conditions = scheduledAt(ch, 30*time.Second)
	got := reconcileChaperon(t, remadeOnFirstPatch(t, ch))
	if got.UID == "first" {
		t.Fatal("the chaperon was not made again: the case proves nothing")
	}
	if got.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true" {
		t.Error("the chaperon made again is marked is-allowed, decided on the one before")
	}
}

// TestBoundButNeverMirroredIsReplaced: a gang of one's candidate whose pod
// bound inside its window and was refused by its kubelet (Failed,
// OutOfcpu) before the agent mirrored the binding is marked is-allowed
// from the pod itself and replaced, never fenced (its cluster was
// committed). Before, its status never said it bound, and its window
// being over, it was fenced: the cluster rejected, the Workload placed
// again elsewhere.
func TestBoundButNeverMirroredIsReplaced(t *testing.T) {
	for _, tc := range []struct {
		name string
		// boundAfter: when the pod bound, after the chaperon's creation
		// (its window is a minute).
		boundAfter time.Duration
		allowed    bool
	}{
		{name: "bound inside its window: allowed, replaced", boundAfter: 30 * time.Second, allowed: true},
		// A NoReservation pod the member's own kube-scheduler bound while
		// the agent was stopped past the window: no commit.
		{name: "bound after its window: not allowed on its word, fenced", boundAfter: 90 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := windowedChaperon()
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default", UID: "pod"},
				Spec:   corev1.PodSpec{NodeName: "node-0", Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
				Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "OutOfcpu", Conditions: scheduledAt(ch, tc.boundAfter)}}
			if err := controllerutil.SetControllerReference(ch, pod, apis.NewScheme()); err != nil {
				t.Fatal(err)
			}
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(ch, pod).WithStatusSubresource(&mcv1alpha1.PodChaperon{}).Build()
			var got *mcv1alpha1.PodChaperon
			for range 3 {
				got = reconcileChaperon(t, c)
			}
			why, allowed := got.Annotations[mcv1alpha1.AnnotationFenced], got.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true"
			if allowed != tc.allowed || (why == "") != tc.allowed {
				t.Errorf("fenced %q, is-allowed %t: want allowed %t, fenced %t", why, allowed, tc.allowed, !tc.allowed)
			}
			again := &corev1.Pod{}
			err := c.Get(context.Background(), client.ObjectKeyFromObject(pod), again)
			if tc.allowed && (err != nil || again.UID == pod.UID) {
				t.Errorf("the lost pod is not replaced: %v (uid %s)", err, again.UID)
			}
		})
	}
}
