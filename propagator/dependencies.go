package propagator

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Kinds of the objects that go with the pods.
const (
	KindConfigMap      = "ConfigMap"
	KindSecret         = "Secret"
	KindServiceAccount = "ServiceAccount"
)

// How a copy in a member says whose it is. The label marks every copy
// placer made; the source is the management object it copies; used-by
// are the Workloads whose pods use it there (their UIDs, sorted): the
// last one to let go deletes it. State in the member's API, so any
// manager may pick it up.
const (
	LabelDependency       = "compute.placer.dev/dependency"
	AnnotationSource      = "compute.placer.dev/source"
	AnnotationUsedBy      = "compute.placer.dev/used-by"
	defaultServiceAccount = "default"
)

// Ref is an object of the Workload's namespace that goes with its pods.
type Ref struct {
	Kind string
	Name string
	// Optional: every reference to it says optional: true, so a missing
	// one holds nothing (the kubelet starts the pods without it).
	Optional bool
}

func (r Ref) String() string { return r.Kind + " " + r.Name }

// TemplateRefs are the ConfigMaps, Secrets and ServiceAccount a pod
// template references: env valueFrom and envFrom, volumes (projected
// ones too), imagePullSecrets, the Secrets of volume plugins, and
// serviceAccountName unless it is the namespace's default (which every
// namespace has). The kubelet's own visitors find the names.
func TemplateRefs(spec *corev1.PodSpec) []Ref {
	pod := &corev1.Pod{Spec: *spec}
	optional := optionalRefs(spec)
	var out []Ref
	for _, k := range []struct {
		kind  string
		visit func(*corev1.Pod, podutil.Visitor) bool
	}{{KindConfigMap, podutil.VisitPodConfigmapNames}, {KindSecret, podutil.VisitPodSecretNames}} {
		all := map[string]int{}
		k.visit(pod, func(name string) bool {
			all[name]++
			return true
		})
		for _, name := range slices.Sorted(maps.Keys(all)) {
			out = append(out, Ref{Kind: k.kind, Name: name, Optional: optional[Ref{Kind: k.kind, Name: name}] == all[name]})
		}
	}
	sa := spec.ServiceAccountName
	if sa == "" {
		sa = spec.DeprecatedServiceAccount //nolint:staticcheck // still honoured by the API server.
	}
	if sa != "" && sa != defaultServiceAccount {
		out = append(out, Ref{Kind: KindServiceAccount, Name: sa})
	}
	return out
}

// optionalRefs counts, per ConfigMap and Secret, the references that say
// optional: true (only env, envFrom and configMap, secret and projected
// volumes can). Keys have Optional false.
func optionalRefs(spec *corev1.PodSpec) map[Ref]int {
	n := map[Ref]int{}
	opt := func(kind, name string, o *bool) {
		if o != nil && *o {
			n[Ref{Kind: kind, Name: name}]++
		}
	}
	podutil.VisitContainers(spec, podutil.AllContainers, func(c *corev1.Container, _ podutil.ContainerType) bool {
		for _, e := range c.EnvFrom {
			if r := e.ConfigMapRef; r != nil {
				opt(KindConfigMap, r.Name, r.Optional)
			}
			if r := e.SecretRef; r != nil {
				opt(KindSecret, r.Name, r.Optional)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				opt(KindConfigMap, r.Name, r.Optional)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				opt(KindSecret, r.Name, r.Optional)
			}
		}
		return true
	})
	for _, v := range spec.Volumes {
		if r := v.ConfigMap; r != nil {
			opt(KindConfigMap, r.Name, r.Optional)
		}
		if r := v.Secret; r != nil {
			opt(KindSecret, r.SecretName, r.Optional)
		}
		if v.Projected == nil {
			continue
		}
		for _, p := range v.Projected.Sources {
			if r := p.ConfigMap; r != nil {
				opt(KindConfigMap, r.Name, r.Optional)
			}
			if r := p.Secret; r != nil {
				opt(KindSecret, r.Name, r.Optional)
			}
		}
	}
	return n
}

// Refs are what goes with the Workload's pods: TemplateRefs and the
// Secrets and ConfigMaps of spec.resources (a name twice is one Ref, not
// optional if either says so). Claims are the other objects of
// spec.resources, whose connection Secrets go.
func Refs(w *v1alpha1.Workload) (refs []Ref, claims []v1alpha1.ResourceReference) {
	refs = TemplateRefs(&w.Spec.TargetDeployment.Template.Spec)
	for _, r := range w.Spec.Resources {
		if r.APIVersion == "v1" || r.APIVersion == "" {
			refs = AddRef(refs, Ref{Kind: r.Kind, Name: r.Name})
			continue
		}
		claims = append(claims, r)
	}
	return refs, claims
}

// WatchedRefs are Refs and what any override's env may add: everything a
// cluster's pods may need, so that one set of watches serves every
// cluster.
func WatchedRefs(w *v1alpha1.Workload) (refs []Ref, claims []v1alpha1.ResourceReference) {
	refs, claims = Refs(w)
	for _, o := range w.Spec.Overrides {
		if len(o.Env) == 0 {
			continue
		}
		for _, r := range TemplateRefs(&corev1.PodSpec{Containers: []corev1.Container{{Env: o.Env}}}) {
			refs = AddRef(refs, r)
		}
	}
	return refs, claims
}

