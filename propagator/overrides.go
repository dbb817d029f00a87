package propagator

import (
	"maps"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"

	"github.com/placer-dev/placer/apis/compute/v1alpha1"
	"github.com/placer-dev/placer/scheduler"
)

// Overridden returns the Workload as it is delivered to the cluster: its
// pod template with every spec.overrides rule that selects the cluster
// applied, in order, and the names of those rules. It is the Workload
// itself when no rule applies. Its chaperons' template hash is that of
// the overridden template, so a change of a rule rolls out where the rule
// applies, and only there. An error names the rule's field.
func Overridden(w *v1alpha1.Workload, c *scheduler.ClusterInfo) (*v1alpha1.Workload, []string, error) {
	if len(w.Spec.Overrides) == 0 {
		return w, nil, nil
	}
	var out *v1alpha1.Workload
	var applied []string
	for i := range w.Spec.Overrides {
		o := &w.Spec.Overrides[i]
		ok, err := scheduler.SelectorTermMatches(o.ClusterSelector, c)
		if err != nil {
			return nil, nil, errors.Wrapf(err, "spec.overrides[%d].clusterSelector", i)
		}
		if !ok {
			continue
		}
		if out == nil {
			out = w.DeepCopy()
		}
		if err := apply(&out.Spec.TargetDeployment.Template, o); err != nil {
			return nil, nil, errors.Wrapf(err, "spec.overrides[%d] (%s)", i, o.Name)
		}
		applied = append(applied, o.Name)
	}
	if out == nil {
		return w, nil, nil
	}
	return out, applied, nil
}

// apply changes the template as the rule says.
func apply(t *corev1.PodTemplateSpec, o *v1alpha1.Override) error {
	t.Labels = merged(t.Labels, o.Labels)
	t.Annotations = merged(t.Annotations, o.Annotations)
	t.Spec.NodeSelector = merged(t.Spec.NodeSelector, o.NodeSelector)
	for _, cs := range [][]corev1.Container{t.Spec.InitContainers, t.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			if len(o.Containers) > 0 && !slices.Contains(o.Containers, c.Name) {
				continue
			}
			if o.Image != nil {
				image, err := overrideImage(c.Image, o.Image)
				if err != nil {
					return errors.Wrapf(err, "container %s", c.Name)
				}
				c.Image = image
			}
			for _, e := range o.Env {
				if j := slices.IndexFunc(c.Env, func(x corev1.EnvVar) bool { return x.Name == e.Name }); j >= 0 {
					c.Env[j] = e
				} else {
					c.Env = append(c.Env, e)
				}
			}
			if o.Command != nil {
				c.Command = slices.Clone(o.Command)
			}
			if o.Args != nil {
				c.Args = slices.Clone(o.Args)
			}
			if o.Resources != nil {
				c.Resources.Requests = merged(c.Resources.Requests, o.Resources.Requests)
				c.Resources.Limits = merged(c.Resources.Limits, o.Resources.Limits)
			}
		}
	}
	return nil
}

// overrideImage replaces the registry, repository or tag of an image
// reference; the result is in its familiar form (Docker Hub's images
// without docker.io/library/).
func overrideImage(image string, o *v1alpha1.ImageOverride) (string, error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", errors.Wrapf(err, "cannot parse image %q", image)
	}
	domain, path := reference.Domain(named), reference.Path(named)
	if o.Registry != "" {
		domain = o.Registry
	}
	if o.Repository != "" {
		path = o.Repository
	}
	var out reference.Named
	if out, err = reference.WithName(domain + "/" + path); err != nil {
		return "", errors.Wrapf(err, "cannot override image %q", image)
	}
	tag := o.Tag
	if t, ok := named.(reference.Tagged); ok && tag == "" {
		tag = t.Tag()
	}
	if tag != "" {
		if out, err = reference.WithTag(out, tag); err != nil {
			return "", errors.Wrapf(err, "cannot override image %q", image)
		}
	}
	// A new tag drops the digest, which names the old content.
	if d, ok := named.(reference.Digested); ok && o.Tag == "" {
		if out, err = reference.WithDigest(out, d.Digest()); err != nil {
			return "", errors.Wrapf(err, "cannot override image %q", image)
		}
	}
	return reference.FamiliarString(out), nil
}

// merged is base with over's keys set; base itself when over is empty.
func merged[M ~map[K]V, K comparable, V any](base, over M) M {
	if len(over) == 0 {
		return base
	}
	out := make(M, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}
