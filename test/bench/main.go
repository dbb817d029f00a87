// Command bench measures placer end to end on local clusters against the
// single-cluster baseline, in one run on the same clusters: the same pods
// created straight into one member and scheduled by its stock
// kube-scheduler, with the same client rate limits. It then compares
// fanOut 1 with fanOut over every member (as Admiralty does), and reads
// the peak RSS of placer's processes. 'make bench' runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/placer-dev/placer/cluster/local"
)

type options struct {
	members, nodes, workloads, multi, multiReplicas int
	// divided: instead of the throughput phases, this many Workloads of
	// dividedReplicas each, single-cluster and then Divided.
	divided, dividedReplicas int
	qps                      float64
	burst                    int
	componentQPS             float64
	componentBurst           int
	propagatorWorkers        int
	proxyPodWorkers          int
	maxRunnerUps             int
	binDir, placer, out      string
	timeout                  time.Duration
	profile                  bool
	// profilePhase: the phase -profile profiles.
	profilePhase                string
	dynamics                    string
	writeCosts                  bool
	writeCostN, writeCostRounds int
	// clusterCPUs: each cluster's CPU quota (0: one shared pool); kwok's
	// and the benchmark's own (0: no quota).
	clusterCPUs, kwokCPUs, benchCPUs float64
	// cpuPeriod: the CFS period of every group's quota (0: the kernel's
	// 100 ms).
	cpuPeriod time.Duration
	// kcmQPS: the members' kube-controller-manager's --kube-api-qps (0:
	// kcmQPS's default from the client rate).
	kcmQPS int
	// rates: instead of the throughput phases, the offered-load measure
	// at these items per second; unloaded: its samples per phase one at
	// a time; rateWindow: how long each rate offers items; loadPhases:
	// the phases it runs (all when empty).
	rates, loadPhases string
	// phases: the burst's phases to run, by namespace (all when empty).
	phases      string
	unloaded    int
	unloadedGap time.Duration
	rateWindow  time.Duration
	// karmada: run Karmada's control plane beside placer (its phase after
	// the baselines; make karmada builds it).
	karmada bool
	// karmadaModels: Karmada's CustomizedClusterResourceModeling feature
	// (on by default there): its scheduler estimates a cluster's room
	// from resource models.
	karmadaModels bool
	// started: when the run began, and the code it ran (git describe).
	started time.Time
	commit  string
}

