package controllers

import (
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/placer-dev/placer/cluster"
	clusterctrl "github.com/placer-dev/placer/controllers/cluster"
	"github.com/placer-dev/placer/controllers/inventory"
	propagatorctrl "github.com/placer-dev/placer/controllers/propagator"
	schedulerctrl "github.com/placer-dev/placer/controllers/scheduler"
	"github.com/placer-dev/placer/controllers/shared"
	"github.com/placer-dev/placer/scheduler"
	"github.com/placer-dev/placer/scheduler/registry"
)

// /metrics is served behind the API server's authentication and
// authorization (--metrics-secure): the manager asks for both reviews.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Options configure every controller of the manager.
type Options struct {
	Cluster clusterctrl.Options
	// Scheduler is the scheduler's configuration; the default when nil.
	Scheduler *scheduler.Configuration
	// SchedulerQPS and SchedulerBurst limit the scheduler's own client,
	// which writes its decisions (50 and 100 when zero).
	SchedulerQPS   float32
	SchedulerBurst int
	// HandshakeTimeout bounds a cluster's answer to the candidates.
	HandshakeTimeout time.Duration
	// PropagatorWorkers is how many Workloads the propagator handles at
	// once (8 when zero).
	PropagatorWorkers int
	// MaxRunnerUps bounds the runner-up candidates waiting in one member
	// (none when zero).
	MaxRunnerUps int
	// NotReadyTolerationSeconds and UnreachableTolerationSeconds are how
	// long every Workload tolerates its cluster's condition taints unless
	// it says otherwise (negative: not at all, it moves at once).
	NotReadyTolerationSeconds, UnreachableTolerationSeconds int64
	// MaxConcurrentMoves bounds the drains in flight, fleet-wide (none when zero).
	MaxConcurrentMoves int
	// RebalanceAfter and RebalanceMargin are the rebalance's hysteresis
	// (scheduler.Options).
	RebalanceAfter  time.Duration
	RebalanceMargin int
}

// Setup adds every controller built so far to the manager and returns the
// registry of member connections.
func Setup(mgr ctrl.Manager, o Options) (*cluster.Registry, error) {
	if err := shared.IndexWorkloads(mgr); err != nil {
		return nil, err
	}
	reg, err := clusterctrl.Setup(mgr, o.Cluster)
	if err != nil {
		return nil, errors.Wrap(err, "cannot set up the cluster controller")
	}
	conf := o.Scheduler
	if conf == nil {
		conf = scheduler.DefaultConfiguration()
	}
	profiles, err := registry.NewProfiles(conf)
	if err != nil {
		return nil, errors.Wrap(err, "invalid scheduler configuration")
	}
	if err := schedulerctrl.Setup(mgr, schedulerctrl.Options{
		Profiles: profiles, QPS: o.SchedulerQPS, Burst: o.SchedulerBurst,
		DefaultTolerations: scheduler.DefaultTolerations(o.NotReadyTolerationSeconds, o.UnreachableTolerationSeconds),
		MaxConcurrentMoves: o.MaxConcurrentMoves,
		RebalanceAfter:     o.RebalanceAfter,
		RebalanceMargin:    o.RebalanceMargin,
	}); err != nil {
		return nil, errors.Wrap(err, "cannot set up the scheduler controller")
	}
	if err := propagatorctrl.Setup(mgr, propagatorctrl.Options{Registry: reg, HandshakeTimeout: o.HandshakeTimeout, Workers: o.PropagatorWorkers, MaxRunnerUps: o.MaxRunnerUps}); err != nil {
		return nil, errors.Wrap(err, "cannot set up the propagator")
	}
	if err := inventory.Setup(mgr, o.Cluster.Profiles); err != nil {
		return nil, errors.Wrap(err, "cannot set up the cluster inventory's controllers")
	}
	return reg, nil
}
