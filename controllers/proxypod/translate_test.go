package proxypod

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

func sourcePod(annotations map[string]string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	a := map[string]string{v1alpha1.AnnotationElect: ""}
	for k, v := range annotations {
		a[k] = v
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "team", UID: "u1", Labels: map[string]string{"app": "web"}, Annotations: a},
		Spec: corev1.PodSpec{
			Containers:    []corev1.Container{{Name: "app", Image: "nginx", VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-abcde", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}, {Name: "data", MountPath: "/data"}}}},
			Volumes:       []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}, {Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			NodeSelector:  map[string]string{"disk": "ssd"},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, TerminationGracePeriodSeconds: new(int64),
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func TestIsSource(t *testing.T) {
	enabled := map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}
	cases := map[string]struct {
		pod  *corev1.Pod
		ns   map[string]string
		want bool
	}{
		"annotated, labelled namespace": {sourcePod(nil), enabled, true},
		"annotated, unlabelled":         {sourcePod(nil), map[string]string{}, false},
		"labelled, not annotated":       {&corev1.Pod{}, enabled, false},
		"namespace disabled":            {sourcePod(nil), map[string]string{v1alpha1.LabelSourceNamespace: "disabled"}, false},
	}
	for name, tc := range cases {
		if got := IsSource(tc.pod, tc.ns); got != tc.want {
			t.Errorf("%s: IsSource = %v, want %v", name, got, tc.want)
		}
	}
}

func TestMutate(t *testing.T) {
	proxy, _, errs := Mutate(sourcePod(nil, func(p *corev1.Pod) {
		// What the management cluster's admission computed: its
		// priority class's value and its RuntimeClass's overhead. The
		// member computes its own; a pod that arrives with another
		// overhead is refused there.
		p.Spec.PriorityClassName, p.Spec.Priority = "high", ptr.To(int32(1000))
		p.Spec.RuntimeClassName = ptr.To("gvisor")
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}
	}))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !IsProxy(proxy) || proxy.Spec.NodeSelector[v1alpha1.LabelVirtualKubeletProvider] != v1alpha1.VirtualKubeletProvider || len(proxy.Spec.NodeSelector) != 1 {
		t.Errorf("proxy pod: scheduler %q, nodeSelector %v", proxy.Spec.SchedulerName, proxy.Spec.NodeSelector)
	}
	// Held, being deleted, until its delegate has stopped, bound or not.
	if !slices.Equal(proxy.Finalizers, []string{v1alpha1.FinalizerProxyPod}) {
		t.Errorf("proxy pod finalizers %v, want %s", proxy.Finalizers, v1alpha1.FinalizerProxyPod)
	}
	source, err := SourceOf(proxy)
	if err != nil {
		t.Fatal(err)
	}
	// The pod as written: its node selector kept (it picks the member's
	// nodes), the token volume the management cluster mounted dropped.
	if source.Spec.NodeSelector["disk"] != "ssd" || len(source.Spec.Volumes) != 1 || source.Spec.Volumes[0].Name != "data" || len(source.Spec.Containers[0].VolumeMounts) != 1 {
		t.Errorf("saved source: nodeSelector %v, volumes %v, mounts %v", source.Spec.NodeSelector, source.Spec.Volumes, source.Spec.Containers[0].VolumeMounts)
	}
	if source.Spec.SchedulerName != "" {
		t.Errorf("saved source carries schedulerName %q", source.Spec.SchedulerName)
	}
	if source.Spec.Priority != nil || source.Spec.Overhead != nil || source.Spec.PriorityClassName != "high" || ptr.Deref(source.Spec.RuntimeClassName, "") != "gvisor" {
		t.Errorf("saved source: priority %v, overhead %v (want neither: the member's admission computes them), class %q, runtime class %v",
			source.Spec.Priority, source.Spec.Overhead, source.Spec.PriorityClassName, source.Spec.RuntimeClassName)
	}
}

// TestWebhookForgedProxy: a source pod that comes already marked a proxy
// (a manifest of its own, placer's proxy scheduler) is made a proxy pod
// from what it is, never let through as it came; an unannotated pod or
// one of a namespace not opened is let through untouched.
func TestWebhookForgedProxy(t *testing.T) {
	scheme := apis.NewScheme()
	opened := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}}}
	closed := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}
	own := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "a"}}
	m := &Mutator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(opened, closed, own).Build(), Decoder: admission.NewDecoder(scheme)}
	review := func(p *corev1.Pod) admission.Response {
		raw, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return m.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			Namespace: p.Namespace, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw},
		}})
	}
	forged := sourcePod(map[string]string{v1alpha1.AnnotationSourcePodManifest: `{"spec":{"containers":[{"name":"x","image":"evil"}]}}`},
		func(p *corev1.Pod) { p.Spec.SchedulerName = v1alpha1.ProxySchedulerName })
	r := review(forged)
	var saved string
	for _, op := range r.Patches {
		if strings.HasSuffix(op.Path, "sourcepod-manifest") {
			saved, _ = op.Value.(string)
		}
	}
	if !r.Allowed || !strings.Contains(saved, `"image":"nginx"`) || strings.Contains(saved, "evil") {
		t.Errorf("forged proxy: allowed %v, manifest saved %q; want the pod's own", r.Allowed, saved)
	}
	plain := sourcePod(nil)
	plain.Annotations = nil
	elsewhere := sourcePod(nil)
	elsewhere.Namespace = "other"
	for name, p := range map[string]*corev1.Pod{"unannotated": plain, "namespace not opened": elsewhere} {
		if r := review(p); !r.Allowed || len(r.Patches) != 0 {
			t.Errorf("%s: allowed %v with %d patches; want through untouched", name, r.Allowed, len(r.Patches))
		}
	}
}

