package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/propagator"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
)

func newExplainCommand() *cobra.Command {
	f := &targetFlags{}
	var sf schedulerConfigFlags
	cmd := &cobra.Command{
		Use:   "explain [NAMESPACE/]NAME",
		Short: "Explain where a Workload landed and why not elsewhere",
		Long: `Explain a Workload's placement: for every cluster, each predicate's verdict
and reason, each priority's score and weight and the weighted total, and the
handshake's outcome there (committed, rejected by the target's scheduler, or
proving as a fan-out runner-up). It runs the scheduler's cycle now, on the
fleet as it is now, with every predicate evaluated (the scheduler stops at
the first failure), leaving the Workload itself out of the placed ones.

Installed as kubectl-placer on the PATH, it is also 'kubectl placer explain'.`,
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
			profiles, err := registry.NewProfiles(conf)
			if err != nil {
				return err
			}
			return explain(cmd.Context(), cmd.OutOrStdout(), c, profiles, key)
		},
	}
	fs := cmd.Flags()
	f.register(fs, "")
	sf.register(fs)
	return cmd
}

// commandName is how the user called us: "kubectl placer" as a plugin.
func commandName(arg0 string) string {
	if filepath.Base(arg0) == "kubectl-placer" {
		return "kubectl placer"
	}
	return "placer"
}

// explain prints the placement of one Workload, cluster by cluster.
func explain(ctx context.Context, out io.Writer, c client.Client, profiles map[string]*scheduler.Profile, key types.NamespacedName) error {
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, key, w); err != nil {
		return errors.Wrapf(err, "cannot get Workload %s", key)
	}
	fmt.Fprintf(out, "Workload %s (generation %d, schedulerName %s)\n", key, w.Generation, w.Spec.SchedulerName)
	scheduled := w.Status.GetCondition(v1alpha1.TypeScheduled)
	ready := w.Status.GetCondition(xpv2.TypeReady)
	if w.Status.ClusterRef != nil {
		fmt.Fprintf(out, "  placed on:   %s (%d/%d replicas ready)\n", w.ClusterKey(w.Status.ClusterRef), w.Status.ReadyReplicas, w.Status.Replicas)
	} else {
		fmt.Fprintln(out, "  placed on:   nowhere")
	}
	if scheduled.Message != "" {
		fmt.Fprintf(out, "  Scheduled:   %s (%s): %s\n", scheduled.Status, scheduled.Reason, scheduled.Message)
	}
	if ready.Message != "" {
		fmt.Fprintf(out, "  Ready:       %s (%s): %s\n", ready.Status, ready.Reason, ready.Message)
	}
	profile, ok := profiles[w.Spec.SchedulerName]
	if !ok {
		fmt.Fprintf(out, "\nschedulerName %q is not served by placer's scheduler: another scheduler places this Workload.\n", w.Spec.SchedulerName)
		printHandshakes(out, w)
		return nil
	}

	snap, notes, err := fleetSnapshot(ctx, c, w)
	if err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(out, "\nRead with your rights:")
		for _, n := range notes {
			fmt.Fprintf(out, "  - %s\n", n)
		}
	}
	printCycle(out, w, profile, snap, profile.Schedule(ctx, w, snap, scheduler.Options{AllFilters: true}))
	return nil
}

// printCycle prints a scheduling cycle of the Workload over the fleet:
// the feasible clusters by rank, then the others by name.
func printCycle(out io.Writer, w *v1alpha1.Workload, profile *scheduler.Profile, snap *scheduler.Snapshot, res *scheduler.Result) {
	rank := map[types.NamespacedName]int{}
	for i, r := range res.Ranked {
		rank[r.Cluster.Key] = i
	}
	weights := map[string]int64{}
	for _, ws := range profile.Scores {
		weights[ws.Plugin.Name()] = ws.Weight
	}
	keys := make([]types.NamespacedName, 0, len(snap.Clusters))
	for _, ci := range snap.Clusters {
		keys = append(keys, ci.Key)
	}
	// Feasible clusters by rank, then the others by name.
	sort.SliceStable(keys, func(i, j int) bool {
		ri, iok := rank[keys[i]]
		rj, jok := rank[keys[j]]
		if iok != jok {
			return iok
		}
		if iok {
			return ri < rj
		}
		return keys[i].String() < keys[j].String()
	})
	fmt.Fprintf(out, "\nA scheduling cycle now, over %d cluster(s), %d feasible:\n", res.Total, len(res.Ranked))
	for _, k := range keys {
		printCluster(out, w, snap, res, k, rank, weights)
	}
}

