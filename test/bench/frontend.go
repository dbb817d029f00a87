package main

import (
	"context"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/fleetwait"
	"github.com/placer-dev/placer/internal/promtext"
)

// nsFrontend is the phase of ordinary pods through the front end
// (Admiralty's source pods): one Deployment of as many replicas as the
// Workload phases have pods, its pod template annotated to be placed.
const nsFrontend = "frontend"

// frontendDeployment is the phase's Deployment, at replicas.
func frontendDeployment(replicas int) *appsv1.Deployment {
	labels := map[string]string{"group": nsFrontend}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: nsFrontend, Name: nsFrontend}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(int32(replicas)),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{v1alpha1.AnnotationElect: ""}},
			Spec:       podSpec,
		},
	}}
}

// sourcePod is a source pod as the offered-load measure creates one: a
// bare Pod of the front end's namespace, annotated to be placed (a source
// pod "whatever created it").
func sourcePod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: nsFrontend, Name: name, Annotations: map[string]string{v1alpha1.AnnotationElect: ""}},
		Spec:       *podSpec.DeepCopy(),
	}
}

// watchProxyPods records the front end's pods in the management cluster:
// a record per proxy pod, created when this process first sees it, Running
// when the proxy pod shows Running (its delegate's status, followed). Its
// Workload (named as the pod) stamps 'scheduled', its delegate 'bound'.
func (r *recorder) watchProxyPods(ctx context.Context, cfg *rest.Config) error {
	factory := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(nsFrontend))
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(handler(func(o any) { r.proxyPod(o) })); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return nil
}

func (r *recorder) proxyPod(o any) {
	p, ok := o.(*corev1.Pod)
	if !ok || p.DeletionTimestamp != nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.recs[nsFrontend+"/"+p.Name]
	if rec == nil {
		rec = &record{phase: nsFrontend, name: p.Name, replicas: 1, created: now, proxy: true}
		r.addLocked(rec)
	}
	if p.Status.Phase == corev1.PodRunning && rec.running.IsZero() {
		rec.running = now
		r.done[nsFrontend]++
		r.notify()
	}
}

// runFrontend creates the phase's Deployment and waits for its pods.
func runFrontend(ctx context.Context, mc client.Client, rec *recorder, pods int, timeout time.Duration) error {
	start := time.Now()
	if err := mc.Create(ctx, frontendDeployment(pods)); err != nil {
		return err
	}
	got := rec.wait(ctx, nsFrontend, pods, timeout)
	logf("%s: %d of %d proxy pods Running in %s", nsFrontend, got, pods, time.Since(start).Round(time.Millisecond))
	return nil
}

// cleanFrontend deletes the burst's Deployment, if any, and every source
// pod, and waits until they are gone from the management cluster: their
// Workloads go first (each proxy pod's controller deletes its own), then
// the pods.
func cleanFrontend(ctx context.Context, mc client.WithWatch) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	d := frontendDeployment(0)
	if err := mc.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground)); client.IgnoreNotFound(err) != nil {
		return err
	}
	// Gone in the foreground: its ReplicaSet and pods went first, and
	// no ReplicaSet replaces the source pods deleted below.
	if err := fleetwait.Gone(ctx, mc, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: nsFrontend}}, &appsv1.DeploymentList{}); err != nil {
		return err
	}
	if err := mc.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(nsFrontend)); err != nil {
		return err
	}
	return fleetwait.Gone(ctx, mc, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: nsFrontend}}, &corev1.PodList{})
}

// histogram is a Prometheus histogram's cumulative buckets (upper bound
// to count), sum and count.
type histogram struct {
	buckets    map[float64]float64
	sum, count float64
}

// scrapeWebhooks reads the management API server's histograms of the
// time its calls of placer's mutating webhooks took
// (apiserver_admission_webhook_admission_duration_seconds), by webhook
// (proxy-pods.placer.dev, workloads.placer.dev), summed over operations:
// what each create waited for the webhook.
func scrapeWebhooks(ctx context.Context, cfg *rest.Config) (map[string]histogram, error) {
	out := map[string]histogram{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	b, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	err = promtext.Each(b, func(_ string, l map[string]string, m *dto.Metric) {
		name := l["name"]
		if !strings.HasSuffix(name, ".placer.dev") {
			return
		}
		h, ok := out[name]
		if !ok {
			h = histogram{buckets: map[float64]float64{}}
		}
		hm := m.GetHistogram()
		h.sum += hm.GetSampleSum()
		h.count += float64(hm.GetSampleCount())
		for _, bk := range hm.GetBucket() {
			h.buckets[bk.GetUpperBound()] += float64(bk.GetCumulativeCount())
		}
		out[name] = h
	}, "apiserver_admission_webhook_admission_duration_seconds")
	return out, err
}

func (h histogram) minus(before histogram) histogram {
	out := histogram{buckets: map[float64]float64{}, sum: h.sum - before.sum, count: h.count - before.count}
	for le, n := range h.buckets {
		out.buckets[le] = n - before.buckets[le]
	}
	return out
}

// quantile estimates the q-quantile by linear interpolation within the
// bucket that holds it (as Prometheus' histogram_quantile), NaN for an
// empty histogram.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(h.buckets))
	for le := range h.buckets {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	rank, lower, below := q*h.count, 0.0, 0.0
	for _, le := range bounds {
		n := h.buckets[le]
		if n >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			return lower + (le-lower)*(rank-below)/(n-below)
		}
		lower, below = le, n
	}
	return lower
}

// within is the share of observations at most le (a bucket bound).
func (h histogram) within(le float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	return h.buckets[le] / h.count
}