func TestMutateRefuses(t *testing.T) {
	cases := map[string]struct {
		pod   *corev1.Pod
		field string
	}{
		"placer's own annotation": {sourcePod(map[string]string{"multicluster.placer.dev/is-allowed": "true"}), "metadata.annotations[multicluster.placer.dev/is-allowed]"},
		"placer's own label":      {sourcePod(nil, func(p *corev1.Pod) { p.Labels["compute.placer.dev/x"] = "y" }), "metadata.labels[compute.placer.dev/x]"},
		"constraints unreadable": {sourcePod(map[string]string{v1alpha1.AnnotationProxyPodSchedulingConstraints: "nodeSelectr: {a: b}"}),
			"metadata.annotations[" + v1alpha1.AnnotationProxyPodSchedulingConstraints + "]"},
		"a template kube-apiserver refuses, named as the pod's field": {sourcePod(nil, func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Not_A_Name" }), "spec.containers[0].name"},
		"a node named": {sourcePod(nil, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" }), "spec.nodeName"},
	}
	for name, tc := range cases {
		_, _, errs := Mutate(tc.pod)
		if len(errs) == 0 || errs[0].Field != tc.field {
			t.Errorf("%s: errors %v, want one of the field %s", name, errs, tc.field)
		}
	}
}

func TestWorkloadFor(t *testing.T) {
	owner := OwnerOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-x1", UID: "u1"}})
	cases := map[string]struct {
		pod  *corev1.Pod
		want func(w *v1alpha1.Workload) string
	}{
		"default: the spec picks the member's nodes, any cluster": {sourcePod(nil), func(w *v1alpha1.Workload) string {
			if w.Spec.ClusterSelector != nil || w.Spec.TargetDeployment.Template.Spec.NodeSelector["disk"] != "ssd" {
				return "clusterSelector set, or the template lost its nodeSelector"
			}
			if w.Name != "web-x1" || *w.Spec.TargetDeployment.Replicas != 1 || w.Labels[v1alpha1.LabelProxyPod] != "u1" || w.OwnerReferences[0].UID != "u1" {
				return "not the gang of one of the pod's Workload"
			}
			if _, ok := w.Spec.TargetDeployment.Template.Annotations[v1alpha1.AnnotationElect]; ok {
				return "Admiralty's keys go to the member"
			}
			return ""
		}},
		"a pod moves make-before-break, a StatefulSet's stops first (it must never run twice)": {sourcePod(nil), func(w *v1alpha1.Workload) string {
			if w.Spec.Placement.Move != v1alpha1.MoveStartBeforeStop {
				return "a ReplicaSet's pod moves " + string(w.Spec.Placement.Move)
			}
			set := sourcePod(nil, func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "s1", Controller: ptr.To(true)}}
			})
			// Saved by the webhook as the proxy pod's manifest, and read
			// back from it.
			proxy, sw, errs := Mutate(set)
			if len(errs) > 0 {
				return errs.ToAggregate().Error()
			}
			saved, err := SourceOf(proxy)
			if err != nil {
				return err.Error()
			}
			again, ferr := WorkloadFor(saved, OwnerOf(proxy))
			if ferr != nil {
				return ferr.Error()
			}
			if sw.Spec.Placement.Move != v1alpha1.MoveStopBeforeStart || again.Spec.Placement.Move != v1alpha1.MoveStopBeforeStart {
				return fmt.Sprintf("a StatefulSet's pod moves %s at admission, %s from its saved manifest; want StopBeforeStart", sw.Spec.Placement.Move, again.Spec.Placement.Move)
			}
			return ""
		}},
		"the pod's time on an unreachable node is its time on an unreachable cluster": {sourcePod(nil, func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](7)}}
		}), func(w *v1alpha1.Workload) string {
			want := []v1alpha1.ClusterToleration{{Key: v1alpha1.TaintClusterUnreachable, Operator: "Exists", Effect: v1alpha1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](7)}}
			return cmp.Diff(want, w.Spec.ClusterTolerations)
		}},
		"constraints from the spec pick clusters": {sourcePod(map[string]string{v1alpha1.AnnotationUseConstraintsFromSpec: ""}, func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{v1alpha1.LabelRegion: "eu", v1alpha1.LabelClusterTargetName: "a"}
			p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}, {Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}}
		}), func(w *v1alpha1.Workload) string {
			want := map[string]v1alpha1.LabelValue{v1alpha1.LabelRegion: "eu", v1alpha1.LabelClusterName: "a"}
			if d := cmp.Diff(want, w.Spec.ClusterSelector); d != "" {
				return "clusterSelector: " + d
			}
			// The pod's own toleration of an unready node is its toleration
			// of an unready cluster.
			if len(w.Spec.ClusterTolerations) != 2 || w.Spec.ClusterTolerations[0].Key != "gpu" || w.Spec.ClusterTolerations[1].Key != v1alpha1.TaintClusterNotReady {
				return fmt.Sprintf("clusterTolerations %+v", w.Spec.ClusterTolerations)
			}
			if w.Spec.TargetDeployment.Template.Spec.NodeSelector != nil || w.Spec.TargetDeployment.Template.Spec.Tolerations != nil {
				return "the template kept the constraints that picked clusters"
			}
			return ""
		}},
		"the annotation's constraints pick clusters, the spec's nodes": {sourcePod(map[string]string{
			v1alpha1.AnnotationProxyPodSchedulingConstraints: `
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
      - matchExpressions: [{key: tier, operator: In, values: [gold]}]
        matchFields: [{key: metadata.name, operator: In, values: [placer.default.b]}]
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 5
      preference:
        matchExpressions: [{key: multicluster.admiralty.io/cluster-target-name, operator: In, values: [c]}]
`,
			v1alpha1.AnnotationNoReservation: "",
		}), func(w *v1alpha1.Workload) string {
			ca := w.Spec.Affinity.ClusterAffinity
			term := ca.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms[0]
			if term.MatchExpressions[0].Key != "tier" || term.MatchFields[0].Values[0] != "b" {
				return "required term not carried over"
			}
			if p := ca.PreferredDuringSchedulingIgnoredDuringExecution[0]; p.Weight != 5 || p.Preference.MatchExpressions[0].Key != v1alpha1.LabelClusterName {
				return "preferred term not carried over"
			}
			if w.Spec.Placement.Mode != v1alpha1.PlacementModeNoReservation {
				return "no-reservation ignored"
			}
			if w.Spec.TargetDeployment.Template.Spec.NodeSelector["disk"] != "ssd" {
				return "the spec's node selector left the template"
			}
			return ""
		}},
	}
	for name, tc := range cases {
		w, err := WorkloadFor(tc.pod, owner)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if msg := tc.want(w); msg != "" {
			t.Errorf("%s: %s", name, msg)
		}
	}
}

