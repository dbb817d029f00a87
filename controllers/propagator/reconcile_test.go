package propagator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/controllers/dependencies"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/internal/chaperontest"
	"github.com/placer-dev/placer/internal/eventtest"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// recorder keeps the Events a reconcile records.
type recorder = eventtest.Recorder

// chaperon states, as a member's agent and candidate scheduler leave them.
// The chaperon states of the handshake, by their short names here.
type mark = chaperontest.Mark

var (
	reserved, allowed, running = chaperontest.Reserved, chaperontest.Allowed, chaperontest.Running
	podScheduledFalse, ended   = chaperontest.PodScheduledFalse, chaperontest.Ended
	createdAgo                 = chaperontest.CreatedAgo
)

// scheduledAgo: the scheduler placed the Workload on its cluster d ago,
// by this process's clock.
func scheduledAgo(d time.Duration) st.WorkloadOption {
	return func(w *v1alpha1.Workload) {
		c := v1alpha1.Scheduled("placed on a", w.Generation)
		c.LastTransitionTime = metav1.NewTime(time.Now().Add(-d))
		w.Status.SetConditions(c)
	}
}

// noHold: the candidate binds as soon as it is reserved.
func noHold(ch *mcv1alpha1.PodChaperon) bool {
	return ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] == "true"
}

// noReservation: the member's own scheduler places the pods.
func noReservation(w *v1alpha1.Workload) { w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation }

// windowed: the candidate may bind unheld only within a window its member
// enforces.
func windowed(ch *mcv1alpha1.PodChaperon) bool {
	_, ok := ch.BindWindow()
	return ok
}

// runnerUp marks a candidate made in a runner-up cluster.
func runnerUp(ch *mcv1alpha1.PodChaperon) {
	metav1.SetMetaDataAnnotation(&ch.ObjectMeta, mcv1alpha1.AnnotationRunnerUp, "true")
}

// candidates returns the Workload's chaperons of replicas 0..n-1 so marked.
func candidates(w *v1alpha1.Workload, n int, marks ...mark) []client.Object {
	out := make([]client.Object, n)
	for i := range n {
		ch := propagator.NewChaperon(w, w.TargetNamespace(nil), i, propagator.Held)
		ch.CreationTimestamp = metav1.Now()
		for _, m := range marks {
			m(ch)
		}
		out[i] = ch
	}
	return out
}

func withFinalizer(w *v1alpha1.Workload) { w.Finalizers = []string{finalizer} }

// heldShare makes the Workload a share of web-parent whose commit is held.
func heldShare(w *v1alpha1.Workload) {
	st.ShareOf("web-parent")(w)
	w.Annotations[v1alpha1.AnnotationCommitHeld] = "true"
}

var nominate = st.Nominated

// windowedThenUnschedulable, between two passes: the candidates made
// carry a bind window, and their member finds them unschedulable.
func windowedThenUnschedulable(t *testing.T, e env) {
	if n := count(t, e.members[0], e.w, windowed); n != 2 {
		t.Fatalf("%d of the candidates carry a bind window, want 2", n)
	}
	chs, err := e.members[0].ChaperonsLive(context.Background(), e.w.UID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range chs {
		podScheduledFalse(corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 Insufficient cpu.")(ch)
		if err := e.members[0].Client.Status().Update(context.Background(), ch); err != nil {
			t.Fatal(err)
		}
	}
}

// notRejectedBeforeTheFence: the cluster whose windowed candidates were
// found unschedulable is not rejected before its member fenced them (a
// node may come, and they bind).
func notRejectedBeforeTheFence(t *testing.T, e env) {
	if len(e.w.Status.RejectedClusters) != 0 {
		t.Errorf("rejected %+v before the member fenced the candidates (they may still bind)", e.w.Status.RejectedClusters)
	}
}

func count(t *testing.T, m *clustertest.Member, w *v1alpha1.Workload, want func(*mcv1alpha1.PodChaperon) bool) int {
	t.Helper()
	chs, err := m.ChaperonsLive(context.Background(), w.UID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ch := range chs {
		if want == nil || want(ch) {
			n++
		}
	}
	return n
}

func isAllowed(ch *mcv1alpha1.PodChaperon) bool {
	return ch.Annotations[mcv1alpha1.AnnotationIsAllowed] == "true"
}

// TestPropagatorReconcile runs Reconcile on in-memory members and a fake
// management client, one decision of the handshake per case.
func TestPropagatorReconcile(t *testing.T) {
	// Each case gets a table of its own: its Workload, members, sources and
	// the counters its interceptors keep are fresh, never left by another.
	for i := range propagatorCases(t) {
		tc := propagatorCases(t)[i]
		t.Run(tc.name, func(t *testing.T) { runPropagatorCase(t, tc) })
	}
}

// timeout is the handshake timeout of the cases.
const timeout = time.Minute

// env is what a case's between and check see.
type env struct {
	w       *v1alpha1.Workload
	members clustertest.Members
	mgmt    client.Client
	rec     *recorder
}

// propagatorCase is one case of TestPropagatorReconcile.
type propagatorCase struct {
	name string
	w    *v1alpha1.Workload
	// clusters holds options of the KubernetesClusters, by name.
	clusters map[string][]st.ClusterOption
	members  func(w *v1alpha1.Workload) clustertest.Members
	// mgmt intercepts the management client.
	mgmt *interceptor.Funcs
	// sources are the objects that go with the pods.
	sources *mapSources
	// maxRunnerUps is --max-runner-up-candidates (none when zero).
	maxRunnerUps int
	// unconnected are KubernetesClusters with no connection (yet).
	unconnected []string
	// wantErr: the (last) reconcile fails, and is retried.
	wantErr bool
	// failFirst: the first of several passes fails (and must), as a
	// transient error of a member would make it.
	failFirst bool
	passes    int
	// between changes the world between passes, with the Workload
	// as the pass before left it.
	between func(t *testing.T, e env)
	want    reconcile.Result
	check   func(t *testing.T, e env)
	// wantStatus, when set, changes the input Workload's status into the
	// one the case expects after its passes, which is compared whole
	// (cmp.Diff; only the times are not).
	wantStatus func(s *v1alpha1.WorkloadStatus)
	// wantMembers, when set, are the candidates each member holds after,
	// by member name, each as candidateOf shows it, in name order.
	wantMembers map[string][]string
}

// rejected: the cluster's first rejection of generation 1, of a Workload
// of desired replicas with nothing ready.
func rejected(desired int, cluster, reason, msg string) func(*v1alpha1.WorkloadStatus) {
	return func(s *v1alpha1.WorkloadStatus) {
		s.RejectedClusters = append(s.RejectedClusters, v1alpha1.RejectedCluster{Cluster: v1alpha1.ClusterReference{Name: cluster, Namespace: "default"},
			Reason: reason, Message: msg, Generation: 1, Attempts: 1})
		s.ReadyOfDesired = fmt.Sprintf("0/%d", desired)
	}
}

// notCounted: the member has judged none of the first candidates yet, so
// the propagator wrote nothing (the scheduler's decision stands alone).
func notCounted(*v1alpha1.WorkloadStatus) {}

// counts: a pass counted replicas, scheduled and ready of them in the
// chosen cluster, for generation 1 of desired replicas, and Ready says
// what ready does.
func counts(desired, replicas, scheduled, ready int32, cond xpv2.Condition) func(*v1alpha1.WorkloadStatus) {
	return func(s *v1alpha1.WorkloadStatus) {
		s.Replicas, s.ScheduledReplicas, s.ReadyReplicas, s.ObservedGeneration = replicas, scheduled, ready, 1
		countedIn(s, s.ClusterRef, replicas)
		s.ReadyOfDesired = fmt.Sprintf("%d/%d", ready, desired)
		s.SetConditions(cond)
	}
}

// countedIn sets the propagator's count of the chosen cluster ref.
func countedIn(s *v1alpha1.WorkloadStatus, ref *v1alpha1.ClusterReference, replicas int32) {
	for i := range s.ClusterCounts {
		if s.ClusterCounts[i].Cluster == *ref {
			s.ClusterCounts[i] = v1alpha1.ClusterCount{Cluster: *ref, Replicas: replicas}
			return
		}
	}
	s.ClusterCounts = append(s.ClusterCounts, v1alpha1.ClusterCount{Cluster: *ref, Replicas: replicas})
}

// refused: the committed cluster refuses generation 1's template, and
// Ready says so; the counts are not written.
func refused(reason, msg string) func(*v1alpha1.WorkloadStatus) {
	return func(s *v1alpha1.WorkloadStatus) {
		s.SetConditions(v1alpha1.NotReady(reason, msg, 1))
		s.ReadyOfDesired = "0/2"
	}
}

// copies are the status.dependencies entries of objects placer copied
// into a cluster, each "Kind/name", in order.
func copies(cluster string, objs ...string) []v1alpha1.Dependency {
	out := make([]v1alpha1.Dependency, len(objs))
	for i, o := range objs {
		kind, name, _ := strings.Cut(o, "/")
		out[i] = v1alpha1.Dependency{Cluster: v1alpha1.ClusterReference{Name: cluster, Namespace: "default"}, Kind: kind, Name: name, Copied: true}
	}
	return out
}

// refusedAfter are a cluster's entries after a pass that copied copied,
// was refused refused (why), and so did not copy rest.
func refusedAfter(cluster, copied, refused, why string, rest ...string) []v1alpha1.Dependency {
	out := copies(cluster, copied, refused)
	out[1].Copied, out[1].Message = false, why
	kind, name, _ := strings.Cut(refused, "/")
	for _, r := range copies(cluster, rest...) {
		r.Copied, r.Message = false, "not copied: the copy of "+kind+" "+name+" before it failed"
		out = append(out, r)
	}
	return out
}

// loseFirstPatch loses (a Conflict, as a write beaten by another writer)
// the first status patch whose body holds text, as a manager killed
// before it would have.
func loseFirstPatch(text string) *interceptor.Funcs {
	lost := false
	return &interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		if data, err := p.Data(o); err == nil && !lost && strings.Contains(string(data), text) {
			lost = true
			return kerrors.NewConflict(schema.GroupResource{Resource: "workloads"}, "web", errFromMember)
		}
		return c.SubResource(sub).Patch(ctx, o, p, opts...)
	}}
}

// serviceNamed: the Workload's Service in member a's namespace ns is
// named by status.placedNamespaces, if it is there.
func serviceNamed(ns string) func(t *testing.T, e env) {
	return func(t *testing.T, e env) {
		t.Helper()
		if e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "web"}, &corev1.Service{}) == nil &&
			!slices.Contains(e.w.PlacedIn(clusterKeyA), ns) {
			t.Errorf("%s holds Service web, and no status names %s: %+v", ns, ns, e.w.Status.PlacedNamespaces)
		}
	}
}

// keptUntilDeleted: the Workload keeps its finalizer, and its candidate
// in member a is deleted (a deletion's first pass).
func keptUntilDeleted(t *testing.T, e env) {
	t.Helper()
	if e.w == nil || len(e.w.Finalizers) == 0 {
		t.Fatal("the finalizer went while a candidate was there")
	}
	if n := count(t, e.members[0], e.w, nil); n != 0 {
		t.Errorf("%d candidates left in a, want it deleted", n)
	}
}

// renameRunnerAndDelete makes the template name ServiceAccount runner2,
// then deletes the Workload.
func renameRunnerAndDelete(t *testing.T, e env) {
	t.Helper()
	ctx := context.Background()
	e.w.Spec.TargetDeployment.Template.Spec.ServiceAccountName = "runner2"
	if err := e.mgmt.Update(ctx, e.w); err != nil {
		t.Fatal(err)
	}
	if err := e.mgmt.Delete(ctx, e.w); err != nil {
		t.Fatal(err)
	}
}

// wantNoRunnerCopies: no member keeps a copy of ServiceAccount runner
// after the Workload's deletion.
func wantNoRunnerCopies(t *testing.T, e env) {
	t.Helper()
	for _, m := range e.members {
		if o := copyIn(t, m, propagator.KindServiceAccount, "runner"); o != nil {
			t.Errorf("the copy of ServiceAccount runner stays in %s after the Workload's deletion, used by %v", m.Key.Name, propagator.Users(o))
		}
	}
}

// both applies two changes of a status.
func both(a, b func(*v1alpha1.WorkloadStatus)) func(*v1alpha1.WorkloadStatus) {
	return func(s *v1alpha1.WorkloadStatus) { a(s); b(s) }
}

// ignoreTimes leaves out of a status comparison the times a pass stamps,
// and the order of the conditions (a set, by type).
var ignoreTimes = cmp.Options{
	cmpopts.SortSlices(func(a, b xpv2.Condition) bool { return a.Type < b.Type }),
	cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime"),
	cmpopts.IgnoreFields(v1alpha1.RejectedCluster{}, "Time", "RetryAfter"),
	cmpopts.IgnoreFields(v1alpha1.LeftCluster{}, "Time"),
}

// candidateOf shows a chaperon by its replica and the marks the handshake
// reads: "0 runner-up reserved allowed".
func candidateOf(ch *mcv1alpha1.PodChaperon) string {
	out := ch.Labels[mcv1alpha1.LabelReplica]
	for _, m := range []struct{ key, name string }{
		{mcv1alpha1.AnnotationRunnerUp, "runner-up"}, {mcv1alpha1.AnnotationAllowWhenReserved, "no-hold"},
		{mcv1alpha1.AnnotationIsReserved, "reserved"}, {mcv1alpha1.AnnotationIsAllowed, "allowed"}, {mcv1alpha1.AnnotationGiveUp, "give-up"},
	} {
		if ch.Annotations[m.key] == "true" {
			out += " " + m.name
		}
	}
	if f := ch.Annotations[mcv1alpha1.AnnotationFenced]; f != "" {
		out += " fenced=" + f
	}
	if ch.DeletionTimestamp != nil {
		out += " deleting"
	}
	return out
}

// wantWhole compares the case's expected status and candidates, when it
// has them, with what its passes left (in before: the input Workload).
func wantWhole(t *testing.T, tc propagatorCase, before *v1alpha1.Workload, e env) {
	t.Helper()
	if tc.wantStatus != nil {
		want := before.Status.DeepCopy()
		tc.wantStatus(want)
		if diff := cmp.Diff(*want, e.w.Status, ignoreTimes); diff != "" {
			t.Errorf("status (-want,+got):\n%s", diff)
		}
	}
	for _, m := range e.members {
		want, ok := tc.wantMembers[m.Key.Name]
		if !ok {
			continue
		}
		chs, err := m.ChaperonsLive(context.Background(), e.w.UID)
		if err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(chs, func(a, b *mcv1alpha1.PodChaperon) int { return strings.Compare(a.Name, b.Name) })
		got := []string{}
		for _, ch := range chs {
			got = append(got, candidateOf(ch))
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("candidates in %s (-want,+got):\n%s", m.Key.Name, diff)
		}
	}
}

