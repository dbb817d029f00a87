package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/internal/skew"
)

// TestJudge: placer's components in an answering member, as its summary
// shows them.
func TestJudge(t *testing.T) {
	const grace = 40 * time.Second
	beat := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(time.Now().Add(-ago)); return &t }
	status := func(ago time.Duration, running bool) mcv1alpha1.ClusterSummaryStatus {
		return mcv1alpha1.ClusterSummaryStatus{NodeCount: 3, ReadyNodeCount: 2, HeartbeatTime: beat(ago), CandidateScheduler: &mcv1alpha1.ComponentStatus{Running: running, Message: "its Lease expired"}}
	}
	cases := []struct {
		name      string
		sum       Summary
		reason    string
		unsettled bool
		next      time.Duration
		message   string
	}{
		{name: "a fresh heartbeat and a running candidate scheduler: Ready, looked at again within the grace",
			sum: Summary{Synced: true, Found: true, Changed: true, Silent: 10 * time.Second, Status: status(10*time.Second, true)}, next: 30 * time.Second, message: "2 of 3 nodes ready"},
		{name: "not listed yet, within the grace: keep the condition, look again soon",
			sum: Summary{Silent: 5 * time.Second}, unsettled: true, next: 2 * time.Second},
		{name: "not listed past the grace: the agent is not running",
			sum: Summary{Silent: 50 * time.Second}, reason: v1alpha1.ReasonAgentNotRunning, next: time.Minute, message: "has not synced"},
		{name: "no summary: the agent is not running",
			sum: Summary{Synced: true, Silent: time.Second}, reason: v1alpha1.ReasonAgentNotRunning, next: time.Minute, message: "has not published"},
		{name: "a summary without a heartbeat: an agent older than the manager",
			sum: Summary{Synced: true, Found: true, Status: mcv1alpha1.ClusterSummaryStatus{NodeCount: 1}}, reason: v1alpha1.ReasonAgentNotRunning, next: time.Minute, message: "upgrade it"},
		{name: "silent past the grace: the agent stopped",
			sum: Summary{Synced: true, Found: true, Changed: true, Silent: 45 * time.Second, Status: status(45*time.Second, true)}, reason: v1alpha1.ReasonAgentNotRunning, next: time.Minute, message: "has not renewed"},
		{name: "a new watch sees one old summary: keep the condition until it changes or the grace ends",
			sum: Summary{Synced: true, Found: true, Silent: 15 * time.Second, Status: status(time.Hour, true)}, unsettled: true, next: 25 * time.Second},
		{name: "the candidate scheduler stopped renewing its Lease",
			sum: Summary{Synced: true, Found: true, Changed: true, Silent: 10 * time.Second, Status: status(10*time.Second, false)}, reason: v1alpha1.ReasonCandidateSchedulerNotRunning, next: 30 * time.Second, message: "its Lease expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Health{Version: "v1.35.4", Message: "v1.35.4 answers", Next: time.Minute}
			judge(&h, tc.sum, grace)
			if h.Reason != tc.reason || h.Unsettled != tc.unsettled || h.Next != tc.next {
				t.Errorf("reason %q unsettled %t next %s, want %q %t %s (%s)", h.Reason, h.Unsettled, h.Next, tc.reason, tc.unsettled, tc.next, h.Message)
			}
			if !strings.Contains(h.Message, tc.message) {
				t.Errorf("message %q, want it to say %q", h.Message, tc.message)
			}
		})
	}
}

