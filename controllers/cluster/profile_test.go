package cluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
	inventoryv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	"sigs.k8s.io/cluster-inventory-api/pkg/access"

	"github.com/placer-dev/placer/cluster"
)

func TestKubeconfigFromProfile(t *testing.T) {
	ac := access.New([]access.Provider{{Name: "eks", ExecConfig: &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "aws-token", Args: []string{"--cluster"}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}, ProfileSourcedCLIArgsPolicy: access.ProfileSourcedCLIArgsPolicyAppend}})
	cp := &inventoryv1alpha1.ClusterProfile{}
	cp.Name = "east"
	cp.Status.AccessProviders = []inventoryv1alpha1.AccessProvider{
		{Name: "gke", Cluster: clientcmdv1.Cluster{Server: "https://10.0.0.9"}},
		{Name: "eks", Cluster: clientcmdv1.Cluster{Server: "https://east.example.com", CertificateAuthorityData: []byte("ca"),
			// The ClusterProfile's own argument, which the provider's policy appends.
			Extensions: []clientcmdv1.NamedExtension{{Name: "clusterprofiles.multicluster.x-k8s.io/exec/additional-args", Extension: runtime.RawExtension{Raw: []byte(`["--cluster=east"]`)}}}}},
	}
	b, err := kubeconfigFromProfile(ac, cp)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.Load(b)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	cl, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if cl.Server != "https://east.example.com" || string(cl.CertificateAuthorityData) != "ca" || user.Exec == nil || user.Exec.Command != "aws-token" ||
		strings.Join(user.Exec.Args, " ") != "--cluster --cluster=east" {
		t.Errorf("kubeconfig: cluster %+v, user %+v; want the eks provider's server, CA and exec plugin", cl, user)
	}
	// The provider's own configuration is never changed: the same
	// ClusterProfile gives the same kubeconfig again.
	again, err := kubeconfigFromProfile(ac, cp)
	if err != nil || string(again) != string(b) || len(ac.Providers[0].ExecConfig.Args) != 1 {
		t.Errorf("a second build differs (%v) or changed the provider: %v", err, ac.Providers[0].ExecConfig.Args)
	}
	// The tenants' policy refuses its exec plugin; the admin's allows it.
	if _, err := (cluster.KubeconfigPolicy{}).RESTConfig(b); !cluster.IsKubeconfigRefused(err) {
		t.Errorf("the tenants' policy accepted an exec plugin: %v", err)
	}
	rc, err := (cluster.KubeconfigPolicy{AllowExec: true}).RESTConfig(b)
	if err != nil || rc.ExecProvider == nil || rc.ExecProvider.Command != "aws-token" {
		t.Errorf("with AllowExec: %+v, %v; want the exec plugin kept", rc, err)
	}

	// A proxy is refused; a ClusterProfile no provider serves says so.
	cp.Status.AccessProviders[1].Cluster.ProxyURL = "http://proxy:3128"
	if _, err := kubeconfigFromProfile(ac, cp); err == nil || !strings.Contains(err.Error(), "proxy-url") {
		t.Errorf("a proxy: %v, want refused", err)
	}
	cp.Status.AccessProviders = cp.Status.AccessProviders[:1]
	if _, err := kubeconfigFromProfile(ac, cp); err == nil || !strings.Contains(err.Error(), "cannot build its connection") {
		t.Errorf("no provider of the manager's: %v, want refused", err)
	}
}

func TestProfilesAllows(t *testing.T) {
	p := cluster.Profiles{Namespaces: []string{"fleet"}}
	if p.Allows("fleet") {
		t.Error("without access providers a namespace was allowed")
	}
	p.Access = access.New(nil)
	if !p.Allows("fleet") || p.Allows("team-a") {
		t.Errorf("Allows: fleet %v, team-a %v; want true, false", p.Allows("fleet"), p.Allows("team-a"))
	}
}
