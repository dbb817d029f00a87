// Package config holds placer's generated manifests, embedded so the
// binary can install its CRDs into local clusters.
package config

import (
	"embed"
	"io/fs"
	"path"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed crd/*/*.placer.dev_*.yaml
var crds embed.FS

// CRDs returns the CustomResourceDefinitions of the given groups; every
// group when none is given.
func CRDs(groups ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crds, "crd/*/*.placer.dev_*.yaml")
	if err != nil {
		return nil, errors.Wrap(err, "cannot list CRDs")
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := crds.ReadFile(f)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot read %s", f)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return nil, errors.Wrapf(err, "cannot decode %s", path.Base(f))
		}
		if len(groups) == 0 || slices.Contains(groups, crd.Spec.Group) {
			out = append(out, crd)
		}
	}
	return out, nil
}
