package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"go.etcd.io/etcd/pkg/v3/proxy"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/testenv"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// link is the manager's way to a member, through a TCP proxy the test
// controls (etcd's robustness proxy): it can be cut so that nothing
// crosses it while the member runs on (a blackhole: connections are
// accepted, and nothing is answered), and healed.
type link struct {
	proxy.Server
	// Addr is the proxy's https address, for the member's kubeconfig.
	Addr string
}

// newLink starts a proxy to the member's API server; the test's cleanup
// closes it.
func newLink(t *testing.T, m *member) *link {
	t.Helper()
	to, err := url.Parse(m.target.Server())
	if err != nil {
		t.Fatal(err)
	}
	from := url.URL{Scheme: "tcp", Host: freeAddr(t)}
	p := proxy.NewServer(proxy.ServerConfig{Logger: zap.NewNop(), From: from, To: url.URL{Scheme: "tcp", Host: to.Host}})
	select {
	case <-p.Ready():
	case err := <-p.Error():
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &link{Server: p, Addr: "https://" + from.Host}
}

// cut stops everything crossing the link, both ways, on connections open
// and new.
func (l *link) cut() { l.BlackholeTx(); l.BlackholeRx() }

// heal lets traffic cross again.
func (l *link) heal() { l.UnblackholeTx(); l.UnblackholeRx() }

// withServer points a kubeconfig's clusters at server.
func withServer(t *testing.T, kubeconfig []byte, server string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// boundSampler checks the fleet invariant (boundTwice) every 200 ms until
// stopped, and keeps every sample that broke it, with its time.
type boundSampler struct {
	t     *testing.T
	stopc chan struct{}
	done  chan []string
	// samples counts the samples taken, failed those a member did not
	// answer.
	samples, failed int
}

func sampleBound(t *testing.T, members ...*member) *boundSampler {
	s := &boundSampler{t: t, stopc: make(chan struct{}), done: make(chan []string, 1)}
	start := time.Now()
	go func() {
		var broken []string
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			out, err := listBoundTwice(members...)
			s.samples++
			if err != nil {
				s.failed++
			}
			for _, v := range out {
				broken = append(broken, time.Since(start).Round(100*time.Millisecond).String()+": "+v)
			}
			select {
			case <-s.stopc:
				s.done <- broken
				return
			case <-tick.C:
			}
		}
	}()
	// A test that ends early still stops it.
	t.Cleanup(func() {
		select {
		case <-s.stopc:
		default:
			s.stop()
		}
	})
	return s
}

// check ends the sampling and fails the test with every sample that
// broke the invariant.
func (s *boundSampler) check(t *testing.T) {
	t.Helper()
	if broken := s.stop(); len(broken) > 0 {
		t.Errorf("the fleet ran a replica twice (%d samples):\n%s", len(broken), strings.Join(broken, "\n"))
	}
}

// stop ends the sampling and returns what broke the invariant.
func (s *boundSampler) stop() []string {
	close(s.stopc)
	broken := <-s.done
	switch {
	case s.failed > s.samples/2:
		s.t.Errorf("%d of %d samples of the fleet failed (a member did not answer): the invariant was not watched", s.failed, s.samples)
	case s.failed > 0:
		s.t.Logf("%d of %d samples of the fleet failed (a member did not answer)", s.failed, s.samples)
	}
	return broken
}

// TestFaults runs the fleet while it misbehaves between clean failures
// (issue 27): a member's link cut while the member runs on, the manager
// killed in the middle of a deletion. Each case fails on f435c1c.
func TestFaults(t *testing.T) {
	outer := t
	// The management cluster of the middle supported minor (README,
	// "Supported versions"): the manager, its webhooks, CRD rules and
	// admission policies on v1.36 (v1.35 in the others, v1.37 in
	// TestProxyPods).
	env := testenv.StartVersion(t, "v1.36.3")
	// x is reached only through a link the test cuts; its node has no
	// room for pods that need pool=burst until the test adds one.
	// Each runs its own kube-scheduler too, for NoReservation's pods.
	x := startMember(t, "x", true, local.Node{Name: "x-0", CPU: "8", Memory: "16Gi"})
	y := startMember(t, "y", true, local.Node{Name: "y-0", CPU: "8", Memory: "16Gi", Labels: map[string]string{"pool": "burst"}})
	// z is a third cluster for fan-outs of three.
	z := startMember(t, "z", true, local.Node{Name: "z-0", CPU: "8", Memory: "16Gi"})
	members := []*member{x, y, z}
	toX := newLink(t, x)
	mgmt := install(t, env.Config, "management")["placer-manager"]
	logDir := t.TempDir()
	ports := managerPorts{health: freeAddr(t), metrics: freeAddr(t), webhook: freeAddr(t)}
	// The API server calls its webhooks at this manager: a Workload
	// created while it is killed gets the finalizer by the propagator's
	// patch (failurePolicy Ignore).
	if err := deploy.WebhooksAt(context.Background(), env.Config, ports.webhook); err != nil {
		t.Fatal(err)
	}
	// A short handshake timeout: it is also the bind window of a gang of one.
	args := append(managerArgs(mgmt, ports), "--handshake-timeout=10s")
	kill := runManager(t, args, logDir)
	wc := testenv.Watcher(t, env.Config)
	registerAt(t, env.Client, x, toX.Addr, map[string]string{"tier": "x"}, "default")
	register(t, env.Client, y, map[string]string{"tier": "y"}, "default")
	register(t, env.Client, z, map[string]string{"tier": "z"}, "default")
	xReady := func(t *testing.T) {
		t.Helper()
		for _, m := range members {
			kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name}}
			testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
				return kc.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
			})
		}
	}
	xReady(t)
	workload := func(t *testing.T, name string, opts ...st.WorkloadOption) *v1alpha1.Workload {
		t.Helper()
		w := st.Workload(name, append([]st.WorkloadOption{st.Replicas(1), st.Requests("100m", "64Mi"),
			st.PreferredClusterAffinity(100, st.Term(st.Expr("tier", "In", "x")))}, opts...)...)
		w.UID, w.Generation = "", 0
		if err := env.Client.Create(context.Background(), w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	readyOn := func(t *testing.T, w *v1alpha1.Workload, cluster string) {
		t.Helper()
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && w.Status.ClusterRef != nil && w.Status.ClusterRef.Name == cluster
		})
	}

	t.Run("a gang of one whose chosen member is cut off runs once, even when room appears there after it was given up", func(t *testing.T) {
		ctx := context.Background()
		// Watch x's chaperons directly, to cut the link as soon as the
		// Workload's candidate is there: before the manager learns
		// anything of it.
		watch, err := x.client.Watch(ctx, &mcv1alpha1.PodChaperonList{}, client.HasLabels{mcv1alpha1.LabelWorkloadUID})
		if err != nil {
			t.Fatal(err)
		}
		defer watch.Stop()
		w := workload(t, "solo", func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"pool": "burst"}
		},
			// It leaves a cluster that stops answering at once.
			st.TolerateFor(v1alpha1.TaintClusterUnreachable, 0), st.TolerateFor(v1alpha1.TaintClusterNotReady, 0))
		var created time.Time
		for ev := range watch.ResultChan() {
			if ch, ok := ev.Object.(*mcv1alpha1.PodChaperon); ok && strings.HasPrefix(ch.Name, "solo-") {
				toX.cut()
				created = ch.CreationTimestamp.Time
				break
			}
		}
		defer toX.heal()
		sampler := sampleBound(t, members...)
		readyOn(t, w, "y")
		// Room appears in x once the manager has moved on, after the
		// candidate's window (the handshake timeout, on x's clock).
		time.Sleep(time.Until(created.Add(12 * time.Second)))
		if err := x.target.AddNodes(ctx, local.Node{Name: "x-burst", CPU: "8", Memory: "16Gi", Labels: map[string]string{"pool": "burst"}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Second)
		toX.heal()
		// x answers again: what was given up there goes.
		waitNoChaperons(t, x, w)
		sampler.check(t)
		readyOn(t, w, "y")
		checkOneBoundPerReplica(t, members...)
		if err := env.Client.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
	})

	t.Run("a rejection holds for its backoff: no cluster is sent a handshake again while nothing changed there", func(t *testing.T) {
		ctx := context.Background()
		xReady(t)
		// Count the candidates each member is sent, from its own watch.
		created := map[string]int{}
		var mu sync.Mutex
		for _, m := range members {
			watch, err := m.client.Watch(ctx, &mcv1alpha1.PodChaperonList{}, client.HasLabels{mcv1alpha1.LabelWorkloadUID})
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Stop()
			go func() {
				for ev := range watch.ResultChan() {
					if ch, ok := ev.Object.(*mcv1alpha1.PodChaperon); ok && ev.Type == apiwatch.Added && strings.HasPrefix(ch.Name, "nowhere-") {
						mu.Lock()
						created[m.name]++
						mu.Unlock()
					}
				}
			}()
		}
		// Nothing runs anywhere any more (what earlier cases ran there is
		// gone, and the summaries say so): a change now would be news.
		for _, m := range members {
			kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name}}
			testenv.WaitFor(t, wc, kc, &v1alpha1.KubernetesClusterList{}, timeout, func(kc *v1alpha1.KubernetesCluster) bool {
				return kc.Status.Requested.Cpu().IsZero()
			})
		}
		// x opens up (a label changes) at the start of a second, just
		// before the handshake: its rejection, stamped to the whole
		// second, then reads as older than the opening.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
		kx := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"}}
		if err := env.Client.Patch(ctx, kx, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/opened":"yes"}}}`))); err != nil {
			t.Fatal(err)
		}
		// Its pods fit no node anywhere: each cluster rejects it once.
		w := workload(t, "nowhere", st.Replicas(2), func(w *v1alpha1.Workload) {
			w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"pool": "none"}
		})
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return len(w.Status.RejectedClusters) == len(members) })
		// Within the first backoff (30 s), nothing changes in any cluster.
		time.Sleep(15 * time.Second)
		mu.Lock()
		got := maps.Clone(created)
		mu.Unlock()
		if got["x"] != 2 || got["y"] != 2 || got["z"] != 2 {
			t.Errorf("candidates created: %v; want one handshake (2 candidates) per cluster within the backoff", got)
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			t.Fatal(err)
		}
		for _, rc := range w.Status.RejectedClusters {
			if rc.Attempts != 1 {
				t.Errorf("%s rejected %d times within its first backoff", rc.Cluster.Name, rc.Attempts)
			}
		}
		if err := env.Client.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
	})

	t.Run("healthy members keep placing while another member is blackholed", func(t *testing.T) {
		ctx := context.Background()
		xReady(t)
		// readyAfter creates n Workloads named prefix-i with opts and
		// returns how long each took from its creation to Ready, as the
		// test's own watch saw it, failing if one is not Ready within;
		// with within zero it does not wait.
		readyAfter := func(t *testing.T, prefix string, n int, within time.Duration, opts ...st.WorkloadOption) ([]time.Duration, []*v1alpha1.Workload) {
			t.Helper()
			watch, err := wc.Watch(ctx, &v1alpha1.WorkloadList{}, client.InNamespace("default"))
			if err != nil {
				t.Fatal(err)
			}
			defer watch.Stop()
			start := map[string]time.Time{}
			var ws []*v1alpha1.Workload
			for i := range n {
				name := fmt.Sprintf("%s-%d", prefix, i)
				start[name] = time.Now()
				ws = append(ws, workload(t, name, opts...))
			}
			if within == 0 {
				return nil, ws
			}
			var took []time.Duration
			deadline := time.After(within)
			for len(took) < n {
				select {
				case ev := <-watch.ResultChan():
					w, ok := ev.Object.(*v1alpha1.Workload)
					if t0, mine := start[w.GetName()]; ok && mine && w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
						took = append(took, time.Since(t0))
						delete(start, w.Name)
					}
				case <-deadline:
					t.Fatalf("%d of %d Workloads not Ready within %s: %v", len(start), n, within, slices.Collect(maps.Keys(start)))
				}
			}
			slices.Sort(took)
			return took, ws
		}
		onY := st.Target("y", "default")
		calm, calmWs := readyAfter(t, "calm", 6, timeout, onY)
		// x stops answering, with handshakes of its own under way.
		toX.cut()
		defer toX.heal()
		_, stuckWs := readyAfter(t, "stuck", 8, 0, st.Target("x", "default"))
		// Not a speed figure (those are logged): the liveness bound the
		// protocol gives every handshake, the handshake timeout (10 s
		// here). Another member's trouble must not spend it; on f435c1c
		// these took 65 s.
		busy, busyWs := readyAfter(t, "busy", 6, 10*time.Second, onY)
		t.Logf("create to Ready on y, 6 Workloads: with no fault p50 %s max %s; with x blackholed and 8 Workloads handshaking there p50 %s max %s",
			calm[len(calm)/2].Round(time.Millisecond), calm[len(calm)-1].Round(time.Millisecond), busy[len(busy)/2].Round(time.Millisecond), busy[len(busy)-1].Round(time.Millisecond))
		toX.heal()
		for _, w := range slices.Concat(calmWs, stuckWs, busyWs) {
			if err := env.Client.Delete(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range slices.Concat(calmWs, stuckWs, busyWs) {
			testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		}
	})

	t.Run("a Workload deleted while its member is cut off keeps its finalizer across a manager restart, and nothing of it is left once the member answers", func(t *testing.T) {
		ctx := context.Background()
		xReady(t)
		w := workload(t, "doomed")
		readyOn(t, w, "x")
		toX.cut()
		defer toX.heal()
		if err := env.Client.Delete(ctx, w); err != nil {
			t.Fatal(err)
		}
		kill()
		// The manager outlives this case: the later ones need it.
		kill = runManager(outer, args, logDir)
		// The restarted manager has not connected x yet, and then cannot
		// reach it: nothing there is confirmed.
		time.Sleep(15 * time.Second)
		got := &v1alpha1.Workload{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
			if kerrors.IsNotFound(err) {
				t.Fatal("the Workload's finalizer went while its member was cut off: its pods there run on, with nothing to remove them")
			}
			t.Fatal(err)
		}
		if len(pods(t, x, w)) == 0 {
			t.Fatal("x lost the Workload's pods while cut off; the case proves nothing")
		}
		toX.heal()
		testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
		waitNoChaperons(t, x, w)
		waitNoPods(t, x, w)
	})

	// settled waits until every replica of w is Ready in one cluster and
	// nothing of it is left in the others; it returns that cluster.
	settled := func(t *testing.T, w *v1alpha1.Workload) string {
		t.Helper()
		want := int32(w.ReplicaCount())
		testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, 2*timeout, func(w *v1alpha1.Workload) bool {
			return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue && w.Status.ClusterRef != nil && w.Status.ReadyReplicas == want
		})
		for _, m := range members {
			if m.name != w.Status.ClusterRef.Name {
				waitNoChaperons(t, m, w)
				waitNoPods(t, m, w)
			}
		}
		return w.Status.ClusterRef.Name
	}
	cleanup := func(t *testing.T, ws ...*v1alpha1.Workload) {
		t.Helper()
		for _, w := range ws {
			if err := env.Client.Delete(context.Background(), w); err != nil {
				t.Fatal(err)
			}
		}
		for _, w := range ws {
			testenv.WaitForDeletion(t, wc, w, &v1alpha1.WorkloadList{}, timeout)
			for _, m := range members {
				waitNoChaperons(t, m, w)
			}
		}
	}
	fanOut := func(n int32) st.WorkloadOption {
		return func(w *v1alpha1.Workload) { w.Spec.Placement.FanOut = n }
	}
	noReservation := func(w *v1alpha1.Workload) { w.Spec.Placement.Mode = v1alpha1.PlacementModeNoReservation }
	// Each shape the invariants name: a gang of one and a held gang of
	// two, with fanOut 1 and 3, and two replicas NoReservation (bound by
	// the member's own kube-scheduler, with no hold: only their bind
	// window, which the member's agent enforces, keeps them once).
	shapes := func(t *testing.T, prefix string, opts ...st.WorkloadOption) []*v1alpha1.Workload {
		return []*v1alpha1.Workload{
			workload(t, prefix+"-one", opts...),
			workload(t, prefix+"-two", append([]st.WorkloadOption{st.Replicas(2)}, opts...)...),
			workload(t, prefix+"-one-fan", append([]st.WorkloadOption{fanOut(3)}, opts...)...),
			workload(t, prefix+"-two-fan", append([]st.WorkloadOption{st.Replicas(2), fanOut(3)}, opts...)...),
			workload(t, prefix+"-nores", append([]st.WorkloadOption{st.Replicas(2), noReservation}, opts...)...),
		}
	}

	stopFirst := func(w *v1alpha1.Workload) { w.Spec.Placement.Move = v1alpha1.MoveStopBeforeStart }
	// leaveAtOnce: the Workload leaves a cluster that stops answering at once.
	leaveAtOnce := []st.WorkloadOption{st.TolerateFor(v1alpha1.TaintClusterUnreachable, 0), st.TolerateFor(v1alpha1.TaintClusterNotReady, 0)}

	t.Run("a slow link (300 ms each way): every shape handshaking through it runs once", func(t *testing.T) {
		xReady(t)
		toX.DelayTx(300*time.Millisecond, 100*time.Millisecond)
		toX.DelayRx(300*time.Millisecond, 100*time.Millisecond)
		defer func() { toX.UndelayTx(); toX.UndelayRx() }()
		sampler := sampleBound(t, members...)
		ws := shapes(t, "slow")
		for _, w := range ws {
			t.Logf("%s runs in %s", w.Name, settled(t, w))
		}
		sampler.check(t)
		cleanup(t, ws...)
	})

	t.Run("a flapping link (cut 2 s, healed 2 s) through handshakes and after commit: every shape runs once, and settles", func(t *testing.T) {
		xReady(t)
		// Which Workloads the flapping moved off x.
		watch, err := wc.Watch(context.Background(), &v1alpha1.WorkloadList{}, client.InNamespace("default"))
		if err != nil {
			t.Fatal(err)
		}
		defer watch.Stop()
		var movedMu sync.Mutex
		moved := map[string]bool{}
		go func() {
			for ev := range watch.ResultChan() {
				if w, ok := ev.Object.(*v1alpha1.Workload); ok && w.Left(types.NamespacedName{Namespace: "default", Name: "x"}) != nil {
					movedMu.Lock()
					moved[w.Name] = true
					movedMu.Unlock()
				}
			}
		}()
		sampler := sampleBound(t, members...)
		stopFlap := make(chan struct{})
		flapped := make(chan struct{})
		go func() {
			defer close(flapped)
			defer toX.heal()
			for {
				toX.cut()
				select {
				case <-stopFlap:
					return
				case <-time.After(2 * time.Second):
				}
				toX.heal()
				select {
				case <-stopFlap:
					return
				case <-time.After(2 * time.Second):
				}
			}
		}()
		ws := slices.Concat(
			// They leave a cluster that stops answering at once, so that
			// the flapping moves them too; StopBeforeStart never starts a
			// copy while another may run (StartBeforeStop, the default,
			// does, by design: a copy left behind a partition).
			shapes(t, "flap-move", append([]st.WorkloadOption{stopFirst}, leaveAtOnce...)...),
			// They tolerate the condition taints for the default 300 s:
			// they stay, and handshakes that time out are fenced.
			shapes(t, "flap-stay"),
		)
		time.Sleep(30 * time.Second)
		close(stopFlap)
		<-flapped
		for _, w := range ws {
			t.Logf("%s runs in %s", w.Name, settled(t, w))
		}
		sampler.check(t)
		checkOneBoundPerReplica(t, members...)
		movedMu.Lock()
		t.Logf("moved off x while flapping: %v", slices.Sorted(maps.Keys(moved)))
		if !slices.ContainsFunc(slices.Collect(maps.Keys(moved)), func(n string) bool { return strings.HasPrefix(n, "flap-move-") }) {
			t.Error("no flap-move Workload left x: the flapping moved nothing, and the case proves less than it says")
		}
		movedMu.Unlock()
		cleanup(t, ws...)
	})

	t.Run("committed Workloads that must never run twice (StopBeforeStart) leave a cut-off cluster only once it confirms", func(t *testing.T) {
		xReady(t)
		ws := shapes(t, "cut", append([]st.WorkloadOption{stopFirst}, leaveAtOnce...)...)
		for _, w := range ws {
			readyOn(t, w, "x")
		}
		sampler := sampleBound(t, members...)
		toX.cut()
		defer toX.heal()
		// The manager sees x unreachable and moves them: none may start
		// elsewhere while x, which it cannot reach, may still run them.
		for _, w := range ws {
			testenv.WaitFor(t, wc, w, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool {
				return w.Left(types.NamespacedName{Namespace: "default", Name: "x"}) != nil
			})
		}
		time.Sleep(10 * time.Second)
		for _, w := range ws {
			if n := len(pods(t, x, w)); n != w.ReplicaCount() {
				t.Fatalf("%s has %d pods in x, want %d: x lost them while cut off, and the case proves nothing", w.Name, n, w.ReplicaCount())
			}
		}
		toX.heal()
		for _, w := range ws {
			t.Logf("%s runs in %s", w.Name, settled(t, w))
		}
		sampler.check(t)
		cleanup(t, ws...)
	})

	t.Run("a member whose clock is 10 minutes off, as the manager reads it, is placed on as any other: its handshakes are timed on the manager's clock", func(t *testing.T) {
		ctx := context.Background()
		xReady(t)
		kubeconfig, err := x.target.KubeconfigFor("placer-manager")
		if err != nil {
			t.Fatal(err)
		}
		clock := newClockLink(t, x, kubeconfig)
		point := func(server string) {
			s := &corev1.Secret{}
			if err := env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "x"}, s); err != nil {
				t.Fatal(err)
			}
			s.Data["kubeconfig"] = withServer(t, kubeconfig, server)
			if err := env.Client.Update(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		clock.offset.Store(int64(-10 * time.Minute))
		point(clock.Addr)
		defer point(toX.Addr)
		// The manager connects to x again, through the link.
		select {
		case <-clock.used:
		case <-time.After(timeout):
			t.Fatal("the manager did not connect to x through the clock link")
		}
		for _, off := range []time.Duration{-10 * time.Minute, 10 * time.Minute} {
			clock.offset.Store(int64(off))
			xReady(t)
			onX := st.Target("x", "default")
			name := "behind"
			if off > 0 {
				name = "ahead"
			}
			start := time.Now()
			ws := []*v1alpha1.Workload{workload(t, name+"-one", onX), workload(t, name+"-two", onX, st.Replicas(2))}
			for _, w := range ws {
				readyOn(t, w, "x")
			}
			// The manager reads x's timestamps off by the offset.
			cfg, err := clientcmd.RESTConfigFromKubeConfig(withServer(t, kubeconfig, clock.Addr))
			if err != nil {
				t.Fatal(err)
			}
			through, err := client.New(cfg, client.Options{Scheme: clustertest.Scheme()})
			if err != nil {
				t.Fatal(err)
			}
			seen := &mcv1alpha1.PodChaperonList{}
			if err := through.List(ctx, seen, client.MatchingLabels{mcv1alpha1.LabelWorkloadUID: string(ws[0].UID)}); err != nil || len(seen.Items) == 0 {
				t.Fatalf("x's chaperons of %s through the link: %v (%d)", ws[0].Name, err, len(seen.Items))
			}
			if skew := time.Until(seen.Items[0].CreationTimestamp.Time) - off; skew < -time.Since(start)-time.Minute || skew > time.Minute {
				t.Fatalf("through the link, %s's chaperon was made %s from now, want about %s: the link does not move x's clock", ws[0].Name, time.Until(seen.Items[0].CreationTimestamp.Time).Round(time.Second), off)
			}
			// Two replicas that no node of x fits: x holds them for the
			// handshake timeout (10 s), on the manager's clock. On f435c1c
			// the candidates' own timestamps timed them: 10 minutes old at
			// once, or never old enough.
			never := workload(t, name+"-never", onX, st.Replicas(2), func(w *v1alpha1.Workload) {
				w.Spec.TargetDeployment.Template.Spec.NodeSelector = map[string]string{"pool": "none"}
			})
			created := time.Now()
			testenv.WaitFor(t, wc, never, &v1alpha1.WorkloadList{}, timeout, func(w *v1alpha1.Workload) bool { return len(w.Status.RejectedClusters) > 0 })
			// Its candidates are found unschedulable: rejected at once as
			// such, not as a timeout, whatever the clock.
			if rc := never.Status.RejectedClusters[0]; rc.Reason != v1alpha1.ReasonUnschedulable {
				t.Errorf("%s: rejected after %s for %s (%s), want Unschedulable", never.Name, time.Since(created).Round(time.Second), rc.Reason, rc.Message)
			}
			cleanup(t, append(ws, never)...)
		}
		xReady(t)
	})
}
