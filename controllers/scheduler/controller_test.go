package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	schedulerctrl "github.com/placer-dev/placer/controllers/scheduler"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// waitTimeout bounds each wait for the controller.
const waitTimeout = 90 * time.Second

// schedulerEnv runs only the scheduler controller; the test plays the
// cluster controller by writing cluster status itself.
type schedulerEnv struct {
	t   *testing.T
	env *testenv.Env
	wc  client.WithWatch
	ns  string
}

func newSchedulerEnv(t *testing.T) *schedulerEnv {
	t.Helper()
	return newSchedulerEnvWith(t, schedulerctrl.Options{})
}

// newSchedulerEnvWith runs the scheduler controller with the options, and
// the default profile.
func newSchedulerEnvWith(t *testing.T, o schedulerctrl.Options) *schedulerEnv {
	t.Helper()
	env := testenv.Start(t)
	profiles, err := registry.NewProfiles(scheduler.DefaultConfiguration())
	if err != nil {
		t.Fatal(err)
	}
	o.Profiles = profiles
	testenv.RunManager(t, env.Config, func(mgr ctrl.Manager) error {
		return schedulerctrl.Setup(mgr, o)
	})
	return &schedulerEnv{t: t, env: env, wc: testenv.Watcher(t, env.Config), ns: "default"}
}

// namespace gives a subtest a namespace of its own, so its clusters and
// workloads are independent of the others'.
func (e *schedulerEnv) namespace(t *testing.T, name string) *schedulerEnv {
	t.Helper()
	if err := e.env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": name}}}); err != nil {
		t.Fatal(err)
	}
	return &schedulerEnv{t: t, env: e.env, wc: e.wc, ns: name}
}

// cluster creates a cluster and writes its status as the cluster controller would.
func (e *schedulerEnv) cluster(name string, opts ...st.ClusterOption) *v1alpha1.KubernetesCluster {
	e.t.Helper()
	kc := st.Cluster(name, append([]st.ClusterOption{st.InNamespace(e.ns)}, opts...)...)
	status := kc.Status
	kc.Spec.ConnectionSecretRef = &v1alpha1.SecretKeySelector{Name: name + "-kubeconfig"}
	ctx := context.Background()
	if err := e.env.Client.Create(ctx, kc); err != nil {
		e.t.Fatal(err)
	}
	for i := range status.Conditions {
		status.Conditions[i].LastTransitionTime = metav1.Now()
	}
	kc.Status = status
	if err := e.env.Client.Status().Update(ctx, kc); err != nil {
		e.t.Fatal(err)
	}
	return kc
}

// seen returns once the scheduler's cache holds each named cluster as
// Ready: a Workload pinned to each is placed there, then deleted. Tests
// whose first decisions must see every cluster call it before creating
// their Workloads; a cluster's create and its status are two events, and
// on a busy machine a decision may come between them.
func (e *schedulerEnv) seen(names ...string) {
	e.t.Helper()
	for _, name := range names {
		probe := e.workload("seen-"+name, st.Selector(v1alpha1.LabelClusterName, name))
		e.wantPlaced(probe.Name, name)
		if err := e.env.Client.Delete(context.Background(), probe); err != nil {
			e.t.Fatal(err)
		}
	}
}

// workload creates a Workload that may only land on the subtest's own
// clusters: the scheduler sees the clusters of every namespace.
func (e *schedulerEnv) workload(name string, opts ...st.WorkloadOption) *v1alpha1.Workload {
	e.t.Helper()
	w := st.Workload(name, append([]st.WorkloadOption{st.WNamespace(e.ns)}, opts...)...)
	if w.Spec.ClusterSelector == nil {
		w.Spec.ClusterSelector = map[string]v1alpha1.LabelValue{}
	}
	w.Spec.ClusterSelector[v1alpha1.LabelClusterNamespace] = v1alpha1.LabelValue(e.ns)
	w.UID, w.Generation = "", 0
	if err := e.env.Client.Create(context.Background(), w); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// waitScheduled waits for the Workload's Scheduled condition to have the status.
func (e *schedulerEnv) waitScheduled(name string, status corev1.ConditionStatus) *v1alpha1.Workload {
	e.t.Helper()
	w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
	testenv.WaitFor(e.t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
		return w.Status.GetCondition(v1alpha1.TypeScheduled).Status == status
	})
	return w
}

func (e *schedulerEnv) wantPlaced(name, cluster string) *v1alpha1.Workload {
	e.t.Helper()
	w := e.waitScheduled(name, corev1.ConditionTrue)
	if w.Status.ClusterRef == nil || w.Status.ClusterRef.Name != cluster {
		e.t.Fatalf("%s placed on %v, want %s; %s", name, w.Status.ClusterRef, cluster, w.Status.GetCondition(v1alpha1.TypeScheduled).Message)
	}
	return w
}

