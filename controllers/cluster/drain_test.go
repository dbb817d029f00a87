package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/internal/eventtest"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// TestDrain: a deleted cluster is held while a Workload is placed on it,
// or, while it answers, still leaving it; one that does not answer is let
// go once its Workloads have moved; a Workload only nominated there (a
// runner-up, with nothing left there) does not hold it.
func TestDrain(t *testing.T) {
	deleting := st.Deleting(time.Now(), clusterFinalizer)
	leftA := leftFrom("a")
	// beingDeleted: the Workload was deleted; its finalizer waits for its cleanup.
	beingDeleted := func(w *v1alpha1.Workload) {
		w.DeletionTimestamp, w.Finalizers = ptr.To(metav1.Now()), []string{v1alpha1.FinalizerPropagator}
	}
	next := reconcile.Result{RequeueAfter: 30 * time.Second}
	cases := []struct {
		name    string
		cluster *v1alpha1.KubernetesCluster
		w       *v1alpha1.Workload
		// there: the member a holds a candidate of the Workload.
		there bool
		// unlisted: a's chaperons cannot be listed.
		unlisted bool
		// unwatched: the candidate there is not in a's watch yet.
		unwatched bool
		// unsynced: a's chaperons are not watched (its CRDs went first).
		unsynced bool
		// crdGone: a's chaperons are watched (a watch listed before), but
		// its API server no longer serves them (placer's CRDs went).
		crdGone bool
		// withheld: a's connection serves no one (its member has not
		// shown who it is yet).
		withheld bool
		// twinB: b is registered, the same member as a.
		twinB bool
		// held: the finalizer stays, the probe's requeue is kept.
		held   bool
		reason string
	}{
		{name: "a Workload placed there holds it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a")), held: true, reason: string(reasonDraining)},
		{name: "a Workload still leaving a cluster that answers holds it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), leftA), held: true, reason: string(reasonDraining)},
		{name: "one that does not answer is let go, naming what may remain", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonUnreachable)), w: st.Workload("w", st.PlacedOn("b"), leftA), reason: string(reasonLetGo)},
		// Before, any cluster not Ready was taken for one that does not
		// answer: let go, its old copies ran on beside the new ones.
		{name: "a Workload still leaving a cluster that answers but is not Ready (its candidate scheduler stopped) holds it", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonCandidateSchedulerNotRunning)),
			w: st.Workload("w", st.PlacedOn("b"), leftA), held: true, reason: string(reasonDraining)},
		{name: "a cluster that answers but is not Ready, whose chaperons are not watched (placer's CRDs went first), is let go: nothing could be cleaned up there", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonAgentNotRunning)),
			w: st.Workload("w", st.PlacedOn("b"), leftA), unsynced: true, reason: string(reasonLetGo)},
		{name: "a cluster that answers but is not Ready, whose watch listed before placer's CRDs went, is let go: a live read finds no chaperon kind", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonAgentNotRunning)),
			w: st.Workload("w", st.PlacedOn("b"), leftA), there: true, crdGone: true, reason: string(reasonLetGo)},
		{name: "a Workload being deleted holds a cluster that answers but is not Ready (its agent stopped) while it cleans up there", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonAgentNotRunning)),
			w: st.Workload("w", st.PlacedOn("a"), beingDeleted), there: true, held: true, reason: string(reasonDraining)},
		{name: "a batch Workload that ended there is not waited for to move", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
			complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 1 replicas succeeded in a", w.Generation)
			w.Status.SetConditions(complete, ready)
		})},
		{name: "a batch Workload that ended there holds it while its candidates are there", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a"), func(w *v1alpha1.Workload) {
			complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 1 replicas succeeded in a", w.Generation)
			w.Status.SetConditions(complete, ready)
		}), there: true, held: true, reason: string(reasonDraining)},
		{name: "a Workload being deleted never moves: placed on a cluster that does not answer, it does not hold it", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonUnreachable)),
			w: st.Workload("w", st.PlacedOn("a"), beingDeleted), there: true, reason: string(reasonLetGo)},
		{name: "a Workload being deleted holds a cluster that answers while it cleans up there", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a"), beingDeleted),
			there: true, held: true, reason: string(reasonDraining)},
		{name: "a Workload being deleted with nothing left here does not hold it, whatever holds its own deletion elsewhere", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("a"), beingDeleted)},
		{name: "a runner-up nomination with nothing there does not hold it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), st.Nominated("b", "a"))},
		{name: "a runner-up whose candidates are still there holds it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), st.Nominated("b", "a")),
			there: true, held: true, reason: string(reasonDraining)},
		// Before, the drain looked only at the Workloads the status
		// names: one the scheduler no longer nominated there was not
		// looked at, and its candidates were left behind.
		{name: "a runner-up the scheduler dropped, recorded there, whose candidates are still there holds it", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("b"), func(w *v1alpha1.Workload) {
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a"}, Namespace: "default"}}
			}), there: true, held: true, reason: string(reasonDraining)},
		// Before, only chaperons held the drain: the copies went with the
		// cluster's let-go, left in the member for ever.
		{name: "a Workload placed elsewhere whose copies are still recorded there holds a cluster that answers: its own pass lets them go", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("b"), copiedTo("a")), held: true, reason: string(reasonDraining)},
		{name: "a batch Workload that ended there, its copies recorded there, holds a cluster that answers", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a"), copiedTo("a"), func(w *v1alpha1.Workload) {
			complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 1 replicas succeeded in a", w.Generation)
			w.Status.SetConditions(complete, ready)
		}), held: true, reason: string(reasonDraining)},
		// Before, a Workload being deleted held it by its chaperons alone:
		// the cluster let go before its cleanup visited there, what it
		// copied there was abandoned with the cluster.
		{name: "a Workload being deleted whose copies are still recorded there holds a cluster that answers: its cleanup lets them go", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("b"), copiedTo("a"), beingDeleted), held: true, reason: string(reasonDraining)},
		{name: "a Workload being deleted, its cleanup done (another finalizer keeps it), whose copies are still recorded there does not hold it", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("b"), copiedTo("a"), beingDeleted, func(w *v1alpha1.Workload) { w.Finalizers = []string{"example.com/keep"} })},
		{name: "a Workload being deleted, its cleanup done (another finalizer keeps it), whose abandoned candidate is there does not hold it", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("a"), beingDeleted, func(w *v1alpha1.Workload) { w.Finalizers = []string{"example.com/keep"} }), there: true},
		{name: "a Workload being deleted, its cleanup done (another finalizer keeps it), placed on a cluster that does not answer and whose watch never listed, is not named as left there", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonUnreachable)),
			w: st.Workload("w", st.PlacedOn("a"), beingDeleted, func(w *v1alpha1.Workload) { w.Finalizers = []string{"example.com/keep"} }), unsynced: true},
		{name: "a Workload being deleted whose copies are recorded in a cluster that does not answer does not hold it", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonUnreachable)),
			w: st.Workload("w", st.PlacedOn("b"), copiedTo("a"), beingDeleted)},
		{name: "copies recorded in a cluster that does not answer do not hold it", cluster: st.Cluster("a", deleting, st.NotReady(v1alpha1.ReasonUnreachable)),
			w: st.Workload("w", st.PlacedOn("b"), copiedTo("a"))},
		{name: "copies recorded there by a Workload whose chosen cluster is the same member registered again do not hold it: they stay for that one", cluster: st.Cluster("a", deleting),
			w: st.Workload("w", st.PlacedOn("b"), copiedTo("a")), twinB: true},
		{name: "a runner-up whose candidates cannot be listed holds it: not known is not nothing", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), st.Nominated("b", "a")),
			unlisted: true, held: true, reason: string(reasonDraining)},
		{name: "a Workload being deleted whose candidate the watch has not seen yet holds a cluster that answers", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a"), beingDeleted),
			there: true, unwatched: true, held: true, reason: string(reasonDraining)},
		{name: "a runner-up whose candidates the watch has not seen yet holds it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), st.Nominated("b", "a")),
			there: true, unwatched: true, held: true, reason: string(reasonDraining)},
		// Before, a watch not listed yet (the first pass after a manager
		// restart) counted neither runner-ups nor copies: the cluster was
		// let go, silently, with what they held there.
		{name: "a Ready cluster whose fresh watch has not listed yet (a restart): a runner-up's candidates there hold it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), st.Nominated("b", "a")),
			unsynced: true, held: true, reason: string(reasonDraining)},
		{name: "a Ready cluster whose fresh watch has not listed yet: copies recorded there hold it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), copiedTo("a")),
			unsynced: true, held: true, reason: string(reasonDraining)},
		{name: "a Ready cluster whose connection is withheld (its identity not shown yet): a runner-up's candidates hold it", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("b"), st.Nominated("b", "a")),
			withheld: true, held: true, reason: string(reasonDraining)},
		{name: "a Workload being deleted whose candidates cannot be listed holds a cluster that answers", cluster: st.Cluster("a", deleting), w: st.Workload("w", st.PlacedOn("a"), beingDeleted),
			unlisted: true, held: true, reason: string(reasonDraining)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := indexedClient([]client.Object{tc.cluster, tc.w}, tc.w)
			rec := &eventtest.Recorder{}
			a := clustertest.NewMember("a")
			if tc.there {
				ch := propagator.NewChaperon(tc.w, tc.w.TargetNamespace(nil), 0, propagator.Held)
				if tc.unwatched {
					a = clustertest.NewMember("a", clustertest.NotWatchedYet(ch))
				} else {
					a = clustertest.NewMember("a", clustertest.WithObjects(ch))
				}
			}
			if tc.crdGone {
				a = clustertest.NewMember("a", clustertest.WithInterceptor(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return kerrors.NewNotFound(schema.GroupResource{Group: mcv1alpha1.Group, Resource: "podchaperons"}, "")
				}}))
			}
			if tc.unsynced {
				a = clustertest.NewMember("a", clustertest.NotSynced())
			}
			if tc.unlisted {
				a = clustertest.NewMember("a", clustertest.WithInterceptor(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return errors.New("the watch's cache is gone")
				}}))
			}
			members := clustertest.Members{a}
			if tc.withheld {
				members = nil
			}
			if tc.twinB {
				members = append(members, clustertest.NewMember("b", clustertest.Host(a.HostName)))
			}
			r := &Reconciler{client: c, conns: &fakeConns{members: members}, record: rec}
			kc := &v1alpha1.KubernetesCluster{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(tc.cluster), kc); err != nil {
				t.Fatal(err)
			}
			res, err := r.drain(context.Background(), kc, next)
			if err != nil {
				t.Fatal(err)
			}
			after := &v1alpha1.KubernetesCluster{}
			err = c.Get(context.Background(), client.ObjectKeyFromObject(tc.cluster), after)
			held := err == nil && meta.FinalizerExists(after, clusterFinalizer)
			if held != tc.held {
				t.Errorf("held %v, want %v (get: %v)", held, tc.held, err)
			}
			if tc.held && res != next {
				t.Errorf("Result %+v, want the probe's %+v", res, next)
			}
			if got := rec.Reasons(); tc.reason == "" && len(got) > 0 || tc.reason != "" && (len(got) != 1 || got[0] != tc.reason) {
				t.Errorf("Events %v, want %q", got, tc.reason)
			}
			if tc.reason == string(reasonLetGo) && len(rec.Events) > 0 && !strings.Contains(rec.Events[0].Message, "default/w") {
				t.Errorf("LetGoUnreachable says %q, want it to name default/w, whose pods may remain there", rec.Events[0].Message)
			}
			if tc.held {
				// The same state says nothing new.
				if _, err := r.drain(context.Background(), kc, next); err != nil {
					t.Fatal(err)
				}
				if got := rec.Reasons(); len(got) != 1 {
					t.Errorf("Events %v after a second look at the same state, want one", got)
				}
			}
		})
	}
}

// copiedTo: the Workload's status records a copy it made in the cluster.
func copiedTo(cluster string) st.WorkloadOption {
	return func(w *v1alpha1.Workload) {
		w.Status.Dependencies = append(w.Status.Dependencies, v1alpha1.Dependency{Cluster: v1alpha1.ClusterReference{Name: cluster}, Kind: "ServiceAccount", Name: "runner", Copied: true})
	}
}
