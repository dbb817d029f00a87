package propagator

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestHandshakeStarts: one handshake per Workload is timed, for its
// cluster and its UID (a Workload of the same name made again is another).
func TestHandshakeStarts(t *testing.T) {
	var h handshakeStarts
	w := st.Workload("web")
	a, b := types.NamespacedName{Namespace: "default", Name: "a"}, types.NamespacedName{Namespace: "default", Name: "b"}
	if _, ok := h.started(w, a); ok {
		t.Fatal("a handshake never started is known")
	}
	h.start(w, a)
	if _, ok := h.started(w, a); !ok {
		t.Fatal("the handshake in a is not known")
	}
	if _, ok := h.started(w, b); ok {
		t.Error("a handshake in a counts for b")
	}
	again := w.DeepCopy()
	again.UID = "another"
	if _, ok := h.started(again, a); ok {
		t.Error("a Workload made again under the same name inherits the last one's handshake")
	}
	h.start(w, b)
	if _, ok := h.started(w, a); ok {
		t.Error("the handshake in a is still known after one started in b")
	}
	h.forget(w, a)
	if _, ok := h.started(w, b); !ok {
		t.Error("forgetting a forgot the handshake in b")
	}
	h.forgetWorkload(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	if _, ok := h.started(w, b); ok {
		t.Error("a Workload gone keeps its handshake")
	}
}
