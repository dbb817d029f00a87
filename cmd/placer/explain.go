package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	schedulerctrl "github.com/placer-dev/placer/controllers/scheduler"
	"github.com/placer-dev/placer/propagator"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
)

func newExplainCommand() *cobra.Command {
	f := &targetFlags{}
	var sf schedulerConfigFlags
	var output string
	cmd := &cobra.Command{
		Use:   "explain [workload/|pod/][NAMESPACE/]NAME",
		Short: "Explain where a Workload landed and why not elsewhere",
		Long: `Explain a Workload's placement: for every cluster, each predicate's verdict
and reason, each priority's score and weight and the weighted total, and the
handshake's outcome there (committed, rejected by the target's scheduler, or
proving as a fan-out runner-up). It runs the scheduler's cycle now, on the
fleet as it is now, with every predicate evaluated (the scheduler stops at
the first failure), leaving the Workload itself out of the placed ones.

pod/NAME explains a proxy pod (an ordinary pod placed through the front end
for Admiralty's source pods): it is placed as the Workload of its own name,
which it owns.

Installed as kubectl-placer on the PATH, it is also 'kubectl placer explain'.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains([]string{"", "text", "json", "yaml"}, output) {
				return errors.Errorf("-o %q: want json, yaml or text", output)
			}
			arg, pod := kindOf(args[0])
			c, key, err := f.target(arg)
			if err != nil {
				return err
			}
			if pod {
				if err := proxyPodWorkload(cmd.Context(), c, key); err != nil {
					return err
				}
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
			return explain(cmd.Context(), cmd.OutOrStdout(), c, profiles, key, output)
		},
	}
	fs := cmd.Flags()
	f.register(fs, "")
	fs.StringVarP(&output, "output", "o", "", "json or yaml: the explanation as data (every cluster's verdicts, scores and handshake); text when empty")
	sf.register(fs)
	return cmd
}

// kindOf strips a kubectl-style kind prefix: workload/ (the default) or
// pod/, which names a proxy pod.
func kindOf(arg string) (string, bool) {
	for _, p := range []string{"pod/", "pods/", "po/"} {
		if rest, ok := strings.CutPrefix(arg, p); ok {
			return rest, true
		}
	}
	for _, p := range []string{"workload/", "workloads/"} {
		if rest, ok := strings.CutPrefix(arg, p); ok {
			return rest, false
		}
	}
	return arg, false
}

// proxyPodWorkload checks that the pod key names is a proxy pod placed
// through the Workload of its name, and says so clearly otherwise.
func proxyPodWorkload(ctx context.Context, c client.Client, key types.NamespacedName) error {
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, key, w); err != nil {
		if kerrors.IsNotFound(err) {
			return errors.Errorf("pod %s is not placed by placer: no Workload of its name (a proxy pod is placed as one; is it annotated %s, in a namespace labelled %s=%s?)",
				key, v1alpha1.AnnotationElect, v1alpha1.LabelSourceNamespace, v1alpha1.SourceNamespaceEnabled)
		}
		return errors.Wrapf(err, "cannot get Workload %s", key)
	}
	if _, ok := w.Labels[v1alpha1.LabelProxyPod]; !ok {
		return errors.Errorf("Workload %s is not a proxy pod's: explain it as workload/%s", key, key.Name)
	}
	return nil
}

// commandName is how the user called us: "kubectl placer" as a plugin.
func commandName(arg0 string) string {
	if filepath.Base(arg0) == "kubectl-placer" {
		return "kubectl placer"
	}
	return "placer"
}

// Explanation is what explain says of a Workload; -o json and -o yaml
// print it as it is.
type Explanation struct {
	Workload      string `json:"workload"`
	Generation    int64  `json:"generation"`
	SchedulerName string `json:"schedulerName"`
	// PlacedOn is the cluster it is placed on; empty for none.
	PlacedOn      string            `json:"placedOn,omitempty"`
	ReadyReplicas int32             `json:"readyReplicas"`
	Replicas      int32             `json:"replicas"`
	Scheduled     *ConditionSummary `json:"scheduled,omitempty"`
	Ready         *ConditionSummary `json:"ready,omitempty"`
	// ServedByPlacer is false when another scheduler serves its
	// schedulerName; then Handshakes alone are said, not a cycle.
	ServedByPlacer bool     `json:"servedByPlacer"`
	Handshakes     []string `json:"handshakes,omitempty"`
	// Notes say what the reader's rights did not let explain read.
	Notes              []string             `json:"notes,omitempty"`
	ClustersConsidered int                  `json:"clustersConsidered"`
	Feasible           int                  `json:"feasible"`
	Clusters           []ClusterExplanation `json:"clusters,omitempty"`
	// Shares are a Divided or Duplicated Workload's shares as its status
	// lists them; Division is how a cycle now would divide it.
	Shares   []v1alpha1.SharePlacement `json:"shares,omitempty"`
	Division *DivisionExplanation      `json:"division,omitempty"`
	// Rebalance says whether the Workload would move back to a cluster it
	// prefers more (a spread one: to the division it would be given
	// afresh), by its policy and if placer rebalance asked now; or that
	// its move back is under way.
	Rebalance []string `json:"rebalance,omitempty"`
}

// DivisionExplanation is how the replicas would be divided now: each
// cluster's share and why, each feasible cluster without one and why.
type DivisionExplanation struct {
	Shares   []scheduler.Share `json:"shares,omitempty"`
	Excluded map[string]string `json:"excluded,omitempty"`
	Unplaced int               `json:"unplaced,omitempty"`
	Reason   string            `json:"reason,omitempty"`
}

// ConditionSummary is a condition's status, reason and message.
type ConditionSummary struct {
	Status  corev1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason"`
	Message string                 `json:"message"`
}

// ClusterExplanation is one cluster of the cycle: feasible clusters by
// rank first, then the others by name.
type ClusterExplanation struct {
	Cluster  string `json:"cluster"`
	Feasible bool   `json:"feasible"`
	// Rank (1 is the best) and Total, of a feasible cluster.
	Rank       int        `json:"rank,omitempty"`
	Total      int64      `json:"total,omitempty"`
	Predicates []Verdict  `json:"predicates"`
	Priorities []Priority `json:"priorities,omitempty"`
	Handshake  string     `json:"handshake"`
	// Overrides say which spec.overrides apply there, when it has any.
	Overrides string `json:"overrides,omitempty"`
}

// Verdict is a predicate's verdict on a cluster.
type Verdict struct {
	Plugin string `json:"plugin"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason,omitempty"`
}

// Priority is a priority's normalized score and weight on a cluster.
type Priority struct {
	Plugin string `json:"plugin"`
	Score  int64  `json:"score"`
	Weight int64  `json:"weight"`
}

// explain prints the placement of one Workload, cluster by cluster, as
// text, or as JSON or YAML (format).
func explain(ctx context.Context, out io.Writer, c client.Client, profiles map[string]*scheduler.Profile, key types.NamespacedName, format ...string) error {
	e, err := explanation(ctx, c, profiles, key)
	if err != nil {
		return err
	}
	switch f := strings.Join(format, ""); f {
	case "", "text":
		printExplanation(out, e)
		return nil
	case "json":
		b, err := json.MarshalIndent(e, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		b, err := yaml.Marshal(e)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	default:
		return errors.Errorf("-o %q: want json, yaml or text", f)
	}
}

// explanation runs the scheduler's cycle now, on the fleet as the reader
// may see it, with every predicate evaluated.
func explanation(ctx context.Context, c client.Client, profiles map[string]*scheduler.Profile, key types.NamespacedName) (*Explanation, error) {
	w := &v1alpha1.Workload{}
	if err := c.Get(ctx, key, w); err != nil {
		return nil, errors.Wrapf(err, "cannot get Workload %s", key)
	}
	e := &Explanation{Workload: key.String(), Generation: w.Generation, SchedulerName: w.Spec.SchedulerName,
		ReadyReplicas: w.Status.ReadyReplicas, Replicas: shownReplicas(w)}
	if w.Status.ClusterRef != nil {
		e.PlacedOn = w.ClusterKey(w.Status.ClusterRef).String()
	}
	if sc := w.Status.GetCondition(v1alpha1.TypeScheduled); sc.Message != "" {
		e.Scheduled = &ConditionSummary{Status: sc.Status, Reason: string(sc.Reason), Message: sc.Message}
	}
	if rc := w.Status.GetCondition(xpv2.TypeReady); rc.Message != "" {
		e.Ready = &ConditionSummary{Status: rc.Status, Reason: string(rc.Reason), Message: rc.Message}
	}
	profile, ok := profiles[w.Spec.SchedulerName]
	if !ok {
		e.Handshakes = handshakes(w)
		return e, nil
	}
	e.ServedByPlacer = true
	snap, notes, err := fleetSnapshot(ctx, c, w)
	if err != nil {
		return nil, err
	}
	e.Notes = notes
	res := profile.Schedule(ctx, w, snap, scheduler.Options{AllFilters: true})
	explainCycle(e, w, profile, snap, res)
	if w.Spreads() {
		explainDivision(e, w, profile, snap, res)
	} else if w.Status.ClusterRef != nil {
		// AllFilters ranks the feasible clusters as the scheduler does.
		e.Rebalance = explainRebalance(w, profile, res, time.Now())
	}
	return e, nil
}

// explainRebalance says whether the Workload would move back to a cluster
// it prefers more: by its policy (judged with the manager's default
// window and margin, which its flags may change), and if placer
// rebalance asked now.
func explainRebalance(w *v1alpha1.Workload, p *scheduler.Profile, res *scheduler.Result, now time.Time) []string {
	current := w.ClusterKey(w.Status.ClusterRef)
	tolerations := scheduler.ExecutionTolerations(w, scheduler.DefaultTolerations(300, 300))
	var out []string
	if w.Spec.Placement.Rebalance == v1alpha1.RebalanceWhenPreferred {
		switch leave, _, wait := schedulerctrl.Preferred(w, p, res, current, tolerations, schedulerctrl.DefaultRebalanceAfter, schedulerctrl.DefaultRebalanceMargin, now); {
		case leave != nil:
			out = append(out, "WhenPreferred: moves back now: "+leave.Message)
		case wait > 0:
			out = append(out, fmt.Sprintf("WhenPreferred: moves back to a cluster it prefers more in %s, once that cluster has been Ready, and it placed here, for %s", wait.Round(time.Second), schedulerctrl.DefaultRebalanceAfter))
		default:
			out = append(out, fmt.Sprintf("WhenPreferred: stays; no cluster that can take it is preferred by %d%% over %s", schedulerctrl.DefaultRebalanceMargin, current))
		}
	}
	if leave, _, _ := schedulerctrl.Preferred(w, p, res, current, tolerations, 0, 0, now); leave != nil {
		out = append(out, "placer rebalance now would move it: "+leave.Message)
	} else {
		out = append(out, "placer rebalance now would keep it on "+current.String())
	}
	return out
}

// explainDivision adds a spread Workload's shares, and how a cycle now
// would divide it, starting from them.
func explainDivision(e *Explanation, w *v1alpha1.Workload, p *scheduler.Profile, snap *scheduler.Snapshot, res *scheduler.Result) {
	e.Shares = w.Status.Placements
	current := map[types.NamespacedName]int{}
	for _, p := range w.Status.Placements {
		current[w.ClusterKey(&p.Cluster)] = int(p.Replicas)
	}
	// As the divider starts from them: a cluster holding a share keeps it
	// whatever the cycle says of it now.
	in, _ := schedulerctrl.DivisionInput(w, res, current, nil, snap.Cluster)
	d := scheduler.Divide(in, schedulerctrl.PolicyOf(w))
	e.Division = &DivisionExplanation{Shares: d.Shares, Unplaced: d.Unplaced, Reason: d.Reason, Excluded: map[string]string{}}
	for k, why := range d.Excluded {
		e.Division.Excluded[k.String()] = why
	}
	e.Rebalance = explainMoveBack(w, p, in, res)
}

// explainMoveBack says whether a spread Workload moves back to the
// division it would be given afresh: under way, by its policy (judged
// with the manager's default window and margin), and if placer rebalance
// asked now.
func explainMoveBack(w *v1alpha1.Workload, p *scheduler.Profile, in scheduler.DivisionInput, res *scheduler.Result) []string {
	if mb := w.Status.Rebalancing; mb != nil {
		return []string{fmt.Sprintf("under way since %s: %s; the shares that grow are made first, the others shrink once they are Ready", mb.Time.UTC().Format(time.RFC3339), mb.Message)}
	}
	df, moved := schedulerctrl.Afresh(w, p, in, res)
	if why := schedulerctrl.WorthMoving(w, in, df, moved, 0, true); why != "" {
		return []string{"nothing to move back: " + why}
	}
	out := []string{fmt.Sprintf("afresh it would be divided %s: %d of its %d replicas would move", schedulerctrl.SharesText(df.Shares), moved, w.ReplicaCount())}
	if w.Spec.Placement.Rebalance == v1alpha1.RebalanceWhenPreferred {
		if why := schedulerctrl.WorthMoving(w, in, df, moved, schedulerctrl.DefaultRebalanceMargin, false); why != "" {
			out = append(out, "WhenPreferred: stays; "+why)
		} else {
			out = append(out, fmt.Sprintf("WhenPreferred: moves back there once every cluster it grows in has been Ready, and its division unchanged, for %s", schedulerctrl.DefaultRebalanceAfter))
		}
	}
	return append(out, "placer rebalance now would move it there, once every cluster it grows in is Ready")
}

// printDivision prints a spread Workload's shares and division.
func printDivision(out io.Writer, e *Explanation) {
	fmt.Fprintf(out, "  shares:      %d\n", len(e.Shares))
	for _, p := range e.Shares {
		fmt.Fprintf(out, "    %s/%s: %d replica(s), %d ready (Workload %s): %s\n", p.Cluster.Namespace, p.Cluster.Name, p.Replicas, p.ReadyReplicas, p.Workload, p.Reason)
	}
	d := e.Division
	fmt.Fprintln(out, "\nA division now, from those shares:")
	if d.Reason != "" {
		fmt.Fprintf(out, "  none: %s\n", d.Reason)
		return
	}
	for _, sh := range d.Shares {
		fmt.Fprintf(out, "  %s: %d replica(s): %s\n", sh.Cluster, sh.Replicas, sh.Why)
	}
	for _, k := range slices.Sorted(maps.Keys(d.Excluded)) {
		fmt.Fprintf(out, "  %s: no share: %s\n", k, d.Excluded[k])
	}
	if d.Unplaced > 0 {
		fmt.Fprintf(out, "  %d replica(s) find no room\n", d.Unplaced)
	}
}

// printExplanation prints an explanation as text.
func printExplanation(out io.Writer, e *Explanation) {
	fmt.Fprintf(out, "Workload %s (generation %d, schedulerName %s)\n", e.Workload, e.Generation, e.SchedulerName)
	switch {
	case e.Division != nil:
		fmt.Fprintf(out, "  placed as:   shares (%d/%d replicas ready)\n", e.ReadyReplicas, e.Replicas)
	case e.PlacedOn != "":
		fmt.Fprintf(out, "  placed on:   %s (%d/%d replicas ready)\n", e.PlacedOn, e.ReadyReplicas, e.Replicas)
	default:
		fmt.Fprintln(out, "  placed on:   nowhere")
	}
	if c := e.Scheduled; c != nil {
		fmt.Fprintf(out, "  Scheduled:   %s (%s): %s\n", c.Status, c.Reason, c.Message)
	}
	if c := e.Ready; c != nil {
		fmt.Fprintf(out, "  Ready:       %s (%s): %s\n", c.Status, c.Reason, c.Message)
	}
	if !e.ServedByPlacer {
		fmt.Fprintf(out, "\nschedulerName %q is not served by placer's scheduler: another scheduler places this Workload.\n", e.SchedulerName)
		for _, h := range e.Handshakes {
			fmt.Fprintf(out, "  %s\n", h)
		}
		return
	}
	if len(e.Notes) > 0 {
		fmt.Fprintln(out, "\nRead with your rights:")
		for _, n := range e.Notes {
			fmt.Fprintf(out, "  - %s\n", n)
		}
	}
	fmt.Fprintf(out, "\nA scheduling cycle now, over %d cluster(s), %d feasible:\n", e.ClustersConsidered, e.Feasible)
	for _, c := range e.Clusters {
		printCluster(out, c)
	}
	if e.Division != nil {
		fmt.Fprintln(out)
		printDivision(out, e)
	}
	if len(e.Rebalance) > 0 {
		fmt.Fprintln(out, "\nMoving back:")
		for _, r := range e.Rebalance {
			fmt.Fprintf(out, "  %s\n", r)
		}
	}
}

// explainCycle adds a scheduling cycle of the Workload over the fleet:
// the feasible clusters by rank, then the others by name.
func explainCycle(e *Explanation, w *v1alpha1.Workload, profile *scheduler.Profile, snap *scheduler.Snapshot, res *scheduler.Result) {
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
	e.ClustersConsidered, e.Feasible = res.Total, len(res.Ranked)
	for _, k := range keys {
		e.Clusters = append(e.Clusters, explainCluster(w, snap, res, k, rank, weights))
	}
}

// explainCluster says why one cluster of the cycle is feasible or not, how
// it scored, and what its handshake and the overrides say there.
func explainCluster(w *v1alpha1.Workload, snap *scheduler.Snapshot, res *scheduler.Result, k types.NamespacedName, rank map[types.NamespacedName]int, weights map[string]int64) ClusterExplanation {
	ce := ClusterExplanation{Cluster: k.String(), Handshake: handshakeOutcome(w, k)}
	for _, s := range res.Filters[k] {
		v := Verdict{Plugin: s.Plugin(), Pass: s.IsSuccess()}
		if !v.Pass {
			v.Reason = s.Message()
		}
		ce.Predicates = append(ce.Predicates, v)
	}
	if i, ok := rank[k]; ok {
		r := res.Ranked[i]
		ce.Feasible, ce.Rank, ce.Total = true, i+1, r.Total
		scores := r.Scores()
		for _, n := range slices.Sorted(maps.Keys(scores)) {
			ce.Priorities = append(ce.Priorities, Priority{Plugin: n, Score: scores[n], Weight: weights[n]})
		}
	}
	if len(w.Spec.Overrides) > 0 {
		ce.Overrides = overridesIn(w, snap.Cluster(k))
	}
	return ce
}

// printCluster prints one cluster of the cycle as text.
func printCluster(out io.Writer, c ClusterExplanation) {
	fmt.Fprintln(out)
	if c.Feasible {
		fmt.Fprintf(out, "%s: feasible, rank %d, total %d\n", c.Cluster, c.Rank, c.Total)
	} else {
		fmt.Fprintf(out, "%s: not feasible\n", c.Cluster)
	}
	fmt.Fprintln(out, "  predicates:")
	for _, v := range c.Predicates {
		verdict := "pass"
		if !v.Pass {
			verdict = "FAIL  " + v.Reason
		}
		fmt.Fprintf(out, "    %-22s %s\n", v.Plugin, verdict)
	}
	if c.Feasible {
		fmt.Fprintln(out, "  priorities (normalized 1-10 × weight):")
		for _, p := range c.Priorities {
			fmt.Fprintf(out, "    %-22s %2d × %d = %d\n", p.Plugin, p.Score, p.Weight, p.Score*p.Weight)
		}
	}
	fmt.Fprintf(out, "  handshake: %s\n", c.Handshake)
	if c.Overrides != "" {
		fmt.Fprintf(out, "  overrides: %s\n", c.Overrides)
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
	switch err := c.List(ctx, cbs, client.InNamespace(w.Namespace)); {
	case kerrors.IsForbidden(err):
		cbs.Items = nil
		notes = append(notes, fmt.Sprintf("the ClusterBindings of namespace %s are not readable with your rights: clusters of other namespaces are evaluated as not bound", w.Namespace))
	case err != nil:
		return nil, nil, errors.Wrap(err, "cannot list ClusterBindings")
	}
	for i := range cbs.Items {
		cache.UpsertBinding(client.ObjectKeyFromObject(&cbs.Items[i]), cbs.Items[i].Spec.ClusterNamespace)
	}

	kcs, more, err := readableClusters(ctx, c, w, cbs.Items)
	if err != nil {
		return nil, nil, err
	}
	notes = append(notes, more...)
	for i := range kcs {
		cache.UpsertCluster(&kcs[i])
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

// readableClusters lists the KubernetesClusters the reader may see:
// every one, else those of the Workload's namespace and of the namespaces
// its ClusterBindings name, saying which it could not read.
func readableClusters(ctx context.Context, c client.Client, w *v1alpha1.Workload, bindings []v1alpha1.ClusterBinding) ([]v1alpha1.KubernetesCluster, []string, error) {
	all := &v1alpha1.KubernetesClusterList{}
	switch err := c.List(ctx, all); {
	case err == nil:
		return all.Items, nil, nil
	case !kerrors.IsForbidden(err):
		return nil, nil, errors.Wrap(err, "cannot list KubernetesClusters")
	}
	namespaces := []string{w.Namespace}
	for _, cb := range bindings {
		if !slices.Contains(namespaces, cb.Spec.ClusterNamespace) {
			namespaces = append(namespaces, cb.Spec.ClusterNamespace)
		}
	}
	var out []v1alpha1.KubernetesCluster
	var notes []string
	for _, ns := range namespaces {
		in := &v1alpha1.KubernetesClusterList{}
		switch err := c.List(ctx, in, client.InNamespace(ns)); {
		case kerrors.IsForbidden(err) && ns != w.Namespace:
			notes = append(notes, fmt.Sprintf("the KubernetesClusters of namespace %s, which a ClusterBinding names, are not readable with your rights: the cycle leaves them out", ns))
		case kerrors.IsForbidden(err):
			notes = append(notes, fmt.Sprintf("the KubernetesClusters of namespace %s are not readable with your rights: the cycle leaves them out", ns))
		case err != nil:
			return nil, nil, errors.Wrapf(err, "cannot list KubernetesClusters in namespace %s", ns)
		default:
			out = append(out, in.Items...)
		}
	}
	return out, notes, nil
}

// shownReplicas is the replica count a person is shown: the propagator's
// count once it wrote one, the desired count before (its first handshake
// writes no count until the member answers).
func shownReplicas(w *v1alpha1.Workload) int32 {
	if w.Status.Replicas > 0 {
		return w.Status.Replicas
	}
	return int32(w.ReplicaCount())
}

// handshakeOutcome says what the propagator recorded for the cluster.
func handshakeOutcome(w *v1alpha1.Workload, k types.NamespacedName) string {
	if rc := w.Rejection(k); rc != nil {
		return fmt.Sprintf("rejected (%s): %s%s%s", rc.Reason, rc.Message, reservedNote(rc), retryNote(w, rc, time.Now()))
	}
	if lc := w.Left(k); lc != nil {
		return fmt.Sprintf("left (%s): %s; %s", lc.Reason, lc.Message, stillThere(w, lc))
	}
	if w.PlacedOn(k) {
		if w.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue {
			return "committed; every replica ready"
		}
		return fmt.Sprintf("chosen; %d of %d replicas scheduled, %d ready", w.Status.ScheduledReplicas, shownReplicas(w), w.Status.ReadyReplicas)
	}
	for _, n := range w.Status.NominatedClusters {
		if w.ClusterKey(&n) == k {
			return "nominated (fan-out): candidates prove it while the chosen cluster answers"
		}
	}
	return "none"
}

// handshakes lists the handshake outcomes recorded on the Workload.
func handshakes(w *v1alpha1.Workload) []string {
	now := time.Now()
	var out []string
	for _, rc := range w.Status.RejectedClusters {
		if rc.Generation == w.Generation {
			out = append(out, fmt.Sprintf("rejected by %s (%s): %s%s%s", w.ClusterKey(&rc.Cluster), rc.Reason, rc.Message, reservedNote(&rc), retryNote(w, &rc, now)))
		}
	}
	for _, lc := range w.Status.LeftClusters {
		out = append(out, fmt.Sprintf("left %s (%s): %s; %s", w.ClusterKey(&lc.Cluster), lc.Reason, lc.Message, stillThere(w, &lc)))
	}
	return out
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

// reservedNote says how many candidates a rejecting cluster did reserve.
func reservedNote(rc *v1alpha1.RejectedCluster) string {
	if rc.Reserved == 0 {
		return ""
	}
	return fmt.Sprintf(" (it reserved %d of the candidates first)", rc.Reserved)
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
