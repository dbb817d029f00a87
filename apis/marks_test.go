package apis_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/internal/testenv"
)

// TestMarksNameTheirChaperon: a chaperon's mark (MarkPatch), as every
// writer sends it (the propagator's is-allowed, give-up and replace-lost,
// the agent's is-allowed and fenced, the candidate plugin's is-reserved),
// lands on the chaperon of its UID only: a real API server refuses it on a
// chaperon of that name made since (MarkRefused), which then carries no
// mark decided on the one before; and an empty value takes a mark off.
func TestMarksNameTheirChaperon(t *testing.T) {
	ctx := context.Background()
	env := testenv.Start(t)
	c := env.Client
	chaperon := func() *mcv1alpha1.PodChaperon {
		ch := &mcv1alpha1.PodChaperon{
			ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "default"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		}
		if err := c.Create(ctx, ch); err != nil {
			t.Fatal(err)
		}
		return ch
	}
	mark := func(ch *mcv1alpha1.PodChaperon, uid types.UID, annotation, value string) error {
		return c.Patch(ctx, ch.DeepCopy(), client.RawPatch(types.MergePatchType, mcv1alpha1.MarkPatch(uid, annotation, value)))
	}
	annotations := func(ch *mcv1alpha1.PodChaperon) map[string]string {
		got := &mcv1alpha1.PodChaperon{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ch), got); err != nil {
			t.Fatal(err)
		}
		return got.Annotations
	}

	first := chaperon()
	if err := mark(first, first.UID, mcv1alpha1.AnnotationFenced, mcv1alpha1.FencedWindow); err != nil {
		t.Fatalf("a mark on its own chaperon: %v", err)
	}
	if got := annotations(first)[mcv1alpha1.AnnotationFenced]; got != mcv1alpha1.FencedWindow {
		t.Errorf("fenced = %q, want %q", got, mcv1alpha1.FencedWindow)
	}
	if err := mark(first, first.UID, mcv1alpha1.AnnotationFenced, ""); err != nil {
		t.Fatal(err)
	}
	if _, ok := annotations(first)[mcv1alpha1.AnnotationFenced]; ok {
		t.Error("an empty value left the mark on")
	}

	// Deleted and made again under its name: a mark meant for the first
	// one is refused, as one on a chaperon gone is.
	if err := c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := mark(first, first.UID, mcv1alpha1.AnnotationIsAllowed, "true"); !mcv1alpha1.MarkRefused(err) {
		t.Errorf("a mark on a chaperon gone: %v, want it refused", err)
	}
	second := chaperon()
	for _, a := range []string{mcv1alpha1.AnnotationIsAllowed, mcv1alpha1.AnnotationFenced, mcv1alpha1.AnnotationGiveUp, mcv1alpha1.AnnotationIsReserved} {
		if err := mark(second, first.UID, a, "true"); !mcv1alpha1.MarkRefused(err) {
			t.Errorf("%s meant for the chaperon before: %v, want it refused", a, err)
		}
	}
	if got := annotations(second); len(got) != 0 {
		t.Errorf("the chaperon made again carries %v, decided on the one before", got)
	}
}