// propagatorCases builds the table anew.
func propagatorCases(t *testing.T) []propagatorCase {
	t.Helper()
	// dbGets counts the member's reads of Secret db in the case that wants them.
	var dbGets int
	web := func(opts ...st.WorkloadOption) *v1alpha1.Workload {
		return st.Workload("web", append([]st.WorkloadOption{st.Replicas(2), st.PlacedOn("a"), withFinalizer}, opts...)...)
	}
	forbiddenCreate := clustertest.WithInterceptor(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
		return kerrors.NewForbidden(schema.GroupResource{Group: mcv1alpha1.Group, Resource: "podchaperons"}, o.GetName(), errFromMember)
	}})
	// What the cases' management interceptors saw: a full Update of the
	// Workload (the fake client does not bump generation, so the test
	// watches for the call), and the status a conflicting patch carried.
	var updated bool
	var statusPatches, workloadGets int
	// betweens counts a case's looks between its passes.
	var betweens int
	lostStatus := &v1alpha1.WorkloadStatus{}
	// left: the scheduler moved the Workload from a to b.
	leftAt := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	left := func(w *v1alpha1.Workload) {
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "b", Namespace: "default"}
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonTainted, Time: &leftAt}}
		// As counted while a was chosen.
		w.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Replicas: 2}}
	}
	// countedLeft: the propagator counts n candidates in a, answering the move.
	countedLeft := func(n int32) func(*v1alpha1.WorkloadStatus) {
		return func(s *v1alpha1.WorkloadStatus) {
			a := &v1alpha1.ClusterReference{Name: "a", Namespace: "default"}
			countedIn(s, a, n)
			for i := range s.ClusterCounts {
				if s.ClusterCounts[i].Cluster == *a {
					s.ClusterCounts[i].LeftAt = &leftAt
				}
			}
		}
	}
	// running2: the counts and Ready of two replicas running in a.
	running2 := func(w *v1alpha1.Workload) {
		w.Status.Replicas, w.Status.ScheduledReplicas, w.Status.ReadyReplicas = 2, 2, 2
		w.Status.SetConditions(v1alpha1.Available("2 of 2 replicas ready in a", 1))
	}
	stopFirst := func(w *v1alpha1.Workload) { w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart }
	// bothRunning: the old copy runs in a, the new one in b.
	bothRunning := func(w *v1alpha1.Workload) clustertest.Members {
		return clustertest.Members{
			clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
			clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
		}
	}
	// wantLeft: a stays in leftClusters (the scheduler's), and the
	// propagator's count answers the move with what remains there; a
	// negative remaining: nothing, which lets the scheduler remove it.
	wantLeft := func(t *testing.T, w *v1alpha1.Workload, remaining int32) {
		t.Helper()
		a := types.NamespacedName{Namespace: "default", Name: "a"}
		lc, c := w.Left(a), w.Counted(a)
		switch {
		case lc == nil:
			t.Errorf("a is no longer in leftClusters: the scheduler's to remove")
		case remaining < 0 && w.LeftBehind(lc):
			t.Errorf("a is counted %+v, want nothing left there answering the move at %s", c, lc.Time)
		case remaining >= 0 && (c == nil || c.Replicas != remaining || !w.LeftBehind(lc)):
			t.Errorf("a is counted %+v, want %d remaining there, not let go", c, remaining)
		}
	}
	return []propagatorCase{
		{
			// Before, the chosen cluster was admitted whatever its
			// deletion: a gang of one's candidate bound there while the
			// drain, having listed no Workload, let the cluster go, and
			// the copy was abandoned with it.
			name:     "a chosen cluster being deleted (chosen before the scheduler saw the deletion) gets no candidate: it is rejected",
			clusters: map[string][]st.ClusterOption{"a": {st.Deleting(time.Now(), v1alpha1.FinalizerDrain)}},
			w:        web(),
			members:  func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates made in a cluster being deleted, want 0", n)
				}
				if len(e.w.Status.RejectedClusters) != 1 || e.w.Status.RejectedClusters[0].Reason != v1alpha1.ReasonClusterDeleted {
					t.Errorf("rejected %+v, want a, ClusterDeleted", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name: "a chosen cluster whose Secret is gone (its connection kept a moment for a drain) gets no candidate: it is rejected",
			clusters: map[string][]st.ClusterOption{"a": {func(kc *v1alpha1.KubernetesCluster) {
				kc.Status.SetConditions(xpv2.Condition{Type: xpv2.TypeReady, Status: corev1.ConditionFalse, Reason: v1alpha1.ReasonSecretNotFound})
			}}},
			w:       web(),
			members: func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates made in a cluster whose Secret is gone, want 0", n)
				}
				if len(e.w.Status.RejectedClusters) != 1 || e.w.Status.RejectedClusters[0].Reason != v1alpha1.ReasonSecretNotFound {
					t.Errorf("rejected %+v, want a, SecretNotFound", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name:     "a chosen cluster being deleted where the Workload is committed: what runs goes on until it moves",
			clusters: map[string][]st.ClusterOption{"a": {st.Deleting(time.Now(), v1alpha1.FinalizerDrain)}},
			w:        web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v, where it is committed", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name:    "first pass: the finalizer by a patch, and a candidate per replica in the chosen cluster",
			w:       web(func(w *v1alpha1.Workload) { w.Finalizers = nil }),
			members: func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			mgmt: &interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
				updated = true
				return c.Update(ctx, o, opts...)
			}},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Finalizers) != 1 || e.w.Generation != 1 {
					t.Errorf("finalizers %v, generation %d", e.w.Finalizers, e.w.Generation)
				}
				if updated {
					t.Error("the finalizer was added by a full Update, which writes the client's defaults into the spec")
				}
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want 2", n)
				}
				if got := e.members[0].Tenants; len(got) == 0 || got[0] != "default" {
					t.Errorf("wrote as tenants %v, want default", got)
				}
				// Committed or Rejected tells of them: no Event, no write.
				if got := candidateEvents(e.rec); len(got) != 0 {
					t.Errorf("Events %v for the first candidates in the chosen cluster, want none", got)
				}
			},
		},
		{
			name: "every replica reserved: commit, and the counts",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus:  counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Errorf("%d allowed, want 2", n)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason != "Pending" || e.w.Status.Replicas != 2 {
					t.Errorf("Ready %s %q, replicas %d", c.Reason, c.Message, e.w.Status.Replicas)
				}
				wantReason(t, e.rec, reasonCommitted)
			},
		},
		{
			// Before, nothing recorded the commit but the pass's own write:
			// lost, a was rejected on the handshake's clock once its watch
			// stopped, while its allowed pods ran (and the Workload was
			// placed again elsewhere).
			name:   "a commit whose status write is lost still reads as delivered: its cluster, unwatched after, is not rejected",
			w:      web(scheduledAgo(2 * timeout)),
			mgmt:   loseFirstPatch("0 of 2 replicas ready"),
			passes: 2,
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			between: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Fatalf("%d allowed after the first pass, want 2 (committed)", n)
				}
				// Its link cut: the watch is gone, the pods run on.
				e.members[0].NotSynced = true
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %v while its allowed pods may run there", e.w.Status.RejectedClusters)
				}
				if e.w.Status.Replicas != 2 || e.w.Counted(types.NamespacedName{Namespace: "default", Name: "a"}) == nil {
					t.Errorf("the status does not say it was delivered to a: replicas %d, counts %v", e.w.Status.Replicas, e.w.Status.ClusterCounts)
				}
			},
		},
		{
			// A review found it: the commit's record, unchanged from the
			// second pass on (no replica to count), stopped every pass
			// before Ready, the Service and the clusters left.
			name:   "a Workload of no replicas: every pass goes on past the commit",
			w:      web(st.Replicas(0)),
			passes: 2,
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			between: func(t *testing.T, e env) {
				if e.w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionUnknown {
					t.Fatalf("no Ready after the first pass: %+v", e.w.Status)
				}
				// Taken away: the second pass must write it again.
				e.w.Status.Conditions = slices.DeleteFunc(e.w.Status.Conditions, func(c xpv2.Condition) bool { return c.Type == xpv2.TypeReady })
				if err := e.mgmt.Status().Update(context.Background(), e.w); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, e env) {
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status == corev1.ConditionUnknown {
					t.Errorf("the second pass wrote no Ready: %+v", e.w.Status)
				}
			},
		},
		{
			name: "fan-out: the runner-up gets candidates while the chosen one is not committed",
			w:    web(nominate("a", "b")),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 runner-up", "1 runner-up"}},
			check: func(t *testing.T, e env) {
				for _, m := range e.members {
					if n := count(t, m, e.w, nil); n != 2 {
						t.Errorf("%d candidates in %s, want 2", n, m.Key.Name)
					}
				}
				if n, r := count(t, e.members[0], e.w, (*mcv1alpha1.PodChaperon).HeldRunnerUp), count(t, e.members[1], e.w, (*mcv1alpha1.PodChaperon).HeldRunnerUp); n != 0 || r != 2 {
					t.Errorf("runner-up candidates: %d in the chosen a, %d in b; want 0 and 2", n, r)
				}
				if got := candidateEvents(e.rec); len(got) != 1 || !strings.Contains(got[0], "in default/b") {
					t.Errorf("Events %v, want one for the runner-up b's candidates", got)
				}
			},
		},
		{
			name:         "fan-out bound: a runner-up holding --max-runner-up-candidates gets none, the chosen one its own",
			w:            web(nominate("a", "b")),
			maxRunnerUps: 2,
			members: func(*v1alpha1.Workload) clustertest.Members {
				other := st.Workload("other", st.Replicas(2), func(w *v1alpha1.Workload) { w.UID = "other" })
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b", clustertest.WithObjects(candidates(other, 2, runnerUp)...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {}},
			check: func(t *testing.T, e env) {
				if a, b := count(t, e.members[0], e.w, nil), count(t, e.members[1], e.w, nil); a != 2 || b != 0 {
					t.Errorf("candidates: %d in a, %d in b; want 2 and 0", a, b)
				}
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v: a runner-up passed over is not rejected", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			// b's copy of ServiceAccount runner was made for candidates
			// that have not come yet: b is still nominated, so the copy
			// stays for them rather than going and coming back.
			name:         "fan-out bound: a runner-up passed over keeps the ServiceAccount's copy made for its candidates",
			w:            web(needs, nominate("a", "b"), func(w *v1alpha1.Workload) { w.Status.Dependencies = copies("b", "ServiceAccount/runner") }),
			sources:      theSources(),
			maxRunnerUps: 2,
			members: func(w *v1alpha1.Workload) clustertest.Members {
				other := st.Workload("other", st.Replicas(2), func(w *v1alpha1.Workload) { w.UID = "other" })
				objs := append(candidates(other, 2, runnerUp), usedCopy(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}, string(w.UID)))
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b", clustertest.WithObjects(objs...))}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.ReadyOfDesired = []v1alpha1.PlacedNamespace{{Cluster: clusterA, Namespace: "default"}}, "0/2"
				s.Dependencies = append(copies("b", "ServiceAccount/runner"), copies("a", "ServiceAccount/runner")...)
			},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {}},
			check: func(t *testing.T, e env) {
				wantCopy(t, e.members[1], propagator.KindServiceAccount, "runner")
			},
		},
		{
			name:         "fan-out bound: a runner-up holding one fewer than the bound gets its candidates",
			w:            web(nominate("a", "b")),
			maxRunnerUps: 3,
			members: func(*v1alpha1.Workload) clustertest.Members {
				other := st.Workload("other", st.Replicas(2), func(w *v1alpha1.Workload) { w.UID = "other" })
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b", clustertest.WithObjects(candidates(other, 2, runnerUp)...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 runner-up", "1 runner-up"}},
			check: func(t *testing.T, e env) {
				if b := count(t, e.members[1], e.w, (*mcv1alpha1.PodChaperon).HeldRunnerUp); b != 2 {
					t.Errorf("%d runner-up candidates in b, want 2", b)
				}
			},
		},
		{
			name:         "fan-out bound: a runner-up's gang begun before the bound was reached is finished",
			w:            web(nominate("a", "b")),
			maxRunnerUps: 2,
			members: func(w *v1alpha1.Workload) clustertest.Members {
				other := st.Workload("other", st.Replicas(1), func(w *v1alpha1.Workload) { w.UID = "other" })
				mine := candidates(w, 1, runnerUp)
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b", clustertest.WithObjects(append(mine, candidates(other, 1, runnerUp)...)...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 runner-up", "1 runner-up"}},
			check: func(t *testing.T, e env) {
				if b := count(t, e.members[1], e.w, nil); b != 2 {
					t.Errorf("%d candidates in b, want 2: half a gang proves nothing", b)
				}
			},
		},
		{
			name: "a gang of one binds when reserved in the chosen cluster; the runner-up's candidate holds",
			w:    web(st.Replicas(1), nominate("a", "b")),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0 no-hold"}, "b": {"0 runner-up"}},
			check: func(t *testing.T, e env) {
				noHold := func(ch *mcv1alpha1.PodChaperon) bool {
					return ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] == "true"
				}
				if n := count(t, e.members[0], e.w, noHold); n != 1 {
					t.Errorf("%d candidates in a allowed when reserved, want 1", n)
				}
				if n, held := count(t, e.members[1], e.w, nil), count(t, e.members[1], e.w, noHold); n != 1 || held != 0 {
					t.Errorf("b holds %d candidates, %d of them allowed when reserved; want 1 and 0", n, held)
				}
			},
		},
		{
			name: "a share held to commit with the other shares: proven, it waits, Ready False reason Proven, and allows nothing",
			w:    web(heldShare),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus: counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonProven,
				"every replica is reserved in default/a; held until every share of web-parent is proven, then they bind together", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved", "1 reserved"}},
		},
		{
			name: "a held share proven again in the cluster that rejected it before: the rejection is over, as a commit would end it",
			w: web(heldShare, scheduledAgo(time.Second), func(w *v1alpha1.Workload) {
				w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Reason: v1alpha1.ReasonUnschedulable,
					Message: "0/1 nodes are available", Generation: 1, Attempts: 1, Time: ptr.To(metav1.NewTime(time.Now().Add(-time.Minute)))}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus: both(counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonProven,
				"every replica is reserved in default/a; held until every share of web-parent is proven, then they bind together", 1)),
				func(s *v1alpha1.WorkloadStatus) { s.RejectedClusters = nil }),
			wantMembers: map[string][]string{"a": {"0 reserved", "1 reserved"}},
		},
		{
			name: "a held share of one replica: its candidate holds too, no gang of one binding unheld",
			w:    web(heldShare, st.Replicas(1)),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0"}},
		},
		{
			name: "a share whose hold was lifted commits",
			w:    web(st.ShareOf("web-parent")),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus:  counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
		},
		{
			name: "a replica added to a committed cluster binds when reserved",
			w:    web(st.Replicas(3)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed", "2 no-hold"}},
			check: func(t *testing.T, e env) {
				chs, err := e.members[0].Chaperons(context.Background(), e.w.UID)
				if err != nil {
					t.Fatal(err)
				}
				added := 0
				for _, ch := range chs {
					if ch.Labels[mcv1alpha1.LabelReplica] == "2" {
						added++
						if ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved] != "true" {
							t.Error("the added replica's candidate waits for is-allowed in a committed cluster")
						}
					}
				}
				if added != 1 {
					t.Errorf("%d candidates for the added replica, want 1", added)
				}
				if got := candidateEvents(e.rec); len(got) != 1 {
					t.Errorf("Events %v, want one for the candidate added beside the others", got)
				}
			},
		},
		{
			name: "a cluster registered twice is one cluster: committing in one keeps the candidates the other sees",
			w:    web(nominate("a", "a-again")),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...)),
					clustertest.NewMember("a-again", clustertest.Host("https://a.example.com"), clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus:  counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "a-again": {"0 reserved", "1 reserved"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[1], e.w, nil); n != 2 {
					t.Errorf("%d candidates left as seen through a-again, want the 2 of the committed cluster", n)
				}
			},
		},
		{
			name: "the cluster's targetNamespaces mapping decides where the candidates go",
			w:    web(func(w *v1alpha1.Workload) { w.Finalizers = nil }),
			members: func(*v1alpha1.Workload) clustertest.Members {
				m := clustertest.NewMember("a")
				m.Namespaces = map[string]v1alpha1.NamespaceName{"default": "team-a-prod"}
				return clustertest.Members{m}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}},
			check: func(t *testing.T, e env) {
				inMapped := func(ch *mcv1alpha1.PodChaperon) bool { return ch.Namespace == "team-a-prod" }
				if n := count(t, e.members[0], e.w, inMapped); n != 2 {
					t.Errorf("%d candidates in team-a-prod, want 2", n)
				}
			},
		},
		{
			name: "fan-out: the chosen one commits, and the runner-up's candidates go",
			w:    web(nominate("a", "b")),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus:  counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Errorf("%d allowed in a, want 2", n)
				}
				if n := count(t, e.members[1], e.w, nil); n != 0 {
					t.Errorf("%d candidates left in b", n)
				}
			},
		},
		{
			// A rolling update's chaperons, and replicas added to a
			// committed cluster, bind with no hold and no window: no
			// is-reserved, no is-allowed. Before, once such a pod was
			// replaced (evicted, its node drained), its first status
			// (Pending) left nothing counted allowed, and the committed
			// cluster was rejected on the handshake's clock.
			name: "a committed cluster whose only chaperon (made unheld, with no window) has its pod replaced is not rejected",
			w: web(st.Replicas(1), scheduledAgo(10*time.Minute), func(w *v1alpha1.Workload) {
				w.Status.Replicas, w.Status.ReadyReplicas = 1, 1
				countedIn(&w.Status, w.Status.ClusterRef, 1)
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				ch := propagator.NewChaperon(w, w.TargetNamespace(nil), 0, propagator.NoHold)
				ch.CreationTimestamp = metav1.NewTime(time.Now().Add(-5 * time.Minute))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(ch))}
			},
			check: func(t *testing.T, e env) {
				notRejected(t, e, 1, "a committed cluster whose pod is being replaced")
			},
		},
		{
			// The record made before the runner-up's first candidates
			// (dependencies) goes with them: kept, a deletion would wait
			// for b to answer, for nothing.
			name: "fan-out: the runner-up's record goes once its candidates are gone after the commit",
			w: web(nominate("a", "b"), func(w *v1alpha1.Workload) {
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Namespace: "default"}}
			}),
			passes: 2,
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Errorf("%d allowed in a, want 2", n)
				}
				if ns := e.w.PlacedIn(types.NamespacedName{Namespace: "default", Name: "b"}); len(ns) != 0 {
					t.Errorf("b's record %v stays after its candidates went", ns)
				}
			},
		},
		{
			name: "fan-out: a runner-up whose scheduler cannot place them is rejected",
			w:    web(nominate("a", "b")),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2)...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, podScheduledFalse(corev1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu."))...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  rejected(2, "b", v1alpha1.ReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu."),
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {}},
			check: func(t *testing.T, e env) {
				wantRejectedAndEmpty(t, e.w, e.members[1], "b", v1alpha1.ReasonUnschedulable, "Insufficient cpu")
			},
		},
		{
			name: "unschedulable in the chosen cluster: rejected with its scheduler's words, candidates gone",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, podScheduledFalse(corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."))...))}
			},
			wantStatus:  rejected(2, "a", v1alpha1.ReasonUnschedulable, "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejectedAndEmpty(t, e.w, e.members[0], "a", v1alpha1.ReasonUnschedulable, "node affinity/selector")
				wantReason(t, e.rec, reasonRejected)
			},
		},
		{
			name: "the chosen cluster reserves 2 of 3, then finds the third unschedulable: rejected with the count it reserved",
			w:    web(st.Replicas(3)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				objs := candidates(w, 3)
				reserved(objs[0].(*mcv1alpha1.PodChaperon))
				podScheduledFalse(corev1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.")(objs[1].(*mcv1alpha1.PodChaperon))
				reserved(objs[2].(*mcv1alpha1.PodChaperon))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(objs...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				rejected(3, "a", v1alpha1.ReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.")(s)
				s.RejectedClusters[0].Reserved = 2
			},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejectedAndEmpty(t, e.w, e.members[0], "a", v1alpha1.ReasonUnschedulable, "Insufficient cpu")
				wantReason(t, e.rec, reasonRejected)
			},
		},
		{
			name: "a share's cluster finds a candidate unschedulable before it judged the others: wait for their verdicts",
			w:    web(st.Replicas(3), st.ShareOf("web-parent")),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				objs := candidates(w, 3)
				reserved(objs[0].(*mcv1alpha1.PodChaperon))
				podScheduledFalse(corev1.PodReasonUnschedulable, "0/1 nodes are available: 1 Insufficient cpu.")(objs[1].(*mcv1alpha1.PodChaperon))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(objs...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  counts(3, 3, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 3 replicas ready in a; a replica is pending: 0/1 nodes are available: 1 Insufficient cpu.", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved", "1", "2"}},
		},
		{
			name: "no answer within the handshake timeout: rejected",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, createdAgo(2*timeout))...))}
			},
			wantStatus:  rejected(2, "a", propagator.ReasonHandshakeTimeout, "not every candidate was reserved within 1m0s"),
			wantMembers: map[string][]string{"a": {}},
			check:       func(t *testing.T, e env) { wantRejected(t, e.w, "a", propagator.ReasonHandshakeTimeout, "within 1m0s") },
		},
		{
			name: "a member whose clock runs ahead: its candidates look old, but the handshake began just now on this clock: wait",
			w:    web(scheduledAgo(time.Second)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, createdAgo(2*timeout))...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout - time.Second},
			wantStatus:  notCounted,
			wantMembers: map[string][]string{"a": {"0", "1"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v by comparing this clock with the member's timestamps", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			// On f435c1c the age was read from the candidates' timestamps:
			// from the future, they never timed out.
			name: "a member whose clock runs behind: its candidates look made in the future, but the handshake's timeout on this clock has passed: rejected",
			w:    web(scheduledAgo(2 * timeout)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, createdAgo(-10*time.Minute))...))}
			},
			wantStatus:  rejected(2, "a", propagator.ReasonHandshakeTimeout, "not every candidate was reserved within 1m0s"),
			wantMembers: map[string][]string{"a": {}},
			check:       func(t *testing.T, e env) { wantRejected(t, e.w, "a", propagator.ReasonHandshakeTimeout, "within 1m0s") },
		},
		{
			name: "no answer within the handshake timeout, counted on this clock from the placement: rejected",
			w:    web(scheduledAgo(2 * timeout)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2)...))}
			},
			wantStatus:  rejected(2, "a", propagator.ReasonHandshakeTimeout, "not every candidate was reserved within 1m0s"),
			wantMembers: map[string][]string{"a": {}},
			check:       func(t *testing.T, e env) { wantRejected(t, e.w, "a", propagator.ReasonHandshakeTimeout, "within 1m0s") },
		},
		{
			// Its Scheduled condition did not change (the same cluster,
			// chosen again once its rejection ended): the handshake is
			// timed from its new candidates, made by this process.
			name:   "a cluster chosen again on an unchanged placement gets its whole handshake timeout",
			w:      web(scheduledAgo(2 * timeout)),
			passes: 2,
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			wantStatus:  notCounted,
			wantMembers: map[string][]string{"a": {"0", "1"}},
			check: func(t *testing.T, e env) {
				notRejected(t, e, 2, "as soon as its new candidates were there")
			},
		},
		{
			name: "a gang of one past the timeout on this clock is not rejected: it may still bind, and its member's window decides",
			w:    web(st.Replicas(1), scheduledAgo(2*timeout)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout))...))}
			},
			wantStatus:  notCounted,
			wantMembers: map[string][]string{"a": {"0 no-hold"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v while its candidate may still bind there", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			// Its member's agent marks it is-allowed itself before it
			// replaces a pod it loses later (member/agent): a write to a
			// chaperon, which carries a whole pod spec, saved per pod.
			name: "a gang of one bound inside its window is committed with no write to its chaperon",
			w:    web(st.Replicas(1)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout), running)...))}
			},
			wantStatus:  counts(1, 1, 1, 1, v1alpha1.Available("1 of 1 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 no-hold"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 0 {
					t.Errorf("%d candidates marked is-allowed by the manager, want none", n)
				}
			},
		},
		{
			name: "a gang of one the member fenced when its window ended: rejected, the fenced candidate deleted",
			w:    web(st.Replicas(1), scheduledAgo(2*timeout)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout), chaperontest.Fenced(mcv1alpha1.FencedWindow))...))}
			},
			wantStatus:  rejected(1, "a", propagator.ReasonHandshakeTimeout, "the candidate was not bound within its bind window, as the cluster counts it; the cluster fenced it"),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejectedAndEmpty(t, e.w, e.members[0], "a", propagator.ReasonHandshakeTimeout, "bind window")
				wantReason(t, e.rec, reasonFenced)
			},
		},
		{
			// Its deletion after that rejection failed (the member did not
			// answer), and the cluster was chosen again once the
			// rejection's backoff ended.
			name: "a gang of one whose fenced candidate is left from a rejection the status holds: a new candidate, not a second rejection",
			w: web(st.Replicas(1), st.Rejected("a", 1, "placer gave up on the candidate and the cluster fenced it"), func(w *v1alpha1.Workload) {
				rc := &w.Status.RejectedClusters[0]
				rc.Reason, rc.Attempts, rc.RetryAfter = propagator.ReasonHandshakeTimeout, 1, ptr.To(metav1.NewTime(time.Now().Add(-time.Second)))
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout),
					chaperontest.Fenced(mcv1alpha1.FencedGivenUp), chaperontest.RejectionsSeen("1/0"))...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0 no-hold"}},
			check: func(t *testing.T, e env) {
				if rc := e.w.Rejection(types.NamespacedName{Namespace: "default", Name: "a"}); rc == nil || rc.Attempts != 1 {
					t.Errorf("rejection %+v, want the one recorded before (1 attempt)", rc)
				}
				fresh := func(ch *mcv1alpha1.PodChaperon) bool {
					return ch.Annotations[mcv1alpha1.AnnotationFenced] == "" && ch.Annotations[mcv1alpha1.AnnotationRejectionsSeen] == "1/1"
				}
				if n, all := count(t, e.members[0], e.w, fresh), count(t, e.members[0], e.w, nil); n != 1 || all != 1 {
					t.Errorf("%d fresh candidates of %d in a, want the fenced one replaced by one that saw the rejection", n, all)
				}
			},
		},
		{
			name: "a gang of one unschedulable: its member is asked to fence it, and the cluster is rejected only once it has",
			w:    web(st.Replicas(1)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout),
					podScheduledFalse(corev1.PodReasonUnschedulable, "0/3 nodes are available: 3 Insufficient cpu."))...))}
			},
			wantStatus:  counts(1, 1, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 1 replicas ready in a; a replica is pending: 0/3 nodes are available: 3 Insufficient cpu.", 1)),
			wantMembers: map[string][]string{"a": {"0 no-hold give-up"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v before the member fenced the candidate (room may appear there)", e.w.Status.RejectedClusters)
				}
				if n := count(t, e.members[0], e.w, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" }); n != 1 {
					t.Errorf("%d candidates asked to be fenced, want 1", n)
				}
			},
		},
		// NoReservation: the member's own scheduler binds a candidate
		// whenever it can, with no hold. Before, the manager rejected the
		// cluster on a verdict of unschedulable, or on its own clock,
		// while the candidate there could still bind (a node added by an
		// autoscaler), and the Workload was placed again elsewhere: two
		// copies.
		{
			name:   "NoReservation: the candidates carry a bind window their member enforces, and an unschedulable verdict asks the member to fence them before the cluster is rejected",
			w:      web(noReservation),
			passes: 2,
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			between:     windowedThenUnschedulable,
			want:        reconcile.Result{RequeueAfter: timeout},
			wantMembers: map[string][]string{"a": {"0 no-hold give-up", "1 no-hold give-up"}},
			check:       notRejectedBeforeTheFence,
		},
		{
			name: "NoReservation past the timeout on this clock is not rejected: its member's window decides",
			w:    web(noReservation, scheduledAgo(2*timeout)),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, chaperontest.Windowed(timeout), createdAgo(2*timeout))...))}
			},
			wantStatus:  notCounted,
			wantMembers: map[string][]string{"a": {"0 no-hold", "1 no-hold"}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v while its candidates may still bind", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name: "NoReservation, one of two bound (committed): the other is allowed, so that its member never fences it",
			w:    web(noReservation),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				chs := candidates(w, 2, chaperontest.Windowed(timeout))
				running(chs[0].(*mcv1alpha1.PodChaperon))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(chs...))}
			},
			wantMembers: map[string][]string{"a": {"0 no-hold", "1 no-hold allowed"}},
		},
		{
			name:   "NoReservation, committed, a candidate its member fenced (its window ended before it was allowed): made again, allowed",
			w:      web(noReservation),
			passes: 2,
			members: func(w *v1alpha1.Workload) clustertest.Members {
				chs := candidates(w, 2, chaperontest.Windowed(timeout))
				running(chs[0].(*mcv1alpha1.PodChaperon))
				chaperontest.Fenced(mcv1alpha1.FencedWindow)(chs[1].(*mcv1alpha1.PodChaperon))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(chs...))}
			},
			wantMembers: map[string][]string{"a": {"0 no-hold", "1 no-hold"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, windowed); n != 1 {
					t.Errorf("%d candidates with a bind window, want only the bound one: the new one is made in a committed cluster", n)
				}
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v: the cluster is committed", e.w.Status.RejectedClusters)
				}
			},
		},
		// A review found it: the mark was set only when a chaperon was
		// made, and a Workload switched to StopBeforeStart kept it: its
		// agent would replace a pod stuck on a lost node, which may run.
		{
			name: "a Workload switched to StopBeforeStart: the replace-lost mark goes from its chaperons",
			w:    web(func(w *v1alpha1.Workload) { w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart }),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				before := w.DeepCopy()
				before.Spec.Placement.Move = ""
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(before, 2, reserved, allowed, running)...))}
			},
			check: func(t *testing.T, e env) {
				marked := func(ch *mcv1alpha1.PodChaperon) bool {
					return ch.Annotations[mcv1alpha1.AnnotationReplaceLost] == "true"
				}
				if n, all := count(t, e.members[0], e.w, marked), count(t, e.members[0], e.w, nil); n != 0 || all != 2 {
					t.Errorf("%d of %d chaperons still marked replace-lost, want none", n, all)
				}
			},
		},
		{
			name: "the member refused a candidate Pod: rejected at once, in its words",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, podScheduledFalse(mcv1alpha1.ReasonPodRefused, "violates PodSecurity"))...))}
			},
			wantStatus:  rejected(2, "a", mcv1alpha1.ReasonPodRefused, "violates PodSecurity"),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejected(t, e.w, "a", mcv1alpha1.ReasonPodRefused, "violates PodSecurity")
			},
		},
		{
			name: "the member forbids the tenant: rejected with Forbidden",
			w:    web(),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", forbiddenCreate)}
			},
			wantStatus:  rejected(2, "a", v1alpha1.ReasonForbidden, `cannot create PodChaperon: podchaperons.multicluster.placer.dev "web-7d7c8769f7-0" is forbidden: denied by the member`),
			wantMembers: map[string][]string{"a": {}},
			check:       func(t *testing.T, e env) { wantRejected(t, e.w, "a", v1alpha1.ReasonForbidden, "forbidden") },
		},
		{
			// Its watch's first list brings the Workload back (OnSynced);
			// the timeout is the only look it needs besides.
			name: "the chosen member is not synced: wait for its watch to list, not polling, at most the handshake timeout",
			w:    web(scheduledAgo(10 * time.Second)),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced())}
			},
			want:       reconcile.Result{RequeueAfter: timeout - 10*time.Second},
			wantStatus: func(*v1alpha1.WorkloadStatus) {},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %v while not synced", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name: "a committed Workload whose chosen member is not listed yet: not rejected, no runner-up elsewhere, no polling (one look at the timeout)",
			w: web(nominate("a", "b"), scheduledAgo(2*timeout), func(w *v1alpha1.Workload) {
				// Delivered there, its pods not bound at this moment.
				w.Status.Replicas = 2
				w.SetCounted(types.NamespacedName{Namespace: "default", Name: "a"}, 2, nil)
			}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced()), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %v: a committed cluster whose watch has not listed yet", e.w.Status.RejectedClusters)
				}
				if n := count(t, e.members[1], e.w, nil); n != 0 {
					t.Errorf("%d runner-up candidates in b for a Workload committed in a", n)
				}
			},
		},
		{
			name: "a committed Workload whose status was written before clusterCounts, its chosen member not listed yet after the upgrade's restart: its counts are the chosen cluster's, and it is not rejected",
			w: web(nominate("a", "b"), scheduledAgo(2*timeout), func(w *v1alpha1.Workload) {
				w.Status.Replicas = 2
			}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced()), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}, "b": {}},
		},
		{
			name: "a Workload moved to a member whose chaperons were never listed, the counts still those of the cluster it left: rejected after the handshake timeout, not waited for",
			w: web(nominate("a", "b"), scheduledAgo(2*timeout), func(w *v1alpha1.Workload) {
				w.Status.Replicas, w.Status.ScheduledReplicas = 2, 2
				w.SetCounted(types.NamespacedName{Namespace: "default", Name: "c"}, 2, nil)
			}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced()), clustertest.NewMember("b")}
			},
			want: reconcile.Result{},
			wantStatus: both(rejected(2, "a", v1alpha1.ReasonUnreachable, "placer could not watch its PodChaperons in default/a within 1m0s: is placer's agent installed there, and may placer's identity list them?"),
				func(s *v1alpha1.WorkloadStatus) {
					s.ReadyOfDesired, s.Replicas, s.ScheduledReplicas, s.ClusterCounts = "0/2", 0, 0, nil
				}),
			wantMembers: map[string][]string{"a": {}, "b": {}},
		},
		{
			name: "a chosen member whose chaperons were never listed is rejected after the handshake timeout",
			w: web(func(w *v1alpha1.Workload) {
				c := v1alpha1.Scheduled("placed on default/a", w.Generation)
				c.LastTransitionTime = metav1.NewTime(time.Now().Add(-2 * timeout))
				w.Status.SetConditions(c)
			}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced())}
			},
			wantStatus:  rejected(2, "a", v1alpha1.ReasonUnreachable, "placer could not watch its PodChaperons in default/a within 1m0s: is placer's agent installed there, and may placer's identity list them?"),
			wantMembers: map[string][]string{"a": {}},
			check:       func(t *testing.T, e env) { wantRejected(t, e.w, "a", v1alpha1.ReasonUnreachable, "could not watch") },
		},
		{
			name: "a gang of one whose chosen member's chaperons were never listed is not given up on this clock: its candidate may bind there within its window",
			w:    web(st.Replicas(1), scheduledAgo(2*timeout)),
			want: reconcile.Result{RequeueAfter: timeout},
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced())}
			},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v while its candidate there may bind", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name: "a member registered twice is one cluster: its candidates stay",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				a := clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))
				twin := &clustertest.Member{Key: types.NamespacedName{Namespace: "default", Name: "a-again"}, HostName: a.HostName, Client: a.Client}
				return clustertest.Members{a, twin}
			},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "a-again": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want 2: deleted through the twin registration", n)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
					t.Errorf("Ready %s: %q", c.Status, c.Message)
				}
			},
		},
		{
			// Before, one cluster was one host: a member registered at two
			// addresses (a load balancer's and a node's) was two clusters,
			// and the chosen one's candidates were deleted through the other.
			name: "a member registered at two addresses, one identity, is one cluster: its candidates stay",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				a := clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))
				a.ID = "uid-a"
				twin := &clustertest.Member{Key: types.NamespacedName{Namespace: "default", Name: "a-again"}, HostName: "https://10.0.0.1:6443", ID: "uid-a", Client: a.Client}
				return clustertest.Members{a, twin}
			},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "a-again": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want 2: deleted through the registration at another address", n)
				}
			},
		},
		{
			name: "scale down: the extra replica goes",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				w3 := w.DeepCopy()
				w3.Spec.TargetDeployment.Replicas = ptr.To[int32](3)
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w3, 3, reserved, allowed, running)...))}
			},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want 2", n)
				}
			},
		},
		{
			name: "rolling update with maxSurge 1, maxUnavailable 0: a new candidate beside the old ones",
			w: web(func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
				w.Spec.TargetDeployment.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := w.DeepCopy()
				old.Spec.TargetDeployment.Template.Labels = nil
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(old, 2, reserved, allowed, running)...))}
			},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 no-hold", "0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 3 {
					t.Errorf("%d candidates in a, want 3 (2 old, 1 surge)", n)
				}
				wantReason(t, e.rec, reasonReplacing)
			},
		},
		{
			name: "a targetNamespace change rolls the pods into the new namespace, as a template change does",
			w: web(func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Spec.TargetDeployment.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := w.DeepCopy()
				old.Spec.TargetNamespace = ""
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(old, 2, reserved, allowed, running)...))}
			},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1)),
			wantMembers: map[string][]string{"a": {"0 no-hold", "0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				inApps := func(ch *mcv1alpha1.PodChaperon) bool { return ch.Namespace == "apps" }
				if n, all := count(t, e.members[0], e.w, inApps), count(t, e.members[0], e.w, nil); n != 1 || all != 3 {
					t.Errorf("%d candidates in apps of %d in a, want 1 (the surge) of 3", n, all)
				}
				wantReason(t, e.rec, reasonReplacing)
			},
		},
		{
			// Before, ensureService returned at once without a
			// targetService: the Service made for an earlier spec stayed
			// in the member until the Workload left or was deleted.
			name: "spec.targetService removed: the Service placer made for it goes",
			w: web(func(w *v1alpha1.Workload) {
				w.Generation = 2
				w.Status.ObservedGeneration = 1
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				ours := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}}}
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(append(candidates(w, 2, reserved, allowed, running), ours)...))}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if err := e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}, &corev1.Service{}); !kerrors.IsNotFound(err) {
					t.Errorf("the Service placer made for the Workload's old spec: %v, want it gone", err)
				}
			},
		},
		{
			// Before, the stale Service was looked for in a committed pass
			// only, while every pass that wrote the counts said it had
			// looked (their observed generation): removed while the
			// cluster was not committed (a Recreate's new gang), it stayed
			// until the Workload left the cluster.
			name: "spec.targetService removed while the chosen cluster is not committed (a Recreate's new gang): the Service goes all the same",
			w: web(func(w *v1alpha1.Workload) {
				w.Generation, w.Status.ObservedGeneration = 2, 1
				w.Status.SetConditions(v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1))
			}),
			passes: 2,
			members: func(w *v1alpha1.Workload) clustertest.Members {
				ours := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}}}
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(append(candidates(w, 2), ours)...))}
			},
			between: func(t *testing.T, e env) {
				chs, err := e.members[0].ChaperonsLive(context.Background(), e.w.UID)
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range chs {
					reserved(ch)
					if err := e.members[0].Client.Update(context.Background(), ch); err != nil {
						t.Fatal(err)
					}
				}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if err := e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}, &corev1.Service{}); !kerrors.IsNotFound(err) {
					t.Errorf("the Service placer made for the Workload's old spec: %v, want it gone", err)
				}
			},
		},
		{
			name: "spec.targetService removed: a Service the member will not let go is said, and holds neither the counts nor Ready",
			w: web(func(w *v1alpha1.Workload) {
				w.Generation = 2
				w.Status.ObservedGeneration = 1
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				ours := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}}}
				refuse := clustertest.WithInterceptor(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteOption) error {
					if _, ok := o.(*corev1.Service); ok {
						return kerrors.NewForbidden(schema.GroupResource{Resource: "services"}, o.GetName(), errFromMember)
					}
					return c.Delete(ctx, o, opts...)
				}})
				return clustertest.Members{clustertest.NewMember("a", refuse, clustertest.WithObjects(append(candidates(w, 2, reserved, allowed, running), ours)...))}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if e.w.Status.ObservedGeneration != 2 || e.w.Status.ReadyReplicas != 2 {
					t.Errorf("observed generation %d, ready %d: want the counts of generation 2 written", e.w.Status.ObservedGeneration, e.w.Status.ReadyReplicas)
				}
				wantReason(t, e.rec, reasonServiceLeft)
			},
		},
		{
			name: "spec.targetService removed: a Service of that name placer did not make is left alone",
			w: web(func(w *v1alpha1.Workload) {
				w.Generation = 2
				w.Status.ObservedGeneration = 1
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(append(candidates(w, 2, reserved, allowed, running), theirs)...))}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if err := e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}, &corev1.Service{}); err != nil {
					t.Errorf("a Service of the name placer did not make: %v, want it left alone", err)
				}
			},
		},
		{
			name:    "a targetNamespace change: once the new pods are Ready, the old namespace loses the chaperons, the Service and the copies",
			sources: theSources(),
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Spec.TargetService = &corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := w.DeepCopy()
				old.Spec.TargetNamespace = ""
				svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}}}
				objs := append(candidates(old, 2, reserved, allowed, running), candidates(w, 2, reserved, allowed, running)...)
				objs = append(objs, svc)
				for _, src := range []client.Object{&corev1.Secret{ObjectMeta: objectMeta("db")}, &corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}} {
					c := propagator.NewCopy(src, "default")
					propagator.SetUser(c, string(w.UID), true)
					objs = append(objs, c)
				}
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(objs...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "apps"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				inDefault := func(ch *mcv1alpha1.PodChaperon) bool { return ch.Namespace == "default" }
				if n := count(t, e.members[0], e.w, inDefault); n != 0 {
					t.Errorf("%d chaperons left in the old namespace", n)
				}
				if err := e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}, &corev1.Service{}); !kerrors.IsNotFound(err) {
					t.Errorf("the Service in the old namespace: %v, want it gone", err)
				}
				for _, kind := range []string{propagator.KindSecret, propagator.KindConfigMap, propagator.KindServiceAccount} {
					name := map[string]string{propagator.KindSecret: "db", propagator.KindConfigMap: "settings", propagator.KindServiceAccount: "runner"}[kind]
					if o := copyIn(t, e.members[0], kind, name); o != nil {
						t.Errorf("the %s copy %s is left in the old namespace", kind, name)
					}
				}
			},
		},
		{
			// The target namespace changes: the copies the Workload has
			// in default go into apps too, and the first status write
			// that names apps is lost. Before, the status named the
			// objects already (by kind and name, from default), so apps
			// was named only by the write that followed the copies: lost,
			// a revert of the namespace and the Workload's deletion never
			// visited apps again.
			name:    "dependencies: a new target namespace is recorded before anything is copied there",
			sources: theSources(),
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Spec.TargetDeployment.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: clusterA, Namespace: "default"}}
				w.Status.Dependencies = copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := w.DeepCopy()
				old.Spec.TargetNamespace = ""
				objs := candidates(old, 2, reserved, allowed, running)
				for _, src := range []client.Object{&corev1.Secret{ObjectMeta: objectMeta("db")}, &corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}} {
					c := propagator.NewCopy(src, "default")
					propagator.SetUser(c, string(w.UID), true)
					objs = append(objs, c)
				}
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(objs...))}
			},
			mgmt:   loseFirstPatch(`"apps"`),
			passes: 2,
			between: func(t *testing.T, e env) {
				for _, name := range []string{"db", "settings", "runner"} {
					for _, o := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}, &corev1.ServiceAccount{}} {
						if e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "apps", Name: name}, o) == nil &&
							!slices.Contains(e.w.PlacedIn(types.NamespacedName{Namespace: "default", Name: "a"}), "apps") {
							t.Errorf("apps holds %s, and no status names apps: %+v", name, e.w.Status.PlacedNamespaces)
						}
					}
				}
			},
			check: func(t *testing.T, e env) {
				// The next pass, its record written, copies there.
				if err := e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "apps", Name: "db"}, &corev1.Secret{}); err != nil {
					t.Errorf("Secret db in apps after the second pass: %v", err)
				}
				if !slices.Contains(e.w.PlacedIn(types.NamespacedName{Namespace: "default", Name: "a"}), "apps") {
					t.Errorf("placedNamespaces %+v: apps is not named", e.w.Status.PlacedNamespaces)
				}
			},
		},
		{
			// As the case before, with a Service and no dependency: before,
			// the Service was made in apps before any status named apps,
			// and a lost write left it there, named nowhere.
			name: "a Service in a new target namespace is recorded before it is made there",
			w: web(func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Spec.TargetService = &corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}
				w.Spec.TargetDeployment.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
					MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: clusterA, Namespace: "default"}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := w.DeepCopy()
				old.Spec.TargetNamespace = ""
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(old, 2, reserved, allowed, running)...))}
			},
			mgmt:    loseFirstPatch(`"apps"`),
			passes:  2,
			between: serviceNamed("apps"),
			// The first pass's record (recordService's write) is the one
			// lost: it stops before the Service. The second makes the
			// first candidate in apps and stops there (deliver counts
			// nothing yet); whatever it made, the status names.
			check: serviceNamed("apps"),
		},
		{
			// On 2f04a54 nothing visited default any more: its Service and
			// copies stayed.
			name:    "a namespace the pods left without its cleanup (no chaperon there any more) is cleaned, as status.placedNamespaces names it",
			sources: theSources(),
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Spec.TargetService = &corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(leftBehind(w)...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "apps"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantLeftBehindGone(t, e.members[0])
				if got := e.w.PlacedIn(types.NamespacedName{Namespace: "default", Name: "a"}); !slices.Equal(got, []string{"apps"}) {
					t.Errorf("placedNamespaces in a: %v, want only apps, where the pods are", got)
				}
			},
		},
		// Before, the copy of old was let go only in apps (where there is
		// none), dropped from the status, and the namespace's cleanup
		// (which lets go of what the status names) never looked for it:
		// left in default for ever.
		{
			name:    "a namespace left without its cleanup, the template changed with it: a copy the pods no longer use goes from the namespace left",
			sources: theSources(&corev1.ConfigMap{ObjectMeta: objectMeta("old")}),
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: clusterA, Namespace: "default"}}
				w.Status.Dependencies = copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner", "ConfigMap/old")
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				objs := append(leftBehind(w), usedCopy(&corev1.ConfigMap{ObjectMeta: objectMeta("old")}, string(w.UID)))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(objs...))}
			},
			passes: 2,
			check: func(t *testing.T, e env) {
				wantLeftBehindGone(t, e.members[0])
				if copyIn(t, e.members[0], propagator.KindConfigMap, "old") != nil {
					t.Error("the copy of ConfigMap old, which the pods no longer use, is left in default")
				}
				if slices.ContainsFunc(e.w.Status.Dependencies, func(d v1alpha1.Dependency) bool { return d.Name == "old" }) {
					t.Errorf("status.dependencies %+v still name old", e.w.Status.Dependencies)
				}
			},
		},
		{
			name:    "deletion cleans every namespace status.placedNamespaces names, also with no chaperon there",
			sources: theSources(),
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetNamespace = "apps"
				w.Spec.TargetService = &corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
				w.DeletionTimestamp = ptr.To(metav1.Now())
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(leftBehind(w)...))}
			},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantLeftBehindGone(t, e.members[0])
			},
		},
		{
			name: "a template the committed cluster's Pod Security refuses is not rolled out",
			w: web(st.Pod(func(p *corev1.PodSpec) {
				p.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
			})),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := w.DeepCopy()
				old.Spec.TargetDeployment.Template.Spec.Containers[0].SecurityContext = nil
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(old, 2, reserved, allowed, running)...))}
			},
			wantStatus:  refused("PodSecurity", `the pod template of generation 1 is not rolled out: the pod template does not meet Pod Security "baseline": privileged (container "app" must not set securityContext.privileged=true)`),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				chs, _ := e.members[0].Chaperons(context.Background(), e.w.UID)
				if len(chs) != 2 || chs[0].Spec.Containers[0].SecurityContext != nil {
					t.Errorf("the privileged template reached a: %d chaperons", len(chs))
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason != "PodSecurity" || !strings.Contains(c.Message, "privileged") {
					t.Errorf("Ready %s: %q, want PodSecurity naming privileged", c.Reason, c.Message)
				}
			},
		},
		{
			name: "a cluster that does not serve the Workload's namespace is rejected before any candidate",
			w:    web(st.WNamespace("team-b")),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			wantStatus:  rejected(2, "a", validation.ReasonNamespaceNotServed, "KubernetesCluster default/a does not serve the Workloads of namespace team-b (offered by its namespaceSelector and bound by a ClusterBinding there, or of its own namespace)"),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejectedAndEmpty(t, e.w, e.members[0], "a", "NamespaceNotServed", "does not serve")
			},
		},
		{
			name: "a Service placer did not create is reported, not taken over",
			w: web(func(w *v1alpha1.Workload) {
				w.Spec.TargetService = &corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", CreationTimestamp: metav1.Now()}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}}}
				return runningIn(w, nil, theirs)
			},
			// default is named before the Service is tried there
			// (recordService): named for nothing, the safe way.
			wantStatus: both(counts(2, 2, 2, 2, v1alpha1.NotReady(v1alpha1.ReasonNameConflict, "Service default/web exists in the cluster and was not created by placer for this Workload; it is left untouched", 1)),
				func(s *v1alpha1.WorkloadStatus) {
					s.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: clusterA, Namespace: "default"}}
				}),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason != v1alpha1.ReasonNameConflict {
					t.Errorf("Ready %s: %q, want NameConflict", c.Reason, c.Message)
				}
				svc := &corev1.Service{}
				if err := e.members[0].Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}, svc); err != nil || svc.Spec.Ports[0].Port != 8080 || len(svc.Labels) != 0 {
					t.Errorf("their Service was changed: %v %+v", err, svc)
				}
			},
		},
		{
			name: "a conflict writing the status is retried soon, quietly",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, podScheduledFalse(corev1.PodReasonUnschedulable, "no"))...))}
			},
			mgmt: &interceptor.Funcs{SubResourcePatch: func(_ context.Context, _ client.Client, _ string, o client.Object, _ client.Patch, _ ...client.SubResourcePatchOption) error {
				o.(*v1alpha1.Workload).Status.DeepCopyInto(lostStatus)
				return kerrors.NewConflict(schema.GroupResource{Resource: "workloads"}, "web", errFromMember)
			}},
			want:        reconcile.Result{RequeueAfter: shared.ConflictRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}},
			check: func(t *testing.T, e env) {
				if len(lostStatus.RejectedClusters) != 1 {
					t.Errorf("the patch that lost carried rejectedClusters %v, want the rejection of a", lostStatus.RejectedClusters)
				}
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejectedClusters %v written despite the conflict", e.w.Status.RejectedClusters)
				}
				// A rejection that is not written costs no candidate and
				// says nothing: the next reconcile decides again.
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want 2: deleted for a rejection the status does not hold", n)
				}
				if len(e.rec.Events) != 0 {
					t.Errorf("events %v for a rejection the status does not hold", e.rec.Reasons())
				}
			},
		},
		{
			name: "a status the scheduler changed meanwhile (the cache has it) is not patched: no 409, the pass runs again soon",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			mgmt: &interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
					if _, ok := o.(*v1alpha1.Workload); ok {
						if workloadGets++; workloadGets == 2 {
							// The scheduler's write reaches the cache
							// while the pass works in the members.
							w := &v1alpha1.Workload{}
							if err := c.Get(ctx, key, w); err != nil {
								return err
							}
							w.Status.NominatedClusters = []v1alpha1.ClusterReference{{Name: "a", Namespace: "default"}, {Name: "b", Namespace: "default"}}
							if err := c.Status().Update(ctx, w); err != nil {
								return err
							}
						}
					}
					return c.Get(ctx, key, o, opts...)
				},
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					statusPatches++
					return c.SubResource(sub).Patch(ctx, o, p, opts...)
				},
			},
			want: reconcile.Result{RequeueAfter: shared.ConflictRetry},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.NominatedClusters = []v1alpha1.ClusterReference{{Name: "a", Namespace: "default"}, {Name: "b", Namespace: "default"}}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				// The pass reads the Workload twice (at its start, and
				// the cache before writing), this check once more.
				if workloadGets < 3 {
					t.Fatalf("the Workload was read %d time(s) in all: the pass never looked at the cache before writing", workloadGets)
				}
				if statusPatches != 0 {
					t.Errorf("%d status patches sent from a copy older than the cache's, want none", statusPatches)
				}
				if len(e.w.Status.NominatedClusters) != 2 {
					t.Errorf("the scheduler's write was lost: nominated %v", e.w.Status.NominatedClusters)
				}
			},
		},
		{
			// Before, nothing but nominatedClusters named a runner-up: it
			// went silent, the scheduler dropped it while it did not
			// answer, the manager restarted (its watch not listed yet),
			// and the Workload's deletion looked only at a: its held
			// candidates in b stayed, named nowhere, taking b's room for
			// runner-ups for ever.
			name:   "deletion after a restart: a runner-up that went silent holding candidates, then dropped by the scheduler, keeps the finalizer",
			w:      web(nominate("a", "b")),
			passes: 4,
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			between: func(t *testing.T, e env) {
				ctx := context.Background()
				b := types.NamespacedName{Namespace: "default", Name: "b"}
				switch betweens++; betweens {
				case 1:
					if n := count(t, e.members[1], e.w, (*mcv1alpha1.PodChaperon).HeldRunnerUp); n != 2 {
						t.Fatalf("%d runner-up candidates in b after the first pass, want 2", n)
					}
					if ns := e.w.PlacedIn(b); len(ns) != 0 {
						t.Errorf("b recorded %v while it answers: a write for nothing", ns)
					}
					// b stops answering.
					kc := &v1alpha1.KubernetesCluster{}
					if err := e.mgmt.Get(ctx, b, kc); err != nil {
						t.Fatal(err)
					}
					st.NotReady(v1alpha1.ReasonUnreachable)(kc)
					if err := e.mgmt.Update(ctx, kc); err != nil {
						t.Fatal(err)
					}
				case 2:
					if !slices.Contains(e.w.PlacedIn(b), "default") {
						t.Errorf("placed namespaces %v: want b recorded once it does not answer with candidates there", e.w.Status.PlacedNamespaces)
					}
					// The scheduler decided again without b; then the
					// manager restarted: b's watch has not listed.
					e.w.Status.NominatedClusters = e.w.Status.NominatedClusters[:1]
					if err := e.mgmt.Status().Update(ctx, e.w); err != nil {
						t.Fatal(err)
					}
					e.members[1].NotSynced = true
					if err := e.mgmt.Delete(ctx, e.w); err != nil {
						t.Fatal(err)
					}
				}
			},
			want: reconcile.Result{RequeueAfter: cleanupRetry},
			check: func(t *testing.T, e env) {
				if betweens != 3 {
					t.Errorf("%d looks between passes, want 3", betweens)
				}
				if len(e.w.Finalizers) == 0 {
					t.Errorf("the finalizer went while b holds %d candidates no status named", count(t, e.members[1], e.w, nil))
				}
			},
		},
		{
			name: "deletion with an unreachable member that may hold candidates: the finalizer stays",
			w:    web(func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced())}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if len(e.w.Finalizers) != 1 {
					t.Errorf("finalizers %v: removed while a member may hold candidates", e.w.Finalizers)
				}
				wantReason(t, e.rec, reasonCleanup)
			},
		},
		{
			name:        "deletion after a restart: a cluster the status names that is not connected yet keeps the finalizer",
			w:           web(func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			members:     func(*v1alpha1.Workload) clustertest.Members { return nil },
			unconnected: []string{"a"},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			check: func(t *testing.T, e env) {
				if len(e.w.Finalizers) != 1 {
					t.Errorf("finalizers %v: removed before the cluster the status names confirmed anything", e.w.Finalizers)
				}
				wantReason(t, e.rec, reasonCleanup)
				if len(e.rec.Events) == 0 || !strings.Contains(e.rec.Events[0].Message, "default/a (not connected)") {
					t.Errorf("events %+v, want one naming default/a, not connected", e.rec.Events)
				}
			},
		},
		{
			name:    "deletion: a cluster the status names whose KubernetesCluster is gone is abandoned, with an Event, and the finalizer goes",
			w:       web(func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			members: func(*v1alpha1.Workload) clustertest.Members { return nil },
			check: func(t *testing.T, e env) {
				if len(e.w.Finalizers) != 0 {
					t.Errorf("finalizers %v: held by a cluster that is gone", e.w.Finalizers)
				}
				wantReason(t, e.rec, reasonAbandoned)
			},
		},
		{
			name: "StartBeforeStop: the old copy serves, and counts, until the new cluster runs every replica Ready",
			w:    web(left),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{
					clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved)...)),
				}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 0, 2, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in b", 1))(s)
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates left in a, want 2 while b is not Ready", n)
				}
				if n := count(t, e.members[1], e.w, isAllowed); n != 2 {
					t.Errorf("%d candidates allowed in b, want 2", n)
				}
				wantLeft(t, e.w, 2)
				if e.w.Status.ReadyReplicas != 2 {
					t.Errorf("readyReplicas %d, want 2: the old copy's", e.w.Status.ReadyReplicas)
				}
			},
		},
		{
			name:        "StartBeforeStop: once the new pods are all Ready the old copy goes, and then its entry",
			w:           web(left),
			passes:      2,
			members:     bothRunning,
			wantStatus:  both(counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in b", 1)), countedLeft(0)),
			wantMembers: map[string][]string{"a": {}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates left in a", n)
				}
				if n := count(t, e.members[1], e.w, nil); n != 2 {
					t.Errorf("%d candidates in b, want 2", n)
				}
				wantLeft(t, e.w, -1)
				if e.w.Status.ReadyReplicas != 2 {
					t.Errorf("readyReplicas %d, want 2", e.w.Status.ReadyReplicas)
				}
				wantReason(t, e.rec, reasonLeft)
			},
		},
		{
			name:        "a left cluster that is not Ready keeps its copy and its entry, even when the new one runs",
			w:           web(left),
			clusters:    map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			passes:      2,
			members:     bothRunning,
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in b", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want its 2 untouched while it is not Ready", n)
				}
				wantLeft(t, e.w, 2)
			},
		},
		{
			// Before, any cluster not Ready was taken for one that does not
			// answer: the old copy ran on there, beside the new one, and a
			// drain of the cluster let it go with the copy in it.
			name:        "a left cluster that answers but is not Ready (its agent stopped) loses its copy once the new one runs, and then its entry",
			w:           web(left),
			clusters:    map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonAgentNotRunning)}},
			passes:      2,
			members:     bothRunning,
			wantStatus:  both(counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in b", 1)), countedLeft(0)),
			wantMembers: map[string][]string{"a": {}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantLeft(t, e.w, -1)
				wantReason(t, e.rec, reasonLeft)
			},
		},
		{
			name:     "a left cluster that answers but is not Ready: what runs there is not counted while the new one is not Ready",
			w:        web(left),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonCandidateSchedulerNotRunning)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {"0", "1"}},
			check: func(t *testing.T, e env) {
				wantLeft(t, e.w, 2)
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionUnknown {
					t.Errorf("Ready %s %q, want Unknown: what its agent mirrored may be stale", c.Status, c.Message)
				}
			},
		},
		{
			name:     "a chosen cluster that does not answer: Ready is Unknown, written once and not again on every pass",
			w:        web(),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			mgmt: &interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				statusPatches++
				return c.SubResource(sub).Patch(ctx, o, p, opts...)
			}},
			passes:      3,
			wantStatus:  counts(2, 2, 2, 0, v1alpha1.ReadyUnknownOn("default/a", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionUnknown || c.Reason != v1alpha1.ReasonClusterUnreachable {
					t.Errorf("Ready %s (%s), want Unknown (%s)", c.Status, c.Reason, v1alpha1.ReasonClusterUnreachable)
				}
				if statusPatches != 1 {
					t.Errorf("%d status patches in 3 passes, want 1: nothing changed after the first", statusPatches)
				}
			},
		},
		{
			// Before, such a Workload kept its Ready (True) for as long
			// as its cluster's connection was withheld or gone: only a
			// connected cluster that does not answer made it Unknown.
			name: "a chosen cluster whose connection is withheld (its kubeconfig reaches another cluster): Ready is Unknown, nothing made anywhere",
			w: web(func(w *v1alpha1.Workload) {
				// Delivered there, all Ready as last seen.
				w.Status.Replicas, w.Status.ReadyReplicas = 2, 2
				w.SetCounted(types.NamespacedName{Namespace: "default", Name: "a"}, 2, nil)
				w.Status.SetConditions(v1alpha1.Available("2 of 2 replicas ready in a", 1))
			}),
			clusters:    map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonClusterIdentityChanged)}},
			unconnected: []string{"a"},
			members:     func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("b")} },
			want:        reconcile.Result{RequeueAfter: timeout},
			check: func(t *testing.T, e env) {
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionUnknown || c.Reason != v1alpha1.ReasonClusterUnreachable || e.w.Status.ReadyReplicas != 0 {
					t.Errorf("Ready %s (%s), %d ready: want Unknown (%s), 0", c.Status, c.Reason, e.w.Status.ReadyReplicas, v1alpha1.ReasonClusterUnreachable)
				}
				if len(e.w.Status.RejectedClusters) != 0 || count(t, e.members[0], e.w, nil) != 0 {
					t.Errorf("rejected %+v, or candidates made in b", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name: "a left cluster that answers again but whose watch has not synced keeps its entry as last seen",
			w:    web(left),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{
					clustertest.NewMember("a", clustertest.NotSynced(), clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
				}
			},
			want:        reconcile.Result{},
			wantStatus:  counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in b", 1)),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantLeft(t, e.w, 2)
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want its 2 untouched until its watch syncs", n)
				}
			},
		},
		{
			name:     "a left cluster that does not answer, whose stopped watch shows nothing, is not let go: its count stays as last seen",
			w:        web(left, stopFirst),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{},
			wantStatus:  refused(v1alpha1.ReasonPending, "move: StopBeforeStart: nothing is started in default/b until [default/a] confirm(s) that the pods there are gone"),
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check: func(t *testing.T, e env) {
				if lc := e.w.Left(types.NamespacedName{Namespace: "default", Name: "a"}); lc == nil || !e.w.LeftBehind(lc) {
					t.Errorf("a counted %+v: let go while it does not answer", e.w.Status.ClusterCounts)
				}
			},
		},
		{
			name:     "moved off a cluster that does not answer, with no other cluster to go to: the counts are not that cluster's any more, and Ready is Unknown",
			w:        web(left, running2, func(w *v1alpha1.Workload) { w.Status.ClusterRef = nil }),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			want: reconcile.Result{},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.Replicas, s.ScheduledReplicas, s.ReadyOfDesired = 0, 0, "2/2"
				s.SetConditions(v1alpha1.ReadyUnknownOn("default/a", 1))
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
		},
		{
			name:     "a gang of one moved off a cluster that does not answer (StartBeforeStop): the new cluster is not held",
			w:        web(st.Replicas(1), left),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout))...)), clustertest.NewMember("b")}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			wantStatus: both(countedLeft(1), func(s *v1alpha1.WorkloadStatus) {
				// Nothing counted in b yet, and what runs in a is not known.
				s.ReadyOfDesired = "0/1"
				s.SetConditions(v1alpha1.ReadyUnknownOn("default/a", 1))
			}),
			wantMembers: map[string][]string{"a": {"0 no-hold"}, "b": {"0 no-hold"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[1], e.w, noHold); n != 1 {
					t.Errorf("%d candidates in b bind unheld, want 1: a copy behind the partition does not hold the move", n)
				}
			},
		},
		{
			name: "a gang of one moved off a cluster that answers, where its candidate may still bind (not yet in the watch): that one is asked to fence, and the new cluster's candidate is held",
			w:    web(st.Replicas(1), left),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotWatchedYet(candidates(w, 1, chaperontest.Windowed(timeout))...)), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  both(countedLeft(1), func(s *v1alpha1.WorkloadStatus) { s.ReadyOfDesired = "0/1" }),
			wantMembers: map[string][]string{"a": {"0 no-hold give-up"}, "b": {"0"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" }); n != 1 {
					t.Errorf("%d candidates in a asked to be fenced, want 1", n)
				}
				if n, all := count(t, e.members[1], e.w, noHold), count(t, e.members[1], e.w, nil); n != 0 || all != 1 {
					t.Errorf("%d of %d candidates in b bind unheld, want one held", n, all)
				}
			},
		},
		// A review found it: the first version made no candidate for a
		// share whose commit is held (it binds unheld only once
		// committed), and the division waited for ever.
		{
			name: "NoReservation, a share whose commit is held: its candidates are made (its member's own scheduler places them)",
			w:    web(noReservation, heldShare),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantMembers: map[string][]string{"a": {"0", "1"}},
		},
		{
			// Before, a held share's candidates had no window (only
			// BindsUnheld's did), though nothing holds a NoReservation
			// pod: an unschedulable verdict rejected the cluster at once,
			// and a pod bound meanwhile ran beside its replacement.
			name:   "NoReservation, a share whose commit is held: its candidates carry a bind window, and an unschedulable verdict asks the member to fence them before the cluster is rejected",
			w:      web(noReservation, heldShare),
			passes: 2,
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			between:     windowedThenUnschedulable,
			want:        reconcile.Result{RequeueAfter: timeout},
			wantMembers: map[string][]string{"a": {"0 give-up", "1 give-up"}},
			check:       notRejectedBeforeTheFence,
		},
		{
			name: "NoReservation, a share whose commit is held, its member's chaperons never listed: not given up on this clock (its candidates may bind)",
			w:    web(noReservation, heldShare, scheduledAgo(2*timeout)),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotSynced())}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			check: func(t *testing.T, e env) {
				if len(e.w.Status.RejectedClusters) != 0 {
					t.Errorf("rejected %+v while its candidates there may bind", e.w.Status.RejectedClusters)
				}
			},
		},
		{
			name: "NoReservation moved off a cluster that answers, where its candidates may still bind: that cluster is asked to fence them, and none is made in the new cluster meanwhile (nothing would hold it)",
			w:    web(noReservation, left),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, chaperontest.Windowed(timeout))...)), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantMembers: map[string][]string{"a": {"0 no-hold give-up", "1 no-hold give-up"}, "b": {}},
		},
		{
			name: "a gang of one rejected by a cluster that refused it at admission, its candidate there still in its window: that one is asked to fence",
			w: web(st.Replicas(1), st.PlacedOn("b"), st.Rejected("a", 1, "refused"), func(w *v1alpha1.Workload) {
				w.Status.RejectedClusters[0].Reason = v1alpha1.ReasonForbidden
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout))...)), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0 no-hold give-up"}, "b": {"0"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" }); n != 1 {
					t.Errorf("%d candidates in a asked to be fenced, want 1", n)
				}
				if n := count(t, e.members[1], e.w, noHold); n != 0 {
					t.Errorf("%d candidates in b bind unheld while a's may still bind", n)
				}
			},
		},
		{
			name: "a rejection older than twice the handshake timeout is not read live: any candidate made before it has had its whole window",
			w: web(st.Replicas(1), st.PlacedOn("b"), st.Rejected("a", 1, "refused"), func(w *v1alpha1.Workload) {
				w.Status.RejectedClusters[0].Time = ptr.To(metav1.NewTime(time.Now().Add(-3 * timeout)))
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotWatchedYet(candidates(w, 1, chaperontest.Windowed(timeout))...)), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0 no-hold"}, "b": {"0 no-hold"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" }); n != 0 {
					t.Errorf("%d candidates in a asked to be fenced, want none: a was not read", n)
				}
				if n := count(t, e.members[1], e.w, noHold); n != 1 {
					t.Errorf("%d candidates in b bind unheld, want 1", n)
				}
			},
		},
		{
			name: "the old cluster answers with the candidate still in its window: it is asked to fence it, and the new cluster waits",
			w:    web(st.Replicas(1), left),
			want: reconcile.Result{RequeueAfter: cleanupRetry},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout))...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 1, reserved)...))}
			},
			wantStatus:  both(counts(1, 1, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "every replica is reserved in default/b; they bind once [default/a] confirm(s) that the candidate there, which may bind without placer's word within its window, did not", 1)), countedLeft(1)),
			wantMembers: map[string][]string{"a": {"0 no-hold give-up"}, "b": {"0 reserved"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, func(ch *mcv1alpha1.PodChaperon) bool { return ch.Annotations[mcv1alpha1.AnnotationGiveUp] == "true" }); n != 1 {
					t.Errorf("%d candidates in a asked to be fenced, want 1", n)
				}
				if n := count(t, e.members[1], e.w, isAllowed); n != 0 {
					t.Errorf("%d candidates allowed in b before a confirmed", n)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); !strings.Contains(c.Message, "default/a") {
					t.Errorf("Ready says %q, want it to name a, which has not confirmed", c.Message)
				}
			},
		},
		{
			name: "the old cluster fenced it: the fenced candidate goes, and the new cluster's candidate is allowed",
			w:    web(st.Replicas(1), left),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, chaperontest.Windowed(timeout), chaperontest.Fenced(mcv1alpha1.FencedGivenUp))...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 1, reserved)...))}
			},
			wantStatus:  both(counts(1, 1, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 1 replicas ready in b", 1)), countedLeft(0)),
			wantMembers: map[string][]string{"a": {}, "b": {"0 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates left in a", n)
				}
				if n := count(t, e.members[1], e.w, isAllowed); n != 1 {
					t.Errorf("%d candidates allowed in b, want 1", n)
				}
			},
		},
		{
			name:     "StopBeforeStart: nothing anywhere while the left cluster has not confirmed",
			w:        web(left, stopFirst, nominate("b", "c")),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{
					clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
					clustertest.NewMember("b"), clustertest.NewMember("c"),
				}
			},
			wantStatus:  refused(v1alpha1.ReasonPending, "move: StopBeforeStart: nothing is started in default/b until [default/a] confirm(s) that the pods there are gone"),
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {}, "c": {}},
			check: func(t *testing.T, e env) {
				for _, m := range e.members[1:] {
					if n := count(t, m, e.w, nil); n != 0 {
						t.Errorf("%d candidates in %s while a has not confirmed", n, m.Key.Name)
					}
				}
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want its 2 untouched while it is not Ready", n)
				}
				wantLeft(t, e.w, 2)
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "StopBeforeStart") {
					t.Errorf("Ready %s: %s; want False, naming StopBeforeStart", c.Status, c.Message)
				}
			},
		},
		{
			name: "StopBeforeStart: a left cluster that answers loses the old copy at once, in the foreground",
			w:    web(left, stopFirst),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{
					clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)),
					clustertest.NewMember("b"),
				}
			},
			wantStatus:  refused(v1alpha1.ReasonPending, "move: StopBeforeStart: nothing is started in default/b until [default/a] confirm(s) that the pods there are gone"),
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates left in a", n)
				}
				if n := count(t, e.members[1], e.w, nil); n != 0 {
					t.Errorf("%d candidates in b before a confirmed", n)
				}
				wantLeft(t, e.w, 2)
			},
		},
		{
			// A proxy pod's deletion ends, as any pod's, once its
			// containers have stopped: its Workload goes only when the
			// delegate has, so that a StatefulSet's next pod of that name
			// never starts elsewhere while the old one stops. The member
			// (its API server and garbage collector, played here) keeps a
			// chaperon deleted in the foreground until its pod is gone.
			name:        "deletion of a proxy pod's Workload: its candidates go in the foreground, and the finalizer stays while their pods stop",
			w:           web(st.Replicas(1), deletedProxyPods),
			members:     runningInForeground,
			passes:      2,
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0 reserved allowed deleting"}},
			check: func(t *testing.T, e env) {
				if e.w == nil || len(e.w.Finalizers) == 0 {
					t.Fatal("the finalizer went while the delegate's pod was still stopping")
				}
				wantReason(t, e.rec, reasonCleanup)
			},
		},
		{
			// Force-deleted, the proxy pod is gone already: nothing waits
			// for its delegate to stop, as nothing waits for a
			// force-deleted pod's containers (the pod's StatefulSet makes
			// the next one at once).
			name: "deletion of a force-deleted proxy pod's Workload: its candidates go in the background, and so does the finalizer",
			w: web(st.Replicas(1), deletedProxyPods, func(w *v1alpha1.Workload) {
				w.Annotations = map[string]string{v1alpha1.AnnotationProxyPodGone: "true"}
			}),
			members:     runningInForeground,
			passes:      2,
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if len(e.w.Finalizers) != 0 {
					t.Errorf("finalizers %v: the Workload of a pod gone waits for its delegate to stop", e.w.Finalizers)
				}
			},
		},
		{
			// On 0ed6f67 the finalizer went: the watch showed nothing.
			name: "deletion: a candidate not in the member's watch yet (made a moment ago, or missed by a broken watch) keeps the finalizer until it is deleted",
			w:    web(func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotWatchedYet(candidates(w, 1, reserved, allowed, running)...))}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check:       keptUntilDeleted,
		},
		{
			// A flapping link: a not Ready (its probes failed), its watch
			// behind, its API answering. The finalizer went, and the
			// candidate ran on, named nowhere.
			name:     "deletion: a cluster not Ready whose watch shows nothing is read live before the finalizer goes",
			w:        web(func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			clusters: map[string][]st.ClusterOption{"a": {st.NotReady(v1alpha1.ReasonUnreachable)}},
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotWatchedYet(candidates(w, 1, reserved, allowed, running)...))}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check:       keptUntilDeleted,
		},
		{
			// On 0ed6f67 a was let go ("nothing remains") and its copy ran
			// on, named nowhere (the fault harness's flapping link).
			name: "a left cluster whose candidate is not in its watch yet is not let go: StopBeforeStart deletes it first",
			w:    web(left, stopFirst),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotWatchedYet(candidates(w, 2, reserved, allowed, running)...)), clustertest.NewMember("b")}
			},
			wantStatus:  refused(v1alpha1.ReasonPending, "move: StopBeforeStart: nothing is started in default/b until [default/a] confirm(s) that the pods there are gone"),
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check: func(t *testing.T, e env) {
				wantLeft(t, e.w, 2)
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates left in a, want them deleted", n)
				}
				if n := count(t, e.members[1], e.w, nil); n != 0 {
					t.Errorf("%d candidates in b before a confirmed", n)
				}
			},
		},
		{
			name: "deletion: candidates deleted, then the finalizer goes; another tenant's dead cluster holds nothing",
			w:    web(func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				rogue := clustertest.NewMember("rogue", clustertest.NotSynced())
				rogue.Key.Namespace = "rogue"
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...)), rogue}
			},
			passes:      2,
			wantMembers: map[string][]string{"a": {}, "rogue": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates left in a", n)
				}
				if e.w != nil && len(e.w.Finalizers) != 0 {
					t.Errorf("finalizers %v: held by another tenant's cluster", e.w.Finalizers)
				}
			},
		},
		{
			name:     "overrides: the candidates in a cluster carry the rules that select it, and only those",
			clusters: map[string][]st.ClusterOption{"a": {st.Labels("region", "eu")}, "b": {st.Labels("region", "us")}},
			w: web(nominate("a", "b"), func(w *v1alpha1.Workload) {
				w.Spec.Placement.FanOut = 2
				w.Spec.Overrides = []v1alpha1.Override{{Name: "eu-mirror", ClusterSelector: st.Term(st.Expr("region", "In", "eu")),
					Image: &v1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}, NodeSelector: map[string]string{"disk": "nvme"}}}
			}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 runner-up", "1 runner-up"}},
			check: func(t *testing.T, e env) {
				images := func(m *clustertest.Member) (out []string) {
					chs, err := m.Chaperons(context.Background(), e.w.UID)
					if err != nil {
						t.Fatal(err)
					}
					for _, ch := range chs {
						out = append(out, ch.Spec.Containers[0].Image+" "+ch.Spec.NodeSelector["disk"])
					}
					return out
				}
				if got := images(e.members[0]); len(got) != 2 || got[0] != "mirror.eu.example.com/library/pause nvme" {
					t.Errorf("candidates in a (eu): %v, want the mirror's image and the nodeSelector", got)
				}
				if got := images(e.members[1]); len(got) != 2 || got[0] != "pause " {
					t.Errorf("candidates in b (us): %v, want the template's image", got)
				}
			},
		},
		{
			name:     "overrides: a rule that cannot be applied in the chosen cluster rejects it, naming the rule",
			clusters: map[string][]st.ClusterOption{"a": {st.Labels("region", "eu")}},
			w: web(func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.Containers[0].Image = "Not An Image"
				w.Spec.Overrides = []v1alpha1.Override{{Name: "eu-mirror", ClusterSelector: st.Term(st.Expr("region", "In", "eu")),
					Image: &v1alpha1.ImageOverride{Registry: "mirror.eu.example.com"}}}
			}),
			members:     func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			wantStatus:  rejected(2, "a", v1alpha1.ReasonInvalidOverride, `spec.overrides[0] (eu-mirror): container app: cannot parse image "Not An Image": invalid reference format: repository name (library/Not An Image) must be lowercase`),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejectedAndEmpty(t, e.w, e.members[0], "a", v1alpha1.ReasonInvalidOverride, "spec.overrides[0] (eu-mirror)")
			},
		},
		{
			name: "batch: every replica ended on its own, one failed: Failed, the counts, an Event",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				chs := candidates(w, 2, reserved, allowed, ended(corev1.PodSucceeded, ""))
				ended(corev1.PodFailed, "container app exited with code 1 (Error)")(chs[1].(*mcv1alpha1.PodChaperon))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(chs...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 0, v1alpha1.NotReady(v1alpha1.ReasonReplicasFailed, "1 of 2 replicas failed in a (pod web-7d7c8769f7-1 failed: container app exited with code 1 (Error))", 1))(s)
				s.Succeeded, s.Failed = 1, 1
				s.SetConditions(xpv2.Condition{Type: v1alpha1.TypeFailed, Status: corev1.ConditionTrue, Reason: v1alpha1.ReasonReplicasFailed, Message: "1 of 2 replicas failed in a (pod web-7d7c8769f7-1 failed: container app exited with code 1 (Error))", ObservedGeneration: 1})
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				f := e.w.Status.GetCondition(v1alpha1.TypeFailed)
				if f.Status != corev1.ConditionTrue || !strings.Contains(f.Message, "exited with code 1") {
					t.Errorf("Failed = %+v, want True naming the exit code", f)
				}
				if c := e.w.Status.GetCondition(v1alpha1.TypeComplete); c.Status == corev1.ConditionTrue {
					t.Errorf("Complete = %+v beside Failed", c)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionFalse || c.Reason != v1alpha1.ReasonReplicasFailed {
					t.Errorf("Ready = %+v, want False %s", c, v1alpha1.ReasonReplicasFailed)
				}
				if e.w.Status.Succeeded != 1 || e.w.Status.Failed != 1 || !e.w.Finished() {
					t.Errorf("succeeded %d, failed %d, finished %v; want 1, 1, true", e.w.Status.Succeeded, e.w.Status.Failed, e.w.Finished())
				}
				wantReason(t, e.rec, v1alpha1.ReasonReplicasFailed)
			},
		},
		{
			name: "batch: one replica still runs: counts, not finished",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				chs := candidates(w, 2, reserved, allowed, running)
				chs[0] = candidates(w, 1, reserved, allowed, ended(corev1.PodSucceeded, ""))[0]
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(chs...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 1, v1alpha1.NotReady(v1alpha1.ReasonPending, "1 of 2 replicas ready in a, 1 succeeded, 0 failed", 1))(s)
				s.Succeeded = 1
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if e.w.Finished() || e.w.Status.Succeeded != 1 || e.w.Status.ReadyReplicas != 1 {
					t.Errorf("finished %v, succeeded %d, ready %d; want false, 1, 1", e.w.Finished(), e.w.Status.Succeeded, e.w.Status.ReadyReplicas)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); !strings.Contains(c.Message, "1 succeeded") {
					t.Errorf("Ready = %+v, want the counts in its message", c)
				}
			},
		},
		{
			name:     "batch: a finished Workload whose cluster is deleted is not moved; what it left there goes",
			clusters: map[string][]st.ClusterOption{"a": {st.Deleting(time.Now(), v1alpha1.FinalizerDrain)}},
			w: web(func(w *v1alpha1.Workload) {
				w.Status.Succeeded = 2
				complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 2 replicas succeeded in a", w.Generation)
				w.Status.SetConditions(complete, ready)
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, ended(corev1.PodSucceeded, ""))...))}
			},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d chaperons left in the deleted cluster", n)
				}
				if e.w.Status.ClusterRef == nil || e.w.Status.ClusterRef.Name != "a" || !e.w.Finished() {
					t.Errorf("clusterRef %v, finished %v: a finished Workload moved", e.w.Status.ClusterRef, e.w.Finished())
				}
				// Its status stays as it ended: the chaperons going is no
				// new count, and nothing is left to clean up elsewhere.
				if e.w.Status.Succeeded != 2 || len(e.w.Status.LeftClusters) != 0 || e.w.Status.GetCondition(xpv2.TypeReady).Reason != v1alpha1.ReasonCompleted {
					t.Errorf("succeeded %d, leftClusters %v, Ready %+v: the status of a finished Workload changed", e.w.Status.Succeeded, e.w.Status.LeftClusters, e.w.Status.GetCondition(xpv2.TypeReady))
				}
			},
		},
		// Before, the chosen cluster's copies were never let go, even once
		// it was deleted: the drain, which now waits for them, let the
		// cluster go with them in it.
		{
			name:     "batch: a finished Workload whose cluster is deleted, its candidates gone there: its copies there go too",
			clusters: map[string][]st.ClusterOption{"a": {st.Deleting(time.Now(), v1alpha1.FinalizerDrain)}},
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Status.Succeeded = 2
				complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 2 replicas succeeded in a", w.Generation)
				w.Status.SetConditions(complete, ready)
				w.Status.Dependencies = copies("a", "ServiceAccount/runner")
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(usedCopy(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}, string(w.UID))))}
			},
			wantStatus:  func(s *v1alpha1.WorkloadStatus) { s.Dependencies, s.ReadyOfDesired = nil, "0/2" },
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if copyIn(t, e.members[0], propagator.KindServiceAccount, "runner") != nil {
					t.Error("the copy of ServiceAccount runner is left in the deleted cluster")
				}
			},
		},
		{
			name: "batch: every replica succeeded: Complete",
			w:    web(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, ended(corev1.PodSucceeded, ""))...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 2 replicas succeeded in a", 1)
				counts(2, 2, 2, 0, ready)(s)
				s.SetConditions(complete)
				s.Succeeded = 2
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if c := e.w.Status.GetCondition(v1alpha1.TypeComplete); c.Status != corev1.ConditionTrue || c.Reason != v1alpha1.ReasonCompleted {
					t.Errorf("Complete = %+v, want True", c)
				}
				if e.w.Status.Succeeded != 2 || e.w.Status.Failed != 0 {
					t.Errorf("succeeded %d, failed %d; want 2, 0", e.w.Status.Succeeded, e.w.Status.Failed)
				}
				wantReason(t, e.rec, v1alpha1.ReasonCompleted)
			},
		},
		{
			name: "batch: a finished Workload whose pods and chaperons are gone gets nothing again, and keeps its status",
			w: web(func(w *v1alpha1.Workload) {
				w.Status.Succeeded = 2
				complete, ready := v1alpha1.Finished(v1alpha1.TypeComplete, v1alpha1.ReasonCompleted, "all 2 replicas succeeded in a", w.Generation)
				w.Status.SetConditions(complete, ready)
			}),
			members:     func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates created again for a finished Workload", n)
				}
				if !e.w.Finished() || e.w.Status.Succeeded != 2 {
					t.Errorf("finished %v, succeeded %d: the status of a finished Workload changed", e.w.Finished(), e.w.Status.Succeeded)
				}
			},
		},
		{
			name:    "dependencies: candidates held in the chosen cluster and a runner-up get the ServiceAccount only, which their pods' admission needs",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.ReadyOfDesired = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}, {Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Namespace: "default"}}, "0/2"
				// Recorded where they are, so that whatever ends the
				// cluster's use lets them go (pruneDependencies, Release).
				s.Dependencies = append(copies("a", "ServiceAccount/runner"), copies("b", "ServiceAccount/runner")...)
			},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 runner-up", "1 runner-up"}},
			check: func(t *testing.T, e env) {
				for _, m := range e.members {
					if n := count(t, m, e.w, nil); n != 2 {
						t.Errorf("%d candidates in %s, want 2", n, m.Key.Name)
					}
					if copyIn(t, m, propagator.KindServiceAccount, "runner") == nil {
						t.Errorf("no ServiceAccount runner in %s", m.Key.Name)
					}
					for _, k := range []string{propagator.KindSecret, propagator.KindConfigMap} {
						if o := copyIn(t, m, k, map[string]string{propagator.KindSecret: "db", propagator.KindConfigMap: "settings"}[k]); o != nil {
							t.Errorf("%s %s went to %s before it was committed", k, o.GetName(), m.Key.Name)
						}
					}
				}
			},
		},
		{
			// The pass copies the ServiceAccount into the chosen a and the
			// runner-up b, then fails on a's first candidate: b has the copy
			// and no candidate. The scheduler then drops b. Nothing of the
			// Workload remains in b, so its copy goes; before, only
			// status.placedNamespaces named it, which nothing that lets a
			// cluster go read, and it stayed until the Workload's deletion.
			name:      "dependencies: a runner-up's ServiceAccount copy made in a pass that then failed goes once the scheduler drops the runner-up",
			w:         web(needs, nominate("a", "b")),
			sources:   theSources(),
			passes:    2,
			failFirst: true,
			members: func(*v1alpha1.Workload) clustertest.Members {
				failed := false
				failOnce := clustertest.WithInterceptor(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
					if _, ok := o.(*mcv1alpha1.PodChaperon); ok && !failed {
						failed = true
						return errFromMember
					}
					return c.Create(ctx, o, opts...)
				}})
				return clustertest.Members{clustertest.NewMember("a", failOnce), clustertest.NewMember("b")}
			},
			between: func(t *testing.T, e env) {
				b := e.members[1]
				if copyIn(t, b, propagator.KindServiceAccount, "runner") == nil || count(t, b, e.w, nil) != 0 {
					t.Fatal("the first pass did not leave b with the ServiceAccount's copy and no candidate")
				}
				e.w.Status.NominatedClusters = e.w.Status.NominatedClusters[:1]
				if err := e.mgmt.Status().Update(context.Background(), e.w); err != nil {
					t.Fatal(err)
				}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.NominatedClusters = s.NominatedClusters[:1]
				s.PlacedNamespaces, s.ReadyOfDesired = []v1alpha1.PlacedNamespace{{Cluster: clusterA, Namespace: "default"}}, "0/2"
				s.Dependencies = copies("a", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {}},
			check: func(t *testing.T, e env) {
				if o := copyIn(t, e.members[1], propagator.KindServiceAccount, "runner"); o != nil {
					t.Errorf("the ServiceAccount's copy stays in b, which the Workload no longer uses, used by %v", propagator.Users(o))
				}
				wantCopy(t, e.members[0], propagator.KindServiceAccount, "runner")
			},
		},
		{
			// Candidates wait in a and b with a copy of ServiceAccount
			// runner each; the template then names runner2, and the
			// Workload is deleted. Before, what the status recorded of a
			// cluster whose candidates wait was only the namespace, and
			// the deletion let go of what the template names now: the
			// copies of runner stayed, used by a Workload that was gone.
			name:    "dependencies: a deleted Workload lets go of a ServiceAccount's copies made while candidates waited, though its template names another since",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner2")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			passes: 2,
			between: func(t *testing.T, e env) {
				for _, m := range e.members {
					if copyIn(t, m, propagator.KindServiceAccount, "runner") == nil {
						t.Fatalf("the first pass made no copy of runner in %s", m.Key.Name)
					}
				}
				renameRunnerAndDelete(t, e)
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check:       wantNoRunnerCopies,
		},
		{
			// The first status write that names the copies is lost (as a
			// manager killed before it, or a write beaten by another
			// writer, loses it); the template then names runner2, and the
			// Workload is deleted. Before, the copies were made first and
			// recorded by that write: once lost, no status named runner's
			// copies, and the deletion, letting go of what the template
			// and the status name, left them in a and b for good.
			name:    "dependencies: a copy is recorded before it is made, so a status write lost after it leaves no copy that no status names",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner2")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			mgmt:   loseFirstPatch(`"dependencies"`),
			passes: 2,
			between: func(t *testing.T, e env) {
				for _, m := range e.members {
					if copyIn(t, m, propagator.KindServiceAccount, "runner") != nil && len(dependencies.Of(e.w.Status.Dependencies, m.Key)) == 0 {
						t.Errorf("%s holds a copy of runner that no status entry names", m.Key.Name)
					}
				}
				renameRunnerAndDelete(t, e)
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check:       wantNoRunnerCopies,
		},
		{
			// A pass whose copies are recorded first, and whose own write
			// is then lost: the copies are named, and the deletion lets
			// them go though the template names another since.
			name:    "dependencies: copies recorded first stay named when the pass's own status write is lost",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner2")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			mgmt: func() *interceptor.Funcs {
				patches := 0
				return &interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					if patches++; patches > 1 {
						// Every write after the first one is lost.
						return kerrors.NewConflict(schema.GroupResource{Resource: "workloads"}, "web", errFromMember)
					}
					return c.SubResource(sub).Patch(ctx, o, p, opts...)
				}}
			}(),
			passes: 2,
			between: func(t *testing.T, e env) {
				for _, m := range e.members {
					if copyIn(t, m, propagator.KindServiceAccount, "runner") == nil {
						t.Fatalf("the first pass made no copy of runner in %s", m.Key.Name)
					}
					if !slices.ContainsFunc(e.w.Status.Dependencies, func(d v1alpha1.Dependency) bool {
						return d.Cluster.Name == m.Key.Name && d.Kind == propagator.KindServiceAccount && d.Name == "runner"
					}) {
						t.Errorf("no status entry names the copy of runner in %s: %+v", m.Key.Name, e.w.Status.Dependencies)
					}
				}
				renameRunnerAndDelete(t, e)
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check:       wantNoRunnerCopies,
		},
		{
			name:    "dependencies: at commit they are copied into the chosen cluster before its candidates are allowed, and only there",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, []v1alpha1.Dependency{{Cluster: clusterA, Kind: propagator.KindConfigMap, Name: "settings", Copied: true}, {Cluster: clusterA, Kind: propagator.KindSecret, Name: "db", Copied: true}, {Cluster: clusterA, Kind: propagator.KindServiceAccount, Name: "runner", Copied: true}}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "b": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Fatalf("%d allowed in a, want 2", n)
				}
				s, ok := copyIn(t, e.members[0], propagator.KindSecret, "db").(*corev1.Secret)
				if !ok || string(s.Data["password"]) != "s3cret" || !propagator.CopiedFrom(s, "default/db") || propagator.Users(s)[0] != string(e.w.UID) {
					t.Errorf("Secret db in a: %+v", s)
				}
				if c, ok := copyIn(t, e.members[0], propagator.KindConfigMap, "settings").(*corev1.ConfigMap); !ok || c.Data["mode"] != "fast" {
					t.Errorf("ConfigMap settings in a: %+v", c)
				}
				if copyIn(t, e.members[1], propagator.KindSecret, "db") != nil {
					t.Error("the Secret went to the runner-up b")
				}
				a := v1alpha1.ClusterReference{Name: "a", Namespace: "default"}
				want := []v1alpha1.Dependency{{Cluster: a, Kind: "ConfigMap", Name: "settings", Copied: true}, {Cluster: a, Kind: "Secret", Name: "db", Copied: true}, {Cluster: a, Kind: "ServiceAccount", Name: "runner", Copied: true}}
				if diff := cmp.Diff(want, e.w.Status.Dependencies); diff != "" {
					t.Errorf("status.dependencies (-want +got):\n%s", diff)
				}
				for _, ev := range e.rec.Events {
					if strings.Contains(ev.Message, "s3cret") {
						t.Errorf("an Event carries the Secret's data: %q", ev.Message)
					}
				}
			},
		},
		{
			name:    "dependencies: a missing Secret holds the pods, and Ready and an Event name it",
			w:       web(needs, nominate("a", "b")),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b")}
			},
			// Only the member can end it: looked at again.
			want:        reconcile.Result{RequeueAfter: v1alpha1.RejectionBackoffBase},
			wantStatus:  refused(v1alpha1.ReasonMissingDependency, "the pods wait for their dependencies: Secret default/db does not exist (nor does default/db in default/a)"),
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check: func(t *testing.T, e env) {
				for _, m := range e.members {
					if n := count(t, m, e.w, nil); n != 0 {
						t.Errorf("%d candidates in %s, want none while the Secret is missing", n, m.Key.Name)
					}
				}
				c := e.w.Status.GetCondition(xpv2.TypeReady)
				if c.Reason != v1alpha1.ReasonMissingDependency || !strings.Contains(c.Message, "Secret default/db does not exist") {
					t.Errorf("Ready %s %q, want MissingDependency naming Secret default/db", c.Reason, c.Message)
				}
				wantReason(t, e.rec, v1alpha1.ReasonMissingDependency)
			},
		},
		{
			// Held, the Workload keeps only its chosen cluster's
			// candidates: runner-ups give their room back until the
			// object comes.
			name:    "dependencies: a held Workload's runner-up candidates go; the chosen cluster's stay",
			w:       web(needs, nominate("a", "b")),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2)...)), clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, runnerUp, reserved)...))}
			},
			want:        reconcile.Result{RequeueAfter: v1alpha1.RejectionBackoffBase},
			wantStatus:  refused(v1alpha1.ReasonMissingDependency, "the pods wait for their dependencies: Secret default/db does not exist (nor does default/db in default/a)"),
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {}},
		},
		{
			// The cluster committed before the move holds allowed
			// candidates: as a runner-up it is still not delivered to.
			name:    "dependencies: a runner-up holding allowed candidates gets no Secret or ConfigMap",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2)...)), clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			want:        reconcile.Result{RequeueAfter: timeout},
			wantStatus:  notCounted,
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				for _, kind := range []string{propagator.KindSecret, propagator.KindConfigMap} {
					if c := copyIn(t, e.members[1], kind, map[string]string{propagator.KindSecret: "db", propagator.KindConfigMap: "settings"}[kind]); c != nil {
						t.Errorf("%s %s copied into the runner-up b", kind, c.GetName())
					}
				}
			},
		},
		{
			name: "dependencies: a watch that has not listed yet holds the reconcile, and nothing else",
			w:    web(needs),
			sources: func() *mapSources {
				s := theSources()
				s.Unsynced[shared.CoreKey(propagator.KindSecret, "default", "db")] = true
				return s
			}(),
			members:     func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates, want none before the Secret's watch lists", n)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason == v1alpha1.ReasonMissingDependency {
					t.Errorf("Ready %s %q: a watch that is listing is no missing object", c.Reason, c.Message)
				}
			},
		},
		{
			name:    "dependencies: an object placer did not copy is left as it is and reported; the pods go ahead",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(append(candidates(w, 2, reserved),
					theirs(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "theirs"}}))...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, append([]v1alpha1.Dependency{{Cluster: clusterA, Kind: propagator.KindConfigMap, Name: "settings", Message: "ConfigMap default/settings in default/a was not copied by placer from default/settings: it is left as it is, and the pods use it"}}, copies("a", "Secret/db", "ServiceAccount/runner")...)
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Errorf("%d allowed, want 2", n)
				}
				c := copyIn(t, e.members[0], propagator.KindConfigMap, "settings").(*corev1.ConfigMap)
				if c.Data["mode"] != "theirs" || len(propagator.Users(c)) != 0 {
					t.Errorf("the member's own ConfigMap was changed: %+v", c)
				}
				found := false
				for _, d := range e.w.Status.Dependencies {
					found = found || d.Kind == "ConfigMap" && !d.Copied && strings.Contains(d.Message, "was not copied by placer from default/settings")
				}
				if !found {
					t.Errorf("status.dependencies %+v does not report the conflict", e.w.Status.Dependencies)
				}
				wantReason(t, e.rec, v1alpha1.ReasonNameConflict)
			},
		},
		{
			name:    "dependencies: an edited source is synced into the committed cluster; another Workload's use is kept",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db"), Data: map[string][]byte{"password": []byte("old")}}, "other")
				return runningIn(w, nil, old)
			},
			wantStatus:  runningWithCopies,
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check:       func(t *testing.T, e env) { wantSynced(t, e.members[0], string(e.w.UID)) },
		},
		{
			name: "dependencies: a copy the template no longer references is let go in the committed cluster",
			w: web(func(w *v1alpha1.Workload) {
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Kind: "Secret", Name: "old", Copied: true}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("old")}, string(w.UID))
				return runningIn(w, nil, old)
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				s.Dependencies = nil
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if o := copyIn(t, e.members[0], propagator.KindSecret, "old"); o != nil {
					t.Errorf("Secret old stays, used by %v", propagator.Users(o))
				}
				if len(e.w.Status.Dependencies) != 0 {
					t.Errorf("status.dependencies = %+v, want none", e.w.Status.Dependencies)
				}
			},
		},
		{
			name:    "dependencies: a deleted Workload lets go of its copies; one another Workload uses stays",
			w:       web(needs, func(w *v1alpha1.Workload) { w.DeletionTimestamp = ptr.To(metav1.Now()) }),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				shared := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db")}, string(w.UID), "other")
				own := usedCopy(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, string(w.UID))
				return runningIn(w, nil, shared, own)
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(*v1alpha1.WorkloadStatus) {},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				s := copyIn(t, e.members[0], propagator.KindSecret, "db")
				if s == nil || !cmp.Equal(propagator.Users(s), []string{"other"}) {
					t.Errorf("the shared Secret: %v, want it kept for the other Workload alone", s)
				}
				if o := copyIn(t, e.members[0], propagator.KindConfigMap, "settings"); o != nil {
					t.Errorf("the ConfigMap only this Workload used stays, used by %v", propagator.Users(o))
				}
			},
		},
		// Before, the records went with no word: the copies left in the
		// deleted cluster (let go while it did not answer) were named
		// nowhere.
		{
			name: "dependencies: the copies recorded in a cluster whose KubernetesCluster is gone are abandoned, with an Event naming it",
			w: web(func(w *v1alpha1.Workload) {
				w.Status.Dependencies = copies("gone", "ConfigMap/settings")
			}),
			members: func(w *v1alpha1.Workload) clustertest.Members { return runningIn(w, nil) },
			check: func(t *testing.T, e env) {
				if slices.ContainsFunc(e.w.Status.Dependencies, func(d v1alpha1.Dependency) bool { return d.Cluster.Name == "gone" }) {
					t.Errorf("status.dependencies %+v still name the deleted cluster", e.w.Status.Dependencies)
				}
				wantReason(t, e.rec, reasonAbandoned)
				for _, ev := range e.rec.Events {
					if ev.Reason == reasonAbandoned && !strings.Contains(ev.Message, "default/gone") {
						t.Errorf("the Event says %q, want it to name default/gone", ev.Message)
					}
				}
			},
		},
		// Before, the records stayed until the whole deletion was done:
		// a's drain (which waits for what the Workload recorded there)
		// waited for b, which does not answer.
		{
			name: "deletion: what a cluster let go of is forgotten while another cluster holds the deletion, so that the first one's drain need not wait for it",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.DeletionTimestamp = ptr.To(metav1.Now())
				w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "b", Namespace: "default"}
				w.Status.Dependencies = copies("a", "ServiceAccount/runner")
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{
					clustertest.NewMember("a", clustertest.WithObjects(usedCopy(&corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}, string(w.UID)))),
					clustertest.NewMember("b", clustertest.NotSynced()),
				}
			},
			want:        reconcile.Result{RequeueAfter: cleanupRetry},
			wantStatus:  func(s *v1alpha1.WorkloadStatus) { s.Dependencies, s.PlacedNamespaces = nil, nil },
			wantMembers: map[string][]string{"a": {}, "b": {}},
			check: func(t *testing.T, e env) {
				if o := copyIn(t, e.members[0], propagator.KindServiceAccount, "runner"); o != nil {
					t.Errorf("the ServiceAccount copy stays in a, used by %v", propagator.Users(o))
				}
				if len(e.w.Finalizers) != 1 {
					t.Errorf("finalizers %v: removed while b may hold candidates", e.w.Finalizers)
				}
			},
		},
		{
			name:    "dependencies: a member that does not let the tenant copy them keeps what it has: the pods go ahead, and the status says why",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return reservedIn(w, refuseSecretGets)
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, []v1alpha1.Dependency{{Cluster: clusterA, Kind: propagator.KindConfigMap, Name: "settings", Copied: true}, {Cluster: clusterA, Kind: propagator.KindSecret, Name: "db", Message: "Secret default/db in default/a was not copied: the cluster does not let placer:tenant:default read or write it there (bind ClusterRole placer-member-dependencies): the pods use what the cluster has"}, {Cluster: clusterA, Kind: propagator.KindServiceAccount, Name: "runner", Copied: true}}
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, isAllowed); n != 2 {
					t.Errorf("%d candidates allowed, want 2", n)
				}
				found := false
				for _, d := range e.w.Status.Dependencies {
					found = found || d.Kind == "Secret" && !d.Copied && strings.Contains(d.Message, "placer-member-dependencies")
				}
				if !found {
					t.Errorf("status.dependencies %+v does not say the Secret was not copied, and why", e.w.Status.Dependencies)
				}
			},
		},
		{
			name: "dependencies: the ServiceAccount's image pull Secret goes too, and no watch is stopped while it is needed",
			w:    web(func(w *v1alpha1.Workload) { w.Spec.TargetDeployment.Template.Spec.ServiceAccountName = "puller" }),
			sources: sources(&corev1.ServiceAccount{ObjectMeta: objectMeta("puller"), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}}},
				&corev1.Secret{ObjectMeta: objectMeta("pull"), Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			passes: 3,
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ServiceAccount/puller", "Secret/pull")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantCopy(t, e.members[0], propagator.KindSecret, "pull")
				if sa, ok := copyIn(t, e.members[0], propagator.KindServiceAccount, "puller").(*corev1.ServiceAccount); !ok || len(sa.ImagePullSecrets) != 1 {
					t.Errorf("the ServiceAccount in a: %+v", sa)
				}
			},
		},
		{
			name:    "dependencies: with NoReservation the member's own scheduler binds at once: everything is copied with the candidates",
			w:       web(needs, func(w *v1alpha1.Workload) { w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation }),
			sources: theSources(),
			members: func(*v1alpha1.Workload) clustertest.Members { return clustertest.Members{clustertest.NewMember("a")} },
			want:    reconcile.Result{RequeueAfter: timeout},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.Dependencies, s.ReadyOfDesired = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner"), "0/2"
			},
			wantMembers: map[string][]string{"a": {"0 no-hold", "1 no-hold"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates, want 2", n)
				}
				if copyIn(t, e.members[0], propagator.KindSecret, "db") == nil || copyIn(t, e.members[0], propagator.KindConfigMap, "settings") == nil {
					t.Error("the Secret or the ConfigMap is not in a with the candidates")
				}
			},
		},
		{
			// One reconciler, two passes: the first copies db and records
			// it; the copy is deleted in the member and a replica added;
			// the second, which might trust what it did or what the
			// status says, must make the copy again.
			name:    "dependencies: a copy gone from the committed cluster is made again before a new replica binds there",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			passes: 2,
			between: func(t *testing.T, e env) {
				if d := e.w.Status.Dependencies; len(d) == 0 {
					t.Fatalf("status.dependencies empty after the first pass: nothing was copied")
				}
				c := copyIn(t, e.members[0], propagator.KindSecret, "db")
				if c == nil {
					t.Fatal("Secret db was not copied by the first pass")
				}
				ctx := context.Background()
				if err := e.members[0].Client.Delete(ctx, c); err != nil {
					t.Fatal(err)
				}
				e.w.Spec.TargetDeployment.Replicas = ptr.To[int32](3)
				if err := e.mgmt.Update(ctx, e.w); err != nil {
					t.Fatal(err)
				}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed", "2 no-hold"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 3 {
					t.Errorf("%d candidates, want 3", n)
				}
				wantCopy(t, e.members[0], propagator.KindSecret, "db")
			},
		},
		{
			// One phase delivers them: the new candidate's and the
			// committed cluster's needs are one delivery, not two.
			name:    "dependencies: a committed Workload scaled up gets them once in the pass, before its new candidate",
			w:       web(needs, st.Replicas(3)),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				dbGets = 0
				countGets := countingGets("db", &dbGets)
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...), countGets)}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
				s.ReadyOfDesired = "0/3"
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed", "2 no-hold"}},
			check: func(t *testing.T, e env) {
				if dbGets != 1 {
					t.Errorf("Secret db read %d times in the member, want once: one delivery per reconcile", dbGets)
				}
				wantCopy(t, e.members[0], propagator.KindSecret, "db")
			},
		},
		{
			name:    "dependencies: another source's copy in the committed cluster holds what is new there; Ready says why",
			w:       web(needs, st.Replicas(3)),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				other := propagator.NewCopy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}}, "default")
				return runningIn(w, nil, other)
			},
			// Only the member can end it: looked at again.
			want: reconcile.Result{RequeueAfter: v1alpha1.RejectionBackoffBase},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(3, 3, 2, 2, v1alpha1.NotReady(v1alpha1.ReasonNameConflict, "Secret default/db in default/a is placer's copy of team-b/db, not of default/db: the pods would read another Workload's data", 1))(s)
				s.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
				// Named, each as it is: the copy made before the refusal
				// (recorded first), the refused object, and the one after it.
				s.Dependencies = refusedAfter("a", "ConfigMap/settings", "Secret/db", "Secret default/db in default/a is placer's copy of team-b/db, not of default/db: the pods would read another Workload's data", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates, want the 2 that run and no new one", n)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason != v1alpha1.ReasonNameConflict || !strings.Contains(c.Message, "team-b/db") {
					t.Errorf("Ready %s %q, want NameConflict naming team-b/db", c.Reason, c.Message)
				}
				if s := copyIn(t, e.members[0], propagator.KindSecret, "db"); len(propagator.Users(s)) != 0 {
					t.Errorf("the other source's copy was used: %v", propagator.Users(s))
				}
			},
		},
		// The refusal stays (only the member can end it): the first
		// pass records and writes what it found; the passes after it,
		// each woken by the last one's write as much as by the member,
		// find the status saying so already and write nothing. Before
		// they took back what the refusal kept them from copying, and
		// recorded it again, a write each, without end.
		func() propagatorCase {
			patches := 0
			return propagatorCase{
				name:    "dependencies: a refusal that stays is written once, not again at each pass",
				w:       web(needs, st.Replicas(3)),
				sources: theSources(),
				members: func(w *v1alpha1.Workload) clustertest.Members {
					other := propagator.NewCopy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}}, "default")
					return runningIn(w, nil, other)
				},
				mgmt: &interceptor.Funcs{SubResourcePatch: func(ctx context.Context, c client.Client, sub string, o client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
					patches++
					return c.SubResource(sub).Patch(ctx, o, p, opts...)
				}},
				passes: 4,
				between: func(t *testing.T, e env) {
					if patches > 2 {
						t.Errorf("%d status writes by now, want the first pass's record and its own write, none after", patches)
					}
				},
				wantStatus: func(s *v1alpha1.WorkloadStatus) {
					counts(3, 3, 2, 2, v1alpha1.NotReady(v1alpha1.ReasonNameConflict, "Secret default/db in default/a is placer's copy of team-b/db, not of default/db: the pods would read another Workload's data", 1))(s)
					s.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
					s.Dependencies = refusedAfter("a", "ConfigMap/settings", "Secret/db", "Secret default/db in default/a is placer's copy of team-b/db, not of default/db: the pods would read another Workload's data", "ServiceAccount/runner")
				},
				check: func(t *testing.T, e env) {
					if patches > 2 {
						t.Errorf("%d status writes in 4 passes, want at most 2 (the first pass's record and its own write)", patches)
					}
				},
			}
		}(),
		{
			name:    "dependencies: another source's copy in the chosen cluster rejects it at commit",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				other := propagator.NewCopy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}}, "default")
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(append(candidates(w, 2, reserved), other)...))}
			},
			wantStatus: both(rejected(2, "a", v1alpha1.ReasonNameConflict, "Secret default/db in default/a is placer's copy of team-b/db, not of default/db: the pods would read another Workload's data"), func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
				// Named, each as it is: the copy made before the refusal
				// (recorded first), the refused object, and the one after it.
				s.Dependencies = refusedAfter("a", "ConfigMap/settings", "Secret/db", "Secret default/db in default/a is placer's copy of team-b/db, not of default/db: the pods would read another Workload's data", "ServiceAccount/runner")
			}),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejected(t, e.w, "a", v1alpha1.ReasonNameConflict, "team-b/db")
				if n := count(t, e.members[0], e.w, isAllowed); n != 0 {
					t.Errorf("%d candidates allowed", n)
				}
			},
		},
		{
			name:    "dependencies: a Secret missing from the Workload's namespace that the cluster has only as placer's copy of another tenant's holds the pods",
			w:       web(needs),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				other := propagator.NewCopy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}}, "default")
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(other))}
			},
			want:        reconcile.Result{RequeueAfter: v1alpha1.RejectionBackoffBase},
			wantStatus:  refused(v1alpha1.ReasonMissingDependency, "the pods wait for their dependencies: Secret default/db does not exist, and default/db in default/a is placer's copy of team-b/db, which the pods may not read"),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 0 {
					t.Errorf("%d candidates: their pods would read team-b's Secret", n)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason != v1alpha1.ReasonMissingDependency || !strings.Contains(c.Message, "team-b/db") {
					t.Errorf("Ready %s %q, want MissingDependency naming team-b/db", c.Reason, c.Message)
				}
			},
		},
		// A helper's hunt found it: an optional reference was dropped when
		// its source was missing, never looked for in the member, and the
		// kubelet mounted the other tenant's copy.
		{
			name: "dependencies: an optional Secret missing from the Workload's namespace that the cluster has only as placer's copy of another tenant's holds the pods too",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Optional = ptr.To(true)
			}),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				other := propagator.NewCopy(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "db"}}, "default")
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(other))}
			},
			want:        reconcile.Result{RequeueAfter: v1alpha1.RejectionBackoffBase},
			wantStatus:  refused(v1alpha1.ReasonMissingDependency, "the pods wait for their dependencies: Secret default/db does not exist, and default/db in default/a is placer's copy of team-b/db, which the pods may not read"),
			wantMembers: map[string][]string{"a": {}},
		},
		{
			name: "dependencies: an optional Secret missing from the Workload's namespace is not looked for where no pod starts (a committed cluster, all running)",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Optional = ptr.To(true)
			}),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				dbGets = 0
				countGets := countingGets("db", &dbGets)
				return runningIn(w, []clustertest.Option{countGets})
			},
			check: func(t *testing.T, e env) {
				if dbGets != 0 {
					t.Errorf("%d reads of Secret db in the member by a pass that starts no pod, want none", dbGets)
				}
			},
		},
		{
			name: "dependencies: an optional Secret missing everywhere holds nothing",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Optional = ptr.To(true)
			}),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a")}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates, want 2: an optional reference that is nowhere holds nothing", n)
				}
			},
		},
		{
			// And the member is asked once per reconcile, though both the
			// hold and the candidates' creation want to know.
			name:    "dependencies: an object missing from the Workload's namespace that the cluster has holds nothing",
			w:       web(needs),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(*v1alpha1.Workload) clustertest.Members {
				dbGets = 0
				countGets := countingGets("db", &dbGets)
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(theirs(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}})), countGets)}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.ReadyOfDesired = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, "0/2"
				s.Dependencies = copies("a", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {"0", "1"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates, want 2: the cluster has the Secret", n)
				}
				if dbGets != 1 {
					t.Errorf("Secret db read %d times in the member, want once per reconcile", dbGets)
				}
				if c := e.w.Status.GetCondition(xpv2.TypeReady); c.Reason == v1alpha1.ReasonMissingDependency {
					t.Errorf("held: %s", c.Message)
				}
			},
		},
		{
			name: "dependencies: a cluster left lets go of its copies once nothing of the Workload remains there",
			w: web(needs, left, func(w *v1alpha1.Workload) {
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Kind: "Secret", Name: "old", Copied: true}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("old")}, string(w.UID))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(old)),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in b", 1))(s)
				countedLeft(0)(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Namespace: "default"}}, copies("b", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if o := copyIn(t, e.members[0], propagator.KindSecret, "old"); o != nil {
					t.Errorf("Secret old stays in a, which the Workload left, used by %v", propagator.Users(o))
				}
				for _, d := range e.w.Status.Dependencies {
					if d.Cluster.Name == "a" {
						t.Errorf("status.dependencies still names a: %+v", d)
					}
				}
			},
		},
		{
			// Before, a Workload with no cluster (rejected where it was
			// proving itself, and nothing else fits) stopped before
			// anything let its copies go: they stayed in a for as long as
			// it found no cluster, and for good once a was deleted (its
			// drain waits for chaperons, not copies).
			name: "dependencies: a Workload with no cluster lets go of its copies where nothing of it remains",
			w: web(needs, withFinalizer, func(w *v1alpha1.Workload) {
				w.Status.ClusterRef, w.Status.NominatedClusters = nil, nil
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Kind: "Secret", Name: "old", Copied: true}}
				w.Status.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("old")}, string(w.UID))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(old))}
			},
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				if o := copyIn(t, e.members[0], propagator.KindSecret, "old"); o != nil {
					t.Errorf("Secret old stays in a, where nothing of the Workload remains, used by %v", propagator.Users(o))
				}
				if len(e.w.Status.Dependencies)+len(e.w.Status.PlacedNamespaces) != 0 {
					t.Errorf("status still names a: %+v, %+v", e.w.Status.Dependencies, e.w.Status.PlacedNamespaces)
				}
			},
		},
		{
			name:    "dependencies: a runner-up that refuses the candidates loses the ServiceAccount copied for them",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(),
			members: func(*v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b", forbiddenCreate)}
			},
			want: reconcile.Result{RequeueAfter: timeout},
			wantStatus: both(rejected(2, "b", v1alpha1.ReasonForbidden, `ServiceAccount default/runner in default/b: the cluster refused it: podchaperons.multicluster.placer.dev "runner" is forbidden: denied by the member`), func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ServiceAccount/runner")
			}),
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {}},
			check: func(t *testing.T, e env) {
				wantRejected(t, e.w, "b", v1alpha1.ReasonForbidden, "denied by the member")
				if sa := copyIn(t, e.members[1], propagator.KindServiceAccount, "runner"); sa != nil {
					t.Errorf("the ServiceAccount stays in b, used by %v", propagator.Users(sa))
				}
			},
		},
		{
			name: "dependencies: a copy the new template no longer references stays while old pods may read it",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Kind: "Secret", Name: "old", Copied: true}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				before := w.DeepCopy()
				before.Spec.TargetDeployment.Template.Spec.Containers[0].Image = "before"
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("old")}, string(w.UID))
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(append(candidates(before, 2, reserved, allowed, running), old)...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner", "Secret/old")
			},
			wantMembers: map[string][]string{"a": {"0 no-hold", "0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantCopy(t, e.members[0], propagator.KindSecret, "old")
				found := false
				for _, d := range e.w.Status.Dependencies {
					found = found || d.Name == "old"
				}
				if !found {
					t.Errorf("status.dependencies %+v forgot Secret old mid-rollout", e.w.Status.Dependencies)
				}
			},
		},
		{
			name:    "dependencies: an immutable copy whose source changed is replaced, with its users",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db"), Data: map[string][]byte{"password": []byte("old")}, Immutable: ptr.To(true)}, "other")
				return runningIn(w, []clustertest.Option{secretsAsTheAPIServer}, old)
			},
			wantStatus:  runningWithCopies,
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check:       func(t *testing.T, e env) { wantSynced(t, e.members[0], string(e.w.UID)) },
		},
		// A Secret's type never changes in place: before, the copy kept
		// its old type (a pull secret made again as one the kubelet uses
		// was not one in the member), or its update was refused on every
		// pass when the old type's keys went.
		{
			name: "dependencies: a Secret made again with another type: its copy is replaced, with its users",
			w:    web(needs),
			sources: sources(&corev1.Secret{ObjectMeta: objectMeta("db"), Type: corev1.SecretTypeBasicAuth, Data: map[string][]byte{"password": []byte("s3cret")}},
				&corev1.ConfigMap{ObjectMeta: objectMeta("settings"), Data: map[string]string{"mode": "fast"}}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				old := usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte("old")}}, "other")
				return runningIn(w, []clustertest.Option{secretsAsTheAPIServer}, old)
			},
			wantStatus:  runningWithCopies,
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantSynced(t, e.members[0], string(e.w.UID))
				if s := copyIn(t, e.members[0], propagator.KindSecret, "db").(*corev1.Secret); s.Type != corev1.SecretTypeBasicAuth {
					t.Errorf("the copy's type %q, want the source's %q", s.Type, corev1.SecretTypeBasicAuth)
				}
			},
		},
		{
			name: "dependencies: a source deleted while the pods still reference it: the copy stays, and what runs keeps running",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: clusterA, Kind: "Secret", Name: "db", Copied: true}}
			}),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return runningIn(w, nil, usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db")}, string(w.UID)))
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ConfigMap/settings", "ServiceAccount/runner", "Secret/db")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantCopy(t, e.members[0], propagator.KindSecret, "db")
				if !slices.ContainsFunc(e.w.Status.Dependencies, func(d v1alpha1.Dependency) bool { return d.Name == "db" }) {
					t.Errorf("status.dependencies %+v forgot Secret db", e.w.Status.Dependencies)
				}
			},
		},
		{
			name:    "dependencies: a committed Workload held for a missing object still scales down and counts",
			w:       web(needs, st.Replicas(1)),
			sources: sources(&corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}),
			members: func(w *v1alpha1.Workload) clustertest.Members { return runningIn(w, nil) },
			want:    reconcile.Result{RequeueAfter: v1alpha1.RejectionBackoffBase},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(1, 1, 1, 1, v1alpha1.NotReady(v1alpha1.ReasonMissingDependency, "the pods wait for their dependencies: Secret default/db does not exist (nor does default/db in default/a)", 1))(s)
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[0], e.w, nil); n != 1 {
					t.Errorf("%d candidates, want 1: the replica removed goes", n)
				}
				c := e.w.Status.GetCondition(xpv2.TypeReady)
				if c.Reason != v1alpha1.ReasonMissingDependency || e.w.Status.ReadyReplicas != 1 {
					t.Errorf("Ready %s, readyReplicas %d; want MissingDependency and 1 counted", c.Reason, e.w.Status.ReadyReplicas)
				}
			},
		},
		{
			name: "dependencies: the chosen cluster registered again under another name is not left: its copies stay",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: "a-again", Namespace: "default"}, Reason: v1alpha1.ReasonTainted}}
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: v1alpha1.ClusterReference{Name: "a-again", Namespace: "default"}, Kind: "Secret", Name: "db", Copied: true}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				a := runningIn(w, nil, usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db")}, string(w.UID)))[0]
				twin := &clustertest.Member{Key: types.NamespacedName{Namespace: "default", Name: "a-again"}, HostName: a.HostName, Client: a.Client}
				return clustertest.Members{a, twin}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
				// a-again is a: nothing of an old copy there; the scheduler lets the entry go.
				s.ClusterCounts = append(s.ClusterCounts, v1alpha1.ClusterCount{Cluster: v1alpha1.ClusterReference{Name: "a-again", Namespace: "default"}})
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, append(copies("a-again", "Secret/db"), copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")...)
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}, "a-again": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				wantCopy(t, e.members[0], propagator.KindSecret, "db")
				if n := count(t, e.members[0], e.w, nil); n != 2 {
					t.Errorf("%d candidates in a, want 2", n)
				}
			},
		},
		{
			name:    "dependencies: a write the member refuses after letting the tenant read (a quota, an admission plugin) refuses the cluster",
			w:       web(needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return reservedIn(w, refuseSecretCreates)
			},
			wantStatus: both(rejected(2, "a", v1alpha1.ReasonForbidden, `Secret default/db in default/a: the cluster refused it: secrets "db" is forbidden: denied by the member`), func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}
				// Named, each as it is: the copy made before the refusal
				// (recorded first), the refused object, and the one after it.
				s.Dependencies = refusedAfter("a", "ConfigMap/settings", "Secret/db", `Secret default/db in default/a: the cluster refused it: secrets "db" is forbidden: denied by the member`, "ServiceAccount/runner")
			}),
			wantMembers: map[string][]string{"a": {}},
			check: func(t *testing.T, e env) {
				wantRejected(t, e.w, "a", v1alpha1.ReasonForbidden, "denied by the member")
				if n := count(t, e.members[0], e.w, isAllowed); n != 0 {
					t.Errorf("%d candidates allowed without their Secret", n)
				}
			},
		},
		{
			name: "dependencies: a cluster that rejected the Workload lets go of its copies once its candidates are gone",
			w: web(needs, func(w *v1alpha1.Workload) {
				w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "b", Namespace: "default"}
				w.Status.Dependencies = []v1alpha1.Dependency{{Cluster: clusterA, Kind: "Secret", Name: "db", Copied: true}}
			}),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(usedCopy(&corev1.Secret{ObjectMeta: objectMeta("db")}, string(w.UID)))),
					clustertest.NewMember("b", clustertest.WithObjects(candidates(w, 2, reserved, allowed, running)...))}
			},
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in b", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Namespace: "default"}}, copies("b", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
			},
			wantMembers: map[string][]string{"a": {}, "b": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if o := copyIn(t, e.members[0], propagator.KindSecret, "db"); o != nil {
					t.Errorf("Secret db stays in a, used by %v", propagator.Users(o))
				}
				if slices.ContainsFunc(e.w.Status.Dependencies, func(d v1alpha1.Dependency) bool { return d.Cluster.Name == "a" }) {
					t.Errorf("status.dependencies still names a: %+v", e.w.Status.Dependencies)
				}
			},
		},
		{
			name:    "dependencies: a runner-up whose second candidate fails keeps what its first needs",
			w:       web(needs, nominate("a", "b")),
			sources: theSources(),
			members: func(*v1alpha1.Workload) clustertest.Members {
				n := 0
				second := clustertest.WithInterceptor(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
					if _, ok := o.(*mcv1alpha1.PodChaperon); ok {
						if n++; n == 2 {
							return errFromMember
						}
					}
					return c.Create(ctx, o, opts...)
				}})
				return clustertest.Members{clustertest.NewMember("a"), clustertest.NewMember("b", second)}
			},
			wantErr: true,
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				s.PlacedNamespaces, s.ReadyOfDesired = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}, {Cluster: v1alpha1.ClusterReference{Name: "b", Namespace: "default"}, Namespace: "default"}}, "0/2"
				s.Dependencies = append(copies("a", "ServiceAccount/runner"), copies("b", "ServiceAccount/runner")...)
			},
			wantMembers: map[string][]string{"a": {"0", "1"}, "b": {"0 runner-up"}},
			check: func(t *testing.T, e env) {
				if n := count(t, e.members[1], e.w, nil); n != 1 {
					t.Fatalf("%d candidates in b, want the first", n)
				}
				wantCopy(t, e.members[1], propagator.KindServiceAccount, "runner")
			},
		},
		{
			// Before, a first candidate's create that failed released what
			// the pass had copied for it when the watch showed none: a
			// candidate made a pass ago, not in the watch yet, whose pod
			// binds unheld, lost its Secret and ConfigMap.
			name:    "dependencies: a gang of one whose candidate's create fails keeps its copies while a live list shows its candidate there",
			w:       web(st.Replicas(1), needs),
			sources: theSources(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				ch := propagator.NewChaperon(w, w.TargetNamespace(nil), 0, propagator.NoHold)
				timeout := clustertest.WithInterceptor(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
					if _, ok := o.(*mcv1alpha1.PodChaperon); ok {
						return kerrors.NewServerTimeout(schema.GroupResource{Group: mcv1alpha1.Group, Resource: "podchaperons"}, "create", 1)
					}
					return c.Create(ctx, o, opts...)
				}})
				return clustertest.Members{clustertest.NewMember("a", clustertest.NotWatchedYet(ch), timeout)}
			},
			wantErr:     true,
			wantMembers: map[string][]string{"a": {"0 no-hold"}},
			check: func(t *testing.T, e env) {
				for _, k := range []string{propagator.KindSecret, propagator.KindConfigMap, propagator.KindServiceAccount} {
					wantCopy(t, e.members[0], k, map[string]string{propagator.KindSecret: "db", propagator.KindConfigMap: "settings", propagator.KindServiceAccount: "runner"}[k])
				}
			},
		},
		{
			name: "dependencies: a claim of spec.resources sends the connection Secret it names",
			w: web(func(w *v1alpha1.Workload) {
				w.Spec.Resources = []v1alpha1.ResourceReference{{APIVersion: "database.example.org/v1alpha1", Kind: "PostgreSQLInstance", Name: "pg"}}
			}),
			sources: func() *mapSources {
				claim := &unstructured.Unstructured{}
				claim.SetAPIVersion("database.example.org/v1alpha1")
				claim.SetKind("PostgreSQLInstance")
				claim.SetNamespace("default")
				claim.SetName("pg")
				_ = unstructured.SetNestedField(claim.Object, "pg-conn", "spec", "writeConnectionSecretToRef", "name")
				return sources(claim, &corev1.Secret{ObjectMeta: objectMeta("pg-conn"), Data: map[string][]byte{"endpoint": []byte("x")}})
			}(),
			members: func(w *v1alpha1.Workload) clustertest.Members {
				return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 2, reserved)...))}
			},
			// The claim's watch lists first, then the Secret's it names.
			passes: 2,
			wantStatus: func(s *v1alpha1.WorkloadStatus) {
				counts(2, 2, 0, 0, v1alpha1.NotReady(v1alpha1.ReasonPending, "0 of 2 replicas ready in a", 1))(s)
				s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "Secret/pg-conn")
			},
			wantMembers: map[string][]string{"a": {"0 reserved allowed", "1 reserved allowed"}},
			check: func(t *testing.T, e env) {
				if s, ok := copyIn(t, e.members[0], propagator.KindSecret, "pg-conn").(*corev1.Secret); !ok || string(s.Data["endpoint"]) != "x" {
					t.Errorf("the connection Secret in a: %+v", s)
				}
			},
		},
	}
}

