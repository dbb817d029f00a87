// Package cliflags holds the client and leader-election flags every placer
// component has: the placer binary's commands and the candidate scheduler
// built for each Kubernetes minor version (hack/candidate) register them alike.
package cliflags

import (
	"time"

	"github.com/spf13/pflag"
)

// Common are the client and leader-election flags every component has,
// bound to wherever the component keeps them.
type Common struct {
	Kubeconfig          *string
	QPS                 *float32
	Burst               *int
	LeaderElect         *bool
	LeaderNS            *string
	Lease, Renew, Retry *time.Duration
}

// Register adds the flags: what --kubeconfig reaches, leader election on
// by default or not, and the Lease's namespace by default (with what
// empty means, or who reads it).
func (c Common) Register(fs *pflag.FlagSet, kubeconfigHelp string, leaderDefault bool, leaderNS, leaderNSHelp string) {
	fs.StringVar(c.Kubeconfig, "kubeconfig", "", kubeconfigHelp)
	fs.Float32Var(c.QPS, "kube-api-qps", 50, "QPS of the client")
	fs.IntVar(c.Burst, "kube-api-burst", 100, "burst of the client")
	fs.BoolVar(c.LeaderElect, "leader-elect", leaderDefault, "elect a leader so only one replica acts at a time")
	fs.StringVar(c.LeaderNS, "leader-election-namespace", leaderNS, "namespace of the leader election Lease"+leaderNSHelp)
	fs.DurationVar(c.Lease, "leader-election-lease-duration", 15*time.Second, "how long a leader's Lease holds without renewal: how long a successor waits after a leader dies")
	fs.DurationVar(c.Renew, "leader-election-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew before it stops leading")
	fs.DurationVar(c.Retry, "leader-election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
}