// AddRef adds r to refs, once: a Ref that is required anywhere is required.
func AddRef(refs []Ref, r Ref) []Ref {
	for i := range refs {
		if refs[i].Kind == r.Kind && refs[i].Name == r.Name {
			refs[i].Optional = refs[i].Optional && r.Optional
			return refs
		}
	}
	return append(refs, r)
}

// Source is how a copy names the object it copies: its management
// namespace and name.
func Source(namespace, name string) string { return namespace + "/" + name }

// NewCopy returns the copy of a source object (a ConfigMap, Secret or
// ServiceAccount) for a member namespace: the data and nothing of the
// source's metadata but its name, marked as placer's with its source and
// no user yet. A ServiceAccount keeps its imagePullSecrets and
// automountServiceAccountToken, not its token Secrets.
func NewCopy(src client.Object, namespace string) client.Object {
	om := metav1.ObjectMeta{
		Name: src.GetName(), Namespace: namespace,
		Labels:      map[string]string{LabelDependency: "true"},
		Annotations: map[string]string{AnnotationSource: Source(src.GetNamespace(), src.GetName())},
	}
	switch s := src.(type) {
	case *corev1.ConfigMap:
		return &corev1.ConfigMap{ObjectMeta: om, Data: s.Data, BinaryData: s.BinaryData, Immutable: s.Immutable}
	case *corev1.Secret:
		return &corev1.Secret{ObjectMeta: om, Type: s.Type, Data: s.Data, Immutable: s.Immutable}
	case *corev1.ServiceAccount:
		return &corev1.ServiceAccount{ObjectMeta: om, ImagePullSecrets: s.ImagePullSecrets, AutomountServiceAccountToken: s.AutomountServiceAccountToken}
	}
	return nil
}

// IsCopy reports whether obj in a member is a copy placer made, of any source.
func IsCopy(obj client.Object) bool { return obj.GetLabels()[LabelDependency] == "true" }

// CopiedFrom reports whether obj in a member is placer's copy of source.
func CopiedFrom(obj client.Object, source string) bool {
	return IsCopy(obj) && obj.GetAnnotations()[AnnotationSource] == source
}

// Sync makes a copy's data (and a Secret's type) that of want (a
// NewCopy); it reports whether anything changed.
func Sync(cur, want client.Object) bool {
	switch c := cur.(type) {
	case *corev1.ConfigMap:
		w := want.(*corev1.ConfigMap)
		if apiequality.Semantic.DeepEqual(c.Data, w.Data) && apiequality.Semantic.DeepEqual(c.BinaryData, w.BinaryData) {
			return false
		}
		c.Data, c.BinaryData = w.Data, w.BinaryData
	case *corev1.Secret:
		w := want.(*corev1.Secret)
		if apiequality.Semantic.DeepEqual(c.Data, w.Data) && c.Type == w.Type {
			return false
		}
		c.Data, c.Type = w.Data, w.Type
	case *corev1.ServiceAccount:
		w := want.(*corev1.ServiceAccount)
		if apiequality.Semantic.DeepEqual(c.ImagePullSecrets, w.ImagePullSecrets) && apiequality.Semantic.DeepEqual(c.AutomountServiceAccountToken, w.AutomountServiceAccountToken) {
			return false
		}
		c.ImagePullSecrets, c.AutomountServiceAccountToken = w.ImagePullSecrets, w.AutomountServiceAccountToken
	}
	return true
}

// Users are the UIDs of the Workloads whose pods use a copy.
func Users(obj client.Object) []string {
	v := obj.GetAnnotations()[AnnotationUsedBy]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// SetUser adds (use) or removes the Workload uid from a copy's users; it
// reports whether they changed.
func SetUser(obj client.Object, uid string, use bool) bool {
	users := Users(obj)
	has := slices.Contains(users, uid)
	if has == use {
		return false
	}
	if use {
		users = append(users, uid)
		slices.Sort(users)
	} else {
		users = slices.DeleteFunc(users, func(u string) bool { return u == uid })
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[AnnotationUsedBy] = strings.Join(users, ",")
	obj.SetAnnotations(a)
	return true
}

// Immutable reports whether a copy's data may not change.
func Immutable(obj client.Object) bool {
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		return o.Immutable != nil && *o.Immutable
	case *corev1.Secret:
		return o.Immutable != nil && *o.Immutable
	}
	return false
}

// Replaces reports whether the copy cur cannot become want in place: it
// is immutable, or it is a Secret of another type (which the API server
// never lets change). Such a copy is deleted and made again.
func Replaces(cur, want client.Object) bool {
	if Immutable(cur) {
		return true
	}
	c, ok := cur.(*corev1.Secret)
	return ok && c.Type != want.(*corev1.Secret).Type
}

// NewObject returns an empty object of a dependency kind.
func NewObject(kind string) client.Object {
	switch kind {
	case KindConfigMap:
		return &corev1.ConfigMap{}
	case KindSecret:
		return &corev1.Secret{}
	case KindServiceAccount:
		return &corev1.ServiceAccount{}
	}
	return nil
}
