package scheduler

import (
	"k8s.io/apimachinery/pkg/util/sets"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/apimachinery/pkg/api/equality"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Cache keeps the scheduler's view of the fleet up to date from informer
// events, so a cycle's snapshot costs a copy of pointers, not a List.
//
// As kube-scheduler assumes a pod on its node before the binding is
// written, the scheduler assumes a decision here at once (Assume), so the
// next cycle sees the workload placed, its affinity domain and the
// capacity it takes, while a writer applies the decision to the API.
// A failed write forgets the assumption (Forget); the informer's copy of
// the written status (or anything newer) confirms it (Written, then
// UpsertWorkload).
type Cache struct {
	mu       sync.RWMutex
	clusters map[types.NamespacedName]*ClusterInfo
	// placed are the placed workloads, placedAt their index by UID: a
	// snapshot copies a slice instead of walking a map.
	placed   []*PlacedWorkload
	placedAt uidIndex
	// terms count, per cluster, the placed workloads each affinity term
	// the cycles asked about selects (termindex.go); asking collects what
	// the current snapshot's cycles ask.
	terms  termIndex
	asking *askedTerms
	// slots number the clusters placed workloads are in, so that a
	// snapshot resolves them by index instead of by a map lookup each.
	slots      map[types.NamespacedName]int
	pending    map[types.NamespacedName]pendingWorkload
	namespaces map[string]labels.Set
	// bindings: each ClusterBinding's cluster namespace.
	bindings map[types.NamespacedName]string
	// rejectionsSeen: when this process first saw each rejection of a
	// Workload (by cluster), on its own clock, as OpenedAt is: the API
	// keeps a rejection's time to the whole second only.
	rejectionsSeen map[types.UID]map[types.NamespacedName]seenRejection
	// assumed decisions not yet confirmed by the informer, by UID.
	assumed map[types.UID]*assumption
	// unbound is, per cluster, the requests of the replicas of the
	// workloads placed there that are not bound yet, which the cluster's
	// summary does not count.
	unbound map[types.NamespacedName]corev1.ResourceList
	// views are the clusters as cycles see them (the cluster with its
	// unbound requests added), rebuilt when either changes.
	views map[types.NamespacedName]*ClusterInfo
	// draining counts the placed workloads that are Draining.
	draining int
	// leavingShares are the shares of spread Workloads that leave their
	// cluster for a drain (AnnotationShareLeaving): moves in flight too.
	// Only a share's deletion, or its end (a batch share that ran to its
	// end moves nothing), ends its mark, so that no older copy of it (a
	// decision assumed before the mark) takes it away.
	leavingShares map[types.UID]bool
	// movingBack are the spread Workloads moving back
	// (status.rebalancing): a move in flight each, counted from the
	// resourceVersion of the copy the move was decided from, which no
	// copy as old ends (MovingBack).
	movingBack map[types.UID]string
	// snap is the last snapshot, reused until something changes.
	snap *Snapshot
	// labels is the clusters by label, shared by the snapshots until a
	// cluster comes, goes or changes its labels (nil then).
	labels *sharedLabelIndex
}

// seenRejection is when a rejection (its attempt count) was first seen.
type seenRejection struct {
	attempts int32
	at       time.Time
}

// pendingWorkload is a workload waiting for a cluster.
type pendingWorkload struct {
	schedulerName string
	// affinity: it has required workload-affinity terms, so a placement
	// elsewhere can make it feasible.
	affinity bool
}

// assumption is a decision applied to the cache before the API has it.
type assumption struct {
	// written is the resourceVersion the write returned; empty while in flight.
	written string
	// last is the informer's latest copy of the workload meanwhile.
	last *v1alpha1.Workload
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		clusters:   map[types.NamespacedName]*ClusterInfo{},
		terms:      termIndex{terms: map[string]*termCounts{}},
		slots:      map[types.NamespacedName]int{},
		pending:    map[types.NamespacedName]pendingWorkload{},
		namespaces: map[string]labels.Set{},
		bindings:   map[types.NamespacedName]string{},

		rejectionsSeen: map[types.UID]map[types.NamespacedName]seenRejection{},
		assumed:        map[types.UID]*assumption{},
		unbound:        map[types.NamespacedName]corev1.ResourceList{},
		views:          map[types.NamespacedName]*ClusterInfo{},
		leavingShares:  map[types.UID]bool{},
		movingBack:     map[types.UID]string{},
	}
}

