// Package cluster is placer's view of its member clusters: the kubeconfig
// policy a tenant's kubeconfig must meet, one Connection per
// KubernetesCluster (transport, clients, probes and every watch of the
// member), and the Members interface the propagator depends on.
package cluster
