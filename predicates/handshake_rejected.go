package predicates

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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

var (
	_ scheduler.PreFilterPlugin = &HandshakeRejected{}
	_ scheduler.FilterPlugin    = &HandshakeRejected{}
)

const rejectionSeenKey = "PreFilter/" + HandshakeRejectedName

// PreFilter keeps the snapshot's clock of rejections for Filter.
func (p *HandshakeRejected) PreFilter(_ context.Context, s *scheduler.CycleState, _ *v1alpha1.Workload, snap *scheduler.Snapshot) *scheduler.Status {
	s.Write(rejectionSeenKey, snap.RejectionSeen)
	return nil
}

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
func (p *HandshakeRejected) Filter(_ context.Context, s *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	if lc := w.Left(c.Key); lc != nil && !LeaveOver(c) {
		return scheduler.NewStatus(scheduler.Unschedulable, fmt.Sprintf(ErrReasonLeft, lc.Reason))
	}
	r := w.Rejection(c.Key)
	if r == nil {
		return nil
	}
	var seen time.Time
	if f, ok := s.Read(rejectionSeenKey); ok {
		if clock, _ := f.(func(types.UID, types.NamespacedName, int32) (time.Time, bool)); clock != nil {
			seen, _ = clock(w.UID, c.Key, r.Attempts)
		}
	}
	if !RejectionExpired(r, c, time.Now(), seen) {
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
// (ClusterInfo.OpenedAt). seen is when this process first saw the
// rejection, on the clock OpenedAt is read on; zero when it did not (it
// started since). The API keeps a rejection's time to the whole second,
// and a cluster that opened up within that second may have done so before
// the rejection: counting it sent the same cluster one handshake after
// another until the second was over (TestFaults saw 8 in one second). So
// an opening counts when it comes after the rejection was seen, or, with
// nothing seen, in a later second than the rejection's.
func RejectionExpired(r *v1alpha1.RejectedCluster, c *scheduler.ClusterInfo, now, seen time.Time) bool {
	opened := c.OpenedAt
	if forRoom(r.Reason) && c.RoomAt.After(opened) {
		opened = c.RoomAt
	}
	switch {
	case r.Expired(now):
		return true
	case opened.IsZero():
		return false
	case !seen.IsZero():
		return opened.After(seen)
	default:
		return r.Time != nil && r.Time.Time.Before(opened.Truncate(time.Second))
	}
}

// forRoom reports whether a rejection's reason may be for want of room,
// which a cluster that gains room may undo: its candidates were
// unschedulable, or not every one was reserved in time. Not a refusal by
// the member's admission, a name conflict, a forbidden or missing
// dependency.
func forRoom(reason string) bool {
	return reason == v1alpha1.ReasonUnschedulable || reason == v1alpha1.ReasonHandshakeTimeout
}
