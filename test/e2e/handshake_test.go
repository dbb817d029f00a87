// Package e2e runs placer end to end: a management API server, member
// clusters with the agent and the candidate scheduler, and the manager.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
	"github.com/placer-dev/placer/controllers/inventory"
	"github.com/placer-dev/placer/internal/cordon"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/eventtest"
	"github.com/placer-dev/placer/internal/promtext"
	"github.com/placer-dev/placer/internal/skew"
	"github.com/placer-dev/placer/internal/testenv"
	"github.com/placer-dev/placer/propagator"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

const timeout = 2 * time.Minute

type member struct {
	name   string
	target *testenv.Target
	client client.WithWatch
	// scheduler is where the candidate scheduler serves (host:port).
	scheduler string
}

// startMember starts a target cluster with the agent and the candidate scheduler.
func startMember(t *testing.T, name string, defaultScheduler bool, nodes ...local.Node) *member {
	t.Helper()
	return startMemberWith(t, local.Options{Name: name, Scheduler: defaultScheduler}, nodes...)
}

// startMemberWith starts a member as startMember does, of a Kubernetes
// version of its own (opts.KubernetesVersion).
func startMemberWith(t *testing.T, opts local.Options, nodes ...local.Node) *member {
	t.Helper()
	name := opts.Name
	target := testenv.StartTarget(t, opts, nodes...)
	// The agent and the candidate scheduler run as config/member deploys
	// them, so a missing permission or a wrong flag fails here.
	scheduler := runMemberComponents(t, target.Cluster)
	return &member{name: name, target: target, client: testenv.Watcher(t, target.RESTConfig()), scheduler: scheduler}
}

// register grants the manager's least-privilege identity (config/member)
// in the member, opening the given namespaces to it, and registers the
// member with that identity's kubeconfig.
func register(t *testing.T, c client.Client, m *member, labels map[string]string, namespaces ...string) {
	t.Helper()
	registerAt(t, c, m, "", labels, namespaces...)
}

// registerAt registers the member as register does, reached at server
// ("" for its API server itself; a fault proxy's address in TestFaults).
func registerAt(t *testing.T, c client.Client, m *member, server string, labels map[string]string, namespaces ...string) {
	t.Helper()
	ctx := context.Background()
	if err := config.GrantManager(ctx, m.target.Clientset, "placer-manager"); err != nil {
		t.Fatal(err)
	}
	// The Workloads of the management namespace default (the tenant)
	// place into these member namespaces.
	for _, ns := range namespaces {
		if err := config.OpenNamespace(ctx, m.target.Clientset, "placer-manager", "default", ns); err != nil {
			t.Fatal(err)
		}
		// And its dependencies (config/member/dependencies-role.yaml).
		if err := config.OpenDependencies(ctx, m.target.Clientset, "default", ns); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig, err := m.target.KubeconfigFor("placer-manager")
	if err != nil {
		t.Fatal(err)
	}
	if server != "" {
		kubeconfig = withServer(t, kubeconfig, server)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name}, Data: map[string][]byte{"kubeconfig": kubeconfig}}
	if err := c.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	kc := &v1alpha1.KubernetesCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name, Labels: labels},
		Spec:       v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: m.name}},
	}
	if err := c.Create(ctx, kc); err != nil {
		t.Fatal(err)
	}
}

// managerPorts are the manager's health, metrics and webhook addresses.
// managerPorts are where a manager serves; kubelet (the virtual nodes'
// kubelet API) is served only when set.
type managerPorts struct{ health, metrics, webhook, kubelet string }

// freeAddr returns a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := local.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// runManager runs 'placer manager' as a process against the management
// API server, as in a real deployment; the returned function kills it
// with SIGKILL, as a crash would.
func runManager(t *testing.T, args []string, logDir string) (kill func()) {
	t.Helper()
	p, err := local.Spawn(logDir, "manager", placerBinary, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(10 * time.Second)
		if t.Failed() {
			t.Logf("manager log (last lines):\n%s", p.LogTail(40))
		}
	})
	return p.Kill
}

// pods returns the candidate pods of a Workload in a member, by phase.
func pods(t *testing.T, m *member, w *v1alpha1.Workload) []corev1.Pod {
	t.Helper()
	l, err := m.target.Clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: mcv1alpha1.LabelWorkloadUID + "=" + string(w.UID)})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// chaperons returns the Workload's chaperons in a member.
func chaperons(t *testing.T, m *member, w *v1alpha1.Workload) []mcv1alpha1.PodChaperon {
	t.Helper()
	l := &mcv1alpha1.PodChaperonList{}
	if err := m.client.List(context.Background(), l, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(w.UID)}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// waitNoChaperons waits until the Workload has no chaperon in the member.
func waitNoChaperons(t *testing.T, m *member, w *v1alpha1.Workload) {
	t.Helper()
	chs := chaperons(t, m, w)
	for i := range chs {
		testenv.WaitForDeletion(t, m.client, &chs[i], &mcv1alpha1.PodChaperonList{}, timeout)
	}
}

// waitNoPods waits until none of the Workload's pods is left in m.
func waitNoPods(t *testing.T, m *member, w *v1alpha1.Workload) {
	t.Helper()
	for _, p := range pods(t, m, w) {
		testenv.WaitForDeletion(t, m.client, &p, &corev1.PodList{}, timeout)
	}
}

// readySampler counts, every 100 ms until stopped, the Ready pods (not
// being deleted) across members that each of some label selectors
// selects, and keeps the lowest count of each: what a user's traffic would
// have met.
type readySampler struct {
	done   chan struct{}
	quit   chan struct{}
	once   sync.Once
	counts map[string]int
}

// sampleReady samples the pods of Workloads, by UID (lowestOf).
func sampleReady(members []*member, ws ...*v1alpha1.Workload) *readySampler {
	selectors := make([]string, len(ws))
	for i, w := range ws {
		selectors[i] = uidSelector(w.UID) // copied: the caller's Workloads change as it waits
	}
	return sampleSelected(members, selectors...)
}

func uidSelector(uid types.UID) string { return mcv1alpha1.LabelWorkloadUID + "=" + string(uid) }

// sampleSelected starts sampling; the first sample is taken before it returns.
func sampleSelected(members []*member, selectors ...string) *readySampler {
	count := func(selector string) (int, bool) {
		n := 0
		for _, m := range members {
			l, err := m.target.Clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return 0, false
			}
			for _, p := range l.Items {
				if p.DeletionTimestamp == nil && podReady(&p) {
					n++
				}
			}
		}
		return n, true
	}
	s := &readySampler{done: make(chan struct{}), quit: make(chan struct{}), counts: map[string]int{}}
	sample := func() {
		for _, sel := range selectors {
			if n, ok := count(sel); ok {
				if low, seen := s.counts[sel]; !seen || n < low {
					s.counts[sel] = n
				}
			}
		}
	}
	sample()
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.quit:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return s
}

// stop ends the sampling; it may be called more than once.
func (s *readySampler) stop() {
	s.once.Do(func() { close(s.quit) })
	<-s.done
}

// lowest stops the sampling and returns the lowest count of each selector.
func (s *readySampler) lowest() map[string]int {
	s.stop()
	return s.counts
}

// lowestOf stops the sampling and returns the lowest count of each
// Workload sampleReady was given.
func (s *readySampler) lowestOf() map[types.UID]int {
	out := map[types.UID]int{}
	for sel, n := range s.lowest() {
		_, uid, _ := strings.Cut(sel, "=")
		out[types.UID(uid)] = n
	}
	return out
}

// checkOneBoundPerReplica is the fleet invariant: across all members, at
// most one bound pod per (workload, replica, pod template) — a rolling
// update with maxSurge runs a replica's old and new pods side by side, as a
// Deployment does — and every bound pod of a workload in one cluster.
func checkOneBoundPerReplica(t *testing.T, members ...*member) {
	t.Helper()
	for _, v := range boundTwice(t, members...) {
		t.Error(v)
	}
}

// boundTwice returns what breaks the fleet invariant now, if anything.
func boundTwice(t *testing.T, members ...*member) []string {
	t.Helper()
	out, err := listBoundTwice(members...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// listBoundTwice is boundTwice, for callers off the test's goroutine.
func listBoundTwice(members ...*member) ([]string, error) {
	bound := map[string][]string{}
	clusters := map[string]map[string]bool{}
	for _, m := range members {
		l, err := m.target.Clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: mcv1alpha1.LabelWorkloadUID})
		if err != nil {
			return nil, err
		}
		for _, p := range l.Items {
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
				continue
			}
			uid := p.Labels[mcv1alpha1.LabelWorkloadUID]
			key := uid + "/" + p.Labels[mcv1alpha1.LabelReplica] + "/" + p.Labels[mcv1alpha1.LabelTemplateHash]
			bound[key] = append(bound[key], m.name+"/"+p.Namespace+"/"+p.Name)
			if clusters[uid] == nil {
				clusters[uid] = map[string]bool{}
			}
			clusters[uid][m.name] = true
		}
	}
	var out []string
	for key, where := range bound {
		if len(where) > 1 {
			out = append(out, fmt.Sprintf("replica %s is bound %d times: %v", key, len(where), where))
		}
	}
	for uid, in := range clusters {
		if len(in) > 1 {
			out = append(out, fmt.Sprintf("workload %s has bound pods in %d clusters: %v", uid, len(in), in))
		}
	}
	slices.Sort(out)
	return out, nil
}

func memberNamed(ms []*member, name string) *member {
	for _, m := range ms {
		if m.name == name {
			return m
		}
	}
	return nil
}

