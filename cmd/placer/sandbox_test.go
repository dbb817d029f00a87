package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/placer-dev/placer/examples"
)

// TestSandboxOnce runs what 'make sandbox' runs, with --once, and checks
// that every member is listed Ready with its nodes and that every example
// Workload landed where its '# expect:' comment says.
func TestSandboxOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The members' agents and candidate schedulers run from a placer binary.
	placer := filepath.Join(t.TempDir(), "placer")
	if b, err := exec.CommandContext(ctx, "go", "build", "-o", placer, ".").CombinedOutput(); err != nil {
		t.Fatalf("cannot build placer: %v\n%s", err, b)
	}
	out := &bytes.Buffer{}
	err := runSandbox(ctx, out, &sandboxOptions{dir: t.TempDir(), placer: placer, once: true, timeout: 4 * time.Minute})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			rows[f[0]] = f
		}
	}
	for _, m := range fleet() {
		row, ok := rows[m.name]
		if !ok {
			t.Errorf("member %s is not in the table", m.name)
			continue
		}
		if row[1] != "True" || row[3] != "v1.35.4" {
			t.Errorf("member %s: want Ready True and version v1.35.4, got %v", m.name, row)
		}
	}
	// Every example landed where its comment says (--once fails otherwise,
	// and the placement table shows it).
	exs, err := examples.Workloads()
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exs {
		row, ok := rows[ex.Workload.Name]
		if !ok {
			t.Errorf("example %s is not in the placement table", ex.Workload.Name)
			continue
		}
		if row[1] != ex.Expect || row[2] != ex.Expect {
			t.Errorf("example %s (%s): expected %s, table says %v", ex.Workload.Name, ex.File, ex.Expect, row)
		}
	}
	// The fleet dynamics: small drained (nightly, preferring it, moves;
	// the selector example, which only small matches, waits), then large
	// cut off (leader, StopBeforeStart, moves and waits for large) and
	// cleaned once it answers again.
	for _, want := range []string{
		"Workload default/nightly: moved to default/",
		"Workload default/storefront: waiting to move:",
		"Uncordoned small",
		"KubernetesCluster default/large: Ready False (Unreachable)",
		"Workload default/leader: moved to default/",
		"Workload default/leader runs in default/",
		"Workload default/reports: placed there by the scheduler example-cheapest",
		"Nothing is left in large",
		// Ordinary pods through the front end.
		"Deployment default/hello: 3/3 available",
		"Job default/count: 2/2 succeeded",
		"on node placer.default.",
		// kubectl logs of one of them: its delegate's, from kwok in its
		// member.
		"a container of kwok in cluster ",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the fleet dynamics' output lacks %q", want)
		}
	}
}
