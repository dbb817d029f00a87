package cluster_test

import (
	"testing"

	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/clustertest"
)

// TestOneCluster: two registrations are one cluster at one API server, or
// at two addresses that showed one identity; never by an identity one of
// them has not shown.
func TestOneCluster(t *testing.T) {
	m := func(host, id string) cluster.Member { return &clustertest.Member{HostName: host, ID: id} }
	for name, tc := range map[string]struct {
		a, b cluster.Member
		want bool
	}{
		"one host":                      {m("https://a", ""), m("https://a", ""), true},
		"two hosts, one identity":       {m("https://a", "uid-a"), m("https://10.0.0.1", "uid-a"), true},
		"two hosts, two identities":     {m("https://a", "uid-a"), m("https://b", "uid-b"), false},
		"two hosts, no identity shown":  {m("https://a", ""), m("https://b", ""), false},
		"two hosts, one identity shown": {m("https://a", "uid-a"), m("https://b", ""), false},
	} {
		if got := cluster.OneCluster(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: OneCluster = %t, want %t", name, got, tc.want)
		}
	}
}
