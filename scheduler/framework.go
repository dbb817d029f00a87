// Package scheduler is placer's scheduling framework: a snapshot of the
// fleet, filter and score plugins, profiles, and the scheduling cycle that
// ranks clusters for a Workload. It never calls an API server.
package scheduler

import (
	"context"
	"strings"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Code is the outcome of a plugin, as in kube-scheduler.
type Code int

// Codes a plugin may return.
const (
	// Success: the cluster passes.
	Success Code = iota
	// Unschedulable: the cluster fails now, but may pass after the fleet changes.
	Unschedulable
	// UnschedulableAndUnresolvable: the cluster fails and only a change of
	// the Workload's spec can fix it.
	UnschedulableAndUnresolvable
	// Error: the plugin could not decide.
	Error
)

// Status is a plugin's verdict with the reasons for it. A nil Status is Success.
type Status struct {
	code    Code
	reasons []string
	plugin  string
}

// NewStatus returns a status with the given code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// Code of the status; Success for nil.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess reports whether the status is nil or Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// Reasons of the status.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Plugin that returned the status.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// Message joins the reasons.
func (s *Status) Message() string { return strings.Join(s.Reasons(), ", ") }

// WithPlugin records which plugin returned the status.
func (s *Status) WithPlugin(name string) *Status {
	// A status a plugin keeps for every failure of one kind carries its
	// plugin already, and is never written: cycles share it.
	if s != nil && s.plugin != name {
		s.plugin = name
	}
	return s
}

// CycleState holds what plugins compute once per cycle (PreFilter,
// PreScore) for the per-cluster calls that follow. One cycle, one goroutine.
// It holds a few keys (one or two per plugin), each read once per plugin
// and cluster: a scan of a short slice, whose keys mostly differ in length,
// costs less there than a map's hashing (measured by
// BenchmarkScheduleLabels).
type CycleState struct {
	keys   []string
	values []any
}

// NewCycleState returns an empty state.
func NewCycleState() *CycleState {
	return &CycleState{keys: make([]string, 0, 16), values: make([]any, 0, 16)}
}

// Write stores a value under a key.
func (c *CycleState) Write(key string, v any) {
	for i, k := range c.keys {
		if k == key {
			c.values[i] = v
			return
		}
	}
	c.keys, c.values = append(c.keys, key), append(c.values, v)
}

// Read returns the value stored under key.
func (c *CycleState) Read(key string) (any, bool) {
	for i, k := range c.keys {
		if k == key {
			return c.values[i], true
		}
	}
	return nil, false
}

// Plugin is a named scheduling plugin.
type Plugin interface {
	Name() string
}

// PreFilterPlugin computes per-cycle state before clusters are filtered.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot) *Status
}

// FilterPlugin is a predicate: may the Workload be placed on the cluster?
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, w *v1alpha1.Workload, c *ClusterInfo) *Status
}

// NarrowingPlugin is a filter whose verdicts on the whole fleet the
// snapshot's label index gives at once (Snapshot.Carrying,
// Snapshot.MatchingTerms). Narrow, called after the pre-filters, returns
// exactly the clusters Filter would pass, and the status Filter gives
// every other one; ok false when it cannot say this cycle, and Filter then
// runs on each cluster. A cycle that records every verdict (explain)
// runs Filter regardless.
type NarrowingPlugin interface {
	FilterPlugin
	Narrow(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot) (pass ClusterSet, fail *Status, ok bool)
}

// PreScorePlugin computes per-cycle state before feasible clusters are scored.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot, feasible []*ClusterInfo) *Status
}

// ScorePlugin is a priority: a raw score of a feasible cluster, higher is
// better. The framework normalizes each plugin's raw scores to 1–10.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, w *v1alpha1.Workload, c *ClusterInfo) (int64, *Status)
}

// BatchScorePlugin is a priority that scores every feasible cluster at
// once from the snapshot's label index: raw[i] for the feasible cluster at
// position pos[i] of Snapshot.Clusters, the same as Score would give it.
// It reports false when it cannot this cycle, and Score then runs on each.
type BatchScorePlugin interface {
	ScorePlugin
	ScoreAll(ctx context.Context, state *CycleState, w *v1alpha1.Workload, snap *Snapshot, pos []int32, raw []int64) bool
}

// Handle gives plugins what they may need at construction.
type Handle interface {
	// ScoringStrategy is the profile's resource scoring strategy.
	ScoringStrategy() ScoringStrategy
}

// PluginFactory builds a plugin for a profile.
type PluginFactory func(h Handle) (Plugin, error)

// Registry maps plugin names to factories. A name may have a filter and a
// score plugin (ClusterAffinity: required and preferred terms); disabling
// the name disables both.
type Registry map[string][]PluginFactory