// UpsertCluster records a cluster's latest state. When the change can undo
// a handshake rejection, the cluster's OpenedAt (labels, taints, Ready
// again: opensOtherwise) or RoomAt (room gained: gainsRoom) moves to now,
// and opened says so. Requests falling as pods end do not count: on a
// busy cluster they would end every rejection's backoff at once.
func (c *Cache) UpsertCluster(kc *v1alpha1.KubernetesCluster) (opened bool) {
	ci := NewClusterInfo(kc)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.clusters[ci.Key]
	if !ok || !maps.Equal(prev.Labels, ci.Labels) {
		c.labels = nil
	}
	if ok {
		ci.OpenedAt, ci.RoomAt = prev.OpenedAt, prev.RoomAt
		// Rejections are stamped to the whole second (metav1.Time): one
		// written in the same second as this counts as older and is
		// tried once more, rather than waiting out its backoff (up to 10
		// min) with the room it lacked now there.
		if opensOtherwise(prev.Cluster, kc) {
			ci.OpenedAt, opened = time.Now(), true
		}
		if gainsRoom(prev.Cluster, kc) {
			ci.RoomAt, opened = time.Now(), true
		}
	}
	c.clusters[ci.Key] = ci
	c.refreshView(ci.Key)
	return opened
}

// gainsRoom reports whether a cluster gained room: more allocatable,
// ready nodes, or room on its largest node (ClusterInfo.RoomAt).
func gainsRoom(before, after *v1alpha1.KubernetesCluster) bool {
	b, a := &before.Status, &after.Status
	grew := func(x, y corev1.ResourceList) bool {
		for name, q := range y {
			if old, ok := x[name]; !ok || q.Cmp(old) > 0 {
				return true
			}
		}
		return false
	}
	return grew(b.Allocatable, a.Allocatable) || grew(b.LargestFreeNode, a.LargestFreeNode) || a.ReadyNodeCount > b.ReadyNodeCount
}

// opensOtherwise reports whether a cluster changed in a way that can undo
// any rejection: other labels or taints, or Ready again
// (ClusterInfo.OpenedAt).
func opensOtherwise(before, after *v1alpha1.KubernetesCluster) bool {
	return !equality.Semantic.DeepEqual(before.Labels, after.Labels) ||
		!equality.Semantic.DeepEqual(before.Spec.Taints, after.Spec.Taints) ||
		before.Status.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue && after.Status.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
}

