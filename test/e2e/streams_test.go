package e2e

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	mcv1alpha1 "github.com/placer-dev/placer/apis/multicluster/v1alpha1"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/internal/testenv"
)

// streams: kubectl logs, exec and attach of a proxy pod, through the
// management cluster's API server and the virtual node's kubelet API
// (the manager), reach the delegate's container in its member (kwok's
// kubelet API there) as the tenant. Pod in-eu runs in pa, which opened
// the tenant's streams (config.OpenStreams); in-us (the region case's)
// runs in pb, which did not.
func (f *proxyFleet) streams(t *testing.T) {
	ctx := context.Background()
	eu := regionPod("in-eu", "eu")
	if err := f.c.Create(ctx, eu); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.c.Delete(ctx, eu); err != nil {
			t.Error(err)
		}
		testenv.WaitForDeletion(t, f.wc, eu, &corev1.PodList{}, timeout)
	}()
	testenv.WaitFor(t, f.wc, eu, &corev1.PodList{}, timeout, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	pods := f.cs.CoreV1().Pods("default")
	pa := f.members[0]

	// kubectl logs: the delegate's log, which names the member.
	b, err := pods.GetLogs("in-eu", &corev1.PodLogOptions{Container: "app"}).DoRaw(ctx)
	if err != nil || string(b) != local.ContainerLog(pa.name) {
		t.Errorf("the log of in-eu is %q (%v), want %q", b, err, local.ContainerLog(pa.name))
	}
	// kubectl logs -f: a line the container writes later comes.
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rc, err := pods.GetLogs("in-eu", &corev1.PodLogOptions{Container: "app", Follow: true}).Stream(sctx)
	if err != nil {
		t.Fatalf("kubectl logs -f in-eu: %v", err)
	}
	followed := local.NewLineSeen("followed\n")
	go func() { _, _ = io.Copy(followed, rc) }()
	if err := pa.target.AppendUntilSeen(sctx, followed, nil); err != nil {
		t.Errorf("kubectl logs -f in-eu: %v", err)
	}
	_ = rc.Close()

	// kubectl exec: stdin, stdout, stderr and the exit code.
	var out, errOut strings.Builder
	err = f.stream(ctx, "in-eu", "exec", &corev1.PodExecOptions{Container: "app", Command: []string{"sh", "-c", "head -c 5; echo; echo err >&2; exit 3"},
		Stdin: true, Stdout: true, Stderr: true}, remotecommand.StreamOptions{Stdin: strings.NewReader("hello"), Stdout: &out, Stderr: &errOut})
	// kwok's exec says a command's failure in words, not as an exit
	// code (a kubelet's does; the code then comes back as it was).
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || out.String() != "hello\n" || errOut.String() != "err\n" {
		t.Errorf("kubectl exec in-eu: stdout %q, stderr %q, %v; want hello, err and exit status 3", out.String(), errOut.String(), err)
	}

	// kubectl attach: the container's new output, until the caller leaves.
	attached := local.NewLineSeen("attached\n")
	actx, acancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- f.stream(actx, "in-eu", "attach", &corev1.PodAttachOptions{Container: "app", Stdout: true}, remotecommand.StreamOptions{Stdout: attached})
	}()
	if err := pa.target.AppendUntilSeen(sctx, attached, done); err != nil {
		t.Errorf("kubectl attach in-eu: %v", err)
	}
	acancel()

	// pb did not let the tenant: Forbidden, naming the member's role
	// (kubectl logs streams, as here).
	_, err = pods.GetLogs("in-us", &corev1.PodLogOptions{Container: "app"}).Stream(ctx)
	if !kerrors.IsForbidden(err) || !strings.Contains(err.Error(), mcv1alpha1.StreamsRole) {
		t.Errorf("the log of in-us, in a member that did not open streams: %v, want Forbidden naming %s", err, mcv1alpha1.StreamsRole)
	}
	err = f.stream(ctx, "in-us", "exec", &corev1.PodExecOptions{Container: "app", Command: []string{"true"}, Stdout: true}, remotecommand.StreamOptions{Stdout: io.Discard})
	if err == nil || !strings.Contains(err.Error(), mcv1alpha1.StreamsRole) {
		t.Errorf("exec in in-us, in a member that did not open streams: %v, want refused", err)
	}

	// The kubelet API itself answers only the API server (or whoever
	// may reach the node): no certificate is Unauthorized, a user of
	// the cluster's CA with no rights is Forbidden.
	url := "https://" + f.kubelet + "/containerLogs/default/in-eu/app"
	if code := f.kubeletGet(t, url, nil); code != http.StatusUnauthorized {
		t.Errorf("the kubelet API without a certificate: %d, want 401", code)
	}
	kc, err := f.mgmt.KubeconfigFor("nobody")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	if code := f.kubeletGet(t, url, &pair); code != http.StatusForbidden {
		t.Errorf("the kubelet API for a user with no rights on the node: %d, want 403", code)
	}
}

// stream opens a pod's exec or attach through the management cluster's
// API server, as kubectl does (WebSocket).
func (f *proxyFleet) stream(ctx context.Context, pod, sub string, opts runtime.Object, so remotecommand.StreamOptions) error {
	u := f.cs.CoreV1().RESTClient().Post().Namespace("default").Resource("pods").Name(pod).SubResource(sub).VersionedParams(opts, scheme.ParameterCodec).URL()
	ex, err := remotecommand.NewWebSocketExecutor(f.mgmt.RESTConfig(), http.MethodGet, u.String())
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return ex.StreamWithContext(sctx, so)
}

// kubeletGet is the status code of a GET of the manager's kubelet API
// with a client certificate (or none).
func (f *proxyFleet) kubeletGet(t *testing.T, url string, cert *tls.Certificate) int {
	t.Helper()
	tc := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the API server does not verify a kubelet's certificate either, unless told to.
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
