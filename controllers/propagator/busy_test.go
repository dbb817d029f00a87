package propagator

import (
	"context"
	"errors"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/clustertest"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestBusyMemberWaitsForASlot: a member with every request slot taken
// (cluster.BusyError: the request is not sent) is not an error of the
// pass, which would put the Workload on the queue's backoff, shared by
// every failing Workload and growing with a burst. The Workload comes
// back as soon as the member has a slot free (and a minute later in any
// case, a net should a slot never free).
func TestBusyMemberWaitsForASlot(t *testing.T) {
	ctx := context.Background()
	w := st.Workload("web", st.Replicas(1), st.PlacedOn("a"), withFinalizer)
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	slots := cluster.NewSlots(1)
	if !slots.Take() { // another Workload's request to a is in flight
		t.Fatal("a free slot could not be taken")
	}
	busy := true
	a := clustertest.NewMember("a", clustertest.WithInterceptor(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
			if _, ok := o.(*mcv1alpha1.PodChaperon); ok && busy {
				return slots.Busy()
			}
			return c.Create(ctx, o, opts...)
		},
	}))
	mgmt := fake.NewClientBuilder().WithScheme(apis.NewScheme()).
		WithObjects(w, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, st.Cluster("a", st.InNamespace(a.Key.Namespace))).
		WithStatusSubresource(&v1alpha1.Workload{}).Build()
	r := NewReconciler(mgmt, clustertest.Members{a}, timeout, &recorder{}, logging.NewNopLogger())
	var woken []types.NamespacedName
	r.wake = func(k types.NamespacedName) { woken = append(woken, k) }

	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
	if err != nil {
		t.Fatalf("Reconcile with member a busy: %v, want no error (the Workload waits for a slot, not on a backoff)", err)
	}
	if res.RequeueAfter != busyRecheck {
		t.Errorf("Reconcile with member a busy = %+v, want a look again after %s should no wake come", res, busyRecheck)
	}
	// Another event brings it back while it waits: it still waits for
	// one wake, not two.
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if len(woken) != 0 {
		t.Errorf("woken %v while the member's one slot is still taken", woken)
	}
	if n := count(t, a, w, nil); n != 0 {
		t.Fatalf("%d candidates in a, want none yet", n)
	}

	// The request in flight ends: the Workload comes back, once.
	slots.Give()
	if len(woken) != 1 || woken[0] != key {
		t.Fatalf("woken %v once the slot is free, want [%s]", woken, key)
	}
	busy = false
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatalf("Reconcile with a slot free: %v", err)
	}
	if n := count(t, a, w, nil); n != 1 {
		t.Errorf("%d candidates in a once it had a slot, want 1", n)
	}

	// Without a way back to the queue, the pass fails as before, and
	// is retried on the backoff.
	busy, r.wake = true, nil
	w2 := st.Workload("api", st.Replicas(1), st.PlacedOn("a"), withFinalizer)
	if err := mgmt.Create(ctx, w2); err != nil {
		t.Fatal(err)
	}
	if !slots.Take() {
		t.Fatal("a free slot could not be taken")
	}
	var busyErr *cluster.BusyError
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w2.Namespace, Name: w2.Name}}); !errors.As(err, &busyErr) {
		t.Errorf("Reconcile with no wake: %v, want the member's busy error", err)
	}
}
