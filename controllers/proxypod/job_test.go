package proxypod

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// TestJobReplacingOnceFailedStopsFirst: the pod of a Job that makes a
// replacement only once a pod has failed (podReplacementPolicy Failed,
// or a podFailurePolicy, which implies it) never has two pods of one
// index running, so its proxy pod moves StopBeforeStart; other Jobs'
// pods move make-before-break, as Kubernetes replaces a Job's pod that
// is terminating. Before, every Job's pod moved make-before-break.
func TestJobReplacingOnceFailedStopsFirst(t *testing.T) {
	failureRules := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}}}}
	cases := map[string]struct {
		job  func(*batchv1.Job)
		want v1alpha1.MovePolicy
	}{
		"podReplacementPolicy Failed": {func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }, v1alpha1.MoveStopBeforeStart},
		"a podFailurePolicy":          {func(j *batchv1.Job) { j.Spec.PodFailurePolicy = failureRules }, v1alpha1.MoveStopBeforeStart},
		"podReplacementPolicy TerminatingOrFailed": {func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}, v1alpha1.MoveStartBeforeStop},
		"another Job of that name (another UID)": {func(j *batchv1.Job) {
			j.UID, j.Spec.PodReplacementPolicy = "other", ptr.To(batchv1.Failed)
		}, v1alpha1.MoveStartBeforeStop},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			proxy, _, errs := Mutate(sourcePod(nil, func(p *corev1.Pod) {
				p.Name, p.Spec.RestartPolicy = "train-0", corev1.RestartPolicyNever
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "j1", Controller: ptr.To(true)}}
			}))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "train", UID: "j1"}}
			tc.job(job)
			opened := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}}}
			c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(opened, proxy, job).WithStatusSubresource(&corev1.Pod{}).Build()
			p := &Proxies{Client: c, Members: noMembers{}, Record: event.NewNopRecorder()}
			key := types.NamespacedName{Namespace: "team", Name: "train-0"}
			if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			w := &v1alpha1.Workload{}
			if err := c.Get(ctx, client.ObjectKey(key), w); err != nil {
				t.Fatal(err)
			}
			if w.Spec.Placement.Move != tc.want {
				t.Errorf("the Job's pod moves %s, want %s", w.Spec.Placement.Move, tc.want)
			}
		})
	}
}