func TestVirtualNodeName(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-a", Name: "eu.west-1"}
	got, ok := v1alpha1.ClusterOfVirtualNode(v1alpha1.VirtualNodeName(key))
	if !ok || got != key {
		t.Errorf("round trip of %s: %v %v", key, got, ok)
	}
	if _, ok := v1alpha1.ClusterOfVirtualNode("node-1"); ok {
		t.Error("an ordinary node taken for a virtual one")
	}
}

// TestWebhookRefusesWhatNoClusterAdmits: a source pod that no cluster
// could receive is refused at admission, naming why, as the Workload path
// refuses it per cluster: no cluster serves its namespace, or none that
// does admits it at its Pod Security level.
func TestWebhookRefusesWhatNoClusterAdmits(t *testing.T) {
	scheme := apis.NewScheme()
	opened := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{v1alpha1.LabelSourceNamespace: v1alpha1.SourceNamespaceEnabled}}}
	others := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "p"}}
	strict := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s"}, Spec: v1alpha1.KubernetesClusterSpec{PodSecurity: v1alpha1.PodSecurityRestricted}}
	for name, tc := range map[string]struct {
		clusters []client.Object
		field    string
	}{
		"no cluster serves the namespace":          {[]client.Object{others}, "metadata.namespace"},
		"the only cluster that does is too strict": {[]client.Object{others, strict}, "spec"},
	} {
		m := &Mutator{Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(append(tc.clusters, opened)...).Build(), Decoder: admission.NewDecoder(scheme)}
		raw, err := json.Marshal(sourcePod(nil))
		if err != nil {
			t.Fatal(err)
		}
		r := m.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Namespace: "team", Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: raw}}})
		if r.Allowed || r.Result == nil || r.Result.Details == nil || len(r.Result.Details.Causes) == 0 || r.Result.Details.Causes[0].Field != tc.field {
			t.Errorf("%s: allowed %v, result %+v; want refused naming %s", name, r.Allowed, r.Result, tc.field)
		}
	}
}

