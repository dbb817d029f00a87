package predicates

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestHandshakeRejected(t *testing.T) {
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b")}
	runFilterCases(t, NewHandshakeRejected, []filterCase{
		{name: "no rejections", clusters: clusters, w: st.Workload("w"), want: map[string]string{"a": "", "b": ""}},
		{name: "rejected in this generation", clusters: clusters, w: st.Workload("w", st.Rejected("a", 1, "0/3 nodes are available: 3 Insufficient cpu.")),
			want: map[string]string{"a": "cluster(s) rejected the candidate pods (0/3 nodes are available: 3 Insufficient cpu.)", "b": ""}},
		{name: "a rejection of an older generation no longer counts", clusters: clusters, w: st.Workload("w", st.Rejected("a", 0, "old")),
			want: map[string]string{"a": "", "b": ""}},
	})
}

func TestHandshakeRejectedExpires(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(d)); return &t }
	rejected := func(retryAfter *metav1.Time) st.WorkloadOption {
		return func(w *v1alpha1.Workload) {
			w.Status.RejectedClusters = append(w.Status.RejectedClusters, v1alpha1.RejectedCluster{
				Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: "Unschedulable", Message: "full",
				Generation: w.Generation, Time: at(-time.Minute), RetryAfter: retryAfter,
			})
		}
	}
	left := func(w *v1alpha1.Workload) {
		w.Status.LeftClusters = append(w.Status.LeftClusters, v1alpha1.LeftCluster{Cluster: v1alpha1.ClusterReference{Name: "b"}, Reason: v1alpha1.ReasonUnreachable})
	}
	clusters := []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b")}
	runFilterCases(t, NewHandshakeRejected, []filterCase{
		{name: "within its backoff", clusters: clusters, w: st.Workload("w", rejected(at(time.Minute))),
			want: map[string]string{"a": "cluster(s) rejected the candidate pods (full)", "b": ""}},
		{name: "its backoff is over", clusters: clusters, w: st.Workload("w", rejected(at(-time.Second))),
			want: map[string]string{"a": "", "b": ""}},
		{name: "a cluster the Workload left, which may hold its pods, is not chosen again while it is tainted NoExecute",
			clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b", st.Taint(v1alpha1.TaintClusterUnreachable, "", v1alpha1.TaintEffectNoExecute))}, w: st.Workload("w", left),
			want: map[string]string{"a": "", "b": "cluster(s) were left (Unreachable) and may still hold the Workload's pods"}},
		{name: "nor while it is not Ready", clusters: []*v1alpha1.KubernetesCluster{st.Cluster("a"), st.Cluster("b", st.NotReady(v1alpha1.ReasonUnreachable))}, w: st.Workload("w", left),
			want: map[string]string{"a": "", "b": "cluster(s) were left (Unreachable) and may still hold the Workload's pods"}},
		{name: "a cluster left whose reason to leave is over (uncordoned, Ready again) may be chosen again", clusters: clusters, w: st.Workload("w", left),
			want: map[string]string{"a": "", "b": ""}},
	})

	// A cluster that opened up after the rejection (ClusterInfo.OpenedAt)
	// may be tried again at once.
	w := st.Workload("w", rejected(at(time.Hour)))
	rc := w.Rejection(types.NamespacedName{Namespace: "default", Name: "a"})
	ci := scheduler.NewClusterInfo(st.Cluster("a"))
	if RejectionExpired(rc, ci, now, time.Time{}) {
		t.Error("RejectionExpired() = true for a cluster that did not change, within the backoff")
	}
	ci.OpenedAt = now.Add(-time.Second)
	if !RejectionExpired(rc, ci, now, time.Time{}) {
		t.Error("RejectionExpired() = false for a cluster that opened up after the rejection")
	}
	ci.OpenedAt = now.Add(-2 * time.Minute)
	if RejectionExpired(rc, ci, now, time.Time{}) {
		t.Error("RejectionExpired() = true for a cluster that opened up before the rejection")
	}

	// A rejection is stamped to the whole second, as the API keeps it.
	// With no record of when this process saw it, an opening within that
	// second may have come before it, and does not end it (else the
	// cluster is sent handshake after handshake for the rest of the
	// second); one in a later second does.
	stamped := metav1.NewTime(now.Truncate(time.Second))
	rc.Time = &stamped
	ci.OpenedAt = stamped.Add(300 * time.Millisecond)
	if RejectionExpired(rc, ci, now, time.Time{}) {
		t.Error("RejectionExpired() = true for a cluster that opened up within the second of the rejection, maybe before it")
	}
	ci.OpenedAt = stamped.Add(1300 * time.Millisecond)
	if !RejectionExpired(rc, ci, now, time.Time{}) {
		t.Error("RejectionExpired() = false for a cluster that opened up in a second after the rejection's")
	}
	// Seen by this process (its own clock, as OpenedAt's): an opening
	// after that ends it, within the same second too; one before does not.
	seen := stamped.Add(500 * time.Millisecond)
	ci.OpenedAt = seen.Add(200 * time.Millisecond)
	if !RejectionExpired(rc, ci, now, seen) {
		t.Error("RejectionExpired() = false for a cluster that opened up after the rejection was seen, in the same second")
	}
	ci.OpenedAt = seen.Add(-200 * time.Millisecond)
	if RejectionExpired(rc, ci, now, seen) {
		t.Error("RejectionExpired() = true for a cluster that opened up before the rejection was seen")
	}
}