// printCluster says why one cluster of the cycle is feasible or not, how
// it scored, and what its handshake and the overrides say there.
func printCluster(out io.Writer, w *v1alpha1.Workload, snap *scheduler.Snapshot, res *scheduler.Result, k types.NamespacedName, rank map[types.NamespacedName]int, weights map[string]int64) {
	fmt.Fprintln(out)
	if i, ok := rank[k]; ok {
		r := res.Ranked[i]
		fmt.Fprintf(out, "%s: feasible, rank %d, total %d\n", k, i+1, r.Total)
	} else {
		fmt.Fprintf(out, "%s: not feasible\n", k)
	}
	fmt.Fprintln(out, "  predicates:")
	for _, s := range res.Filters[k] {
		verdict := "pass"
		if !s.IsSuccess() {
			verdict = "FAIL  " + s.Message()
		}
		fmt.Fprintf(out, "    %-22s %s\n", s.Plugin(), verdict)
	}
	if i, ok := rank[k]; ok {
		fmt.Fprintln(out, "  priorities (normalized 1-10 × weight):")
		r := res.Ranked[i]
		scores := r.Scores()
		names := make([]string, 0, len(scores))
		for n := range scores {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(out, "    %-22s %2d × %d = %d\n", n, scores[n], weights[n], scores[n]*weights[n])
		}
	}
	fmt.Fprintf(out, "  handshake: %s\n", handshakeOutcome(w, k))
	if len(w.Spec.Overrides) > 0 {
		fmt.Fprintf(out, "  overrides: %s\n", overridesIn(w, snap.Cluster(k)))
	}
}

// overridesIn says which spec.overrides rules apply in the cluster, in
// order, and what they change of the pod template.
func overridesIn(w *v1alpha1.Workload, ci *scheduler.ClusterInfo) string {
	delivered, applied, err := propagator.Overridden(w, ci)
	switch {
	case err != nil:
		return "cannot be applied: " + err.Error()
	case len(applied) == 0:
		return "none apply"
	}
	var changed []string
	base, over := w.Spec.TargetDeployment.Template, delivered.Spec.TargetDeployment.Template
	for i, c := range over.Spec.Containers {
		if b := base.Spec.Containers[i]; b.Image != c.Image {
			changed = append(changed, fmt.Sprintf("%s image %s", c.Name, c.Image))
		}
	}
	if !equality.Semantic.DeepEqual(base.Spec.NodeSelector, over.Spec.NodeSelector) {
		changed = append(changed, fmt.Sprintf("nodeSelector %v", over.Spec.NodeSelector))
	}
	msg := strings.Join(applied, ", ")
	if len(changed) > 0 {
		msg += " (" + strings.Join(changed, "; ") + ")"
	}
	return msg
}

// fleetSnapshot builds the scheduler's view of the fleet from the API, as
// the reader may see it: cluster-wide where it may list cluster-wide (an
// administrator, the manager), else a tenant's part — its namespace's
// Workloads and KubernetesClusters, and the clusters of each namespace it
// binds where it may read them. notes say what could not be read, and so
// what the cycle leaves out; nothing of a namespace the reader may not
// read is ever shown.
func fleetSnapshot(ctx context.Context, c client.Client, w *v1alpha1.Workload) (snap *scheduler.Snapshot, notes []string, err error) {
	cache := scheduler.NewCache()
	// The Workload's namespace's own: what its tenant may read.
	cbs := &v1alpha1.ClusterBindingList{}
	if err := c.List(ctx, cbs, client.InNamespace(w.Namespace)); err != nil {
		return nil, nil, errors.Wrap(err, "cannot list ClusterBindings")
	}
	for i := range cbs.Items {
		cache.UpsertBinding(client.ObjectKeyFromObject(&cbs.Items[i]), cbs.Items[i].Spec.ClusterNamespace)
	}

	kcs := &v1alpha1.KubernetesClusterList{}
	switch err := c.List(ctx, kcs); {
	case kerrors.IsForbidden(err):
		kcs.Items = nil
		namespaces := []string{w.Namespace}
		for _, cb := range cbs.Items {
			if !slices.Contains(namespaces, cb.Spec.ClusterNamespace) {
				namespaces = append(namespaces, cb.Spec.ClusterNamespace)
			}
		}
		for _, ns := range namespaces {
			in := &v1alpha1.KubernetesClusterList{}
			switch err := c.List(ctx, in, client.InNamespace(ns)); {
			case kerrors.IsForbidden(err) && ns != w.Namespace:
				notes = append(notes, fmt.Sprintf("the KubernetesClusters of namespace %s, which a ClusterBinding names, are not readable with your rights: the cycle leaves them out", ns))
			case err != nil:
				return nil, nil, errors.Wrapf(err, "cannot list KubernetesClusters in namespace %s", ns)
			default:
				kcs.Items = append(kcs.Items, in.Items...)
			}
		}
	case err != nil:
		return nil, nil, errors.Wrap(err, "cannot list KubernetesClusters")
	}
	for i := range kcs.Items {
		cache.UpsertCluster(&kcs.Items[i])
	}

	ws := &v1alpha1.WorkloadList{}
	switch err := c.List(ctx, ws); {
	case kerrors.IsForbidden(err):
		if err := c.List(ctx, ws, client.InNamespace(w.Namespace)); err != nil {
			return nil, nil, errors.Wrapf(err, "cannot list Workloads in namespace %s", w.Namespace)
		}
		notes = append(notes, fmt.Sprintf("the Workloads of other namespaces than %s are not readable with your rights: inter-workload affinity is evaluated against %s's alone", w.Namespace, w.Namespace))
	case err != nil:
		return nil, nil, errors.Wrap(err, "cannot list Workloads")
	}
	for i := range ws.Items {
		if ws.Items[i].UID != w.UID {
			cache.UpsertWorkload(&ws.Items[i])
		}
	}

	nss := &corev1.NamespaceList{}
	switch err := c.List(ctx, nss); {
	case kerrors.IsForbidden(err):
		ns := &corev1.Namespace{}
		switch err := c.Get(ctx, types.NamespacedName{Name: w.Namespace}, ns); {
		case kerrors.IsForbidden(err):
			notes = append(notes, fmt.Sprintf("namespace %s's labels are not readable with your rights: clusters offered to it by a namespaceSelector are evaluated without them", w.Namespace))
			nss.Items = nil
		case err != nil:
			return nil, nil, errors.Wrapf(err, "cannot get Namespace %s", w.Namespace)
		default:
			nss.Items = []corev1.Namespace{*ns}
		}
	case err != nil:
		return nil, nil, errors.Wrap(err, "cannot list Namespaces")
	}
	for _, ns := range nss.Items {
		cache.UpsertNamespace(ns.Name, ns.Labels)
	}
	return cache.Snapshot(), notes, nil
}