// runPropagatorCase runs a case's passes of Reconcile and its checks.
func runPropagatorCase(t *testing.T, tc propagatorCase) {
	ctx := context.Background()
	w := tc.w
	before := w.DeepCopy()
	members := tc.members(w)
	objs := []client.Object{w, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b"}}}
	for _, m := range members {
		objs = append(objs, st.Cluster(m.Key.Name, append([]st.ClusterOption{st.InNamespace(m.Key.Namespace)}, tc.clusters[m.Key.Name]...)...))
	}
	for _, name := range tc.unconnected {
		objs = append(objs, st.Cluster(name, tc.clusters[name]...))
	}
	b := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithStatusSubresource(&v1alpha1.Workload{})
	if tc.mgmt != nil {
		b = b.WithInterceptorFuncs(*tc.mgmt)
	}
	mgmt := b.Build()
	rec := &recorder{}
	r := NewReconciler(mgmt, members, timeout, rec, logging.NewNopLogger())
	if tc.sources != nil {
		r.deps = dependencies.New(tc.sources)
	}
	r.maxRunnerUps = tc.maxRunnerUps
	passes := max(tc.passes, 1)
	var res reconcile.Result
	var err error
	for i := range passes {
		if i > 0 && tc.between != nil {
			cur := &v1alpha1.Workload{}
			if err := mgmt.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, cur); err != nil {
				t.Fatal(err)
			}
			tc.between(t, env{w: cur, members: members, mgmt: mgmt, rec: rec})
		}
		res, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
		first := i == 0 && passes > 1 && tc.failFirst
		if first && err == nil {
			t.Fatal("the first pass succeeded, want it to fail")
		}
		if err != nil && !tc.wantErr && !first {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	if tc.wantErr && err == nil {
		t.Error("Reconcile succeeded, want an error")
	}
	// A wait is counted from the candidates' creation: a little of
	// it has passed.
	if d := tc.want.RequeueAfter - res.RequeueAfter; tc.passes == 0 && (res.Requeue != tc.want.Requeue || d < 0 || d > 5*time.Second || (tc.want.RequeueAfter == 0) != (res.RequeueAfter == 0)) {
		t.Errorf("Reconcile() = %+v, want %+v", res, tc.want)
	}
	got := &v1alpha1.Workload{}
	if err := mgmt.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, got); err != nil {
		if !kerrors.IsNotFound(err) {
			t.Fatal(err)
		}
		got = nil
	}
	gone := got == nil
	if gone {
		got = w
		got.Finalizers = nil
	}
	if tc.check != nil {
		tc.check(t, env{w: got, members: members, mgmt: mgmt, rec: rec})
	}
	if gone && tc.wantStatus != nil {
		// The input stands in for it: a comparison with itself says nothing.
		t.Error("wantStatus, but the Workload is gone: there is no status to compare")
	}
	wantWhole(t, tc, before, env{w: got, members: members, mgmt: mgmt, rec: rec})
	if tc.sources != nil && tc.sources.Dropped > 0 {
		t.Errorf("%d watches stopped while still needed (each would list again)", tc.sources.Dropped)
	}
}

// errFromMember is a member's message in the tests.
var errFromMember = errorString("denied by the member")

type errorString string

func (e errorString) Error() string { return string(e) }

// notRejected: no cluster is rejected (why says what a rejection would
// have missed), and the first member keeps the Workload's n candidates.
func notRejected(t *testing.T, e env, n int, why string) {
	t.Helper()
	if len(e.w.Status.RejectedClusters) != 0 {
		t.Errorf("rejected %+v: %s", e.w.Status.RejectedClusters, why)
	}
	if got := count(t, e.members[0], e.w, nil); got != n {
		t.Errorf("%d candidates in %s, want its %d kept", got, e.members[0].Key.Name, n)
	}
}

func wantRejected(t *testing.T, w *v1alpha1.Workload, cluster, reason, msg string) {
	t.Helper()
	for _, rc := range w.Status.RejectedClusters {
		if rc.Cluster.Name == cluster && rc.Reason == reason && strings.Contains(rc.Message, msg) && rc.Generation == w.Generation {
			return
		}
	}
	t.Errorf("rejectedClusters = %+v, want %s %s with %q", w.Status.RejectedClusters, cluster, reason, msg)
}

// wantRejectedAndEmpty: the cluster, the member m, is rejected and holds
// no candidate of the Workload.
func wantRejectedAndEmpty(t *testing.T, w *v1alpha1.Workload, m *clustertest.Member, cluster, reason, msg string) {
	t.Helper()
	wantRejected(t, w, cluster, reason, msg)
	if n := count(t, m, w, nil); n != 0 {
		t.Errorf("%d candidates left in the rejected %s", n, cluster)
	}
}

// candidateEvents are the messages of the CreatedCandidates Events.
func candidateEvents(r *recorder) []string {
	var out []string
	for _, e := range r.Events {
		if e.Reason == reasonCandidates {
			out = append(out, e.Message)
		}
	}
	return out
}

func wantReason(t *testing.T, r *recorder, reason event.Reason) {
	t.Helper()
	for _, got := range r.Reasons() {
		if got == string(reason) {
			return
		}
	}
	t.Errorf("events %v, want one %s", r.Reasons(), reason)
}

func TestRejectionBackoff(t *testing.T) {
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for i, w := range want {
		if got := v1alpha1.RejectionBackoff(int32(i + 1)); got != w {
			t.Errorf("v1alpha1.RejectionBackoff(%d) = %s, want %s", i+1, got, w)
		}
	}
}

// leftBehind: the Workload's Service and copies in member namespace
// default, which its pods left (they run in apps).
func leftBehind(w *v1alpha1.Workload) []client.Object {
	objs := []client.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", Labels: map[string]string{mcv1alpha1.LabelWorkloadUID: string(w.UID)}}}}
	if w.DeletionTimestamp == nil {
		objs = append(objs, candidates(w, 2, reserved, allowed, running)...)
	}
	for _, src := range []client.Object{&corev1.Secret{ObjectMeta: objectMeta("db")}, &corev1.ConfigMap{ObjectMeta: objectMeta("settings")}, &corev1.ServiceAccount{ObjectMeta: objectMeta("runner")}} {
		c := propagator.NewCopy(src, "default")
		propagator.SetUser(c, string(w.UID), true)
		objs = append(objs, c)
	}
	return objs
}

// wantLeftBehindGone: nothing of leftBehind is left in member namespace
// default.
func wantLeftBehindGone(t *testing.T, m *clustertest.Member) {
	t.Helper()
	if err := m.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "web"}, &corev1.Service{}); !kerrors.IsNotFound(err) {
		t.Errorf("the Service in default: %v, want it gone", err)
	}
	for kind, name := range map[string]string{propagator.KindSecret: "db", propagator.KindConfigMap: "settings", propagator.KindServiceAccount: "runner"} {
		if o := copyIn(t, m, kind, name); o != nil {
			t.Errorf("the %s copy %s is left in default", kind, name)
		}
	}
}

