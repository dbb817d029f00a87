package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/internal/skew"
)

const errReconnect = "cannot reconnect to the cluster"

// HealthOptions are the rules a member's health is judged by.
type HealthOptions struct {
	// Interval is how often a member is probed (/version).
	Interval time.Duration
	// Grace is how long a member's ClusterSummary may go without a new
	// heartbeat before the member stops being Ready.
	Grace time.Duration
}

// Last is what the cluster's status said before a check.
type Last struct {
	// ProbeTime and Version: the last probe that found it Ready.
	ProbeTime *metav1.Time
	Version   string
	// Ready: its Ready condition is True.
	Ready bool
	// Unreachable is when it stopped answering, if that is why it is not
	// Ready (the condition's transition time); zero otherwise.
	Unreachable time.Time
	// ClusterID is the identity recorded for it (status.clusterID).
	ClusterID string
}

// Health is a connection's verdict on its member.
type Health struct {
	// Version is the member's /version, and ProbeTime when it answered
	// (nil when it was not asked again: probed Ready less than an
	// interval ago, through a connection that watches it).
	Version   string
	ProbeTime *metav1.Time
	// Reason is empty when the member is Ready for placement; otherwise
	// the v1alpha1 reason it is not (Unreachable, Unauthorized,
	// AgentNotRunning, CandidateSchedulerNotRunning). Message says why,
	// or what answers.
	Reason, Message string
	// Summary is what the member's agent last published, if it has.
	Summary *mcv1alpha1.ClusterSummaryStatus
	// ClusterID is the identity the member's agent publishes, if it has.
	ClusterID string
	// Unsettled: a watch has just started (a new connection, a restarted
	// manager) and has not seen enough to judge; the cluster keeps its
	// condition rather than flap, and is looked at again after Next.
	Unsettled bool
	// Next is how soon to look again.
	Next time.Duration
}

// Check probes the cluster's member (unless probed Ready less than an
// interval ago), keeps its watches fresh (a fresh connection for a member
// that answers again after an outage, or whose summary's watch fell
// behind), and judges placer's components there from the summary its
// agent publishes. It returns an error only for what the registry itself
// cannot do; everything the member says is in the Health. With no
// kubeconfig (a cluster drained after its Secret or ClusterProfile went
// first) the connection is never replaced, only probed: its watches catch
// up on their own.
func (r *Registry) Check(ctx context.Context, key types.NamespacedName, kubeconfig []byte, last Last, o HealthOptions, opts ...EnsureOption) (Health, error) {
	conn := r.Get(key)
	if conn == nil {
		return Health{}, errors.Errorf("no connection to %s", key)
	}
	// Before any watch of it starts: what a connection shows serves no
	// one until it shows the cluster placer placed in.
	conn.Expect(last.ClusterID)
	h := Health{Version: last.Version, Next: o.Interval}
	if since, fresh := probedRecently(last, conn.Synced(), o.Interval); fresh {
		h.Next = o.Interval - since
	} else {
		info, err := conn.Probe(ctx)
		if err != nil {
			h.Reason, h.Message = probeFailure(err)
			return h, nil
		}
		now := metav1.Now()
		h.Version, h.ProbeTime = info.GitVersion, &now
		if len(kubeconfig) > 0 && !last.Unreachable.IsZero() && stale(conn.WatchStarted(), last.Unreachable) {
			// It answers again: fresh watches list it now, rather than
			// after their reflectors' backoff (up to a minute), and until
			// they have, nothing is read from the stale ones.
			if conn, err = r.Reconnect(key, kubeconfig, opts...); err != nil {
				// Ensure accepted this kubeconfig a moment ago.
				return Health{}, errors.Wrap(err, errReconnect)
			}
		}
	}
	h.Message = fmt.Sprintf("%s answers", h.Version)
	if msg := skew.UnsupportedVersion(h.Version); msg != "" {
		h.Reason, h.Message = v1alpha1.ReasonUnsupportedVersion, h.Message+"; "+msg
		return h, nil
	}
	if err := conn.Watch(ctx); err != nil {
		h.Reason = v1alpha1.ReasonAgentNotRunning
		h.Message += "; placer's agent is not installed or does not run: " + DescribeError(err)
		return h, nil
	}
	sum := conn.Summary(ctx)
	if sum.Found && sum.Silent >= o.Grace && len(kubeconfig) > 0 {
		// Silent past the grace: a stopped agent, or a watch waiting out
		// its reflector's backoff after a blip. The member says.
		if live, err := conn.LiveHeartbeat(ctx); err == nil && !live.Equal(&sum.Beat) {
			if _, err := r.Reconnect(key, kubeconfig, opts...); err != nil {
				return Health{}, errors.Wrap(err, errReconnect)
			}
			return Health{Version: h.Version, ProbeTime: h.ProbeTime, Unsettled: true, Next: time.Second}, nil
		}
	}
	judge(&h, sum, o.Grace)
	judgeChaperons(&h, conn.Synced(), time.Since(conn.WatchStarted()), o.Grace)
	if identify(&h, sum, last.ClusterID) {
		// What answers is not this cluster: nothing of it is published.
		h.Version, h.ProbeTime, h.Summary = last.Version, nil, nil
	}
	return h, nil
}

