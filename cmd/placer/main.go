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
		Use:           "placer",
		Short:         "placer schedules Kubernetes workloads across a fleet of clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newManagerCommand(),
		newSandboxCommand(),
		newVersionCommand(),
		newAgentCommand(),
		newCandidateSchedulerCommand(),
		notBuilt("explain NAMESPACE/NAME", "explain why a Workload landed where it did"),
	)
	return root
}

// notBuilt is a subcommand whose feature does not exist yet: it says so and
// fails, rather than pretend.
func notBuilt(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:                use,
		Short:              short + " (not built yet)",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("'placer %s' is not built yet", cmd.Name())
		},
	}
}

// zapLevelError keeps controller logs to errors in interactive commands.
func zapLevelError() zapcore.Level { return zapcore.ErrorLevel }
