package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	schedulerctrl "github.com/placer-dev/placer/controllers/scheduler"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

func divided(min, max int32, weights ...v1alpha1.StaticClusterWeight) st.WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided, StaticWeights: weights}
		if min > 0 || max > 0 {
			w.Spec.Placement.ReplicaScheduling.SpreadConstraints = []v1alpha1.SpreadConstraint{{TopologyKey: v1alpha1.LabelRegion, MinGroups: min, MaxGroups: max}}
		}
	}
}

// sharesOf waits until the Workload's shares are what cond wants, and
// returns them by cluster name.
func (e *schedulerEnv) sharesOf(parent string, cond func(map[string]*v1alpha1.Workload) bool) map[string]*v1alpha1.Workload {
	e.t.Helper()
	var got map[string]*v1alpha1.Workload
	w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: parent}}
	// Each change of a share brings the parent's status along: wait on it.
	testenv.WaitFor(e.t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(*v1alpha1.Workload) bool {
		l := &v1alpha1.WorkloadList{}
		if err := e.env.Client.List(context.Background(), l, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelShareOf: parent}); err != nil {
			e.t.Fatal(err)
		}
		got = map[string]*v1alpha1.Workload{}
		for i := range l.Items {
			if l.Items[i].DeletionTimestamp == nil {
				got[l.Items[i].Spec.TargetCluster.Name] = &l.Items[i]
			}
		}
		return cond(got)
	})
	return got
}

func sum(shares map[string]*v1alpha1.Workload) int {
	n := 0
	for _, s := range shares {
		n += s.ReplicaCount()
	}
	return n
}

