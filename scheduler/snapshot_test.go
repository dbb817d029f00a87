package scheduler_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func TestCachePending(t *testing.T) {
	c := scheduler.NewCache()
	c.UpsertWorkload(st.Workload("a"))
	c.UpsertWorkload(st.Workload("b"))
	c.UpsertWorkload(st.Workload("placed", st.PlacedOn("east")))
	c.UpsertWorkload(st.Workload("foreign", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "other" }))
	ours := map[string]bool{v1alpha1.DefaultSchedulerName: true}
	if got := len(c.Pending(ours, false)); got != 2 {
		t.Errorf("Pending = %d, want 2", got)
	}
	if got := c.PendingCount(ours); got != 2 {
		t.Errorf("PendingCount = %d, want 2", got)
	}
	c.UpsertWorkload(st.Workload("a", st.PlacedOn("east")))
	if got := c.PendingCount(ours); got != 1 {
		t.Errorf("PendingCount after a is placed = %d, want 1", got)
	}
}

// TestCacheSnapshotSurvivesStatusOnlyChanges: a placed workload's status
// changing in a way no cycle sees (its ready count) keeps the snapshot; a
// change a cycle sees (its labels, its unbound replicas) makes a new one.
func TestCacheSnapshotSurvivesStatusOnlyChanges(t *testing.T) {
	c := scheduler.NewCache()
	c.UpsertCluster(st.Cluster("east", st.Capacity("8", "32Gi", "0", "0", "8", "32Gi")))
	counts := func(scheduled, ready int32) st.WorkloadOption {
		return func(w *v1alpha1.Workload) {
			w.Status.ScheduledReplicas, w.Status.ReadyReplicas = scheduled, ready
			w.SetCounted(w.ClusterKey(w.Status.ClusterRef), 2, nil)
		}
	}
	c.UpsertWorkload(st.Workload("w", st.Replicas(2), st.Requests("1", "1Gi"), st.PlacedOn("east"), counts(2, 1)))
	before := c.Snapshot()
	c.UpsertWorkload(st.Workload("w", st.Replicas(2), st.Requests("1", "1Gi"), st.PlacedOn("east"), counts(2, 2)))
	if c.Snapshot() != before {
		t.Error("a ready count changing made a new snapshot")
	}
	c.UpsertWorkload(st.Workload("w", st.Replicas(2), st.Requests("1", "1Gi"), st.PlacedOn("east"), counts(1, 1)))
	if c.Snapshot() == before {
		t.Error("a replica unbound again kept the old snapshot")
	}
	before = c.Snapshot()
	c.UpsertWorkload(st.Workload("w", st.Replicas(2), st.Requests("1", "1Gi"), st.PlacedOn("east"), counts(1, 1), st.WLabels("tier", "gold")))
	if c.Snapshot() == before || placedIn(c.Snapshot(), "w") != "east" {
		t.Error("a label changing kept the old snapshot")
	}
}

// placedIn returns the cluster the snapshot has the workload in, "" if none.
func placedIn(s *scheduler.Snapshot, name string) string {
	for _, p := range s.Placed {
		if p.Name == name {
			return p.Cluster.Name
		}
	}
	return ""
}

func withRV(rv string) st.WorkloadOption {
	return func(w *v1alpha1.Workload) { w.ResourceVersion = rv }
}

