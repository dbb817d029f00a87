package proxypod

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/user"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
)

// noMembers connects no cluster.
type noMembers struct{}

func (noMembers) Serving(types.NamespacedName) *cluster.Connection { return nil }

func (noMembers) Member(types.NamespacedName) cluster.Member { return nil }

func (noMembers) Members() []cluster.Member { return nil }

// TestKubeletTarget: the kubelet API reaches only the delegate of the
// proxy pod asked for, through the Workload that pod controls: never an
// ordinary pod, never through a Workload that only shares the pod's name
// (a user's, another pod's), and not before a delegate is bound.
func TestKubeletTarget(t *testing.T) {
	proxy := func(name string, uid types.UID, scheduler string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: uid}, Spec: corev1.PodSpec{SchedulerName: scheduler}}
	}
	workload := func(name string, owner types.UID) *v1alpha1.Workload {
		w := &v1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"}}
		if owner != "" {
			yes := true
			w.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: name, UID: owner, Controller: &yes}}
		}
		w.Status.ClusterRef = &v1alpha1.ClusterReference{Name: "east", Namespace: "team-a"}
		return w
	}
	// Not placed yet: no cluster to look for a delegate in.
	unbound := workload("unbound", "u4")
	unbound.Status.ClusterRef = nil
	c := fake.NewClientBuilder().WithScheme(apis.NewScheme()).WithObjects(
		proxy("plain", "u1", "default-scheduler"), workload("plain", "u1"),
		proxy("users", "u2", v1alpha1.ProxySchedulerName), workload("users", ""),
		proxy("others", "u3", v1alpha1.ProxySchedulerName), workload("others", "u-old"),
		proxy("unbound", "u4", v1alpha1.ProxySchedulerName), unbound,
		// Placed on a cluster placer holds no connection to.
		proxy("unconnected", "u6", v1alpha1.ProxySchedulerName), workload("unconnected", "u6"),
		proxy("alone", "u5", v1alpha1.ProxySchedulerName),
	).Build()
	k := &Kubelet{Reader: c, Members: noMembers{}}
	for name, want := range map[string]string{
		"plain":       "is not a proxy pod",
		"users":       "has no Workload yet",
		"others":      "has no Workload yet",
		"alone":       "has no Workload yet",
		"unbound":     "has no delegate bound in a cluster yet",
		"unconnected": "has no delegate bound in a cluster yet",
		"missing":     "not found",
	} {
		tg, err := k.target(context.Background(), "team-a", name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %+v, %v; want an error saying %q", name, tg, err, want)
		}
	}
}

func TestParseStreamPath(t *testing.T) {
	for path, want := range map[string]streamPath{
		"/containerLogs/team-a/web-0/app": {kind: "containerLogs", namespace: "team-a", pod: "web-0"},
		"/exec/team-a/web-0/app":          {kind: "exec", namespace: "team-a", pod: "web-0"},
		"/attach/team-a/web-0/app":        {kind: "attach", namespace: "team-a", pod: "web-0"},
	} {
		if got, ok := parseStreamPath(path); !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", path, got, ok, want)
		}
	}
	for _, path := range []string{"/pods", "/portForward/team-a/web-0", "/exec/team-a//app", "/exec/team-a/web-0", "/logs/x/y/z", "/exec/a/b/c/d"} {
		if got, ok := parseStreamPath(path); ok {
			t.Errorf("%s parsed as %+v", path, got)
		}
	}
}

// TestVirtualNodeKubelet: a virtual node names the manager's kubelet API
// as its only address (the API server's default order tries a host name
// first, which resolves nowhere), and its port.
func TestVirtualNodeKubelet(t *testing.T) {
	kc := &v1alpha1.KubernetesCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "east"}}
	n := VirtualNode(kc, KubeletEndpoint{Address: "10.1.2.3", Port: 10250})
	if len(n.Status.Addresses) != 1 || n.Status.Addresses[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}) || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("addresses %v, port %d; want only InternalIP 10.1.2.3, port 10250", n.Status.Addresses, n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	n = VirtualNode(kc, KubeletEndpoint{})
	if len(n.Status.Addresses) != 1 || n.Status.Addresses[0].Type != corev1.NodeHostName || n.Status.DaemonEndpoints.KubeletEndpoint.Port != 0 {
		t.Errorf("without a kubelet API: addresses %v, port %d; want its host name only, no port", n.Status.Addresses, n.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
}

// TestPodNodeAuthAttributes: a request is authorized on the node of the
// pod it names, exec and attach as create whatever the method.
func TestPodNodeAuthAttributes(t *testing.T) {
	a := &podNodeAuth{Auth: nodeutil.NoAuth(), nodeOf: func(*http.Request) string { return "placer.default.east" }}
	u := &user.DefaultInfo{Name: "kube-apiserver-kubelet-client"}
	for path, want := range map[string]string{
		"/containerLogs/ns/p/c": "get",
		"/exec/ns/p/c":          "create",
		"/attach/ns/p/c":        "create",
	} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		attrs := a.GetRequestAttributes(u, r)
		if attrs.GetVerb() != want || attrs.GetName() != "placer.default.east" || attrs.GetResource() != "nodes" || attrs.GetSubresource() != "proxy" {
			t.Errorf("GET %s: %s nodes/%s %s, want %s nodes/proxy placer.default.east", path, attrs.GetVerb(), attrs.GetSubresource(), attrs.GetName(), want)
		}
	}
}