// TestDividedWorkload: a Divided Workload becomes shares, one Workload per
// cluster, pinned there and placed by the scheduler like any other; its
// status adds them up; scaling changes only the difference; a share its
// cluster rejected gives its replicas to the others; a Duplicated Workload
// gains a share in a cluster labelled later; the API refuses what cannot be.
func TestDividedWorkload(t *testing.T) {
	ctx := context.Background()
	e := newSchedulerEnv(t).namespace(t, "divided")
	e.cluster("a", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
	e.cluster("b", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("2", "100Gi", "0", "0", "2", "100Gi"))
	e.cluster("c", st.Labels(v1alpha1.LabelRegion, "us"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
	e.workload("web", st.Replicas(12), st.Requests("1", "1Gi"), divided(2, 0))

	shares := e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 12 })
	if len(shares) != 3 || shares["b"].ReplicaCount() > 2 {
		t.Errorf("shares %v: want a, b (at most its room of 2) and c", counts(shares))
	}
	for name, s := range shares {
		if !metav1.IsControlledBy(s, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{UID: e.get("web").UID}}) || s.Name != "web-"+name || s.Spec.Placement.ReplicaScheduling != nil {
			t.Errorf("share %s: owner %v, spread %v", s.Name, s.OwnerReferences, s.Spec.Placement.ReplicaScheduling)
		}
		e.wantPlaced(s.Name, name)
	}
	parent := e.get("web")
	if len(parent.Status.Placements) != 3 || parent.Status.ClusterRef != nil || !strings.Contains(parent.Status.GetCondition(v1alpha1.TypeScheduled).Message, "divided 12 replicas over 3") {
		t.Errorf("status: placements %v, clusterRef %v, Scheduled %q", parent.Status.Placements, parent.Status.ClusterRef, parent.Status.GetCondition(v1alpha1.TypeScheduled).Message)
	}

	// kubectl get workloads -o wide: the SHARES column names the clusters.
	if got, want := sharesColumn(t, e, "web"), fmt.Sprintf("a=%d,b=%d,c=%d", shares["a"].ReplicaCount(), shares["b"].ReplicaCount(), shares["c"].ReplicaCount()); got != want {
		t.Errorf("SHARES column %q, want %q", got, want)
	}

	// The propagator does not run here: the shares' ready replicas are set
	// by hand, and the parent adds them up.
	for _, s := range shares {
		e.shareStatus(s.Name, func(s *v1alpha1.Workload) {
			s.Status.ReadyReplicas, s.Status.ObservedGeneration = int32(s.ReplicaCount()), s.Generation
		})
	}
	w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"}}
	testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		return w.Status.ReadyOfDesired == "12/12" && w.Status.GetCondition("Ready").Status == corev1.ConditionTrue
	})

	// Scaled up by 3, only the difference is added.
	before := counts(shares)
	e.scale("web", 15)
	shares = e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 15 })
	for name, n := range counts(shares) {
		if n < before[name] {
			t.Errorf("scaling up took a replica from %s: %d → %d", name, before[name], n)
		}
	}

	// c cordoned: its share stays as it is (as a placed Workload stays),
	// and takes none of one more replica.
	cc := &v1alpha1.KubernetesCluster{}
	if err := e.env.Client.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "c"}, cc); err != nil {
		t.Fatal(err)
	}
	cc.Spec.Unschedulable = true
	if err := e.env.Client.Update(ctx, cc); err != nil {
		t.Fatal(err)
	}
	before = counts(shares)
	e.scale("web", 16)
	shares = e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 16 })
	if got := counts(shares); got["c"] != before["c"] {
		t.Errorf("cordoned c's share went from %d to %d; want it kept as it is", before["c"], got["c"])
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.env.Client.Get(ctx, client.ObjectKeyFromObject(cc), cc); err != nil {
			return err
		}
		cc.Spec.Unschedulable = false
		return e.env.Client.Update(ctx, cc)
	})
	if err != nil {
		t.Fatal(err)
	}

	// Cluster a rejects its share: its replicas go to b and c (within
	// their room), and the Workload keeps the rejection.
	e.shareStatus(shares["a"].Name, func(a *v1alpha1.Workload) {
		a.Status.ReadyReplicas = 0
		a.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: e.ns}, Reason: "Unschedulable",
			Message: "0/3 nodes are available", Generation: a.Generation, Time: ptr.To(metav1.Now()), RetryAfter: ptr.To(metav1.NewTime(metav1.Now().Add(time.Hour)))}}
	})
	shares = e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return s["a"] == nil })
	if got := counts(shares); got["b"] > 2 || sum(shares) != 12 {
		// b has room for 2 and c for 10: 4 of the 16 find no room.
		t.Errorf("after a's rejection: %v, want b at most 2 and 12 placed", got)
	}
	if parent := e.get("web"); parent.Rejection(types.NamespacedName{Namespace: e.ns, Name: "a"}) == nil ||
		!strings.Contains(parent.Status.GetCondition(v1alpha1.TypeScheduled).Message, "found no room") {
		t.Errorf("the parent: rejections %v, Scheduled %q", parent.Status.RejectedClusters, parent.Status.GetCondition(v1alpha1.TypeScheduled).Message)
	}

	// Scaled to zero, no share is left.
	e.scale("web", 0)
	e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return len(s) == 0 })

	t.Run("Duplicated", func(t *testing.T) {
		e := e.namespace(t, "duplicated")
		e.cluster("x", st.Labels("tier", "prod"))
		y := e.cluster("y", st.Labels("tier", "dev"))
		e.workload("cache", st.Replicas(2), st.Selector("tier", "prod"), func(w *v1alpha1.Workload) {
			w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDuplicated}
		})
		e.sharesOf("cache", func(s map[string]*v1alpha1.Workload) bool {
			return len(s) == 1 && s["x"] != nil && s["x"].ReplicaCount() == 2
		})
		y.Labels["tier"] = "prod"
		if err := e.env.Client.Update(ctx, y); err != nil {
			t.Fatal(err)
		}
		e.sharesOf("cache", func(s map[string]*v1alpha1.Workload) bool {
			return len(s) == 2 && s["y"] != nil && s["y"].ReplicaCount() == 2
		})
	})

	t.Run("batch: the Workload completes when every share has", func(t *testing.T) {
		e := e.namespace(t, "batch")
		e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"))
		e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"))
		e.workload("job", st.Replicas(4), divided(2, 0))
		shares := e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 4 && len(s) == 2 })
		for _, sh := range shares {
			e.shareFinished(sh.Name)
		}
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "job"}}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(v1alpha1.TypeComplete).Status == corev1.ConditionTrue && w.Status.Succeeded == 4
		})
	})

	// Before, a share that had run to its end (Ready 0) held every other
	// share that must leave: q's went on beside its replacement in r,
	// the same work run twice, and q's place under the move bound held.
	t.Run("batch: a share that must leave goes once its replacement is Ready, beside a share that ran to its end", func(t *testing.T) {
		e := e.namespace(t, "batch-moves")
		e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"))
		e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"))
		e.seen("p", "q")
		e.workload("job", st.Replicas(4), divided(2, 0))
		shares := e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 4 && s["p"] != nil && s["q"] != nil })
		e.shareFinished(shares["p"].Name)
		e.shareReady(shares["q"].Name)
		e.cluster("r", st.Labels(v1alpha1.LabelRegion, "ap"))
		e.seen("r")
		e.maintenance("q")
		moved := e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool { return s["r"] != nil })
		e.shareReady(moved["r"].Name)
		e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool { return s["q"] == nil && s["r"] != nil && s["p"] != nil })
	})

	// Before, a share in a cluster the scheduler's cache no longer held
	// stopped the division: the Workload was looked at again every second,
	// and never divided again (a scale-up never placed).
	t.Run("batch: a share that ran to its end in a cluster since deleted counts as done; the rest divide over the living clusters", func(t *testing.T) {
		e := e.namespace(t, "batch-deleted")
		e.regions()
		e.workload("job", st.Replicas(6), divided(2, 0))
		shares := e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 6 && s["p"] != nil })
		done := shares["p"]
		e.shareFinished(done.Name)
		e.deleteCluster("p")
		e.scale("job", 8)
		after := e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool {
			return s["p"] != nil && s["q"] != nil && s["r"] != nil && s["q"].ReplicaCount()+s["r"].ReplicaCount() == 8-done.ReplicaCount()
		})
		if p := after["p"]; p.UID != done.UID || p.ReplicaCount() != done.ReplicaCount() {
			t.Errorf("p's share %s (%d replicas): want the finished share %s kept as it was (%d)", p.UID, p.ReplicaCount(), done.UID, done.ReplicaCount())
		}
		e.shareFinished(after["q"].Name)
		e.shareFinished(after["r"].Name)
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "job"}}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(v1alpha1.TypeComplete).Status == corev1.ConditionTrue && w.Status.Succeeded == 8
		})
		if !slices.ContainsFunc(w.Status.Placements, func(pl v1alpha1.SharePlacement) bool {
			return pl.Cluster.Name == "p" && strings.Contains(pl.Reason, "since deleted")
		}) {
			t.Errorf("placements %+v: want p's share listed, in a cluster since deleted", w.Status.Placements)
		}
	})

	t.Run("batch: a spread constraint's minGroups counts the domain of a share that ran to its end in a cluster since deleted", func(t *testing.T) {
		e := e.namespace(t, "batch-groups")
		e.regions()
		e.workload("job", st.Replicas(3), divided(3, 0))
		shares := e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool { return len(s) == 3 && sum(s) == 3 })
		e.shareFinished(shares["p"].Name)
		e.deleteCluster("p")
		// 3 replicas remain to divide over q and r: 3 groups are met
		// with p's, which the division does not see.
		e.scale("job", 4)
		e.sharesOf("job", func(s map[string]*v1alpha1.Workload) bool {
			return s["p"] != nil && s["q"] != nil && s["r"] != nil && s["q"].ReplicaCount()+s["r"].ReplicaCount() == 3
		})
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "job"}}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			c := w.Status.GetCondition(v1alpha1.TypeScheduled)
			return c.Status == corev1.ConditionTrue && c.ObservedGeneration == w.Generation
		})
	})

	t.Run("a share that did not end, in a cluster deleted with no drain, gives its replicas back", func(t *testing.T) {
		e := e.namespace(t, "deleted")
		e.regions()
		e.workload("web", st.Replicas(6), divided(2, 0))
		shares := e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 6 && s["p"] != nil })
		e.deleteCluster("p")
		after := e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return s["p"] == nil && sum(s) == 6 })
		if len(after) != 2 {
			t.Errorf("shares %v (p had %d): want p's replicas divided over q and r", counts(after), shares["p"].ReplicaCount())
		}
	})

	t.Run("a share whose cluster reserved some of its candidates before it rejected the others keeps those, and the rest go to the others", func(t *testing.T) {
		e := e.namespace(t, "partial")
		e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
		e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
		e.workload("web", st.Replicas(8), st.Requests("1", "1Gi"), divided(2, 0))
		before := e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 8 && len(s) == 2 })
		q := before["q"]
		e.shareStatus(q.Name, func(w *v1alpha1.Workload) {
			w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "q", Namespace: e.ns}, Reason: "Unschedulable",
				Message: "0/2 nodes are available: 2 Insufficient cpu.", Generation: w.Generation, Time: ptr.To(metav1.Now()),
				RetryAfter: ptr.To(metav1.NewTime(metav1.Now().Add(time.Hour))), Reserved: 1}}
		})
		after := e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool {
			return s["q"] != nil && s["q"].ReplicaCount() == 1 && sum(s) == 8
		})
		if after["q"].UID != q.UID || after["p"].ReplicaCount() != 8-1 {
			t.Errorf("shares %v (q's UID %s, was %s): want q's own share kept with the 1 replica it reserved, and p with the other 7", counts(after), after["q"].UID, q.UID)
		}
		// The parent's status is written after its shares: waited for.
		why := fmt.Sprintf("q reserved 1 of the %d candidates of its share", q.ReplicaCount())
		parent := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"}}
		testenv.WaitFor(t, e.wc, parent, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			if rc := w.Rejection(types.NamespacedName{Namespace: e.ns, Name: "q"}); rc == nil || rc.Reserved != 1 {
				return false
			}
			return slices.ContainsFunc(w.Status.Placements, func(pl v1alpha1.SharePlacement) bool {
				return pl.Cluster.Name == "q" && strings.Contains(pl.Reason, why)
			})
		})
	})

	t.Run("commit: Together holds every share until each is proven, then lets all go at once; ShareByShare holds none; AllowPartial lets the proven go when the rest fits nowhere", func(t *testing.T) {
		e := e.namespace(t, "together")
		e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
		e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
		commit := func(c v1alpha1.CommitPolicy) st.WorkloadOption {
			return func(w *v1alpha1.Workload) { w.Spec.Placement.ReplicaScheduling.Commit = c }
		}
		held := func(s map[string]*v1alpha1.Workload) int {
			n := 0
			for _, sh := range s {
				if sh.CommitHeld() {
					n++
				}
			}
			return n
		}
		prove := func(sh *v1alpha1.Workload) {
			e.shareStatus(sh.Name, func(w *v1alpha1.Workload) {
				w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonProven, "every replica is reserved", w.Generation))
			})
		}

		e.workload("gang", st.Replicas(4), st.Requests("1", "1Gi"), divided(2, 0))
		shares := e.sharesOf("gang", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 4 && len(s) == 2 && held(s) == 2 })
		prove(shares["p"])
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "gang"}}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			return strings.Contains(w.Status.GetCondition("Ready").Message, "1 of 2 share(s) proven")
		})
		if got := e.sharesOf("gang", func(map[string]*v1alpha1.Workload) bool { return true }); held(got) != 2 {
			t.Errorf("%d of 2 shares held with one proven: want both held until the other is proven", held(got))
		}
		prove(shares["q"])
		e.sharesOf("gang", func(s map[string]*v1alpha1.Workload) bool { return len(s) == 2 && held(s) == 0 })

		// Held shares whose Workload turns to ShareByShare are let go.
		e.workload("switch", st.Replicas(2), st.Requests("1", "1Gi"), divided(2, 0))
		e.sharesOf("switch", func(s map[string]*v1alpha1.Workload) bool { return len(s) == 2 && held(s) == 2 })
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			w := e.get("switch")
			w.Spec.Placement.ReplicaScheduling.Commit = v1alpha1.CommitShareByShare
			return e.env.Client.Update(context.Background(), w)
		})
		if err != nil {
			t.Fatal(err)
		}
		e.sharesOf("switch", func(s map[string]*v1alpha1.Workload) bool { return len(s) == 2 && held(s) == 0 })

		e.workload("each", st.Replicas(4), st.Requests("1", "1Gi"), divided(2, 0), commit(v1alpha1.CommitShareByShare))
		if got := e.sharesOf("each", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 4 }); held(got) != 0 {
			t.Errorf("ShareByShare: %d shares held", held(got))
		}

		// 30 replicas, room for 20: the rest fits nowhere. Each in a
		// namespace, and clusters, of its own.
		envs := map[v1alpha1.CommitPolicy]*schedulerEnv{}
		for _, policy := range []v1alpha1.CommitPolicy{v1alpha1.CommitAllowPartial, v1alpha1.CommitTogether} {
			e := e.namespace(t, "unplaced-"+strings.ToLower(string(policy)))
			envs[policy] = e
			e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
			e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
			e.workload("big", st.Replicas(30), st.Requests("1", "1Gi"), divided(2, 0), commit(policy))
			for _, sh := range e.sharesOf("big", func(s map[string]*v1alpha1.Workload) bool { return sum(s) == 20 && held(s) == 2 }) {
				e.shareStatus(sh.Name, func(w *v1alpha1.Workload) {
					w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonProven, "every replica is reserved", w.Generation))
				})
			}
		}
		envs[v1alpha1.CommitAllowPartial].sharesOf("big", func(s map[string]*v1alpha1.Workload) bool { return held(s) == 0 })
		together := envs[v1alpha1.CommitTogether]
		testenv.WaitFor(t, together.wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: together.ns, Name: "big"}}, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			return strings.Contains(w.Status.GetCondition("Ready").Message, "2 of 2 share(s) proven")
		})
		if got := together.sharesOf("big", func(map[string]*v1alpha1.Workload) bool { return true }); held(got) != 2 {
			t.Errorf("Together with replicas that fit nowhere: %d of 2 shares held, want both (%s)", held(got), together.get("big").Status.GetCondition("Ready").Message)
		}
	})

	t.Run("a share tolerating its cluster's NoExecute taint for 2 s moves once that ends, with nothing else to wake the Workload", func(t *testing.T) {
		e := e.namespace(t, "tolerated")
		e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
		e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"), st.Capacity("10", "100Gi", "0", "0", "10", "100Gi"))
		e.workload("web", st.Replicas(4), st.Requests("1", "1Gi"), divided(0, 0), st.TolerateFor("example.com/maintenance", 2))
		// Over both clusters, or p alone when the scheduler's cache had
		// not seen q Ready yet (a busy machine): either way p holds a
		// share, which must move to q once the toleration ends.
		e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return s["p"] != nil && sum(s) == 4 })
		e.maintenance("p")
		e.sharesOf("web", func(s map[string]*v1alpha1.Workload) bool { return s["q"] != nil && s["q"].ReplicaCount() == 4 })
	})

	t.Run("refused", func(t *testing.T) {
		for what, tc := range map[string]struct {
			opt  st.WorkloadOption
			want string
		}{
			"targetCluster": {func(w *v1alpha1.Workload) {
				divided(0, 0)(w)
				w.Spec.TargetCluster = &v1alpha1.ClusterReference{Name: "a"}
			}, "spec.targetCluster"},
			"minGroups above maxGroups": {divided(3, 2), "maxGroups: Invalid value"},
			"weights of a Duplicated Workload": {func(w *v1alpha1.Workload) {
				w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDuplicated, StaticWeights: []v1alpha1.StaticClusterWeight{{Weight: 1}}}
			}, "staticWeights"},
			"commit of a Single Workload": {func(w *v1alpha1.Workload) {
				w.Spec.Placement.ReplicaScheduling = &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingSingle, Commit: v1alpha1.CommitTogether}
			}, "spec.placement.replicaScheduling.commit"},
			"StopBeforeStart of a Divided Workload": {func(w *v1alpha1.Workload) {
				divided(0, 0)(w)
				w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart
			}, "spec.placement.move: Invalid value"},
			"commit of another word": {func(w *v1alpha1.Workload) {
				divided(0, 0)(w)
				w.Spec.Placement.ReplicaScheduling.Commit = "Eventually"
			}, "spec.placement.replicaScheduling.commit: Unsupported value"},
		} {
			w := st.Workload("refused", st.WNamespace(e.ns), tc.opt)
			w.UID = ""
			if err := e.env.Client.Create(ctx, w); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v, want a refusal naming %s", what, err, tc.want)
			}
		}
		w := e.get("web")
		w.Spec.Placement.ReplicaScheduling = nil
		if err := e.env.Client.Update(ctx, w); err == nil || !strings.Contains(err.Error(), "may not change") {
			t.Errorf("a Divided Workload made Single: %v", err)
		}
	})
}

