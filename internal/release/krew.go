package release

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"sigs.k8s.io/yaml"
)

// KrewPlugin is krew's plugin manifest (krew.googlecontainertools.github.com/v1alpha2).
type KrewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string         `json:"version"`
		Homepage         string         `json:"homepage"`
		ShortDescription string         `json:"shortDescription"`
		Description      string         `json:"description"`
		Platforms        []KrewPlatform `json:"platforms"`
	} `json:"spec"`
}

// KrewPlatform is one platform's archive in a KrewPlugin.
type KrewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Bin    string     `json:"bin"`
	Files  []KrewFile `json:"files,omitempty"`
}

// KrewFile is a file krew copies out of an archive.
type KrewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// writeKrew writes the manifest that installs the archives as 'kubectl
// placer' (krew links kubectl-placer to the binary named by bin).
func (o Options) writeKrew(path string, archives map[string]string) error {
	k := KrewPlugin{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"}
	k.Metadata.Name = "placer"
	k.Spec.Version = o.Version
	k.Spec.Homepage = Homepage
	k.Spec.ShortDescription = "Place workloads across a fleet of clusters"
	k.Spec.Description = "placer schedules Workloads across a fleet of Kubernetes clusters and proves\n" +
		"each placement with the cluster's own kube-scheduler. The plugin explains\n" +
		"where a Workload can go and why (kubectl placer explain), and cordons,\n" +
		"drains and uncordons member clusters.\n"
	for _, p := range slices.Sorted(maps.Keys(archives)) {
		goos, goarch, _ := strings.Cut(p, "/")
		sum, err := fileSHA256(filepath.Join(o.Out, archives[p]))
		if err != nil {
			return err
		}
		kp := KrewPlatform{URI: fmt.Sprintf("%s/%s/%s", strings.TrimSuffix(o.Download, "/"), o.Version, archives[p]), SHA256: sum, Bin: binaryName(goos)}
		kp.Selector.MatchLabels = map[string]string{"os": goos, "arch": goarch}
		kp.Files = []KrewFile{{From: binaryName(goos), To: "."}, {From: "LICENSE", To: "."}}
		k.Spec.Platforms = append(k.Spec.Platforms, kp)
	}
	b, err := yaml.Marshal(k)
	if err != nil {
		return errors.Wrap(err, "cannot encode the krew manifest")
	}
	return errors.Wrap(os.WriteFile(path, b, 0o644), "cannot write the krew manifest")
}
