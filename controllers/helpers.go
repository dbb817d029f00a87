package controllers

import (
	"context"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
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

// patchStatus writes a Workload's status, changed from orig, as a merge
// patch carrying orig's resourceVersion. A conflict (the cache was behind,
// or another controller wrote first) is not an error: written is false,
// and the caller decides again soon from what is there.
func patchStatus(ctx context.Context, c client.Client, w, orig *v1alpha1.Workload) (written bool, err error) {
	if equality.Semantic.DeepEqual(orig.Status, w.Status) {
		return true, nil
	}
	err = c.Status().Patch(ctx, w, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	if kerrors.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, errors.Wrap(resource.IgnoreNotFound(err), errUpdateWorkload)
	}
	return true, nil
}
