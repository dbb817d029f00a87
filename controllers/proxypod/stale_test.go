package proxypod

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// namespaces returns a cache that holds the namespace team as it was a
// moment ago (not labelled yet) and the API server's copy, opened.
func namespaces(objs ...client.Object) (cached, live client.Client) {
	closed := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	opened := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}}}
	cached = fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(append([]client.Object{closed}, objs...)...).WithStatusSubresource(&corev1.Pod{}).Build()
	live = fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(opened).Build()
	return cached, live
}

// TestWebhookReadsANewLabelLive: a source pod created a moment after its
// namespace was labelled, whose replica's cache does not show the label
// yet (the API server's namespaceSelector already did), is made a proxy
// pod. Before, it was let through unmutated, and the management
// cluster's own scheduler ran it on one of its nodes.
func TestWebhookReadsANewLabelLive(t *testing.T) {
	cached, live := namespaces(&v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a"}})
	m := &Mutator{Reader: cached, Live: live, Decoder: admission.NewDecoder(apis.NewScheme())}
	p := sourcePod(nil)
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Namespace: p.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
	if !r.Allowed || len(r.Patches) == 0 {
		t.Errorf("allowed %t with %d patches (%v): want the source pod made a proxy pod", r.Allowed, len(r.Patches), r.Result)
	}
}

// TestControllerReadsANewLabelLive: a proxy pod whose controller's cache
// does not show its namespace's new label gets its Workload. Before, it
// got nothing (no Workload, no condition, no retry) until the resync,
// hours later. And one whose namespace was closed since is told so.
func TestControllerReadsANewLabelLive(t *testing.T) {
	ctx := context.Background()
	proxy, _, errs := Mutate(sourcePod(nil, func(p *corev1.Pod) { p.Name = "web-1" }))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	key := types.NamespacedName{Namespace: proxy.Namespace, Name: proxy.Name}
	for name, opened := range map[string]bool{"opened a moment ago: placed": true, "closed since: told so": false} {
		t.Run(name, func(t *testing.T) {
			cached, live := namespaces(proxy.DeepCopy())
			if !opened {
				live = cached
			}
			p := &Proxies{Client: cached, Live: live, Members: noMembers{}, Record: event.NewNopRecorder()}
			if _, err := p.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			werr := cached.Get(ctx, key, &v1alpha1.Workload{})
			pod := &corev1.Pod{}
			if err := cached.Get(ctx, key, pod); err != nil {
				t.Fatal(err)
			}
			var reason string
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled {
					reason = c.Reason
				}
			}
			switch {
			case opened && werr != nil:
				t.Errorf("no Workload (%v): the proxy pod waits for the resync", werr)
			case !opened && (werr == nil || reason != reasonNamespaceClosed):
				t.Errorf("Workload: %v; PodScheduled reason %q, want none and %s", werr, reason, reasonNamespaceClosed)
			}
		})
	}
}
