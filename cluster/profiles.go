package cluster

import (
	"slices"

	"sigs.k8s.io/cluster-inventory-api/pkg/access"
)

// Profiles is how the manager reaches the clusters of the standard
// inventory: the admin's access providers, and the namespaces whose
// ClusterProfiles it reads.
type Profiles struct {
	// Access is the access providers' configuration
	// (--clusterprofile-provider-file); nil when none is configured.
	Access *access.Config
	// Namespaces are those whose ClusterProfiles the manager reads
	// (--clusterprofile-namespace): a KubernetesCluster elsewhere cannot
	// borrow the admin's credentials.
	Namespaces []string
}

// Allows reports whether the ClusterProfiles of namespace are read.
func (p Profiles) Allows(namespace string) bool {
	return p.Access != nil && slices.Contains(p.Namespaces, namespace)
}