func TestHandshake(t *testing.T) {
	env := testenv.Start(t)
	// One member of each supported minor version (local.KubernetesVersions
	// but UnsupportedKubernetesVersion):
	// a and c run placer's candidate scheduler built with their own
	// kube-scheduler minor or the one before, as the skew policy allows,
	// each started by 'placer candidate-scheduler' as deployed.
	versions := map[string]string{"a": "v1.37.2", "b": local.KubernetesVersion, "c": "v1.36.3"}
	a := startMemberWith(t, local.Options{Name: "a", KubernetesVersion: versions["a"]}, local.Node{Name: "a-0", CPU: "8", Memory: "16Gi"})
	b := startMember(t, "b", true, local.Node{Name: "b-0", CPU: "8", Memory: "16Gi", Labels: map[string]string{"disk": "ssd"}})
	c := startMemberWith(t, local.Options{Name: "c", KubernetesVersion: versions["c"]}, local.Node{Name: "c-0", CPU: "2", Memory: "4Gi", Labels: map[string]string{"disk": "hdd"}})
	members := []*member{a, b, c}
	// The manager runs as config/management deploys it: its ServiceAccount,
	// ClusterRole and the Deployment's flags.
	mgmt := install(t, env.Config, "management")["placer-manager"]
	logDir := t.TempDir()
	ports := managerPorts{health: freeAddr(t), metrics: freeAddr(t), webhook: freeAddr(t)}
	// The API server calls its webhooks at this manager.
	if err := deploy.WebhooksAt(context.Background(), env.Config, ports.webhook); err != nil {
		t.Fatal(err)
	}
	// It reads the ClusterProfiles of the namespace fleet, reached with
	// the access providers of inv.
	inv, inventoryFlags := setUpInventory(t)
	args := append(managerArgs(mgmt, ports), inventoryFlags...)
	startManager := func() func() { return runManager(t, args, logDir) }
	stopManager := startManager()
	wc := testenv.Watcher(t, env.Config)
	// Every member opens default to placer.
	register(t, env.Client, a, map[string]string{"tier": "gold"}, "default")
	register(t, env.Client, b, map[string]string{"tier": "silver"}, "default")
	register(t, env.Client, c, map[string]string{"tier": "bronze"}, "default")
	for _, m := range members {
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name}}
		testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && kc.Status.ReadyNodeCount == 1
		})
		if kc.Status.Version != versions[m.name] {
			t.Errorf("cluster %s: status.version %q, want %q", m.name, kc.Status.Version, versions[m.name])
		}
	}

	workload := func(name string, opts ...st.WorkloadOption) *v1alpha1.Workload {
		t.Helper()
		w := st.Workload(name, append([]st.WorkloadOption{st.Replicas(2), st.Requests("1", "1Gi"), st.PreferredClusterAffinity(100, st.Term(st.Expr("tier", "In", "gold")))}, opts...)...)
		w.UID, w.Generation = "", 0
		if err := env.Client.Create(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	waitReady := func(t *testing.T, w *v1alpha1.Workload) {
		t.Helper()
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
	}
	// readySet: a Ready condition was written (absent, it reads Unknown
	// with no reason).
	readySet := func(w *v1alpha1.Workload) bool {
		return slices.ContainsFunc(w.Status.Conditions, func(c xpv2.Condition) bool { return c.Type == xpv2.TypeReady })
	}
	keyOf := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "default", Name: name} }
	// on is the name of the cluster the Workload is placed on; "" for none.
	on := func(w *v1alpha1.Workload) string {
		if w.Status.ClusterRef == nil {
			return ""
		}
		return w.Status.ClusterRef.Name
	}
	// placed creates a Workload of the subtest's own and waits until it
	// runs: subtests share the fleet, never each other's Workloads.
	placed := func(t *testing.T, name string, opts ...st.WorkloadOption) *v1alpha1.Workload {
		t.Helper()
		w := workload(name, append([]st.WorkloadOption{st.Requests("100m", "64Mi")}, opts...)...)
		waitReady(t, w)
		return w
	}
	running := func(m *member, w *v1alpha1.Workload) int {
		n := 0
		for _, p := range pods(t, m, w) {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}

	t.Run("a workload lands and all its replicas run in the chosen cluster", func(t *testing.T) {
		w := workload("web")
		// The manager's webhook added the propagator's finalizer to the
		// create itself (config/management/webhook.yaml).
		created := w.DeepCopy()
		if !slices.Contains(created.Finalizers, v1alpha1.FinalizerPropagator) {
			t.Errorf("created with finalizers %v: the webhook did not add %s", created.Finalizers, v1alpha1.FinalizerPropagator)
		}
		waitReady(t, w)
		// And no write of its own came after: only the creator's entry of
		// managedFields holds metadata.finalizers.
		for _, mf := range w.ManagedFields {
			if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), `"f:finalizers"`) && !slices.ContainsFunc(created.ManagedFields, func(c metav1.ManagedFieldsEntry) bool {
				return c.Manager == mf.Manager && c.Subresource == mf.Subresource
			}) {
				t.Errorf("%s wrote the finalizers after the create (%s %s)", mf.Manager, mf.Operation, mf.Time)
			}
		}
		if on(w) != "a" || w.Status.ReadyReplicas != 2 {
			t.Fatalf("placed on %s with %d ready, want a with 2", on(w), w.Status.ReadyReplicas)
		}
		// kubectl get workloads shows READY as for a Deployment.
		if w.Status.ReadyOfDesired != "2/2" {
			t.Errorf("readyOfDesired = %q, want 2/2", w.Status.ReadyOfDesired)
		}
		if n := running(a, w); n != 2 {
			t.Errorf("%d pods run in a, want 2", n)
		}
		if n := len(pods(t, b, w)); n != 0 {
			t.Errorf("%d candidates left in b", n)
		}
		// The finalizer is a patch of metadata alone: the spec keeps its
		// generation, and both conditions are of it ('kubectl wait' works).
		sc, rc := w.Status.GetCondition(v1alpha1.TypeScheduled), w.Status.GetCondition(xpv2.TypeReady)
		if len(w.Finalizers) == 0 || w.Generation != 1 || sc.ObservedGeneration != 1 || rc.ObservedGeneration != 1 {
			t.Errorf("finalizers %v, generation %d, Scheduled of generation %d, Ready of generation %d; want a finalizer and 1, 1, 1",
				w.Finalizers, w.Generation, sc.ObservedGeneration, rc.ObservedGeneration)
		}
	})

	t.Run("a single-replica Workload's status is written for the decision and Ready, nothing before its member answers", func(t *testing.T) {
		w := workload("one", st.Replicas(1), st.Requests("100m", "64Mi"))
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		// Every version after the create, in order.
		wi, err := wc.Watch(ctx, &v1alpha1.WorkloadList{}, client.InNamespace(w.Namespace), client.MatchingFields{"metadata.name": w.Name},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: w.ResourceVersion}})
		if err != nil {
			t.Fatal(err)
		}
		defer wi.Stop()
		var versions []*v1alpha1.Workload
		for ready := false; !ready; {
			select {
			case <-ctx.Done():
				t.Fatalf("not Ready within %s; versions seen: %d", timeout, len(versions))
			case ev, open := <-wi.ResultChan():
				if !open || ev.Type == apiwatch.Error {
					t.Fatalf("the watch ended (%v) after %d versions: every version is needed", ev.Object, len(versions))
				}
				got, ok := ev.Object.(*v1alpha1.Workload)
				if !ok || ev.Type != apiwatch.Modified {
					continue
				}
				versions = append(versions, got)
				ready = got.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
			}
		}
		// The first write is the decision, alone; no version counts the
		// replica before the member bound it ("0 of 1 replicas ready"
		// said no more than Scheduled).
		if first := versions[0]; on(first) == "" || readySet(first) {
			t.Errorf("first write: placed on %q, Ready %v; want the decision alone", on(first), first.Status.GetCondition(xpv2.TypeReady))
		}
		for i, v := range versions {
			if rc := v.Status.GetCondition(xpv2.TypeReady); readySet(v) && rc.Status != corev1.ConditionTrue && v.Status.ScheduledReplicas == 0 {
				t.Errorf("write %d set Ready %s (%s: %s) with no replica bound: a status write before the member answered", i+1, rc.Status, rc.Reason, rc.Message)
			}
		}
		// The decision, then Ready; a bound replica whose pod started
		// after its mirror's settle hold may add one between.
		if len(versions) > 3 {
			t.Errorf("%d writes until Ready, want the decision and Ready (and at most a bound replica's count between)", len(versions))
		}
		t.Logf("%d status writes until Ready", len(versions))
	})

	t.Run("policy prefers a, the pods fit only b: a rejects with its scheduler's reason", func(t *testing.T) {
		w := workload("ssd", func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		})
		waitReady(t, w)
		if on(w) != "b" {
			t.Fatalf("placed on %s, want b", on(w))
		}
		if len(w.Status.RejectedClusters) != 1 || w.Status.RejectedClusters[0].Cluster.Name != "a" || w.Status.RejectedClusters[0].Reason != v1alpha1.ReasonUnschedulable {
			t.Fatalf("rejectedClusters = %+v, want a, Unschedulable", w.Status.RejectedClusters)
		}
		if msg := w.Status.RejectedClusters[0].Message; msg == "" || !strings.Contains(msg, "node affinity/selector") {
			t.Errorf("rejection message %q does not carry the target scheduler's reason", msg)
		}
		if n := running(b, w); n != 2 {
			t.Errorf("%d pods run in b, want 2", n)
		}
		// a's candidates go: their chaperons at once, their pods after them
		// (the agent deletes them), so wait rather than look once.
		waitNoChaperons(t, a, w)
		waitNoPods(t, a, w)
	})

	t.Run("the Service is delivered with the pods and removed with them", func(t *testing.T) {
		w := workload("api", st.Replicas(1), func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Labels = map[string]string{"app": "api"}
			w.Spec.TargetService = &corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}
		})
		waitReady(t, w)
		svc, err := a.target.Clientset.CoreV1().Services("default").Get(context.Background(), "api", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("no Service in the committed cluster: %v", err)
		}
		if svc.Spec.Selector["app"] != "api" || len(svc.Spec.Ports) != 1 || svc.Spec.ClusterIP == "" {
			t.Errorf("Service spec %+v", svc.Spec)
		}
		if err := env.Client.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		if _, err := a.target.Clientset.CoreV1().Services("default").Get(context.Background(), "api", metav1.GetOptions{}); err == nil {
			t.Error("the Service outlived its Workload")
		}
	})

	t.Run("fan-out proves the runner-up meanwhile and commits to exactly one cluster", func(t *testing.T) {
		fan := func(w *v1alpha1.Workload) { w.Spec.Placement.FanOut = 2 }
		w := workload("fan", fan)
		waitReady(t, w)
		if on(w) != "a" || len(w.Status.NominatedClusters) != 2 {
			t.Fatalf("placed on %s, nominated %v; want a of a,b", on(w), w.Status.NominatedClusters)
		}
		waitNoChaperons(t, b, w)
		if fannedOut := eventtest.Listed(t, env.Client, "default", func(e *corev1.Event) bool {
			return e.InvolvedObject.Name == "fan" && e.Reason == "CreatedCandidates" && strings.Contains(e.Message, "default/b")
		}); len(fannedOut) == 0 {
			t.Error("no candidates were created in the runner-up b")
		}

		w = workload("fan-ssd", fan, func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		})
		waitReady(t, w)
		if on(w) != "b" || len(w.Status.RejectedClusters) != 1 {
			t.Fatalf("placed on %s with rejections %+v; want b after a rejected", on(w), w.Status.RejectedClusters)
		}
		waitNoChaperons(t, a, w)
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("fanOut 3 commits to exactly one cluster and leaves no candidates elsewhere", func(t *testing.T) {
		fan3 := func(w *v1alpha1.Workload) { w.Spec.Placement.FanOut = 3 }
		w := workload("fan3", fan3, st.Requests("500m", "256Mi"))
		waitReady(t, w)
		if on(w) != "a" || len(w.Status.NominatedClusters) != 3 {
			t.Fatalf("placed on %s, nominated %v; want a of three", on(w), w.Status.NominatedClusters)
		}
		waitNoChaperons(t, b, w)
		waitNoChaperons(t, c, w)

		// Only c's node has an hdd: a and b reject, c was proven meanwhile.
		w = workload("fan3-hdd", fan3, st.Requests("500m", "256Mi"), func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"disk": "hdd"}
		})
		waitReady(t, w)
		// b may reject too, or c may commit before b answers.
		aRejected := false
		for _, rc := range w.Status.RejectedClusters {
			aRejected = aRejected || rc.Cluster.Name == "a" && rc.Reason == v1alpha1.ReasonUnschedulable
		}
		if on(w) != "c" || !aRejected {
			t.Fatalf("placed on %s with rejections %+v; want c after a rejected", on(w), w.Status.RejectedClusters)
		}
		waitNoChaperons(t, a, w)
		waitNoChaperons(t, b, w)
		if n := running(c, w); n != 2 {
			t.Errorf("%d pods run in c, want 2", n)
		}
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("a workload that fits nowhere stays Unschedulable with per-cluster reasons and leaves no candidate", func(t *testing.T) {
		w := workload("huge", st.Requests("64", "1Gi"))
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(v1alpha1.TypeScheduled).Reason == v1alpha1.ReasonUnschedulable
		})
		// ResourceFit knows both clusters' largest free node: no candidate is even tried.
		if msg := w.Status.GetCondition(v1alpha1.TypeScheduled).Message; !strings.Contains(msg, "3 cluster(s) had no room for one replica (Insufficient cpu)") {
			t.Errorf("message %q", msg)
		}
		for _, m := range members {
			if n := len(pods(t, m, w)); n != 0 {
				t.Errorf("%d candidates in %s", n, m.name)
			}
		}

		hidden := workload("hidden", func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"disk": "nvme"}
		})
		testenv.WaitFor(t, wc, hidden, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(v1alpha1.TypeScheduled).Reason == v1alpha1.ReasonUnschedulable && len(w.Status.RejectedClusters) == 3
		})
		// Clusters are grouped by their schedulers' words, which differ
		// from one kube-scheduler minor to the next: 3 in all.
		msg := hidden.Status.GetCondition(v1alpha1.TypeScheduled).Message
		rejected := 0
		for _, m := range regexp.MustCompile(`(\d+) cluster\(s\) rejected the candidate pods \(0/1 nodes are available: 1 node\(s\) didn't match Pod's node affinity/selector`).FindAllStringSubmatch(msg, -1) {
			n, _ := strconv.Atoi(m[1])
			rejected += n
		}
		if rejected != 3 {
			t.Errorf("message %q does not carry the 3 clusters' rejections", msg)
		}
		for _, m := range members {
			waitNoChaperons(t, m, hidden)
		}
	})

	t.Run("NoReservation places through the member's own scheduler", func(t *testing.T) {
		w := workload("serverless", st.Target("b", ""), func(w *v1alpha1.Workload) { w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation })
		waitReady(t, w)
		for _, p := range pods(t, b, w) {
			if p.Spec.SchedulerName != corev1.DefaultSchedulerName || p.Spec.NodeName == "" {
				t.Errorf("pod %s: scheduler %q, node %q", p.Name, p.Spec.SchedulerName, p.Spec.NodeName)
			}
		}
	})

	t.Run("scale up and down in the committed cluster", func(t *testing.T) {
		w := placed(t, "scaled")
		scale := func(n int32) {
			t.Helper()
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil {
				t.Fatal(err)
			}
			w.Spec.TargetDeployment.Replicas = &n
			if err := env.Client.Update(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
				return w.Status.ObservedGeneration == w.Generation && w.Status.ReadyReplicas == n && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
			})
			// The placed Workload's Scheduled condition follows the new
			// generation too: 'kubectl wait --for=condition=Scheduled' returns.
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
				c := w.Status.GetCondition(v1alpha1.TypeScheduled)
				return c.Status == corev1.ConditionTrue && c.ObservedGeneration == w.Generation
			})
			// Replicas beyond the count go: their chaperons, then their pods.
			for _, p := range pods(t, a, w) {
				if i, _ := strconv.Atoi(p.Labels[mcv1alpha1.LabelReplica]); i >= int(n) {
					testenv.WaitForDeletion(t, a.client, &p, &corev1.PodList{}, timeout)
				}
			}
			if got := running(a, w); got != int(n) {
				t.Errorf("%d pods run in a, want %d", got, n)
			}
		}
		scale(4)
		scale(1)
		if on(w) != "a" {
			t.Errorf("scaling moved the workload to %s", on(w))
		}
	})

	t.Run("a template change with maxSurge 1, maxUnavailable 0 never leaves a replica without a Ready pod", func(t *testing.T) {
		w := placed(t, "rolled")
		oldHash := propagator.TemplateHash(w)
		surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
		w.Spec.TargetDeployment.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable}}
		w.Spec.TargetDeployment.Template.Labels = map[string]string{"version": "2"}
		// Ready pods, sampled until the old chaperons are gone: the
		// status alone may say Ready before the rollout starts.
		sampler := sampleReady([]*member{a}, w)
		t.Cleanup(sampler.stop)
		if err := env.Client.Update(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		hash, minReady := "", int32(1<<30)
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			hash = propagator.TemplateHash(w)
			minReady = min(minReady, w.Status.ReadyReplicas)
			// The counts do not change while the rollout keeps every
			// replica Ready: the new pods are waited for below.
			return w.Status.ObservedGeneration == w.Generation && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		for i := range w.ReplicaCount() {
			if _, err := local.WaitForPod(ctx, a.target.Clientset, "default", propagator.ChaperonName(w, i), func(p *corev1.Pod) bool {
				return p.Labels[mcv1alpha1.LabelTemplateHash] == hash && p.Labels["version"] == "2" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if on(w) != "a" {
			t.Errorf("the template change moved the workload to %s", on(w))
		}
		if minReady < *w.Spec.TargetDeployment.Replicas {
			t.Errorf("readyReplicas fell to %d during the rolling update, want never below %d", minReady, *w.Spec.TargetDeployment.Replicas)
		}
		// The new pod started beside the old one, which then went (Events
		// are written asynchronously: wait for it).
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}
		testenv.WaitFor(t, wc, ev, &corev1.EventList{}, timeout, func(e *corev1.Event) bool {
			return e.InvolvedObject.Name == w.Name && e.Reason == "Replacing" && strings.Contains(e.Message, "1 new pod(s) started, 0 old pod(s) removed")
		})
		l := &mcv1alpha1.PodChaperonList{}
		if err := a.client.List(context.Background(), l, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(w.UID), mcv1alpha1.LabelTemplateHash: oldHash}); err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			testenv.WaitForDeletion(t, a.client, &l.Items[i], &mcv1alpha1.PodChaperonList{}, timeout)
		}
		if low := sampler.lowestOf()[w.UID]; low < w.ReplicaCount() {
			t.Errorf("%d Ready pods at the lowest during the rolling update, want never below %d", low, w.ReplicaCount())
		}
	})

	t.Run("a deleted candidate pod comes back, also while the manager is stopped", func(t *testing.T) {
		w := placed(t, "revived")
		name := propagator.ChaperonName(w, 0)
		replace := func() {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			old, err := a.target.Clientset.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := a.target.Clientset.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
			if _, err := local.WaitForPod(ctx, a.target.Clientset, "default", name, func(p *corev1.Pod) bool {
				return p.UID != old.UID && p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != ""
			}); err != nil {
				t.Fatal(err)
			}
		}
		replace()
		stopManager()
		replace()
		stopManager = startManager()
	})

	t.Run("killing the manager during handshakes, and during a burst, never binds a replica twice", func(t *testing.T) {
		var ws []*v1alpha1.Workload
		// Three crashes at different points of the handshakes in flight.
		for round, delay := range []time.Duration{200 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond} {
			for i := range 2 {
				ws = append(ws, workload(fmt.Sprintf("r%d-%d", round, i), st.Requests("100m", "64Mi"), func(w *v1alpha1.Workload) { w.Spec.Placement.FanOut = 3 }))
			}
			time.Sleep(delay) // mid-handshake, on purpose: this is the cut being tested
			stopManager()
			checkOneBoundPerReplica(t, members...)
			stopManager = startManager()
		}
		// settled: each Workload runs, every replica bound once across the
		// fleet, its pods all in its cluster and nothing left elsewhere.
		settled := func(ws []*v1alpha1.Workload) {
			t.Helper()
			for _, w := range ws {
				waitReady(t, w)
			}
			checkOneBoundPerReplica(t, members...)
			for _, w := range ws {
				for _, m := range members {
					if m.name != on(w) {
						waitNoChaperons(t, m, w)
					}
				}
				if n := len(pods(t, memberNamed(members, on(w)), w)); n != int(*w.Spec.TargetDeployment.Replicas) {
					t.Errorf("%s: %d pods in %s, want %d", w.Name, n, on(w), *w.Spec.TargetDeployment.Replicas)
				}
			}
		}
		settled(ws)

		// And a burst: 24 Workloads at once, gangs of one (no hold) and
		// fan-outs of two replicas, the manager (running, the rounds above
		// done) killed as soon as the first of them is placed, while the
		// others' decisions are written and their candidates made.
		var burst []*v1alpha1.Workload
		for i := range 24 {
			opts := []st.WorkloadOption{st.Requests("10m", "16Mi")}
			if i%2 == 0 {
				opts = append(opts, st.Replicas(1))
			} else {
				opts = append(opts, func(w *v1alpha1.Workload) { w.Spec.Placement.FanOut = 3 })
			}
			burst = append(burst, workload(fmt.Sprintf("burst-%02d", i), opts...))
		}
		testenv.WaitFor(t, wc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return strings.HasPrefix(w.Name, "burst-") && w.Status.ClusterRef != nil
		})
		stopManager()
		placedN, ready := 0, 0
		for _, w := range burst {
			got := &v1alpha1.Workload{}
			if err := env.Client.Get(context.Background(), keyOf(w.Name), got); err != nil {
				t.Fatal(err)
			}
			if got.Status.ClusterRef != nil {
				placedN++
			}
			if got.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
				ready++
			}
		}
		t.Logf("the manager was killed with %d of %d burst Workloads placed, %d Ready", placedN, len(burst), ready)
		checkOneBoundPerReplica(t, members...)
		stopManager = startManager()
		settled(burst)
	})

	t.Run("the manager serves health, readiness and Prometheus metrics", func(t *testing.T) {
		w := workload("metered", st.Requests("100m", "64Mi"))
		waitReady(t, w)
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body := httpsGet(t, "http://"+ports.health+path, ""); code != http.StatusOK {
				t.Errorf("%s: %d %s", path, code, body)
			}
		}
		// /metrics is served as config/ deploys it (--metrics-secure):
		// to callers the API server authenticates and authorizes.
		if code, _ := httpsGet(t, "https://"+ports.metrics+"/metrics", ""); code != http.StatusUnauthorized {
			t.Errorf("/metrics without a token: %d, want 401", code)
		}
		if code, _ := httpsGet(t, "https://"+ports.metrics+"/metrics", scraperToken(t, env, false)); code != http.StatusForbidden {
			t.Errorf("/metrics as an identity without placer-metrics-reader: %d, want 403", code)
		}
		code, body := httpsGet(t, "https://"+ports.metrics+"/metrics", scraperToken(t, env, true))
		if code != http.StatusOK {
			t.Fatalf("/metrics as placer-metrics-reader: %d %s", code, body)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^placer_scheduling_attempts_total\{result="scheduled"\} [1-9]`),
			regexp.MustCompile(`(?m)^placer_scheduling_cycle_duration_seconds_count [1-9]`),
			regexp.MustCompile(`(?m)^placer_handshake_duration_seconds_count\{result="committed"\} [1-9]`),
			regexp.MustCompile(`(?m)^placer_ready_clusters 3$`),
			regexp.MustCompile(`(?m)^placer_pending_workloads [0-9]`),
		} {
			if !want.MatchString(body) {
				t.Errorf("/metrics has no line matching %s", want)
			}
		}
	})

	t.Run("each candidate scheduler serves its probes and Prometheus metrics as deployed", func(t *testing.T) {
		// kube-scheduler's own secure serving (config/member): the probes
		// for anyone, /metrics for callers the member's API server
		// authenticates and authorizes.
		for _, m := range members {
			for _, path := range []string{"/healthz", "/readyz", "/livez"} {
				if code, body := httpsGet(t, "https://"+m.scheduler+path, ""); code != http.StatusOK {
					t.Errorf("%s candidate scheduler %s: %d %s", m.name, path, code, body)
				}
			}
			if code, _ := httpsGet(t, "https://"+m.scheduler+"/metrics", ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
				t.Errorf("%s candidate scheduler /metrics without a token: %d, want 401 or 403", m.name, code)
			}
			if code, _ := httpsGet(t, "https://"+m.scheduler+"/metrics", scraperTokenIn(t, m.client, m.target.RESTConfig(), false)); code != http.StatusForbidden {
				t.Errorf("%s candidate scheduler /metrics as an identity without placer-metrics-reader: %d, want 403", m.name, code)
			}
			code, body := httpsGet(t, "https://"+m.scheduler+"/metrics", scraperTokenIn(t, m.client, m.target.RESTConfig(), true))
			if code != http.StatusOK {
				t.Fatalf("%s candidate scheduler /metrics as placer-metrics-reader: %d %s", m.name, code, body)
			}
			// The build the member's version needs runs there: the newest
			// kube-scheduler at most one minor older than its API server.
			want := skew.CandidateFor(versions[m.name])
			if !regexp.MustCompile(`(?m)^kubernetes_build_info\{[^}]*git_version="` + regexp.QuoteMeta(want) + `"`).MatchString(body) {
				t.Errorf("%s (Kubernetes %s) candidate scheduler: kubernetes_build_info is not kube-scheduler %s", m.name, versions[m.name], want)
			}
			// Its logs are JSON (--logging-format=json), as the manager's
			// and the agent's are.
			b, err := os.ReadFile(filepath.Join(m.target.Dir(), "candidate-scheduler.log"))
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if strings.HasPrefix(line, "local cluster: ") || strings.HasPrefix(line, "error: ") {
					continue // the harness's own notes; placer's last word when it exits
				}
				n++
				if json.Unmarshal([]byte(line), &map[string]any{}) != nil {
					t.Errorf("%s candidate scheduler logs a line that is not JSON: %q", m.name, line)
					break
				}
			}
			if n == 0 {
				t.Errorf("%s candidate scheduler logged nothing", m.name)
			}
			// Every member has scheduled candidates by now.
			if want := regexp.MustCompile(`(?m)^scheduler_schedule_attempts_total\{profile="placer-candidate",result="scheduled"\} [1-9]`); !want.MatchString(body) {
				t.Errorf("%s candidate scheduler /metrics has no line matching %s", m.name, want)
			}
		}
	})

	t.Run("a workload deleted while its member is unreachable waits for it, then leaves nothing", func(t *testing.T) {
		w := placed(t, "on-c", st.Replicas(1), st.Target("c", ""))
		// A failure must not leave c down for the subtests after this.
		restart := stopAPIServer(t, c)
		if err := env.Client.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		// The finalizer holds the Workload, and an Event says why.
		ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}
		testenv.WaitFor(t, wc, ev, &corev1.EventList{}, timeout, func(e *corev1.Event) bool {
			return e.InvolvedObject.Name == w.Name && e.Reason == "CleanupPending" && strings.Contains(e.Message, "default/c")
		})
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), w); err != nil || w.DeletionTimestamp == nil {
			t.Fatalf("the Workload went while its pods' cluster was unreachable: %v", err)
		}
		restart()
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		waitNoChaperons(t, c, w)
		waitNoPods(t, c, w)
	})

	t.Run("deleting a workload leaves nothing behind", func(t *testing.T) {
		w := placed(t, "gone", st.Target("b", ""))
		if err := env.Client.Delete(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		for _, m := range members {
			// The finalizer held the Workload until its chaperons were gone.
			l := &mcv1alpha1.PodChaperonList{}
			if err := m.client.List(context.Background(), l, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(w.UID)}); err != nil {
				t.Fatal(err)
			}
			if len(l.Items) != 0 {
				t.Errorf("%d chaperons left in %s after the Workload was gone", len(l.Items), m.name)
			}
			waitNoPods(t, m, w)
		}
	})

	// Fleet dynamics. These come last: they stop, taint and delete members.
	// They start from an empty fleet: a move takes room elsewhere.
	if err := env.Client.DeleteAllOf(context.Background(), &v1alpha1.Workload{}, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	wl := &v1alpha1.WorkloadList{}
	if err := env.Client.List(context.Background(), wl); err != nil {
		t.Fatal(err)
	}
	for i := range wl.Items {
		testenv.WaitForDeletion(t, wc, &wl.Items[i], &v1alpha1.WorkloadList{}, timeout)
	}

	// remove deletes Workloads and waits until they are gone.
	remove := func(t *testing.T, ws ...*v1alpha1.Workload) {
		t.Helper()
		for _, w := range ws {
			if err := env.Client.Delete(context.Background(), w); resource.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
		for _, w := range ws {
			testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		}
	}
	// removeLater removes the Workloads when the subtest ends, pass or
	// fail, after what the subtest itself restores (a member's API
	// server restarted, cleanups run last registered first).
	removeLater := func(t *testing.T, ws ...*v1alpha1.Workload) {
		t.Cleanup(func() { remove(t, ws...) })
	}
	// editCluster patches a KubernetesCluster's spec; spec.taints is one
	// list the cluster controller writes too, so the patch carries the
	// resourceVersion and is retried on conflict.
	editCluster := func(t *testing.T, name string, edit func(kc *v1alpha1.KubernetesCluster)) {
		t.Helper()
		err := cordon.Edit(context.Background(), env.Client, keyOf(name), func(kc *v1alpha1.KubernetesCluster) bool {
			edit(kc)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	waitCluster := func(t *testing.T, name string, ok func(kc *v1alpha1.KubernetesCluster) bool) *v1alpha1.KubernetesCluster {
		t.Helper()
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, ok)
		return kc
	}
	clusterReady := func(kc *v1alpha1.KubernetesCluster) bool {
		return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	}
	// freeze stops a component of a member (SIGSTOP) once the member is
	// Ready; thaw, also run when the test ends, lets it go on.
	freeze := func(t *testing.T, m *member, component string) (thaw func()) {
		t.Helper()
		waitCluster(t, m.name, clusterReady)
		thaw, err := m.target.Freeze(component)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(thaw)
		return thaw
	}

	t.Run("batch pods run once: exit 0 completes, exit 1 fails and is not run again, an evicted pod is replaced", func(t *testing.T) {
		batch := func(name, code, runFor string) *v1alpha1.Workload {
			return workload(name, st.Requests("100m", "64Mi"), st.Target("a", ""), func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
				w.Spec.TargetDeployment.Template.Annotations = map[string]string{local.AnnotationExitCode: code, local.AnnotationRunFor: runFor}
			})
		}
		ok, failed, evicted := batch("batch-ok", "0", "2s"), batch("batch-fail", "1", "2s"), batch("batch-evicted", "0", "1h")
		removeLater(t, ok, failed, evicted)
		finished := func(t *testing.T, w *v1alpha1.Workload, cond string) {
			t.Helper()
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
				return w.Status.GetCondition(xpv2.ConditionType(cond)).Status == corev1.ConditionTrue
			})
		}
		finished(t, ok, v1alpha1.TypeComplete)
		if ok.Status.Succeeded != 2 || ok.Status.Failed != 0 || ok.Status.GetCondition(xpv2.TypeReady).Reason != v1alpha1.ReasonCompleted {
			t.Errorf("a Complete Workload: succeeded %d, failed %d, Ready %+v", ok.Status.Succeeded, ok.Status.Failed, ok.Status.GetCondition(xpv2.TypeReady))
		}
		finished(t, failed, v1alpha1.TypeFailed)
		if failed.Status.Failed != 2 || !strings.Contains(failed.Status.GetCondition(v1alpha1.TypeFailed).Message, "exited with code 1") {
			t.Errorf("a Failed Workload: failed %d, condition %+v", failed.Status.Failed, failed.Status.GetCondition(v1alpha1.TypeFailed))
		}
		// The failed pods are kept as they ended, not run again.
		for _, w := range []*v1alpha1.Workload{ok, failed} {
			ps := pods(t, a, w)
			if len(ps) != 2 {
				t.Errorf("%s: %d pods in a, want the 2 that ended", w.Name, len(ps))
			}
			for _, p := range ps {
				if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					t.Errorf("%s: pod %s is %s: run again", w.Name, p.Name, p.Status.Phase)
				}
			}
		}
		// An evicted batch pod did not end on its own: it is replaced.
		waitReady(t, evicted)
		name := propagator.ChaperonName(evicted, 0)
		cs := a.target.Clientset
		old, err := cs.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().Pods("default").EvictV1(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		again, err := local.WaitForPod(ctx, cs, "default", name, func(p *corev1.Pod) bool {
			return p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		})
		if err != nil {
			t.Fatal(err)
		}
		// Evicted by its kubelet (node pressure): the pod stays, Failed,
		// with a DisruptionTarget condition; it did not end on its own.
		if err := local.EvictByKubelet(ctx, cs, again); err != nil {
			t.Fatal(err)
		}
		third, err := local.WaitForPod(ctx, cs, "default", name, func(p *corev1.Pod) bool {
			return p.UID != again.UID && p.UID != old.UID && p.Status.Phase == corev1.PodRunning
		})
		if err != nil {
			t.Fatal(err)
		}
		// The Workload's status is read once the chaperon mirrors the
		// third pod (its Ready condition's time), not before.
		_, ready := podutil.GetPodCondition(&third.Status, corev1.PodReady)
		ch := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		testenv.WaitFor(t, a.client, ch, &mcv1alpha1.PodChaperonList{}, timeout, func(ch *mcv1alpha1.PodChaperon) bool {
			_, c := podutil.GetPodConditionFromList(ch.Status.Conditions, corev1.PodReady)
			return ready != nil && c != nil && c.LastTransitionTime.Equal(&ready.LastTransitionTime) && ch.Status.Phase == corev1.PodRunning
		})
		testenv.WaitFor(t, wc, evicted, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.ReadyReplicas == w.Status.Replicas && w.Status.Replicas == 2
		})
		if evicted.Finished() || evicted.Status.Failed != 0 {
			t.Errorf("an evicted replica counted as ended: failed %d, conditions %+v", evicted.Status.Failed, evicted.Status.Conditions)
		}
	})

	t.Run("overrides: the pods in the clusters a rule selects carry it, the others the template; a rule that makes them unschedulable rejects the cluster", func(t *testing.T) {
		goldMirror := func(target string) st.WorkloadOption {
			return func(w *v1alpha1.Workload) {
				if target != "" {
					w.Spec.TargetCluster = &v1alpha1.ClusterReference{Name: target}
				}
				w.Spec.Overrides = []v1alpha1.Override{{Name: "gold-mirror", ClusterSelector: st.Term(st.Expr("tier", "In", "gold")),
					Image: &v1alpha1.ImageOverride{Registry: "mirror.gold.example.com"}, Env: []corev1.EnvVar{{Name: "TIER", Value: "gold"}}}}
			}
		}
		inA, inB := placed(t, "override-a", goldMirror("a")), placed(t, "override-b", goldMirror("b"))
		removeLater(t, inA, inB)
		for _, c := range []struct {
			m     *member
			w     *v1alpha1.Workload
			image string
			env   []corev1.EnvVar
		}{{a, inA, "mirror.gold.example.com/library/pause", []corev1.EnvVar{{Name: "TIER", Value: "gold"}}}, {b, inB, "pause", nil}} {
			ps := pods(t, c.m, c.w)
			if len(ps) != 2 {
				t.Fatalf("%d pods of %s in %s, want 2", len(ps), c.w.Name, c.m.name)
			}
			for _, p := range ps {
				if img, env := p.Spec.Containers[0].Image, p.Spec.Containers[0].Env; img != c.image || len(env) != len(c.env) || len(env) > 0 && env[0] != c.env[0] {
					t.Errorf("pod %s in %s: image %q and env %v, want %q and %v", p.Name, c.m.name, img, env, c.image, c.env)
				}
			}
		}

		// a is preferred, but its rule asks for nodes a has not: a's own
		// scheduler finds the candidates unschedulable, and b or c takes it.
		w := workload("override-nvme", st.Requests("100m", "64Mi"), func(w *v1alpha1.Workload) {
			w.Spec.Overrides = []v1alpha1.Override{{Name: "gold-nvme", ClusterSelector: st.Term(st.Expr("tier", "In", "gold")), NodeSelector: map[string]string{"disk": "nvme"}}}
		})
		removeLater(t, w)
		waitReady(t, w)
		if on(w) == "a" {
			t.Fatal("placed on a, whose nodes the override excludes")
		}
		rc := w.Rejection(keyOf("a"))
		if rc == nil || rc.Reason != v1alpha1.ReasonUnschedulable || !strings.Contains(rc.Message, "node affinity/selector") {
			t.Errorf("a's rejection %+v, want Unschedulable by its scheduler for the node selector", rc)
		}
		for _, p := range pods(t, memberNamed(members, on(w)), w) {
			if p.Spec.NodeSelector["disk"] == "nvme" {
				t.Errorf("pod %s in %s carries a rule that selects only a", p.Name, on(w))
			}
		}
	})

	t.Run("dependencies: ConfigMap, Secret and ServiceAccount go to the committed cluster before the pods bind, never to runner-ups; synced, shared, let go; a foreign object is left and reported; a missing Secret holds", func(t *testing.T) {
		ctx := context.Background()
		create := func(o client.Object) {
			t.Helper()
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, o) })
		}
		meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "default", Name: name} }
		create(&corev1.ConfigMap{ObjectMeta: meta("dep-settings"), Data: map[string]string{"mode": "fast"}})
		create(&corev1.Secret{ObjectMeta: meta("dep-db"), StringData: map[string]string{"password": "s3cret"}})
		create(&corev1.Secret{ObjectMeta: meta("dep-pull"), Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`}})
		create(&corev1.ServiceAccount{ObjectMeta: meta("dep-runner"), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "dep-pull"}}})
		create(&corev1.ConfigMap{ObjectMeta: meta("dep-theirs"), Data: map[string]string{"mode": "ours"}})
		// a already holds a ConfigMap of that name that placer did not make.
		foreign := &corev1.ConfigMap{ObjectMeta: meta("dep-theirs"), Data: map[string]string{"mode": "theirs"}}
		if err := a.client.Create(ctx, foreign); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.client.Delete(ctx, foreign) })
		uses := func(w *v1alpha1.Workload, settings bool) {
			spec := &w.Spec.TargetDeployment.Template.Spec
			if settings {
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dep-settings"}}}})
				return
			}
			spec.ServiceAccountName = "dep-runner"
			spec.Containers[0].Env = []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "dep-db"}, Key: "password"}}}}
			spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dep-theirs"}}}}
		}

		// The order in a, by etcd's revision (one etcd serves a's API
		// server, so revisions order every write there).
		rctx, stopRecording := context.WithCancel(ctx)
		defer stopRecording()
		type write struct {
			rv   int64
			what string
		}
		var mu sync.Mutex
		var writes []write
		record := func(w apiwatch.Interface, what func(runtime.Object) string) {
			go func() {
				defer w.Stop()
				for ev := range w.ResultChan() {
					o, ok := ev.Object.(client.Object)
					if !ok {
						continue
					}
					rv, _ := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
					if s := what(ev.Object); s != "" {
						mu.Lock()
						writes = append(writes, write{rv, s})
						mu.Unlock()
					}
				}
			}()
		}
		sw, err := a.target.Clientset.CoreV1().Secrets("default").Watch(rctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		record(sw, func(o runtime.Object) string { return "secret " + o.(*corev1.Secret).Name })
		pw, err := a.target.Clientset.CoreV1().Pods("default").Watch(rctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		record(pw, func(o runtime.Object) string {
			if p := o.(*corev1.Pod); p.Spec.NodeName != "" && strings.HasPrefix(p.Name, "deps-one") {
				return "bound " + p.Name
			}
			return ""
		})

		// fanOut 3: b and c are runner-ups; a, preferred, commits.
		one := workload("deps-one", st.Requests("100m", "64Mi"), func(w *v1alpha1.Workload) {
			w.Spec.Placement.FanOut = 3
			uses(w, true)
			uses(w, false)
		})
		removeLater(t, one)
		waitReady(t, one)
		if on(one) != "a" {
			t.Fatalf("placed on %s, want a", on(one))
		}
		stopRecording()
		mu.Lock()
		var secretAt, boundAt int64
		for _, w := range writes {
			if w.what == "secret dep-db" && secretAt == 0 {
				secretAt = w.rv
			}
			if strings.HasPrefix(w.what, "bound ") && boundAt == 0 {
				boundAt = w.rv
			}
		}
		mu.Unlock()
		if secretAt == 0 || boundAt == 0 || secretAt > boundAt {
			t.Errorf("in a, Secret dep-db written at revision %d, the first pod bound at %d: want the Secret first", secretAt, boundAt)
		}
		get := func(m *member, o client.Object, name string) error {
			return m.client.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, o)
		}
		s := &corev1.Secret{}
		if err := get(a, s, "dep-db"); err != nil || string(s.Data["password"]) != "s3cret" {
			t.Errorf("Secret dep-db in a: %v %v", err, s.Data)
		}
		for _, name := range []string{"dep-pull", "dep-db"} {
			if err := get(a, &corev1.Secret{}, name); err != nil {
				t.Errorf("Secret %s is not in a: %v", name, err)
			}
		}
		if err := get(a, &corev1.ServiceAccount{}, "dep-runner"); err != nil {
			t.Errorf("ServiceAccount dep-runner is not in a: %v", err)
		}
		for _, m := range []*member{b, c} {
			for _, o := range []struct {
				obj  client.Object
				name string
			}{{&corev1.Secret{}, "dep-db"}, {&corev1.Secret{}, "dep-pull"}, {&corev1.ConfigMap{}, "dep-settings"}} {
				if err := get(m, o.obj, o.name); !kerrors.IsNotFound(err) {
					t.Errorf("%T %s in the runner-up %s: %v", o.obj, o.name, m.name, err)
				}
			}
			// Its candidates needed the ServiceAccount; it goes with them.
			testenv.WaitForDeletion(t, m.client, &corev1.ServiceAccount{ObjectMeta: meta("dep-runner")}, &corev1.ServiceAccountList{}, timeout)
		}
		// The member's own ConfigMap is left as it is, and reported.
		if err := get(a, foreign, "dep-theirs"); err != nil || foreign.Data["mode"] != "theirs" {
			t.Errorf("the foreign ConfigMap in a: %v %v", err, foreign.Data)
		}
		conflict := ""
		for _, d := range one.Status.Dependencies {
			if d.Name == "dep-theirs" {
				conflict = d.Message
			}
		}
		if !strings.Contains(conflict, "was not copied by placer") {
			t.Errorf("status.dependencies %+v does not report dep-theirs", one.Status.Dependencies)
		}

		// An edit of the source follows.
		edited := &corev1.Secret{}
		if err := env.Client.Get(ctx, keyOf("dep-db"), edited); err != nil {
			t.Fatal(err)
		}
		edited.Data["password"] = []byte("n3w")
		if err := env.Client.Update(ctx, edited); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, a.client, &corev1.Secret{ObjectMeta: meta("dep-db")}, &corev1.SecretList{}, 30*time.Second, func(s *corev1.Secret) bool {
			return string(s.Data["password"]) == "n3w"
		})

		// A second Workload in a shares the ConfigMap: it stays until
		// neither uses it; the Secret only the first used goes with it.
		two := workload("deps-two", st.Requests("100m", "64Mi"), st.Replicas(1), st.Target("a", ""), func(w *v1alpha1.Workload) { uses(w, true) })
		removeLater(t, two)
		waitReady(t, two)
		remove(t, one)
		testenv.WaitForDeletion(t, a.client, &corev1.Secret{ObjectMeta: meta("dep-db")}, &corev1.SecretList{}, timeout)
		cm := &corev1.ConfigMap{}
		if err := get(a, cm, "dep-settings"); err != nil || cm.Data["mode"] != "fast" {
			t.Errorf("ConfigMap dep-settings in a while deps-two uses it: %v", err)
		}
		if err := get(a, foreign, "dep-theirs"); err != nil {
			t.Errorf("the foreign ConfigMap went with deps-one: %v", err)
		}
		remove(t, two)
		testenv.WaitForDeletion(t, a.client, &corev1.ConfigMap{ObjectMeta: meta("dep-settings")}, &corev1.ConfigMapList{}, timeout)

		// A missing Secret holds the pods, naming it; creating it releases them.
		later := workload("deps-later", st.Requests("100m", "64Mi"), st.Replicas(1), func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dep-later"}}}}
		})
		removeLater(t, later)
		testenv.WaitFor(t, wc, later, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			c := w.Status.GetCondition(xpv2.TypeReady)
			return c.Reason == v1alpha1.ReasonMissingDependency && strings.Contains(c.Message, "Secret default/dep-later")
		})
		for _, m := range members {
			if n := len(chaperons(t, m, later)); n != 0 {
				t.Errorf("%d candidates in %s while the Secret is missing", n, m.name)
			}
		}
		create(&corev1.Secret{ObjectMeta: meta("dep-later"), StringData: map[string]string{"k": "v"}})
		waitReady(t, later)
	})

	t.Run("a member whose agent stops is not Ready for placement, with a reason naming the agent, and is Ready again once it runs", func(t *testing.T) {
		thaw := freeze(t, c, "agent")
		kc := waitCluster(t, "c", func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonAgentNotRunning
		})
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, "agent") {
			t.Errorf("Ready message = %q, want it to name the agent", msg)
		}
		// Nothing is placed there meanwhile.
		w := workload("needs-c", st.Replicas(1), st.Requests("100m", "64Mi"), st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelClusterName, "In", "c"))))
		removeLater(t, w)
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			sc := w.Status.GetCondition(v1alpha1.TypeScheduled)
			return sc.Status == corev1.ConditionFalse && strings.Contains(sc.Message, "not ready")
		})
		thaw()
		waitCluster(t, "c", clusterReady)
		waitReady(t, w)
		if on(w) != "c" {
			t.Errorf("placed on %s, want c", on(w))
		}
	})

	t.Run("a Secret re-pointed at another member: the cluster is not Ready (ClusterIdentityChanged), nothing of its Workloads is made in the other, and it serves again once the Secret points back", func(t *testing.T) {
		ctx := context.Background()
		w := workload("repointed", st.Replicas(1), st.Requests("100m", "64Mi"), st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelClusterName, "In", "c"))))
		removeLater(t, w)
		waitReady(t, w)
		sys, err := c.target.Clientset.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The identity c's agent publishes (its kube-system namespace's
		// UID, config/rbac/agent lets it read that one), recorded.
		waitCluster(t, "c", func(kc *v1alpha1.KubernetesCluster) bool {
			return clusterReady(kc) && kc.Status.ClusterID == string(sys.UID)
		})
		secret := &corev1.Secret{}
		if err := env.Client.Get(ctx, keyOf("c"), secret); err != nil {
			t.Fatal(err)
		}
		own := secret.Data["kubeconfig"]
		setKubeconfig := func(kubeconfig []byte) {
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := env.Client.Get(ctx, keyOf("c"), secret); err != nil {
					return err
				}
				secret.Data["kubeconfig"] = kubeconfig
				return env.Client.Update(ctx, secret)
			}); err != nil {
				t.Fatal(err)
			}
		}
		other, err := b.target.KubeconfigFor("placer-manager")
		if err != nil {
			t.Fatal(err)
		}
		setKubeconfig(other)
		t.Cleanup(func() { setKubeconfig(own) })
		kc := waitCluster(t, "c", func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonClusterIdentityChanged
		})
		if msg := kc.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(msg, string(sys.UID)) || kc.Status.ClusterID != string(sys.UID) {
			t.Errorf("Ready message %q, clusterID %q: want c's identity %s named and kept", msg, kc.Status.ClusterID, sys.UID)
		}
		// Its Workload's pass has seen the cluster withheld: Ready
		// Unknown, as for a cluster that does not answer. Before, that
		// pass made w's candidate in b (taken for c, with none of w's
		// chaperons there).
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionUnknown
		})
		if n := len(chaperons(t, b, w)); n != 0 {
			t.Errorf("%d of c's Workload's chaperons made in b, reached through c's Secret", n)
		}
		if n := running(c, w); n != 1 {
			t.Errorf("%d of its pods run in c meanwhile, want 1", n)
		}
		setKubeconfig(own)
		waitCluster(t, "c", func(kc *v1alpha1.KubernetesCluster) bool {
			return clusterReady(kc) && kc.Status.ClusterID == string(sys.UID)
		})
		waitReady(t, w)
		if n := len(chaperons(t, b, w)); n != 0 || on(w) != "c" {
			t.Errorf("placed on %s with %d chaperons in b, want c and none", on(w), n)
		}
	})

	t.Run("a user's NoExecute taint moves a Workload that does not tolerate it at once, and one that tolerates it for N seconds after N seconds", func(t *testing.T) {
		const tolerate = 15
		now := placed(t, "evicted-now", st.Replicas(1))
		later := placed(t, "evicted-later", st.Replicas(1), st.TolerateFor("example.com/evict", tolerate))
		removeLater(t, now, later)
		if on(now) != "a" || on(later) != "a" {
			t.Fatalf("placed on %s and %s, want a", on(now), on(later))
		}
		editCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: "example.com/evict", Effect: v1alpha1.TaintEffectNoExecute})
		})
		defer editCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = slices.DeleteFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Key == "example.com/evict" })
		})
		testenv.WaitFor(t, wc, now, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return on(w) != "" && on(w) != "a" && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		kc := waitCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) bool {
			return slices.ContainsFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Key == "example.com/evict" && t.TimeAdded != nil })
		})
		var added time.Time
		for _, taint := range kc.Spec.Taints {
			if taint.Key == "example.com/evict" {
				added = taint.TimeAdded.Time
			}
		}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(later), later); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, wc, later, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return on(w) != "" && on(w) != "a" })
		// When each left a: its Scheduled condition changed then (the
		// message names the move). Both times are whole seconds, as
		// timeAdded is.
		movedAt := func(w *v1alpha1.Workload) time.Duration {
			return w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime.Sub(added)
		}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(now), now); err != nil {
			t.Fatal(err)
		}
		// Ordered, not timed: the untolerated one left first, without
		// waiting out anything like the toleration.
		if d := movedAt(now); d >= movedAt(later) || d >= (tolerate-1)*time.Second {
			t.Errorf("the Workload without a toleration left a %s after the taint, not at once (the tolerating one: %s)", d, movedAt(later))
		}
		if d := movedAt(later); d < (tolerate-1)*time.Second {
			t.Errorf("the Workload tolerating the taint for %d s left a %s after it was added", tolerate, d)
		}
		waitReady(t, later)
	})

	t.Run("a handshake rejection expires at once when the cluster's capacity grows", func(t *testing.T) {
		// c's free cpu and memory are on different nodes: its summary
		// admits a pod of 2 cpu and 6Gi that no node of c can hold.
		ctx := context.Background()
		if err := c.target.AddNodes(ctx, local.Node{Name: "c-1", CPU: "1", Memory: "8Gi"}); err != nil {
			t.Fatal(err)
		}
		added := []string{"c-1"}
		defer func() {
			for _, n := range added {
				_ = c.target.Clientset.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
			}
		}()
		waitCluster(t, "c", func(kc *v1alpha1.KubernetesCluster) bool { return kc.Status.ReadyNodeCount == 2 })
		w := workload("fragmented", st.Replicas(1), st.Requests("2", "6Gi"), st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelClusterName, "In", "c"))))
		removeLater(t, w)
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			// A rejection backing off for real: c-1's arrival in the
			// summary may have ended an earlier one at once.
			r := w.Rejection(keyOf("c"))
			return r != nil && r.RetryAfter != nil && r.RetryAfter.After(time.Now().Add(15*time.Second)) && strings.Contains(r.Message, "Insufficient")
		})
		retry := w.Rejection(keyOf("c")).RetryAfter.Time
		if err := c.target.AddNodes(ctx, local.Node{Name: "c-2", CPU: "4", Memory: "8Gi"}); err != nil {
			t.Fatal(err)
		}
		added = append(added, "c-2")
		waitReady(t, w)
		// When the scheduler placed it (not when its pods were Ready):
		// before the backoff would have ended.
		if at := w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime.Time; !at.Before(retry) {
			t.Errorf("placed at %s, not before the backoff's retry at %s", at.Format(time.RFC3339), retry.Format(time.RFC3339))
		}
		if on(w) != "c" || w.Rejection(keyOf("c")) != nil {
			t.Errorf("placed on %s with rejections %v, want c and none", on(w), w.Status.RejectedClusters)
		}
	})

	t.Run("a handshake timed out by a member outage does not leave its Workload Unschedulable once the member is back", func(t *testing.T) {
		// c's candidate scheduler stops answering: c is still Ready for a
		// few seconds (its Lease), long enough to be chosen, and its
		// candidate is never scheduled.
		thaw := freeze(t, c, "candidate-scheduler")
		w := workload("outage-timeout", st.Replicas(1), st.Requests("100m", "64Mi"), st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelClusterName, "In", "c"))))
		removeLater(t, w)
		// After the handshake timeout (30 s here) c is rejected and, the
		// only cluster it may go to, the Workload is Unschedulable.
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			r := w.Rejection(keyOf("c"))
			return r != nil && r.Reason == propagator.ReasonHandshakeTimeout && r.RetryAfter != nil &&
				w.Status.GetCondition(v1alpha1.TypeScheduled).Status == corev1.ConditionFalse
		})
		retry := w.Rejection(keyOf("c")).RetryAfter.Time
		thaw()
		waitReady(t, w)
		// Placed again when c came back, not when the rejection's backoff
		// would have ended.
		if at := w.Status.GetCondition(v1alpha1.TypeScheduled).LastTransitionTime.Time; !at.Before(retry) {
			t.Errorf("placed at %s, not before the backoff's retry at %s", at.Format(time.RFC3339), retry.Format(time.RFC3339))
		}
		if on(w) != "c" || w.Rejection(keyOf("c")) != nil {
			t.Errorf("placed on %s with rejections %v, want c and none", on(w), w.Status.RejectedClusters)
		}
	})

	t.Run("a short outage of a member within the toleration leaves its Workload there, Ready Unknown meanwhile, never Unschedulable", func(t *testing.T) {
		w := placed(t, "outage", st.Replicas(1))
		removeLater(t, w)
		if on(w) != "a" {
			t.Fatalf("placed on %s, want a", on(w))
		}
		// Every state the Workload goes through, watched from here on.
		wi, err := wc.Watch(context.Background(), &v1alpha1.WorkloadList{}, client.InNamespace("default"), client.MatchingFields{"metadata.name": w.Name})
		if err != nil {
			t.Fatal(err)
		}
		defer wi.Stop() // stopping twice is safe
		var mu sync.Mutex
		var wrong []string
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			for ev := range wi.ResultChan() {
				w, ok := ev.Object.(*v1alpha1.Workload)
				if !ok {
					continue
				}
				if sc := w.Status.GetCondition(v1alpha1.TypeScheduled); sc.Status != corev1.ConditionTrue || on(w) != "a" || len(w.Status.LeftClusters) != 0 {
					mu.Lock()
					wrong = append(wrong, fmt.Sprintf("on %q, Scheduled %s %s: %s; left %v", on(w), sc.Status, sc.Reason, sc.Message, w.Status.LeftClusters))
					mu.Unlock()
				}
			}
		}()
		restart := stopAPIServer(t, a)
		cut := time.Now()
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			rc := w.Status.GetCondition(xpv2.TypeReady)
			return rc.Status == corev1.ConditionUnknown && strings.Contains(rc.Message, "default/a")
		})
		// A 10 s outage, well within the default toleration (300 s) and
		// the member's node grace (40 s: kwok's node heartbeats stop too).
		time.Sleep(10*time.Second - time.Since(cut))
		restart()
		waitReady(t, w)
		wi.Stop()
		<-watched
		for _, s := range wrong {
			t.Errorf("during the outage: %s; want Scheduled on a, nothing left", s)
		}
	})

	t.Run("deleting a Workload completes at once while an unrelated member never answered", func(t *testing.T) {
		ctx := context.Background()
		// A kubeconfig to a port nothing listens on.
		closed, err := a.target.KubeconfigFor("placer-manager")
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.Load(closed)
		if err != nil {
			t.Fatal(err)
		}
		for _, cl := range cfg.Clusters {
			cl.Server = "https://" + freeAddr(t)
		}
		if closed, err = clientcmd.Write(*cfg); err != nil {
			t.Fatal(err)
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ghost"}, Data: map[string][]byte{"kubeconfig": closed}}
		if err := env.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
		ghost := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ghost"},
			Spec: v1alpha1.KubernetesClusterSpec{ConnectionSecretRef: &v1alpha1.SecretKeySelector{Name: "ghost"}}}
		if err := env.Client.Create(ctx, ghost); err != nil {
			t.Fatal(err)
		}
		// Pass or fail, no Unreachable member is left to the subtests after.
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), ghost)
			_ = env.Client.Delete(context.Background(), secret)
		})
		waitCluster(t, "ghost", func(kc *v1alpha1.KubernetesCluster) bool {
			return kc.Status.GetCondition(xpv2.TypeReady).Reason == v1alpha1.ReasonUnreachable
		})
		w := placed(t, "beside-ghost", st.Replicas(1))
		if err := env.Client.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		el := &corev1.EventList{}
		if err := env.Client.List(ctx, el, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		for _, e := range el.Items {
			if e.InvolvedObject.UID == w.UID && e.Reason == "CleanupPending" && strings.Contains(e.Message, "ghost") {
				t.Errorf("deletion held by the member that never answered: %s", e.Message)
			}
		}
		// A cluster that never answered holds nothing of placer's: its
		// deletion does not wait for it.
		if err := env.Client.Delete(ctx, ghost); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, wc, ghost, &v1alpha1.KubernetesClusterList{}, timeout)
	})

	t.Run("a member that stops answering: its Workloads move after their toleration, and what was left there goes when it answers again", func(t *testing.T) {
		moved := placed(t, "failover", st.TolerateFor(v1alpha1.TaintClusterUnreachable, 3))
		single := placed(t, "singleton", st.Replicas(1), st.TolerateFor(v1alpha1.TaintClusterUnreachable, 3), func(w *v1alpha1.Workload) {
			w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart
		})
		removeLater(t, moved, single)
		if on(moved) != "a" || on(single) != "a" {
			t.Fatalf("placed on %s and %s, want a", on(moved), on(single))
		}
		restart := stopAPIServer(t, a)
		// StartBeforeStop (the default): it runs elsewhere while a is cut off.
		testenv.WaitFor(t, wc, moved, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return on(w) != "" && on(w) != "a" && w.Left(keyOf("a")) != nil && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		lc := moved.Left(keyOf("a"))
		if c := moved.Counted(keyOf("a")); lc.Reason != v1alpha1.ReasonUnreachable || c == nil || c.Replicas != 2 || !moved.LeftBehind(lc) {
			t.Errorf("left a with reason %s, counted there %+v; want Unreachable, and 2 still there", lc.Reason, c)
		}
		// Not before its toleration ended: timeAdded and the time it left
		// are both whole seconds, so the 3 s are whole too.
		kc := &v1alpha1.KubernetesCluster{}
		if err := env.Client.Get(context.Background(), keyOf("a"), kc); err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Key == v1alpha1.TaintClusterUnreachable }); i < 0 || kc.Spec.Taints[i].TimeAdded == nil {
			t.Errorf("a, cut off, has no %s taint with a timeAdded: %v", v1alpha1.TaintClusterUnreachable, kc.Spec.Taints)
		} else if added := kc.Spec.Taints[i].TimeAdded.Time; lc.Time == nil || lc.Time.Time.Before(added.Add(3*time.Second)) {
			t.Errorf("left a at %v, before the 3 s toleration of the taint added at %s ended", lc.Time, added.Format(time.RFC3339))
		}
		now := memberNamed(members, on(moved))
		if n := running(now, moved); n != 2 {
			t.Errorf("%d pods run in %s, want 2", n, now.name)
		}
		// StopBeforeStart: moved by the scheduler at the same time, and
		// held by the propagator: nothing of it anywhere while a has not
		// confirmed.
		testenv.WaitFor(t, wc, single, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			rc := w.Status.GetCondition(xpv2.TypeReady)
			return on(w) != "" && on(w) != "a" && w.Left(keyOf("a")) != nil && rc.Reason == v1alpha1.ReasonPending && strings.Contains(rc.Message, "StopBeforeStart")
		})
		for _, m := range []*member{b, c} {
			if n := len(chaperons(t, m, single)); n != 0 {
				t.Errorf("%d chaperons of the StopBeforeStart Workload in %s while a does not answer", n, m.name)
			}
		}
		for _, m := range []*member{b, c} {
			if n := len(pods(t, m, single)); n != 0 {
				t.Errorf("%d pods of the StopBeforeStart Workload in %s while a does not answer", n, m.name)
			}
		}
		if cond := single.Status.GetCondition(xpv2.TypeReady); cond.Status == corev1.ConditionTrue {
			t.Errorf("the StopBeforeStart Workload is Ready while a does not answer: %s", cond.Message)
		}

		restart()
		testenv.WaitFor(t, wc, moved, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return len(w.Status.LeftClusters) == 0 })
		testenv.WaitFor(t, wc, single, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			if lc := w.Left(keyOf("a")); lc != nil && w.LeftBehind(lc) {
				// Until a confirms (its count of 0 answers the move), its
				// new cluster holds nothing of it. The chaperons are read
				// first, then the Workload as it is now: a confirmation
				// is never taken back, so chaperons seen while the newer
				// copy still waits for a were there before a confirmed.
				dest := memberNamed(members, on(w))
				if n := len(chaperons(t, dest, w)); n != 0 {
					now := &v1alpha1.Workload{}
					if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), now); err != nil {
						t.Fatal(err)
					}
					if lc := now.Left(keyOf("a")); lc != nil && now.LeftBehind(lc) {
						t.Errorf("%d chaperons in %s before a confirmed that the old pod is gone", n, dest.name)
					}
				}
			}
			return len(w.Status.LeftClusters) == 0 && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		for _, w := range []*v1alpha1.Workload{moved, single} {
			waitNoChaperons(t, a, w)
			waitNoPods(t, a, w)
		}
		checkOneBoundPerReplica(t, members...)
		// What follows places on a: it is Ready again. What was left
		// there goes as soon as it answers, Ready or not, and its
		// candidate scheduler, which lost its Lease in the outage, may
		// run again only later (runs placed the next subtest's Workloads
		// elsewhere, a CandidateSchedulerNotRunning).
		testenv.WaitFor(t, wc, &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}, &v1alpha1.KubernetesClusterList{}, 2*timeout,
			func(kc *v1alpha1.KubernetesCluster) bool {
				return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && len(kc.Spec.Taints) == 0
			})
	})

	t.Run("a NoExecute taint on a member that answers drains it without downtime", func(t *testing.T) {
		ws := []*v1alpha1.Workload{placed(t, "drain-two", st.Replicas(2)), placed(t, "drain-three", st.Replicas(3))}
		removeLater(t, ws...)
		for _, w := range ws {
			if on(w) != "a" {
				t.Fatalf("%s placed on %s, want a", w.Name, on(w))
			}
		}
		// Ready pods across the fleet, sampled until the drain ends.
		sampler := sampleReady(members, ws...)
		t.Cleanup(sampler.stop)
		editCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: "example.com/maintenance", Effect: v1alpha1.TaintEffectNoExecute})
		})
		defer editCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = slices.DeleteFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Key == "example.com/maintenance" })
		})
		for _, w := range ws {
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
				return on(w) != "" && on(w) != "a" && len(w.Status.LeftClusters) == 0 && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
			})
			waitNoChaperons(t, a, w)
		}
		lowest := sampler.lowestOf()
		for _, w := range ws {
			if lowest[w.UID] < w.ReplicaCount() {
				t.Errorf("%s: %d Ready pods at the lowest during the drain, want at least %d", w.Name, lowest[w.UID], w.ReplicaCount())
			}
		}
		kc := &v1alpha1.KubernetesCluster{}
		if err := env.Client.Get(context.Background(), keyOf("a"), kc); err != nil {
			t.Fatal(err)
		}
		var timeAdded *metav1.Time
		for _, taint := range kc.Spec.Taints {
			if taint.Key == "example.com/maintenance" {
				timeAdded = taint.TimeAdded
			}
		}
		if timeAdded == nil {
			t.Error("the cluster controller set no timeAdded on the NoExecute taint")
		}
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("rebalance WhenPreferred: drained away from its preferred member, a Workload moves back once the drain ends, without downtime; one that never rebalances stays", func(t *testing.T) {
		back := placed(t, "comes-back", st.Replicas(2), func(w *v1alpha1.Workload) { w.Spec.Placement.Rebalance = v1alpha1.RebalanceWhenPreferred })
		away := placed(t, "stays-away", st.Replicas(2))
		removeLater(t, back, away)
		for _, w := range []*v1alpha1.Workload{back, away} {
			if on(w) != "a" {
				t.Fatalf("%s placed on %s, want a (tier gold, preferred)", w.Name, on(w))
			}
		}
		sampler := sampleReady(members, back, away)
		t.Cleanup(sampler.stop)
		editCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: "example.com/maintenance", Effect: v1alpha1.TaintEffectNoExecute})
		})
		for _, w := range []*v1alpha1.Workload{back, away} {
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
				return on(w) != "" && on(w) != "a" && len(w.Status.LeftClusters) == 0 && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
			})
		}
		movedTo := on(away)
		editCluster(t, "a", func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = slices.DeleteFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Key == "example.com/maintenance" })
		})
		// Back in a, proven there and the other member left, every
		// replica Ready throughout.
		testenv.WaitFor(t, wc, back, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return on(w) == "a" && len(w.Status.LeftClusters) == 0 && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		if running(a, back) != 2 {
			t.Errorf("comes-back runs %d pods in a, want 2", running(a, back))
		}
		for _, m := range members {
			if m != a && running(m, back) != 0 {
				t.Errorf("comes-back still runs %d pods in %s", running(m, back), m.name)
			}
		}
		lowest := sampler.lowestOf()
		if lowest[back.UID] < 2 || lowest[away.UID] < 2 {
			t.Errorf("Ready pods at the lowest: comes-back %d, stays-away %d; want 2 each (make-before-break, both ways)", lowest[back.UID], lowest[away.UID])
		}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(away), away); err != nil {
			t.Fatal(err)
		}
		if on(away) != movedTo {
			t.Errorf("stays-away (rebalance Never) moved from %s to %s", movedTo, on(away))
		}
		// Until an operator asks, once: placer rebalance, as a user runs it.
		out, err := placerCommand(kubeconfigFile(t, map[string]*rest.Config{"management": env.Config}), "rebalance", "default/stays-away", "--context=management", "--wait=90s")
		if err != nil || !strings.Contains(out, "Workload default/stays-away moved from default/"+movedTo+" to default/a") {
			t.Errorf("placer rebalance default/stays-away: %v\n%s", err, out)
		}
		testenv.WaitFor(t, wc, away, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return on(w) == "a" && len(w.Status.LeftClusters) == 0 && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		if lowest := sampler.lowestOf(); lowest[away.UID] < 2 {
			t.Errorf("stays-away had %d Ready pods at the lowest when it moved back, want 2", lowest[away.UID])
		}
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("Divided: 12 replicas over two tiers at least, each share proven in its member; a drained member's share moves without downtime; Duplicated runs in every selected member", func(t *testing.T) {
		// The shares are the manager's: made with the propagator's
		// finalizer, they call no webhook (nor do the spreading Workloads).
		cs := kubernetes.NewForConfigOrDie(env.Config)
		calls, skipped := webhookCounts(t, cs, "workloads.placer.dev")
		spread := placedSpread(t, env.Client, wc, "spread", 12, &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided,
			SpreadConstraints: []v1alpha1.SpreadConstraint{{TopologyKey: "tier", MinGroups: 2}}})
		dup := placedSpread(t, env.Client, wc, "dup", 1, &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDuplicated},
			st.RequiredClusterAffinity(st.Term(st.Expr("tier", "In", "gold", "silver"))))
		made := append(sharesOf(t, env.Client, spread), sharesOf(t, env.Client, dup)...)
		callsAfter, skippedAfter := webhookCounts(t, cs, "workloads.placer.dev")
		if callsAfter != calls || skippedAfter-skipped < float64(len(made)+2) {
			t.Errorf("the Workload webhook: %v calls and %v skipped by its matchConditions while two spreading Workloads and their %d shares were made; want no call, and each of them skipped",
				callsAfter-calls, skippedAfter-skipped, len(made))
		}
		for _, sh := range made {
			if !slices.Contains(sh.Finalizers, v1alpha1.FinalizerPropagator) {
				t.Errorf("share %s has finalizers %v, want %s", sh.Name, sh.Finalizers, v1alpha1.FinalizerPropagator)
			}
		}
		// envtest runs no garbage collector: the shares go by hand, first.
		t.Cleanup(func() { remove(t, append(sharesOf(t, env.Client, spread), sharesOf(t, env.Client, dup)...)...) })
		removeLater(t, spread, dup)
		if got := sharesByCluster(t, env.Client, dup); len(got) != 2 || got["a"] != 1 || got["b"] != 1 {
			t.Errorf("Duplicated shares %v, want one replica in a and one in b", got)
		}
		shares := sharesByCluster(t, env.Client, spread)
		if len(shares) < 2 {
			t.Fatalf("shares %v: minGroups 2 by tier wants two members at least", shares)
		}
		for _, sh := range sharesOf(t, env.Client, spread) {
			if n := running(memberNamed(members, sh.Spec.TargetCluster.Name), sh); n != sh.ReplicaCount() {
				t.Errorf("share %s: %d pods run in %s, want %d", sh.Name, n, sh.Spec.TargetCluster.Name, sh.ReplicaCount())
			}
		}
		checkOneBoundPerReplica(t, members...)

		// Drain the member with the largest share: only its share moves,
		// and 12 pods are Ready throughout.
		drained := ""
		for name, n := range shares {
			if drained == "" || n > shares[drained] {
				drained = name
			}
		}
		t.Logf("shares %v; draining %s", shares, drained)
		low := sampleSelected(members, "app=spread")
		t.Cleanup(low.stop)
		editCluster(t, drained, func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = append(kc.Spec.Taints, v1alpha1.ClusterTaint{Key: "example.com/maintenance", Effect: v1alpha1.TaintEffectNoExecute})
		})
		defer editCluster(t, drained, func(kc *v1alpha1.KubernetesCluster) {
			kc.Spec.Taints = slices.DeleteFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Key == "example.com/maintenance" })
		})
		testenv.WaitFor(t, wc, spread, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			for _, p := range w.Status.Placements {
				if p.Cluster.Name == drained {
					return false
				}
			}
			return w.Status.ReadyOfDesired == "12/12"
		})
		after := sharesByCluster(t, env.Client, spread)
		t.Logf("shares after the drain %v", after)
		if total := after["a"] + after["b"] + after["c"]; after[drained] != 0 || total != 12 {
			t.Errorf("shares after the drain of %s: %v, want 12 replicas, none in %s", drained, after, drained)
		}
		for name, n := range shares {
			if name != drained && after[name] < n {
				t.Errorf("%s's share went from %d to %d: only the drained member's share moves", name, n, after[name])
			}
		}
		if lowest := low.lowest()["app=spread"]; lowest < 12 {
			t.Errorf("%d Ready pods at the lowest during the drain of %s, want 12", lowest, drained)
		}
		waitUntil(t, timeout, func() (bool, string) {
			n := len(labelledPods(t, memberNamed(members, drained), "app", "spread"))
			return n == 0, fmt.Sprintf("%d pods of the Divided Workload left in %s", n, drained)
		})
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("Divided: a member lost past its toleration: only its share moves, 12 replicas Ready again elsewhere, and its pods there go when it answers again; WhenPreferred moves back once it is stable, not while it flaps; Never stays", func(t *testing.T) {
		lostSpread := func(name string, replicas int32, rebalance v1alpha1.RebalancePolicy) *v1alpha1.Workload {
			return placedSpread(t, env.Client, wc, name, replicas, &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided,
				SpreadConstraints: []v1alpha1.SpreadConstraint{{TopologyKey: "tier", MinGroups: 2}}}, st.TolerateFor(v1alpha1.TaintClusterUnreachable, 3),
				func(w *v1alpha1.Workload) { w.Spec.Placement.Rebalance = rebalance })
		}
		spread := lostSpread("lost-spread", 12, v1alpha1.RebalanceWhenPreferred)
		stays := lostSpread("lost-stays", 6, v1alpha1.RebalanceNever)
		t.Cleanup(func() { remove(t, append(sharesOf(t, env.Client, spread), sharesOf(t, env.Client, stays)...)...) })
		removeLater(t, spread, stays)
		shares := sharesByCluster(t, env.Client, spread)
		if len(shares) < 2 {
			t.Fatalf("shares %v: minGroups 2 by tier wants two members at least", shares)
		}
		lost := ""
		for name, n := range shares {
			if lost == "" || n > shares[lost] {
				lost = name
			}
		}
		if sharesByCluster(t, env.Client, stays)[lost] == 0 {
			t.Fatalf("lost-stays has no share in %s (%v): the case would prove nothing of it", lost, sharesByCluster(t, env.Client, stays))
		}
		t.Logf("shares %v; cutting %s off", shares, lost)
		restart := stopAPIServer(t, memberNamed(members, lost))
		defer restart()
		testenv.WaitFor(t, wc, spread, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			for _, p := range w.Status.Placements {
				if p.Cluster.Name == lost && p.Replicas > 0 {
					return false
				}
			}
			return w.Status.ReadyReplicas >= 12
		})
		after := map[string]int32{}
		for _, p := range spread.Status.Placements {
			after[p.Cluster.Name] += p.Replicas
		}
		t.Logf("placements after %s was lost: %v", lost, after)
		for name, n := range shares {
			if name != lost && int(after[name]) < n {
				t.Errorf("%s's share went from %d to %d: only the lost member's share moves", name, n, after[name])
			}
		}
		tiers := 0
		for _, name := range []string{"a", "b", "c"} {
			if name != lost && after[name] > 0 {
				tiers++
			}
		}
		if tiers < 2 {
			t.Errorf("placements %v: minGroups 2 by tier kept with two of the members that answer", after)
		}
		testenv.WaitFor(t, wc, stays, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return !strings.Contains(w.Status.Shares, lost+"=") && w.Status.ReadyOfDesired == "6/6"
		})
		// It flaps first: it answers, turns Ready, and is cut off again
		// at once, twice, each time Ready for less than the manager's
		// --rebalance-after (5 s; it turns not Ready within a probe, 2 s,
		// and its timeout, 1 s): nothing may begin to move back.
		lm := memberNamed(members, lost)
		for range 2 {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			err := lm.target.StartAPIServer(ctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			waitCluster(t, lost, clusterReady)
			lm.target.StopAPIServer()
			waitCluster(t, lost, func(kc *v1alpha1.KubernetesCluster) bool { return !clusterReady(kc) })
		}
		stable := time.Now()
		restart()
		// Back, and answering: its pods of before go; then, once it has
		// been Ready for the manager's --rebalance-after, lost-spread moves
		// back to the division it would be given afresh, its share in the
		// member made and Ready before the others shrink.
		low := sampleSelected(members, "app=lost-spread")
		t.Cleanup(low.stop)
		waitUntil(t, timeout, func() (bool, string) {
			n := len(labelledPods(t, memberNamed(members, lost), "app", "lost-stays"))
			return n == 0, fmt.Sprintf("%d pods of lost-stays left in %s once it answers", n, lost)
		})
		testenv.WaitFor(t, wc, spread, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return strings.Contains(w.Status.Shares, lost+"=") && w.Status.Rebalancing == nil && w.Status.ReadyOfDesired == "12/12" &&
				strings.Contains(w.Status.GetCondition(v1alpha1.TypeScheduled).Message, "divided 12 replicas")
		})
		back := sharesByCluster(t, env.Client, spread)
		t.Logf("shares after the move back: %v (before the loss %v)", back, shares)
		if n := boundPods(t, memberNamed(members, lost), "lost-spread"); n != back[lost] {
			t.Errorf("%d pods of lost-spread bound in %s, want its share of %d", n, lost, back[lost])
		}
		if lowest := low.lowest()["app=lost-spread"]; lowest < 12 {
			t.Errorf("%d Ready pods of lost-spread at the lowest while it moved back, want 12 (make-before-break)", lowest)
		}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(stays), stays); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stays.Status.Shares, lost+"=") {
			t.Errorf("lost-stays (rebalance Never) moved back to %s: %s", lost, stays.Status.Shares)
		}
		began := eventtest.Listed(t, env.Client, "default", func(ev *corev1.Event) bool {
			return ev.InvolvedObject.UID == spread.UID && ev.Reason == "MovingBack"
		})
		for _, ev := range began {
			if ev.FirstTimestamp.Time.Before(stable.Truncate(time.Second)) {
				t.Errorf("lost-spread began to move back while %s flapped: %s at %s, stable from %s", lost, ev.Message, ev.FirstTimestamp, stable)
			}
		}
		if len(began) == 0 {
			t.Error("no MovingBack Event of lost-spread")
		}
		checkOneBoundPerReplica(t, members...)
	})

	// addPoolNodes adds nodes to a member for a subtest, and waits until
	// its KubernetesCluster counts them. When the subtest ends (after its
	// Workloads are removed, cleanups running last registered first), the
	// nodes go once no pod is bound to them: a pod left on a node deleted
	// under it would never finish terminating.
	addPoolNodes := func(t *testing.T, m *member, nodes ...local.Node) {
		t.Helper()
		ctx := context.Background()
		have, err := m.target.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.target.AddNodes(ctx, nodes...); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			for _, n := range nodes {
				waitUntil(t, timeout, func() (bool, string) {
					l, err := m.target.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name})
					if err != nil {
						return false, err.Error()
					}
					return len(l.Items) == 0, fmt.Sprintf("%d pods still on %s/%s", len(l.Items), m.name, n.Name)
				})
				_ = m.target.Clientset.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		})
		want := int32(len(have.Items) + len(nodes))
		waitCluster(t, m.name, func(kc *v1alpha1.KubernetesCluster) bool { return kc.Status.ReadyNodeCount == want })
		// Ready is not enough: the node lifecycle controller takes the
		// not-ready taint away a moment later, and a candidate judged
		// meanwhile does not fit there.
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := local.WaitForNodesReady(wctx, m.target.Clientset, len(have.Items)+len(nodes)); err != nil {
			t.Fatalf("%s's nodes not Ready and untainted: %v", m.name, err)
		}
	}

	t.Run("Divided: a member whose nodes hold only 2 of its share of 4 reserves 2 and keeps them; the other 2 go to another member; every replica bound once", func(t *testing.T) {
		// Only nodes labelled pool=partial take the pods: b's holds 8, c's
		// 2. c's summary counts a node of 8 cpu the pods cannot use, so the
		// division gives c a share of 4, which only c's scheduler finds
		// too large.
		addPoolNodes(t, b, local.Node{Name: "b-partial", CPU: "8", Memory: "16Gi", Labels: map[string]string{"pool": "partial"}})
		addPoolNodes(t, c, local.Node{Name: "c-partial", CPU: "2", Memory: "4Gi", Labels: map[string]string{"pool": "partial"}}, local.Node{Name: "c-other", CPU: "8", Memory: "16Gi"})
		spread := placedSpread(t, env.Client, wc, "partial", 6, &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided,
			StaticWeights: []v1alpha1.StaticClusterWeight{{ClusterSelector: map[string]v1alpha1.LabelValue{"tier": "bronze"}, Weight: 2}, {ClusterSelector: map[string]v1alpha1.LabelValue{"tier": "silver"}, Weight: 1}}},
			st.Requests("1", "1Gi"), st.RequiredClusterAffinity(st.Term(st.Expr("tier", "In", "silver", "bronze"))),
			func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"pool": "partial"}
			})
		t.Cleanup(func() { remove(t, sharesOf(t, env.Client, spread)...) })
		removeLater(t, spread)
		testenv.WaitFor(t, wc, spread, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return w.Status.ReadyOfDesired == "6/6" })
		shares := sharesByCluster(t, env.Client, spread)
		if shares["b"] != 4 || shares["c"] != 2 {
			t.Errorf("shares %v: want c's 2 (all its pool holds) and b the other 4", shares)
		}
		for _, pl := range spread.Status.Placements {
			if pl.Cluster.Name == "c" && !strings.Contains(pl.Reason, "c reserved 2 of the") {
				t.Errorf("c's placement says %q: want why it keeps 2", pl.Reason)
			}
		}
		for _, sh := range sharesOf(t, env.Client, spread) {
			m := memberNamed(members, sh.Spec.TargetCluster.Name)
			if n := running(m, sh); n != sh.ReplicaCount() {
				t.Errorf("share %s: %d pods run in %s, want %d", sh.Name, n, m.name, sh.ReplicaCount())
			}
			for _, p := range labelledPods(t, m, "app", "partial") {
				if p.Spec.NodeName != "" && p.Spec.NodeName != m.name+"-partial" {
					t.Errorf("pod %s/%s bound to %s, outside the pool", m.name, p.Name, p.Spec.NodeName)
				}
			}
		}
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("Divided, commit Together: no share binds until every share is proven, across members; ShareByShare binds each share once it is", func(t *testing.T) {
		// Only nodes labelled pool=gang take the pods: b has one, c none
		// until later, though its summary has room.
		ctx := context.Background()
		addPoolNodes(t, b, local.Node{Name: "b-gang", CPU: "8", Memory: "16Gi", Labels: map[string]string{"pool": "gang"}})
		addPoolNodes(t, c, local.Node{Name: "c-nogang", CPU: "8", Memory: "16Gi"}, local.Node{Name: "c-gang", CPU: "4", Memory: "8Gi", Labels: map[string]string{"pool": "gang"}})
		// c's node of the pool is cordoned until later (added now, so that
		// it goes after the Workloads: cleanups run last registered first).
		cordonNode := func(unschedulable bool) {
			t.Helper()
			patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)
			if _, err := c.target.Clientset.CoreV1().Nodes().Patch(ctx, "c-gang", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cordonNode(true)
		rs := func(commit v1alpha1.CommitPolicy) *v1alpha1.ReplicaScheduling {
			return &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided, Commit: commit,
				SpreadConstraints: []v1alpha1.SpreadConstraint{{TopologyKey: "tier", MinGroups: 2}}}
		}
		opts := []st.WorkloadOption{st.Requests("1", "1Gi"), st.RequiredClusterAffinity(st.Term(st.Expr("tier", "In", "silver", "bronze"))),
			func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"pool": "gang"}
			}}
		gang := newSpread(t, env.Client, "gang", 4, rs(""), opts...)
		each := newSpread(t, env.Client, "each", 4, rs(v1alpha1.CommitShareByShare), opts...)
		t.Cleanup(func() { remove(t, append(sharesOf(t, env.Client, gang), sharesOf(t, env.Client, each)...)...) })
		removeLater(t, gang, each)

		// each's share in b binds; gang's is proven there, and held.
		waitUntil(t, timeout, func() (bool, string) {
			n := boundPods(t, b, "each")
			return n == 2, fmt.Sprintf("%d pods of each bound in b, want its share of 2", n)
		})
		waitUntil(t, timeout, func() (bool, string) {
			for _, sh := range sharesOf(t, env.Client, gang) {
				if r := sh.Status.GetCondition(xpv2.TypeReady); sh.Spec.TargetCluster.Name == "b" && r.Reason == v1alpha1.ReasonProven {
					return true, ""
				}
			}
			return false, "gang's share in b is not proven yet"
		})
		if n := boundPods(t, b, "gang") + boundPods(t, c, "gang"); n != 0 {
			t.Errorf("%d pods of gang bound while its share in c is not proven: want none before every share is", n)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gang), gang); err != nil {
			t.Fatal(err)
		}
		if got := gang.Status.GetCondition(xpv2.TypeReady).Message; !strings.Contains(got, "share(s) proven; the shares bind together") {
			t.Errorf("gang's Ready says %q: want how many shares are proven", got)
		}

		// Room in c: its shares are proven there, and gang's bind together.
		cordonNode(false)
		for _, w := range []*v1alpha1.Workload{gang, each} {
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return w.Status.ReadyOfDesired == "4/4" })
		}
		for _, name := range []string{"gang", "each"} {
			if nb, nc := boundPods(t, b, name), boundPods(t, c, name); nb != 2 || nc != 2 {
				t.Errorf("%s: %d pods bound in b and %d in c, want 2 and 2", name, nb, nc)
			}
		}
		checkOneBoundPerReplica(t, members...)
	})

	t.Run("a fresh member joined as the README says runs a Workload; unjoin drains it and leaves nothing of placer in the member", func(t *testing.T) {
		testJoin(t, env, wc, b, running)
	})

	t.Run("a member of an unsupported version is refused by placer join and by the manager, naming both versions", func(t *testing.T) {
		testUnsupported(t, env, wc)
	})

	t.Run("a member of the standard inventory: its ClusterProfile becomes a KubernetesCluster, placed on, each placement published as a PlacementDecision", func(t *testing.T) {
		testInventory(t, env, wc, inv, c, func(t *testing.T, name, namespace string) *v1alpha1.Workload {
			w := st.Workload(name, st.Replicas(1), st.Requests("100m", "64Mi"), st.Selector(inventory.LabelPropertyPrefix+"cpu-class", "small"))
			w.Namespace, w.UID, w.Generation = namespace, "", 0
			if err := env.Client.Create(context.Background(), w); err != nil {
				t.Fatal(err)
			}
			waitReady(t, w)
			return w
		})
	})

	t.Run("a deleted KubernetesCluster is drained before it goes", func(t *testing.T) {
		w := placed(t, "on-deleted", st.Replicas(2), st.RequiredClusterAffinity(st.Term(st.Expr(v1alpha1.LabelClusterName, "In", "b", "c"))))
		removeLater(t, w)
		from := on(w)
		kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: from}}
		if err := env.Client.Delete(context.Background(), kc); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return on(w) != "" && on(w) != from && len(w.Status.LeftClusters) == 0 && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
		})
		testenv.WaitForDeletion(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout)
		// Nothing of it is left there: no chaperon, no pod.
		old := memberNamed(members, from)
		waitNoChaperons(t, old, w)
		waitNoPods(t, old, w)
		if n := len(pods(t, old, w)); n != 0 {
			t.Errorf("%d pods of it left in %s", n, from)
		}
		if n := running(memberNamed(members, on(w)), w); n != 2 {
			t.Errorf("%d pods run in %s, want 2", n, on(w))
		}
		// Nothing points at the missing cluster, so nothing spins: over
		// 10 s, the scheduler and the propagator reconcile a handful of
		// times at most (a requeue every 500 ms would be 20).
		token := scraperToken(t, env, true)
		before := reconciles(t, ports.metrics, token)
		time.Sleep(10 * time.Second)
		after := reconciles(t, ports.metrics, token)
		for _, c := range []string{"scheduler", "propagator"} {
			if n := after[c] - before[c]; n > 12 {
				t.Errorf("the %s controller reconciled %g times in 10 s after the cluster went", c, n)
			}
		}
	})

	// Last: it ends the fleet.
	t.Run("uninstalling as docs/operations.md says leaves nothing of placer in any member", func(t *testing.T) {
		ctx := context.Background()
		// The fleet holds Workloads, one of them with a copied dependency.
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "uninstall-settings"}, Data: map[string]string{"k": "v"}}
		if err := env.Client.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		placed(t, "held-1", st.Replicas(2))
		placed(t, "held-2", st.Replicas(1), func(w *v1alpha1.Workload) {
			w.Spec.Resources = append(w.Spec.Resources, v1alpha1.ResourceReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name})
		})

		// What the check below looks for is there before: pods, Services
		// and the copied ConfigMap.
		held := map[string]int{}
		for _, m := range members {
			for what, l := range map[string]string{"pods": mcv1alpha1.LabelWorkloadUID, "copies": propagator.LabelDependency} {
				var n int
				if what == "pods" {
					ps, err := m.target.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: l})
					if err != nil {
						t.Fatal(err)
					}
					n = len(ps.Items)
				} else {
					cms, err := m.target.Clientset.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: l})
					if err != nil {
						t.Fatal(err)
					}
					n = len(cms.Items)
				}
				held[what] += n
			}
		}
		if held["pods"] < 3 || held["copies"] < 1 {
			t.Fatalf("before the uninstall the members hold %d pods and %d copies of placer's, want at least 3 and 1", held["pods"], held["copies"])
		}

		// 1. kubectl delete workloads.compute.placer.dev --all --all-namespaces --wait
		ws := &v1alpha1.WorkloadList{}
		if err := env.Client.List(ctx, ws); err != nil {
			t.Fatal(err)
		}
		if len(ws.Items) < 2 {
			t.Fatalf("%d Workloads before the uninstall, want the fleet to hold some", len(ws.Items))
		}
		for i := range ws.Items {
			if err := env.Client.Delete(ctx, &ws.Items[i]); err != nil && !kerrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		for i := range ws.Items {
			testenv.WaitForDeletion(t, wc, &ws.Items[i], &v1alpha1.WorkloadList{}, timeout)
		}
		// 2. kubectl delete kubernetesclusters.compute.placer.dev --all --all-namespaces --wait
		kcs := &v1alpha1.KubernetesClusterList{}
		if err := env.Client.List(ctx, kcs); err != nil {
			t.Fatal(err)
		}
		for i := range kcs.Items {
			if err := env.Client.Delete(ctx, &kcs.Items[i]); err != nil && !kerrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		for i := range kcs.Items {
			testenv.WaitForDeletion(t, wc, &kcs.Items[i], &v1alpha1.KubernetesClusterList{}, timeout)
		}
		// Nothing placer made is left in any member: no chaperon, pod or
		// Service of a Workload, no copied dependency.
		for _, m := range members {
			chaps := &mcv1alpha1.PodChaperonList{}
			if err := m.client.List(ctx, chaps); err != nil {
				t.Fatal(err)
			}
			placerPods, err := m.target.Clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: mcv1alpha1.LabelWorkloadUID})
			if err != nil {
				t.Fatal(err)
			}
			svcs, err := m.target.Clientset.CoreV1().Services("").List(ctx, metav1.ListOptions{LabelSelector: mcv1alpha1.LabelWorkloadUID})
			if err != nil {
				t.Fatal(err)
			}
			copies, err := m.target.Clientset.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: propagator.LabelDependency})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(chaps.Items) + len(placerPods.Items) + len(svcs.Items) + len(copies.Items); n != 0 {
				t.Errorf("%s holds %d chaperons, %d pods, %d Services and %d copied ConfigMaps of placer after its clusters were deleted",
					m.name, len(chaps.Items), len(placerPods.Items), len(svcs.Items), len(copies.Items))
			}
		}
		// 3. kubectl delete -k config/management (the manager goes with
		// its Deployment; here, its process), then in each member
		// kubectl delete -k config/member: every CRD goes, as nothing of
		// placer holds a finalizer any more.
		stopManager()
		uninstall := func(cfg *rest.Config, dir string) {
			t.Helper()
			objs, err := deploy.Render(dir)
			if err != nil {
				t.Fatal(err)
			}
			cl, err := client.NewWithWatch(cfg, client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if err := cl.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !kerrors.IsNotFound(err) {
					t.Errorf("kubectl delete -k config/%s: %s %s: %v", dir, o.GetKind(), o.GetName(), err)
				}
			}
			waitCRDsGone(t, cl, objs)
		}
		uninstall(env.Config, "management")
		for _, m := range members {
			uninstall(m.target.RESTConfig(), "member")
		}
	})
}

