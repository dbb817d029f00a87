package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
)

// The write-cost measure: what one write of each kind costs the API server
// and etcd in CPU, on one local control plane, placer's writes beside the
// built-in ones they stand for (a Pod's create and status patch, and the
// ConfigMap and Event). A placed single-replica Workload costs the fleet
// its Workload's create, status and finalizer writes, a PodChaperon's
// create and status mirror, on top of the Pod's own: this says what each
// costs, so the end-to-end CPU per pod can be read against its floor.

// writeKind is one kind of write, made n times per round.
type writeKind struct {
	name string
	// against names the built-in write it is compared with ("" for the
	// built-in ones).
	against string
	// write makes the i-th write of the kind in namespace ns; a kind that
	// patches finds what an earlier kind of the round created.
	write func(ctx context.Context, ns string, i int) error
	// prepare, if set, runs before the kind's clock starts: what its
	// writes need read first (an update's resourceVersion) is not
	// counted.
	prepare func(ctx context.Context, ns string) error
}

// writeCostSample is one round of one kind: CPU seconds of the API
// server and of etcd for n writes.
type writeCostSample struct{ apiserver, etcd float64 }

// writeCostWorkers is how many writes are in flight at once.
const writeCostWorkers = 8

// settle is how long the control plane is left before and after each
// batch of writes.
const settle = 300 * time.Millisecond

// cpuMark is the CPU time of the API server and etcd at a moment.
type cpuMark struct {
	at     time.Time
	sample writeCostSample
}

// cpuSpan is what they spent between two marks.
type cpuSpan struct {
	writeCostSample
	wall time.Duration
}

func (m cpuMark) minus(before cpuMark) cpuSpan {
	return cpuSpan{writeCostSample{m.sample.apiserver - before.sample.apiserver, m.sample.etcd - before.sample.etcd}, m.at.Sub(before.at)}
}

// lessRest is the span's CPU less what the control plane spends at rest
// (rest's rate) over as long, never below zero.
func (s cpuSpan) lessRest(rest cpuSpan) writeCostSample {
	if rest.wall <= 0 {
		return s.writeCostSample
	}
	f := s.wall.Seconds() / rest.wall.Seconds()
	return writeCostSample{apiserver: max(0, s.apiserver-rest.apiserver*f), etcd: max(0, s.etcd-rest.etcd*f)}
}

// sleep waits d, or less if ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// writeCostRow is one kind's figures over the rounds, in milliseconds of
// CPU per write.
type writeCostRow struct {
	name, against       string
	apiserver, etcd     []float64 // per round
	medianAPI, medianDB float64
	min, max            float64 // of apiserver
}

// summarizeWriteCosts turns each kind's rounds into per-write medians
// and spreads.
func summarizeWriteCosts(kinds []writeKind, samples map[string][]writeCostSample, n int) []writeCostRow {
	var rows []writeCostRow
	for _, k := range kinds {
		r := writeCostRow{name: k.name, against: k.against}
		for _, s := range samples[k.name] {
			r.apiserver = append(r.apiserver, s.apiserver*1000/float64(n))
			r.etcd = append(r.etcd, s.etcd*1000/float64(n))
		}
		if len(r.apiserver) == 0 {
			continue
		}
		r.medianAPI, r.medianDB = median(r.apiserver), median(r.etcd)
		r.min, r.max = slices.Min(r.apiserver), slices.Max(r.apiserver)
		rows = append(rows, r)
	}
	return rows
}

