package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/internal/fleetwait"
)

// WaitFor watches the object named like obj until cond holds for it, and
// leaves the last seen state in obj; with a nameless obj, until cond holds
// for any object of obj's namespace. It fails the test after timeout,
// printing the last state seen.
func WaitFor[T client.Object](t testing.TB, wc client.WithWatch, obj T, list client.ObjectList, timeout time.Duration, cond func(T) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := fleetwait.Until(ctx, wc, obj, list, cond); err != nil {
		t.Fatalf("%s %s/%s did not reach the expected state within %s: %v\nlast seen: %s", kindOf(obj), obj.GetNamespace(), obj.GetName(), timeout, err, describe(obj))
	}
}

// WaitForDeletion watches until the object is gone.
func WaitForDeletion[T client.Object](t testing.TB, wc client.WithWatch, obj T, list client.ObjectList, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := fleetwait.Gone(ctx, wc, obj, list)
	if err != nil {
		t.Fatalf("%s %s/%s was not deleted within %s: %v", kindOf(obj), obj.GetNamespace(), obj.GetName(), timeout, err)
	}
}

func kindOf(o runtime.Object) string { return fmt.Sprintf("%T", o) }

func describe(o any) string {
	b, err := yaml.Marshal(o)
	if err != nil {
		return fmt.Sprint(o)
	}
	return string(b)
}
