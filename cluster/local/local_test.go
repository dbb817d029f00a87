package local

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
)

// StartForTest starts a cluster and stops it when the test ends.
func startForTest(t *testing.T, ctx context.Context, opts Options) *Cluster {
	t.Helper()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start cluster %s: %v", opts.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestThreeClustersRunPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	names := []string{"east", "west", "gpu"}
	var opts []Options
	for _, name := range names {
		opts = append(opts, Options{Name: name, Scheduler: true})
	}
	clusters, err := StartAll(ctx, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		t.Cleanup(func() { _ = c.Close() })
	}

	servers := map[string]bool{}
	for i, c := range clusters {
		if servers[c.Server()] {
			t.Fatalf("two clusters share the server %s", c.Server())
		}
		servers[c.Server()] = true

		cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
		v, err := cs.Discovery().ServerVersion()
		if err != nil {
			t.Fatalf("%s: /version: %v", c.Name(), err)
		}
		if v.GitVersion != KubernetesVersion {
			t.Errorf("%s: /version reports %q, want %q", c.Name(), v.GitVersion, KubernetesVersion)
		}

		node := Node{
			Name: c.Name() + "-node-0", CPU: "8", Memory: "32Gi",
			Labels: map[string]string{"topology.kubernetes.io/region": "region-" + c.Name(), "topology.kubernetes.io/zone": "zone-a"},
			Taints: []corev1.Taint{KwokTaint},
		}
		if names[i] == "gpu" {
			node.Extended = map[string]string{"nvidia.com/gpu": "4"}
		}
		if err := c.AddNodes(ctx, node); err != nil {
			t.Fatal(err)
		}
	}

	for i, c := range clusters {
		cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
		if err := WaitForNodesReady(ctx, cs, 1); err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
		limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		if names[i] == "gpu" {
			limits["nvidia.com/gpu"] = resource.MustParse("1")
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
			Spec: corev1.PodSpec{
				Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}},
				Tolerations: []corev1.Toleration{KwokToleration},
			},
		}
		if err := WaitForServiceAccount(ctx, cs, "default", "default"); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: create pod: %v", c.Name(), err)
		}
	}

	for _, c := range clusters {
		cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
		p, err := WaitForPod(ctx, cs, "default", "hello", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		if err != nil {
			t.Fatalf("%s: %v", c.Name(), err)
		}
		if want := c.Name() + "-node-0"; p.Spec.NodeName != want {
			t.Errorf("%s: pod runs on %q, want the kwok node %q", c.Name(), p.Spec.NodeName, want)
		}
	}
	podStreams(ctx, t, clusters[1])
	replaceByName(ctx, t, clusters[0], 5)
}

// podStreams reads the log of pod "hello", runs a command in it and
// attaches to it, through the API server and kwok's kubelet API, as
// kubectl logs, exec and attach do.
func podStreams(ctx context.Context, t *testing.T, c *Cluster) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	b, err := cs.CoreV1().Pods("default").GetLogs("hello", &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
	if err != nil || string(b) != ContainerLog(c.Name()) {
		t.Errorf("%s: the log of pod hello is %q (%v), want %q", c.Name(), b, err, ContainerLog(c.Name()))
	}
	stream := func(sub string, opts runtime.Object, so remotecommand.StreamOptions, timeout time.Duration) error {
		u := cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name("hello").SubResource(sub).VersionedParams(opts, scheme.ParameterCodec).URL()
		ex, err := remotecommand.NewWebSocketExecutor(c.RESTConfig(), http.MethodGet, u.String())
		if err != nil {
			return err
		}
		sctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return ex.StreamWithContext(sctx, so)
	}
	var out, errOut strings.Builder
	err = stream("exec", &corev1.PodExecOptions{Container: "app", Command: []string{"sh", "-c", "echo out; echo err >&2"}, Stdout: true, Stderr: true},
		remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}, 10*time.Second)
	if err != nil || out.String() != "out\n" || errOut.String() != "err\n" {
		t.Errorf("%s: exec in pod hello: stdout %q, stderr %q, %v", c.Name(), out.String(), errOut.String(), err)
	}
	// Attached, the container's new output shows, until the caller leaves.
	seen := NewLineSeen("attached\n")
	done := make(chan error, 1)
	go func() {
		done <- stream("attach", &corev1.PodAttachOptions{Container: "app", Stdout: true}, remotecommand.StreamOptions{Stdout: seen}, 20*time.Second)
	}()
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := c.AppendUntilSeen(wctx, seen, done); err != nil {
		t.Errorf("%s: attach to pod hello: %v", c.Name(), err)
	}
}