// median of a few values (the lower middle one of an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// writeCostReport is the Markdown table of the rows, each placer write
// with its ratio to the built-in write it is compared with.
func writeCostReport(rows []writeCostRow, n, rounds int, header string) string {
	by := map[string]writeCostRow{}
	for _, r := range rows {
		by[r.name] = r
	}
	b := &strings.Builder{}
	fmt.Fprintln(b, header)
	fmt.Fprintln(b)
	fmt.Fprintf(b, "CPU per write, milliseconds: the median of %d rounds of %d writes each (%d at a time; the control plane's own rate at rest taken off), the rounds' least and most in brackets; the ratio is to the built-in write named.\n\n", rounds, n, writeCostWorkers)
	fmt.Fprintln(b, "| write | kube-apiserver | etcd | against | ratio (kube-apiserver) |")
	fmt.Fprintln(b, "|---|---|---|---|---|")
	for _, r := range rows {
		against, ratio := "–", "–"
		if base, ok := by[r.against]; ok && base.medianAPI > 0 {
			against, ratio = r.against, fmt.Sprintf("%.1f", r.medianAPI/base.medianAPI)
		}
		fmt.Fprintf(b, "| %s | %.2f (%.2f–%.2f) | %.2f | %s | %s |\n", r.name, r.medianAPI, r.min, r.max, r.medianDB, against, ratio)
	}
	return b.String()
}

// noRulesGroup holds a copy of the Workload CRD without its CEL rules:
// the difference is what the rules cost.
const noRulesGroup = "bench.placer.dev"

// withoutRules returns the CRD with its x-kubernetes-validations gone,
// in group noRulesGroup.
func withoutRules(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	c := crd.DeepCopy()
	c.ObjectMeta = metav1.ObjectMeta{Name: c.Spec.Names.Plural + "." + noRulesGroup}
	c.Spec.Group = noRulesGroup
	var strip func(p *apiextensionsv1.JSONSchemaProps)
	strip = func(p *apiextensionsv1.JSONSchemaProps) {
		if p == nil {
			return
		}
		p.XValidations = nil
		for k, v := range p.Properties {
			strip(&v)
			p.Properties[k] = v
		}
		if p.Items != nil {
			strip(p.Items.Schema)
		}
		if p.AdditionalProperties != nil {
			strip(p.AdditionalProperties.Schema)
		}
	}
	for i := range c.Spec.Versions {
		if c.Spec.Versions[i].Schema != nil {
			strip(c.Spec.Versions[i].Schema.OpenAPIV3Schema)
		}
	}
	return c
}

// measureWriteCosts runs the measure and writes write-costs.md.
func measureWriteCosts(ctx context.Context, o options, n, rounds int) error {
	c, err := local.Start(ctx, local.Options{Name: "write-costs", Dir: filepath.Join(o.out, "write-costs"), BinDir: o.binDir, NoKwok: true})
	if c != nil {
		defer c.Close()
	}
	if err != nil {
		return err
	}
	crds, err := config.CRDs()
	if err != nil {
		return err
	}
	for _, crd := range crds {
		if crd.Spec.Names.Kind == "Workload" {
			crds = append(crds, withoutRules(crd))
			break
		}
	}
	cfg := c.RESTConfig()
	// Installed as the fleet installs them: served before it returns.
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return fmt.Errorf("cannot install CRDs: %w", err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cl, err := client.New(cfg, client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return err
	}
	kinds := writeKinds(cl)
	pids := c.PIDs()
	api, db := pids["kube-apiserver"], pids["etcd"]
	cpuOf := func() (cpuMark, error) {
		a, ok1 := procCPU(api)
		d, ok2 := procCPU(db)
		if !ok1 || !ok2 {
			return cpuMark{}, fmt.Errorf("cannot read the CPU time of the API server (%d) or etcd (%d)", api, db)
		}
		return cpuMark{at: time.Now(), sample: writeCostSample{apiserver: a, etcd: d}}, nil
	}
	// The control plane at rest, writing nothing: its rate is taken off
	// every sample.
	r0, err := cpuOf()
	if err != nil {
		return err
	}
	if err := sleep(ctx, 5*time.Second); err != nil {
		return err
	}
	r1, err := cpuOf()
	if err != nil {
		return err
	}
	rest := r1.minus(r0)
	logf("write costs: at rest, the API server %.3f and etcd %.3f cores", rest.apiserver/rest.wall.Seconds(), rest.etcd/rest.wall.Seconds())
	indices := make([]int, n)
	for i := range indices {
		indices[i] = i
	}
	settled := func() (cpuMark, error) {
		if err := sleep(ctx, settle); err != nil {
			return cpuMark{}, err
		}
		return cpuOf()
	}
	samples := map[string][]writeCostSample{}
	for r := range rounds {
		ns := fmt.Sprintf("round-%d", r)
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return err
		}
		for _, k := range kinds {
			// What the last writes left (watch events, the cache) settles
			// before the clock starts, and what these leave before it
			// stops; the control plane's own rate over the window is taken
			// off.
			if k.prepare != nil {
				if err := k.prepare(ctx, ns); err != nil {
					return fmt.Errorf("%s: %w", k.name, err)
				}
			}
			before, err := settled()
			if err != nil {
				return err
			}
			if err := inParallel(ctx, writeCostWorkers, indices, func(ctx context.Context, i int) error { return k.write(ctx, ns, i) }); err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			after, err := settled()
			if err != nil {
				return err
			}
			samples[k.name] = append(samples[k.name], after.minus(before).lessRest(rest))
		}
		logf("write costs: round %d of %d done", r+1, rounds)
	}
	header := fmt.Sprintf("%s\n\n`go run ./test/bench -write-costs -write-cost-n %d -write-cost-rounds %d`: one local control plane (etcd, kube-apiserver, kube-controller-manager; no nodes), placer's CRDs installed, nothing else running.",
		runLine(o), n, rounds)
	report := writeCostReport(summarizeWriteCosts(kinds, samples, n), n, rounds, header)
	fmt.Println(report)
	return os.WriteFile(filepath.Join(o.out, "write-costs.md"), []byte(report), 0o644)
}

