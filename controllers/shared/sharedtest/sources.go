// Package sharedtest has in-memory stand-ins for controllers/shared, for
// the controllers' unit tests.
package sharedtest

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/controllers/shared"
)

var _ shared.Sources = &Sources{}

// Sources are management objects in memory, served as single-object
// watches serve them once listed (shared.ObjectWatches): only what a user
// uses has listed.
type Sources struct {
	Objs map[shared.ObjectKey]*unstructured.Unstructured
	// Unsynced keys are watches that have not listed yet.
	Unsynced map[shared.ObjectKey]bool
	Used     map[types.NamespacedName][]shared.ObjectKey
	// Dropped counts the keys a user stopped using while still needing
	// them: a real watch would stop and start again, and list anew.
	Dropped int
}

// NewSources holds objs; a typed object without a kind is a core one of
// its Go type's name.
func NewSources(objs ...client.Object) *Sources {
	s := &Sources{Objs: map[shared.ObjectKey]*unstructured.Unstructured{}, Unsynced: map[shared.ObjectKey]bool{}, Used: map[types.NamespacedName][]shared.ObjectKey{}}
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			panic(err)
		}
		gvk := o.GetObjectKind().GroupVersionKind()
		if gvk.Empty() {
			gvk = corev1.SchemeGroupVersion.WithKind(reflect.TypeOf(o).Elem().Name())
		}
		s.Objs[shared.ObjectKey{GVK: gvk, Namespace: o.GetNamespace(), Name: o.GetName()}] = &unstructured.Unstructured{Object: u}
	}
	return s
}

// Use sets the keys user reads, counting those it dropped.
func (s *Sources) Use(user types.NamespacedName, keys []shared.ObjectKey) {
	for _, k := range s.Used[user] {
		if !slices.Contains(keys, k) {
			s.Dropped++
		}
	}
	s.Used[user] = keys
}

// Forget lets go of everything user reads.
func (s *Sources) Forget(user types.NamespacedName) { delete(s.Used, user) }

// Get returns k once a user uses it and it has listed.
func (s *Sources) Get(k shared.ObjectKey) (*unstructured.Unstructured, bool, error) {
	used := false
	for _, keys := range s.Used {
		used = used || slices.Contains(keys, k)
	}
	if s.Unsynced[k] || !used {
		return nil, false, nil
	}
	return s.Objs[k], true, nil
}