func main() {
	o := options{}
	flag.IntVar(&o.members, "members", 3, "member clusters")
	flag.IntVar(&o.nodes, "nodes", 500, "kwok nodes per member")
	flag.IntVar(&o.workloads, "workloads", 1000, "single-replica workloads (and baseline pods) per phase")
	flag.IntVar(&o.multi, "multi", 20, "multi-replica workloads per phase")
	flag.IntVar(&o.multiReplicas, "multi-replicas", 5, "replicas of each multi-replica workload")
	flag.IntVar(&o.divided, "divided", 0, "instead of the throughput phases, create this many Workloads of -divided-replicas each, first each in one cluster (fanOut 1), then Divided over the members by their room, and compare")
	flag.IntVar(&o.dividedReplicas, "divided-replicas", 12, "replicas of each Workload of -divided")
	flag.Float64Var(&o.qps, "client-qps", 50, "QPS of the client that creates workloads and baseline pods")
	flag.IntVar(&o.burst, "client-burst", 100, "burst of that client")
	flag.Float64Var(&o.componentQPS, "component-qps", 50, "--kube-api-qps (and the manager's --cluster-qps and --scheduler-qps; twice it its --proxy-pod-qps, as their defaults: a proxy pod takes two Pod writes) of every placer component")
	flag.IntVar(&o.componentBurst, "component-burst", 100, "--kube-api-burst (and --cluster-burst, --scheduler-burst; twice it --proxy-pod-burst) of every placer component")
	flag.IntVar(&o.proxyPodWorkers, "proxy-pod-workers", 16, "the manager's --proxy-pod-workers (its default)")
	flag.IntVar(&o.propagatorWorkers, "propagator-workers", 16, "the manager's --propagator-workers (its default)")
	flag.IntVar(&o.maxRunnerUps, "max-runner-up-candidates", 30, "the manager's --max-runner-up-candidates (0: no bound)")
	flag.StringVar(&o.binDir, "bin-dir", "bin", "folder 'make tools' builds into")
	flag.StringVar(&o.placer, "placer", "bin/placer", "placer binary")
	flag.StringVar(&o.out, "out", filepath.Join("_output", "bench"), "results folder")
	flag.DurationVar(&o.timeout, "phase-timeout", 20*time.Minute, "bound of each phase")
	flag.BoolVar(&o.profile, "profile", false, "take 20 s CPU profiles of the manager and of the management and member-0 kube-apiservers during one phase, -profile-phase (NAME-cpu.pprof and NAME-cpu-top.txt in the results folder)")
	flag.StringVar(&o.profilePhase, "profile-phase", "fanout-1", "with -profile: the burst's phase profiled, by namespace ("+strings.Join(profilePhases, ", ")+"), from its first create")
	flag.StringVar(&o.dynamics, "dynamics", "", "instead of the throughput phases, measure failover and drain with these numbers of Workloads, e.g. 100,300 (results in dynamics.md)")
	flag.BoolVar(&o.writeCosts, "write-costs", false, "instead of the throughput phases, measure the API server's and etcd's CPU per write of each kind placer makes, beside the built-in writes, on one local control plane (results in write-costs.md)")
	flag.IntVar(&o.writeCostN, "write-cost-n", 400, "writes of each kind per round of -write-costs")
	flag.IntVar(&o.writeCostRounds, "write-cost-rounds", 3, "rounds of -write-costs")
	flag.IntVar(&o.kcmQPS, "kcm-qps", 0, "--kube-api-qps of every cluster's kube-controller-manager (burst twice it); 0: six times -client-qps, at least 20 (a Deployment's pods are about three of its writes each)")
	flag.Float64Var(&o.clusterCPUs, "cluster-cpus", 0, "give each cluster (its control plane and the placer components in it) a CPU quota of this many CPUs, as separate machines would (cgroup v1 cpu and cpuacct, as root); 0: one shared pool")
	flag.Float64Var(&o.kwokCPUs, "kwok-cpus", 0, "with -cluster-cpus: kwok's quota (it plays every member's nodes); 0: none, accounted only")
	flag.DurationVar(&o.cpuPeriod, "cpu-period", local.DefaultCFSPeriod, "with -cluster-cpus: the CFS period each quota is a share of (1ms to 1s): a group that spent its share waits for the next period, up to 60 ms of the kernel's 100 ms at 0.4 CPU; a shorter one spreads the same share finer, as a slower CPU would")
	flag.Float64Var(&o.benchCPUs, "bench-cpus", 0, "with -cluster-cpus: the benchmark's own quota (its clients and watches); 0: none, accounted only")
	flag.StringVar(&o.rates, "rates", "", "instead of the throughput phases, offer single-replica items to each phase open loop at these rates (items per second, e.g. 10,20,40,60), after -unloaded items one at a time; report the highest rate each sustains with p99 added ≤ 3 s (results in load.md)")
	flag.IntVar(&o.unloaded, "unloaded", 30, "with -rates: items per phase created one at a time, each once the one before runs and -unloaded-gap has passed")
	flag.DurationVar(&o.unloadedGap, "unloaded-gap", 500*time.Millisecond, "with -rates: how long the fleet idles between unloaded items (what the item before left to do, its status and Events, done); 0: back to back")
	flag.DurationVar(&o.rateWindow, "rate-window", 15*time.Second, "with -rates: how long each rate offers items")
	flag.StringVar(&o.loadPhases, "load-phases", "", "with -rates: the phases to run, by namespace, separated by commas (all when empty: "+strings.Join(append(append(slices.Clone(baselineNamespaces), nsKarmada), placerNamespaces()...), ",")+")")
	flag.StringVar(&o.phases, "phases", "", "the burst's phases to run, by namespace, separated by commas (all when empty: "+strings.Join(burstPhases(), ",")+"; "+nsKarmada+" with -karmada)")
	flag.BoolVar(&o.karmada, "karmada", false, "run Karmada "+karmadaVersion+" beside placer on the same members, from bin/karmada ('make karmada'), and its phase: a Deployment per item with a PropagationPolicy placing it in one member")
	flag.BoolVar(&o.karmadaModels, "karmada-resource-models", true, "with -karmada: leave Karmada's CustomizedClusterResourceModeling feature on, as it ships (false turns it off in its controller manager and scheduler: its scheduler then estimates a cluster's room from its resource summary alone)")
	flag.Parse()

	ctrl.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
