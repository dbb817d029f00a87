package main

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/placer-dev/placer/cluster/local"
)

// cpuGroups give each cluster of the fleet a CPU quota of its own, as
// separate machines would (-cluster-cpus): its control plane and the
// placer components that run in it share one cgroup; kwok, which plays
// the nodes of every member, and the benchmark itself have groups of
// their own (-kwok-cpus, -bench-cpus; 0 is no quota, accounting only).
type cpuGroups struct {
	root string
	by   map[string]*local.CPUGroup
}

// Group names besides the clusters'.
const (
	groupKwok  = "kwok"
	groupBench = "bench"
)

// newCPUGroups creates the groups under cgroupRoot (local.CgroupRoot),
// and moves the benchmark into its own.
func newCPUGroups(o options, cgroupRoot string, clusters []string) (*cpuGroups, error) {
	g := &cpuGroups{root: fmt.Sprintf("placer-bench-%d", os.Getpid()), by: map[string]*local.CPUGroup{}}
	quotas := map[string]float64{groupKwok: o.kwokCPUs, groupBench: o.benchCPUs}
	for _, c := range clusters {
		quotas[c] = o.clusterCPUs
	}
	for _, name := range slices.Sorted(maps.Keys(quotas)) {
		cg, err := local.NewCPUGroup(cgroupRoot, filepath.Join(g.root, name), quotas[name], o.cpuPeriod)
		if err != nil {
			g.remove(cgroupRoot)
			return nil, fmt.Errorf("-cluster-cpus needs a CPU group per cluster: %w (run without -cluster-cpus for the shared pool)", err)
		}
		g.by[name] = cg
	}
	if err := g.by[groupBench].Add(os.Getpid()); err != nil {
		g.remove(cgroupRoot)
		return nil, err
	}
	return g, nil
}

// of is a group by name; nil (no group) when there are no groups.
func (g *cpuGroups) of(name string) *local.CPUGroup {
	if g == nil {
		return nil
	}
	return g.by[name]
}

// groupOf is the group of one of placer's processes: the manager runs in
// the management cluster, each member's agent and candidate scheduler in
// their member.
func groupOf(process string) string {
	if process == "manager" {
		return "management"
	}
	if rest, ok := strings.CutPrefix(process, "member-"); ok {
		if n, _, ok := strings.Cut(rest, "-"); ok {
			if _, err := strconv.Atoi(n); err == nil {
				return "member-" + n
			}
		}
	}
	return groupBench
}

// usage is each group's CPU seconds so far.
func (g *cpuGroups) usage() map[string]float64 {
	if g == nil {
		return nil
	}
	out := map[string]float64{}
	for name, cg := range g.by {
		if u, err := cg.Usage(); err == nil {
			out[name] = u.Seconds()
		}
	}
	return out
}

// quotas are the groups' quotas in CPUs (0: none).
func (g *cpuGroups) quotas() map[string]float64 {
	out := map[string]float64{}
	if g != nil {
		for name, cg := range g.by {
			out[name] = cg.CPUs()
		}
	}
	return out
}

// remove moves the benchmark back to the root groups and removes every
// group; the fleet's processes have ended.
func (g *cpuGroups) remove(cgroupRoot string) {
	if g == nil {
		return
	}
	for _, h := range []string{"cpu", "cpuacct"} {
		_ = os.WriteFile(filepath.Join(cgroupRoot, h, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	for _, cg := range g.by {
		_ = cg.Remove()
	}
	for _, h := range []string{"cpu", "cpuacct"} {
		_ = os.Remove(filepath.Join(cgroupRoot, h, g.root))
	}
}

// binding names the group that used the largest share of its quota over
// a wall time, when that share is at least 90%: the machine that bounds
// the phase. "" when none does (or there are no quotas).
func binding(used, quotas map[string]float64, wallSeconds float64) (string, float64) {
	best, share := busiest(used, quotas, wallSeconds)
	if share < 0.9 {
		return "", share
	}
	return best, share
}

// busiest is the group with a quota that used the largest share of it
// over wallSeconds, and that share ("" when none has a quota).
func busiest(used, quotas map[string]float64, wallSeconds float64) (string, float64) {
	best, share := "", 0.0
	for _, name := range slices.Sorted(maps.Keys(used)) {
		q := quotas[name]
		if q <= 0 || wallSeconds <= 0 {
			continue
		}
		if s := used[name] / (q * wallSeconds); s > share {
			best, share = name, s
		}
	}
	return best, share
}

// groupNames orders the groups: the clusters, then kwok and the bench.
func groupNames(quotas map[string]float64) []string {
	rank := func(n string) int {
		switch {
		case n == "management":
			return 0
		case strings.HasPrefix(n, "member-"):
			return 1
		case n == groupKwok:
			return 2
		default:
			return 3
		}
	}
	return slices.SortedFunc(maps.Keys(quotas), func(x, y string) int { return cmp.Or(cmp.Compare(rank(x), rank(y)), cmp.Compare(x, y)) })
}
