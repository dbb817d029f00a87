package shared

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Sources is where a controller reads management objects it watches one
// by one: ObjectWatches in the manager, a map in unit tests.
type Sources interface {
	Use(user types.NamespacedName, keys []ObjectKey)
	Forget(user types.NamespacedName)
	Get(k ObjectKey) (obj *unstructured.Unstructured, synced bool, err error)
}

// CoreKey names a core (v1) object.
func CoreKey(kind, namespace, name string) ObjectKey {
	return ObjectKey{GVK: corev1.SchemeGroupVersion.WithKind(kind), Namespace: namespace, Name: name}
}

// GetTyped returns k from the sources as a typed object (into, which it
// fills): found is false when it does not exist.
func GetTyped(src Sources, k ObjectKey, into runtime.Object) (found, synced bool, err error) {
	u, synced, err := src.Get(k)
	if u == nil {
		return false, synced, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), into); err != nil {
		return false, true, errors.Wrapf(err, "cannot decode %s", k)
	}
	return true, true, nil
}
