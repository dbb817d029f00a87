package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// MinScore and MaxScore bound a normalized score.
const (
	MinScore int64 = 1
	MaxScore int64 = 10
)

// ClusterScore is a feasible cluster's score.
type ClusterScore struct {
	Cluster *ClusterInfo
	// Total is the weighted sum of the normalized plugin scores.
	Total int64
	// names and scores are the normalized (1–10) scores before weights,
	// in the profile's order of scores (Scores), views of one array per
	// cycle.
	names  []string
	scores []int64
	// tie orders clusters of equal totals (tieBreak).
	tie uint64
}

// Scores are the normalized (1–10) scores, by plugin name, before weights.
func (c ClusterScore) Scores() map[string]int64 {
	out := make(map[string]int64, len(c.names))
	for i, n := range c.names {
		out[n] = c.scores[i]
	}
	return out
}

// Score is the normalized score of one plugin, 0 when the cycle has none
// of it; no map is built (Scores).
func (c ClusterScore) Score(name string) int64 {
	for i, n := range c.names {
		if n == name {
			return c.scores[i]
		}
	}
	return 0
}

// Result of one scheduling cycle.
type Result struct {
	// Ranked are the feasible clusters, best first; ties by a hash of the
	// Workload's UID and the cluster's key.
	Ranked []ClusterScore
	// Failed holds, for each infeasible cluster, the first filter that
	// failed, in the snapshot's order: a slice, as most of a large fleet
	// fails some filter each cycle and a map of them cost a cycle more
	// than the filters (BenchmarkScheduleLabels).
	Failed []Failure
	// Filters holds every filter's status per cluster when the cycle ran
	// with AllFilters (as explain does).
	Filters map[types.NamespacedName][]*Status
	// Total is the number of clusters considered.
	Total int
}

// Failure is why an infeasible cluster is.
type Failure struct {
	Cluster *ClusterInfo
	Status  *Status
}

// Options of a cycle.
type Options struct {
	// AllFilters runs every filter on every cluster instead of stopping at
	// the first failure, and records every verdict.
	AllFilters bool
	// Exclude fails these clusters before any filter, with the reason
	// given (a cluster the Workload must leave).
	Exclude map[types.NamespacedName]string
	// State is written into the cycle state before any plugin runs: what
	// the caller keeps per Workload, such as the verdict on its template
	// for this generation (predicates.VerdictKey), which a plugin would
	// otherwise work out again each cycle.
	State map[string]any
}

// Schedule runs one cycle for the Workload on the snapshot.
func (p *Profile) Schedule(ctx context.Context, w *v1alpha1.Workload, snap *Snapshot, o Options) *Result {
	state := NewCycleState()
	for k, v := range o.State {
		state.Write(k, v)
	}
	res := &Result{Total: len(snap.Clusters)}
	if o.AllFilters {
		res.Filters = map[types.NamespacedName][]*Status{}
	}
	for _, pl := range p.PreFilters {
		if s := pl.PreFilter(ctx, state, w, snap); !s.IsSuccess() {
			s.WithPlugin(pl.Name())
			res.Failed = make([]Failure, len(snap.Clusters))
			for i, c := range snap.Clusters {
				res.Failed[i] = Failure{Cluster: c, Status: s}
			}
			return res
		}
	}
	feasible, pos := p.filter(ctx, state, w, snap, o, res)
	if len(feasible) == 0 {
		return res
	}
	p.score(ctx, state, w, snap, feasible, pos, res)
	return res
}

// filter runs the filters on every cluster the options do not exclude,
// records in res why each that fails does, and returns those that pass,
// and their positions in the snapshot.
func (p *Profile) filter(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot, o Options, res *Result) ([]*ClusterInfo, []int32) {
	feasible := make([]*ClusterInfo, 0, len(snap.Clusters))
	var pos []int32
	res.Failed = make([]Failure, 0, len(snap.Clusters))
	narrowed := p.narrow(ctx, state, w, snap, o)
	for i, c := range snap.Clusters {
		if why, ok := o.Exclude[c.Key]; ok {
			s := NewStatus(UnschedulableAndUnresolvable, why).WithPlugin("Move")
			res.Failed = append(res.Failed, Failure{Cluster: c, Status: s})
			if o.AllFilters {
				res.Filters[c.Key] = append(res.Filters[c.Key], s)
			}
			continue
		}
		var first *Status
		for j, f := range p.Filters {
			if n := narrowed[j]; n.pass != nil {
				// The verdict of the index: the same as Filter's, in the
				// same order, so the first failure is the same too.
				if !n.pass.Has(i) {
					first = n.fail
					break
				}
				continue
			}
			s := f.Filter(ctx, state, w, c)
			if o.AllFilters {
				res.Filters[c.Key] = append(res.Filters[c.Key], s.orSuccess().WithPlugin(f.Name()))
			}
			if !s.IsSuccess() && first == nil {
				first = s.WithPlugin(f.Name())
				if !o.AllFilters {
					break
				}
			}
		}
		if first != nil {
			res.Failed = append(res.Failed, Failure{Cluster: c, Status: first})
			continue
		}
		feasible = append(feasible, c)
		pos = append(pos, int32(i))
	}
	return feasible, pos
}

// narrowing is a filter's verdicts from the label index (pass nil: none).
type narrowing struct {
	pass ClusterSet
	fail *Status
}

