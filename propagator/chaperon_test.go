package propagator

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/internal/chaperontest"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// The chaperon states of the handshake, by their short names here.
type chaperonOption = chaperontest.Mark

var (
	reserved, allowed, running = chaperontest.Reserved, chaperontest.Allowed, chaperontest.Running
	ended                      = chaperontest.Ended
	// noHold: a gang of one's candidate, allowed in advance within the
	// bind window its member enforces.
	noHold = chaperontest.Windowed(time.Minute)
	// unheld: allowed in advance with no window (a rolling update's, a
	// replica added to a committed cluster): made only where the
	// Workload is committed.
	unheld = chaperontest.NoHold
)

func unschedulable(msg string) chaperonOption {
	return chaperontest.PodScheduledFalse(corev1.PodReasonUnschedulable, msg)
}

func chaperons(w *v1alpha1.Workload, opts ...[]chaperonOption) []*mcv1alpha1.PodChaperon {
	out := make([]*mcv1alpha1.PodChaperon, len(opts))
	for i, o := range opts {
		out[i] = NewChaperon(w, w.TargetNamespace(nil), i, Held)
		for _, f := range o {
			f(out[i])
		}
	}
	return out
}

func ops(o ...chaperonOption) []chaperonOption { return o }

// summary is the part of State a decision reads.
type summary struct {
	Missing       []int
	Extra         int
	Proven        bool
	Committed     bool
	Unschedulable string
	ToAllow       int
	Ready         int
	Succeeded     int
	Failed        int
	Ended         bool
}

func summarize(w *v1alpha1.Workload, s State) summary {
	n := w.ReplicaCount()
	return summary{Missing: s.Missing, Extra: len(s.Extra), Proven: s.Proven(n), Committed: s.Allowed >= n, Unschedulable: s.Unschedulable, ToAllow: len(s.ToAllow), Ready: s.Ready,
		Succeeded: s.Succeeded, Failed: s.Failed, Ended: s.Ended(n)}
}

