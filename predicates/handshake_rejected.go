package predicates

import (
	"context"
	"fmt"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// HandshakeRejectedName is the name of the HandshakeRejected plugin.
const HandshakeRejectedName = "HandshakeRejected"

// ErrReasonRejected is the reason of HandshakeRejected, with the target's reason.
const ErrReasonRejected = "cluster(s) rejected the candidate pods (%s)"

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

// Filter fails a cluster rejected for the Workload's current generation.
func (p *HandshakeRejected) Filter(_ context.Context, _ *scheduler.CycleState, w *v1alpha1.Workload, c *scheduler.ClusterInfo) *scheduler.Status {
	for _, r := range w.Status.RejectedClusters {
		if r.Generation == w.Generation && w.ClusterKey(&r.Cluster) == c.Key {
			why := r.Message
			if why == "" {
				why = r.Reason
			}
			return scheduler.NewStatus(scheduler.Unschedulable, fmt.Sprintf(ErrReasonRejected, why))
		}
	}
	return nil
}