// sharesColumn is the SHARES column of the Workload as the API server
// prints it for kubectl (a Table).
func sharesColumn(t *testing.T, e *schedulerEnv, name string) string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.env.Config)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/apis/compute.placer.dev/v1alpha1/namespaces", e.ns, "workloads", name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	table := &metav1.Table{}
	if err := json.Unmarshal(b, table); err != nil {
		t.Fatal(err)
	}
	for i, c := range table.ColumnDefinitions {
		if c.Name == "SHARES" && len(table.Rows) == 1 {
			return fmt.Sprint(table.Rows[0].Cells[i])
		}
	}
	t.Fatalf("no SHARES column in %s", b)
	return ""
}

func counts(shares map[string]*v1alpha1.Workload) map[string]int {
	out := map[string]int{}
	for name, s := range shares {
		out[name] = s.ReplicaCount()
	}
	return out
}

// scale sets a Workload's replicas.
func (e *schedulerEnv) scale(name string, n int32) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := e.get(name)
		w.Spec.TargetDeployment.Replicas = &n
		return e.env.Client.Update(context.Background(), w)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// shareStatus changes a share's status as the propagator would, from its
// latest copy (the scheduler writes it too).
func (e *schedulerEnv) shareStatus(name string, change func(*v1alpha1.Workload)) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := e.get(name)
		change(w)
		return e.env.Client.Status().Update(context.Background(), w)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// shareReady: every replica of the share is scheduled and Ready, for its
