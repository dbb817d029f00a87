package v1alpha1

// ReplicaSchedulingType says how a Workload's replicas spread over
// clusters.
// +kubebuilder:validation:Enum=Single;Divided;Duplicated
type ReplicaSchedulingType string

// Replica scheduling types.
const (
	// ReplicaSchedulingSingle runs every replica in one cluster (the
	// default).
	ReplicaSchedulingSingle ReplicaSchedulingType = "Single"
	// ReplicaSchedulingDivided splits the replicas across clusters, by
	// weight, within the spread constraints: each cluster's share is a
	// Workload of its own (a share), proven by the handshake there.
	ReplicaSchedulingDivided ReplicaSchedulingType = "Divided"
	// ReplicaSchedulingDuplicated runs every replica in each selected
	// cluster.
	ReplicaSchedulingDuplicated ReplicaSchedulingType = "Duplicated"
)

// CommitPolicy says when the shares of a Divided or Duplicated Workload
// bind.
// +kubebuilder:validation:Enum=Together;ShareByShare;AllowPartial
type CommitPolicy string

// Commit policies.
const (
	// CommitTogether: no share binds until every share is proven (every
	// replica of the Workload reserved in its cluster), a gang across
	// clusters; the default.
	CommitTogether CommitPolicy = "Together"
	// CommitShareByShare: each share binds as soon as it is proven.
	CommitShareByShare CommitPolicy = "ShareByShare"
	// CommitAllowPartial: as Together, but when the replicas left over
	// fit in no cluster, the shares that are proven bind.
	CommitAllowPartial CommitPolicy = "AllowPartial"
)

// ReplicaScheduling says how the replicas spread over clusters
// (spec.placement.replicaScheduling).
// +kubebuilder:validation:XValidation:rule="!has(self.commit) || (has(self.type) && self.type != 'Single')",message="commit says when the shares of a Divided or Duplicated Workload bind; type is Single",fieldPath=".commit"
// +kubebuilder:validation:XValidation:rule="!has(self.staticWeights) || (has(self.type) && self.type == 'Divided')",message="staticWeights weigh the shares of a Divided Workload; type is not Divided",fieldPath=".staticWeights"
// +kubebuilder:validation:XValidation:rule="!has(self.spreadConstraints) || (has(self.type) && self.type != 'Single')",message="spreadConstraints spread a Divided or Duplicated Workload; type is Single",fieldPath=".spreadConstraints"
type ReplicaScheduling struct {
	// Type is Single (every replica in one cluster, the default), Divided
	// (the replicas split across clusters) or Duplicated (every replica
	// in each selected cluster).
	// +kubebuilder:default=Single
	// +optional
	Type ReplicaSchedulingType `json:"type,omitempty"`

	// StaticWeights weigh the clusters of a Divided Workload: each
	// cluster's share is in proportion to the largest weight whose
	// selector matches it, and a cluster none matches takes no share.
	// Without them each cluster weighs what it has room for (dynamic
	// weights, from its capacity summary).
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	StaticWeights []StaticClusterWeight `json:"staticWeights,omitempty"`

	// SpreadConstraints bound the number of domains of a topology (the
	// values of a cluster label: topology.kubernetes.io/region, zone,
	// compute.placer.dev/cloud-provider, crossplane.io/kubernetes for one
	// domain per cluster, or any label of the clusters) that hold
	// replicas. A cluster without the label takes no share.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`

	// Commit says when the shares bind: Together (the default: none
	// until every share is proven in its cluster, so that the Workload
	// never runs in part by accident), ShareByShare (each once it is
	// proven), or AllowPartial (together, but when the replicas left over
	// fit in no cluster, the shares that are proven bind). It holds the
	// Workload's first placement: once its shares have bound, a share
	// made later (scaling, a move) binds once it is proven. Reservations
	// last the members' permit timeout (2 minutes by default): shares that
	// wait longer for the others are rejected by their clusters then, and
	// divided again after the rejections' backoff.
	// +optional
	Commit CommitPolicy `json:"commit,omitempty"`
}

// CommitPolicyOf is the Workload's commit policy, Together when unset.
func (w *Workload) CommitPolicyOf() CommitPolicy {
	if rs := w.Spec.Placement.ReplicaScheduling; rs != nil && rs.Commit != "" {
		return rs.Commit
	}
	return CommitTogether
}