// writeKinds are the writes measured, each built-in one before the placer
// writes compared with it.
func writeKinds(cl client.Client) []writeKind {
	name := func(i int) string { return fmt.Sprintf("w%05d", i) }
	merge := func(s string) client.Patch { return client.RawPatch(types.MergePatchType, []byte(s)) }
	workload := func(ns string, i int) *v1alpha1.Workload {
		return &v1alpha1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)},
			Spec: v1alpha1.WorkloadSpec{TargetDeployment: v1alpha1.TargetDeployment{
				Replicas: ptr.To(int32(1)), Template: corev1.PodTemplateSpec{Spec: podSpec},
			}},
		}
	}
	// The scheduler's decision and the propagator's Ready, as they write them.
	decision := `{"status":{"clusterRef":{"name":"member-0","namespace":"default"},"nominatedClusters":[{"name":"member-0","namespace":"default"}],"conditions":[{"type":"Scheduled","status":"True","reason":"Scheduled","message":"placed on default/member-0 with score 5, best of 3 feasible of 3 clusters","lastTransitionTime":"2026-11-25T00:00:00Z","observedGeneration":1}]}}`
	ready := `{"status":{"replicas":1,"scheduledReplicas":1,"readyReplicas":1,"readyOfDesired":"1/1","conditions":[{"type":"Scheduled","status":"True","reason":"Scheduled","message":"placed on default/member-0 with score 5, best of 3 feasible of 3 clusters","lastTransitionTime":"2026-11-25T00:00:00Z","observedGeneration":1},{"type":"Ready","status":"True","reason":"Available","message":"1/1 replicas ready in default/member-0","lastTransitionTime":"2026-11-25T00:00:01Z","observedGeneration":1}]}}`
	finalizer := `{"metadata":{"finalizers":["compute.placer.dev/propagator"]}}`
	podStatus := `{"status":{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True","lastTransitionTime":"2026-11-25T00:00:00Z"},{"type":"Ready","status":"True","lastTransitionTime":"2026-11-25T00:00:01Z"}]}}`
	// The Workload in the copy of its CRD without CEL rules.
	noRules := func(ns string, i int) (*unstructured.Unstructured, error) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(workload(ns, i))
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion(noRulesGroup + "/" + v1alpha1.Version)
		u.SetKind("Workload")
		return u, nil
	}
	// The Workloads as stored, read by the PUT kind's prepare.
	stored := &storedWorkloads{cl: cl}
	return []writeKind{
		{name: "Pod create", write: func(ctx context.Context, ns string, i int) error {
			return cl.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}, Spec: podSpec})
		}},
		{name: "Pod status patch", write: func(ctx context.Context, ns string, i int) error {
			return cl.Status().Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}}, merge(podStatus))
		}},
		{name: "ConfigMap create", against: "Pod create", write: func(ctx context.Context, ns string, i int) error {
			return cl.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}, Data: map[string]string{"k": "v"}})
		}},
		{name: "Event create", against: "Pod create", write: func(ctx context.Context, ns string, i int) error {
			return cl.Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name(i)},
				InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Workload", Namespace: ns, Name: name(i)},
				Reason:         "Scheduled", Message: "placed on default/member-0", Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "placer-scheduler"},
			})
		}},
		{name: "Workload create", against: "Pod create", write: func(ctx context.Context, ns string, i int) error {
			return cl.Create(ctx, workload(ns, i))
		}},
		{name: "Workload status patch (decision)", against: "Pod status patch", write: func(ctx context.Context, ns string, i int) error {
			return cl.Status().Patch(ctx, workload(ns, i), merge(decision))
		}},
		{name: "Workload status update (decision, PUT)", against: "Workload status patch (decision)", prepare: stored.load, write: func(ctx context.Context, ns string, i int) error {
			// The same decision, another cluster (an update that changes
			// nothing writes nothing), sent whole with the resourceVersion
			// read before the clock started, as a merge patch with an
			// optimistic lock carries it.
			w := stored.get(name(i))
			if w == nil {
				return fmt.Errorf("workload %s/%s not read before the update", ns, name(i))
			}
			w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "member-1", Namespace: "default"}
			w.Status.NominatedClusters = []v1alpha1.ClusterReference{*w.Status.ClusterRef}
			return cl.Status().Update(ctx, w)
		}},
		{name: "Workload finalizer patch", against: "Pod status patch", write: func(ctx context.Context, ns string, i int) error {
			return cl.Patch(ctx, workload(ns, i), merge(finalizer))
		}},
		{name: "Workload status patch (Ready)", against: "Pod status patch", write: func(ctx context.Context, ns string, i int) error {
			return cl.Status().Patch(ctx, workload(ns, i), merge(ready))
		}},
		{name: "Workload create, no CEL rules", against: "Workload create", write: func(ctx context.Context, ns string, i int) error {
			u, err := noRules(ns, i)
			if err != nil {
				return err
			}
			return cl.Create(ctx, u)
		}},
		{name: "Workload status patch (decision), no CEL rules", against: "Workload status patch (decision)", write: func(ctx context.Context, ns string, i int) error {
			u, err := noRules(ns, i)
			if err != nil {
				return err
			}
			return cl.Status().Patch(ctx, u, merge(decision))
		}},
		{name: "PodChaperon create", against: "Pod create", write: func(ctx context.Context, ns string, i int) error {
			return cl.Create(ctx, &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}, Spec: podSpec})
		}},
		{name: "PodChaperon status patch (mirror)", against: "Pod status patch", write: func(ctx context.Context, ns string, i int) error {
			return cl.Status().Patch(ctx, &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}}, merge(podStatus))
		}},
		{name: "PodChaperon annotation patch (is-reserved)", against: "Pod status patch", write: func(ctx context.Context, ns string, i int) error {
			return cl.Patch(ctx, &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name(i)}},
				merge(`{"metadata":{"annotations":{"`+mcv1alpha1.AnnotationIsReserved+`":"true"}}}`))
		}},
	}
}

// storedWorkloads holds a namespace's Workloads as read once, for writes
// that must carry their resourceVersion.
type storedWorkloads struct {
	cl client.Client
	mu sync.Mutex
	by map[string]*v1alpha1.Workload
}

func (s *storedWorkloads) load(ctx context.Context, ns string) error {
	l := &v1alpha1.WorkloadList{}
	if err := s.cl.List(ctx, l, client.InNamespace(ns)); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.by = map[string]*v1alpha1.Workload{}
	for i := range l.Items {
		s.by[l.Items[i].Name] = &l.Items[i]
	}
	return nil
}

func (s *storedWorkloads) get(name string) *v1alpha1.Workload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[name]
}
