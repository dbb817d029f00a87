// Package config holds placer's generated manifests, embedded so the
// binary can install its CRDs into local clusters.
package config

import (
	"embed"
	"io/fs"
	"path"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Files are config/'s kustomizations (CRDs, RBAC, the management and member
// sides), so that placer can render and install them without the repository.
//
//go:embed crd rbac management member
var Files embed.FS

// ManagementRole returns the manager's ClusterRole in the management cluster,
// generated from the controllers' RBAC markers.
func ManagementRole() (*rbacv1.ClusterRole, error) {
	roles, err := clusterRoles("rbac/role.yaml")
	if err != nil {
		return nil, err
	}
	return roles[0], nil
}

// CRDs returns the CustomResourceDefinitions of the given groups; every
// group when none is given.
func CRDs(groups ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(Files, "crd/*/*.placer.dev_*.yaml")
	if err != nil {
		return nil, errors.Wrap(err, "cannot list CRDs")
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := Files.ReadFile(f)
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