// TestProbedRecently: between probes a summary change is judged without a
// probe; a cluster not Ready, probed an interval ago, or not watched yet
// is probed.
func TestProbedRecently(t *testing.T) {
	at := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(time.Now().Add(-ago)); return &t }
	cases := []struct {
		name   string
		last   Last
		synced bool
		want   bool
	}{
		{"probed Ready 5s ago, watched", Last{ProbeTime: at(5 * time.Second), Version: "v1.35.4", Ready: true}, true, true},
		{"probed an interval ago", Last{ProbeTime: at(31 * time.Second), Version: "v1.35.4", Ready: true}, true, false},
		{"not Ready", Last{ProbeTime: at(5 * time.Second), Version: "v1.35.4"}, true, false},
		{"not watched yet", Last{ProbeTime: at(5 * time.Second), Version: "v1.35.4", Ready: true}, false, false},
		{"never probed", Last{Ready: true}, true, false},
	}
	for _, tc := range cases {
		if _, got := probedRecently(tc.last, tc.synced, 30*time.Second); got != tc.want {
			t.Errorf("%s: probedRecently = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestStale: watches started before the cluster stopped answering missed
// what happened since; the down time is whole seconds.
func TestStale(t *testing.T) {
	down := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for name, tc := range map[string]struct {
		started time.Time
		want    bool
	}{
		"never started":              {time.Time{}, false},
		"started before":             {down.Add(-time.Minute), true},
		"started in the same second": {down.Add(500 * time.Millisecond), true},
		"started after it came back": {down.Add(2 * time.Second), false},
	} {
		if got := stale(tc.started, down); got != tc.want {
			t.Errorf("%s: stale = %t, want %t", name, got, tc.want)
		}
	}
}

// TestRegistryCheck: a member that serves /version but not placer's kinds
// answers, and its agent does not run; one that refuses the credentials,
// or does not answer, says so; the connection is the registry's until the
// kubeconfig changes.
func TestRegistryCheck(t *testing.T) {
	unauthorized, served := false, "v1.35.4"
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case unauthorized:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Unauthorized","code":401}`))
		case r.URL.Path == "/version":
			_, _ = w.Write([]byte(`{"major":"1","minor":"35","gitVersion":"` + served + `"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	withCA := func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthorityData = pemCert(srv) }
	r := NewRegistry(Options{ProbeTimeout: 2 * time.Second, Policy: KubeconfigPolicy{AllowLoopback: true}}, nil)
	defer r.Close()
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	o := HealthOptions{Interval: 30 * time.Second, Grace: 40 * time.Second}
	if _, err := r.Check(context.Background(), key, nil, Last{}, o); err == nil {
		t.Error("a check without a connection succeeded")
	}
	kc := kubeconfig(t, srv.URL, withCA)
	if err := r.Connect(key, kc, map[string]v1alpha1.NamespaceName{"team-a": "apps"}); err != nil {
		t.Fatal(err)
	}
	first := r.Get(key)
	h, err := r.Check(context.Background(), key, kc, Last{}, o)
	if err != nil {
		t.Fatal(err)
	}
	if h.Version != "v1.35.4" || h.ProbeTime == nil || h.Reason != v1alpha1.ReasonAgentNotRunning || !strings.Contains(h.Message, "v1.35.4 answers") {
		t.Errorf("a member without placer's agent: %+v, want v1.35.4 probed, AgentNotRunning", h)
	}
	if err := r.Connect(key, kc, nil); err != nil || r.Get(key) != first {
		t.Errorf("the same kubeconfig made a new connection (%v)", err)
	}
	// A member too old for the candidate scheduler is refused, both
	// versions named.
	served = "v1.34.2"
	if h, err = r.Check(context.Background(), key, kc, Last{}, o); err != nil || h.Reason != v1alpha1.ReasonUnsupportedVersion ||
		!strings.Contains(h.Message, "v1.34.2") || !strings.Contains(h.Message, skew.CandidateSchedulerVersion) {
		t.Errorf("a member of v1.34.2: %+v (%v), want UnsupportedVersion naming both versions", h, err)
	}
	served = "v1.35.4"
	unauthorized = true
	if h, err = r.Check(context.Background(), key, kc, Last{}, o); err != nil || h.Reason != v1alpha1.ReasonUnauthorized {
		t.Errorf("credentials refused: %+v (%v), want Unauthorized", h, err)
	}
	srv.Close()
	if h, err = r.Check(context.Background(), key, kc, Last{}, o); err != nil || h.Reason != v1alpha1.ReasonUnreachable || h.Version != "" {
		t.Errorf("a member that does not answer: %+v (%v), want Unreachable", h, err)
	}
	other := kubeconfig(t, srv.URL, withCA, func(_ *clientcmdapi.Cluster, a *clientcmdapi.AuthInfo) { a.Token = "another" })
	if err := r.Connect(key, other, nil); err != nil || r.Get(key) == first {
		t.Errorf("a new kubeconfig kept the old connection (%v)", err)
	}
	select {
	case <-first.Done():
	case <-time.After(10 * time.Second):
		t.Error("the replaced connection was not closed")
	}
	r.Remove(key)
	if r.Len() != 0 {
		t.Errorf("%d connections after Remove", r.Len())
	}
}

// TestRegistryDefaults: a timeout or a number of requests in flight not
// above zero takes its default, so that no Options value stops every
// request to members; a negative QPS stays client-go's "no limit".
func TestRegistryDefaults(t *testing.T) {
	for name, c := range map[string]struct{ opts, want Options }{
		"zero": {Options{}, Options{QPS: 20, Burst: 40, ProbeTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second, MaxInFlight: 4}},
		"negative": {Options{QPS: -1, Burst: 1, ProbeTimeout: -time.Second, RequestTimeout: -time.Second, MaxInFlight: -1},
			Options{QPS: -1, Burst: 1, ProbeTimeout: 5 * time.Second, RequestTimeout: 10 * time.Second, MaxInFlight: 4}},
	} {
		opts, want := c.opts, c.want
		got := NewRegistry(opts, nil).opts
		if got != want {
			t.Errorf("%s: NewRegistry(%+v) took %+v, want %+v", name, opts, got, want)
		}
	}
}

// TestIdentify: who the member says it is against who placer recorded.
func TestIdentify(t *testing.T) {
	found := func(id string) Summary {
		return Summary{Synced: true, Found: true, Status: mcv1alpha1.ClusterSummaryStatus{ClusterID: id}}
	}
	for name, tc := range map[string]struct {
		sum             Summary
		want, reason    string
		record, message string
	}{
		"nothing recorded: the first identity is recorded": {sum: found("uid-a"), record: "uid-a"},
		"the recorded cluster":                             {sum: found("uid-a"), want: "uid-a", record: "uid-a"},
		"another cluster":                                  {sum: found("uid-b"), want: "uid-a", record: "uid-b", reason: v1alpha1.ReasonClusterIdentityChanged, message: "it is cluster uid-b (its kube-system namespace's UID), not uid-a"},
		"an agent that publishes none: as one not running": {sum: found(""), want: "uid-a", reason: v1alpha1.ReasonAgentNotRunning, message: "publishes no cluster identity"},
		"no summary: the agent's reason stands":            {sum: Summary{Synced: true}, want: "uid-a"},
	} {
		h := Health{Unsettled: true}
		identify(&h, tc.sum, tc.want)
		if h.Reason != tc.reason || h.ClusterID != tc.record || !strings.Contains(h.Message, tc.message) || tc.reason != "" && h.Unsettled {
			t.Errorf("%s: %+v, want reason %q, clusterID %q, a message saying %q", name, h, tc.reason, tc.record, tc.message)
		}
	}
}

// TestJudgeChaperons: a member whose summary says ready, but whose
// PodChaperons have not been listed within the grace, is not Ready
// (NotReady, not one that answers): a deleted cluster's drain waited for
// it for ever. Within the grace, or listed, nothing changes, nor does a
// verdict the summary already gave.
func TestJudgeChaperons(t *testing.T) {
	grace := 40 * time.Second
	for name, tc := range map[string]struct {
		h        Health
		synced   bool
		watching time.Duration
		want     string
	}{
		"listed":                        {synced: true, watching: time.Hour},
		"within the grace":              {watching: grace / 2},
		"past the grace":                {watching: grace, want: v1alpha1.ReasonNotReady},
		"the summary's verdict stands":  {h: Health{Reason: v1alpha1.ReasonAgentNotRunning}, watching: time.Hour, want: v1alpha1.ReasonAgentNotRunning},
		"unsettled: the condition kept": {h: Health{Unsettled: true}, watching: time.Hour},
	} {
		h := tc.h
		judgeChaperons(&h, tc.synced, tc.watching, grace)
		if h.Reason != tc.want || tc.want == v1alpha1.ReasonNotReady && !strings.Contains(h.Message, "PodChaperons") {
			t.Errorf("%s: %+v, want reason %q", name, h, tc.want)
		}
	}
}
