package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/cordon"
	"github.com/placer-dev/placer/internal/fleetwait"
	st "github.com/placer-dev/placer/scheduler/schedulertest"
)

// tolerate is how long the failover's Workloads tolerate an unreachable
// cluster.
const tolerate = 5

// dynamicsResult is one fleet-dynamics measure at one size.
type dynamicsResult struct {
	what    string
	n       int
	per     latencies // per Workload, from the start of the measure
	total   time.Duration
	cleanup time.Duration // failover: from the cluster answering again until nothing is left there
	minFrac float64       // drain: the least readyReplicas/replicas any Workload reported
	// waits: the manager's, from the measure's start until every
	// Workload moved; writes and conflicts: the management API server's
	// Workload writes meanwhile, and those refused with 409.
	waits             waits
	writes, conflicts float64
}

// dynamics measures failover (member-0 stops answering) and drain (a
// NoExecute taint on member-1) for each size, one after the other.
// dynamics.md is written again after each measure: a run cut short keeps
// what it measured.
func dynamics(ctx context.Context, o options, f *fleet, sizes []int) error {
	var rs []dynamicsResult
	for _, n := range sizes {
		for _, measure := range []func(context.Context, options, *fleet, int) (dynamicsResult, error){failover, drainMeasure} {
			r, err := measure(ctx, o, f, n)
			if err != nil {
				return err
			}
			rs = append(rs, r)
			if err := writeDynamics(o, f, rs); err != nil {
				return err
			}
		}
	}
	fmt.Println()
	b, err := os.ReadFile(filepath.Join(o.out, "dynamics.md"))
	fmt.Print(string(b))
	return err
}

func writeDynamics(o options, f *fleet, rs []dynamicsResult) error {
	var b strings.Builder
	header(&b, o, f, "-dynamics "+o.dynamics)
	fmt.Fprintln(&b, "Failover: from the toleration's end (the unreachable taint's timeAdded plus the toleration; the API stores timeAdded in whole seconds and placer's scheduler counts from that same value, so this is when the eviction fell due) until each Workload runs Ready elsewhere. Drain: from the taint until each runs Ready elsewhere with nothing left on the drained member; the least ready fraction is the lowest status.readyReplicas/replicas any Workload reported meanwhile.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| measure | Workloads | p50 | p90 | p99 | all moved | cleanup after the cluster answers | least ready fraction | Workload writes (per Workload) | of them 409 Conflict |")
	fmt.Fprintln(&b, "|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rs {
		cleanup, frac := "–", "–"
		if r.cleanup > 0 {
			cleanup = ms(r.cleanup) + " ms"
		}
		if r.minFrac >= 0 {
			frac = fmt.Sprintf("%.2f", r.minFrac)
		}
		fmt.Fprintf(&b, "| %s | %d | %s ms | %s ms | %s ms | %s ms | %s | %s | %.0f (%.1f) | %.0f |\n", r.what, r.n, ms(r.per.pct(50)), ms(r.per.pct(90)), ms(r.per.pct(99)), ms(r.total), cleanup, frac,
			r.writes, r.writes/float64(r.n), r.conflicts)
	}
	named := make([]namedWaits, len(rs))
	for i, r := range rs {
		named[i] = namedWaits{fmt.Sprintf("%s, %d", r.what, r.n), r.waits}
	}
	writeWaitsOf(&b, "measure", named)
	return os.WriteFile(filepath.Join(o.out, "dynamics.md"), []byte(b.String()), 0o644)
}

// measureMark is what the manager waited for and the management API
// server's Workload writes (all, and the 409s) at a moment.
type measureMark struct {
	waits             waits
	writes, conflicts writes
}

func takeMeasure(ctx context.Context, f *fleet) (measureMark, error) {
	var m measureMark
	var err error
	if m.waits, err = scrapeWaits(ctx, f.metrics); err != nil {
		return m, err
	}
	w, err := scrapeWrites(ctx, f.mgmt.RESTConfig(), "", "409")
	if err != nil {
		return m, err
	}
	m.writes, m.conflicts = w[0], w[1]
	return m, nil
}

// since records what the manager waited for and the Workload writes
// since before.
func (r *dynamicsResult) since(ctx context.Context, f *fleet, before measureMark) error {
	now, err := takeMeasure(ctx, f)
	if err != nil {
		return err
	}
	r.waits = now.waits.minus(before.waits)
	r.writes = now.writes.minus(before.writes).of("workloads")
	r.conflicts = now.conflicts.minus(before.conflicts).of("workloads")
	return nil
}

