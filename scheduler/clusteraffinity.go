package scheduler

import (
	"errors"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Cluster affinity is node affinity evaluated against clusters presented as
// nodes (ClusterInfo.Node): the terms are converted and handed to
// component-helpers, so the semantics are kube-scheduler's own.

var clusterAffinityPath = field.NewPath("spec", "affinity", "clusterAffinity")

// RequiredClusterAffinity parses the Workload's required cluster affinity;
// nil when it has none. Parse errors are field errors of the Workload's
// own fields (clusterSelectorTerms, where node affinity says nodeSelectorTerms).
func RequiredClusterAffinity(w *v1alpha1.Workload) (*nodeaffinity.NodeSelector, field.ErrorList) {
	ca := clusterAffinity(w)
	if ca == nil || ca.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil, nil
	}
	ns := &corev1.NodeSelector{NodeSelectorTerms: RequiredClusterTerms(w)}
	sel, err := nodeaffinity.NewNodeSelector(ns, field.WithPath(clusterAffinityPath.Child("requiredDuringSchedulingIgnoredDuringExecution")))
	if err == nil {
		return sel, nil
	}
	var errs field.ErrorList
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return nil, field.ErrorList{field.InternalError(clusterAffinityPath, err)}
	}
	for _, e := range agg.Errors() {
		fe, ok := e.(*field.Error)
		if !ok {
			errs = append(errs, field.InternalError(clusterAffinityPath, e))
			continue
		}
		// The helper names node affinity's field; the Workload's is ours.
		c := *fe
		c.Field = strings.Replace(c.Field, ".nodeSelectorTerms[", ".clusterSelectorTerms[", 1)
		errs = append(errs, &c)
	}
	return nil, errs
}

// RequiredClusterTerms are the Workload's required cluster affinity terms
// as node selector terms (Snapshot.MatchingTerms); nil when it has none.
func RequiredClusterTerms(w *v1alpha1.Workload) []corev1.NodeSelectorTerm {
	ca := clusterAffinity(w)
	if ca == nil || ca.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var out []corev1.NodeSelectorTerm
	for _, t := range ca.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms {
		out = append(out, nodeSelectorTerm(t))
	}
	return out
}

// PreferredClusterAffinity parses the Workload's preferred cluster affinity;
// nil when it has none.
func PreferredClusterAffinity(w *v1alpha1.Workload) (*nodeaffinity.PreferredSchedulingTerms, error) {
	ca := clusterAffinity(w)
	if ca == nil || len(ca.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return nil, nil
	}
	return nodeaffinity.NewPreferredSchedulingTerms(PreferredClusterTerms(w), field.WithPath(clusterAffinityPath.Child("preferredDuringSchedulingIgnoredDuringExecution")))
}

// PreferredClusterTerms are the Workload's preferred cluster affinity
// terms as preferred node scheduling terms; nil when it has none.
func PreferredClusterTerms(w *v1alpha1.Workload) []corev1.PreferredSchedulingTerm {
	ca := clusterAffinity(w)
	if ca == nil {
		return nil
	}
	var terms []corev1.PreferredSchedulingTerm
	for _, p := range ca.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, corev1.PreferredSchedulingTerm{Weight: p.Weight, Preference: nodeSelectorTerm(p.Preference)})
	}
	return terms
}

// ClusterAffinityUsesFields reports whether the Workload's required
// (required true) or preferred cluster affinity terms match fields (the
// cluster's name) besides labels: only then must a cluster be presented
// with its name (ClusterInfo.MatchNode), which costs the node-affinity
// helpers a map per match.
func ClusterAffinityUsesFields(w *v1alpha1.Workload, required bool) bool {
	ca := clusterAffinity(w)
	if ca == nil {
		return false
	}
	var terms []corev1.NodeSelectorTerm
	if required && ca.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range ca.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms {
			terms = append(terms, nodeSelectorTerm(t))
		}
	}
	if !required {
		for _, p := range ca.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, nodeSelectorTerm(p.Preference))
		}
	}
	for _, t := range terms {
		if len(t.MatchFields) > 0 {
			return true
		}
	}
	return false
}

func clusterAffinity(w *v1alpha1.Workload) *v1alpha1.ClusterAffinity {
	if w.Spec.Affinity == nil {
		return nil
	}
	return w.Spec.Affinity.ClusterAffinity
}

func nodeSelectorTerm(t v1alpha1.ClusterSelectorTerm) corev1.NodeSelectorTerm {
	out := corev1.NodeSelectorTerm{}
	for _, e := range t.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOperator(e.Operator), Values: e.Values})
	}
	for _, f := range t.MatchFields {
		out.MatchFields = append(out.MatchFields, corev1.NodeSelectorRequirement{Key: f.Key, Operator: corev1.NodeSelectorOperator(f.Operator), Values: f.Values})
	}
	return out
}

// SelectorTermMatches reports whether a cluster matches one cluster
// selector term (node-affinity semantics: its expressions and fields
// ANDed; an empty term matches every cluster).
func SelectorTermMatches(t v1alpha1.ClusterSelectorTerm, c *ClusterInfo) (bool, error) {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return true, nil
	}
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{nodeSelectorTerm(t)}})
	if err != nil {
		return false, err
	}
	return sel.Match(c.Node), nil
}
