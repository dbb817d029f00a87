package scheduler

import (
	"os"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// ScoringStrategy says how ResourceAllocation ranks clusters.
type ScoringStrategy string

// Scoring strategies.
const (
	// LeastAllocated spreads: the emptiest cluster scores highest.
	LeastAllocated ScoringStrategy = "LeastAllocated"
	// MostAllocated packs: the fullest cluster that fits scores highest.
	MostAllocated ScoringStrategy = "MostAllocated"
)

// Configuration is the scheduler's configuration file.
type Configuration struct {
	APIVersion string          `json:"apiVersion,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Profiles   []ProfileConfig `json:"profiles"`
}

// ProfileConfig configures one profile.
type ProfileConfig struct {
	// SchedulerName the profile answers to.
	SchedulerName string `json:"schedulerName"`
	// Disabled plugins, by name; "*" disables every default plugin.
	Disabled []string `json:"disabled,omitempty"`
	// Enabled plugins, by name, added to the defaults left after Disabled.
	Enabled []string `json:"enabled,omitempty"`
	// Weights of score plugins; 1 when not given.
	Weights map[string]int64 `json:"weights,omitempty"`
	// ScoringStrategy of ResourceAllocation: LeastAllocated (default) or MostAllocated.
	ScoringStrategy ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// DefaultConfiguration is one profile, placer-scheduler, with every default plugin.
func DefaultConfiguration() *Configuration {
	return &Configuration{Profiles: []ProfileConfig{{SchedulerName: v1alpha1.DefaultSchedulerName}}}
}

// LoadConfiguration reads a configuration file; the default when path is empty.
func LoadConfiguration(path string) (*Configuration, error) {
	if path == "" {
		return DefaultConfiguration(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, errors.Wrap(err, "cannot read scheduler configuration")
	}
	return ParseConfiguration(b, path)
}

// ParseConfiguration parses a configuration read from source (a file, a
// ConfigMap), which errors name.
func ParseConfiguration(b []byte, source string) (*Configuration, error) {
	c := &Configuration{}
	if err := yaml.UnmarshalStrict(b, c); err != nil {
		return nil, errors.Wrapf(err, "cannot parse scheduler configuration %s", source)
	}
	if len(c.Profiles) == 0 {
		return nil, errors.Errorf("scheduler configuration %s: profiles: at least one profile is required", source)
	}
	return c, nil
}

// Profile is a configured set of plugins serving one schedulerName.
type Profile struct {
	SchedulerName string
	PreFilters    []PreFilterPlugin
	Filters       []FilterPlugin
	PreScores     []PreScorePlugin
	Scores        []WeightedScore
	strategy      ScoringStrategy
}

// WeightedScore is a score plugin and its weight.
type WeightedScore struct {
	Plugin ScorePlugin
	Weight int64
}

// ScoringStrategy of the profile.
func (p *Profile) ScoringStrategy() ScoringStrategy { return p.strategy }

// NewProfiles builds every profile of the configuration. defaults lists the
// plugins a profile runs unless it disables them, in the order filters run.
func NewProfiles(c *Configuration, r Registry, defaults []string) (map[string]*Profile, error) {
	out := map[string]*Profile{}
	for i, pc := range c.Profiles {
		if pc.SchedulerName == "" {
			return nil, errors.Errorf("profiles[%d].schedulerName: required", i)
		}
		if _, dup := out[pc.SchedulerName]; dup {
			return nil, errors.Errorf("profiles[%d].schedulerName: %q is served by another profile", i, pc.SchedulerName)
		}
		p, err := newProfile(pc, r, defaults)
		if err != nil {
			return nil, errors.Wrapf(err, "profiles[%d]", i)
		}
		out[pc.SchedulerName] = p
	}
	return out, nil
}

// add places a plugin at every extension point it implements.
func (p *Profile) add(pl Plugin, weight int64) {
	if x, ok := pl.(PreFilterPlugin); ok {
		p.PreFilters = append(p.PreFilters, x)
	}
	if x, ok := pl.(FilterPlugin); ok {
		p.Filters = append(p.Filters, x)
	}
	if x, ok := pl.(PreScorePlugin); ok {
		p.PreScores = append(p.PreScores, x)
	}
	if x, ok := pl.(ScorePlugin); ok && weight > 0 {
		p.Scores = append(p.Scores, WeightedScore{Plugin: x, Weight: weight})
	}
}

func newProfile(pc ProfileConfig, r Registry, defaults []string) (*Profile, error) {
	p := &Profile{SchedulerName: pc.SchedulerName, strategy: pc.ScoringStrategy}
	switch p.strategy {
	case "":
		p.strategy = LeastAllocated
	case LeastAllocated, MostAllocated:
	default:
		return nil, errors.Errorf("scoringStrategy: %q is neither LeastAllocated nor MostAllocated", pc.ScoringStrategy)
	}
	disabled := map[string]bool{}
	for i, n := range pc.Disabled {
		if _, ok := r[n]; !ok && n != "*" {
			return nil, errors.Errorf("disabled[%d]: unknown plugin %q", i, n)
		}
		disabled[n] = true
	}
	names := []string{}
	for _, n := range defaults {
		if !disabled[n] && !disabled["*"] {
			names = append(names, n)
		}
	}
	for i, n := range pc.Enabled {
		if _, ok := r[n]; !ok {
			return nil, errors.Errorf("enabled[%d]: unknown plugin %q", i, n)
		}
		names = append(names, n)
	}
	used := map[string]bool{}
	for _, n := range names {
		if used[n] {
			continue
		}
		used[n] = true
		w := int64(1)
		if v, ok := pc.Weights[n]; ok {
			w = v
		}
		if w < 0 || w > 100 {
			return nil, errors.Errorf("weights[%s]: %d is not within 0–100", n, w)
		}
		for _, f := range r[n] {
			pl, err := f(p)
			if err != nil {
				return nil, errors.Wrapf(err, "plugin %s", n)
			}
			p.add(pl, w)
		}
	}
	for n := range pc.Weights {
		if !used[n] {
			return nil, errors.Errorf("weights[%s]: no such score plugin in this profile", n)
		}
	}
	return p, nil
}
