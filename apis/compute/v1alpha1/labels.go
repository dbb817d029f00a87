package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Built-in cluster labels, published by the cluster controller and visible to
// every predicate and to topologyKey.
const (
	LabelClusterName      = "compute.placer.dev/cluster-name"
	LabelClusterNamespace = "compute.placer.dev/cluster-namespace"
	LabelClusterVersion   = "compute.placer.dev/cluster-version"
	LabelCloudProvider    = "compute.placer.dev/cloud-provider"
	LabelRegion           = "topology.kubernetes.io/region"
	LabelZone             = "topology.kubernetes.io/zone"

	// The Crossplane design's label keys, as aliases of the built-ins: its
	// examples apply as written. crossplane.io/provider is the cloud
	// provider; crossplane.io/kubernetes has one value per cluster, so as
	// a topologyKey it makes each cluster a domain of its own.
	LabelCrossplaneProvider   = "crossplane.io/provider"
	LabelCrossplaneKubernetes = "crossplane.io/kubernetes"
)

// LabelAliases maps the Crossplane design's attribute names, accepted by
// clusterSelector, to the built-in labels they stand for. A clusterVersion
// without its leading "v" ('1.11.4') matches the cluster's v1.11.4.
var LabelAliases = map[string]string{
	"clusterName":      LabelClusterName,
	"clusterNamespace": LabelClusterNamespace,
	"clusterVersion":   LabelClusterVersion,
	"cloudProvider":    LabelCloudProvider,
}

// Finalizers placer's controllers put on the management cluster's objects.
const (
	// FinalizerPropagator holds a deleted Workload until what placer sent
	// to members for it is gone (or abandoned with a member that does not
	// answer).
	FinalizerPropagator = "compute.placer.dev/propagator"
	// FinalizerDrain holds a deleted KubernetesCluster until its Workloads
	// have moved away and what placer sent there is gone (or the cluster
	// does not answer).
	FinalizerDrain = "compute.placer.dev/drain"
	// FinalizerProxyPod, on a proxy pod (the webhook adds it when it makes
	// one), holds the pod, being deleted, until its Workload has gone and
	// with it its delegate, as a kubelet holds a pod until its containers
	// have stopped. The API server would otherwise remove at once a pod no
	// node holds, and a proxy pod is unbound until placer binds it, after
	// its delegate was committed: a StatefulSet's next pod of its name
	// would be placed while the delegate runs on. A bound pod deleted with
	// no grace period (kubectl delete --force) is let go at once, its
	// Workload marked AnnotationProxyPodGone.
	FinalizerProxyPod = "compute.placer.dev/proxy-pod"
)

// DefaultSchedulerName is the schedulerName a Workload gets when none is set.
const DefaultSchedulerName = "placer-scheduler"

