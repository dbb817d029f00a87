// Package skew says which of placer's candidate schedulers may run in a
// member, by Kubernetes' version-skew policy. It depends on nothing but
// apimachinery's version parsing, so that the candidate scheduler built
// with each Kubernetes minor version (hack/candidate) uses it too.
package skew

import (
	"fmt"
	"strings"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

// CandidateSchedulerVersion is the kube-scheduler the placer binary's own
// candidate scheduler (placer candidate-scheduler) is built from: go.mod's
// k8s.io/kubernetes (TestCandidateSchedulerVersion keeps the two equal).
const CandidateSchedulerVersion = "v1.35.4"

// CandidateSchedulers are the kube-scheduler versions placer's candidate
// scheduler is built with, oldest first: the placer binary's own, then
// each placer-candidate that hack/candidate/MINOR builds for the members the
// others may not run against (TestCandidateSchedulerVersion keeps them
// equal to those modules' k8s.io/kubernetes).
var CandidateSchedulers = []string{CandidateSchedulerVersion, "v1.37.2"}

// CandidateFor returns the candidate scheduler's kube-scheduler version to
// run in a member whose API server is at version, or "" when none may. By
// Kubernetes' version-skew policy a kube-scheduler is never newer than its
// API server and at most one minor older; of those that may, the newest.
func CandidateFor(version string) string {
	v, err := utilversion.ParseGeneric(version)
	if err != nil {
		return ""
	}
	for i := len(CandidateSchedulers) - 1; i >= 0; i-- {
		s := utilversion.MustParseSemantic(CandidateSchedulers[i])
		if v.Major() == s.Major() && (v.Minor() == s.Minor() || v.Minor() == s.Minor()+1) {
			return CandidateSchedulers[i]
		}
	}
	return ""
}

// SupportedMinors names the members' minor versions some candidate
// scheduler may run against, e.g. "v1.35 to v1.38".
func SupportedMinors() string {
	lo := utilversion.MustParseSemantic(CandidateSchedulers[0])
	hi := utilversion.MustParseSemantic(CandidateSchedulers[len(CandidateSchedulers)-1])
	return fmt.Sprintf("v%d.%d to v%d.%d", lo.Major(), lo.Minor(), hi.Major(), hi.Minor()+1)
}

// UnsupportedVersion says why a member's API server, at version, is one
// no candidate scheduler placer has may run against, naming both
// versions, or "" when one may.
func UnsupportedVersion(version string) string {
	if CandidateFor(version) != "" {
		return ""
	}
	builds := "kube-scheduler " + strings.Join(CandidateSchedulers, ", ")
	if _, err := utilversion.ParseGeneric(version); err != nil {
		return fmt.Sprintf("the member's version %q is not one placer can read; placer's candidate scheduler is built with %s", version, builds)
	}
	return fmt.Sprintf("the member's API server is %s; placer's candidate scheduler is built with %s, which run against API servers %s only (Kubernetes' version-skew policy: a kube-scheduler is never newer than its API server, and at most one minor older)",
		version, builds, SupportedMinors())
}

// MajorMinor returns a version's major and minor numbers; 0, 0 when it is
// not a version.
func MajorMinor(version string) (major, minor uint) {
	v, err := utilversion.ParseGeneric(version)
	if err != nil {
		return 0, 0
	}
	return v.Major(), v.Minor()
}

// CandidateBinary is the file of the candidate scheduler built with a
// kube-scheduler version (hack/candidate/MINOR), beside placer in its
// image: placer-candidate-1.37.
func CandidateBinary(version string) string {
	major, minor := MajorMinor(version)
	return fmt.Sprintf("placer-candidate-%d.%d", major, minor)
}