// StaticClusterWeight is the weight of the clusters a selector matches.
type StaticClusterWeight struct {
	// ClusterSelector matches cluster labels (built-in labels and the
	// aliases clusterName, clusterNamespace, clusterVersion and
	// cloudProvider accepted, as in spec.clusterSelector); empty matches
	// every cluster.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !format.qualifiedName().validate(k).hasValue())",message="keys must be label keys: an optional DNS subdomain prefix and '/', then a name of at most 63 characters of [A-Za-z0-9_.-], starting and ending with an alphanumeric"
	// +optional
	ClusterSelector map[string]LabelValue `json:"clusterSelector,omitempty"`

	// Weight of each cluster it matches.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	Weight int32 `json:"weight"`
}

// SpreadConstraint bounds the domains of a topology that hold replicas.
// +kubebuilder:validation:XValidation:rule="!has(self.maxGroups) || !has(self.minGroups) || self.maxGroups >= self.minGroups",message="must be at least minGroups",fieldPath=".maxGroups"
type SpreadConstraint struct {
	// TopologyKey is the cluster label whose values are the domains.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="must be a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 characters of [A-Za-z0-9_.-], starting and ending with an alphanumeric"
	TopologyKey string `json:"topologyKey"`

	// MinGroups domains at least hold a replica.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MinGroups int32 `json:"minGroups,omitempty"`

	// MaxGroups domains at most hold a replica; no bound when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxGroups int32 `json:"maxGroups,omitempty"`
}

// SharePlacement is one cluster's share of a Divided or Duplicated
// Workload (status.placements).
type SharePlacement struct {
	// Cluster holding the share.
	Cluster ClusterReference `json:"cluster"`

	// Workload is the share: a Workload of this namespace, owned by this
	// one, that runs Replicas of its replicas in Cluster.
	Workload string `json:"workload"`

	// Replicas of the share.
	Replicas int32 `json:"replicas"`

	// ReadyReplicas of the share that are Ready.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Reason the cluster has this share (its weight, its room, a spread
	// constraint), or, once it has none, why it still runs (its
	// replacement is not Ready yet).
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Label and annotation of a share.
const (
	// LabelShareOf, on a share, names the Workload it is a share of (a
	// hash of the name when it is too long for a label value).
	LabelShareOf = "compute.placer.dev/share-of"
	// AnnotationShareOf, on a share, names the Workload it is a share of.
	AnnotationShareOf = "compute.placer.dev/share-of"
	// AnnotationCommitHeld, on a share, holds its commit: proven, it waits
	// (Ready False, reason Proven) until the Workload it is a share of
	// takes the annotation away, which it does once every share is.
	AnnotationCommitHeld = "compute.placer.dev/commit-held"
	// AnnotationShareLeaving, on a share, is the reason it gives its
	// replicas back to the division (a LeftCluster reason: Tainted,
	// ClusterDeleted, ...), written by the Workload it is a share of when
	// the move begins; it stays until the share goes. A drain's
	// (IsDrain) counts under --max-concurrent-moves as a Workload's does.
	AnnotationShareLeaving = "compute.placer.dev/leaving"
)

// CommitHeld reports whether the Workload is a share whose commit is
// held (AnnotationCommitHeld).
func (w *Workload) CommitHeld() bool {
	return w.Annotations[AnnotationCommitHeld] == "true" && w.IsShare()
}

// IsShare reports whether the Workload is a share of a spread Workload:
// annotated and labelled so, and controlled by the Workload it names.
func (w *Workload) IsShare() bool {
	of := w.Annotations[AnnotationShareOf]
	if of == "" || w.Labels[LabelShareOf] == "" {
		return false
	}
	for _, o := range w.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "Workload" && o.Name == of {
			return true
		}
	}
	return false
}

// Spreads reports whether the Workload spreads over several clusters
// (Divided or Duplicated): its shares are placed, not it.
func (w *Workload) Spreads() bool {
	rs := w.Spec.Placement.ReplicaScheduling
	return rs != nil && (rs.Type == ReplicaSchedulingDivided || rs.Type == ReplicaSchedulingDuplicated)
}

// ServiceName is the name of the Workload's Service in a member: a
// share's Service is named as the Workload it is a share of, so that every
// member's Service has the name the user gave.
func (w *Workload) ServiceName() string {
	if w.IsShare() {
		return w.Annotations[AnnotationShareOf]
	}
	return w.Name
}
