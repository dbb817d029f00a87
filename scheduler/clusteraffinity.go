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

// RequiredAffinity is a Workload's required cluster affinity, parsed once
// per cycle.
type RequiredAffinity struct {
	// Selector matches clusters presented as nodes (ClusterInfo.Node);
	// nil when the Workload has no required cluster affinity.
	Selector *nodeaffinity.NodeSelector
	// Terms are its terms as node selector terms (Snapshot.MatchingTerms).
	Terms []corev1.NodeSelectorTerm
	// Fields: a term matches fields (the cluster's name) besides labels;
	// only then must a cluster be presented with its name
	// (ClusterInfo.MatchNode), which costs the node-affinity helpers a
	// map per match.
	Fields bool
}

// RequiredClusterAffinity parses the Workload's required cluster affinity.
// Parse errors are field errors of the Workload's own fields
// (clusterSelectorTerms, where node affinity says nodeSelectorTerms).
func RequiredClusterAffinity(w *v1alpha1.Workload) (RequiredAffinity, field.ErrorList) {
	ca := clusterAffinity(w)
	if ca == nil || ca.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return RequiredAffinity{}, nil
	}
	ra := RequiredAffinity{}
	for _, t := range ca.RequiredDuringSchedulingIgnoredDuringExecution.ClusterSelectorTerms {
		ra.Terms = append(ra.Terms, nodeSelectorTerm(t))
	}
	ra.Fields = matchesFields(ra.Terms...)
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: ra.Terms}, field.WithPath(clusterAffinityPath.Child("requiredDuringSchedulingIgnoredDuringExecution")))
	if err == nil {
		ra.Selector = sel
		return ra, nil
	}
	var errs field.ErrorList
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return RequiredAffinity{}, field.ErrorList{field.InternalError(clusterAffinityPath, err)}
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
	return RequiredAffinity{}, errs
}

// PreferredAffinity is a Workload's preferred cluster affinity, parsed
// once per cycle.
type PreferredAffinity struct {
	// Scorer sums the weights of the terms a cluster matches; nil when
	// the Workload has no preferred cluster affinity.
	Scorer *nodeaffinity.PreferredSchedulingTerms
	// Terms are its terms as preferred node scheduling terms
	// (Snapshot.MatchingTerms, one preference at a time).
	Terms []corev1.PreferredSchedulingTerm
	// Fields: a term matches fields besides labels (RequiredAffinity).
	Fields bool
}

// PreferredClusterAffinity parses the Workload's preferred cluster
// affinity.
func PreferredClusterAffinity(w *v1alpha1.Workload) (PreferredAffinity, error) {
	ca := clusterAffinity(w)
	if ca == nil || len(ca.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		return PreferredAffinity{}, nil
	}
	pa := PreferredAffinity{}
	for _, p := range ca.PreferredDuringSchedulingIgnoredDuringExecution {
		t := nodeSelectorTerm(p.Preference)
		pa.Terms = append(pa.Terms, corev1.PreferredSchedulingTerm{Weight: p.Weight, Preference: t})
		pa.Fields = pa.Fields || matchesFields(t)
	}
	scorer, err := nodeaffinity.NewPreferredSchedulingTerms(pa.Terms, field.WithPath(clusterAffinityPath.Child("preferredDuringSchedulingIgnoredDuringExecution")))
	if err != nil {
		return PreferredAffinity{}, err
	}
	pa.Scorer = scorer
	return pa, nil
}

// matchesFields reports whether a term matches fields besides labels.
func matchesFields(terms ...corev1.NodeSelectorTerm) bool {
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
