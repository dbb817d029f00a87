package config_test

import (
	"context"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestShareMarksPolicy applies config/management as deployed: anyone but
// the manager's ServiceAccount is refused, naming the field, a Workload
// created with a share's marks or updated to carry or change them; the
// manager sets and takes them; other annotations are anyone's. The same
// for the proxy-pod label of the Workloads the manager makes for proxy
// pods.
func TestShareMarksPolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := testenv.Start(t)
	if err := deploy.ApplyDir(ctx, env.Config, "management"); err != nil {
		t.Fatal(err)
	}
	marked := func(name, key string) *v1alpha1.Workload {
		w := st.Workload(name, func(w *v1alpha1.Workload) { w.Annotations = map[string]string{key: v1alpha1.ReasonTainted} })
		w.UID, w.Generation = "", 0
		return w
	}
	// refusedMark reports whether err is the policy's refusal, naming the
	// field.
	refusedMark := func(err error) bool {
		return kerrors.IsForbidden(err) && err != nil &&
			strings.Contains(err.Error(), "metadata.annotations: compute.placer.dev/commit-held and compute.placer.dev/leaving are placer-manager's marks")
	}
	// The policy takes effect a moment after it is created: until the
	// refusal comes, what was let through is taken back and tried again.
	forged := marked("forged", v1alpha1.AnnotationShareLeaving)
	refused := untilRefused(t, func() error { return env.Client.Create(ctx, forged.DeepCopy()) }, func() {
		if err := env.Client.Delete(ctx, forged.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	})
	if !refusedMark(refused) {
		t.Fatalf("a Workload created with compute.placer.dev/leaving: %v, want a refusal naming the field", refused)
	}
	if err := env.Client.Create(ctx, marked("held", v1alpha1.AnnotationCommitHeld)); !refusedMark(err) {
		t.Errorf("a Workload created with compute.placer.dev/commit-held: %v, want the policy's refusal", err)
	}
	// Another annotation is anyone's.
	plain := marked("plain", "example.com/owner")
	if err := env.Client.Create(ctx, plain); err != nil {
		t.Fatalf("a Workload with an annotation of the user's own: %v", err)
	}
	manager, err := client.New(env.UserConfig(t, "system:serviceaccount:"+deploy.Namespace+":placer-manager"), client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	annotate := func(c client.Client, key, value string) error {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(plain), w); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(w.Annotations, key)
		} else {
			w.Annotations[key] = value
		}
		return c.Update(ctx, w)
	}
	if err := annotate(env.Client, v1alpha1.AnnotationCommitHeld, "true"); !refusedMark(err) {
		t.Errorf("an update adding compute.placer.dev/commit-held: %v, want the policy's refusal", err)
	}
	if err := annotate(manager, v1alpha1.AnnotationCommitHeld, "true"); err != nil {
		t.Fatalf("the manager holding a share: %v", err)
	}
	if err := annotate(env.Client, v1alpha1.AnnotationCommitHeld, ""); !refusedMark(err) {
		t.Errorf("an update taking compute.placer.dev/commit-held away: %v, want the policy's refusal", err)
	}
	if err := annotate(env.Client, "example.com/owner", "someone else"); err != nil {
		t.Errorf("a user changing its own annotation beside the manager's mark: %v", err)
	}
	if err := annotate(manager, v1alpha1.AnnotationCommitHeld, ""); err != nil {
		t.Errorf("the manager letting a share go: %v", err)
	}

	// The proxy-pod label: a tenant's Workload carrying it would be taken
	// for an orphaned proxy pod's, and go with no pod.
	labelled := func(name string) *v1alpha1.Workload {
		w := st.Workload(name, st.WLabels(v1alpha1.LabelProxyPod, "uid-1"))
		w.UID, w.Generation = "", 0
		return w
	}
	refusedLabel := func(err error) bool {
		return kerrors.IsForbidden(err) && strings.Contains(err.Error(), "metadata.labels: compute.placer.dev/proxy-pod is placer-manager's mark")
	}
	if err := env.Client.Create(ctx, labelled("tenants")); !refusedLabel(err) {
		t.Errorf("a Workload created with compute.placer.dev/proxy-pod: %v, want the policy's refusal naming the field", err)
	}
	proxys := labelled("proxys")
	if err := manager.Create(ctx, proxys); err != nil {
		t.Fatalf("the manager making a proxy pod's Workload: %v", err)
	}
	relabel := func(c client.Client, value string) error {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(proxys), w); err != nil {
			t.Fatal(err)
		}
		w.Labels[v1alpha1.LabelProxyPod] = value
		return c.Update(ctx, w)
	}
	if err := relabel(env.Client, "uid-2"); !refusedLabel(err) {
		t.Errorf("an update changing compute.placer.dev/proxy-pod: %v, want the policy's refusal", err)
	}
	// Another change of a proxy pod's Workload is anyone's who may (the
	// garbage collector taking the pod's reference off, say).
	if err := relabel(env.Client, "uid-1"); err != nil {
		t.Errorf("an update keeping compute.placer.dev/proxy-pod: %v", err)
	}
}
