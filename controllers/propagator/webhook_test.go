package propagator

import (
	"context"
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestFinalizerWebhook: a new Workload that does not spread gets the
// finalizer, after any it has; one that spreads, one that has it, and an
// update are let through as they are.
func TestFinalizerWebhook(t *testing.T) {
	req := func(op admissionv1.Operation, w *v1alpha1.Workload) admission.Request {
		raw, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Object: runtime.RawExtension{Raw: raw}}}
	}
	divided := func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided}
	}
	duplicated := func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDuplicated}
	}
	withFinalizers := func(f ...string) st.WorkloadOption { return func(w *v1alpha1.Workload) { w.Finalizers = f } }
	cases := map[string]struct {
		op    admissionv1.Operation
		w     *v1alpha1.Workload
		patch string // the patch as JSON; "" none
	}{
		"new":                    {admissionv1.Create, st.Workload("w", withFinalizers()), `[{"op":"add","path":"/metadata/finalizers","value":["compute.placer.dev/propagator"]}]`},
		"new, another finalizer": {admissionv1.Create, st.Workload("w", withFinalizers("x.io/keep")), `[{"op":"add","path":"/metadata/finalizers/-","value":"compute.placer.dev/propagator"}]`},
		"new, has it":            {admissionv1.Create, st.Workload("w", withFinalizers(finalizer)), ""},
		"new, Divided":           {admissionv1.Create, st.Workload("w", withFinalizers(), divided), ""},
		"new, Duplicated":        {admissionv1.Create, st.Workload("w", withFinalizers(), duplicated), ""},
		"an update":              {admissionv1.Update, st.Workload("w", withFinalizers()), ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			resp := Finalizer{}.Handle(context.Background(), req(c.op, c.w))
			if !resp.Allowed {
				t.Fatalf("refused: %v", resp.Result)
			}
			got := ""
			if len(resp.Patches) > 0 {
				b, err := json.Marshal(resp.Patches)
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != c.patch {
				t.Errorf("patch %s, want %s", got, c.patch)
			}
		})
	}
	// What it cannot read it lets through as it is: the API server
	// validates, and the propagator's patch adds the finalizer.
	if resp := (Finalizer{}).Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte("{")}}}); !resp.Allowed || len(resp.Patches) > 0 {
		t.Errorf("an object that cannot be read: allowed %t, patches %v; want let through untouched", resp.Allowed, resp.Patches)
	}
}