// TestRoomEndsOnlyRejectionsForRoom: a busy cluster whose largest node
// gains room (a pod ended there) ends a rejection for want of room at once,
// not one its admission made (Forbidden, a refused pod), which room never
// undoes: that one waits out its backoff, or a change of the cluster's
// labels, taints or Ready. Before, any room ended every rejection by that
// cluster, whatever its reason, so a backlog the member forbade was sent
// handshake after handshake as the member's pods came and went. (A
// helper's hunt found it, with this test's first shape.)
func TestRoomEndsOnlyRejectionsForRoom(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	for _, tc := range []struct {
		reason string
		ends   bool
	}{
		{v1alpha1.ReasonUnschedulable, true},
		{v1alpha1.ReasonHandshakeTimeout, true},
		{v1alpha1.ReasonForbidden, false},
		{"PodRefused", false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			c := scheduler.NewCache()
			c.UpsertCluster(st.Cluster("a", st.Capacity("64", "256Gi", "60", "240Gi", "1900m", "8Gi")))
			at := metav1.NewTime(time.Now().Add(-time.Second).Truncate(time.Second))
			retry := metav1.NewTime(time.Now().Add(10 * time.Minute))
			w := st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
				w.UID = "w"
				w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"},
					Reason: tc.reason, Generation: w.Generation, Time: &at, RetryAfter: &retry, Attempts: 6}}
			})
			c.UpsertWorkload(w)
			time.Sleep(5 * time.Millisecond)
			if !c.UpsertCluster(st.Cluster("a", st.Capacity("64", "256Gi", "59900m", "240Gi", "2", "8Gi"))) {
				t.Fatal("room on the largest node did not open the cluster up")
			}
			seen, _ := c.RejectionSeen("w", key, 6)
			if got := RejectionExpired(w.Rejection(key), c.Cluster(key), time.Now(), seen); got != tc.ends {
				t.Errorf("a %s rejection with 10 min of backoff left, after room on the largest node: expired %t, want %t", tc.reason, got, tc.ends)
			}
			// Other labels end any.
			time.Sleep(5 * time.Millisecond)
			c.UpsertCluster(st.Cluster("a", st.Capacity("64", "256Gi", "59900m", "240Gi", "2", "8Gi"), func(kc *v1alpha1.KubernetesCluster) { kc.Labels["tier"] = "gold" }))
			if !RejectionExpired(w.Rejection(key), c.Cluster(key), time.Now(), seen) {
				t.Errorf("a %s rejection did not end when the cluster's labels changed", tc.reason)
			}
		})
	}
}

// TestCacheRejectionSeen: the cache keeps when it first saw each
// rejection, at its attempt count, and forgets it with the rejection.
func TestCacheRejectionSeen(t *testing.T) {
	c := scheduler.NewCache()
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	w := st.Workload("w", st.Rejected("a", 0, "full"))
	w.Status.RejectedClusters[0].Attempts = 1
	before := time.Now()
	c.UpsertWorkload(w)
	first, ok := c.RejectionSeen(w.UID, key, 1)
	if !ok || first.Before(before) {
		t.Fatalf("RejectionSeen() = %v, %v; want a time after %v", first, ok, before)
	}
	c.UpsertWorkload(w)
	if again, _ := c.RejectionSeen(w.UID, key, 1); !again.Equal(first) {
		t.Errorf("the same rejection seen again moved from %v to %v", first, again)
	}
	w.Status.RejectedClusters[0].Attempts = 2
	c.UpsertWorkload(w)
	if _, ok := c.RejectionSeen(w.UID, key, 1); ok {
		t.Error("the first attempt is still known after the second")
	}
	if second, ok := c.RejectionSeen(w.UID, key, 2); !ok || second.Before(first) {
		t.Errorf("the second attempt: %v, %v", second, ok)
	}
	w.Status.RejectedClusters = nil
	c.UpsertWorkload(w)
	if _, ok := c.RejectionSeen(w.UID, key, 2); ok {
		t.Error("a rejection gone from the status is still known")
	}
}