// Leaving returns the placed workloads whose cluster has a NoExecute
// taint or is being deleted: those MustLeave may move.
func (c *Cache) Leaving() []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	tainted := map[types.NamespacedName]bool{}
	for k, ci := range c.clusters {
		if MakesLeave(ci.Cluster) {
			tainted[k] = true
		}
	}
	var out []types.NamespacedName
	if len(tainted) == 0 {
		return out
	}
	for _, p := range c.placed {
		if tainted[p.Cluster] {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}

// MakesLeave reports whether a cluster makes what is placed there leave:
// a NoExecute taint, or its deletion.
func MakesLeave(kc *v1alpha1.KubernetesCluster) bool {
	return kc.DeletionTimestamp != nil || slices.ContainsFunc(kc.Spec.Taints, func(t v1alpha1.ClusterTaint) bool { return t.Effect == v1alpha1.TaintEffectNoExecute })
}

// PlacedOn returns the placed workloads of a cluster.
func (c *Cache) PlacedOn(cluster types.NamespacedName) []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []types.NamespacedName
	for _, p := range c.placed {
		if p.Cluster == cluster {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}

// Rebalancing lists the placed workloads that move back to a cluster they
// prefer more (PlacedWorkload.Rebalance).
func (c *Cache) Rebalancing() []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []types.NamespacedName
	for _, p := range c.placed {
		if p.Rebalance {
			out = append(out, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}

// Draining counts the placed workloads still leaving a cluster for a taint
// or a deletion (PlacedWorkload.Draining), the shares of spread Workloads
// leaving theirs (AnnotationShareLeaving) and the spread Workloads moving
// back (status.rebalancing): the moves in flight.
func (c *Cache) Draining() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.draining + len(c.leavingShares) + len(c.movingBack)
}

// MovingBack counts a spread Workload's move back at once, decided from
// the copy of resourceVersion from, before the informer brings its
// status.rebalancing: only a newer copy without it ends the count.
func (c *Cache) MovingBack(uid types.UID, from string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.movingBack[uid] = from
}

// KeepMovingBack keeps the count of a move back whose record was written
// in the copy of resourceVersion written: only a newer copy without it
// ends the count. A count that already ended (the Workload deleted
// meanwhile) is not begun again.
func (c *Cache) KeepMovingBack(uid types.UID, written string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.movingBack[uid]; ok {
		c.movingBack[uid] = written
	}
}

// ForgetMovingBack ends the count of a move back whose record was not
// written.
func (c *Cache) ForgetMovingBack(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.movingBack, uid)
}

// noteMovingBack counts a spread Workload moving back while its status
// says so, and ends the count with the first copy newer than the one the
// move was decided from that does not.
func (c *Cache) noteMovingBack(w *v1alpha1.Workload) {
	from, counted := c.movingBack[w.UID]
	switch {
	case !w.Spreads() || w.DeletionTimestamp != nil:
		delete(c.movingBack, w.UID)
	case w.Status.Rebalancing != nil:
		c.movingBack[w.UID] = ""
	case counted && (from == "" || w.ResourceVersion != from && newerOrEqual(w.ResourceVersion, from)):
		delete(c.movingBack, w.UID)
	}
}

// ShareLeaving counts a share marked leaving (AnnotationShareLeaving)
// before the informer brings the mark: a share the cache holds placed (one
// whose deletion it saw already is not counted again).
func (c *Cache) ShareLeaving(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.placedAt.get(uid); ok {
		c.leavingShares[uid] = true
	}
}

// IsShareLeaving reports whether the share is counted leaving, though the
// copy at hand may not carry the mark yet.
func (c *Cache) IsShareLeaving(uid types.UID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.leavingShares[uid]
}

// Cluster returns the cycles' view of one cluster, nil when unknown.
func (c *Cache) Cluster(key types.NamespacedName) *ClusterInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.views[key]
}

// DeleteCluster forgets a cluster.
func (c *Cache) DeleteCluster(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.clusters[key]; ok {
		c.labels = nil
	}
	delete(c.clusters, key)
	c.refreshView(key)
}

// UpsertWorkload records where a workload is placed, or that it is
// pending, and forgets it once it is being deleted. While a decision about
// it is assumed, only a copy at least as new as the written decision
// replaces the assumption: an older one is what the decision was made from.
// confirmed reports that this copy ended an assumption.
func (c *Cache) UpsertWorkload(w *v1alpha1.Workload) (confirmed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteRejections(w)
	c.noteMovingBack(w)
	switch {
	case w.IsShare() && w.Finished():
		// A share that ran to its end (a batch share) moves nothing any
		// more, marked or not: its place under --max-concurrent-moves
		// goes. Its Workload, finished too, may never delete it.
		delete(c.leavingShares, w.UID)
	case v1alpha1.IsDrain(w.Annotations[v1alpha1.AnnotationShareLeaving]) && w.IsShare():
		c.leavingShares[w.UID] = true
	}
	if a, ok := c.assumed[w.UID]; ok {
		if w.DeletionTimestamp == nil && !newerOrEqual(w.ResourceVersion, a.written) {
			a.last = w
			return false
		}
		delete(c.assumed, w.UID)
		confirmed = true
	}
	c.upsert(w, w.Status.ClusterRef)
	return confirmed
}

// noteRejections records when each of the Workload's rejections was first
// seen; those gone from its status are forgotten.
func (c *Cache) noteRejections(w *v1alpha1.Workload) {
	if len(w.Status.RejectedClusters) == 0 {
		delete(c.rejectionsSeen, w.UID)
		return
	}
	prev := c.rejectionsSeen[w.UID]
	seen := make(map[types.NamespacedName]seenRejection, len(w.Status.RejectedClusters))
	now := time.Now()
	for i := range w.Status.RejectedClusters {
		rc := &w.Status.RejectedClusters[i]
		key := w.ClusterKey(&rc.Cluster)
		if p, ok := prev[key]; ok && p.attempts == rc.Attempts {
			seen[key] = p
			continue
		}
		seen[key] = seenRejection{attempts: rc.Attempts, at: now}
	}
	c.rejectionsSeen[w.UID] = seen
}

// RejectionSeen returns when this process first saw the Workload's
// rejection by the cluster, at that attempt count; false when it did not
// (it started after, say).
func (c *Cache) RejectionSeen(uid types.UID, cluster types.NamespacedName, attempts int32) (time.Time, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.rejectionsSeen[uid][cluster]
	if !ok || s.attempts != attempts {
		return time.Time{}, false
	}
	return s.at, true
}

// newerOrEqual reports whether resourceVersion rv is at least written; an
// empty written (still in flight) is never reached.
func newerOrEqual(rv, written string) bool {
	if written == "" {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(rv, written)
	// Versions that do not compare (a storage other than etcd) end the
	// assumption at the next copy the informer brings.
	return err != nil || cmp >= 0
}

// upsert records the workload as placed in ref's cluster, or pending.
func (c *Cache) upsert(w *v1alpha1.Workload, ref *v1alpha1.ClusterReference) {
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	var p *PlacedWorkload
	if ref != nil && w.DeletionTimestamp == nil {
		p = NewPlacedWorkload(w)
		p.Cluster = w.ClusterKey(ref)
		if i, ok := c.placedAt.get(w.UID); ok && samePlacement(c.placed[i], p) {
			// A status change the cycle does not see (ready counts, a
			// condition): the snapshot stays.
			return
		}
	}
	c.removePlaced(w.UID)
	delete(c.pending, key)
	switch {
	case w.DeletionTimestamp != nil:
	case ref == nil:
		c.pending[key] = pendingWorkload{schedulerName: w.Spec.SchedulerName, affinity: hasRequiredAffinity(w)}
	default:
		p.slot = c.slotOf(p.Cluster)
		c.placedAt.set(w.UID, len(c.placed))
		c.placed = append(c.placed, p)
		c.terms.upsert(p, c.namespaces)
		if p.Draining {
			c.draining++
		}
		c.addUnbound(p.Cluster, p.Unbound, 1)
		c.snap = nil
	}
}

// samePlacement reports whether two records of a placed workload are the
// same to a scheduling cycle.
func samePlacement(a, b *PlacedWorkload) bool {
	return a.Cluster == b.Cluster && a.Draining == b.Draining && a.Rebalance == b.Rebalance && a.Namespace == b.Namespace && a.Name == b.Name &&
		labels.Equals(a.Labels, b.Labels) && equality.Semantic.DeepEqual(a.Unbound, b.Unbound) &&
		reflect.DeepEqual(a.AntiAffinity, b.AntiAffinity) // parsed terms: exact, or rebuilt
}

func (c *Cache) removePlaced(uid types.UID) {
	i, ok := c.placedAt.get(uid)
	if !ok {
		return
	}
	p, last := c.placed[i], len(c.placed)-1
	if i != last {
		c.placed[i] = c.placed[last]
		c.placedAt.set(c.placed[i].UID, i)
	}
	c.placed[last] = nil
	c.placed = c.placed[:last]
	c.placedAt.del(uid)
	c.terms.remove(uid)
	if p.Draining {
		c.draining--
	}
	c.addUnbound(p.Cluster, p.Unbound, -1)
	c.snap = nil
}

// slotOf numbers a cluster key the first time it is asked for.
func (c *Cache) slotOf(key types.NamespacedName) int {
	if i, ok := c.slots[key]; ok {
		return i
	}
	i := len(c.slots)
	c.slots[key] = i
	return i
}

// addUnbound adds (sign 1) or takes away (sign -1) a placed workload's
// unbound requests from its cluster's.
func (c *Cache) addUnbound(key types.NamespacedName, rl corev1.ResourceList, sign int) {
	if len(rl) == 0 {
		return
	}
	sum := c.unbound[key]
	if sum == nil {
		sum = corev1.ResourceList{}
		c.unbound[key] = sum
	}
	for name, q := range rl {
		v := sum[name]
		if sign > 0 {
			v.Add(q)
		} else {
			v.Sub(q)
		}
		if v.Sign() <= 0 {
			delete(sum, name)
			continue
		}
		sum[name] = v
	}
	if len(sum) == 0 {
		delete(c.unbound, key)
	}
	c.refreshView(key)
}

// refreshView rebuilds the cycles' view of one cluster.
func (c *Cache) refreshView(key types.NamespacedName) {
	c.snap = nil
	ci, ok := c.clusters[key]
	if !ok {
		delete(c.views, key)
		return
	}
	extra := c.unbound[key]
	if len(extra) == 0 {
		c.views[key] = ci
		return
	}
	v := *ci
	v.Requested = ci.Requested.DeepCopy()
	if v.Requested == nil {
		v.Requested = corev1.ResourceList{}
	}
	for name, q := range extra {
		sum := v.Requested[name]
		sum.Add(q)
		v.Requested[name] = sum
	}
	c.views[key] = &v
}

// Assume applies a decision before it is written: the workload is placed
// in cluster (nil leaves it pending), and stays so for every cycle until
// the write is confirmed or forgotten.
func (c *Cache) Assume(w *v1alpha1.Workload, cluster *v1alpha1.ClusterReference) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.assumed[w.UID] = &assumption{}
	c.upsert(w, cluster)
}

// Assumed reports whether a decision about the workload is assumed and not
// yet confirmed: the decision loop leaves it alone meanwhile.
func (c *Cache) Assumed(uid types.UID) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.assumed[uid]
	return ok
}