// TestCacheAssume walks an assumption through its lives: assumed at once,
// kept while the informer brings older copies, confirmed by the copy of the
// write (before or after the writer reports it), or forgotten.
func TestCacheAssume(t *testing.T) {
	ours := map[string]bool{v1alpha1.DefaultSchedulerName: true}
	east := &v1alpha1.ClusterReference{Name: "east"}

	t.Run("assumed at once, confirmed by the informer's copy of the write", func(t *testing.T) {
		c := scheduler.NewCache()
		w := st.Workload("w", withRV("10"))
		c.UpsertWorkload(w)
		c.Assume(w, east)
		if got := placedIn(c.Snapshot(), "w"); got != "east" || c.PendingCount(ours) != 0 || !c.Assumed(w.UID) {
			t.Fatalf("after Assume: placed in %q, %d pending, assumed %t; want east, 0, true", got, c.PendingCount(ours), c.Assumed(w.UID))
		}
		// An older copy (another writer's, or the one decided from) changes nothing.
		if c.UpsertWorkload(st.Workload("w", withRV("11"))) {
			t.Fatal("a copy before the write was written confirmed the assumption")
		}
		if got := placedIn(c.Snapshot(), "w"); got != "east" {
			t.Fatalf("an older copy undid the assumption: placed in %q", got)
		}
		if c.Written(w.UID, "12") {
			t.Fatal("Written confirmed without the informer's copy")
		}
		if c.UpsertWorkload(st.Workload("w", withRV("11"))) || !c.Assumed(w.UID) {
			t.Fatal("a copy older than the written version confirmed the assumption")
		}
		if !c.UpsertWorkload(st.Workload("w", withRV("12"), st.PlacedOn("east"))) || c.Assumed(w.UID) {
			t.Fatal("the informer's copy of the write did not confirm the assumption")
		}
		if got := placedIn(c.Snapshot(), "w"); got != "east" {
			t.Fatalf("after confirmation placed in %q, want east", got)
		}
	})

	t.Run("the informer's copy before the writer reports", func(t *testing.T) {
		c := scheduler.NewCache()
		w := st.Workload("w", withRV("10"))
		c.Assume(w, east)
		c.UpsertWorkload(st.Workload("w", withRV("12"), st.PlacedOn("east")))
		if !c.Assumed(w.UID) {
			t.Fatal("confirmed before the writer said which version it wrote")
		}
		if !c.Written(w.UID, "12") || c.Assumed(w.UID) {
			t.Fatal("Written did not end an assumption the informer had already brought")
		}
	})

	t.Run("a failed write goes back to the latest copy", func(t *testing.T) {
		c := scheduler.NewCache()
		w := st.Workload("w", withRV("10"))
		c.UpsertWorkload(w)
		c.Assume(w, east)
		c.UpsertWorkload(st.Workload("w", withRV("11"), st.PlacedOn("west")))
		c.Forget(w)
		if got := placedIn(c.Snapshot(), "w"); got != "west" || c.Assumed(w.UID) {
			t.Fatalf("after Forget placed in %q (assumed %t), want west from the latest copy", got, c.Assumed(w.UID))
		}
	})

	t.Run("an assumed placement takes capacity until its replicas are bound", func(t *testing.T) {
		c := scheduler.NewCache()
		c.UpsertCluster(st.Cluster("east", st.Capacity("64", "256Gi", "10", "64Gi", "8", "32Gi")))
		w := st.Workload("w", withRV("10"), st.Requests("2", "1Gi"), st.Replicas(3))
		c.Assume(w, east)
		got := c.Snapshot().Clusters[0].Requested
		if cpu := got.Cpu(); cpu.String() != "16" {
			t.Fatalf("east's requested cpu with 3 unbound replicas of 2 = %s, want 16", cpu)
		}
		bound := st.Workload("w", withRV("12"), st.Requests("2", "1Gi"), st.Replicas(3), st.PlacedOn("east"))
		c.Written(w.UID, "12")
		bound.Status.ScheduledReplicas = 3
		bound.SetCounted(bound.ClusterKey(east), 3, nil)
		c.UpsertWorkload(bound)
		if cpu := c.Snapshot().Clusters[0].Requested.Cpu(); cpu.String() != "10" {
			t.Fatalf("east's requested cpu once bound = %s, want the summary's 10", cpu)
		}
		// Moved to east from west, whose counts the status still holds
		// until the propagator counts in east: none is bound in east.
		moved := st.Workload("w", withRV("13"), st.Requests("2", "1Gi"), st.Replicas(3), st.PlacedOn("east"))
		moved.Status.ScheduledReplicas = 3
		moved.SetCounted(types.NamespacedName{Namespace: moved.Namespace, Name: "west"}, 3, nil)
		c.UpsertWorkload(moved)
		if cpu := c.Snapshot().Clusters[0].Requested.Cpu(); cpu.String() != "16" {
			t.Fatalf("east's requested cpu with the counts of the cluster left = %s, want 16: its 3 replicas unbound", cpu)
		}
	})

	t.Run("only workloads with required affinity come back on a placement", func(t *testing.T) {
		c := scheduler.NewCache()
		c.UpsertWorkload(st.Workload("plain"))
		c.UpsertWorkload(st.Workload("follower", st.RequiredAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "db"))))
		got := c.Pending(ours, true)
		if len(got) != 1 || got[0].Name != "follower" {
			t.Fatalf("Pending(affinity only) = %v, want [follower]", got)
		}
	})
}

