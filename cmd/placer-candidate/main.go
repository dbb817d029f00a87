// Command placer-candidate is placer's candidate scheduler alone: 'placer
// candidate-scheduler', built with another Kubernetes minor version's
// kube-scheduler (hack/candidate/MINOR builds it for the members that the
// placer binary's own kube-scheduler may not run against, by Kubernetes'
// version-skew policy). A member's Deployment runs it with the same
// arguments as 'placer'.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/placer-dev/placer/member/candidate"
)

// version is placer's, set by the build (-X main.version).
var version = "unknown"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "placer-candidate",
		Short:         "placer's candidate scheduler, built with one Kubernetes minor version's kube-scheduler",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.Flags().Bool("version", false, "print placer's version and exit")
	root.AddCommand(candidate.NewCommand())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
