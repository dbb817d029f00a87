package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/fleetwait"
)

// The pods every phase creates: small, so capacity never limits.
var podSpec = corev1.PodSpec{Containers: []corev1.Container{{
	Name: "app", Image: "registry.k8s.io/pause:3.10",
	Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
	}},
}}}

// item is one thing a phase creates.
type item struct {
	name     string
	replicas int
}

func items(o options) []item {
	out := make([]item, 0, o.workloads+o.multi)
	for i := range o.workloads {
		out = append(out, item{name: fmt.Sprintf("w%04d", i), replicas: 1})
	}
	for i := range o.multi {
		out = append(out, item{name: fmt.Sprintf("m%03d", i), replicas: o.multiReplicas})
	}
	return out
}

// restWindow is how long the fleet is watched at rest.
const restWindow = 10 * time.Second

// sumValues adds up a map's values.
func sumValues(m map[string]float64) float64 {
	var n float64
	for _, v := range m {
		n += v
	}
	return n
}

// createAll creates every item through one rate-limited client, with as
// many requests in flight as the client's limits allow (16).
func createAll(ctx context.Context, its []item, create func(context.Context, item) error) error {
	return inParallel(ctx, 16, its, create)
}

// inParallel calls f for every element of its, with n calls at a time,
// and returns the first error.
func inParallel[T any](ctx context.Context, n int, its []T, f func(context.Context, T) error) error {
	work := make(chan T)
	errs := make(chan error, len(its))
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for it := range work {
				if err := f(ctx, it); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, it := range its {
		work <- it
	}
	close(work)
	wg.Wait()
	close(errs)
	return <-errs
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	o.started, o.commit = time.Now(), "unknown"
	if out, err := exec.Command("git", "describe", "--always", "--dirty").Output(); err == nil {
		o.commit = strings.TrimSpace(string(out))
	}
	if o.writeCosts {
		if o.writeCostN <= 0 || o.writeCostRounds <= 0 {
			return fmt.Errorf("-write-cost-n %d, -write-cost-rounds %d: want positive numbers", o.writeCostN, o.writeCostRounds)
		}
		return measureWriteCosts(ctx, o, o.writeCostN, o.writeCostRounds)
	}
	if err := checkProfile(o); err != nil {
		return err
	}
	// Checked before a fleet is started for it.
	var rates []float64
	if o.rates != "" {
		var err error
		if rates, err = loadOptions(&o); err != nil {
			return err
		}
	}
	logf("client QPS %g burst %d; component QPS %g burst %d; %d members × %d nodes; %d single-replica + %d × %d-replica workloads per phase",
		o.qps, o.burst, o.componentQPS, o.componentBurst, o.members, o.nodes, o.workloads, o.multi, o.multiReplicas)
	var sizes []int
	if o.dynamics != "" {
		for _, s := range strings.Split(o.dynamics, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n <= 0 {
				return fmt.Errorf("-dynamics %q: want positive numbers separated by commas", o.dynamics)
			}
			sizes = append(sizes, n)
		}
	}
	f, err := startFleet(ctx, o)
	if f != nil {
		defer f.close()
	}
	if err != nil {
		return err
	}
	if len(sizes) > 0 {
		return dynamics(ctx, o, f, sizes)
	}
	if len(rates) > 0 {
		return offeredLoad(ctx, o, f, rates)
	}
	rec, mc, err := watchAndCreate(ctx, f, o)
	if err != nil {
		return err
	}
	// The baseline member's client, with the same limits.
	cfg := f.members[0].RESTConfig()
	cfg.QPS, cfg.Burst = float32(o.qps), o.burst
	baseline := kubernetes.NewForConfigOrDie(cfg)
	its := items(o)
	var results []phaseResult

	// Each phase's writes and CPU seconds, from the counters before and after.
	type mark struct {
		at       time.Time
		writes   map[string]writes
		cpu      map[string]float64
		fleetCPU map[string]float64
		groupCPU map[string]float64
		waits    waits
		webhooks map[string]histogram
	}
	// Scraping five /metrics pages takes seconds, and CPU, of its own:
	// the clock and the CPU times are read after the scrapes before a
	// phase, and before them after it.
	take := func(first bool) (mark, error) {
		var m mark
		clock := func() {
			m.at, m.cpu = time.Now(), f.cpuSeconds()
			m.fleetCPU = f.fleetCPU(m.cpu)
			m.groupCPU = f.groups.usage()
		}
		if !first {
			clock()
		}
		var err error
		if m.writes, err = f.fleetWrites(ctx); err != nil {
			return mark{}, err
		}
		if m.waits, err = scrapeWaits(ctx, f.metrics); err != nil {
			return mark{}, err
		}
		permit, err := f.permitWaits(ctx)
		if err != nil {
			return mark{}, err
		}
		maps.Copy(m.waits, permit)
		if m.webhooks, err = scrapeWebhooks(ctx, f.mgmt.RESTConfig()); err != nil {
			return mark{}, err
		}
		if first {
			clock()
		}
		return m, nil
	}
	costs := func(r *phaseResult, before mark) error {
		after, err := take(false)
		if err != nil {
			return err
		}
		r.writes = diffWrites(after.writes, before.writes, controlPlane(r.name))
		r.waits = after.waits.minus(before.waits)
		r.cpu, r.fleetCPU = minus(after.cpu, before.cpu), minus(after.fleetCPU, before.fleetCPU)
		r.groupCPU = minus(after.groupCPU, before.groupCPU)
		r.webhooks = map[string]histogram{}
		for name, h := range after.webhooks {
			r.webhooks[name] = h.minus(before.webhooks[name])
		}
		r.wall = after.at.Sub(before.at)
		return nil
	}

	// 0. The fleet at rest, nothing created: what its own upkeep costs
	// (kwok's node heartbeats, the control planes' loops), against which
	// each phase's work is read.
	before, err := take(true)
	if err != nil {
		return err
	}
	if err := sleep(ctx, restWindow); err != nil {
		return err
	}
	rest := &phaseResult{name: "at rest", what: fmt.Sprintf("%s with nothing created, before the baseline", restWindow)}
	if err := costs(rest, before); err != nil {
		return err
	}
	logf("at rest: %.1f CPU seconds in %s", sumValues(rest.fleetCPU), rest.wall.Round(time.Millisecond))

	// 1. The baselines: the same pods straight into member-0, its
	// kube-scheduler; round-robin over the members; as Deployments.
	bps := baselines(f, o)
	baseItems := its
	if o.divided > 0 {
		// Only Karmada's Divided, on the divided measure's items.
		bps, baseItems = karmadaDivided(f, o), dividedItems(o)
	}
	for _, bp := range bps {
		if !o.runs(bp.ns) {
			continue
		}
		its := baseItems
		before, err := take(true)
		if err != nil {
			return err
		}
		start := time.Now()
		total := 0
		err = createAll(ctx, its, func(ctx context.Context, it item) error {
			for _, r := range baselineRecords(bp.ns, it) {
				r.created = time.Now()
				rec.add(r)
			}
			return bp.create(ctx, it, itemIndex(its, it))
		})
		if err != nil {
			return err
		}
		for _, it := range its {
			total += len(baselineRecords(bp.ns, it))
		}
		got := rec.wait(ctx, bp.ns, total, o.timeout)
		logf("%s: %d of %d Running in %s", bp.ns, got, total, time.Since(start).Round(time.Millisecond))
		res := summarize(bp.ns, bp.what, rec.records(bp.ns), rec.phaseCounts(bp.ns))
		if err := costs(&res, before); err != nil {
			return err
		}
		results = append(results, res)
		if err := cleanPhase(ctx, f, baseline, bp.ns); err != nil {
			return err
		}
	}

	// 2–4. placer with fanOut 1; with NoReservation (every member's own
	// kube-scheduler binds at once: the handshake's own cost is the
	// difference); then fanOut over every member.
	phases := placerPhases(o)
	if o.divided > 0 {
		dits := dividedItems(o)
		phases = []placerPhase{
			{ns: "single", fanOut: 1, mode: v1alpha1.PlacementModeReserve, its: dits,
				what: fmt.Sprintf("%d Workloads × %d replicas, each in one cluster, fanOut 1", o.divided, o.dividedReplicas)},
			{ns: "divided", fanOut: 1, mode: v1alpha1.PlacementModeReserve, its: dits, spread: &v1alpha1.ReplicaScheduling{Type: v1alpha1.ReplicaSchedulingDivided},
				what: "the same, Divided over the members by their room: one share (a Workload) per member"},
		}
	}
	for _, ph := range phases {
		if o.divided == 0 && !o.runs(ph.ns) {
			continue
		}
		its := its
		if ph.its != nil {
			its = ph.its
		}
		before, err := take(true)
		if err != nil {
			return err
		}
		start := time.Now()
		profiled := startProfile(ctx, o, f, ph.ns)
		err = createAll(ctx, its, func(ctx context.Context, it item) error {
			rec.add(&record{phase: ph.ns, name: it.name, replicas: it.replicas, created: time.Now()})
			return mc.Create(ctx, newWorkload(ph.ns, it, ph.fanOut, ph.mode, ph.spread))
		})
		if err != nil {
			return err
		}
		got := rec.wait(ctx, ph.ns, len(its), o.timeout)
		logf("%s: %d of %d workloads Running in %s", ph.ns, got, len(its), time.Since(start).Round(time.Millisecond))
		res := summarize(ph.ns, ph.what, rec.records(ph.ns), rec.phaseCounts(ph.ns))
		if err := costs(&res, before); err != nil {
			return err
		}
		// After the costs: the phase's wall time ends with it, not with
		// the profile's 20 s.
		awaitProfile(profiled)
		results = append(results, res)
		if err := cleanPhase(ctx, f, baseline, ph.ns); err != nil {
			return err
		}
	}

	if o.divided > 0 || !o.runs(nsFrontend) {
		return report(o, f, results, rest, f.peakRSS())
	}

	// 5. Ordinary pods through the front end: a Deployment of as many
	// replicas as the phases above have pods, its template annotated;
	// each proxy pod is placed as a Workload of one.
	if err := rec.watchProxyPods(ctx, f.mgmt.RESTConfig()); err != nil {
		return err
	}
	before, err = take(true)
	if err != nil {
		return err
	}
	pods := 0
	for _, it := range its {
		pods += it.replicas
	}
	profiled := startProfile(ctx, o, f, nsFrontend)
	if err := runFrontend(ctx, mc, rec, pods, o.timeout); err != nil {
		return err
	}
	res := summarize(nsFrontend, fmt.Sprintf("placer's front end: a Deployment of %d replicas, its pod template annotated %s; each proxy pod a Workload of one, fanOut 1", pods, v1alpha1.AnnotationElect),
		rec.records(nsFrontend), rec.phaseCounts(nsFrontend))
	if err := costs(&res, before); err != nil {
		return err
	}
	awaitProfile(profiled)
	results = append(results, res)
	if err := cleanPhase(ctx, f, baseline, nsFrontend); err != nil {
		return err
	}

	rss := f.peakRSS()
	return report(o, f, results, rest, rss)
}

// watchAndCreate starts a recorder watching the management cluster and
// every member, and returns it with the management cluster's creating
// client (the benchmark's client limits).
func watchAndCreate(ctx context.Context, f *fleet, o options) (*recorder, client.Client, error) {
	rec := newRecorder()
	if err := rec.watchManagement(ctx, f); err != nil {
		return nil, nil, err
	}
	for i := range f.members {
		if err := rec.watchMember(ctx, f, i); err != nil {
			return nil, nil, err
		}
	}
	mcfg := f.mgmt.RESTConfig()
	mcfg.QPS, mcfg.Burst = float32(o.qps), o.burst
	mc, err := client.New(mcfg, client.Options{Scheme: apis.NewScheme()})
	return rec, mc, err
}

// cleanPhase removes what a phase made, and waits until every member
// holds none of its pods: the next phase starts on an idle fleet, not
// beside the last one's deletions.
func cleanPhase(ctx context.Context, f *fleet, baseline kubernetes.Interface, ns string) error {
	start := time.Now()
	switch baselineKind[ns] {
	case "pod":
		for i := range f.members {
			if err := f.memberClients[i].DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns)); err != nil {
				return err
			}
		}
	case "deployment":
		if controlPlane(ns) == groupKarmada {
			// Deleted in Karmada's API server: it deletes them in the member.
			baseline = f.karmada.kube
		}
		if err := baseline.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}, metav1.ListOptions{}); err != nil {
			return err
		}
	default:
		if ns == nsFrontend {
			if err := cleanFrontend(ctx, f.mc); err != nil {
				return err
			}
		}
		if err := removeAll(ctx, f, ns); err != nil {
			return err
		}
	}
	for i, m := range f.members {
		if err := fleetwait.Gone(ctx, f.memberClients[i], &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}, &corev1.PodList{}); err != nil {
			return fmt.Errorf("cleaning up %s in %s: %w", ns, m.Name(), err)
		}
	}
	if controlPlane(ns) == groupKarmada {
		if err := f.karmada.bindingsGone(ctx, ns); err != nil {
			return fmt.Errorf("cleaning up %s in Karmada: %w", ns, err)
		}
	}
	logf("%s: cleaned up in %s", ns, time.Since(start).Round(time.Millisecond))
	return nil
}

