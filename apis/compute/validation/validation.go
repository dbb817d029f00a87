// Package validation checks what the API server's schema and CEL rules
// cannot: a Workload's pod template, with the upstream pod validation of
// kube-apiserver, and against the Pod Security Standards, with the upstream
// pod-security-admission policy. Both run before any candidate exists.
package validation

import (
	"fmt"
	"k8s.io/apimachinery/pkg/util/sets"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// TemplatePath is where the pod template lives in a Workload.
var TemplatePath = field.NewPath("spec", "targetDeployment", "template")

func init() {
	// The upstream validation reads a process-wide setting that defaults to
	// refusing privileged containers (kube-apiserver's --allow-privileged
	// default). Clusters run with --allow-privileged=true and leave
	// privileged pods to Pod Security, as placer does (PodSecurity below).
	capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true})
}

// ValidateTemplate checks a Workload's pod template as kube-apiserver checks
// a Deployment's (after the same defaulting), and refuses placer's own
// labels and annotations in it. Errors name fields from the Workload's root.
func ValidateTemplate(w *v1alpha1.Workload) field.ErrorList {
	tmpl := &w.Spec.TargetDeployment.Template
	errs := reserved(tmpl.Labels, TemplatePath.Child("metadata", "labels"))
	errs = append(errs, reserved(tmpl.Annotations, TemplatePath.Child("metadata", "annotations"))...)

	// Default a copy, as the API server defaults a PodTemplate, so fields it
	// would fill in (restartPolicy, dnsPolicy, …) are not reported missing.
	wrapped := &corev1.PodTemplate{Template: *tmpl.DeepCopy()}
	k8scorev1.SetObjectDefaults_PodTemplate(wrapped)
	internal := &core.PodTemplateSpec{}
	if err := k8scorev1.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(&wrapped.Template, internal, nil); err != nil {
		return append(errs, field.InternalError(TemplatePath, err))
	}
	// As the Deployment strategy does on create.
	podutil.DropDisabledTemplateFields(internal, nil)
	opts := podutil.GetValidationOptionsFromPodTemplate(internal, nil)
	return append(errs, corevalidation.ValidatePodTemplateSpec(internal, TemplatePath, opts)...)
}

func reserved(m map[string]string, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for k := range m {
		if v1alpha1.IsReservedKey(k) {
			errs = append(errs, field.Forbidden(fp.Key(k), fmt.Sprintf("the prefixes %s are placer's own", strings.Join(v1alpha1.ReservedPrefixes, ", "))))
		}
	}
	return errs
}

var evaluator = func() psapolicy.Evaluator {
	e, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		panic(fmt.Sprintf("cannot build the Pod Security evaluator: %v", err))
	}
	return e
}()

// PodSecurity returns the Pod Security Standard checks the template fails
// at level, each as pod-security admission words it: `privileged
// (container "app" must not set securityContext.privileged=true)`.
func PodSecurity(level v1alpha1.PodSecurityLevel, tmpl *corev1.PodTemplateSpec) []string {
	l, err := psaapi.ParseLevel(string(level))
	if err != nil {
		l = psaapi.LevelBaseline
	}
	var out []string
	for _, r := range evaluator.EvaluatePod(psaapi.LevelVersion{Level: l, Version: psaapi.LatestVersion()}, &tmpl.ObjectMeta, &tmpl.Spec) {
		if r.Allowed {
			continue
		}
		msg := r.ForbiddenReason
		if r.ForbiddenDetail != "" {
			msg += " (" + r.ForbiddenDetail + ")"
		}
		out = append(out, msg)
	}
	return out
}

// Stricter returns the stricter of two levels; a level that is neither
// privileged nor restricted counts as baseline.
func Stricter(a, b v1alpha1.PodSecurityLevel) v1alpha1.PodSecurityLevel {
	la, lb := psaLevel(a), psaLevel(b)
	if psaapi.CompareLevels(lb, la) > 0 {
		return v1alpha1.PodSecurityLevel(lb)
	}
	return v1alpha1.PodSecurityLevel(la)
}

// psaLevel is the Pod Security admission level of l, baseline when l is
// none of them.
func psaLevel(l v1alpha1.PodSecurityLevel) psaapi.Level {
	level, err := psaapi.ParseLevel(string(l))
	if err != nil {
		return psaapi.LevelBaseline
	}
	return level
}

// Serves reports whether a cluster serves the Workloads of a management
// namespace: its own, and those its spec.namespaceSelector offers it to
// that have bound its namespace (bound, from their ClusterBindings: design
// §5). A selector that does not parse serves no other namespace.
func Serves(kc *v1alpha1.KubernetesCluster, namespace string, namespaceLabels map[string]string, bound sets.Set[string]) bool {
	return v1alpha1.Serves(kc.Namespace, kc.Tenants(), namespace, namespaceLabels, bound)
}

