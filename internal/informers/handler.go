// Package informers adapts typed functions to client-go informer event
// handlers, for every informer placer adds handlers to (the manager's and
// the members').
package informers

import toolscache "k8s.io/client-go/tools/cache"

// Handler calls typed functions on an informer's events; a deleted object
// whose final state is unknown is passed as last seen, and objects of
// another type are ignored.
func Handler[T any](add func(T), update func(old, new T), del func(T)) toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) {
			if t, ok := o.(T); ok {
				add(t)
			}
		},
		UpdateFunc: func(old, o any) {
			b, ok1 := old.(T)
			t, ok2 := o.(T)
			if ok1 && ok2 {
				update(b, t)
			}
		},
		DeleteFunc: func(o any) {
			if d, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if t, ok := o.(T); ok {
				del(t)
			}
		},
	}
}

// OnEvery calls f with the object of every add, update and delete.
func OnEvery[T any](f func(T)) toolscache.ResourceEventHandlerFuncs {
	return Handler(f, func(_, n T) { f(n) }, f)
}
