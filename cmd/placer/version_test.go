package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOf: the version set at build time wins; else the module
// version Go recorded (go install ...@v0.1.0); else the commit the binary
// was built from, marked when the tree had changes; else dev.
func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	cases := []struct {
		name string
		set  string
		info *debug.BuildInfo
		want string
	}{
		{"set with -ldflags", "v0.2.0", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.2.0"},
		{"go install of a release", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0"},
		{"built in a clean checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "false")}, "dev-0123456789ab"},
		{"built in a changed checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("0123456789abcdef0123", "true")}, "dev-0123456789ab-dirty"},
		{"nothing recorded", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build information", "", nil, "dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionOf(tc.set, tc.info); got != tc.want {
				t.Errorf("versionOf() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestVersionFlag: placer --version prints what placer version prints
// first.
func TestVersionFlag(t *testing.T) {
	run := func(args ...string) string {
		t.Helper()
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("placer %v: %v", args, err)
		}
		return out.String()
	}
	want := placerVersion()
	if got := run("--version"); got != "placer "+want+"\n" {
		t.Errorf("placer --version printed %q, want %q", got, "placer "+want+"\n")
	}
	if first, _, _ := strings.Cut(run("version"), "\n"); !strings.HasSuffix(first, " "+want) {
		t.Errorf("placer version printed %q first, want the version %q", first, want)
	}
}
