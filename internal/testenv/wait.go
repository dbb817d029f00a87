package testenv

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// WaitFor watches the object named like obj until cond holds for it, and
// leaves the last seen state in obj; with a nameless obj, until cond holds
// for any object of obj's namespace. It fails the test after timeout,
// printing the last state seen.
func WaitFor[T client.Object](t testing.TB, wc client.WithWatch, obj T, list client.ObjectList, timeout time.Duration, cond func(T) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	lw := listWatchOne(ctx, wc, obj, list)
	var last T
	seen := false
	_, err := watchtools.UntilWithSync(ctx, lw, obj, nil, func(e watch.Event) (bool, error) {
		o, ok := e.Object.(T)
		if !ok || e.Type == watch.Deleted {
			return false, nil
		}
		last, seen = o, true
		return cond(o), nil
	})
	if seen {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(last).Elem())
	}
	if err != nil {
		t.Fatalf("%s %s/%s did not reach the expected state within %s: %v\nlast seen: %s", kindOf(obj), obj.GetNamespace(), obj.GetName(), timeout, err, describe(last))
	}
}

// WaitForDeletion watches until the object is gone.
func WaitForDeletion[T client.Object](t testing.TB, wc client.WithWatch, obj T, list client.ObjectList, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	lw := listWatchOne(ctx, wc, obj, list)
	_, err := watchtools.UntilWithSync(ctx, lw, obj, func(s cache.Store) (bool, error) {
		return len(s.List()) == 0, nil
	}, func(e watch.Event) (bool, error) {
		return e.Type == watch.Deleted, nil
	})
	if err != nil {
		t.Fatalf("%s %s/%s was not deleted within %s: %v", kindOf(obj), obj.GetNamespace(), obj.GetName(), timeout, err)
	}
}

// listWatchOne lists and watches the one object named like obj; every
// object of obj's namespace when obj has no name.
func listWatchOne(ctx context.Context, wc client.WithWatch, obj client.Object, list client.ObjectList) *cache.ListWatch {
	sel := client.MatchingFields{}
	if obj.GetName() != "" {
		sel["metadata.name"] = obj.GetName()
	}
	ns := client.InNamespace(obj.GetNamespace())
	return &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			err := wc.List(ctx, l, ns, sel)
			return l, err
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return wc.Watch(ctx, l, ns, sel, &client.ListOptions{Raw: &o})
		},
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
