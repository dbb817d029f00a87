package deploy

import (
	"maps"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// RenderChart renders a Helm chart (a folder or a packaged .tgz) as 'helm
// template --include-crds' does, with Helm's own library: the CRDs of
// crds/ first, then each template's objects, by file name. apiVersions
// are added to what the cluster is taken to serve
// (.Capabilities.APIVersions).
func RenderChart(path, namespace string, values map[string]any, apiVersions ...string) ([]*unstructured.Unstructured, error) {
	ch, err := loader.Load(path)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot load the chart %s", path)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), apiVersions...)
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: ch.Name(), Namespace: namespace, Revision: 1, IsInstall: true}, caps)
	if err != nil {
		return nil, errors.Wrapf(err, "chart %s: bad values", ch.Name())
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, errors.Wrapf(err, "cannot render the chart %s", ch.Name())
	}
	var out []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objs, err := DecodeYAML(crd.Filename, crd.File.Data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		objs, err := DecodeYAML(name, []byte(files[name]))
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// DecodeYAML decodes the objects of a multi-document YAML file, skipping
// empty documents.
func DecodeYAML(name string, b []byte) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split("\n"+string(b), "\n---") {
		o := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			return nil, errors.Wrapf(err, "%s", name)
		}
		if len(o) > 0 {
			out = append(out, &unstructured.Unstructured{Object: o})
		}
	}
	return out, nil
}
