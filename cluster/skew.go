package cluster

import (
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// CandidateSchedulerVersion is the kube-scheduler placer's candidate
// scheduler is built from (go.mod's k8s.io/kubernetes; TestCandidateSchedulerVersion
// keeps the two equal).
const CandidateSchedulerVersion = "v1.35.4"

// UnsupportedVersion says why a member's API server, at version, is one
// the candidate scheduler may not run against, or "" when it may. By
// Kubernetes' version-skew policy a kube-scheduler is never newer than its
// API server and at most one minor older: this one serves members of its
// own minor and the next.
func UnsupportedVersion(version string) string {
	sched := utilversion.MustParseSemantic(CandidateSchedulerVersion)
	v, err := utilversion.ParseGeneric(version)
	if err != nil {
		return fmt.Sprintf("the member's version %q is not one placer can read; placer's candidate scheduler is kube-scheduler %s", version, CandidateSchedulerVersion)
	}
	if v.Major() == sched.Major() && (v.Minor() == sched.Minor() || v.Minor() == sched.Minor()+1) {
		return ""
	}
	return fmt.Sprintf("the member's API server is %s; placer's candidate scheduler is kube-scheduler %s, which runs against API servers v%d.%d and v%d.%d only (Kubernetes' version-skew policy: a kube-scheduler is never newer than its API server, and at most one minor older)",
		version, CandidateSchedulerVersion, sched.Major(), sched.Minor(), sched.Major(), sched.Minor()+1)
}