// identify compares who the member says it is (its agent's clusterID)
// with the cluster placer placed in (want, status.clusterID): a
// kubeconfig that reaches another cluster, or one whose agent says
// nothing, makes it not Ready, whatever else its summary says; its
// connection serves no one meanwhile (Connection.serves).
func identify(h *Health, sum Summary, want string) (other bool) {
	if !sum.Found {
		return false
	}
	h.ClusterID = sum.Status.ClusterID
	got := sum.Status.ClusterID
	switch {
	case want == "" || got == want:
		return false
	case got == "":
		// Not shown another cluster: its agent cannot say (it is older
		// than the manager, or cannot read kube-system), as an agent not
		// running cannot; nothing is sent to it meanwhile all the same.
		h.Reason = v1alpha1.ReasonAgentNotRunning
		h.Message += fmt.Sprintf("; placer's agent there publishes no cluster identity (it is older than the manager, or cannot read the kube-system namespace): it cannot show it is cluster %s, where placer placed", want)
	default:
		h.Reason = v1alpha1.ReasonClusterIdentityChanged
		h.Message += fmt.Sprintf("; it is cluster %s (its kube-system namespace's UID), not %s, where placer placed: the kubeconfig reaches another cluster; point it back, or delete this KubernetesCluster", got, want)
	}
	h.Unsettled = false
	return true
}

// judge judges placer's components in an answering member from its
// summary: the agent heartbeats in it, and it says whether the candidate
// scheduler renews its Lease.
func judge(h *Health, sum Summary, grace time.Duration) {
	if sum.Found {
		status := sum.Status
		h.Summary = &status
		h.Message += fmt.Sprintf("; %d of %d nodes ready", status.ReadyNodeCount, status.NodeCount)
	}
	left := grace - sum.Silent
	switch {
	case !sum.Synced && left > 0:
		// The summary's arrival brings the next check; without one, look
		// again now and then (each look probes), not in a hot loop.
		h.Unsettled, h.Next = true, min(left, 2*time.Second)
	case !sum.Synced:
		h.Reason = v1alpha1.ReasonAgentNotRunning
		h.Message += fmt.Sprintf("; the watch of placer's ClusterSummary has not synced in %s", sum.Silent.Round(time.Second))
	case !sum.Found:
		h.Reason = v1alpha1.ReasonAgentNotRunning
		h.Message += "; placer's agent has not published a capacity summary: it does not run, or cannot write"
	case sum.Status.HeartbeatTime == nil:
		h.Reason = v1alpha1.ReasonAgentNotRunning
		h.Message += "; placer's agent publishes no heartbeat: it is older than the manager, upgrade it"
	case left <= 0:
		h.Reason = v1alpha1.ReasonAgentNotRunning
		h.Message += fmt.Sprintf("; placer's agent has not renewed its capacity summary for %s (grace %s): it does not run, or cannot reach its API server",
			sum.Silent.Round(time.Second), grace)
	case !sum.Changed && time.Since(sum.Status.HeartbeatTime.Time) >= grace:
		// A new watch has seen one summary, written long ago by the
		// agent's clock: alive only once its heartbeat changes; until
		// then, or the grace, the cluster keeps its condition.
		h.Unsettled, h.Next = true, left
	case sum.Status.CandidateScheduler != nil && !sum.Status.CandidateScheduler.Running:
		h.Reason = v1alpha1.ReasonCandidateSchedulerNotRunning
		h.Message += "; placer's candidate scheduler does not run: " + sum.Status.CandidateScheduler.Message
		h.Next = min(h.Next, left)
	default:
		h.Next = min(h.Next, left)
	}
}

// judgeChaperons makes a member that the summary says is ready not Ready
// when placer's PodChaperons there have not been listed within the grace
// since its watches started (placer's CRDs or the manager's grant gone
// there, a conversion that hangs): nothing placer sends there could be
// seen, and a deleted cluster's drain would wait for it for ever. As one
// that does not answer (NotReady), its drain lets it go, saying what may
// remain there.
func judgeChaperons(h *Health, synced bool, watching, grace time.Duration) {
	if h.Reason != "" || h.Unsettled || synced || watching < grace {
		return
	}
	h.Reason = v1alpha1.ReasonNotReady
	h.Message += fmt.Sprintf("; placer's PodChaperons there have not been listed in %s: are placer's CRDs installed there, and may the manager's identity list them?", watching.Round(time.Second))
}

// stale reports whether watches started before the cluster stopped
// answering (at down): they have missed what happened since.
func stale(started, down time.Time) bool {
	// down is whole seconds: a watch started in that second may be stale.
	return !started.IsZero() && started.Before(down.Add(time.Second))
}

// probedRecently reports whether the cluster was probed Ready less than an
// interval ago, through a connection that watches it (synced): then a
// check (a summary changed) needs no probe, and since is how long ago it
// was.
func probedRecently(last Last, synced bool, interval time.Duration) (since time.Duration, fresh bool) {
	if last.ProbeTime == nil || last.Version == "" || !last.Ready || !synced {
		return 0, false
	}
	since = time.Since(last.ProbeTime.Time)
	return since, since >= 0 && since < interval
}

// probeFailure tells refused credentials apart from a cluster that does
// not answer.
func probeFailure(err error) (reason, msg string) {
	if kerrors.IsUnauthorized(err) || kerrors.IsForbidden(err) {
		return v1alpha1.ReasonUnauthorized, "the cluster refused the kubeconfig's credentials: " + DescribeError(err)
	}
	return v1alpha1.ReasonUnreachable, "the cluster does not answer: " + DescribeError(err)
}