// Level is the Pod Security level a Workload of a namespace must meet on a
// cluster: the cluster's, or the namespace's enforce label when stricter.
func Level(kc *v1alpha1.KubernetesCluster, namespaceLabels map[string]string) v1alpha1.PodSecurityLevel {
	level := kc.Spec.PodSecurity
	if level == "" {
		level = v1alpha1.PodSecurityBaseline
	}
	if l, ok := namespaceLabels[psaapi.EnforceLevelLabel]; ok {
		level = Stricter(level, v1alpha1.PodSecurityLevel(l))
	}
	return level
}

// Reasons a cluster refuses a Workload before any candidate exists there.
const (
	ReasonNamespaceNotServed = "NamespaceNotServed"
	ReasonPodSecurity        = "PodSecurity"
)

// Verdict judges one Workload's template at most once per question: its
// field errors, and the Pod Security checks it fails per level, each when
// first asked. A scheduling cycle or a reconcile asks it for every cluster
// it considers; Verdicts keeps it for the Workload's generation. It is safe
// for concurrent use.
type Verdict struct {
	w      *v1alpha1.Workload
	mu     sync.Mutex
	errs   field.ErrorList
	judged bool
	failed map[v1alpha1.PodSecurityLevel][]string
}

// Judge returns the verdict on the Workload's template.
func Judge(w *v1alpha1.Workload) *Verdict {
	return &Verdict{w: w, failed: map[v1alpha1.PodSecurityLevel][]string{}}
}

// Errors are the template's field errors (ValidateTemplate).
func (v *Verdict) Errors() field.ErrorList {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.judged {
		v.errs, v.judged = ValidateTemplate(v.w), true
	}
	return v.errs
}

// Fails returns the Pod Security checks the template fails at level.
func (v *Verdict) Fails(level v1alpha1.PodSecurityLevel) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	f, ok := v.failed[level]
	if !ok {
		f = PodSecurity(level, &v.w.Spec.TargetDeployment.Template)
		v.failed[level] = f
	}
	return f
}

// Verdicts keeps each Workload's verdict for its generation (the template
// is in the spec): a controller that looks at a Workload on every change in
// the fleet, or on every event of its pods, judges its template once, and
// its template as each set of spec.overrides rules changes it once.
type Verdicts struct {
	mu sync.Mutex
	m  map[verdictKey]*Verdict
}

// verdictKey is a Workload and the override rules applied to its template.
type verdictKey struct {
	types.NamespacedName
	rules string
}

// For returns the verdict on the Workload's template at its generation.
func (c *Verdicts) For(w *v1alpha1.Workload) *Verdict { return c.ForOverridden(w, nil) }

// ForOverridden returns the verdict on a Workload as delivered to a
// cluster: its template changed by the named override rules.
func (c *Verdicts) ForOverridden(w *v1alpha1.Workload, rules []string) *Verdict {
	key := verdictKey{types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, strings.Join(rules, "\x00")}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok && v.w.UID == w.UID && v.w.Generation == w.Generation {
		return v
	}
	if c.m == nil {
		c.m = map[verdictKey]*Verdict{}
	}
	v := Judge(w)
	c.m[key] = v
	return v
}

// Forget drops the verdict of a Workload that is gone.
func (c *Verdicts) Forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.NamespacedName == key {
			delete(c.m, k)
		}
	}
}

// Admit says why a cluster may not receive the Workload's pods, or
// returns "" when it may: the cluster must serve its namespace, and the
// template must be valid and meet the cluster's Pod Security level. The
// scheduler's predicates decide the same before placing; the propagator
// asks again before any pod of a new template, or of an external
// scheduler's choice, reaches the cluster.
func (v *Verdict) Admit(kc *v1alpha1.KubernetesCluster, namespaceLabels map[string]string, bound sets.Set[string]) (reason, message string) {
	w := v.w
	if !Serves(kc, w.Namespace, namespaceLabels, bound) {
		return ReasonNamespaceNotServed, fmt.Sprintf("KubernetesCluster %s/%s does not serve the Workloads of namespace %s (offered by its namespaceSelector and bound by a ClusterBinding there, or of its own namespace)", kc.Namespace, kc.Name, w.Namespace)
	}
	if errs := v.Errors(); len(errs) > 0 {
		return v1alpha1.ReasonInvalidTemplate, "invalid pod template: " + errs.ToAggregate().Error()
	}
	level := Level(kc, namespaceLabels)
	if f := v.Fails(level); len(f) > 0 {
		return ReasonPodSecurity, fmt.Sprintf("the pod template does not meet Pod Security %q: %s", level, strings.Join(f, "; "))
	}
	return "", ""
}
