package controllers

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
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