// placerNamespaces are the namespaces of placer's phases, the front end's
// last.
func placerNamespaces() []string {
	var out []string
	for _, ph := range placerPhases(options{}) {
		out = append(out, ph.ns)
	}
	return append(out, nsFrontend)
}

// profilePhases are the phases -profile-phase may name: the burst's
// placer phases and the front end.
var profilePhases = placerNamespaces()

// burstPhases are the phases -phases may name: the baselines and placer's.
func burstPhases() []string {
	return append(append(slices.Clone(baselineNamespaces), nsKarmada), placerNamespaces()...)
}

// runs says whether the burst runs the phase ns (-phases, all when empty).
func (o options) runs(ns string) bool {
	return o.phases == "" || slices.Contains(strings.Split(o.phases, ","), ns)
}

// checkProfile refuses a -profile that would take no profile: a phase
// the burst does not run, or another measure than the burst; and a
// -phases that names a phase the burst does not have, or is given to
// another measure.
func checkProfile(o options) error {
	if o.phases != "" {
		for _, ns := range strings.Split(o.phases, ",") {
			if !slices.Contains(burstPhases(), ns) {
				return fmt.Errorf("-phases: no phase %q: want some of %s", ns, strings.Join(burstPhases(), ","))
			}
		}
		if o.rates != "" || o.dynamics != "" || o.divided > 0 || o.writeCosts {
			return fmt.Errorf("-phases picks the burst's phases; -rates takes -load-phases, and -dynamics, -divided and -write-costs none")
		}
		if o.runs(nsKarmada) && !o.karmada {
			return fmt.Errorf("-phases %s: Karmada's phase runs only with -karmada", o.phases)
		}
	}
	if !o.profile {
		return nil
	}
	if !o.runs(o.profilePhase) {
		return fmt.Errorf("-profile-phase %q is not among -phases %s", o.profilePhase, o.phases)
	}
	if !slices.Contains(profilePhases, o.profilePhase) {
		return fmt.Errorf("-profile-phase %q: want one of %s", o.profilePhase, strings.Join(profilePhases, ", "))
	}
	if o.rates != "" || o.dynamics != "" || o.divided > 0 {
		return fmt.Errorf("-profile profiles a phase of the burst; -rates, -dynamics and -divided take none")
	}
	return nil
}

