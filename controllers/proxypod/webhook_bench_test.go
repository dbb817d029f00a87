package proxypod

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// BenchmarkWebhook is the webhook's own work per source pod (decode, the
// namespace read, the proxy pod, the template's validation, the clusters
// that would admit it, the patch), with the clusters of a fleet of that
// size in a fake reader: what a pod create waits for beside the network
// and the CPU the manager gets.
func BenchmarkWebhook(b *testing.B) {
	for _, clusters := range []int{3, 100} {
		b.Run(fmt.Sprintf("clusters=%d", clusters), func(b *testing.B) {
			scheme := apis.NewScheme()
			objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}}}}
			for i := range clusters {
				// Another tenant's clusters first: the one that serves is the last.
				ns := "platform"
				if i == clusters-1 {
					ns = "team"
				}
				objs = append(objs, &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("c%d", i)}})
			}
			m := &Mutator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), Decoder: admission.NewDecoder(scheme)}
			raw, err := json.Marshal(sourcePod(nil))
			if err != nil {
				b.Fatal(err)
			}
			req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Namespace: "team", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}}
			b.ReportAllocs()
			for b.Loop() {
				if r := m.Handle(context.Background(), req); !r.Allowed || len(r.Patches) == 0 {
					b.Fatalf("not mutated: %+v", r.Result)
				}
			}
		})
	}
}
