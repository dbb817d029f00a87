package controllers

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Helpers shared by placer's controllers.

// conflictRetry is how soon a write that lost a race is retried.
const conflictRetry = 100 * time.Millisecond

// ignoreConflict turns a conflict, which only means the cache was behind,
// into a quiet immediate retry.
func ignoreConflict(err error) (reconcile.Result, error) {
	if kerrors.IsConflict(errors.Cause(err)) {
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return reconcile.Result{}, err
}

// closer runs f when the manager stops.
type closer func()

func (f closer) Start(ctx context.Context) error {
	<-ctx.Done()
	f()
	return nil
}

// typedHandler adapts typed functions to an informer's event handler; a
// deleted object whose final state is unknown is passed as last seen.
func typedHandler[T any](add func(T), update func(old, new T), del func(T)) toolscache.ResourceEventHandlerFuncs {
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
