// Package validation checks what the API server's schema and CEL rules
// cannot: a Workload's pod template, with the upstream pod validation of
// kube-apiserver, and against the Pod Security Standards, with the upstream
// pod-security-admission policy. Both run before any candidate exists.
package validation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
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
	rank := map[v1alpha1.PodSecurityLevel]int{v1alpha1.PodSecurityPrivileged: 0, v1alpha1.PodSecurityBaseline: 1, v1alpha1.PodSecurityRestricted: 2}
	norm := func(l v1alpha1.PodSecurityLevel) v1alpha1.PodSecurityLevel {
		if _, ok := rank[l]; !ok {
			return v1alpha1.PodSecurityBaseline
		}
		return l
	}
	a, b = norm(a), norm(b)
	if rank[b] > rank[a] {
		return b
	}
	return a
}
