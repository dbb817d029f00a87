package propagator

import (
	"context"
	"encoding/json"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// FinalizerPath is where the manager serves the Workload webhook.
const FinalizerPath = "/mutate-workload"

// Finalizer adds the propagator's finalizer to a Workload in the request
// that creates it, so that placing a Workload costs no write of its own
// for it (config/management/webhook.yaml). The guarantee is the same as
// the finalizer the propagator adds itself before a Workload's first
// candidate (ensureFinalizer), which stays for a Workload created while
// no manager answered (the webhook's failurePolicy is Ignore): nothing of
// a deleted Workload is left in any member.
//
// A user's create passes it. The manager's own creates (a share the
// divider makes, a proxy pod's Workload) carry the finalizer already, so
// the webhook's matchConditions spare them the call. A Divided or
// Duplicated Workload gets none: its shares, each a Workload of its own,
// hold what is sent for it.
type Finalizer struct{}

var _ admission.Handler = Finalizer{}

// Handle adds the finalizer to a new Workload that does not spread and
// lacks it, and lets every other request through untouched.
func (Finalizer) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	w := &v1alpha1.Workload{}
	if err := json.Unmarshal(req.Object.Raw, w); err != nil {
		// Never a create refused here: the API server validates the
		// Workload, and the propagator's patch adds the finalizer.
		return admission.Allowed("not read: " + err.Error())
	}
	if w.Spreads() || meta.FinalizerExists(w, finalizer) {
		return admission.Allowed("")
	}
	if len(w.Finalizers) == 0 {
		return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/finalizers", []string{finalizer}))
	}
	return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/finalizers/-", finalizer))
}