func TestObserve(t *testing.T) {
	w3 := st.Workload("web", st.Replicas(3))
	w1 := st.Workload("web", st.Replicas(1))
	wNoRes := st.Workload("web", st.Replicas(2), func(w *v1alpha1.Workload) { w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation })
	cases := []struct {
		name string
		w    *v1alpha1.Workload
		chs  []*mcv1alpha1.PodChaperon
		want summary
	}{
		{"pending: no candidates yet", w3, nil, summary{Missing: []int{0, 1, 2}}},
		{"candidates, none reserved", w3, chaperons(w3, ops(), ops(), ops()), summary{}},
		{"gang: two of three reserved is not proven", w3, chaperons(w3, ops(reserved), ops(reserved), ops()), summary{ToAllow: 2}},
		{"all reserved: proven, allow all", w3, chaperons(w3, ops(reserved), ops(reserved), ops(reserved)), summary{Proven: true, ToAllow: 3}},
		{"allowed and running: committed", w3, chaperons(w3, ops(reserved, allowed, running), ops(allowed, running), ops(allowed, running)),
			summary{Proven: true, Committed: true, Ready: 3}},
		{"one unschedulable: rejected with the target's message", w3, chaperons(w3, ops(reserved), ops(unschedulable("0/2 nodes are available: 2 Insufficient cpu.")), ops(reserved)),
			summary{ToAllow: 2, Unschedulable: "0/2 nodes are available: 2 Insufficient cpu."}},
		{"scale up after commit: the new replica goes through the handshake", w3, chaperons(w3, ops(allowed, running), ops(allowed, running), ops(reserved)),
			summary{Proven: true, ToAllow: 1, Ready: 2}},
		{"NoReservation: bound by the member's scheduler is committed", wNoRes, chaperons(wNoRes, ops(running), ops()),
			summary{Ready: 1}},
		{"NoReservation: all bound", wNoRes, chaperons(wNoRes, ops(running), ops(running)),
			summary{Proven: true, Committed: true, Ready: 2}},
		{"NoReservation within its bind window, none bound: not committed; both allowed once one binds", wNoRes, chaperons(wNoRes, ops(noHold), ops(noHold)), summary{ToAllow: 2}},
		{"NoReservation within its bind window, one bound: the other is allowed, so that its member never fences it", wNoRes, chaperons(wNoRes, ops(noHold, running), ops(noHold)),
			summary{ToAllow: 1, Ready: 1}},
		{"NoReservation fenced by its member: nothing to allow", wNoRes, chaperons(wNoRes, ops(noHold, running), ops(noHold, chaperontest.Fenced(mcv1alpha1.FencedWindow))),
			summary{Ready: 1}},
		{"NoReservation made in a committed cluster (allowed in advance, no window): committed while its pod is pending", wNoRes, chaperons(wNoRes, ops(running), ops(unheld)),
			summary{Proven: true, Committed: true, Ready: 1}},
		{"gang of one allowed in advance: not committed before it is reserved", w1, chaperons(w1, ops(noHold)), summary{}},
		// Committed with no write: its member's agent marks it is-allowed
		// itself before it replaces a pod it loses later.
		{"gang of one allowed in advance and reserved: committed, nothing to write", w1, chaperons(w1, ops(noHold, reserved)),
			summary{Proven: true, Committed: true}},
		{"gang of one allowed in advance and bound (is-reserved not written yet): committed, nothing to write", w1, chaperons(w1, ops(noHold, running)),
			summary{Proven: true, Committed: true, Ready: 1}},
		{"gang of one allowed in advance, bound and marked allowed: nothing more to write", w1, chaperons(w1, ops(noHold, running, allowed)),
			summary{Proven: true, Committed: true, Ready: 1}},
		{"gang of one allowed in advance but unschedulable: rejected", w1, chaperons(w1, ops(noHold, unschedulable("0/2 nodes are available: 2 Insufficient cpu."))),
			summary{Unschedulable: "0/2 nodes are available: 2 Insufficient cpu."}},
		// Before, its replacement's first status (after an eviction)
		// counted nothing allowed: the committed cluster was rejected.
		{"allowed in advance with no window (a rolling update's): committed, also while a pod that replaces a lost one is pending", w1, chaperons(w1, ops(unheld)),
			summary{Proven: true, Committed: true}},
		{"allowed in advance with no window, and bound: committed", w1, chaperons(w1, ops(unheld, running)),
			summary{Proven: true, Committed: true, Ready: 1}},
		{"allowed in advance with no window, its pod unschedulable: committed, and the pod's verdict told", w1, chaperons(w1, ops(unheld, unschedulable("0/2 nodes are available: 2 Insufficient cpu."))),
			summary{Proven: true, Committed: true, Unschedulable: "0/2 nodes are available: 2 Insufficient cpu."}},
		{"batch: one succeeded, one still running", w3, chaperons(w3, ops(allowed, ended(corev1.PodSucceeded, "")), ops(allowed, running), ops(allowed, running)),
			summary{Proven: true, Committed: true, Ready: 2, Succeeded: 1}},
		{"batch: every replica ended, one failed", w3, chaperons(w3, ops(allowed, ended(corev1.PodSucceeded, "")), ops(allowed, ended(corev1.PodFailed, "exit 1")), ops(allowed, ended(corev1.PodSucceeded, ""))),
			summary{Proven: true, Committed: true, Succeeded: 2, Failed: 1, Ended: true}},
		{"batch: a replica without its chaperon has not ended", w3, chaperons(w3, ops(allowed, ended(corev1.PodSucceeded, "")), ops(allowed, ended(corev1.PodSucceeded, ""))),
			summary{Missing: []int{2}, Committed: false, Succeeded: 2}},
		{"scale down: replicas beyond the count are extra", w1, chaperons(w1, ops(allowed), ops(allowed), ops(allowed)),
			summary{Proven: true, Committed: true, Extra: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(tc.w, Observe(tc.w, tc.chs))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Observe() (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestTargetNamespace(t *testing.T) {
	mapping := map[string]v1alpha1.NamespaceName{"team-a": "a-prod"}
	cases := []struct {
		name string
		w    *v1alpha1.Workload
		want string
	}{
		{"its own namespace's name", st.Workload("w", st.WNamespace("team-b")), "team-b"},
		{"its targetNamespace", st.Workload("w", st.WNamespace("team-b"), func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "shared" }), "shared"},
		{"the cluster's mapping, whatever the Workload says", st.Workload("w", st.WNamespace("team-a"), func(w *v1alpha1.Workload) { w.Spec.TargetNamespace = "kube-system" }), "a-prod"},
	}
	for _, tc := range cases {
		if got := tc.w.TargetNamespace(mapping); got != tc.want {
			t.Errorf("%s: TargetNamespace() = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNewChaperon(t *testing.T) {
	w := st.Workload("web", st.WLabels("team", "a"), func(w *v1alpha1.Workload) {
		w.UID = "uid-1"
		w.Spec.TargetNamespace = "prod"
		w.Spec.TargetDeployment.Template.Labels = map[string]string{"app": "web"}
	})
	w.Spec.TargetDeployment.Template.Annotations = map[string]string{mcv1alpha1.AnnotationIsAllowed: "true", "note": "kept"}
	w.Spec.TargetDeployment.Template.Labels[mcv1alpha1.LabelWorkloadUID] = "someone-else"
	ch := NewChaperon(w, w.TargetNamespace(nil), 2, Held)
	if !regexp.MustCompile(`^web-[a-z0-9]+-2$`).MatchString(ch.Name) || ch.Namespace != "prod" {
		t.Errorf("name %s/%s, want prod/web-HASH-2", ch.Namespace, ch.Name)
	}
	if _, ok := ch.Annotations[mcv1alpha1.AnnotationIsAllowed]; ok || ch.Annotations["note"] != "kept" {
		t.Errorf("annotations %v: placer's own copied from the template, or the user's lost", ch.Annotations)
	}
	want := map[string]string{"app": "web", mcv1alpha1.LabelWorkloadUID: "uid-1", mcv1alpha1.LabelReplica: "2", mcv1alpha1.LabelTemplateHash: TemplateHash(w)}
	if diff := cmp.Diff(want, ch.Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if ch.Spec.SchedulerName != mcv1alpha1.CandidateSchedulerName || ch.Annotations[mcv1alpha1.AnnotationWorkload] != "default/web" {
		t.Errorf("schedulerName %q, workload annotation %q", ch.Spec.SchedulerName, ch.Annotations[mcv1alpha1.AnnotationWorkload])
	}
	for role, want := range map[Role][2]string{Held: {"", ""}, NoHold: {"true", ""}, RunnerUp: {"", "true"}} {
		ch := NewChaperon(w, w.TargetNamespace(nil), 0, role)
		if got := [2]string{ch.Annotations[mcv1alpha1.AnnotationAllowWhenReserved], ch.Annotations[mcv1alpha1.AnnotationRunnerUp]}; got != want {
			t.Errorf("role %d: annotations allow-when-reserved, runner-up = %q, want %q", role, got, want)
		}
	}
	w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation
	if ch := NewChaperon(w, w.TargetNamespace(nil), 0, RunnerUp); ch.Spec.SchedulerName != "" || ch.Annotations[mcv1alpha1.AnnotationRunnerUp] != "" {
		t.Errorf("NoReservation candidates must go to the member's own scheduler, unannotated: schedulerName %q, runner-up %q", ch.Spec.SchedulerName, ch.Annotations[mcv1alpha1.AnnotationRunnerUp])
	}
	// Marked allowed in advance, so that it can get a bind window.
	unheld := NewChaperon(w, w.TargetNamespace(nil), 0, NoHold)
	SetBindWindow(unheld, w, types.NamespacedName{Namespace: "default", Name: "a"}, time.Minute)
	if _, ok := unheld.BindWindow(); unheld.Spec.SchedulerName != "" || !ok {
		t.Errorf("a NoReservation candidate that binds unheld: schedulerName %q, bind window %v; want the member's own scheduler, within a window", unheld.Spec.SchedulerName, ok)
	}
}

// Chaperon names are unique per management namespace and Workload, and fit
// a DNS label however long the Workload's name.
func TestChaperonNames(t *testing.T) {
	a := st.Workload("web", st.WNamespace("team-a"))
	b := st.Workload("web", st.WNamespace("team-b"))
	if ChaperonName(a, 0) == ChaperonName(b, 0) {
		t.Errorf("Workloads web of team-a and team-b share the chaperon name %s", ChaperonName(a, 0))
	}
	if ChaperonName(a, 0) == ChaperonName(a, 1) {
		t.Error("two replicas share a name")
	}
	long := st.Workload(strings.Repeat("w", 253))
	for _, i := range []int{0, 12345} {
		n := ChaperonName(long, i)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("name %q: %v", n, errs)
		}
	}
	dotted := st.Workload(strings.Repeat("a", 50) + "." + strings.Repeat("b", 60))
	if errs := validation.IsDNS1123Label(ChaperonName(dotted, 3)); len(errs) > 0 {
		t.Errorf("name %q: %v", ChaperonName(dotted, 3), errs)
	}
}

func TestRollout(t *testing.T) {
	old := st.Workload("web", st.Replicas(4))
	outdated := chaperons(old, ops(allowed, running), ops(allowed, running), ops(allowed, running), ops(allowed, running))
	changed := func(opts ...st.WorkloadOption) *v1alpha1.Workload {
		w := st.Workload("web", append([]st.WorkloadOption{st.Replicas(4)}, opts...)...)
		w.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
		return w
	}
	rolling := func(surge, unavailable intstr.IntOrString) st.WorkloadOption {
		return func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
		}
	}
	// with returns the old chaperons plus new ones for some replicas.
	with := func(w *v1alpha1.Workload, oldOpts [][]chaperonOption, fresh map[int][]chaperonOption) []*mcv1alpha1.PodChaperon {
		out := chaperons(old, oldOpts...)
		for i, o := range fresh {
			ch := NewChaperon(w, w.TargetNamespace(nil), i, Held)
			for _, f := range o {
				f(ch)
			}
			out = append(out, ch)
		}
		return out
	}
	up := ops(allowed, running)
	zero, one, two := intstr.FromInt32(0), intstr.FromInt32(1), intstr.FromInt32(2)
	cases := []struct {
		name       string
		w          *v1alpha1.Workload
		chs        []*mcv1alpha1.PodChaperon
		wantCreate []int
		wantDelete int
	}{
		{"same template: nothing to do", old, outdated, nil, 0},
		{"default 25%/25% of 4: one new beside an old one, one old removed", changed(), outdated, []int{0}, 1},
		{"maxSurge 0, maxUnavailable 2: two replaced in place", changed(rolling(zero, two)), outdated, nil, 2},
		{"maxSurge 2, maxUnavailable 0: two new beside old ones, none removed", changed(rolling(two, zero)), outdated, []int{0, 1}, 0},
		{"both zero: maxUnavailable 1", changed(rolling(zero, zero)), outdated, nil, 1},
		{"the budget is spent by an unready replica; only that one goes", changed(rolling(zero, one)),
			chaperons(old, up, up, up, ops(allowed)), nil, 1},
		{"a new pod Ready beside its old one: the old one goes", changed(rolling(one, zero)),
			with(changed(), [][]chaperonOption{up, up, up, up}, map[int][]chaperonOption{0: up}), []int{1}, 1},
		{"a surge in flight uses the surge budget", changed(rolling(one, zero)),
			with(changed(), [][]chaperonOption{up, up, up, up}, map[int][]chaperonOption{0: ops(reserved)}), nil, 0},
		{"Recreate: all at once", changed(func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		}), outdated, nil, 4},
		{"batch: replicas that ended are not run again by a new template", changed(rolling(two, two)),
			chaperons(old, ops(allowed, ended(corev1.PodSucceeded, "")), ops(allowed, ended(corev1.PodFailed, "")), up, up), []int{2, 3}, 0},
		{"batch, Recreate: replicas that ended stay", changed(func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Strategy.Type = appsv1.RecreateDeploymentStrategyType
		}), chaperons(old, ops(allowed, ended(corev1.PodSucceeded, "")), up, up, up), nil, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			step := Rollout(tc.w, tc.w.WholeUnit(types.NamespacedName{}), Observe(tc.w, tc.chs))
			if diff := cmp.Diff(tc.wantCreate, step.Create); diff != "" || len(step.Delete) != tc.wantDelete {
				t.Errorf("Rollout() creates %v (-want,+got: %s), deletes %d chaperons, want %d", step.Create, diff, len(step.Delete), tc.wantDelete)
			}
		})
	}
}

// TestRolloutUnit: a unit of part of the replicas rolls only its own, and
// its budgets resolve against its own count, as a Deployment of those
// replicas would: 25%/25% of 2 is one surge and no unavailable replica,
// where the whole 4 would also remove one old pod at once.
func TestRolloutUnit(t *testing.T) {
	old := st.Workload("web", st.Replicas(4))
	w := st.Workload("web", st.Replicas(4))
	w.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
	up := ops(allowed, running)
	chs := chaperons(old, up, up, up, up)
	u := v1alpha1.PlacementUnit{First: 2, Count: 2}
	seen := ObserveUnit(w, u, chs, "")
	if len(seen.Extra) != 2 || len(seen.Outdated) != 2 {
		t.Fatalf("the unit of replicas 2 and 3 reads %d extra and %d outdated chaperons, want 2 and 2", len(seen.Extra), len(seen.Outdated))
	}
	step := Rollout(w, u, seen)
	if diff := cmp.Diff([]int{2}, step.Create); diff != "" || len(step.Delete) != 0 {
		t.Errorf("Rollout() of the unit creates %v (-want,+got: %s) and deletes %d, want replica 2 beside its old pod and none deleted", step.Create, diff, len(step.Delete))
	}
	whole := Rollout(w, w.WholeUnit(types.NamespacedName{}), Observe(w, chs))
	if diff := cmp.Diff([]int{0}, whole.Create); diff != "" || len(whole.Delete) != 1 {
		t.Errorf("Rollout() of every replica creates %v (-want,+got: %s) and deletes %d, want replica 0 and one old pod", whole.Create, diff, len(whole.Delete))
	}
}

func TestObserveDuringRollout(t *testing.T) {
	old := st.Workload("web", st.Replicas(2))
	w := st.Workload("web", st.Replicas(2))
	w.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
	chs := chaperons(old, ops(allowed, running), ops(allowed, running))
	surge := NewChaperon(w, w.TargetNamespace(nil), 0, Held)
	reserved(surge)
	chs = append(chs, surge)
	got := summarize(w, Observe(w, chs))
	// Replica 0 counts once: allowed through its old chaperon, its new one
	// is to be allowed.
	want := summary{Proven: true, Committed: true, ToAllow: 1, Ready: 2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Observe() (-want,+got):\n%s", diff)
	}
}

// TestFencedBefore: a fenced candidate is a leftover only when the status
// recorded a rejection by its cluster after it was made.
func TestFencedBefore(t *testing.T) {
	a := types.NamespacedName{Namespace: "default", Name: "a"}
	w := st.Workload("w", st.Replicas(1), st.Rejected("a", 1, "fenced"), func(w *v1alpha1.Workload) { w.Status.RejectedClusters[0].Attempts = 2 })
	made := func(seen string, fenced bool) *mcv1alpha1.PodChaperon {
		ch := NewChaperon(w, "default", 0, NoHold)
		if seen != "" {
			ch.Annotations[mcv1alpha1.AnnotationRejectionsSeen] = seen
		}
		if fenced {
			ch.Annotations[mcv1alpha1.AnnotationFenced] = mcv1alpha1.FencedWindow
		}
		return ch
	}
	cases := []struct {
		name string
		ch   *mcv1alpha1.PodChaperon
		want bool
	}{
		{name: "fenced before the second rejection", ch: made("1/1", true), want: true},
		{name: "fenced in an earlier generation", ch: made("0/2", true), want: true},
		{name: "fenced in the handshake under way", ch: made("1/2", true)},
		{name: "not fenced", ch: made("1/1", false)},
		{name: "made before the mark existed", ch: made("", true)},
	}
	for _, tc := range cases {
		if got := FencedBefore(tc.ch, w, a); got != tc.want {
			t.Errorf("%s: FencedBefore = %v, want %v", tc.name, got, tc.want)
		}
	}
	ch := NewChaperon(w, "default", 0, NoHold)
	SetBindWindow(ch, w, a, time.Minute)
	if got := ch.Annotations[mcv1alpha1.AnnotationRejectionsSeen]; got != "1/2" {
		t.Errorf("a candidate made now records %q, want the status's 1/2", got)
	}
}

// TestBatchReplicaEndedDuringRollout: a batch replica whose old pod ended
// while a rolling update's new pod stood beside it ran once: the new
// chaperon is extra (deleted), and the old one, with its end, stays.
// Before, the new pod Ready deleted the old one (the replica ran again,
// its success dropped), and a new pod still pending when every old one
// had ended counted for nothing: Complete while it was still to run.
func TestBatchReplicaEndedDuringRollout(t *testing.T) {
	batch := func(w *v1alpha1.Workload) {
		w.Spec.TargetDeployment.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	old := st.Workload("job", st.Replicas(2), batch)
	w := st.Workload("job", st.Replicas(2), batch)
	w.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
	done := ops(allowed, ended(corev1.PodSucceeded, ""))
	for name, newPod := range map[string][]chaperonOption{"its new pod Ready": ops(allowed, running), "its new pod pending": ops(reserved)} {
		t.Run(name, func(t *testing.T) {
			chs := chaperons(old, done, done)
			surge := NewChaperon(w, w.TargetNamespace(nil), 0, NoHold)
			for _, f := range newPod {
				f(surge)
			}
			chs = append(chs, surge)
			seen := Observe(w, chs)
			if len(seen.Extra) != 1 || seen.Extra[0] != surge {
				t.Errorf("extra %d chaperons, want the new one beside the ended replica 0", len(seen.Extra))
			}
			if !seen.Ended(2) || seen.Succeeded != 2 {
				t.Errorf("ended %t with %d succeeded, want both replicas succeeded once", seen.Ended(2), seen.Succeeded)
			}
			step := Rollout(w, w.WholeUnit(types.NamespacedName{}), seen)
			if len(step.Delete) != 0 || len(step.Create) != 0 {
				t.Errorf("Rollout() deletes %d and creates %v, want the ended replicas left as they ended", len(step.Delete), step.Create)
			}
		})
	}
}
