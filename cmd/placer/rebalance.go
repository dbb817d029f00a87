package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/internal/fleetwait"
)

func newRebalanceCommand() *cobra.Command {
	f := &targetFlags{}
	var all bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "rebalance ([NAMESPACE/]WORKLOAD ... | --all)",
		Short: "Move placed Workloads back to the clusters they prefer, once",
		Long: `Ask the scheduler, once, to move each placed Workload to the cluster it
prefers most (its cluster affinity, workload affinity and taints it would
rather avoid; not the room) if that is not its own and can take it now:
after a failover or a drain moved it away, say, when the Workload's
spec.placement.rebalance is Never. Each move is a move as any other: proven by
the handshake, by the Workload's move policy (make-before-break by default),
bounded by --max-concurrent-moves. Unlike WhenPreferred, it waits for no
window and needs no margin: the operator asks now. A Divided or Duplicated
Workload moves to the division it would be given afresh, its shares that
grow made and Ready before the others shrink. The request holds for ` + v1alpha1.RebalanceRequestTTL.String() + `
(the annotation ` + v1alpha1.AnnotationRebalance + `). It then follows the
Workloads for --wait and says which moved and which stay.

Installed as kubectl-placer on the PATH, it is also 'kubectl placer rebalance'.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if all == (len(args) > 0) {
				return errors.New("name the Workloads to rebalance, or --all for every one of the namespace, not both")
			}
			c, keys, err := f.workloads(cmd.Context(), args, all)
			if err != nil {
				return err
			}
			was, err := askRebalance(cmd.Context(), c, keys, time.Now())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(was) == 0 {
				fmt.Fprintln(out, "No placed Workload to rebalance.")
				return nil
			}
			for _, key := range keys {
				if on, ok := was[key]; ok {
					fmt.Fprintf(out, "Workload %s on %s: asked to move to the cluster it prefers\n", key, on)
				}
			}
			if wait <= 0 {
				return nil
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			return followRebalance(ctx, out, c, was)
		},
	}
	fs := cmd.Flags()
	f.register(fs, "")
	fs.BoolVar(&all, "all", false, "every Workload of the namespace (-n, else the context's)")
	fs.DurationVar(&wait, "wait", 30*time.Second, "how long to follow the Workloads for where they go (0: do not)")
	return cmd
}

// workloads are the Workloads the arguments name ([NAMESPACE/]NAME), or
// every one of the namespace with all.
func (f *targetFlags) workloads(ctx context.Context, args []string, all bool) (client.WithWatch, []types.NamespacedName, error) {
	if !all {
		var c client.WithWatch
		keys := make([]types.NamespacedName, 0, len(args))
		for _, a := range args {
			cl, key, err := f.target(a)
			if err != nil {
				return nil, nil, err
			}
			c = cl
			keys = append(keys, key)
		}
		return c, keys, nil
	}
	c, key, err := f.target("")
	if err != nil {
		return nil, nil, err
	}
	l := &v1alpha1.WorkloadList{}
	if err := c.List(ctx, l, client.InNamespace(key.Namespace)); err != nil {
		return nil, nil, errors.Wrapf(err, "cannot list the Workloads of namespace %s", key.Namespace)
	}
	keys := make([]types.NamespacedName, 0, len(l.Items))
	for i := range l.Items {
		keys = append(keys, types.NamespacedName{Namespace: l.Items[i].Namespace, Name: l.Items[i].Name})
	}
	return c, keys, nil
}

// askRebalance annotates each placed Workload with the request
// (v1alpha1.AnnotationRebalance) and returns where each was (placedOn).
func askRebalance(ctx context.Context, c client.Client, keys []types.NamespacedName, now time.Time) (map[types.NamespacedName]string, error) {
	was := map[types.NamespacedName]string{}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.AnnotationRebalance, now.UTC().Format(time.RFC3339))
	for _, key := range keys {
		w := &v1alpha1.Workload{}
		if err := c.Get(ctx, key, w); err != nil {
			return was, errors.Wrapf(err, "cannot get Workload %s", key)
		}
		on := placedOn(w)
		if on == "" || w.IsShare() {
			// A share moves with its Workload's division.
			continue
		}
		if err := c.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			return was, errors.Wrapf(err, "cannot ask Workload %s to rebalance", key)
		}
		was[key] = on
	}
	return was, nil
}

// followRebalance watches the Workloads until each has moved from the
// cluster it was on, or ctx ends, and says where each is: a list and a
// watch per namespace (a namespace's user may watch no other), all at
// once, so that a move made before the watch began is seen too, and a
// namespace whose Workloads stay holds no other's back.
func followRebalance(ctx context.Context, out io.Writer, c client.WithWatch, was map[types.NamespacedName]string) error {
	asked := map[string]int{}
	for key := range was {
		asked[key.Namespace]++
	}
	var mu sync.Mutex
	moved := map[types.NamespacedName]bool{}
	g := errgroup.Group{}
	for ns, want := range asked {
		g.Go(func() error {
			n := 0
			err := fleetwait.Each(ctx, c, &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns}}, &v1alpha1.WorkloadList{},
				func(w *v1alpha1.Workload, deleted bool) {
					key := client.ObjectKeyFromObject(w)
					on, ok := was[key]
					mu.Lock()
					defer mu.Unlock()
					now := placedOn(w)
					if !ok || deleted || moved[key] || now == "" || now == on || w.Status.Rebalancing != nil {
						return
					}
					moved[key] = true
					n++
					fmt.Fprintf(out, "Workload %s moved from %s to %s\n", key, on, now)
				}, func() bool { return n == want })
			if err != nil && ctx.Err() == nil {
				return errors.Wrapf(err, "cannot follow the Workloads of namespace %s", ns)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, key := range slices.SortedFunc(maps.Keys(was), v1alpha1.CompareKeys) {
		if !moved[key] {
			fmt.Fprintf(out, "Workload %s stays on %s: no cluster it prefers more can take it now (placer explain says why)\n", key, was[key])
		}
	}
	return nil
}

// placedOn says where a Workload is placed: its cluster, or a spread
// Workload's shares ("shares a=4,b=4"); empty when it is placed nowhere.
func placedOn(w *v1alpha1.Workload) string {
	switch {
	case w.Spreads() && w.Status.Shares != "":
		return "shares " + w.Status.Shares
	case !w.Spreads() && w.Status.ClusterRef != nil:
		return w.ClusterKey(w.Status.ClusterRef).String()
	}
	return ""
}
