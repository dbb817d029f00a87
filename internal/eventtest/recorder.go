// Package eventtest records the Events a controller emits, for unit tests.
package eventtest

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"k8s.io/apimachinery/pkg/runtime"
)

// Recorder keeps the Events recorded through it.
type Recorder struct{ Events []event.Event }

// Event records e.
func (r *Recorder) Event(_ runtime.Object, e event.Event) { r.Events = append(r.Events, e) }

// WithAnnotations returns r: annotations are not kept.
func (r *Recorder) WithAnnotations(...string) event.Recorder { return r }

// Reasons are the recorded Events' reasons, in order.
func (r *Recorder) Reasons() (out []string) {
	for _, e := range r.Events {
		out = append(out, string(e.Reason))
	}
	return out
}
