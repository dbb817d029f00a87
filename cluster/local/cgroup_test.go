package local

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCPUGroupFiles: the group's folders and the values written, in a
// temporary folder standing in for /sys/fs/cgroup.
func TestCPUGroupFiles(t *testing.T) {
	root := t.TempDir()
	g, err := NewCPUGroup(root, "bench/member-0", 0.4, 0)
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if q, p := read("cpu/bench/member-0/cpu.cfs_quota_us"), read("cpu/bench/member-0/cpu.cfs_period_us"); q != "40000" || p != "100000" {
		t.Errorf("quota %s per period %s, want 40000 per 100000 (0.4 CPU)", q, p)
	}
	if err := g.Add(4242); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"cpu", "cpuacct"} {
		if got := read(h + "/bench/member-0/cgroup.procs"); got != "4242" {
			t.Errorf("%s cgroup.procs = %q, want 4242", h, got)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "cpuacct/bench/member-0/cpuacct.usage"), []byte("2500000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if u, err := g.Usage(); err != nil || u != 2500*time.Millisecond {
		t.Errorf("usage %v, %v; want 2.5s", u, err)
	}
	if err := os.WriteFile(filepath.Join(root, "cpu/bench/member-0/cpu.stat"), []byte("nr_periods 10\nnr_throttled 4\nthrottled_time 300000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if th, err := g.Throttled(); err != nil || th != 300*time.Millisecond {
		t.Errorf("throttled %v, %v; want 300ms", th, err)
	}
	// No quota: accounting only.
	if _, err := NewCPUGroup(root, "bench/shared", 0, 0); err != nil {
		t.Fatal(err)
	}
	if q := read("cpu/bench/shared/cpu.cfs_quota_us"); q != "-1" {
		t.Errorf("no quota: cfs_quota_us = %s, want -1", q)
	}
	if _, err := NewCPUGroup(root, "bench/bad", -1, 0); err == nil {
		t.Error("a negative quota is accepted")
	}
	// A shorter period: the same share, finer.
	if _, err := NewCPUGroup(root, "bench/fine", 0.4, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if q, p := read("cpu/bench/fine/cpu.cfs_quota_us"), read("cpu/bench/fine/cpu.cfs_period_us"); q != "4000" || p != "10000" {
		t.Errorf("quota %s per period %s, want 4000 per 10000 (0.4 CPU, 10 ms)", q, p)
	}
	for _, period := range []time.Duration{time.Microsecond * 500, 2 * time.Second} {
		if _, err := NewCPUGroup(root, "bench/bad", 0.4, period); err == nil {
			t.Errorf("a period of %v is accepted", period)
		}
	}
	if _, err := NewCPUGroup(root, "bench/bad", 0.05, 10*time.Millisecond); err == nil {
		t.Error("a quota of 0.5 ms per period is accepted")
	}
	// A root that cannot hold groups says what is needed.
	if _, err := NewCPUGroup("/proc/no-such-root", "x", 1, 0); err == nil || !strings.Contains(err.Error(), "cgroup v1 cpu and cpuacct hierarchies") {
		t.Errorf("an unusable root: %v", err)
	}
}

// TestCPUGroupOnTheKernel: a real group holds a busy process to its quota.
// It needs the cgroup v1 cpu and cpuacct hierarchies mounted read-write
// (these machines have them, as root).
func TestCPUGroupOnTheKernel(t *testing.T) {
	if err := os.MkdirAll(filepath.Join(CgroupRoot, "cpu", "placer-test-probe"), 0o755); err != nil {
		t.Skipf("no writable cgroup v1 cpu hierarchy under %s: %v", CgroupRoot, err)
	}
	_ = os.Remove(filepath.Join(CgroupRoot, "cpu", "placer-test-probe"))
	g, err := NewCPUGroup(CgroupRoot, fmt.Sprintf("placer-test-%d", os.Getpid()), 0.2, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A busy loop, started and moved at once.
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	}()
	if err := g.Add(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), ":cpu:/"+g.Name()) || !strings.Contains(string(b), ":cpuacct:/"+g.Name()) {
		t.Fatalf("the process is not in the group:\n%s", b)
	}
	time.Sleep(time.Second)
	used, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	// 0.2 CPU for a second: far less than the whole CPU it would take.
	if used <= 0 || used > 500*time.Millisecond {
		t.Errorf("a busy loop used %v in a second at a quota of 0.2 CPU", used)
	}
	if th, err := g.Throttled(); err != nil || th <= 0 {
		t.Errorf("throttled %v, %v; want the quota to have held it back", th, err)
	}
}