// createOn makes n Workloads in ns preferring cluster, and waits until each
// one runs there, Ready.
func createOn(ctx context.Context, f *fleet, ns, cluster string, n int, replicas int32, opt func(*v1alpha1.Workload)) error {
	its := make([]item, n)
	for i := range its {
		its[i] = item{name: fmt.Sprintf("%s-%04d", ns, i), replicas: int(replicas)}
	}
	err := createAll(ctx, its, func(ctx context.Context, it item) error {
		w := &v1alpha1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: it.name},
			Spec: v1alpha1.WorkloadSpec{
				TargetDeployment: v1alpha1.TargetDeployment{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{Spec: podSpec}},
			},
		}
		st.PreferredClusterAffinity(100, st.Term(st.Expr(v1alpha1.LabelClusterName, "In", cluster)))(w)
		opt(w)
		return f.mc.Create(ctx, w)
	})
	if err != nil {
		return err
	}
	return watchAll(ctx, f, ns, n, func(w *v1alpha1.Workload, _ time.Time) bool {
		return on(w) == cluster && ready(w)
	})
}

func on(w *v1alpha1.Workload) string {
	if w.Status.ClusterRef == nil {
		return ""
	}
	return w.Status.ClusterRef.Name
}

func ready(w *v1alpha1.Workload) bool {
	return w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
}

// watchAll watches the Workloads of ns until done holds for n of them (it
// is told when each event was seen), or ctx ends.
func watchAll(ctx context.Context, f *fleet, ns string, n int, done func(*v1alpha1.Workload, time.Time) bool) error {
	ok := map[string]bool{}
	err := fleetwait.Each(ctx, f.mc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}, &v1alpha1.WorkloadList{},
		func(w *v1alpha1.Workload, deleted bool) {
			if !deleted && done(w, time.Now()) {
				ok[w.Name] = true
			}
		},
		func() bool { return len(ok) >= n })
	if err != nil {
		return fmt.Errorf("%d of %d Workloads in %s: %w", len(ok), n, ns, err)
	}
	return nil
}

// timeTo watches the Workloads of ns until done holds for n of them and
// returns, sorted, how long after from each first did.
func timeTo(ctx context.Context, f *fleet, ns string, n int, from time.Time, done func(*v1alpha1.Workload) bool) (latencies, error) {
	at := map[string]time.Duration{}
	err := watchAll(ctx, f, ns, n, func(w *v1alpha1.Workload, now time.Time) bool {
		if !done(w) {
			return false
		}
		if _, ok := at[w.Name]; !ok {
			at[w.Name] = now.Sub(from)
		}
		return true
	})
	out := make(latencies, 0, len(at))
	for _, d := range at {
		out = append(out, d)
	}
	slices.Sort(out)
	return out, err
}

// removeAll deletes the Workloads of ns and waits until they are gone.
func removeAll(ctx context.Context, f *fleet, ns string) error {
	if err := f.mc.DeleteAllOf(ctx, &v1alpha1.Workload{}, client.InNamespace(ns)); err != nil {
		return err
	}
	return fleetwait.Gone(ctx, f.mc, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}, &v1alpha1.WorkloadList{})
}

// fleetReady waits until every member is Ready again, untainted by the
// measure before.
func fleetReady(ctx context.Context, o options, f *fleet) error {
	if err := f.waitClustersReady(ctx, o); err != nil {
		return err
	}
	tainted := map[string]bool{}
	return fleetwait.Each(ctx, f.mc, &v1alpha1.KubernetesCluster{}, &v1alpha1.KubernetesClusterList{},
		func(kc *v1alpha1.KubernetesCluster, deleted bool) {
			if deleted || len(kc.Spec.Taints) == 0 {
				delete(tainted, kc.Name)
			} else {
				tainted[kc.Name] = true
			}
		},
		func() bool { return len(tainted) == 0 })
}

