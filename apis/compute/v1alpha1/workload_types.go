package v1alpha1

import (
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterReference names a KubernetesCluster.
type ClusterReference struct {
	// Name of the KubernetesCluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`

	// Namespace of the KubernetesCluster; the Workload's own when empty.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SelectorOperator relates a cluster label to a set of values.
// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
type SelectorOperator string

// ClusterSelectorRequirement is a label key, an operator and values, with the
// semantics of a node selector requirement.
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : true",message="values must hold at least one value when operator is In or NotIn",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 : true",message="values must be empty when operator is Exists or DoesNotExist",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="self.operator in ['Gt', 'Lt'] ? has(self.values) && size(self.values) == 1 && self.values[0].matches('^-?[0-9]+$') : true",message="values must hold exactly one integer when operator is Gt or Lt",fieldPath=".values"
type ClusterSelectorRequirement struct {
	// Key is the cluster label the requirement applies to: a label key,
	// an optional DNS subdomain prefix and a name of at most 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`

	// Operator relates the key to the values.
	Operator SelectorOperator `json:"operator"`

	// Values for In and NotIn (one or more), Gt and Lt (exactly one integer);
	// empty for Exists and DoesNotExist. Each is a label value.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// ClusterFieldSelectorRequirement selects clusters by a field; only
// metadata.name is supported.
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] && has(self.values) && size(self.values) == 1",message="matchFields supports only the In and NotIn operators, with exactly one value",fieldPath=".values"
type ClusterFieldSelectorRequirement struct {
	// Key is the field; only metadata.name is supported.
	// +kubebuilder:validation:Enum=metadata.name
	Key string `json:"key"`

	// Operator relates the field to the values.
	Operator SelectorOperator `json:"operator"`

	// Values to compare the field with: exactly one cluster name.
	// +kubebuilder:validation:MaxItems=1
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// ClusterSelectorTerm is satisfied when every one of its requirements is.
type ClusterSelectorTerm struct {
	// MatchExpressions over cluster labels, ANDed.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	MatchExpressions []ClusterSelectorRequirement `json:"matchExpressions,omitempty"`

	// MatchFields over cluster fields, ANDed.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	MatchFields []ClusterFieldSelectorRequirement `json:"matchFields,omitempty"`
}

// RequiredClusterSelector holds terms of which at least one must be satisfied.
type RequiredClusterSelector struct {
	// ClusterSelectorTerms are ORed.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	ClusterSelectorTerms []ClusterSelectorTerm `json:"clusterSelectorTerms"`
}

// PreferredClusterSelectorTerm adds its weight to every cluster it matches.
type PreferredClusterSelectorTerm struct {
	// Weight of the term, 1 to 100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`

	// Preference is the term a cluster must match to earn the weight.
	Preference ClusterSelectorTerm `json:"preference"`
}

// ClusterAffinity constrains and ranks clusters by their labels, with the
// semantics of node affinity.
type ClusterAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution must be met for a
	// cluster to be chosen.
	// +optional
	RequiredDuringSchedulingIgnoredDuringExecution *RequiredClusterSelector `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`

	// PreferredDuringSchedulingIgnoredDuringExecution ranks feasible clusters.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredClusterSelectorTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// LabelValue is a label value: at most 63 characters of [A-Za-z0-9_.-],
// starting and ending with an alphanumeric, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// Labels returns label values as plain strings.
func Labels(m map[string]LabelValue) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// LabelSelectorOperator relates a label to a set of values.
// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
type LabelSelectorOperator string

// LabelSelectorRequirement is a metav1.LabelSelectorRequirement whose
// operator and values the API server checks.
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? has(self.values) && size(self.values) > 0 : true",message="values must hold at least one value when operator is In or NotIn",fieldPath=".values"
// +kubebuilder:validation:XValidation:rule="self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 : true",message="values must be empty when operator is Exists or DoesNotExist",fieldPath=".values"
type LabelSelectorRequirement struct {
	// Key is the label key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`

	// Operator relates the key to the values.
	Operator LabelSelectorOperator `json:"operator"`

	// Values for In and NotIn; empty for Exists and DoesNotExist. Each is a
	// label value.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// LabelSelector selects objects by label, as metav1.LabelSelector does.
type LabelSelector struct {
	// MatchLabels are ANDed with matchExpressions.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 characters of [A-Za-z0-9_.-], starting and ending with an alphanumeric"
	// +optional
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`

	// MatchExpressions are ANDed.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// AsMetav1 returns the selector as a metav1.LabelSelector.
func (s *LabelSelector) AsMetav1() *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := &metav1.LabelSelector{MatchLabels: Labels(s.MatchLabels)}
	for _, e := range s.MatchExpressions {
		out.MatchExpressions = append(out.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key, Operator: metav1.LabelSelectorOperator(e.Operator), Values: e.Values,
		})
	}
	return out
}

// WorkloadAffinityTerm selects placed Workloads; the term holds for a cluster
// when such a Workload is placed in a cluster of the same topology domain,
// the domain being the value of topologyKey among the cluster's labels.
type WorkloadAffinityTerm struct {
	// LabelSelector selects Workloads by their labels; none when empty.
	// +optional
	LabelSelector *LabelSelector `json:"labelSelector,omitempty"`

	// Namespaces the selected Workloads live in; with namespaceSelector
	// also unset, the namespace of this Workload.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=atomic
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`

	// NamespaceSelector selects namespaces by label, added to namespaces;
	// an empty selector ({}) selects every namespace.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`

	// TopologyKey is the cluster label whose value defines the topology domain.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	TopologyKey string `json:"topologyKey"`
}

// WeightedWorkloadAffinityTerm adds its weight to every cluster where its term holds.
type WeightedWorkloadAffinityTerm struct {
	// Weight of the term, 1 to 100.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	Weight int32 `json:"weight"`

	// WorkloadAffinityTerm is the term.
	WorkloadAffinityTerm WorkloadAffinityTerm `json:"workloadAffinityTerm"`
}

// WorkloadAffinity places a Workload near (or, as anti-affinity, away from)
// other placed Workloads.
type WorkloadAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution terms must all hold.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	RequiredDuringSchedulingIgnoredDuringExecution []WorkloadAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`

	// PreferredDuringSchedulingIgnoredDuringExecution terms rank clusters.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedWorkloadAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// Affinity groups the Workload's scheduling constraints.
type Affinity struct {
	// ClusterAffinity constrains and ranks clusters by their labels.
	// +optional
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`

	// WorkloadAffinity draws the Workload to clusters near selected Workloads.
	// +optional
	WorkloadAffinity *WorkloadAffinity `json:"workloadAffinity,omitempty"`

	// WorkloadAntiAffinity keeps the Workload away from selected Workloads.
	// +optional
	WorkloadAntiAffinity *WorkloadAffinity `json:"workloadAntiAffinity,omitempty"`
}

// TolerationOperator relates a toleration's key to its value.
// +kubebuilder:validation:Enum=Exists;Equal
type TolerationOperator string

// ClusterToleration lets a Workload be placed on a cluster with a matching
// taint, as a pod toleration does for node taints.
// +kubebuilder:validation:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="value must be empty when operator is Exists",fieldPath=".value"
// +kubebuilder:validation:XValidation:rule="has(self.key) && size(self.key) > 0 || has(self.operator) && self.operator == 'Exists'",message="operator must be Exists when key is empty",fieldPath=".operator"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerationSeconds) || has(self.effect) && self.effect == 'NoExecute'",message="effect must be NoExecute when tolerationSeconds is set",fieldPath=".effect"
type ClusterToleration struct {
	// Key of the taint tolerated; empty with operator Exists tolerates every taint.
	// +kubebuilder:validation:MaxLength=316
	// +optional
	Key string `json:"key,omitempty"`

	// Operator is Equal (the default) or Exists.
	// +optional
	Operator TolerationOperator `json:"operator,omitempty"`

	// Value the taint must have, with operator Equal.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Value string `json:"value,omitempty"`

	// Effect tolerated; empty tolerates every effect.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +optional
	Effect TaintEffect `json:"effect,omitempty"`

	// TolerationSeconds bounds how long a placed Workload stays on a
	// cluster with a matching NoExecute taint, counted from the taint's
	// timeAdded; unset, it stays for as long as the taint is there. Zero
	// or less moves it at once.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// TargetDeployment describes the pods delivered to the chosen cluster. The
// pod template is checked in full by the scheduler with kube-apiserver's
// own pod validation (Scheduled=False, reason InvalidTemplate); what is
// cheap to check here is refused at once.
// +kubebuilder:validation:XValidation:rule="has(self.template.spec) && has(self.template.spec.containers) && size(self.template.spec.containers) > 0",message="the pod template needs at least one container",fieldPath=".template.spec.containers"
// +kubebuilder:validation:XValidation:rule="!has(self.template.metadata) || !has(self.template.metadata.annotations) || !self.template.metadata.annotations.exists(k, k.startsWith('multicluster.placer.dev/') || k.startsWith('compute.placer.dev/'))",message="annotations with the prefixes multicluster.placer.dev/ and compute.placer.dev/ are placer's own",fieldPath=".template.metadata.annotations"
// +kubebuilder:validation:XValidation:rule="!has(self.template.metadata) || !has(self.template.metadata.labels) || !self.template.metadata.labels.exists(k, k.startsWith('multicluster.placer.dev/') || k.startsWith('compute.placer.dev/'))",message="labels with the prefixes multicluster.placer.dev/ and compute.placer.dev/ are placer's own",fieldPath=".template.metadata.labels"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || !has(self.strategy.type) || self.strategy.type in ['RollingUpdate', 'Recreate']",message="supported values: \"RollingUpdate\", \"Recreate\"",fieldPath=".strategy.type"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || !has(self.strategy.type) || self.strategy.type != 'Recreate' || !has(self.strategy.rollingUpdate)",message="may not be set when strategy.type is Recreate",fieldPath=".strategy.rollingUpdate"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || !has(self.strategy.rollingUpdate) || !has(self.strategy.rollingUpdate.maxSurge) || (type(self.strategy.rollingUpdate.maxSurge) == int ? self.strategy.rollingUpdate.maxSurge >= 0 : self.strategy.rollingUpdate.maxSurge.matches('^[0-9]+%$'))",message="must be a non-negative integer or a percentage such as 25%",fieldPath=".strategy.rollingUpdate.maxSurge"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || !has(self.strategy.rollingUpdate) || !has(self.strategy.rollingUpdate.maxUnavailable) || (type(self.strategy.rollingUpdate.maxUnavailable) == int ? self.strategy.rollingUpdate.maxUnavailable >= 0 : self.strategy.rollingUpdate.maxUnavailable.matches('^([0-9]|[1-9][0-9]|100)%$'))",message="must be a non-negative integer or a percentage from 0% to 100%",fieldPath=".strategy.rollingUpdate.maxUnavailable"
type TargetDeployment struct {
	// Replicas is the number of pods.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Selector of the pods; it must match the template's labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template of each pod.
	Template corev1.PodTemplateSpec `json:"template"`

	// Strategy for replacing pods when the template changes.
	// +optional
	Strategy appsv1.DeploymentStrategy `json:"strategy,omitempty"`
}

// PlacementMode chooses how fit is proven in the target cluster.
// +kubebuilder:validation:Enum=Reserve;NoReservation
type PlacementMode string

// Placement modes.
const (
	// PlacementModeReserve proves fit with reserved candidate pods before committing.
	PlacementModeReserve PlacementMode = "Reserve"
	// PlacementModeNoReservation lets the target's own scheduler place the pods.
	PlacementModeNoReservation PlacementMode = "NoReservation"
)

// MovePolicy says how a placed Workload moves to another cluster when it
// must leave its own (a NoExecute taint it does not tolerate, a drain, the
// cluster's deletion).
// +kubebuilder:validation:Enum=StartBeforeStop;StopBeforeStart
type MovePolicy string

// Move policies.
const (
	// MoveStartBeforeStop proves the new cluster, and waits for its pods
	// to be Ready when the old cluster answers, before the old copy goes;
	// the old copy of a cluster that does not answer goes as soon as it
	// answers again. No downtime on a drain; two copies may run for a
	// while behind a partition.
	MoveStartBeforeStop MovePolicy = "StartBeforeStop"
	// MoveStopBeforeStart sends nothing to the new cluster until the old
	// one has confirmed that the Workload's pods there are gone: never two
	// copies at once, for singletons; downtime while the old cluster does
	// not answer.
	MoveStopBeforeStart MovePolicy = "StopBeforeStart"
)

// Placement tunes the handshake with target clusters.
// +kubebuilder:validation:XValidation:rule="!has(self.move) || self.move != 'StopBeforeStart' || !has(self.replicaScheduling) || !has(self.replicaScheduling.type) || self.replicaScheduling.type == 'Single'",message="move: StopBeforeStart is for a Workload placed whole (replicaScheduling Single): placer does not stop a Divided or Duplicated Workload's shares before their replacements start",fieldPath=".move"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'NoReservation' || !has(self.fanOut) || self.fanOut == 1",message="fanOut must be 1 when mode is NoReservation: without a reservation the runner-up clusters' own schedulers would bind their pods at once, and copies would run until the commit",fieldPath=".fanOut"
type Placement struct {
	// FanOut is how many ranked clusters receive candidate pods at once.
	// Bounded at 16: each of them runs a candidate per replica.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +optional
	FanOut int32 `json:"fanOut,omitempty"`

	// Mode is Reserve (the default) or NoReservation.
	// +kubebuilder:default=Reserve
	// +optional
	Mode PlacementMode `json:"mode,omitempty"`

	// Move is how the Workload moves when it must leave its cluster:
	// StartBeforeStop (the default) or StopBeforeStart.
	// +kubebuilder:default=StartBeforeStop
	// +optional
	Move MovePolicy `json:"move,omitempty"`

	// ReplicaScheduling says how the replicas spread over clusters: all in
	// one (Single, the default), split across several (Divided) or all in
	// each of several (Duplicated).
	// +optional
	ReplicaScheduling *ReplicaScheduling `json:"replicaScheduling,omitempty"`

	// Rebalance says whether a placed Workload moves back to a cluster it
	// prefers more than its own once that cluster can take it again (after
	// a failover or a drain moved it away): Never (the default) or
	// WhenPreferred. A move back is a move as any other: proven by the
	// handshake, by the move policy, bounded by the manager's
	// --max-concurrent-moves; it waits until the preferred cluster has been
	// Ready, and the Workload placed where it is, for the manager's
	// --rebalance-after, and outscores the Workload's cluster by its
	// --rebalance-margin, so that a flapping cluster does not pull it back
	// and forth. A Divided or Duplicated Workload moves back to the
	// division it would be given afresh, once that moves at least
	// --rebalance-margin percent of its replicas and each cluster it grows
	// in has been Ready for --rebalance-after (and its division has not
	// changed for as long): the shares that grow are made and Ready before
	// the others shrink (status.rebalancing), one place under
	// --max-concurrent-moves for the whole move.
	// +kubebuilder:default=Never
	// +optional
	Rebalance RebalancePolicy `json:"rebalance,omitempty"`
}

// RebalancePolicy says whether a placed Workload moves back to a cluster
// it prefers more.
// +kubebuilder:validation:Enum=Never;WhenPreferred
type RebalancePolicy string

// AnnotationRebalance (an RFC 3339 time, set by placer rebalance) asks the
// scheduler, once, to move a placed Workload to the cluster it prefers
// most if that is not its own, whatever its spec.placement.rebalance, with
// no window and no margin: the operator asks now. It holds for
// RebalanceRequestTTL from that time, and only if made after the
// Workload's last placement.
const AnnotationRebalance = Group + "/rebalance"

// RebalanceRequestTTL is how long an AnnotationRebalance request holds.
const RebalanceRequestTTL = 2 * time.Minute

// Rebalance policies.
const (
	// RebalanceNever keeps a placed Workload where it is until it must
	// leave (today's behaviour).
	RebalanceNever RebalancePolicy = "Never"
	// RebalanceWhenPreferred moves a placed Workload, make-before-break,
	// to a cluster that outscores its own by the manager's margin, once
	// that cluster has been Ready for the manager's stabilization window;
	// a spread Workload, to the division it would be given afresh.
	RebalanceWhenPreferred RebalancePolicy = "WhenPreferred"
)

// WorkloadSpec is what to run and where it may run.
// +kubebuilder:validation:XValidation:rule="!has(self.targetService) || !has(self.targetService.ports) || self.targetService.ports.all(p, p.port >= 1 && p.port <= 65535)",message="ports must be between 1 and 65535",fieldPath=".targetService.ports"
// +kubebuilder:validation:XValidation:rule="!has(self.targetService) || !has(self.targetService.ports) || self.targetService.ports.all(p, !has(p.targetPort) || (type(p.targetPort) == int ? p.targetPort >= 0 && p.targetPort <= 65535 : p.targetPort.size() <= 15))",message="targetPort must be a port number between 1 and 65535 (0: the port) or a port name of at most 15 characters",fieldPath=".targetService.ports"
// +kubebuilder:validation:XValidation:rule="!has(self.targetService) || !has(self.targetService.type) || self.targetService.type in ['ClusterIP', 'NodePort', 'LoadBalancer']",message="supported values: \"ClusterIP\", \"NodePort\", \"LoadBalancer\"",fieldPath=".targetService.type"
// +kubebuilder:validation:XValidation:rule="!has(self.placement) || !has(self.placement.replicaScheduling) || !has(self.placement.replicaScheduling.type) || self.placement.replicaScheduling.type == 'Single' || !has(self.targetCluster)",message="targetCluster names one cluster; a Divided or Duplicated Workload spreads over several (select them with clusterSelector or affinity)",fieldPath=".targetCluster"
// +kubebuilder:validation:XValidation:rule="!has(self.placement) || !has(self.placement.replicaScheduling) || !has(self.placement.replicaScheduling.type) || self.placement.replicaScheduling.type == 'Single' || !has(self.placement.fanOut) || self.placement.fanOut == 1",message="fanOut must be 1 for a Divided or Duplicated Workload: each share proves its own cluster",fieldPath=".placement.fanOut"
// +kubebuilder:validation:XValidation:rule="(has(oldSelf.placement) && has(oldSelf.placement.replicaScheduling) && has(oldSelf.placement.replicaScheduling.type) ? oldSelf.placement.replicaScheduling.type : 'Single') == (has(self.placement) && has(self.placement.replicaScheduling) && has(self.placement.replicaScheduling.type) ? self.placement.replicaScheduling.type : 'Single')",message="may not change: a Workload placed whole is not turned into shares, nor back; create another Workload",fieldPath=".placement.replicaScheduling"
type WorkloadSpec struct {
	// TargetCluster names the cluster the Workload must run in.
	// +optional
	TargetCluster *ClusterReference `json:"targetCluster,omitempty"`

	// ClusterSelector requires cluster labels; built-in labels and the
	// aliases clusterName, clusterNamespace, clusterVersion and cloudProvider
	// are accepted.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 characters of [A-Za-z0-9_.-], starting and ending with an alphanumeric"
	// +optional
	ClusterSelector map[string]LabelValue `json:"clusterSelector,omitempty"`

	// Affinity constrains and ranks clusters.
	// +optional
	Affinity *Affinity `json:"affinity,omitempty"`

	// ClusterTolerations let the Workload be placed on tainted clusters.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	ClusterTolerations []ClusterToleration `json:"clusterTolerations,omitempty"`

	// SchedulerName is the scheduler that places this Workload.
	// +kubebuilder:default=placer-scheduler
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// TargetNamespace is the namespace in the target cluster; the Workload's own when empty.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// TargetDeployment is the pods to run.
	TargetDeployment TargetDeployment `json:"targetDeployment"`

	// TargetService is delivered with the pods, selecting them.
	// +optional
	TargetService *corev1.ServiceSpec `json:"targetService,omitempty"`

	// Resources are objects of the Workload's namespace that go with the
	// pods to the cluster they run in, beside the ConfigMaps, Secrets and
	// ServiceAccount the pod template references (which go anyway): a
	// Secret or a ConfigMap (apiVersion v1), or any object that names its
	// connection Secret in spec.writeConnectionSecretToRef, as Crossplane's
	// claims do, whose Secret then goes. The manager must be allowed to
	// read that kind (config/rbac: placer-manager-resources).
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Resources []ResourceReference `json:"resources,omitempty"`

	// Overrides change the pod template for the clusters each selects, in
	// order (a later rule wins where two change the same thing). The
	// candidate pods in a cluster carry its overrides, so its own
	// kube-scheduler judges the pods that would really run there.
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +optional
	Overrides []Override `json:"overrides,omitempty"`

	// Placement tunes the handshake.
	// +kubebuilder:default={fanOut: 1, mode: Reserve, move: StartBeforeStop}
	// +optional
	Placement Placement `json:"placement,omitempty"`
}

// ResourceReference names an object of the Workload's namespace whose
// data goes with the pods (spec.resources).
// +kubebuilder:validation:XValidation:rule="self.apiVersion != 'v1' || self.kind in ['Secret', 'ConfigMap']",message="of apiVersion v1 only a Secret or a ConfigMap goes with the pods (their ServiceAccount goes anyway); another kind must name its connection Secret in spec.writeConnectionSecretToRef",fieldPath=".kind"
type ResourceReference struct {
	// APIVersion of the object: v1 for a Secret or a ConfigMap, group/version otherwise.
	// +kubebuilder:default=v1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?v[0-9]+((alpha|beta)[0-9]+)?$`
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	Kind string `json:"kind"`

	// Name of the object, in the Workload's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// Override is one rule of spec.overrides: the clusters it selects and
// what it changes of the pod template there.
// +kubebuilder:validation:XValidation:rule="has(self.image) || has(self.env) || has(self.command) || has(self.args) || has(self.resources) || has(self.nodeSelector) || has(self.labels) || has(self.annotations)",message="an override must change something: set image, env, command, args, resources, nodeSelector, labels or annotations"
// +kubebuilder:validation:XValidation:rule="!has(self.labels) || !self.labels.exists(k, k.startsWith('multicluster.placer.dev/') || k.startsWith('compute.placer.dev/'))",message="labels with the prefixes multicluster.placer.dev/ and compute.placer.dev/ are placer's own",fieldPath=".labels"
// +kubebuilder:validation:XValidation:rule="!has(self.annotations) || !self.annotations.exists(k, k.startsWith('multicluster.placer.dev/') || k.startsWith('compute.placer.dev/'))",message="annotations with the prefixes multicluster.placer.dev/ and compute.placer.dev/ are placer's own",fieldPath=".annotations"
type Override struct {
	// Name of the rule, unique among the Workload's overrides; placer
	// explain names the rules that apply to each cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ClusterSelector selects the clusters the rule applies to, with the
	// semantics of a cluster affinity term (built-in labels and their
	// aliases included); an empty one selects every cluster.
	ClusterSelector ClusterSelectorTerm `json:"clusterSelector"`

	// Containers names the containers (and init containers) that image,
	// env, command, args and resources change; every one when empty.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	// +optional
	Containers []string `json:"containers,omitempty"`

	// Image replaces parts of each container's image reference.
	// +optional
	Image *ImageOverride `json:"image,omitempty"`

	// Env adds environment variables to each container, replacing one of
	// the same name.
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Command replaces each container's command.
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// Args replaces each container's args.
	// +kubebuilder:validation:MaxItems=128
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// Resources sets the requests and limits it names on each container,
	// resource by resource; the others stay.
	// +optional
	Resources *ResourceOverride `json:"resources,omitempty"`

	// NodeSelector adds keys to the pods' nodeSelector, replacing the
	// value of a key they have.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 characters of [A-Za-z0-9_.-], starting and ending with an alphanumeric"
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Labels are added to the pods' labels, replacing the value of a key
	// they have.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 characters of [A-Za-z0-9_.-], starting and ending with an alphanumeric"
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the pods' annotations, replacing the value
	// of a key they have.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ImageOverride replaces parts of an image reference
// ([registry/]repository[:tag][@digest]); an image without a registry is
// Docker Hub's (docker.io, library/ for a single name).
// +kubebuilder:validation:XValidation:rule="has(self.registry) || has(self.repository) || has(self.tag)",message="set registry, repository or tag"
type ImageOverride struct {
	// Registry replaces the registry host (and port), e.g. a regional
	// mirror: mirror.eu.example.com. A host with a dot or a port, or
	// localhost: a single name would be read as a Docker Hub path.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == 'localhost' || self.startsWith('localhost:') || self.contains('.') || self.contains(':')",message="must be a registry host with a dot or a port (mirror.example.com, mirror:5000) or localhost: a single name would be read as a path on Docker Hub"
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]+)?$`
	// +optional
	Registry string `json:"registry,omitempty"`

	// Repository replaces the path within the registry, e.g. team/app.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`
	// +optional
	Repository string `json:"repository,omitempty"`

	// Tag replaces the tag (and drops a digest).
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_][a-zA-Z0-9._-]*$`
	// +optional
	Tag string `json:"tag,omitempty"`
}

// ResourceOverride sets requests and limits, resource by resource.
// +kubebuilder:validation:XValidation:rule="has(self.requests) || has(self.limits)",message="set requests or limits"
type ResourceOverride struct {
	// Requests to set.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// Limits to set.
	// +optional
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// RejectedCluster is a cluster where this generation's handshake failed.
type RejectedCluster struct {
	// Cluster that rejected the candidates.
	Cluster ClusterReference `json:"cluster"`

	// Reason is a CamelCase word: Unschedulable, HandshakeTimeout, ...
	Reason string `json:"reason"`

	// Message is the target's own explanation, e.g. its scheduler's message.
	// +optional
	Message string `json:"message,omitempty"`

	// Generation of the Workload the rejection belongs to.
	Generation int64 `json:"generation"`

	// Time of the rejection.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`

	// RetryAfter is when the cluster may be tried again for this
	// generation: the backoff doubles with each rejection by the same
	// cluster (30 s to 10 min). The scheduler tries it sooner when the
	// cluster's capacity grows or its labels or taints change.
	// +optional
	RetryAfter *metav1.Time `json:"retryAfter,omitempty"`

	// Attempts counts this generation's rejections by the cluster.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// Reserved counts the candidates the cluster did reserve before it
	// rejected the others (or the handshake's time ran out). A share of a
	// Divided Workload keeps that many replicas in the cluster, and the
	// rest are divided among the other clusters.
	// +optional
	Reserved int32 `json:"reserved,omitempty"`
}

// LeftCluster is a cluster the Workload was moved away from while it may
// still hold the Workload's candidates and pods.
type LeftCluster struct {
	// Cluster that was left.
	Cluster ClusterReference `json:"cluster"`

	// Reason is a CamelCase word: the taint's (Unreachable, NotReady,
	// Tainted) or ClusterDeleted.
	Reason string `json:"reason"`

	// Message says why, naming the taint.
	// +optional
	Message string `json:"message,omitempty"`

	// Time the Workload left it. The propagator answers the entry in
	// status.clusterCounts (leftAt): how many of the Workload's
	// candidates remain there; once none do, the scheduler removes the
	// entry.
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
}

// Rebalancing is a spread Workload's move back under way.
type Rebalancing struct {
	// Shares are the division the move goes to: each cluster's replicas.
	// +listType=atomic
	Shares []ClusterReplicas `json:"shares"`

	// Generation of the spec the move was judged for: a change of the
	// spec ends it (the division starts again from the shares as they
	// are).
	Generation int64 `json:"generation"`

	// Time the move began.
	Time metav1.Time `json:"time"`

	// Message says why the Workload moves.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterReplicas is a number of replicas in one cluster.
type ClusterReplicas struct {
	// Cluster holding them.
	Cluster ClusterReference `json:"cluster"`

	// Replicas in it.
	Replicas int32 `json:"replicas"`
}

// ClusterCount is what the propagator last counted of the Workload in one
// cluster.
type ClusterCount struct {
	// Cluster counted.
	Cluster ClusterReference `json:"cluster"`

	// Replicas is how many of the Workload's candidates (each with its
	// pod) are there, as last seen: a cluster that does not answer keeps
	// its last count until it answers again.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// LeftAt is the time of the status.leftClusters entry this count
	// answers, once the Workload left the cluster: with replicas 0 it
	// tells the scheduler that nothing of the Workload remains there.
	// +optional
	LeftAt *metav1.Time `json:"leftAt,omitempty"`
}

// WorkloadStatus is where the Workload was placed and how it is doing there.
type WorkloadStatus struct {
	xpv2.ConditionedStatus `json:",inline"`

	// ClusterRef is the cluster the Workload is placed in.
	// +optional
	ClusterRef *ClusterReference `json:"clusterRef,omitempty"`

	// NominatedClusters are the ranked first fanOut clusters.
	// +listType=atomic
	// +optional
	NominatedClusters []ClusterReference `json:"nominatedClusters,omitempty"`

	// RejectedClusters are the handshake failures of this generation.
	// +listType=atomic
	// +optional
	RejectedClusters []RejectedCluster `json:"rejectedClusters,omitempty"`

	// LeftClusters are the clusters the Workload moved away from that may
	// still hold its pods, and why it left them.
	// +listType=atomic
	// +optional
	LeftClusters []LeftCluster `json:"leftClusters,omitempty"`

	// ClusterCounts are the clusters where the propagator counted the
	// Workload's candidates: the chosen cluster once it has some (the
	// replica counts below describe it), and each cluster the Workload
	// left, until nothing remains there and the scheduler has removed
	// its status.leftClusters entry. The propagator alone writes them.
	// +listType=atomic
	// +optional
	ClusterCounts []ClusterCount `json:"clusterCounts,omitempty"`

	// PlacedNamespaces are the member namespaces where placer put the
	// Workload's Service or copies of its dependencies (its candidates are
	// found by their label): a change of target namespace or cluster, and
	// the Workload's deletion, clean each of them, even once no candidate
	// is left there.
	// +listType=atomic
	// +optional
	PlacedNamespaces []PlacedNamespace `json:"placedNamespaces,omitempty"`

	// Dependencies are the ConfigMaps, Secrets and ServiceAccount the pods
	// use in the cluster they run in (and in a cluster left, until they
	// are let go there), and the ServiceAccount copied where candidates
	// wait (the chosen cluster before it commits, runner-ups): names,
	// never contents.
	// +listType=atomic
	// +optional
	Dependencies []Dependency `json:"dependencies,omitempty"`

	// Replicas is the number of pods delivered.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ScheduledReplicas is the number of pods bound to a node.
	// +optional
	ScheduledReplicas int32 `json:"scheduledReplicas,omitempty"`

	// ReadyReplicas is the number of pods Ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Succeeded is the number of replicas whose pod ended on its own with
	// every container's exit code 0 (restartPolicy Never or OnFailure).
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// Failed is the number of replicas whose pod ended on its own with a
	// container that failed (restartPolicy Never or OnFailure). A pod that
	// was evicted, preempted or lost with its node is replaced, and not
	// counted.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// Placements are the shares of a Divided or Duplicated Workload, one
	// per cluster (clusterRef stays empty: the shares are placed, each a
	// Workload of its own).
	// +listType=atomic
	// +optional
	Placements []SharePlacement `json:"placements,omitempty"`

	// Shares sums the placements up for kubectl's SHARES column:
	// "east=6,west=6", by cluster name.
	// +optional
	Shares string `json:"shares,omitempty"`

	// Rebalancing, on a Divided or Duplicated Workload, is the division a
	// move back goes to (spec.placement.rebalance WhenPreferred, or placer
	// rebalance) while it is under way: the shares that grow there are
	// made first, and the others shrink to it once every share is Ready.
	// The scheduler alone writes it, and removes it once the shares are
	// what it says, or when something else moves them first (a rejection,
	// a cluster lost, a change of the spec).
	// +optional
	Rebalancing *Rebalancing `json:"rebalancing,omitempty"`

	// ReadyOfDesired is readyReplicas/spec.replicas, as kubectl shows a
	// Deployment's READY column (2/3).
	// +optional
	ReadyOfDesired string `json:"readyOfDesired,omitempty"`

	// ObservedGeneration is the generation this status is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PlacedNamespace is a namespace of a member cluster.
type PlacedNamespace struct {
	// Cluster is the member cluster.
	Cluster ClusterReference `json:"cluster"`

	// Namespace in that cluster.
	Namespace string `json:"namespace"`
}

// Dependency is an object the Workload's pods use in a cluster: copied
// there from the Workload's namespace, or, when placer did not copy it,
// what the pods use instead and why.
type Dependency struct {
	// Cluster is the cluster it was delivered to.
	Cluster ClusterReference `json:"cluster"`

	// Kind is ConfigMap, Secret or ServiceAccount.
	Kind string `json:"kind"`

	// Name of the object, the same in both clusters.
	Name string `json:"name"`

	// Copied: the cluster holds placer's copy of the Workload's object.
	// +optional
	Copied bool `json:"copied,omitempty"`

	// Message says, when it was not copied, what the pods use instead: an
	// object of that name that placer did not copy (left as it is), the
	// cluster's own when the Workload's namespace has none, or why placer
	// may not write it there.
	// +optional
	Message string `json:"message,omitempty"`
}

// A Workload is a set of pods (and a Service) to run in one cluster of the fleet.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pwl,categories=placer
// +kubebuilder:printcolumn:name="CLUSTER",type=string,JSONPath=`.status.clusterRef.name`
// +kubebuilder:printcolumn:name="SHARES",type=string,JSONPath=`.status.shares`,priority=1
// +kubebuilder:printcolumn:name="READY",type=string,JSONPath=`.status.readyOfDesired`
// +kubebuilder:printcolumn:name="SCHEDULED",type=string,JSONPath=`.status.conditions[?(@.type=='Scheduled')].status`
// +kubebuilder:printcolumn:name="AVAILABLE",type=string,JSONPath=`.status.conditions[?(@.type=='Ready')].status`
// +kubebuilder:printcolumn:name="REASON",type=string,JSONPath=`.status.conditions[?(@.type=='Scheduled')].reason`,priority=1
// +kubebuilder:printcolumn:name="SUCCEEDED",type=integer,JSONPath=`.status.succeeded`,priority=1
// +kubebuilder:printcolumn:name="FAILED",type=integer,JSONPath=`.status.failed`,priority=1
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="!has(self.spec.targetService) || self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="a Workload with a targetService must be named as a Service may be (a DNS-1035 label: at most 63 characters, lowercase letters, digits and '-', starting with a letter): the Service in the member takes its name"
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkloadSpec   `json:"spec"`
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadList is a list of Workloads.
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}
