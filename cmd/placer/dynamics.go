package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/cordon"
	"github.com/placer-dev/placer/internal/fleetwait"
	"github.com/placer-dev/placer/scheduler"
)

// sandboxToleration is how long the sandbox's Workloads tolerate an
// unreachable cluster (--default-unreachable-toleration-seconds; 300 s in
// config/), so that the failover shows within a minute.
const sandboxToleration = 15

// showFleetDynamics drains one member and cuts another off, printing where
// each Workload goes and why: what `placer drain` and a cluster outage do.
func showFleetDynamics(ctx context.Context, out io.Writer, c client.WithWatch, drainee string, cut *local.Cluster, each time.Duration) error {
	key := types.NamespacedName{Namespace: "default", Name: drainee}
	fmt.Fprintf(out, "\nDraining %s (placer drain %s): its Workloads move, proven elsewhere before their pods there go ...\n", drainee, drainee)
	if err := cordon.Drain(ctx, c, key); err != nil {
		return err
	}
	served := servedBy(scheduler.DefaultConfiguration())
	step, cancel := context.WithTimeout(ctx, each)
	err := follow(step, out, c, key, moved, served)
	cancel()
	if err != nil {
		return err
	}
	if err := cordon.Uncordon(ctx, c, key); err != nil {
		return err
	}
	fmt.Fprintf(out, "Uncordoned %s (placer uncordon %s).\n", drainee, drainee)

	key = types.NamespacedName{Namespace: "default", Name: cut.Name()}
	fmt.Fprintf(out, "\nStopping %s's API server: after %d s (the sandbox's toleration of an unreachable cluster) its Workloads move ...\n", cut.Name(), sandboxToleration)
	cut.StopAPIServer()
	step, cancel = context.WithTimeout(ctx, each)
	defer cancel()
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := fleetwait.Until(step, c, kc, &v1alpha1.KubernetesClusterList{}, func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonUnreachable
	}); err != nil {
		return errors.Wrapf(err, "%s did not become Unreachable", key)
	}
	cond := kc.Status.GetCondition(xpv2.TypeReady)
	fmt.Fprintf(out, "KubernetesCluster %s: Ready %s (%s): %s\n", key, cond.Status, cond.Reason, cond.Message)
	if err := follow(step, out, c, key, moved, served); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nStarting %s's API server again: what was left there goes ...\n", cut.Name())
	back, cancelBack := context.WithTimeout(ctx, each)
	defer cancelBack()
	if err := cut.StartAPIServer(back); err != nil {
		return err
	}
	if err := follow(back, out, c, key, cleaned, served); err != nil {
		return err
	}
	fmt.Fprintf(out, "Nothing is left in %s of the Workloads that moved away.\n", cut.Name())
	return nil
}