func TestSchedulerController(t *testing.T) {
	e := newSchedulerEnv(t)

	t.Run("no cluster: Unschedulable with a message", func(t *testing.T) {
		e := e.namespace(t, "none")
		e.workload("w")
		w := e.waitScheduled("w", corev1.ConditionFalse)
		c := w.Status.GetCondition(v1alpha1.TypeScheduled)
		if c.Reason != v1alpha1.ReasonUnschedulable || c.Message != "0/0 clusters are available." {
			t.Errorf("condition = %s: %s", c.Reason, c.Message)
		}
		if w.Status.ClusterRef != nil {
			t.Errorf("clusterRef = %v, want none", w.Status.ClusterRef)
		}
	})

	t.Run("one cluster", func(t *testing.T) {
		e := e.namespace(t, "one")
		e.cluster("only")
		e.workload("w")
		w := e.wantPlaced("w", "only")
		if len(w.Status.NominatedClusters) != 1 || w.Status.NominatedClusters[0].Name != "only" {
			t.Errorf("nominatedClusters = %v", w.Status.NominatedClusters)
		}
	})

	t.Run("many clusters: preferred affinity, selector, fan-out", func(t *testing.T) {
		e := e.namespace(t, "many")
		e.cluster("a", st.Labels("tier", "dev"))
		e.cluster("b", st.Labels("tier", "prod", "ssd", "true"))
		e.cluster("c", st.Labels("tier", "prod"))
		e.cluster("d", st.Labels("tier", "prod"), st.NotReady(v1alpha1.ReasonUnreachable))
		e.workload("w", st.Selector("tier", "prod"), st.PreferredClusterAffinity(50, st.Term(st.Expr("ssd", "Exists"))), func(w *v1alpha1.Workload) { w.Spec.Placement.FanOut = 3 })
		w := e.wantPlaced("w", "b")
		var got []string
		for _, n := range w.Status.NominatedClusters {
			got = append(got, n.Name)
		}
		if strings.Join(got, ",") != "b,c" {
			t.Errorf("nominatedClusters = %v, want b,c (the feasible ones, best first)", got)
		}
		if msg := w.Status.GetCondition(v1alpha1.TypeScheduled).Message; !strings.Contains(msg, "placed on many/b") {
			t.Errorf("message %q does not say where", msg)
		}
	})

	t.Run("required cluster affinity and a reason per cluster", func(t *testing.T) {
		e := e.namespace(t, "required")
		e.cluster("eu", st.Labels(v1alpha1.LabelRegion, "eu"))
		e.cluster("us", st.Labels(v1alpha1.LabelRegion, "us"))
		e.cluster("cordoned", st.Labels(v1alpha1.LabelRegion, "ap"), st.Cordoned())
		e.workload("w", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelRegion, "In", "us", "ap"))))
		e.wantPlaced("w", "us")
		e.workload("nowhere", st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelRegion, "In", "ap"))))
		w := e.waitScheduled("nowhere", corev1.ConditionFalse)
		got := w.Status.GetCondition(v1alpha1.TypeScheduled).Message
		for _, want := range []string{"2 cluster(s) didn't match the cluster affinity", "1 cluster(s) were cordoned", "cluster(s) did not serve the Workload's namespace"} {
			if !strings.Contains(got, want) {
				t.Errorf("message %q does not say %q", got, want)
			}
		}
	})

	t.Run("front end lands with its back end", func(t *testing.T) {
		e := e.namespace(t, "frontback")
		e.cluster("eu-1", st.Labels(v1alpha1.LabelRegion, "eu"))
		e.cluster("us-1", st.Labels(v1alpha1.LabelRegion, "us"))
		e.cluster("us-2", st.Labels(v1alpha1.LabelRegion, "us"))
		e.workload("backend", st.WLabels("app", "backend"), st.Target("us-2", ""))
		e.wantPlaced("backend", "us-2")
		e.workload("frontend", st.RequiredAffinity(st.WTerm(v1alpha1.LabelClusterName, "app", "backend")))
		e.wantPlaced("frontend", "us-2")
	})

	t.Run("anti-affinity spreads a group across regions", func(t *testing.T) {
		e := e.namespace(t, "spread")
		for _, r := range []string{"eu", "us", "ap"} {
			e.cluster(r+"-1", st.Labels(v1alpha1.LabelRegion, r))
			e.cluster(r+"-2", st.Labels(v1alpha1.LabelRegion, r))
		}
		regions := map[string]bool{}
		for _, name := range []string{"web-0", "web-1", "web-2"} {
			e.workload(name, st.WLabels("app", "web"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "web")))
			w := e.waitScheduled(name, corev1.ConditionTrue)
			regions[strings.Split(w.Status.ClusterRef.Name, "-")[0]] = true
		}
		if len(regions) != 3 {
			t.Errorf("three replicas landed in %d regions, want 3: %v", len(regions), regions)
		}
		e.workload("web-3", st.WLabels("app", "web"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelRegion, "app", "web")))
		w := e.waitScheduled("web-3", corev1.ConditionFalse)
		if got := w.Status.GetCondition(v1alpha1.TypeScheduled).Message; !strings.Contains(got, "6 cluster(s) didn't satisfy workload anti-affinity rules") {
			t.Errorf("message %q", got)
		}
	})

	t.Run("a burst with mutual anti-affinity never double-books a cluster", func(t *testing.T) {
		// Ten workloads created at once, each keeping away from the
		// others' cluster, on six clusters: decisions follow each other
		// faster than their writes come back through the informer, so
		// only the assumed decisions keep two from one cluster.
		e := e.namespace(t, "burst")
		for i := range 6 {
			e.cluster(fmt.Sprintf("c%d", i))
		}
		names := make([]string, 10)
		for i := range names {
			names[i] = fmt.Sprintf("solo-%d", i)
			e.workload(names[i], st.WLabels("app", "solo"), st.RequiredAntiAffinity(st.WTerm(v1alpha1.LabelClusterName, "app", "solo")))
		}
		used := map[string]string{}
		pending := 0
		for _, name := range names {
			w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}
			testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
				// Decided: placed, or Unschedulable (a missing condition
				// reads as Unknown).
				c := w.Status.GetCondition(v1alpha1.TypeScheduled)
				return c.Status == corev1.ConditionTrue || c.Reason == v1alpha1.ReasonUnschedulable
			})
			if w.Status.ClusterRef == nil {
				pending++
				continue
			}
			if other, ok := used[w.Status.ClusterRef.Name]; ok {
				t.Errorf("%s and %s both placed on %s", other, name, w.Status.ClusterRef.Name)
			}
			used[w.Status.ClusterRef.Name] = name
		}
		if len(used) != 6 || pending != 4 {
			t.Errorf("%d clusters used and %d pending, want 6 and 4", len(used), pending)
		}
	})

	t.Run("a pending workload schedules when a matching cluster appears, and stays", func(t *testing.T) {
		e := e.namespace(t, "pending")
		e.cluster("small", st.Labels("gpu", "false"))
		e.workload("w", st.Selector("gpu", "true"))
		e.waitScheduled("w", corev1.ConditionFalse)
		e.cluster("gpu-1", st.Labels("gpu", "true"))
		e.wantPlaced("w", "gpu-1")

		// A better cluster later does not move it.
		e.cluster("gpu-0", st.Labels("gpu", "true"))
		e.workload("probe", st.Target("gpu-0", ""))
		e.wantPlaced("probe", "gpu-0") // the scheduler has seen gpu-0
		e.wantPlaced("w", "gpu-1")
	})

	t.Run("uncordoning a cluster schedules a pending workload", func(t *testing.T) {
		e := e.namespace(t, "uncordon")
		kc := e.cluster("c", st.Cordoned())
		e.workload("w")
		e.waitScheduled("w", corev1.ConditionFalse)
		kc.Spec.Unschedulable = false
		if err := e.env.Client.Update(context.Background(), kc); err != nil {
			t.Fatal(err)
		}
		e.wantPlaced("w", "c")
	})

	t.Run("uncordoning a drained cluster its workload could not leave: MovePending ends", func(t *testing.T) {
		e := e.namespace(t, "drain-ends")
		kc := e.cluster("only")
		e.workload("w")
		e.wantPlaced("w", "only")
		// Drained, with nowhere else to go: it stays, and says so.
		now := metav1.Now()
		kc.Spec.Taints = []v1alpha1.ClusterTaint{{Key: v1alpha1.TaintClusterDraining, Effect: v1alpha1.TaintEffectNoExecute, TimeAdded: &now}}
		if err := e.env.Client.Update(context.Background(), kc); err != nil {
			t.Fatal(err)
		}
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "w"}}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(v1alpha1.TypeScheduled).Reason == v1alpha1.ReasonMovePending
		})
		// Uncordoned: it need not leave any more, and Scheduled says
		// where it is, not why it should move.
		kc.Spec.Taints = nil
		if err := e.env.Client.Update(context.Background(), kc); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			c := w.Status.GetCondition(v1alpha1.TypeScheduled)
			return c.Reason != v1alpha1.ReasonMovePending && c.Status == corev1.ConditionTrue && w.Status.ClusterRef != nil && w.Status.ClusterRef.Name == "only"
		})
	})

	t.Run("a handshake rejection moves the workload", func(t *testing.T) {
		e := e.namespace(t, "rejected")
		e.cluster("a")
		e.cluster("b")
		e.workload("w")
		// a and b tie; which one comes first depends on the Workload's UID.
		w := e.waitScheduled("w", corev1.ConditionTrue)
		first, other := w.Status.ClusterRef.Name, "b"
		if first == "b" {
			other = "a"
		}
		// As the propagator writes it: timed, never before the choice.
		at := w.RejectionTime(time.Now())
		w.Status.RejectedClusters = []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: first, Namespace: e.ns}, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu.", Generation: w.Generation, Time: &at}}
		if err := e.env.Client.Status().Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, e.wc, w, &v1alpha1.WorkloadList{}, waitTimeout, func(w *v1alpha1.Workload) bool {
			return w.Status.ClusterRef != nil && w.Status.ClusterRef.Name == other
		})
	})

	t.Run("a rejected cluster that opens up is chosen again: Scheduled turns True after the rejection, which the scheduler leaves as the propagator wrote it", func(t *testing.T) {
		e := e.namespace(t, "chosen-again")
		kc := e.cluster("c")
		e.workload("w")
		w := e.waitScheduled("w", corev1.ConditionTrue)
		// The propagator's rejection, at the API's precision of a second,
		// in the very second of the choice it rejects.
		at := w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime
		retry := metav1.NewTime(time.Now().Add(10 * time.Minute).Truncate(time.Second))
		rejected := []v1alpha1.RejectedCluster{{Cluster: v1alpha1.ClusterReference{Name: "c", Namespace: e.ns}, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu.",
			Generation: w.Generation, Time: &at, RetryAfter: &retry, Attempts: 1}}
		w.Status.RejectedClusters = rejected
		if err := e.env.Client.Status().Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		e.waitScheduled("w", corev1.ConditionFalse)
		if err := e.env.Client.Get(context.Background(), client.ObjectKeyFromObject(kc), kc); err != nil {
			t.Fatal(err)
		}
		meta.AddLabels(kc, map[string]string{"example.com/opened": "true"})
		if err := e.env.Client.Update(context.Background(), kc); err != nil {
			t.Fatal(err)
		}
		w = e.waitScheduled("w", corev1.ConditionTrue)
		if on := w.Status.ClusterRef; on == nil || on.Name != "c" {
			t.Fatalf("placed on %v, want c", on)
		}
		rc := w.Rejection(types.NamespacedName{Namespace: e.ns, Name: "c"})
		if rc == nil || !rc.RetryAfter.Equal(&retry) || !rc.Time.Equal(&at) {
			t.Errorf("the scheduler wrote the rejection: %+v, want %+v", w.Status.RejectedClusters, rejected)
		}
		if !w.ChosenSince(rc) || w.RejectedBy(types.NamespacedName{Namespace: e.ns, Name: "c"}) {
			t.Errorf("Scheduled turned True at %s, rejection at %s: the propagator would not prove c again", w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime, at)
		}
	})

	t.Run("a foreign schedulerName is left alone", func(t *testing.T) {
		e := e.namespace(t, "foreign")
		e.cluster("c")
		foreign := e.workload("ext", func(w *v1alpha1.Workload) { w.Spec.SchedulerName = "my-scheduler" })
		e.workload("marker")
		e.wantPlaced("marker", "c") // the scheduler has run since the foreign workload appeared

		// The external scheduler places it.
		if err := e.env.Client.Get(context.Background(), client.ObjectKeyFromObject(foreign), foreign); err != nil {
			t.Fatal(err)
		}
		if len(foreign.Status.Conditions) != 0 || foreign.Status.ClusterRef != nil {
			t.Fatalf("placer touched a foreign workload: %+v", foreign.Status)
		}
		foreign.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "elsewhere", Namespace: e.ns}
		foreign.Status.SetConditions(xpv2.Condition{Type: v1alpha1.TypeScheduled, Status: corev1.ConditionTrue, Reason: "External", LastTransitionTime: metav1.Now()})
		if err := e.env.Client.Status().Update(context.Background(), foreign); err != nil {
			t.Fatal(err)
		}
		rv := foreign.ResourceVersion
		e.cluster("d")
		e.workload("marker2", st.Target("d", ""))
		e.wantPlaced("marker2", "d")
		if err := e.env.Client.Get(context.Background(), client.ObjectKeyFromObject(foreign), foreign); err != nil {
			t.Fatal(err)
		}
		if foreign.ResourceVersion != rv || foreign.Status.ClusterRef.Name != "elsewhere" {
			t.Errorf("placer changed a foreign workload: %+v", foreign.Status)
		}
	})
}