// narrow asks each NarrowingPlugin for its verdicts, by the profile's
// filters' positions; none when the cycle records every verdict.
func (p *Profile) narrow(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot, o Options) []narrowing {
	out := make([]narrowing, len(p.Filters))
	if o.AllFilters {
		return out
	}
	for j, f := range p.Filters {
		n, ok := f.(NarrowingPlugin)
		if !ok {
			continue
		}
		if pass, fail, ok := n.Narrow(ctx, state, w, snap); ok {
			out[j] = narrowing{pass: pass, fail: fail.WithPlugin(f.Name())}
		}
	}
	return out
}

// score runs the pre-scores and the weighted, normalized scores on the
// feasible clusters and ranks them in res, best first.
func (p *Profile) score(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot, feasible []*ClusterInfo, pos []int32, res *Result) {
	for _, pl := range p.PreScores {
		if s := pl.PreScore(ctx, state, w, snap, feasible); !s.IsSuccess() {
			// A failed pre-score leaves its plugin's scores flat rather than
			// failing placement: priorities rank, they do not forbid.
			state.Write(preScoreFailedKey(pl.Name()), s)
		}
	}
	names := make([]string, len(p.Scores))
	for j, ws := range p.Scores {
		names[j] = ws.Plugin.Name()
	}
	all := make([]int64, len(feasible)*len(names))
	res.Ranked = make([]ClusterScore, len(feasible))
	for i, c := range feasible {
		res.Ranked[i] = ClusterScore{Cluster: c, names: names, scores: all[i*len(names) : (i+1)*len(names) : (i+1)*len(names)]}
	}
	raw := make([]int64, len(feasible))
	for j, ws := range p.Scores {
		name := ws.Plugin.Name()
		if _, failed := state.Read(preScoreFailedKey(name)); failed {
			for i := range raw {
				raw[i] = 0
			}
		} else if b, ok := ws.Plugin.(BatchScorePlugin); !ok || !b.ScoreAll(ctx, state, w, snap, pos, raw) {
			for i, c := range feasible {
				v, s := ws.Plugin.Score(ctx, state, w, c)
				if !s.IsSuccess() {
					v = 0
				}
				raw[i] = v
			}
		}
		Normalize(raw)
		for i := range res.Ranked {
			res.Ranked[i].scores[j] = raw[i]
			res.Ranked[i].Total += raw[i] * ws.Weight
		}
	}
	// Ties go by a hash of the Workload's UID and the cluster: the same
	// Workload always gets the same order (explain reproduces it), while
	// a fleet of equal clusters shares the Workloads instead of the first
	// by name taking them all.
	// The feasible clusters come in the snapshot's order, by key: sorting
	// by total, then tie, then key is the stable sort by total and tie.
	for i := range res.Ranked {
		res.Ranked[i].tie = tieBreak(w.UID, res.Ranked[i].Cluster.Key)
	}
	slices.SortFunc(res.Ranked, func(a, b ClusterScore) int {
		// In turn, not through cmp.Or, which compares the keys of every
		// pair: the totals and the ties all but decide.
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		if c := cmp.Compare(a.tie, b.tie); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Cluster.Key.Namespace, b.Cluster.Key.Namespace), cmp.Compare(a.Cluster.Key.Name, b.Cluster.Key.Name))
	})
}

// FNV-1a, 64 bits.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// tieBreak is FNV-1a of the UID, a zero byte and the cluster's key
// (namespace/name), computed without allocating: a cycle breaks a tie for
// each feasible cluster.
func tieBreak(uid types.UID, key types.NamespacedName) uint64 {
	h := uint64(fnvOffset64)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= fnvPrime64
		}
	}
	add(string(uid))
	h ^= 0
	h *= fnvPrime64
	add(key.Namespace)
	add("/")
	add(key.Name)
	return h
}

func preScoreFailedKey(plugin string) string { return "PreScoreFailed/" + plugin }

func (s *Status) orSuccess() *Status {
	if s == nil {
		return NewStatus(Success)
	}
	return s
}

// Normalize maps raw scores onto MinScore–MaxScore in place. Scores that
// are all non-negative scale from zero (0 → 1, the highest → 10), so a
// cluster is judged against the best; scores with negatives (anti-affinity)
// scale from the lowest to the highest. Equal scores carry no preference and
// all become MinScore.
func Normalize(scores []int64) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0], scores[0]
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	base := int64(0)
	if lo < 0 {
		base = lo
	}
	span := hi - base
	for i, s := range scores {
		if span == 0 || lo == hi {
			scores[i] = MinScore
			continue
		}
		// Round to the nearest integer step.
		scores[i] = MinScore + ((s-base)*(MaxScore-MinScore)*2+span)/(2*span)
	}
}

// Message explains, in kube-scheduler's style, why no cluster is feasible:
// "0/4 clusters are available: 2 cluster(s) didn't match the cluster selector, 1 cluster(s) were not ready."
func (r *Result) Message() string {
	counts := map[string]int{}
	for _, f := range r.Failed {
		for _, reason := range f.Status.Reasons() {
			counts[reason]++
		}
	}
	reasons := make([]string, 0, len(counts))
	for reason := range counts {
		reasons = append(reasons, reason)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if counts[reasons[i]] != counts[reasons[j]] {
			return counts[reasons[i]] > counts[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	parts := make([]string, len(reasons))
	for i, reason := range reasons {
		parts[i] = fmt.Sprintf("%d %s", counts[reason], reason)
	}
	msg := fmt.Sprintf("0/%d clusters are available", r.Total)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	return msg + "."
}