// deletedProxyPods makes the Workload a proxy pod's, being deleted.
func deletedProxyPods(w *v1alpha1.Workload) {
	w.Labels = map[string]string{v1alpha1.LabelProxyPod: "pod-uid"}
	w.DeletionTimestamp = ptr.To(metav1.Now())
}

// runningInForeground: member a runs w's one replica, and keeps a
// chaperon deleted in the foreground (its API server and garbage
// collector, played here) until its pod is gone, which here is never.
func runningInForeground(w *v1alpha1.Workload) clustertest.Members {
	stopping := clustertest.WithInterceptor(interceptor.Funcs{DeleteAllOf: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.DeleteAllOfOption) error {
		do := &client.DeleteAllOfOptions{}
		do.ApplyOptions(opts)
		if _, ok := o.(*mcv1alpha1.PodChaperon); !ok || do.PropagationPolicy == nil || *do.PropagationPolicy != metav1.DeletePropagationForeground {
			return c.DeleteAllOf(ctx, o, opts...)
		}
		chs := &mcv1alpha1.PodChaperonList{}
		if err := c.List(ctx, chs, &do.ListOptions); err != nil {
			return err
		}
		for i := range chs.Items {
			if ch := &chs.Items[i]; ch.DeletionTimestamp == nil {
				ch.Finalizers = append(ch.Finalizers, metav1.FinalizerDeleteDependents)
				if err := c.Update(ctx, ch); err != nil {
					return err
				}
			}
		}
		return c.DeleteAllOf(ctx, o, opts...)
	}})
	return clustertest.Members{clustertest.NewMember("a", clustertest.WithObjects(candidates(w, 1, reserved, allowed, running)...), stopping)}
}