// Written records the resourceVersion a decision's write returned: the
// informer's copy of that version (or a newer one) ends the assumption.
// confirmed reports that the informer had brought it already, so the
// assumption ended now.
func (c *Cache) Written(uid types.UID, resourceVersion string) (confirmed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.assumed[uid]
	if !ok {
		return false
	}
	a.written = resourceVersion
	if a.last == nil || !newerOrEqual(a.last.ResourceVersion, resourceVersion) {
		return false
	}
	delete(c.assumed, uid)
	c.upsert(a.last, a.last.Status.ClusterRef)
	return true
}

// Forget drops an assumption whose write failed: the cache goes back to
// the newer of w (the caller's latest copy: the informer's, or the one
// the decision was made from) and the informer's copies seen meanwhile.
func (c *Cache) Forget(w *v1alpha1.Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.assumed[w.UID]
	if !ok {
		return
	}
	delete(c.assumed, w.UID)
	if a.last != nil && !newerOrEqual(w.ResourceVersion, a.last.ResourceVersion) {
		w = a.last
	}
	c.upsert(w, w.Status.ClusterRef)
}

// Pending returns the workloads waiting for a cluster whose schedulerName
// is one of names; with affinityOnly, only those with required workload
// affinity (the only ones a placement elsewhere can make feasible).
func (c *Cache) Pending(names map[string]bool, affinityOnly bool) []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]types.NamespacedName, 0, len(c.pending))
	for k, p := range c.pending {
		if names[p.schedulerName] && (p.affinity || !affinityOnly) {
			out = append(out, k)
		}
	}
	return out
}

