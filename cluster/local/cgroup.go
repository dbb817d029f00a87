package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// CgroupRoot is where the kernel's cgroup v1 hierarchies are mounted.
const CgroupRoot = "/sys/fs/cgroup"

// DefaultCFSPeriod is the kernel's scheduler period a quota is a share
// of: a group that spent its share waits for the next period.
const DefaultCFSPeriod = 100 * time.Millisecond

// CPUGroup is a group of processes with a CPU quota of its own, as if
// they had a machine of that many CPUs: a cgroup in the cgroup v1 cpu
// hierarchy (the quota) and in the cpuacct one (what it used). Separate
// machines are what a fleet's clusters run on; a benchmark on one
// machine gives each cluster a group.
type CPUGroup struct {
	name string
	cpus float64
	cpu  string // the group's folder in the cpu hierarchy
	acct string // and in the cpuacct one
}

// NewCPUGroup creates the group root/{cpu,cpuacct}/path with a quota of
// cpus CPUs (0: no quota, only accounting) per CFS period (0:
// DefaultCFSPeriod; the kernel takes 1 ms to 1 s, and a quota of at least
// 1 ms). A group that spent its share waits for the next period: at 0.4
// CPU, up to 60 ms of a 100 ms period, where a 10 ms one spreads the same
// share finer, as a slower CPU would. root is CgroupRoot but in tests.
func NewCPUGroup(root, path string, cpus float64, period time.Duration) (*CPUGroup, error) {
	if cpus < 0 {
		return nil, errors.Errorf("cgroup %s: a quota of %g CPUs", path, cpus)
	}
	if period == 0 {
		period = DefaultCFSPeriod
	}
	if period < time.Millisecond || period > time.Second || cpus > 0 && time.Duration(cpus*float64(period)) < time.Millisecond {
		return nil, errors.Errorf("cgroup %s: a CFS period of %v for %g CPUs (the kernel takes periods of 1ms to 1s, and quotas of at least 1ms)", path, period, cpus)
	}
	g := &CPUGroup{name: path, cpus: cpus, cpu: filepath.Join(root, "cpu", path), acct: filepath.Join(root, "cpuacct", path)}
	for _, d := range []string{g.cpu, g.acct} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, errors.Wrapf(err, "cannot create the cgroup %s (cgroup v1 cpu and cpuacct hierarchies mounted read-write under %s, as root, are needed)", d, root)
		}
	}
	quota := "-1"
	if cpus > 0 {
		quota = strconv.Itoa(int(cpus * float64(period.Microseconds())))
	}
	if err := write(filepath.Join(g.cpu, "cpu.cfs_period_us"), strconv.FormatInt(period.Microseconds(), 10)); err != nil {
		return nil, err
	}
	if err := write(filepath.Join(g.cpu, "cpu.cfs_quota_us"), quota); err != nil {
		return nil, err
	}
	return g, nil
}

// Name is the group's path under each hierarchy.
func (g *CPUGroup) Name() string { return g.name }

// CPUs is the group's quota; 0 for none.
func (g *CPUGroup) CPUs() float64 { return g.cpus }

// Add moves a process (all its threads) into the group.
func (g *CPUGroup) Add(pid int) error {
	if g == nil {
		return nil
	}
	for _, d := range []string{g.cpu, g.acct} {
		if err := write(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return err
		}
	}
	return nil
}

// Usage is the CPU time the group's processes used, since it was created.
func (g *CPUGroup) Usage() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(g.acct, "cpuacct.usage"))
	if err != nil {
		return 0, errors.Wrapf(err, "cannot read the CPU usage of cgroup %s", g.name)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, errors.Wrapf(err, "cgroup %s: cpuacct.usage", g.name)
	}
	return time.Duration(ns), nil
}

// Throttled is how long the kernel held the group back for its quota
// (cpu.stat throttled_time).
func (g *CPUGroup) Throttled() (time.Duration, error) {
	b, err := os.ReadFile(filepath.Join(g.cpu, "cpu.stat"))
	if err != nil {
		return 0, errors.Wrapf(err, "cannot read cpu.stat of cgroup %s", g.name)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "throttled_time "); ok {
			ns, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(ns), errors.Wrapf(err, "cgroup %s: cpu.stat", g.name)
		}
	}
	return 0, nil
}

// Remove deletes the group, whose processes must have ended (or moved).
func (g *CPUGroup) Remove() error {
	for _, d := range []string{g.cpu, g.acct} {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			return errors.Wrapf(err, "cannot remove the cgroup %s", d)
		}
	}
	return nil
}

func write(path, value string) error {
	// A cgroup's files exist as soon as it does; a plain folder (a test's)
	// gets them created.
	f, err := os.OpenFile(path, os.O_WRONLY, 0) //nolint:gosec // A cgroup file.
	if os.IsNotExist(err) {
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644) //nolint:gosec // A test's stand-in.
	}
	if err != nil {
		return errors.Wrapf(err, "cannot open %s", path)
	}
	if _, err := f.WriteString(value); err != nil {
		_ = f.Close()
		return errors.Wrapf(err, "cannot write %s to %s", value, path)
	}
	return errors.Wrapf(f.Close(), "cannot write %s to %s", value, path)
}