// secretsAsTheAPIServer refuses, as the member's API server does, an
// update of an immutable Secret or of a Secret's type.
var secretsAsTheAPIServer = clustertest.WithInterceptor(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
	if s, ok := o.(*corev1.Secret); ok {
		cur := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), cur); err == nil && (cur.Type != s.Type || cur.Immutable != nil && *cur.Immutable) {
			return kerrors.NewInvalid(schema.GroupKind{Kind: "Secret"}, s.Name, nil)
		}
	}
	return c.Update(ctx, o, opts...)
}})

// countingGets counts the member's reads of Secret name into n.
func countingGets(name string, n *int) clustertest.Option {
	return clustertest.WithInterceptor(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
		if _, ok := o.(*corev1.Secret); ok && key.Name == name {
			*n++
		}
		return c.Get(ctx, key, o, opts...)
	}})
}

// runningWithCopies: both replicas run Ready in a, with the copies of
// needs' three objects in namespace default.
func runningWithCopies(s *v1alpha1.WorkloadStatus) {
	counts(2, 2, 2, 2, v1alpha1.Available("2 of 2 replicas ready in a", 1))(s)
	s.PlacedNamespaces, s.Dependencies = []v1alpha1.PlacedNamespace{{Cluster: v1alpha1.ClusterReference{Name: "a", Namespace: "default"}, Namespace: "default"}}, copies("a", "ConfigMap/settings", "Secret/db", "ServiceAccount/runner")
}
