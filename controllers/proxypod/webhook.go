package proxypod

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/apis/compute/validation"
)

// WebhookPath is where the manager serves the mutating webhook.
const WebhookPath = "/mutate-v1-pod"

// Mutator turns a source pod into a proxy pod at admission. The
// MutatingWebhookConfiguration sends it only the pods it should see (its
// namespaceSelector and matchConditions, config/webhook); it checks both
// again, reading the namespace's labels through reader.
type Mutator struct {
	Reader client.Reader
	// Live reads a namespace the cache does not show opened yet
	// (namespaceLabels); the cache alone when nil.
	Live    client.Reader
	Decoder admission.Decoder
	// Signer signs the source manifest it saves (Certs), so that the
	// proxy pods' controller places only one it wrote; none when nil.
	Signer interface{ Sign(manifest []byte) string }
}

var _ admission.Handler = &Mutator{}

// Handle refuses a source pod placer could not place, naming the field,
// and lets every other pod through untouched.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	pod := &corev1.Pod{}
	if err := m.Decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	pod.Namespace = req.Namespace
	labels, err := namespaceLabels(ctx, m.Reader, m.Live, pod)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if !IsSource(pod, labels) {
		return admission.Allowed("not a source pod")
	}
	// A source pod is always made a proxy pod here, whatever proxy marks
	// it came with: the manifest placer places is the one saved now.
	proxy, w, errs := Mutate(pod)
	if len(errs) == 0 {
		errs = m.admittedSomewhere(ctx, w, labels)
	}
	if len(errs) > 0 {
		status := kerrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, podName(pod), errs).Status()
		status.Message = "placer refuses the source pod: " + errs.ToAggregate().Error()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &status}}
	}
	if m.Signer != nil {
		proxy.Annotations[v1alpha1.AnnotationSourceSignature] = m.Signer.Sign([]byte(proxy.Annotations[v1alpha1.AnnotationSourcePodManifest]))
	}
	raw, err := json.Marshal(proxy)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

func podName(p *corev1.Pod) string {
	if p.Name != "" {
		return p.Name
	}
	return p.GenerateName
}

// Mutate returns the proxy pod of a source pod: the source saved as it
// was written (but what the management cluster's own admission added for
// it), scheduled by placer only onto virtual nodes. It refuses, naming
// the field, what the Workload path refuses too: placer's own keys, a
// template kube-apiserver would refuse, a constraints annotation it
// cannot read.
func Mutate(pod *corev1.Pod) (*corev1.Pod, *v1alpha1.Workload, field.ErrorList) {
	if pod.Spec.NodeName != "" {
		return nil, nil, field.ErrorList{field.Forbidden(field.NewPath("spec", "nodeName"), "a source pod is bound by placer, to its cluster's virtual node; it may not name a node")}
	}
	pod = pod.DeepCopy() // the caller's pod stays as it came
	delete(pod.Annotations, v1alpha1.AnnotationSourcePodManifest)
	source := savedSource(pod)
	w, ferr := WorkloadFor(source, OwnerOf(pod))
	if ferr != nil {
		return nil, nil, field.ErrorList{ferr}
	}
	if errs := reservedKeys(pod); len(errs) > 0 {
		return nil, nil, errs
	}
	if errs := podPaths(validation.ValidateTemplate(w)); len(errs) > 0 {
		return nil, nil, errs
	}
	manifest, err := json.Marshal(source)
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	proxy := pod.DeepCopy()
	if proxy.Annotations == nil {
		proxy.Annotations = map[string]string{}
	}
	proxy.Annotations[v1alpha1.AnnotationSourcePodManifest] = string(manifest)
	// Held, being deleted, until its delegate has stopped, bound or not.
	meta.AddFinalizer(proxy, v1alpha1.FinalizerProxyPod)
	proxy.Spec.SchedulerName = v1alpha1.ProxySchedulerName
	proxy.Spec.NodeSelector = map[string]string{v1alpha1.LabelVirtualKubeletProvider: v1alpha1.VirtualKubeletProvider}
	proxy.Spec.Affinity = nil
	proxy.Spec.TopologySpreadConstraints = nil
	// Virtual nodes are tainted for proxy pods alone; a cluster's trouble
	// moves its pods by placer's move policy, never by the management
	// cluster's taint eviction.
	proxy.Spec.Tolerations = []corev1.Toleration{
		{Key: v1alpha1.LabelVirtualKubeletProvider, Operator: corev1.TolerationOpEqual, Value: v1alpha1.VirtualKubeletProvider, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	return proxy, w, nil
}

// admittedSomewhere refuses, at admission, a pod no cluster could ever
// receive, as the Workload path refuses it per cluster: no
// KubernetesCluster serves its namespace (tenancy), or none that does
// admits its template at that cluster's Pod Security level. Whether a
// cluster has room, or is Ready, is the scheduler's to say, on the pod.
func (m *Mutator) admittedSomewhere(ctx context.Context, w *v1alpha1.Workload, nsLabels map[string]string) field.ErrorList {
	cbs := &v1alpha1.ClusterBindingList{}
	if err := m.Reader.List(ctx, cbs, client.InNamespace(w.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata", "namespace"), err)}
	}
	kcs := &v1alpha1.KubernetesClusterList{}
	if err := m.Reader.List(ctx, kcs, client.UnsafeDisableDeepCopy); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata", "namespace"), err)}
	}
	bound, verdict := v1alpha1.BoundNamespaces(cbs.Items), validation.Judge(w)
	served, refusal := 0, ""
	for i := range kcs.Items {
		kc := &kcs.Items[i]
		reason, msg := verdict.Admit(kc, nsLabels, bound)
		switch reason {
		case "":
			return nil
		case validation.ReasonNamespaceNotServed:
		default:
			served++
			if refusal == "" {
				refusal = msg
			}
		}
	}
	if served == 0 {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "namespace"),
			fmt.Sprintf("no KubernetesCluster serves the pods of namespace %s: its own, or one offered to it and bound by a ClusterBinding there", w.Namespace))}
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec"), fmt.Sprintf("no cluster that serves namespace %s admits the pod (%d refuse it): %s", w.Namespace, served, refusal))}
}