// replaceByName deletes the running pod "hello" n times, as an eviction
// does (with a grace period), and creates it again under the same name
// once it is gone, as the agent does. kwok deletes by name, with no UID
// precondition: its delete stage must play once per deletion, or a second
// play deletes a replacement made in between (TestHandshake lost one so).
// kwok logs every play that finds no pod left to delete.
func replaceByName(ctx context.Context, t *testing.T, c *Cluster, n int) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	pods := cs.CoreV1().Pods("default")
	for i := range n {
		p, err := pods.Get(ctx, "hello", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := pods.Delete(ctx, "hello", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := WaitForPodGone(ctx, cs, "default", "hello", p.UID); err != nil {
			t.Fatal(err)
		}
		p = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"}, Spec: p.Spec}
		p.Spec.NodeName = ""
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("replacement %d: %v", i, err)
		}
		if _, err := WaitForPod(ctx, cs, "default", "hello", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(c.Dir(), "kwok.log"))
	if err != nil {
		t.Fatal(err)
	}
	deletes, again := 0, 0
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case !strings.Contains(l, `"default/hello"`):
		case strings.Contains(l, `"msg":"Delete pod"`):
			deletes++
		case strings.Contains(l, "failed to delete pod"):
			again++
		}
	}
	if deletes != n || again != 0 {
		t.Errorf("kwok deleted pod hello %d times and tried %d more, for %d deletions", deletes, again, n)
	}
}

func TestRestrictedIdentityAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startForTest(t, ctx, Options{Name: "solo", NoKwok: true})

	kc, err := c.KubeconfigFor("alice", "team-a")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	alice := kubernetes.NewForConfigOrDie(cfg)
	if _, err := alice.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("an identity without RBAC grants listed Secrets")
	}

	pids := c.PIDs()
	if pids["kube-apiserver"] == 0 || pids["etcd"] == 0 || pids["kube-controller-manager"] == 0 {
		t.Fatalf("want etcd, kube-apiserver and kube-controller-manager running, got %v", pids)
	}
	c.StopAPIServer()
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig())
	if _, err := admin.Discovery().ServerVersion(); err == nil {
		t.Fatal("API server still answers after StopAPIServer")
	}
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Discovery().ServerVersion(); err != nil {
		t.Fatalf("API server does not answer after restart: %v", err)
	}

	// A component that exits by itself is started again, as a kubelet
	// restarts a container; Close stops it for good.
	if err := c.RunRestarting("quitter", "/bin/sh", "-c", "sleep 0.5"); err != nil {
		t.Fatal(err)
	}
	first := c.PIDs()["quitter"]
	restarted := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && !restarted; time.Sleep(100 * time.Millisecond) {
		pid := c.PIDs()["quitter"]
		restarted = pid != 0 && pid != first
	}
	if first == 0 || !restarted {
		t.Errorf("a component that exited was not started again (first pid %d, now %v)", first, c.PIDs())
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir(), "quitter.log")); err != nil || !strings.Contains(string(b), "restart 1 in 1s") {
		t.Errorf("the component's log does not say it was restarted: %q (%v)", b, err)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: time.Second}
	if _, err := hc.Get(c.Server()); err == nil {
		t.Error("API server answers after Close")
	}
	if got := c.PIDs(); len(got) != 0 {
		t.Errorf("processes left after Close: %v", got)
	}
}
