// Package deploy installs config/ as a user would, so that the tests and
// the sandbox run every component under the identity, the
// roles and the flags its Deployment has: kustomize renders a
// kustomization, server-side apply installs everything but the
// Deployments, and each Deployment's container becomes a process with a
// token of its ServiceAccount and the Deployment's own arguments.
package deploy

import (
	"context"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/placer-dev/placer/cluster"
	"github.com/placer-dev/placer/cluster/local"
	"github.com/placer-dev/placer/config"
)

// FieldManager owns what Apply applies, as kubectl's does.
const FieldManager = "placer-install"

// Namespace is where config/ installs placer's components.
const Namespace = "placer-system"

// Render runs kustomize on config/<dir>, as embedded in the binary
// (config.Files): what 'kubectl apply -k config/<dir>' would apply.
func Render(dir string) ([]*unstructured.Unstructured, error) {
	mem := filesys.MakeFsInMemory()
	err := fs.WalkDir(config.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return mem.MkdirAll(path.Join("/config", p))
		}
		b, err := config.Files.ReadFile(p)
		if err != nil {
			return err
		}
		return mem.WriteFile(path.Join("/config", p), b)
	})
	if err != nil {
		return nil, errors.Wrap(err, "cannot read the embedded config/")
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(mem, path.Join("/config", dir))
	if err != nil {
		return nil, errors.Wrapf(err, "kustomize build config/%s", dir)
	}
	out := make([]*unstructured.Unstructured, 0, len(res.Resources()))
	for _, r := range res.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

// Component is a rendered Deployment's one container: how it would run.
type Component struct {
	Namespace      string
	ServiceAccount string
	Args           []string
	// KubeconfigPath is the path of a kubeconfig of its ServiceAccount,
	// once Install has written it.
	KubeconfigPath string
}

// Install renders config/<dir>, applies it to the cluster of cfg, and
// writes a kubeconfig of each Deployment's ServiceAccount into
// kubeconfigDir (<deployment>.kubeconfig): what a pod of each would have
// mounted. It returns the Deployments by name.
func Install(ctx context.Context, cfg *rest.Config, dir, kubeconfigDir string) (map[string]Component, error) {
	objs, err := Render(dir)
	if err != nil {
		return nil, err
	}
	comps, err := InstallObjects(ctx, cfg, objs, kubeconfigDir)
	return comps, errors.Wrapf(err, "cannot install config/%s", dir)
}

// InstallObjects is Install for rendered objects (a part of a
// kustomization, a chart).
func InstallObjects(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, kubeconfigDir string) (map[string]Component, error) {
	comps, err := Apply(ctx, cfg, objs)
	if err != nil {
		return nil, err
	}
	return comps, writeKubeconfigs(ctx, cfg, comps, kubeconfigDir)
}

// Installed returns the Deployments of a namespace as they are in the
// cluster of cfg (installed by someone else: 'placer join --install'),
// each with a kubeconfig of its ServiceAccount written into kubeconfigDir,
// as Install returns those it applies.
func Installed(ctx context.Context, cfg *rest.Config, namespace, kubeconfigDir string) (map[string]Component, error) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	ds := &appsv1.DeploymentList{}
	if err := c.List(ctx, ds, client.InNamespace(namespace)); err != nil {
		return nil, errors.Wrapf(err, "cannot list the Deployments of namespace %s", namespace)
	}
	comps := map[string]Component{}
	for i := range ds.Items {
		comps[ds.Items[i].Name] = componentOf(&ds.Items[i])
	}
	return comps, writeKubeconfigs(ctx, cfg, comps, kubeconfigDir)
}

// componentOf is what a Deployment runs.
func componentOf(d *appsv1.Deployment) Component {
	return Component{Namespace: d.Namespace, ServiceAccount: d.Spec.Template.Spec.ServiceAccountName, Args: d.Spec.Template.Spec.Containers[0].Args}
}

// writeKubeconfigs writes each component's kubeconfig into kubeconfigDir.
func writeKubeconfigs(ctx context.Context, cfg *rest.Config, comps map[string]Component, kubeconfigDir string) error {
	for name, c := range comps {
		c.KubeconfigPath = filepath.Join(kubeconfigDir, name+".kubeconfig")
		if err := c.writeKubeconfig(ctx, cfg); err != nil {
			return err
		}
		comps[name] = c
	}
	return nil
}

// OutsidePod returns the Deployment's arguments for a process run outside
// a pod: its kubeconfig, then the given flags (ports, the Lease namespace a
// pod would infer, a test's intervals) after the Deployment's own.
func (c Component) OutsidePod(flags ...string) []string {
	return c.With(append([]string{"--kubeconfig=" + c.KubeconfigPath}, flags...)...)
}

// Apply installs the objects with server-side apply, in kustomize's order
// (namespaces and CRDs first), as 'kubectl apply --server-side -k' does,
// except the Deployments, which it returns by name: the caller runs them.
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) (map[string]Component, error) {
	out := map[string]Component{}
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				return nil, errors.Wrapf(err, "cannot decode Deployment %s", o.GetName())
			}
			out[d.Name] = componentOf(d)
			continue
		}
		rest = append(rest, o)
	}
	return out, ApplyAll(ctx, cfg, rest)
}

// ApplyDir applies everything config/<dir> renders, Deployments included,
// as 'kubectl apply --server-side -k config/<dir>' does.
func ApplyDir(ctx context.Context, cfg *rest.Config, dir string) error {
	objs, err := Render(dir)
	if err != nil {
		return err
	}
	return ApplyAll(ctx, cfg, objs)
}

// ApplyAll applies every object with server-side apply, in order.
func ApplyAll(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Patch(ctx, o, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership, client.FieldValidation("Strict")); err != nil { //nolint:staticcheck // unstructured objects have no apply configuration.
			return errors.Wrapf(err, "cannot apply %s %s", o.GetKind(), o.GetName())
		}
	}
	return nil
}

// tokenTTL is how long a component's token lasts. Nothing refreshes it as
// the kubelet refreshes a projected token, so it covers a sandbox left
// running for a week, not only a test.
const tokenTTL = 7 * 24 * time.Hour

// writeKubeconfig writes to KubeconfigPath, readable by its owner only, a
// kubeconfig of the API server of cfg that authenticates as the
// component's ServiceAccount, with a token from the TokenRequest API, as
// the kubelet would mount it into the pod.
func (c Component) writeKubeconfig(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	token, err := cluster.RequestToken(ctx, cs, types.NamespacedName{Namespace: c.Namespace, Name: c.ServiceAccount}, tokenTTL)
	if err != nil {
		return err
	}
	b, err := local.Kubeconfig("cluster", cfg.Host, cfg.CAData, c.ServiceAccount, &clientcmdapi.AuthInfo{Token: token})
	if err != nil {
		return err
	}
	return errors.Wrap(os.WriteFile(c.KubeconfigPath, b, 0o600), "cannot write the kubeconfig")
}

// With returns the component's arguments with each --flag=value of set
// replacing the argument of the same flag, or appended: what a process
// outside the cluster must say differently (its kubeconfig, free ports).
func (c Component) With(set ...string) []string {
	out := append([]string(nil), c.Args...)
	for _, s := range set {
		name, _, _ := strings.Cut(s, "=")
		replaced := false
		for i, a := range out {
			if n, _, _ := strings.Cut(a, "="); n == name {
				out[i], replaced = s, true
			}
		}
		if !replaced {
			out = append(out, s)
		}
	}
	return out
}
