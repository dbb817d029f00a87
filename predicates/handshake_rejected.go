package predicates

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// HandshakeRejectedName is the name of the HandshakeRejected plugin.
const HandshakeRejectedName = "HandshakeRejected"

// Reasons of HandshakeRejected: with the target's reason, and with the
// reason the Workload left the cluster.
const (
	ErrReasonRejected = "cluster(s) rejected the candidate pods (%s)"
	ErrReasonLeft     = "cluster(s) were left (%s) and may still hold the Workload's pods"
)

// HandshakeRejected fails clusters where this generation's handshake already
// failed (status.rejectedClusters), so the scheduler chooses again.
type HandshakeRejected struct{}

var _ scheduler.FilterPlugin = &HandshakeRejected{}

// NewHandshakeRejected returns the plugin.
func NewHandshakeRejected(scheduler.Handle) (scheduler.Plugin, error) {
	return &HandshakeRejected{}, nil
}

// Name of the plugin.
func (p *HandshakeRejected) Name() string { return HandshakeRejectedName }

// Filter fails a cluster rejected for the Workload's current generation
// until the rejection expires (RejectionExpired), and a cluster the
// Workload left that may still hold its pods, until what made it leave is
// over (LeaveOver): then its copy there is the chosen cluster's again.
func (p *HandshakeRejected) Filter(_ context.Context, _ *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if lc := w.Left(c.Key); lc != nil && !LeaveOver(c) {
		return scheduler.NewStatus(scheduler.Unschedulable, fmt.Sprintf(ErrReasonLeft, lc.Reason))
	}
	if r := w.Rejection(c.Key); r != nil && !RejectionExpired(r, c, time.Now()) {
		why := r.Message
		if why == "" {
			why = r.Reason
		}
		return scheduler.NewStatus(scheduler.Unschedulable, fmt.Sprintf(ErrReasonRejected, why))
	}
	return nil
}

// LeaveOver reports whether nothing that makes a Workload leave a cluster
// holds any more: it is Ready, not being deleted, and has no NoExecute
// taint (uncordoned after a drain, or answering again with its condition
// taints gone). A Workload that left it and found no other cluster (the
// new one rejected it) may come back to it.
func LeaveOver(c *scheduler.ClusterInfo) bool {
	if c.Ready.Status != corev1.ConditionTrue || c.Cluster.DeletionTimestamp != nil {
		return false
	}
	for i := range c.Taints {
		if c.Taints[i].Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// RejectionExpired reports whether a rejection may be tried again: its
// backoff is over, or the cluster changed since in a way that can undo it
// (ClusterInfo.OpenedAt). The API keeps a rejection's time to the whole
// second: a cluster that opened up within that second may have done so
// before the rejection, and counting it would send the same cluster one
// handshake after another until the second is over (TestFaults saw 8 in
// one second); only an opening in a later second counts, and one missed
// so waits out the backoff or the next change.
func RejectionExpired(r *v1alpha1.RejectedCluster, c *scheduler.ClusterInfo, now time.Time) bool {
	return r.Expired(now) || r.Time != nil && !c.OpenedAt.IsZero() && r.Time.Time.Before(c.OpenedAt.Truncate(time.Second))
}
