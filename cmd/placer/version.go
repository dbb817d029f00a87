package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/placer-dev/placer/cluster/local"
)

// version is set with -ldflags "-X main.version=..." (make sets it from
// git describe); unset, the build's own information says what it is.
var version = ""

// placerVersion is the version this binary reports (placer version,
// --version): the one set at build time, else the module version Go
// recorded (go install ...@v0.1.0), else the commit it was built from.
func placerVersion() string {
	info, _ := debug.ReadBuildInfo()
	return versionOf(version, info)
}

// versionOf works out the version from what the build set (ldflags) and
// what Go recorded (info, nil when there is none).
func versionOf(set string, info *debug.BuildInfo) string {
	if set != "" {
		return set
	}
	if info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "-dirty"
	}
	return "dev-" + rev
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of placer and of what it is built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "placer:      %s\n", placerVersion())
			fmt.Fprintf(out, "go:          %s\n", runtime.Version())
			fmt.Fprintf(out, "kubernetes:  %s (local clusters)\n", local.KubernetesVersion)
			fmt.Fprintf(out, "kwok:        %s (local clusters)\n", local.KwokVersion)
			if info, ok := debug.ReadBuildInfo(); ok {
				for _, d := range info.Deps {
					switch d.Path {
					case "sigs.k8s.io/controller-runtime", "k8s.io/client-go", "github.com/crossplane/crossplane-runtime/v2":
						v := d.Version
						if d.Replace != nil {
							v = d.Replace.Version
						}
						fmt.Fprintf(out, "%-12s %s\n", d.Path+":", v)
					}
				}
			}
			return nil
		},
	}
}
