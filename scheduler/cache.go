package scheduler

import (
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
)

// Cache keeps the scheduler's view of the fleet up to date from informer
// events, so a cycle's snapshot costs a copy of pointers, not a List.
type Cache struct {
	mu         sync.RWMutex
	clusters   map[types.NamespacedName]*ClusterInfo
	placed     map[types.UID]*PlacedWorkload
	pending    map[types.NamespacedName]string
	namespaces map[string]labels.Set
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{
		clusters:   map[types.NamespacedName]*ClusterInfo{},
		placed:     map[types.UID]*PlacedWorkload{},
		pending:    map[types.NamespacedName]string{},
		namespaces: map[string]labels.Set{},
	}
}

// UpsertCluster records a cluster's latest state.
func (c *Cache) UpsertCluster(kc *v1alpha1.KubernetesCluster) {
	ci := NewClusterInfo(kc)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clusters[ci.Key] = ci
}

// DeleteCluster forgets a cluster.
func (c *Cache) DeleteCluster(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.clusters, key)
}

// UpsertWorkload records where a workload is placed, or that it is
// pending, and forgets it once it is being deleted.
func (c *Cache) UpsertWorkload(w *v1alpha1.Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := types.NamespacedName{Namespace: w.Namespace, Name: w.Name}
	delete(c.placed, w.UID)
	delete(c.pending, key)
	switch {
	case w.DeletionTimestamp != nil:
	case w.Status.ClusterRef == nil:
		c.pending[key] = w.Spec.SchedulerName
	default:
		c.placed[w.UID] = NewPlacedWorkload(w)
	}
}

// Pending returns the workloads waiting for a cluster whose schedulerName
// is one of names.
func (c *Cache) Pending(names map[string]bool) []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]types.NamespacedName, 0, len(c.pending))
	for k, n := range c.pending {
		if names[n] {
			out = append(out, k)
		}
	}
	return out
}

// PendingCount is len(Pending(names)) without building the list; the
// scheduler sets its pending gauge from it after every cycle.
func (c *Cache) PendingCount(names map[string]bool) int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := 0
	for _, name := range c.pending {
		if names[name] {
			n++
		}
	}
	return n
}

// NewPlacedWorkload derives affinity's view of a placed Workload.
func NewPlacedWorkload(w *v1alpha1.Workload) *PlacedWorkload {
	// Terms that do not parse are left out: the Workload's own scheduling reports them.
	anti, _ := RequiredTerms(w.Namespace, WorkloadAntiAffinityOf(w))
	return &PlacedWorkload{
		UID: w.UID, Namespace: w.Namespace, Name: w.Name, Labels: labels.Set(w.Labels),
		Cluster:      w.ClusterKey(w.Status.ClusterRef),
		AntiAffinity: anti,
	}
}

// DeleteWorkload forgets a workload.
func (c *Cache) DeleteWorkload(w *v1alpha1.Workload) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.placed, w.UID)
	delete(c.pending, types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
}

// UpsertNamespace records a namespace's labels, for namespaceSelector.
func (c *Cache) UpsertNamespace(name string, l map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.namespaces[name] = labels.Set(l)
}

// DeleteNamespace forgets a namespace.
func (c *Cache) DeleteNamespace(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.namespaces, name)
}

// Snapshot returns the fleet as it is now.
func (c *Cache) Snapshot() *Snapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	clusters := make([]*ClusterInfo, 0, len(c.clusters))
	for _, ci := range c.clusters {
		clusters = append(clusters, ci)
	}
	placed := make([]*PlacedWorkload, 0, len(c.placed))
	for _, p := range c.placed {
		placed = append(placed, p)
	}
	ns := make(map[string]labels.Set, len(c.namespaces))
	for k, v := range c.namespaces {
		ns[k] = v
	}
	return NewSnapshot(clusters, placed, ns)
}