// PendingCount is len(Pending(names, false)) without building the list;
// the scheduler sets its pending gauge from it after every cycle.
func (c *Cache) PendingCount(names map[string]bool) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, p := range c.pending {
		if names[p.schedulerName] {
			n++
		}
	}
	return n
}

func hasRequiredAffinity(w *v1alpha1.Workload) bool {
	a := WorkloadAffinityOf(w)
	return a != nil && len(a.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// ReplicaRequests are the requests of one replica of the Workload, as
// kube-scheduler counts them (init containers, sidecars, overhead).
func ReplicaRequests(w *v1alpha1.Workload) corev1.ResourceList {
	return resourcehelper.PodRequests(&corev1.Pod{Spec: w.Spec.TargetDeployment.Template.Spec}, resourcehelper.PodResourcesOptions{})
}

// NewPlacedWorkload derives affinity's view of a placed Workload, and the
// requests of its replicas not yet bound.
func NewPlacedWorkload(w *v1alpha1.Workload) *PlacedWorkload {
	// Terms that do not parse are left out: the Workload's own scheduling reports them.
	anti, _ := RequiredTerms(w.Namespace, WorkloadAntiAffinityOf(w))
	p := &PlacedWorkload{
		UID: w.UID, Namespace: w.Namespace, Name: w.Name, Labels: labels.Set(w.Labels),
		AntiAffinity: anti, Rebalance: w.Spec.Placement.Rebalance == v1alpha1.RebalanceWhenPreferred,
	}
	for _, lc := range w.Status.LeftClusters {
		if v1alpha1.IsDrain(lc.Reason) {
			p.Draining = true
		}
	}

	if w.Status.ClusterRef != nil {
		p.Cluster = w.ClusterKey(w.Status.ClusterRef)
	}
	scheduled := int64(0)
	if w.CountsChosen() {
		// Otherwise the counts are still the cluster's it left.
		scheduled = int64(w.Status.ScheduledReplicas)
	}
	if n := int64(w.ReplicaCount()) - scheduled; n > 0 {
		p.Unbound = ReplicaRequests(w)
		for name, q := range p.Unbound {
			q.Mul(n)
			p.Unbound[name] = q
		}
	}
	return p
}

// DeleteWorkload forgets a workload.
func (c *Cache) DeleteWorkload(w *v1alpha1.Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.assumed, w.UID)
	delete(c.rejectionsSeen, w.UID)
	delete(c.leavingShares, w.UID)
	delete(c.movingBack, w.UID)
	c.removePlaced(w.UID)
	delete(c.pending, types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
}

// UpsertNamespace records a namespace's labels, for namespaceSelector.
func (c *Cache) UpsertNamespace(name string, l map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.namespaces[name] = labels.Set(l)
	c.terms.recount(c.placed, c.namespaces)
	c.snap = nil
}

// DeleteNamespace forgets a namespace.
func (c *Cache) DeleteNamespace(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.namespaces, name)
	c.terms.recount(c.placed, c.namespaces)
	c.snap = nil
}

// UpsertBinding records a ClusterBinding: its namespace binds the
// clusters of clusterNamespace. It reports whether that changed anything.
func (c *Cache) UpsertBinding(key types.NamespacedName, clusterNamespace string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.bindings[key]; ok && cur == clusterNamespace {
		return false
	}
	c.bindings[key] = clusterNamespace
	c.snap = nil
	return true
}

// DeleteBinding forgets a ClusterBinding.
func (c *Cache) DeleteBinding(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.bindings, key)
	c.snap = nil
}

