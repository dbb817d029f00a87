package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManagerProfilesFlags: the access providers and the namespaces they
// serve come together, and a provider without an exec plugin is refused,
// each naming the flag.
func TestManagerProfilesFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"providers":[{"name":"eks","execConfig":{"apiVersion":"client.authentication.k8s.io/v1","command":"aws","interactiveMode":"Never"}}]}`)
	noExec := write("noexec.json", `{"providers":[{"name":"eks"}]}`)
	for name, tc := range map[string]struct {
		file       string
		namespaces []string
		wantErr    string
	}{
		"neither":                  {},
		"both":                     {file: good, namespaces: []string{"fleet"}},
		"namespaces without file":  {namespaces: []string{"fleet"}, wantErr: "--clusterprofile-provider-file"},
		"file without namespaces":  {file: good, wantErr: "--clusterprofile-namespace"},
		"a provider without exec":  {file: noExec, namespaces: []string{"fleet"}, wantErr: "providers[0]"},
		"a file that is not there": {file: filepath.Join(dir, "missing.json"), namespaces: []string{"fleet"}, wantErr: "--clusterprofile-provider-file"},
	} {
		o := &managerOptions{profileProviders: tc.file, profileNamespaces: tc.namespaces}
		p, err := o.profiles()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want an error naming %s", name, err, tc.wantErr)
		case tc.wantErr == "" && (p.Access != nil) != (tc.file != ""):
			t.Errorf("%s: access providers %v", name, p.Access)
		}
	}
}