// TestMergeNode: placer sets the cluster's labels, its taint and cordon on
// a virtual node, removes a label the cluster dropped, and keeps what
// others set (a label, the node lifecycle controller's taint).
func TestMergeNode(t *testing.T) {
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", Labels: map[string]string{"tier": "gold", "old": "x"}}}
	node := VirtualNode(kc, KubeletEndpoint{})
	node.Labels["team.example.com/owner"] = "ops"
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute})
	delete(kc.Labels, "old")
	kc.Spec.Unschedulable = true
	merged, changed := mergeNode(node, VirtualNode(kc, KubeletEndpoint{}))
	if !changed {
		t.Fatal("no change seen")
	}
	if _, ok := merged.Labels["old"]; ok {
		t.Error("a label the cluster dropped stayed")
	}
	if merged.Labels["tier"] != "gold" || merged.Labels["team.example.com/owner"] != "ops" || merged.Labels[v1alpha1.LabelClusterTargetName] != "a" {
		t.Errorf("labels %v", merged.Labels)
	}
	if len(merged.Spec.Taints) != 2 || !merged.Spec.Unschedulable {
		t.Errorf("taints %v, unschedulable %v; want placer's and the lifecycle controller's, cordoned", merged.Spec.Taints, merged.Spec.Unschedulable)
	}
	if _, again := mergeNode(merged, VirtualNode(kc, KubeletEndpoint{})); again {
		t.Error("a second merge changed the node again")
	}
}

// TestVirtualNodeProviderID: a virtual node carries a provider ID of
// placer's own, and one made before it had none gets it (set once): a
// cloud's node lifecycle controller deletes a NotReady node with none it
// can find, and the pod garbage collector then force-deletes its proxy
// pods. Before, virtual nodes had none.
func TestVirtualNodeProviderID(t *testing.T) {
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "a"}}
	want := VirtualNode(kc, KubeletEndpoint{})
	if want.Spec.ProviderID != "placer://fleet/a" {
		t.Errorf("providerID %q, want placer://fleet/a", want.Spec.ProviderID)
	}
	before := want.DeepCopy()
	before.Spec.ProviderID = ""
	merged, changed := mergeNode(before, want)
	if !changed || merged.Spec.ProviderID != want.Spec.ProviderID {
		t.Errorf("a node made without one: providerID %q after the merge (changed %t)", merged.Spec.ProviderID, changed)
	}
	other := want.DeepCopy()
	other.Spec.ProviderID = "aws:///eu-west-1a/i-0123"
	if merged, _ := mergeNode(other, want); merged.Spec.ProviderID != other.Spec.ProviderID {
		t.Errorf("a providerID set already was changed to %q (the API server refuses it)", merged.Spec.ProviderID)
	}
}

// TestVirtualNodeLongNames: a cluster whose namespace and name make a
// node name longer than a label value still gets a Node the API server
// takes. Before, its kubernetes.io/hostname label (the node's name) was
// refused, so the Node was never made, its proxy pods were bound to a
// node that did not exist, and the pod garbage collector deleted them
// again and again.
func TestVirtualNodeLongNames(t *testing.T) {
	for _, kc := range []*v1alpha1.KubernetesCluster{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-payments-production", Name: "aws-eu-west-1-production-primary"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: strings.Repeat("a", 100)}},
	} {
		n := VirtualNode(kc, KubeletEndpoint{})
		if errs := metav1validation.ValidateLabels(n.Labels, field.NewPath("metadata", "labels")); len(errs) > 0 {
			t.Errorf("%s/%s: the virtual node's labels are refused: %v", kc.Namespace, kc.Name, errs.ToAggregate())
		}
		if n.Name != v1alpha1.VirtualNodeName(types.NamespacedName{Namespace: kc.Namespace, Name: kc.Name}) {
			t.Errorf("node %s, want the cluster's virtual node name", n.Name)
		}
	}
	// A short name keeps its labels as they are.
	short := VirtualNode(&v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}, KubeletEndpoint{})
	if short.Labels[corev1.LabelHostname] != "placer.default.a" || short.Labels[v1alpha1.LabelClusterName] != "a" {
		t.Errorf("labels of a short name changed: %v", short.Labels)
	}
}
