package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/examples"
	"github.com/placer-dev/placer/internal/fleetwait"
)

// placement is where one example landed, against what it says.
type placement struct {
	ex      examples.Example
	w       *v1alpha1.Workload
	cluster string
	err     error
}

// ok reports whether the example did what its comment says.
func (p placement) ok() bool {
	return p.err == nil && p.cluster == p.ex.Expect
}

// applyExamples creates each example Workload in file order and waits for
// it to settle: Ready in a cluster (or ran to its end there), or Unschedulable.
func applyExamples(ctx context.Context, out io.Writer, c client.WithWatch, exs []examples.Example, each time.Duration) []placement {
	res := make([]placement, 0, len(exs))
	for _, ex := range exs {
		fmt.Fprintf(out, "  applying %-28s ", ex.File)
		start := time.Now()
		p := placement{ex: ex}
		w := ex.Workload.DeepCopy()
		if err := createNeeds(ctx, c, ex); err != nil {
			p.err = err
		} else if err := c.Create(ctx, w); err != nil {
			p.err = errors.Wrapf(err, "cannot create Workload %s", w.Name)
		} else {
			p.w, p.err = waitSettled(ctx, c, w, each)
			switch {
			case p.w != nil && p.w.Spreads() && p.w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue:
				p.cluster = sharesLanded(p.w)
			case p.w != nil && p.w.Status.ClusterRef != nil && (p.w.Finished() || p.w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue):
				p.cluster = p.w.Status.ClusterRef.Name
			case p.w != nil && p.w.Status.GetCondition(v1alpha1.TypeScheduled).Reason == v1alpha1.ReasonUnschedulable:
				p.cluster = examples.Unschedulable
			}
		}
		verdict := "as expected"
		if !p.ok() {
			verdict = "NOT as expected"
		}
		fmt.Fprintf(out, "→ %-14s %s (%s)\n", orDash(p.cluster), verdict, time.Since(start).Round(100*time.Millisecond))
		res = append(res, p)
	}
	return res
}

// sharesLanded says where a Divided or Duplicated Workload's shares are,
// as an example expects them: "large=4,small=2" (status.shares).
func sharesLanded(w *v1alpha1.Workload) string { return w.Status.Shares }

// createNeeds creates the objects an example's pods use (its file's
// ConfigMaps, Secrets and ServiceAccounts), leaving those that exist.
func createNeeds(ctx context.Context, c client.Client, ex examples.Example) error {
	for _, n := range ex.Needs {
		if err := c.Create(ctx, n.DeepCopy()); resource.Ignore(kerrors.IsAlreadyExists, err) != nil {
			return errors.Wrapf(err, "cannot create %s %s", n.GetKind(), n.GetName())
		}
	}
	return nil
}

// waitSettled watches the Workload until it is Ready, ran to its end (a
// batch Workload: Complete or Failed), or is Unschedulable.
func waitSettled(ctx context.Context, c client.WithWatch, w *v1alpha1.Workload, timeout time.Duration) (*v1alpha1.Workload, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := fleetwait.Until(ctx, c, w, &v1alpha1.WorkloadList{}, func(w *v1alpha1.Workload) bool {
		return (w.Status.ClusterRef != nil || w.Spreads()) && (w.Finished() || w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue) ||
			w.Status.GetCondition(v1alpha1.TypeScheduled).Reason == v1alpha1.ReasonUnschedulable
	})
	if err != nil {
		return w, errors.Errorf("neither Ready nor Unschedulable within %s", timeout)
	}
	return w, nil
}

// printPlacements prints the placement table: each example, where it
// landed, and the top reasons it won or why it could not land.
func printPlacements(out io.Writer, ps []placement) {
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tEXPECTED\tLANDED\tREADY\tWHY")
	for _, p := range ps {
		ready := "-"
		switch {
		case p.w != nil && p.w.Finished():
			ready = finishedMessage(p.w)
		case p.w != nil && p.w.Spreads():
			ready = p.w.Status.ReadyOfDesired
		case p.w != nil && p.w.Status.ClusterRef != nil:
			ready = fmt.Sprintf("%d/%d", p.w.Status.ReadyReplicas, shownReplicas(p.w))
		}
		landed := orDash(p.cluster)
		if !p.ok() {
			landed += " (!)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ex.Workload.Name, p.ex.Expect, landed, ready, why(p))
	}
	_ = tw.Flush()
}

// why shortens the Scheduled condition to its reasons, and adds the
// clusters whose own schedulers refused the candidates.
func why(p placement) string {
	if p.w == nil {
		return p.err.Error()
	}
	msg := p.w.Status.GetCondition(v1alpha1.TypeScheduled).Message
	if strings.HasPrefix(msg, "placed on ") {
		if _, rest, ok := strings.Cut(msg, " with score "); ok {
			msg = "score " + rest
		} else if _, rest, ok := strings.Cut(msg, ", "); ok {
			msg = rest
		}
	}
	var rejected []string
	for _, rc := range p.w.Status.RejectedClusters {
		reason := rc.Message
		if i := strings.Index(reason, "."); i > 0 {
			reason = reason[:i]
		}
		rejected = append(rejected, fmt.Sprintf("%s: %s", rc.Cluster.Name, reason))
	}
	sort.Strings(rejected)
	if len(rejected) > 0 {
		msg += "; rejected by " + strings.Join(rejected, "; ")
	}
	if p.err != nil {
		msg = p.err.Error() + ": " + msg
	}
	return msg
}

// finishedMessage says how a batch Workload ended: "Complete 2/2" or
// "Failed 1/2" (replicas that failed).
func finishedMessage(w *v1alpha1.Workload) string {
	if w.Status.GetCondition(v1alpha1.TypeFailed).Status == corev1.ConditionTrue {
		return fmt.Sprintf("Failed %d/%d", w.Status.Failed, w.ReplicaCount())
	}
	return fmt.Sprintf("Complete %d/%d", w.Status.Succeeded, w.ReplicaCount())
}
