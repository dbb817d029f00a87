// Command placer schedules Kubernetes workloads across a fleet of clusters.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"

	"github.com/placer-dev/placer/member/candidate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRoot().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           commandName(os.Args[0]),
		Short:         "placer schedules Kubernetes workloads across a fleet of clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version, as placer version prints it first.
		Version: placerVersion(),
	}
	root.SetVersionTemplate("placer {{.Version}}\n")
	// Defined here, so that kube-scheduler's own --version (registered on
	// pflag.CommandLine, which cobra adds to the root's persistent flags)
	// does not stand in for it.
	root.Flags().Bool("version", false, "print placer's version and exit")
	root.AddCommand(
		newManagerCommand(),
		newSandboxCommand(),
		newVersionCommand(),
		newAgentCommand(),
		candidate.NewCommand(),
		newExplainCommand(),
		newCordonCommand(),
		newDrainCommand(),
		newUncordonCommand(),
		newRebalanceCommand(),
		newJoinCommand(),
		newUnjoinCommand(),
	)
	return root
}

// zapLevelError keeps controller logs to errors in interactive commands.
func zapLevelError() zapcore.Level { return zapcore.ErrorLevel }