// stopAPIServer stops a member's API server; restart starts it again, and
// the test's cleanup does if the test did not.
func stopAPIServer(t *testing.T, m *member) (restart func()) {
	t.Helper()
	m.target.StopAPIServer()
	var once sync.Once
	restart = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			started := time.Now()
			if err := m.target.StartAPIServer(ctx); err != nil {
				t.Error(err)
				return
			}
			// Its nodes heartbeat again and lose the taints the node
			// lifecycle controller gave them meanwhile, so that what
			// follows places there as before the outage.
			nodes, err := m.target.Clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			for i := range nodes.Items {
				testenv.WaitFor(t, m.client, &nodes.Items[i], &corev1.NodeList{}, timeout, func(n *corev1.Node) bool {
					for _, c := range n.Status.Conditions {
						if c.Type == corev1.NodeReady && (c.Status != corev1.ConditionTrue || c.LastHeartbeatTime.Time.Before(started.Truncate(time.Second))) {
							return false
						}
					}
					for _, taint := range n.Spec.Taints {
						if strings.HasPrefix(taint.Key, "node.kubernetes.io/") {
							return false
						}
					}
					return true
				})
			}
		})
	}
	t.Cleanup(restart)
	return restart
}

// reconciles reads the manager's controller_runtime_reconcile_total, by
// controller.
func reconciles(t *testing.T, addr, token string) map[string]float64 {
	t.Helper()
	code, body := httpsGet(t, "https://"+addr+"/metrics", token)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	out := map[string]float64{}
	err := promtext.Each([]byte(body), func(_ string, l map[string]string, m *dto.Metric) {
		out[l["controller"]] += m.GetCounter().GetValue()
	}, "controller_runtime_reconcile_total")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("/metrics has no controller_runtime_reconcile_total")
	}
	return out
}

// podReady reports whether a pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