// TestCacheOpensUpAndMoving: a cluster opens up when it can take what it
// rejected, not when its requests merely fall: room gained (a node added,
// room on its largest node) moves RoomAt, which ends only rejections for
// want of room; other labels or taints, or Ready again, move OpenedAt,
// which ends any. The count of drains in flight follows the placed
// workloads.
func TestCacheOpensUpAndMoving(t *testing.T) {
	c := scheduler.NewCache()
	key := types.NamespacedName{Namespace: "default", Name: "east"}
	full := st.Capacity("8", "32Gi", "8", "32Gi", "0", "0")
	if c.UpsertCluster(st.Cluster("east", full)) {
		t.Error("a cluster seen for the first time opened up")
	}
	if c.UpsertCluster(st.Cluster("east", st.Capacity("8", "32Gi", "6", "30Gi", "0", "0"))) || !c.Cluster(key).OpenedAt.IsZero() {
		t.Error("requests falling opened the cluster up")
	}
	if !c.UpsertCluster(st.Cluster("east", st.Capacity("16", "64Gi", "6", "30Gi", "8", "32Gi"))) || c.Cluster(key).RoomAt.IsZero() || !c.Cluster(key).OpenedAt.IsZero() {
		t.Error("a node added did not open the cluster up for want of room alone")
	}
	room := c.Cluster(key).RoomAt
	if c.UpsertCluster(st.Cluster("east", st.Capacity("16", "64Gi", "6", "30Gi", "8", "32Gi"))) || c.Cluster(key).RoomAt != room {
		t.Error("the same state opened the cluster up, or moved RoomAt")
	}
	if !c.UpsertCluster(st.Cluster("east", st.Capacity("16", "64Gi", "4", "28Gi", "10", "34Gi"))) || !c.Cluster(key).OpenedAt.IsZero() || !c.Cluster(key).RoomAt.After(room) {
		t.Error("room on the largest node (a pod ended there) did not open the cluster up for want of room alone")
	}
	if !c.UpsertCluster(st.Cluster("east", st.Capacity("16", "64Gi", "4", "28Gi", "10", "34Gi"), st.Taint("k", "", v1alpha1.TaintEffectNoExecute))) || c.Cluster(key).OpenedAt.IsZero() {
		t.Error("a taint added did not count as a change that can undo any rejection")
	}

	drain := func(w *v1alpha1.Workload) {
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "west"}, Reason: v1alpha1.ReasonTainted}}
	}
	failover := func(w *v1alpha1.Workload) {
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "west"}, Reason: v1alpha1.ReasonUnreachable}}
	}
	a, b := st.Workload("a", st.PlacedOn("east"), drain), st.Workload("b", st.PlacedOn("east"), failover)
	a.UID, b.UID = "a", "b"
	c.UpsertWorkload(a)
	c.UpsertWorkload(b)
	if n := c.Draining(); n != 1 {
		t.Errorf("Moving() = %d, want 1: a drain counts, a failover does not", n)
	}
	c.UpsertWorkload(a) // the same copy again
	if n := c.Draining(); n != 1 {
		t.Errorf("Moving() = %d after the same copy again, want 1", n)
	}
	done := a.DeepCopy()
	done.Status.LeftClusters = nil
	c.UpsertWorkload(done)
	if n := c.Draining(); n != 0 {
		t.Errorf("Moving() = %d after the move ended, want 0", n)
	}
	c.UpsertWorkload(a)
	c.DeleteWorkload(a)
	if n := c.Draining(); n != 0 {
		t.Errorf("Moving() = %d after the draining workload was deleted, want 0", n)
	}

	// A share leaving for a drain counts from its mark until it goes; an
	// older copy without the mark (a decision assumed before it) does
	// not take it away.
	share := st.Workload("web-east", st.PlacedOn("east"))
	st.ShareOf("web")(share)
	share.UID = "share"
	c.UpsertWorkload(share)
	marked := share.DeepCopy()
	marked.Annotations[v1alpha1.AnnotationShareLeaving] = v1alpha1.ReasonTainted
	c.UpsertWorkload(marked)
	c.UpsertWorkload(share)
	if n := c.Draining(); n != 1 {
		t.Errorf("Moving() = %d with a share leaving for a drain, then an older copy of it, want 1", n)
	}
	c.DeleteWorkload(share)
	lost := share.DeepCopy()
	lost.UID, lost.Annotations[v1alpha1.AnnotationShareLeaving] = "lost", v1alpha1.ReasonUnreachable
	c.UpsertWorkload(lost)
	if n := c.Draining(); n != 0 {
		t.Errorf("Moving() = %d once the share went, and with a share leaving a lost cluster (no drain), want 0", n)
	}
	fresh := share.DeepCopy()
	fresh.UID = "fresh"
	c.UpsertWorkload(fresh)
	c.ShareLeaving(fresh.UID)
	c.ShareLeaving("gone-already")
	if n := c.Draining(); n != 1 || !c.IsShareLeaving(fresh.UID) {
		t.Errorf("Moving() = %d after a placed share was marked here (and one the cache saw go), want 1", n)
	}
	c.DeleteWorkload(fresh)

	// A spread Workload moving back counts from the decision (made from
	// the copy of resourceVersion 10) while its status says so; a copy as
	// old does not end it, the first newer one without it does.
	spread := st.Workload("web", st.Replicas(12))
	spread.UID, spread.ResourceVersion = "spread", "10"
	spread.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided}
	c.UpsertWorkload(spread)
	c.MovingBack(spread.UID, "10")
	c.UpsertWorkload(spread)
	if n := c.Draining(); n != 1 {
		t.Errorf("Moving() = %d with a move back decided, and the copy it was decided from seen again, want 1", n)
	}
	moving := spread.DeepCopy()
	moving.ResourceVersion, moving.Status.Rebalancing = "11", &v1alpha1.Rebalancing{Generation: 1}
	c.UpsertWorkload(moving)
	if n := c.Draining(); n != 1 {
		t.Errorf("Moving() = %d with status.rebalancing, want 1", n)
	}
	moved := spread.DeepCopy()
	moved.ResourceVersion = "12"
	c.UpsertWorkload(moved)
	if n := c.Draining(); n != 0 {
		t.Errorf("Moving() = %d once status.rebalancing went, want 0", n)
	}
	c.MovingBack(spread.UID, "12")
	c.UpsertWorkload(moving)
	c.DeleteWorkload(moving)
	// Its record's write answered after the deletion was seen.
	c.KeepMovingBack(spread.UID, "13")
	if n := c.Draining(); n != 0 {
		t.Errorf("Moving() = %d once the Workload moving back was deleted, want 0", n)
	}
	// A claim whose record was not written is forgotten.
	c.MovingBack("unwritten", "20")
	c.ForgetMovingBack("unwritten")
	if n := c.Draining(); n != 0 {
		t.Errorf("Moving() = %d after a move back's unwritten claim was forgotten, want 0", n)
	}
}
