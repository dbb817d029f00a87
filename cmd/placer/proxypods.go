package main

import (
	"context"
	"crypto/tls"
	"net"
	"strconv"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/placer-dev/placer/apis"
	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/controllers/propagator"
	"github.com/placer-dev/placer/controllers/proxypod"
)

// proxyPodFlags configure the front end for ordinary pods: the mutating
// webhook, virtual nodes and proxy pods (config/management/webhook.yaml).
type proxyPodFlags struct {
	enabled       bool
	bindAddress   string
	namespace     string
	service       string
	secret        string
	configuration string
	hosts         []string
	workers       int
	qps           float32
	burst         int
	// kubeletBind is where the virtual nodes' kubelet API is served;
	// kubeletAddress the address the virtual nodes name for it.
	kubeletBind    string
	kubeletAddress string
}

func (f *proxyPodFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.enabled, "proxy-pods", true, "run the front end for ordinary pods (Admiralty's source pods): the mutating webhook, one virtual node per KubernetesCluster, and the proxy pods' controller; off, no webhook is served, and a new Workload gets the propagator's finalizer by a patch of its own")
	fs.StringVar(&f.bindAddress, "webhook-bind-address", ":9443", "address the mutating webhook serves on (TLS)")
	fs.StringVar(&f.namespace, "placer-namespace", "placer-system", "the namespace placer's manager runs in: its webhook Service and certificate Secret are there")
	fs.StringVar(&f.service, "webhook-service", "placer-webhook", "the webhook's Service (its certificate serves the Service's names)")
	fs.StringVar(&f.secret, "webhook-secret", "placer-webhook-tls", "the Secret holding the webhook's CA and serving certificate, made and renewed by the manager")
	fs.StringVar(&f.configuration, "webhook-configuration", "placer-proxy-pods", "the MutatingWebhookConfiguration whose caBundle the manager keeps")
	fs.IntVar(&f.workers, "proxy-pod-workers", 16, "proxy pods the front end handles at once (each waits on the API server: its Workload's create, its binding, its status)")
	fs.Float32Var(&f.qps, "proxy-pod-qps", 100, "QPS of the proxy pods' own client (a token bucket per resource apart from --kube-api-qps): a proxy pod takes at least two Pod writes, its binding and its status")
	fs.IntVar(&f.burst, "proxy-pod-burst", 200, "burst of the proxy pods' own client")
	fs.StringVar(&f.kubeletBind, "kubelet-bind-address", "", "address the virtual nodes' kubelet API serves on (TLS): kubectl logs, exec and attach of proxy pods (config/ serves :10250); empty serves none")
	fs.StringVar(&f.kubeletAddress, "kubelet-address", "", "the address of this manager the virtual nodes name (status.addresses InternalIP), where the API server reaches their kubelet API; config/ sets the pod's IP. Empty: the nodes name none, and logs, exec and attach of proxy pods are refused by the API server")
	fs.StringSliceVar(&f.hosts, "webhook-host", nil, "further names or addresses the certificate serves (the API server reaching the manager outside a Service)")
}

// checkBounds refuses a front end with no worker or no token.
func (f *proxyPodFlags) checkBounds() error {
	switch {
	case f.workers < 1:
		return errors.Errorf("--proxy-pod-workers is %d: at least 1 worker must handle the proxy pods", f.workers)
	case f.qps <= 0:
		return errors.Errorf("--proxy-pod-qps is %g: the proxy pods' client needs a rate above 0", f.qps)
	case f.burst < 1:
		return errors.Errorf("--proxy-pod-burst is %d: the proxy pods' client needs a burst of at least 1", f.burst)
	}
	return nil
}