// handshakeOutcome says what the propagator recorded for the cluster.
func handshakeOutcome(w *v1alpha1.Workload, k types.NamespacedName) string {
	if rc := w.Rejection(k); rc != nil {
		return fmt.Sprintf("rejected (%s): %s%s", rc.Reason, rc.Message, retryNote(w, rc, time.Now()))
	}
	if lc := w.Left(k); lc != nil {
		return fmt.Sprintf("left (%s): %s; %s", lc.Reason, lc.Message, stillThere(w, lc))
	}
	if w.PlacedOn(k) {
		if w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
			return "committed; every replica ready"
		}
		return fmt.Sprintf("chosen; %d of %d replicas scheduled, %d ready", w.Status.ScheduledReplicas, w.Status.Replicas, w.Status.ReadyReplicas)
	}
	for _, n := range w.Status.NominatedClusters {
		if w.ClusterKey(&n) == k {
			return "nominated (fan-out): candidates prove it while the chosen cluster answers"
		}
	}
	return "none"
}

// printHandshakes lists the handshake outcomes recorded on the Workload.
func printHandshakes(out io.Writer, w *v1alpha1.Workload) {
	now := time.Now()
	for _, rc := range w.Status.RejectedClusters {
		if rc.Generation == w.Generation {
			fmt.Fprintf(out, "  rejected by %s (%s): %s%s\n", w.ClusterKey(&rc.Cluster), rc.Reason, rc.Message, retryNote(w, &rc, now))
		}
	}
	for _, lc := range w.Status.LeftClusters {
		fmt.Fprintf(out, "  left %s (%s): %s; %s\n", w.ClusterKey(&lc.Cluster), lc.Reason, lc.Message, stillThere(w, &lc))
	}
}

// stillThere says what the propagator last counted in a cluster the
// Workload left.
func stillThere(w *v1alpha1.Workload, lc *v1alpha1.LeftCluster) string {
	switch c := w.Counted(w.ClusterKey(&lc.Cluster)); {
	case c == nil:
		return "not counted there yet"
	case !w.LeftBehind(lc):
		return "nothing left there"
	default:
		return fmt.Sprintf("%d replica(s) still there to clean up", c.Replicas)
	}
}

// retryNote says when a rejecting cluster is tried again.
func retryNote(w *v1alpha1.Workload, rc *v1alpha1.RejectedCluster, now time.Time) string {
	switch {
	case w.ChosenSince(rc):
		return fmt.Sprintf(" (rejection %d; chosen again since: the cluster opened up)", rc.Attempts)
	case rc.RetryAfter == nil:
		return ""
	case rc.Expired(now):
		return fmt.Sprintf(" (rejection %d; expired at %s: the cluster is tried again)", rc.Attempts, rc.RetryAfter.UTC().Format(time.RFC3339))
	default:
		return fmt.Sprintf(" (rejection %d; tried again at %s, in %s, or sooner if its capacity grows or its labels or taints change)",
			rc.Attempts, rc.RetryAfter.UTC().Format(time.RFC3339), rc.RetryAfter.Sub(now).Round(time.Second))
	}
}
