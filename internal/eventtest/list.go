package eventtest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Listed returns the Events of a namespace, as the API server keeps them,
// that match.
func Listed(t testing.TB, c client.Reader, namespace string, match func(*corev1.Event) bool) []corev1.Event {
	t.Helper()
	l := &corev1.EventList{}
	if err := c.List(context.Background(), l, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for i := range l.Items {
		if match(&l.Items[i]) {
			out = append(out, l.Items[i])
		}
	}
	return out
}
