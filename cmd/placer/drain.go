package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/cordon"
	"github.com/placer-dev/placer/internal/fleetwait"
	"github.com/placer-dev/placer/scheduler"
)

func newDrainCommand() *cobra.Command {
	f := &targetFlags{}
	var sf schedulerConfigFlags
	var wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "drain [NAMESPACE/]CLUSTER",
		Short: "Move every Workload off a cluster, without downtime",
		Long: `Drain a KubernetesCluster: taint it ` + v1alpha1.TaintClusterDraining + `:NoExecute.
Every Workload placed there that does not tolerate the taint moves: the
scheduler chooses another cluster, the handshake proves it, and the old pods
go only once the new ones are Ready (unless the Workload asks for
StopBeforeStart); no new Workload lands there. With --wait it follows the
Workloads until none runs there any more, or --timeout: a Workload that
tolerates the taint, has nowhere else to go (MovePending) or belongs to
another scheduler keeps it waiting, and is named. 'uncordon' takes the
taint away.

Installed as kubectl-placer on the PATH, it is also 'kubectl placer drain'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, key, err := f.target(args[0])
			if err != nil {
				return err
			}
			conf, note, err := sf.load(cmd.Context(), c)
			if err != nil {
				return err
			}
			if note != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "note:", note)
			}
			if err := cordon.Drain(cmd.Context(), c, key); err != nil {
				return err
			}
			if err := f.printCluster(cmd.Context(), cmd.OutOrStdout(), c, key, drainDone); err != nil {
				return err
			}
			if !wait {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			return follow(ctx, cmd.OutOrStdout(), c, key, drained, servedBy(conf))
		},
	}
	fs := cmd.Flags()
	f.register(fs, drainDone)
	fs.BoolVar(&wait, "wait", false, "wait until no Workload runs in the cluster any more")
	fs.DurationVar(&timeout, "timeout", 10*time.Minute, "how long --wait waits")
	sf.register(fs)
	return cmd
}

// drainDone is what drain did to the cluster.
const drainDone = "tainted " + v1alpha1.TaintClusterDraining + ":NoExecute"

func newCordonCommand() *cobra.Command {
	return editClusterCommand("cordon", "Keep new Workloads off a cluster; those there stay",
		`Cordon a KubernetesCluster: set spec.unschedulable, so that the scheduler
places no new Workload there. Workloads that run there stay ('drain' moves
them). 'uncordon' clears it.`, "cordoned", cordon.Cordon)
}

func newUncordonCommand() *cobra.Command {
	return editClusterCommand("uncordon", "Let Workloads land on a drained or cordoned cluster again",
		`Uncordon a KubernetesCluster: remove the `+v1alpha1.TaintClusterDraining+` taint that 'drain'
set and clear spec.unschedulable. Workloads that moved away stay where they
are now.`, "uncordoned", cordon.Uncordon)
}

// editClusterCommand is a command that edits the KubernetesCluster its
// argument names and says so (cordon, uncordon), or prints it as -o says.
func editClusterCommand(name, short, long, done string, edit func(context.Context, client.Client, types.NamespacedName) error) *cobra.Command {
	f := &targetFlags{}
	cmd := &cobra.Command{
		Use:   name + " [NAMESPACE/]CLUSTER",
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, key, err := f.target(args[0])
			if err != nil {
				return err
			}
			if err := edit(cmd.Context(), c, key); err != nil {
				return err
			}
			return f.printCluster(cmd.Context(), cmd.OutOrStdout(), c, key, done)
		},
	}
	f.register(cmd.Flags(), done)
	return cmd
}

// targetFlags name one object of the management cluster, [NAMESPACE/]NAME,
// for the commands a user runs against it (drain, cordon, uncordon,
// explain), with kubectl's own flags (cli-runtime's genericclioptions:
// --kubeconfig, --context, -n from the context, --as, …) and, for the
// commands that change a cluster, -o.
type targetFlags struct {
	config *genericclioptions.ConfigFlags
	print  *genericclioptions.PrintFlags
}

// register adds kubectl's flags; done, when not empty, is what the command
// did to the cluster, and adds -o to print it.
func (f *targetFlags) register(fs *pflag.FlagSet, done string) {
	f.config = genericclioptions.NewConfigFlags(true)
	f.config.AddFlags(fs)
	if done != "" {
		f.print = genericclioptions.NewPrintFlags(done).WithTypeSetter(apis.NewScheme())
		f.print.AddFlags(&cobra.Command{})
		fs.StringVarP(f.print.OutputFormat, "output", "o", "", "print the KubernetesCluster afterwards: one of "+strings.Join(f.print.AllowedFormats(), ", "))
	}
}

// target is a client of the management cluster that can also watch, and
// the object [NAMESPACE/]NAME names.
func (f *targetFlags) target(arg string) (client.WithWatch, types.NamespacedName, error) {
	// As kubectl: -n, else the context's namespace, else default.
	ns, _, err := f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, types.NamespacedName{}, errors.Wrap(err, "cannot load kubeconfig")
	}
	key := types.NamespacedName{Namespace: ns, Name: arg}
	if ns, name, ok := strings.Cut(arg, "/"); ok {
		key = types.NamespacedName{Namespace: ns, Name: name}
	}
	cfg, err := f.config.ToRESTConfig()
	if err != nil {
		return nil, key, errors.Wrap(err, "cannot load kubeconfig")
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: apis.NewScheme()})
	return c, key, errors.Wrap(err, "cannot create a client")
}

// printCluster says what was done to the cluster, or prints it as -o says.
func (f *targetFlags) printCluster(ctx context.Context, out io.Writer, c client.Client, key types.NamespacedName, done string) error {
	if f.print == nil || *f.print.OutputFormat == "" {
		fmt.Fprintf(out, "KubernetesCluster %s %s\n", key, done)
		return nil
	}
	printer, err := f.print.ToPrinter()
	if err != nil {
		return err
	}
	kc := &v1alpha1.KubernetesCluster{}
	if err := c.Get(ctx, key, kc); err != nil {
		return errors.Wrapf(err, "cannot get KubernetesCluster %s", key)
	}
	return printer.PrintObj(kc, out)
}

// servedBy is whether placer's scheduler serves a schedulerName.
func servedBy(conf *scheduler.Configuration) func(string) bool {
	names := map[string]bool{}
	for _, p := range conf.Profiles {
		names[p.SchedulerName] = true
	}
	return func(n string) bool { return names[n] }
}

// until says when following a cluster ends.
type until int

const (
	// drained: no Workload is placed on the cluster or has copies there.
	drained until = iota
	// moved: every Workload placed there has moved, or waits to move
	// (MovePending); copies may remain there.
	moved
	// cleaned: no Workload has copies left there.
	cleaned
)

// stay is why a Workload still concerns a cluster.
type stay int

const (
	none stay = iota
	placedThere
	waitingToMove
	copiesLeft
	// foreign: placed there by another scheduler, which must move it.
	foreign
	// endedThere: a batch Workload ran to its end there; it is not
	// moved, and holds no drain.
	endedThere
)

func (u until) done(s stay) bool {
	switch {
	case s == endedThere:
		return true
	case u == moved:
		return s != placedThere
	case u == cleaned:
		return s != copiesLeft
	default:
		return s == none
	}
}

// stayOf is why a Workload still concerns the cluster, and what to say of it.
func stayOf(w *v1alpha1.Workload, key types.NamespacedName, served func(schedulerName string) bool) (stay, string) {
	switch lc := w.Left(key); {
	case w.PlacedOn(key) && !served(w.Spec.SchedulerName):
		return foreign, fmt.Sprintf("placed there by the scheduler %s, which must move it", w.Spec.SchedulerName)
	case w.PlacedOn(key) && w.Finished():
		return endedThere, "ran to its end there: " + finishedMessage(w) + "; not moved"
	case w.PlacedOn(key) && w.DeletionTimestamp != nil:
		// A share its Workload gave up (or any Workload deleted): its
		// pods there go when the cluster answers.
		return copiesLeft, "deleted; what it left there goes when the cluster answers"
	case w.PlacedOn(key):
		if cond := w.Status.GetCondition(v1alpha1.TypeScheduled); cond.Reason == v1alpha1.ReasonMovePending {
			return waitingToMove, "waiting to move: " + cond.Message
		}
		return placedThere, "placed there"
	case lc != nil:
		to := "nowhere yet"
		if w.Status.ClusterRef != nil {
			to = w.ClusterKey(w.Status.ClusterRef).String()
		}
		return copiesLeft, fmt.Sprintf("moved to %s (%s); %s", to, lc.Reason, stillThere(w, lc))
	}
	return none, ""
}

// follow watches the Workloads that concern a cluster until u, printing
// each change: where a Workload went and why.
func follow(ctx context.Context, out io.Writer, c client.WithWatch, key types.NamespacedName, u until, served func(schedulerName string) bool) error {
	// on holds the Workloads that concern the cluster, and what was said
	// of each.
	type state struct {
		stay
		why string
	}
	on := map[types.NamespacedName]state{}
	track := func(w *v1alpha1.Workload, deleted bool) {
		k := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
		s, why := none, ""
		if !deleted {
			s, why = stayOf(w, key, served)
		}
		prev, was := on[k]
		switch {
		case s == none && was:
			delete(on, k)
			switch {
			case deleted:
				fmt.Fprintf(out, "Workload %s deleted\n", k)
			case w.Status.ClusterRef != nil:
				fmt.Fprintf(out, "Workload %s runs in %s; nothing of it left in %s\n", k, w.ClusterKey(w.Status.ClusterRef), key)
			default:
				fmt.Fprintf(out, "Workload %s: nothing of it left in %s; not placed anywhere\n", k, key)
			}
		case s != none:
			on[k] = state{s, why}
			if prev.why != why {
				fmt.Fprintf(out, "Workload %s: %s\n", k, why)
			}
		}
	}
	finished := func() bool {
		for _, s := range on {
			if !u.done(s.stay) {
				return false
			}
		}
		return true
	}
	err := fleetwait.Each(ctx, c, &v1alpha1.Workload{}, &v1alpha1.WorkloadList{}, track, finished)
	if err != nil {
		var waiting []string
		for k, s := range on {
			if !u.done(s.stay) {
				waiting = append(waiting, k.String()+" ("+s.why+")")
			}
		}
		sort.Strings(waiting)
		return errors.Wrapf(err, "%d Workload(s) still concern %s: %s", len(waiting), key, strings.Join(waiting, "; "))
	}
	if u == drained {
		fmt.Fprintf(out, "KubernetesCluster %s drained\n", key)
	}
	return nil
}
