package cluster

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/clustertest"
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
	last               cluster.Last
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

func (f *fakeConns) RequestToken(context.Context, types.NamespacedName, types.NamespacedName, time.Duration) (string, error) {
	return "", errors.New("the fake has no member to ask")
}