// Snapshot returns the fleet as it is now, assumptions included. It is
// built again only after a change.
func (c *Cache) Snapshot() *Snapshot {
	c.mu.RLock()
	snap := c.snap
	c.mu.RUnlock()
	if snap != nil {
		return snap
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.snap != nil {
		return c.snap
	}
	// What the last snapshot's cycles asked about is counted from now on.
	c.terms.asked(c.asking, c.placed, c.namespaces)
	clusters := make([]*ClusterInfo, 0, len(c.views))
	bySlot := make([]*ClusterInfo, len(c.slots))
	for key, ci := range c.views {
		clusters = append(clusters, ci)
		if i, ok := c.slots[key]; ok {
			bySlot[i] = ci
		}
	}
	ns := make(map[string]labels.Set, len(c.namespaces))
	for k, v := range c.namespaces {
		ns[k] = v
	}
	c.snap = newSnapshot(clusters, slices.Clone(c.placed), ns, bySlot)
	c.snap.termCounts, c.snap.uids = c.terms.freeze(), c.placedAt.freeze()
	c.asking = &askedTerms{}
	c.snap.asked = c.asking
	c.snap.RejectionSeen = c.RejectionSeen
	if c.labels == nil {
		c.labels = &sharedLabelIndex{}
	}
	c.snap.labelIndex = c.labels
	c.snap.Bound = map[string]sets.Set[string]{}
	for k, clusterNamespace := range c.bindings {
		if c.snap.Bound[k.Namespace] == nil {
			c.snap.Bound[k.Namespace] = sets.New[string]()
		}
		c.snap.Bound[k.Namespace].Insert(clusterNamespace)
	}
	return c.snap
}
