// Package registry assembles placer's built-in scheduling plugins.
package registry

import (
	"github.com/placer-dev/placer/predicates"
	"github.com/placer-dev/placer/priorities"
	"github.com/placer-dev/placer/scheduler"
)

// Default returns every built-in plugin by name.
func Default() scheduler.Registry {
	return scheduler.Registry{
		predicates.ClusterReadyName:         {predicates.NewClusterReady},
		predicates.ClusterUnschedulableName: {predicates.NewClusterUnschedulable},
		predicates.ClusterTenancyName:       {predicates.NewClusterTenancy},
		predicates.NamedClusterName:         {predicates.NewNamedCluster},
		predicates.ClusterSelectorName:      {predicates.NewClusterSelector},
		predicates.ClusterAffinityName:      {predicates.NewClusterAffinity, priorities.NewClusterAffinity},
		predicates.ClusterTaintsName:        {predicates.NewClusterTaints},
		predicates.PodSecurityName:          {predicates.NewPodSecurity},
		predicates.HandshakeRejectedName:    {predicates.NewHandshakeRejected},
		predicates.ResourceFitName:          {predicates.NewResourceFit},
		predicates.WorkloadAffinityName:     {predicates.NewWorkloadAffinity, priorities.NewWorkloadAffinity},
		predicates.WorkloadAntiAffinityName: {predicates.NewWorkloadAntiAffinity, priorities.NewWorkloadAntiAffinity},
		priorities.TaintTolerationName:      {priorities.NewTaintToleration},
		priorities.ResourceAllocationName:   {priorities.NewResourceAllocation},
	}
}

// DefaultPlugins are the plugins a profile runs unless it disables them, in
// the order filters run: cheap and decisive first, inter-workload affinity last.
var DefaultPlugins = []string{
	predicates.ClusterReadyName,
	predicates.ClusterUnschedulableName,
	predicates.ClusterTenancyName,
	predicates.NamedClusterName,
	predicates.ClusterSelectorName,
	predicates.ClusterAffinityName,
	predicates.ClusterTaintsName,
	predicates.PodSecurityName,
	predicates.HandshakeRejectedName,
	predicates.ResourceFitName,
	predicates.WorkloadAffinityName,
	predicates.WorkloadAntiAffinityName,
	priorities.TaintTolerationName,
	priorities.ResourceAllocationName,
}

// NewProfiles builds the configuration's profiles from the built-in plugins.
func NewProfiles(c *scheduler.Configuration) (map[string]*scheduler.Profile, error) {
	return scheduler.NewProfiles(c, Default(), DefaultPlugins)
}
