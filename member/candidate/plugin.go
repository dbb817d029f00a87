// Package candidate is the kube-scheduler plugin of placer's candidate
// scheduler. It turns a target cluster's real kube-scheduler into the
// target side of the handshake: a candidate pod is scheduled for real,
// reserved (Reserve marks its PodChaperon is-reserved=true), and held at
// Permit until the management side marks the chaperon is-allowed=true.
package candidate

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// Name of the plugin in the scheduler configuration.
const Name = "PlacerCandidate"

// ProfileName is the schedulerName of candidate pods.
const ProfileName = mcv1alpha1.CandidateSchedulerName

// DefaultPermitTimeout bounds how long a reserved candidate waits for is-allowed.
const DefaultPermitTimeout = 30 * time.Second

var chaperons = mcv1alpha1.GroupVersion.WithResource("podchaperons")

// Plugin reserves candidate pods and holds them until their chaperon is allowed.
type Plugin struct {
	handle  fwk.Handle
	client  dynamic.Interface
	lister  cache.GenericLister
	timeout time.Duration
}

var (
	_ fwk.ReservePlugin = &Plugin{}
	_ fwk.PermitPlugin  = &Plugin{}
)

// NewFactory returns the plugin factory with the given permit timeout.
func NewFactory(timeout time.Duration) func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, _ runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return New(ctx, h, timeout)
	}
}

// New starts an informer on PodChaperons and returns the plugin. The
// informer releases a waiting pod as soon as its chaperon is allowed: no polling.
func New(ctx context.Context, h fwk.Handle, timeout time.Duration) (*Plugin, error) {
	if timeout <= 0 {
		timeout = DefaultPermitTimeout
	}
	dc, err := dynamic.NewForConfig(h.KubeConfig())
	if err != nil {
		return nil, err
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dc, 0)
	inf := factory.ForResource(chaperons)
	p := &Plugin{handle: h, client: dc, lister: inf.Lister(), timeout: timeout}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.release,
		UpdateFunc: func(_, o any) { p.release(o) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return p, nil
}

// Name of the plugin.
func (p *Plugin) Name() string { return Name }

// chaperonOf returns the name of the pod's controlling PodChaperon, if any.
func chaperonOf(pod *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != "PodChaperon" || ref.APIVersion != mcv1alpha1.GroupVersion.String() {
		return "", false
	}
	return ref.Name, true
}

// Reserve marks the pod's chaperon is-reserved=true: this cluster has a
// node for the candidate.
func (p *Plugin) Reserve(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	name, ok := chaperonOf(pod)
	if !ok {
		return nil
	}
	if err := p.annotate(ctx, pod.Namespace, name, `"true"`); err != nil {
		return fwk.AsStatus(err)
	}
	return nil
}

// Unreserve clears is-reserved: the reservation was given up.
func (p *Plugin) Unreserve(ctx context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	name, ok := chaperonOf(pod)
	if !ok {
		return
	}
	if err := p.annotate(ctx, pod.Namespace, name, "null"); err != nil {
		klog.FromContext(ctx).Error(err, "cannot clear is-reserved", "chaperon", klog.KRef(pod.Namespace, name))
	}
}

func (p *Plugin) annotate(ctx context.Context, ns, name, value string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + mcv1alpha1.AnnotationIsReserved + `":` + value + `}}}`)
	_, err := p.client.Resource(chaperons).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// Permit lets an allowed candidate bind and holds any other until its
// chaperon is allowed or the timeout passes (then the pod is unreserved and
// retried).
func (p *Plugin) Permit(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) (*fwk.Status, time.Duration) {
	name, ok := chaperonOf(pod)
	if !ok || p.allowed(pod.Namespace, name) {
		return nil, 0
	}
	return fwk.NewStatus(fwk.Wait, "waiting for the management cluster to allow the candidate"), p.timeout
}

func (p *Plugin) allowed(ns, name string) bool {
	o, err := p.lister.ByNamespace(ns).Get(name)
	if err != nil {
		return false
	}
	u, ok := o.(*unstructured.Unstructured)
	return ok && u.GetAnnotations()[mcv1alpha1.AnnotationIsAllowed] == "true"
}

// release lets the waiting pod of an allowed chaperon bind.
func (p *Plugin) release(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok || u.GetAnnotations()[mcv1alpha1.AnnotationIsAllowed] != "true" {
		return
	}
	// Candidate pods carry their chaperon's name; few pods wait at a time.
	p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		pod := wp.GetPod()
		if name, ok := chaperonOf(pod); ok && pod.Namespace == u.GetNamespace() && name == u.GetName() {
			wp.Allow(Name)
		}
	})
}