// managerOptions narrows the manager's cache to what the front end
// follows (proxy pods, virtual nodes) and serves the webhook with the
// certificate certs keeps.
func (f *proxyPodFlags) managerOptions(certs *proxypod.Certs) func(*ctrl.Options) {
	return func(o *ctrl.Options) {
		o.Cache.ByObject = map[client.Object]cache.ByObject{
			&corev1.Pod{}:  {Field: fields.OneTermEqualSelector("spec.schedulerName", v1alpha1.ProxySchedulerName)},
			&corev1.Node{}: {Label: labels.SelectorFromSet(labels.Set{v1alpha1.LabelVirtualKubeletProvider: v1alpha1.VirtualKubeletProvider})},
		}
		if !f.enabled {
			return
		}
		host, port, _ := net.SplitHostPort(f.bindAddress)
		p, _ := strconv.Atoi(port)
		o.WebhookServer = webhook.NewServer(webhook.Options{
			Host: host, Port: p,
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.GetCertificate = certs.GetCertificate }},
		})
	}
}

// certs returns the webhook's certificate keeper, its certificate made
// (or read) already, so that the webhook serves from its first request.
func (f *proxyPodFlags) certs(ctx context.Context, cfg *rest.Config) (*proxypod.Certs, error) {
	if !f.enabled {
		return nil, nil
	}
	if _, _, err := net.SplitHostPort(f.bindAddress); err != nil {
		return nil, errors.Wrap(err, "invalid --webhook-bind-address")
	}
	c, err := client.New(cfg, client.Options{Scheme: apis.NewScheme()})
	if err != nil {
		return nil, err
	}
	certs := &proxypod.Certs{
		Client: c, Namespace: f.namespace, Secret: f.secret, Configuration: f.configuration,
		Hosts: append(proxypod.ServiceHosts(f.service, f.namespace), f.hosts...),
	}
	return certs, certs.Ensure(ctx)
}

// setup adds the webhook and the controllers of the front end.
func (f *proxyPodFlags) setup(mgr ctrl.Manager, reg *cluster.Registry, certs *proxypod.Certs) error {
	if !f.enabled {
		return nil
	}
	if err := mgr.Add(certs); err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(proxypod.WebhookPath, &webhook.Admission{Handler: &proxypod.Mutator{
		Reader: mgr.GetClient(), Live: mgr.GetAPIReader(), Decoder: admission.NewDecoder(mgr.GetScheme()), Signer: certs,
	}})
	// The same server adds the propagator's finalizer to a Workload as it
	// is created (one write less per Workload); without it (--proxy-pods
	// false) the propagator adds it by a patch.
	mgr.GetWebhookServer().Register(propagator.FinalizerPath, &webhook.Admission{Handler: propagator.Finalizer{}})
	ep, err := f.kubeletEndpoint()
	if err != nil {
		return err
	}
	if f.kubeletBind != "" {
		cs, err := kubernetes.NewForConfig(mgr.GetConfig())
		if err != nil {
			return err
		}
		if err := mgr.Add(&proxypod.Kubelet{Reader: mgr.GetClient(), Members: reg, Client: cs,
			BindAddress: f.kubeletBind, Certificate: certs.GetCertificate}); err != nil {
			return err
		}
	}
	return proxypod.Setup(mgr, reg, proxypod.Options{Workers: f.workers, QPS: f.qps, Burst: f.burst}, certs, ep)
}

// kubeletEndpoint is what the virtual nodes name for their kubelet API:
// --kubelet-address, on the port of --kubelet-bind-address.
func (f *proxyPodFlags) kubeletEndpoint() (proxypod.KubeletEndpoint, error) {
	if f.kubeletBind == "" || f.kubeletAddress == "" {
		return proxypod.KubeletEndpoint{}, nil
	}
	_, port, err := net.SplitHostPort(f.kubeletBind)
	if err != nil {
		return proxypod.KubeletEndpoint{}, errors.Wrap(err, "invalid --kubelet-bind-address")
	}
	p, err := strconv.ParseInt(port, 10, 32)
	if err != nil || p <= 0 {
		return proxypod.KubeletEndpoint{}, errors.Errorf("invalid --kubelet-bind-address %q: it needs a port", f.kubeletBind)
	}
	return proxypod.KubeletEndpoint{Address: f.kubeletAddress, Port: int32(p)}, nil
}