// spec as it is, as the propagator would count it.
func (e *schedulerEnv) shareReady(name string) {
	e.t.Helper()
	e.shareStatus(name, func(w *v1alpha1.Workload) {
		w.Status.ReadyReplicas, w.Status.ScheduledReplicas, w.Status.ObservedGeneration = int32(w.ReplicaCount()), int32(w.ReplicaCount()), w.Generation
	})
}

// shareFinished: every replica of the share ran to its end and
// succeeded, for its spec as it is, as the propagator would say it.
func (e *schedulerEnv) shareFinished(name string) {
	e.t.Helper()
	e.shareStatus(name, func(w *v1alpha1.Workload) {
		fin, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "done", w.Generation)
		w.Status.SetConditions(fin, ready)
		w.Status.Succeeded, w.Status.ObservedGeneration = int32(w.ReplicaCount()), w.Generation
	})
}

// regions makes the clusters p, q and r, in regions eu, us and ap, and
// waits until the scheduler's cache holds them.
func (e *schedulerEnv) regions() {
	e.t.Helper()
	e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"))
	e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"))
	e.cluster("r", st.Labels(v1alpha1.LabelRegion, "ap"))
	e.seen("p", "q", "r")
}

// maintenance taints the cluster example.com/maintenance:NoExecute, its
// timeAdded as the cluster controller (not run here) stamps it.
func (e *schedulerEnv) maintenance(name string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		kc := &v1alpha1.KubernetesCluster{}
		if err := e.env.Client.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, kc); err != nil {
			return err
		}
		kc.Spec.Taints = []v1alpha1.ClusterTaint{{Key: "example.com/maintenance", Effect: v1alpha1.TaintEffectNoExecute, TimeAdded: ptr.To(metav1.Now())}}
		return e.env.Client.Update(context.Background(), kc)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// released lets a share being deleted go, as the propagator (not run
