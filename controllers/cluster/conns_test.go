package cluster

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/clustertest"
	"github.com/placer-dev/placer/controllers/shared"
)

// fakeConns are member connections whose health a test sets.
type fakeConns struct {
	members clustertest.Members
	// health is what Check says of each cluster; connectErr what
	// Connect says.
	health     map[types.NamespacedName]cluster.Health
	connectErr error
	// connected and removed record the calls; last what Check was told.
	connected, removed []types.NamespacedName
	// withheld are connected clusters no member serves (Registry.Member
	// withholds them: their member has not shown who it is yet).
	withheld map[types.NamespacedName]bool
	last     cluster.Last
}

func (f *fakeConns) Member(key types.NamespacedName) cluster.Member { return f.members.Member(key) }
func (f *fakeConns) Members() []cluster.Member                      { return f.members.Members() }

func (f *fakeConns) Connect(key types.NamespacedName, _ []byte, _ map[string]v1alpha1.NamespaceName, _ ...cluster.EnsureOption) error {
	if f.connectErr != nil {
		return f.connectErr
	}
	f.connected = append(f.connected, key)
	return nil
}

func (f *fakeConns) Check(_ context.Context, key types.NamespacedName, _ []byte, last cluster.Last, _ cluster.HealthOptions, _ ...cluster.EnsureOption) (cluster.Health, error) {
	f.last = last
	return f.health[key], nil
}

func (f *fakeConns) Remove(key types.NamespacedName) { f.removed = append(f.removed, key) }

func (f *fakeConns) Connected(key types.NamespacedName) bool {
	return f.members.Member(key) != nil || f.withheld[key]
}

func (f *fakeConns) RequestToken(context.Context, types.NamespacedName, types.NamespacedName, time.Duration) (string, error) {
	return "", errors.New("the fake has no member to ask")
}

// indexedClient is a management client holding objs, the status of those
// in withStatus a subresource, with the Workload indexes the drain lists
// by (shared.IndexWorkloads).
func indexedClient(objs []client.Object, withStatus ...client.Object) client.WithWatch {
	return fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(objs...).WithStatusSubresource(withStatus...).
		WithIndex(&v1alpha1.Workload{}, shared.IndexWorkloadClusters, shared.WorkloadClusters).
		WithIndex(&v1alpha1.Workload{}, shared.IndexWorkloadDependencyClusters, shared.DependencyClusters).Build()
}

// leftFrom: the Workload left the cluster, where 2 of its replicas remain.
func leftFrom(cluster string) func(*v1alpha1.Workload) {
	return func(w *v1alpha1.Workload) {
		w.Status.LeftClusters = []v1alpha1.LeftCluster{{Cluster: v1alpha1.ClusterReference{Name: cluster}, Reason: v1alpha1.ReasonClusterDeleted}}
		w.Status.ClusterCounts = []v1alpha1.ClusterCount{{Cluster: v1alpha1.ClusterReference{Name: cluster}, Replicas: 2}}
	}
}

// answering is the health of a member that answers, its agent running.
func answering() cluster.Health {
	return cluster.Health{Version: "v1.35.4", ProbeTime: &metav1.Time{Time: time.Now()}, Message: "v1.35.4 answers", Next: 20 * time.Second}
}
