// Package fleetwait waits, with a watch, for registered member clusters to
// be Ready — for the sandbox and the benchmark.
package fleetwait

import (
	"context"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// ClustersReady watches the KubernetesClusters of a namespace until each
// one named in want is Ready and reports want[name] ready nodes.
func ClustersReady(ctx context.Context, c client.WithWatch, namespace string, want map[string]int32) error {
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			l := &v1alpha1.KubernetesClusterList{}
			return l, c.List(ctx, l, client.InNamespace(namespace))
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, &v1alpha1.KubernetesClusterList{}, client.InNamespace(namespace), &client.ListOptions{Raw: &o})
		},
	}
	ready := map[string]bool{}
	observe := func(kc *v1alpha1.KubernetesCluster, deleted bool) bool {
		if n, ok := want[kc.Name]; ok {
			ready[kc.Name] = !deleted && kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && kc.Status.ReadyNodeCount == n
		}
		count := 0
		for _, r := range ready {
			if r {
				count++
			}
		}
		return count == len(want)
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &v1alpha1.KubernetesCluster{}, func(s cache.Store) (bool, error) {
		done := false
		for _, o := range s.List() {
			done = observe(o.(*v1alpha1.KubernetesCluster), false)
		}
		return done, nil
	}, func(e watch.Event) (bool, error) {
		kc, ok := e.Object.(*v1alpha1.KubernetesCluster)
		return ok && observe(kc, e.Type == watch.Deleted), nil
	})
	return errors.Wrap(err, "not every member cluster became Ready with all its nodes")
}