// here) does once nothing of it is left in its member: the scheduler
// makes its shares with the propagator's finalizer.
func (e *schedulerEnv) released(sh *v1alpha1.Workload) {
	e.t.Helper()
	if !slices.Contains(sh.Finalizers, v1alpha1.FinalizerPropagator) {
		e.t.Errorf("share %s was made with finalizers %v, want %s", sh.Name, sh.Finalizers, v1alpha1.FinalizerPropagator)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &v1alpha1.Workload{}
		if err := e.env.Client.Get(context.Background(), client.ObjectKeyFromObject(sh), w); err != nil {
			return client.IgnoreNotFound(err)
		}
		w.Finalizers = nil
		return client.IgnoreNotFound(e.env.Client.Update(context.Background(), w))
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// deleteCluster deletes a cluster and waits until it is gone (the cluster
// controller, whose drain would hold it, is not run here).
func (e *schedulerEnv) deleteCluster(name string) {
	e.t.Helper()
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	if err := e.env.Client.Delete(context.Background(), kc); err != nil {
		e.t.Fatal(err)
	}
	testenv.WaitForDeletion(e.t, e.wc, kc, &v1alpha1.KubernetesClusterList{}, waitTimeout)
}

func (e *schedulerEnv) get(name string) *v1alpha1.Workload {
	e.t.Helper()
	w := &v1alpha1.Workload{}
	if err := e.env.Client.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, w); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// TestDividedMovesBounded: the shares that leave a drained cluster count
// under --max-concurrent-moves as Workloads do: with a bound of 1, one
// Workload's share moves while another's waits in its cluster, saying so,
// and moves once the first move ends (its old share gone).
func TestDividedMovesBounded(t *testing.T) {
	ctx := context.Background()
	e := newSchedulerEnvWith(t, schedulerctrl.Options{MaxConcurrentMoves: 1}).namespace(t, "bounded")
	e.cluster("p", st.Labels(v1alpha1.LabelRegion, "eu"), st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi"))
	e.cluster("q", st.Labels(v1alpha1.LabelRegion, "us"), st.Capacity("100", "1000Gi", "0", "0", "100", "1000Gi"))
	ready := func(sh *v1alpha1.Workload) {
		e.shareStatus(sh.Name, func(w *v1alpha1.Workload) {
			w.Status.ReadyReplicas, w.Status.ScheduledReplicas, w.Status.ObservedGeneration = int32(w.ReplicaCount()), int32(w.ReplicaCount()), w.Generation
		})
	}
	for _, name := range []string{"one", "two"} {
		e.workload(name, st.Replicas(4), st.Requests("1", "1Gi"), divided(0, 0))
		for _, sh := range e.sharesOf(name, func(s map[string]*v1alpha1.Workload) bool { return len(s) == 2 && sum(s) == 4 }) {
			ready(sh)
		}
	}
	p := &v1alpha1.KubernetesCluster{}
	if err := e.env.Client.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "p"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Taints = []v1alpha1.ClusterTaint{{Key: "example.com/maintenance", Effect: v1alpha1.TaintEffectNoExecute}}
	if err := e.env.Client.Update(ctx, p); err != nil {
		t.Fatal(err)
	}
	leaving := func(s map[string]*v1alpha1.Workload) bool {
		return s["p"] != nil && s["p"].Annotations[v1alpha1.AnnotationShareLeaving] == v1alpha1.ReasonTainted
	}
	// One of the two moves: its share in q takes all 4, and its share in p
	// is marked; the other's share in p waits, unmarked, and says why.
	var moving, waiting string
	testenv.WaitFor(t, e.wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "two"}}, &v1alpha1.WorkloadList{}, waitTimeout, func(*v1alpha1.Workload) bool {
		one, two := e.sharesOf("one", func(map[string]*v1alpha1.Workload) bool { return true }), e.sharesOf("two", func(map[string]*v1alpha1.Workload) bool { return true })
		switch {
		case leaving(one) && !leaving(two):
			moving, waiting = "one", "two"
		case leaving(two) && !leaving(one):
			moving, waiting = "two", "one"
		case leaving(one) && leaving(two):
			t.Fatal("both shares in p were marked leaving with --max-concurrent-moves=1")
		}
		return moving != "" && strings.Contains(e.get(waiting).Status.Placements[0].Reason, "must leave its cluster (cluster bounded/p has the NoExecute taint example.com/maintenance")
	})
	// The move ends: its share in q, grown to 4, is Ready, and the old share goes.
	ready(e.sharesOf(moving, func(s map[string]*v1alpha1.Workload) bool { return s["q"] != nil && s["q"].ReplicaCount() == 4 })["q"])
	// The old share, deleted, stays until the propagator (not run here)
	// lets it go: the move counts until then.
	old := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: moving + "-p"}}
	testenv.WaitFor(t, e.wc, old, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool { return w.DeletionTimestamp != nil })
	e.released(old)
	testenv.WaitForDeletion(t, e.wc, old, &v1alpha1.WorkloadList{}, waitTimeout)
	// Then the other moves.
	e.sharesOf(waiting, func(s map[string]*v1alpha1.Workload) bool {
		return leaving(s) && s["q"] != nil && s["q"].ReplicaCount() == 4
	})
}