// Condition types and reasons of this API.
const (
	TypeScheduled = "Scheduled"
	// TypeComplete is True once every replica's pod ended on its own and
	// succeeded (restartPolicy Never or OnFailure), as a Job's.
	TypeComplete = "Complete"
	// TypeFailed is True once every replica's pod ended on its own and one
	// or more failed.
	TypeFailed = "Failed"

	ReasonReady          = "Ready"
	ReasonSecretNotFound = "SecretNotFound"
	ReasonBadKubeconfig  = "BadKubeconfig"
	// ReasonKubeconfigRefused: the kubeconfig asks for what placer's
	// policy refuses (exec plugins, file paths, insecure TLS, proxies,
	// loopback or link-local servers); the message names the field.
	ReasonKubeconfigRefused = "KubeconfigRefused"
	ReasonUnreachable       = "Unreachable"
	// ReasonAgentNotRunning: the cluster answers, but placer's agent has
	// published no summary or stopped renewing it.
	ReasonAgentNotRunning = "AgentNotRunning"
	// ReasonCandidateSchedulerNotRunning: the cluster answers, but its
	// candidate scheduler does not renew its Lease, so no handshake there
	// could succeed.
	ReasonCandidateSchedulerNotRunning = "CandidateSchedulerNotRunning"
	// ReasonUnsupportedVersion: the cluster answers, at a version placer's
	// candidate scheduler may not run against (Kubernetes' version-skew
	// policy); the message names both versions.
	ReasonUnsupportedVersion = "UnsupportedVersion"
	// ReasonClusterProfileNotFound: the cluster's ClusterProfile does not
	// exist (or cannot be read).
	ReasonClusterProfileNotFound = "ClusterProfileNotFound"
	// ReasonClusterProfileRefused: the manager does not reach the
	// cluster's ClusterProfile: none of its access providers serves it, or
	// it does not read ClusterProfiles in that namespace.
	ReasonClusterProfileRefused = "ClusterProfileRefused"
	// ReasonClusterProfileUnhealthy: the cluster answers, but its
	// ClusterProfile's ControlPlaneHealthy condition is not True.
	ReasonClusterProfileUnhealthy = "ClusterProfileUnhealthy"
	ReasonUnauthorized            = "Unauthorized"
	// ReasonClusterIdentityChanged: the kubeconfig reaches another cluster
	// than the one placer placed in (status.clusterID), or one whose agent
	// publishes no identity: placer sends it nothing, and its Workloads
	// are as on a cluster that does not answer.
	ReasonClusterIdentityChanged = "ClusterIdentityChanged"
	ReasonUnschedulable          = "Unschedulable"
	// ReasonHandshakeTimeout: a cluster rejected because its candidates
	// were not all reserved (or a gang of one's not bound within its
	// window) in time; like Unschedulable, a want of room, which room
	// gained there ends.
	ReasonHandshakeTimeout = "HandshakeTimeout"
	// ReasonNotReady: the cluster answers but is not ready for placement.
	ReasonNotReady = "NotReady"
	// ReasonTainted: a Workload left a cluster with a NoExecute taint it
	// does not tolerate (or no longer tolerates).
	ReasonTainted = "Tainted"
	// ReasonClusterDeleted: a Workload left a cluster being deleted.
	ReasonClusterDeleted = "ClusterDeleted"
	// ReasonRebalanced: a Workload left a cluster for one it prefers
	// more (spec.placement.rebalance WhenPreferred, or placer rebalance).
	ReasonRebalanced = "Rebalanced"
	// ReasonClusterUnreachable: the Workload's cluster does not answer;
	// its counts are not known (Ready Unknown).
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonInvalidTemplate: the pod template fails kube-apiserver's pod
	// validation or carries placer's own labels or annotations; the
	// message names the fields. Nothing is placed or rolled out.
	ReasonInvalidTemplate = "InvalidTemplate"
)

// ReservedPrefixes are placer's own label and annotation prefixes: they
// drive the handshake (is-allowed lets a candidate bind) and link member
// objects to Workloads, so a pod template may not carry them and they are
// never copied from one.
var ReservedPrefixes = []string{Group + "/", "multicluster.placer.dev/"}

// IsReservedKey reports whether a label or annotation key is placer's own.
func IsReservedKey(k string) bool {
	for _, p := range ReservedPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// LabelPrivateClusters, "true" on a management namespace, lets its
// KubernetesClusters reach servers at private and shared addresses (where
// members usually live, and so does the management network). Only whoever
// may label namespaces (a cluster admin, not a tenant) sets it.
const LabelPrivateClusters = "compute.placer.dev/private-clusters"

// LabelValueOf is v as a label value: v itself when it is one, else a
// hash of it ("h-" and 32 hex digits), the same for the same v (a name
// longer than 63 characters: a share's Workload's, a virtual node's).
func LabelValueOf(v string) string {
	if len(validation.IsValidLabelValue(v)) == 0 {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	return "h-" + hex.EncodeToString(sum[:16])
}
