package cluster

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
)

// TestChaperonHandlers: a chaperon's change goes to the OnChaperon
// handler whatever the chaperon, and to an AlsoOnChaperon handler only
// for the chaperons it takes (all, when it takes no filter).
func TestChaperonHandlers(t *testing.T) {
	r := &Registry{}
	var main, proxies, every []string
	r.OnChaperon(func(w types.NamespacedName) { main = append(main, w.Name) })
	r.AlsoOnChaperon(func(w types.NamespacedName) { proxies = append(proxies, w.Name) }, func(ch *mcv1alpha1.PodChaperon) bool {
		return ch.Annotations[mcv1alpha1.AnnotationMirrorStatus] == mcv1alpha1.MirrorStatusFull
	})
	r.AlsoOnChaperon(func(w types.NamespacedName) { every = append(every, w.Name) }, nil)
	proxy := &mcv1alpha1.PodChaperon{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{mcv1alpha1.AnnotationMirrorStatus: mcv1alpha1.MirrorStatusFull}}}
	r.chaperonChanged(proxy, types.NamespacedName{Namespace: "apps", Name: "web-1"})
	r.chaperonChanged(&mcv1alpha1.PodChaperon{}, types.NamespacedName{Namespace: "apps", Name: "batch"})
	if want := []string{"web-1", "batch"}; !slices.Equal(main, want) || !slices.Equal(every, want) {
		t.Errorf("OnChaperon saw %v, an unfiltered AlsoOnChaperon %v; want %v both", main, every, want)
	}
	if want := []string{"web-1"}; !slices.Equal(proxies, want) {
		t.Errorf("the proxy pods' handler saw %v, want %v: only the chaperon that mirrors a pod's whole status", proxies, want)
	}
}

// TestMemberWithheld: a connection serves as the cluster's member only
// once the cluster controller said which cluster placer placed in and,
// when one is recorded, its summary shows that cluster; a kubeconfig
// re-pointed at another cluster makes a connection that serves no one,
// and pointed back, serves again. Before, Member returned any connection.
func TestMemberWithheld(t *testing.T) {
	r := NewRegistry(Options{Policy: KubeconfigPolicy{AllowLoopback: true}}, nil)
	defer r.Close()
	key := types.NamespacedName{Namespace: "default", Name: "a"}
	summary := func(id string) *mcv1alpha1.ClusterSummary {
		return &mcv1alpha1.ClusterSummary{Status: mcv1alpha1.ClusterSummaryStatus{ClusterID: id}}
	}
	// Two API servers (never asked anything here).
	srvA, srvB := httptest.NewTLSServer(http.NotFoundHandler()), httptest.NewTLSServer(http.NotFoundHandler())
	defer srvA.Close()
	defer srvB.Close()
	at := func(srv *httptest.Server) []byte {
		return kubeconfig(t, srv.URL, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) { c.CertificateAuthorityData = pemCert(srv) })
	}
	c, err := r.Ensure(key, at(srvA))
	if err != nil {
		t.Fatal(err)
	}
	if r.Member(key) != nil || len(r.Members()) != 0 {
		t.Error("a connection served before the cluster controller said which cluster it is")
	}
	c.Expect("")
	if r.Member(key) == nil {
		t.Error("a cluster with no identity recorded (an upgrade) was withheld")
	}
	c.Expect("uid-a")
	c.sawIdentity(summary("uid-a"))
	if r.Member(key) == nil || len(r.Members()) != 1 {
		t.Error("the cluster placer placed in was withheld")
	}
	// The Secret re-pointed at another API server.
	b, err := r.Ensure(key, at(srvB))
	if err != nil {
		t.Fatal(err)
	}
	if r.Member(key) != nil {
		t.Error("a new connection served before its summary showed which cluster it reaches")
	}
	b.sawIdentity(summary("uid-b"))
	if r.Member(key) != nil || len(r.Members()) != 0 {
		t.Error("another cluster served as the one placer placed in")
	}
	b.sawIdentity(summary(""))
	if r.Member(key) != nil {
		t.Error("a cluster whose agent publishes no identity served as the recorded one")
	}
	// Pointed back.
	back, err := r.Ensure(key, at(srvA))
	if err != nil {
		t.Fatal(err)
	}
	back.sawIdentity(summary("uid-a"))
	if r.Member(key) == nil {
		t.Error("pointed back, the cluster was still withheld")
	}
	// Reconnected with the same kubeconfig (it answers again after an
	// outage): the same cluster, served while its fresh watch lists;
	// withheld, the candidates it holds for a Workload chosen there under
	// another registration of it would be kept by no one.
	if _, err := r.Reconnect(key, at(srvA)); err != nil {
		t.Fatal(err)
	}
	if r.Member(key) == nil || len(r.Members()) != 1 {
		t.Error("reconnected with the same kubeconfig, the cluster was withheld until its watch listed again")
	}
}
