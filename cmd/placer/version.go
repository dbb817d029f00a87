package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/placer-dev/placer/cluster/local"
)

// version is set with -ldflags "-X main.version=..." by release builds.
var version = "dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the versions of placer and of what it is built with",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "placer:      %s\n", version)
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