// podPaths re-roots the errors of a Workload's template at the pod the
// user wrote: spec.targetDeployment.template.spec.x is the pod's spec.x.
func podPaths(errs field.ErrorList) field.ErrorList {
	prefix := validation.TemplatePath.String() + "."
	for _, e := range errs {
		e.Field = strings.TrimPrefix(e.Field, prefix)
	}
	return errs
}

// reservedKeys refuses placer's own labels and annotations on a source
// pod, as the Workload API refuses them in a template.
func reservedKeys(pod *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	for k := range pod.Labels {
		if v1alpha1.IsReservedKey(k) {
			errs = append(errs, field.Forbidden(field.NewPath("metadata", "labels").Key(k), "placer's own key"))
		}
	}
	for k := range pod.Annotations {
		if v1alpha1.IsReservedKey(k) {
			errs = append(errs, field.Forbidden(annotationsPath.Key(k), "placer's own key"))
		}
	}
	return errs
}

// savedSource is the pod as its author wrote it (its controller's
// reference included, which picks its move policy: WorkloadFor): without
// the service account token volume the management cluster's admission
// mounted (the member mounts its own), the priority it computed (the
// member computes its own from the class), the overhead its RuntimeClass
// admission set (the member's sets its own) and the default
// ServiceAccount it named.
func savedSource(pod *corev1.Pod) *corev1.Pod {
	s := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: pod.Name, GenerateName: pod.GenerateName, Namespace: pod.Namespace,
		Labels: pod.Labels, Annotations: pod.Annotations, OwnerReferences: pod.OwnerReferences,
	}, Spec: *pod.Spec.DeepCopy()}
	var dropped []string
	vols := s.Spec.Volumes[:0]
	for _, v := range s.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			dropped = append(dropped, v.Name)
			continue
		}
		vols = append(vols, v)
	}
	s.Spec.Volumes = vols
	if len(s.Spec.Volumes) == 0 {
		s.Spec.Volumes = nil
	}
	for _, cs := range [][]corev1.Container{s.Spec.InitContainers, s.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = withoutMounts(cs[i].VolumeMounts, dropped)
		}
	}
	s.Spec.Priority, s.Spec.PreemptionPolicy = nil, nil
	// The management cluster's RuntimeClass admission set it from its own
	// RuntimeClass; the member's sets it from the member's, and refuses a
	// pod that comes with another.
	s.Spec.Overhead = nil
	// The namespace's default ServiceAccount is the member's own; another
	// one goes with the pods, as a Workload's does.
	if s.Spec.ServiceAccountName == "default" {
		s.Spec.ServiceAccountName, s.Spec.DeprecatedServiceAccount = "", ""
	}
	return s
}

func withoutMounts(ms []corev1.VolumeMount, names []string) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range ms {
		if !slices.Contains(names, m.Name) {
			out = append(out, m)
		}
	}
	return out
}

// namespaceLabels returns the labels of the pod's namespace as IsSource
// needs them: from cached, and from live too when the cache does not show
// the namespace opened to an elected pod. The API server matched its
// webhook's namespaceSelector on the namespace as it is now; a label
// added a moment ago may not be in a replica's cache yet, which would let
// a source pod through unmutated (onto one of the management cluster's
// own nodes), or leave a proxy pod with no Workload and nothing to bring
// it back. live may be nil: the cache alone.
func namespaceLabels(ctx context.Context, cached, live client.Reader, pod *corev1.Pod) (map[string]string, error) {
	ns := &corev1.Namespace{}
	if err := cached.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	_, elect := pod.Annotations[v1alpha1.AnnotationElect]
	if !elect || IsSource(pod, ns.Labels) || live == nil {
		return ns.Labels, nil
	}
	if err := live.Get(ctx, client.ObjectKey{Name: pod.Namespace}, ns); err != nil {
		return nil, err
	}
	return ns.Labels, nil
}