// failover: n Workloads run on member-0, tolerating its being unreachable
// for a few seconds; its API server stops. Each Workload's time is from
// the toleration's end (the taint's timeAdded plus the toleration: the
// whole-second timeAdded the API stores is what placer's scheduler counts
// from too, so this is when the eviction fell due) until it runs Ready
// elsewhere.
func failover(ctx context.Context, o options, f *fleet, n int) (dynamicsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r := dynamicsResult{what: "failover (member-0 unreachable)", n: n, minFrac: -1}
	from := f.members[0].Name()
	if err := fleetReady(ctx, o, f); err != nil {
		return r, err
	}
	if err := createOn(ctx, f, "failover", from, n, 1, func(w *v1alpha1.Workload) {
		w.Spec.ClusterTolerations = []v1alpha1.ClusterToleration{{Key: v1alpha1.TaintClusterUnreachable, Operator: "Exists", Effect: v1alpha1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](tolerate)}}
	}); err != nil {
		return r, err
	}
	logf("failover: %d Workloads run on %s; stopping its API server", n, from)
	before, err := takeMeasure(ctx, f)
	if err != nil {
		return r, err
	}
	f.members[0].StopAPIServer()
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: from}}
	var added time.Time
	if err := fleetwait.Until(ctx, f.mc, kc, &v1alpha1.KubernetesClusterList{}, func(kc *v1alpha1.KubernetesCluster) bool {
		i := slices.IndexFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool {
			return t.Key == v1alpha1.TaintClusterUnreachable && t.TimeAdded != nil
		})
		if i >= 0 {
			added = kc.Spec.Taints[i].TimeAdded.Time
		}
		return i >= 0
	}); err != nil {
		return r, err
	}
	expiry := added.Add(tolerate * time.Second)
	if r.per, err = timeTo(ctx, f, "failover", n, expiry, func(w *v1alpha1.Workload) bool {
		return on(w) != "" && on(w) != from && ready(w)
	}); err != nil {
		return r, err
	}
	if err := r.since(ctx, f, before); err != nil {
		return r, err
	}
	r.total = r.per.pct(100)
	logf("failover: %d Workloads run elsewhere, p50 %s, p99 %s after the toleration; starting %s's API server", n, r.per.pct(50), r.per.pct(99), from)
	if err := f.members[0].StartAPIServer(ctx); err != nil {
		return r, err
	}
	back := time.Now()
	if err := watchAll(ctx, f, "failover", n, func(w *v1alpha1.Workload, _ time.Time) bool { return len(w.Status.LeftClusters) == 0 }); err != nil {
		return r, err
	}
	r.cleanup = time.Since(back)
	logf("failover: %s cleaned in %s", from, r.cleanup.Round(time.Millisecond))
	return r, removeAll(ctx, f, "failover")
}

// drainMeasure: n two-replica Workloads run on member-1, which is then
// tainted as placer drain does. Each Workload's time is from the taint until it runs
// Ready elsewhere with nothing left on member-1; minFrac is the least
// readyReplicas/replicas any Workload reported meanwhile (placer's count,
// from the pods' statuses the agents mirror).
func drainMeasure(ctx context.Context, o options, f *fleet, n int) (dynamicsResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r := dynamicsResult{what: "drain (NoExecute taint on member-1)", n: n, minFrac: 1}
	from := f.members[1].Name()
	if err := fleetReady(ctx, o, f); err != nil {
		return r, err
	}
	if err := createOn(ctx, f, "drain", from, n, 2, func(*v1alpha1.Workload) {}); err != nil {
		return r, err
	}
	logf("drain: %d Workloads run on %s; tainting it", n, from)
	key := client.ObjectKey{Namespace: "default", Name: from}
	before, err := takeMeasure(ctx, f)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if err := cordon.Drain(ctx, f.mc, key); err != nil {
		return r, err
	}
	if r.per, err = timeTo(ctx, f, "drain", n, start, func(w *v1alpha1.Workload) bool {
		r.minFrac = min(r.minFrac, float64(w.Status.ReadyReplicas)/float64(w.ReplicaCount()))
		return on(w) != "" && on(w) != from && ready(w) && len(w.Status.LeftClusters) == 0
	}); err != nil {
		return r, err
	}
	if err := r.since(ctx, f, before); err != nil {
		return r, err
	}
	r.total = r.per.pct(100)
	logf("drain: %d Workloads moved off %s, p50 %s, p99 %s; least ready fraction %.2f", n, from, r.per.pct(50), r.per.pct(99), r.minFrac)
	if err := cordon.Uncordon(ctx, f.mc, key); err != nil {
		return r, err
	}
	return r, removeAll(ctx, f, "drain")
}