// startProfile starts profile when -profile asks for the phase ns; its
// result comes on the channel (nil when none is taken).
func startProfile(ctx context.Context, o options, f *fleet, ns string) chan error {
	if f.pprof == "" || ns != o.profilePhase {
		return nil
	}
	profiled := make(chan error, 1)
	go func() { profiled <- profile(ctx, o, f) }()
	return profiled
}

// awaitProfile waits for a profile startProfile started, if any; one
// that fails is logged, not fatal.
func awaitProfile(profiled chan error) {
	if profiled == nil {
		return
	}
	if err := <-profiled; err != nil {
		logf("no profile: %v", err)
	}
}

// profile takes 20-second CPU profiles, at the same time, of the manager
// (its pprof address) and of the management's and member-0's
// kube-apiservers (their /debug/pprof, as the admin), and writes each,
// with its top functions, into the results folder.
func profile(ctx context.Context, o options, f *fleet) error {
	fetch := map[string]func() ([]byte, error){
		"manager": func() ([]byte, error) {
			resp, err := http.Get("http://" + f.pprof + "/debug/pprof/profile?seconds=20")
			if err != nil {
				return nil, err
			}
			defer resp.Body.Close()
			return io.ReadAll(resp.Body)
		},
	}
	for name, c := range map[string]*local.Cluster{"management-apiserver": f.mgmt, "member-0-apiserver": f.members[0]} {
		fetch[name] = func() ([]byte, error) {
			cs, err := kubernetes.NewForConfig(c.RESTConfig())
			if err != nil {
				return nil, err
			}
			return cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", "20").DoRaw(ctx)
		}
	}
	errs := make(chan error, len(fetch))
	for name, get := range fetch {
		go func() {
			b, err := get()
			if err == nil {
				err = writeProfile(o.out, name, b)
			}
			errs <- errors.Wrapf(err, "%s", name)
		}()
	}
	var all []error
	for range fetch {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return kerrors.NewAggregate(all)
}

// writeProfile writes NAME-cpu.pprof and its top functions, NAME-cpu-top.txt.
func writeProfile(dir, name string, b []byte) error {
	path := filepath.Join(dir, name+"-cpu.pprof")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=40", path).CombinedOutput()
	if err != nil {
		return errors.Wrapf(err, "go tool pprof: %s", top)
	}
	return os.WriteFile(filepath.Join(dir, name+"-cpu-top.txt"), top, 0o644)
}

// placerPhase is one of placer's phases: the Workloads it creates.
type placerPhase struct {
	ns     string
	fanOut int32
	mode   v1alpha1.PlacementMode
	what   string
	// its: the phase's own items (items(o) when nil); spread: how
	// their replicas spread.
	its    []item
	spread *v1alpha1.ReplicaScheduling
}

// placerPhases: fanOut 1; NoReservation (every member's own
// kube-scheduler binds at once: the handshake's own cost is the
// difference); fanOut over every member.
func placerPhases(o options) []placerPhase {
	return []placerPhase{
		{ns: "fanout-1", fanOut: 1, mode: v1alpha1.PlacementModeReserve, what: "placer, fanOut 1"},
		{ns: "noreservation", fanOut: 1, mode: v1alpha1.PlacementModeNoReservation, what: "placer, NoReservation (no handshake)"},
		{ns: "fanout-all", fanOut: int32(o.members), mode: v1alpha1.PlacementModeReserve, what: fmt.Sprintf("placer, fanOut %d", o.members)},
	}
}

// newWorkload is the Workload a placer phase creates for an item.
func newWorkload(ns string, it item, fanOut int32, mode v1alpha1.PlacementMode, spread *v1alpha1.ReplicaScheduling) *v1alpha1.Workload {
	return &v1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: it.name},
		Spec: v1alpha1.WorkloadSpec{
			Placement: v1alpha1.Placement{FanOut: fanOut, Mode: mode, ReplicaScheduling: spread},
			TargetDeployment: v1alpha1.TargetDeployment{
				Replicas: ptr.To(int32(it.replicas)),
				Template: corev1.PodTemplateSpec{Spec: podSpec},
			},
		},
	}
}

// dividedItems are the -divided measure's items.
func dividedItems(o options) []item {
	var out []item
	for i := range o.divided {
		out = append(out, item{name: fmt.Sprintf("d%04d", i), replicas: o.dividedReplicas})
	}
	return out
}

// itemIndex is an item's position among the phase's items.
func itemIndex(its []item, it item) int {
	for i := range its {
		if its[i].name == it.name {
			return i
		}
	}
	return 0
}
