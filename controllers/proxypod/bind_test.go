package proxypod

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// TestBind: the binding names the cluster's virtual node and annotates
// the pod with its cluster. A pod the API server finds bound already (the
// cache behind the pod, a pass before this one bound it) is not an error,
// which would put the pod on the queue's backoff and hold its status
// back: its newer copy's event brings the next pass. Any other failure
// is an error.
func TestBind(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-1", UID: "u1"}}
	key := types.NamespacedName{Namespace: "default", Name: "member-1"}
	already := kerrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, pod.Name, errors.New(`pod web-1 is already assigned to node "placer.default.member-1"`))
	unavailable := kerrors.NewServiceUnavailable("etcd is down")
	cases := map[string]struct {
		answer    error
		wantBound bool
		wantErr   bool
	}{
		"bound":                       {wantBound: true},
		"already bound, cache behind": {answer: already},
		"the API server fails":        {answer: unavailable, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got *corev1.Binding
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				SubResourceCreate: func(_ context.Context, _ client.Client, sub string, o client.Object, sr client.Object, _ ...client.SubResourceCreateOption) error {
					if sub != "binding" || o.GetName() != pod.Name {
						t.Errorf("created %s of %s, want the pod's binding", sub, o.GetName())
					}
					got = sr.(*corev1.Binding)
					return tc.answer
				},
			}).Build()
			bound, err := bind(context.Background(), c, pod, key)
			if bound != tc.wantBound || (err != nil) != tc.wantErr {
				t.Fatalf("bind() = %t, %v; want bound %t, error %t", bound, err, tc.wantBound, tc.wantErr)
			}
			if got == nil || got.Target.Name != v1alpha1.VirtualNodeName(key) || got.UID != pod.UID || got.Annotations[v1alpha1.AnnotationRunsIn] != key.String() {
				t.Errorf("binding %+v, want node %s, the pod's UID and its cluster annotated", got, v1alpha1.VirtualNodeName(key))
			}
		})
	}
}
