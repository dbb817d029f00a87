package scheduler

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// DefaultTolerations are what every Workload tolerates of the condition
// taints unless it tolerates the taint's key itself, as kube-apiserver's
// DefaultTolerationSeconds admission gives every pod 300 s of the nodes'
// not-ready and unreachable taints. Negative seconds give none.
func DefaultTolerations(notReadySeconds, unreachableSeconds int64) []corev1.Toleration {
	var out []corev1.Toleration
	for _, d := range []struct {
		key  string
		secs int64
	}{{v1alpha1.TaintClusterNotReady, notReadySeconds}, {v1alpha1.TaintClusterUnreachable, unreachableSeconds}} {
		if d.secs < 0 {
			continue
		}
		out = append(out, corev1.Toleration{Key: d.key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &d.secs})
	}
	return out
}

// ExecutionTolerations are the Workload's tolerations with the defaults
// added for the condition-taint keys it does not tolerate by itself.
func ExecutionTolerations(w *v1alpha1.Workload, defaults []corev1.Toleration) []corev1.Toleration {
	own := Tolerations(w)
	out := own
	for _, d := range defaults {
		covered := false
		for _, t := range own {
			if (t.Key == d.Key || t.Key == "" && t.Operator == corev1.TolerationOpExists) && (t.Effect == "" || t.Effect == corev1.TaintEffectNoExecute) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, d)
		}
	}
	return out
}

// Leave says why a placed Workload must leave its cluster.
type Leave struct {
	// Reason is v1alpha1.ReasonUnreachable, ReasonNotReady, ReasonTainted
	// or ReasonClusterDeleted.
	Reason string
	// Message names the taint.
	Message string
}

// MustLeave reports why a Workload placed on the cluster must leave it
// now, with the semantics of NoExecute for pods: a NoExecute taint it
// does not tolerate moves it at once; one it tolerates with
// tolerationSeconds (the smallest of the matching tolerations) moves it
// that long after the taint's timeAdded. When it may stay, after is how
// long until it must go (zero: no deadline). A cluster being deleted is
// left at once. A batch Workload that ran to its end (Finished) never
// leaves: it is not run again elsewhere.
func MustLeave(w *v1alpha1.Workload, c *ClusterInfo, tolerations []corev1.Toleration, now time.Time) (leave *Leave, after time.Duration) {
	if w.Finished() {
		return nil, 0
	}
	if c.Cluster.DeletionTimestamp != nil {
		return &Leave{Reason: v1alpha1.ReasonClusterDeleted, Message: fmt.Sprintf("cluster %s is being deleted", c.Key)}, 0
	}
	for i := range c.Taints {
		taint := &c.Taints[i]
		if taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		seconds, tolerated := tolerationSeconds(tolerations, taint)
		if !tolerated {
			return leaveFor(c, taint, "not tolerated"), 0
		}
		if seconds < 0 {
			continue
		}
		since := time.Duration(0)
		if taint.TimeAdded != nil {
			since = now.Sub(taint.TimeAdded.Time)
		}
		left := time.Duration(seconds)*time.Second - since
		if left <= 0 {
			return leaveFor(c, taint, fmt.Sprintf("tolerated for %ds", seconds)), 0
		}
		if after == 0 || left < after {
			after = left
		}
	}
	return nil, after
}

// tolerationSeconds returns the smallest tolerationSeconds of the
// tolerations that tolerate the taint, -1 when they all tolerate it
// forever; tolerated is false when none does.
func tolerationSeconds(tolerations []corev1.Toleration, taint *corev1.Taint) (seconds int64, tolerated bool) {
	seconds = -1
	for i := range tolerations {
		t := &tolerations[i]
		if !t.ToleratesTaint(logr.Discard(), taint, false) {
			continue
		}
		tolerated = true
		if t.TolerationSeconds != nil {
			s := max(*t.TolerationSeconds, 0)
			if seconds < 0 || s < seconds {
				seconds = s
			}
		}
	}
	return seconds, tolerated
}

func leaveFor(c *ClusterInfo, taint *corev1.Taint, why string) *Leave {
	reason := v1alpha1.ReasonTainted
	switch taint.Key {
	case v1alpha1.TaintClusterUnreachable:
		reason = v1alpha1.ReasonUnreachable
	case v1alpha1.TaintClusterNotReady:
		reason = v1alpha1.ReasonNotReady
	}
	t := taint.Key
	if taint.Value != "" {
		t += "=" + taint.Value
	}
	return &Leave{Reason: reason, Message: fmt.Sprintf("cluster %s has the NoExecute taint %s (%s)", c.Key, t, why)}
}
