// Package fleetwait waits with watches, never by polling: for one object
// (or a namespace's objects) to reach a state, and for registered member
// clusters to be Ready — for the tests, the sandbox and the benchmark.
package fleetwait

import (
	"context"
	"reflect"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// ListWatch lists and watches the one object named like obj, or every
// object of obj's namespace when obj has no name, for watchtools.UntilWithSync.
func ListWatch(ctx context.Context, c client.WithWatch, obj client.Object, list client.ObjectList) *cache.ListWatch {
	sel := client.MatchingFields{}
	if obj.GetName() != "" {
		sel["metadata.name"] = obj.GetName()
	}
	ns := client.InNamespace(obj.GetNamespace())
	return &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, ns, sel)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return c.Watch(ctx, l, ns, sel, &client.ListOptions{Raw: &o})
		},
	}
}

// ClustersReady watches the KubernetesClusters of a namespace until each
// one named in want is Ready and reports want[name] ready nodes.
func ClustersReady(ctx context.Context, c client.WithWatch, namespace string, want map[string]int32) error {
	ready := map[string]bool{}
	err := Each(ctx, c, &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace}}, &v1alpha1.KubernetesClusterList{},
		func(kc *v1alpha1.KubernetesCluster, deleted bool) {
			if n, ok := want[kc.Name]; ok {
				ready[kc.Name] = !deleted && kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && kc.Status.ReadyNodeCount == n
			}
		},
		func() bool {
			count := 0
			for _, r := range ready {
				if r {
					count++
				}
			}
			return count == len(want)
		})
	return errors.Wrap(err, "not every member cluster became Ready with all its nodes")
}

// Each lists and watches the objects ListWatch selects, hands each one
// (first every listed one, then each event's) to seen, and returns once
// done says so, or ctx ends.
func Each[T client.Object](ctx context.Context, c client.WithWatch, obj T, list client.ObjectList, seen func(o T, deleted bool), done func() bool) error {
	_, err := watchtools.UntilWithSync(ctx, ListWatch(ctx, c, obj, list), obj, func(s cache.Store) (bool, error) {
		for _, o := range s.List() {
			if t, ok := o.(T); ok {
				seen(t, false)
			}
		}
		return done(), nil
	}, func(e watch.Event) (bool, error) {
		if t, ok := e.Object.(T); ok {
			seen(t, e.Type == watch.Deleted)
		}
		return done(), nil
	})
	return err
}

// Until watches the object named like obj until cond holds for it, and
// leaves the last seen state in obj.
func Until[T client.Object](ctx context.Context, c client.WithWatch, obj T, list client.ObjectList, cond func(T) bool) error {
	_, err := watchtools.UntilWithSync(ctx, ListWatch(ctx, c, obj, list), obj, nil, func(e watch.Event) (bool, error) {
		o, ok := e.Object.(T)
		if !ok || e.Type == watch.Deleted {
			return false, nil
		}
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o).Elem())
		return cond(o), nil
	})
	return err
}

// Gone watches until none of the objects ListWatch selects is left: the
// one named like obj, or every object of obj's namespace.
func Gone[T client.Object](ctx context.Context, c client.WithWatch, obj T, list client.ObjectList) error {
	left := map[types.NamespacedName]bool{}
	return Each(ctx, c, obj, list,
		func(o T, deleted bool) {
			if deleted {
				delete(left, client.ObjectKeyFromObject(o))
			} else {
				left[client.ObjectKeyFromObject(o)] = true
			}
		},
		func() bool { return len(left) == 0 })
}
