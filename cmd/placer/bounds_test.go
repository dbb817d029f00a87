package main

import (
	"strings"
	"testing"
)

// TestManagerBounds: a manager asked for no request slot per member, no
// deadline, or a proxy pods' controller with no worker or no token,
// refuses to start, naming the flag, before it does anything
// else (it would otherwise start, and every pass to a member would wait
// for good).
func TestManagerBounds(t *testing.T) {
	for _, tc := range []struct{ arg, flag string }{
		{"--cluster-max-in-flight=0", "--cluster-max-in-flight"},
		{"--cluster-max-in-flight=-1", "--cluster-max-in-flight"},
		{"--cluster-request-timeout=0s", "--cluster-request-timeout"},
		{"--cluster-request-timeout=-5s", "--cluster-request-timeout"},
		{"--proxy-pod-workers=0", "--proxy-pod-workers"},
		{"--proxy-pod-qps=0", "--proxy-pod-qps"},
		{"--proxy-pod-burst=0", "--proxy-pod-burst"},
	} {
		cmd := newManagerCommand()
		// A kubeconfig that does not exist: a manager that got past the
		// bounds would fail there, for another reason.
		cmd.SetArgs([]string{tc.arg, "--kubeconfig=/nonexistent/kubeconfig"})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%s: %v, want an error naming %s", tc.arg, err, tc.flag)
		}
	}
}
