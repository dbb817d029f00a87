package release

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// Charts are the Helm charts a release packages, under charts/.
var Charts = []string{"placer", "placer-member"}

// packageChart packages charts/<name> as 'helm package' does, its version
// the release's and its default image pinned to the release's digest.
func (o Options) packageChart(name string, digest v1.Hash) (string, error) {
	ch, err := loader.Load(filepath.Join(o.ModuleDir, "charts", name))
	if err != nil {
		return "", errors.Wrapf(err, "cannot load the chart %s", name)
	}
	ch.Metadata.Version = strings.TrimPrefix(o.Version, "v")
	ch.Metadata.AppVersion = o.Version
	pinned := false
	for _, f := range ch.Raw {
		if f.Name != chartutil.ValuesfileName {
			continue
		}
		if f.Data, err = pinValues(f.Data, o.Repository, o.Version, digest.String()); err != nil {
			return "", errors.Wrapf(err, "chart %s", name)
		}
		if ch.Values, err = chartutil.ReadValues(f.Data); err != nil {
			return "", errors.Wrapf(err, "chart %s", name)
		}
		pinned = true
	}
	if !pinned {
		return "", errors.Errorf("chart %s has no values.yaml", name)
	}
	path, err := chartutil.Save(ch, o.Out)
	if err != nil {
		return "", errors.Wrapf(err, "cannot package the chart %s", name)
	}
	return filepath.Base(path), nil
}

// pinValues sets the image's repository, tag and digest in a chart's
// values.yaml, keeping its comments.
func pinValues(values []byte, repository, tag, digest string) ([]byte, error) {
	for _, r := range []struct{ from, to string }{
		{"\n  repository: " + DefaultRepository + "\n", "\n  repository: " + repository + "\n"},
		{"\n  tag: \"\"\n", "\n  tag: " + tag + "\n"},
		{"\n  digest: \"\"\n", "\n  digest: " + digest + "\n"},
	} {
		if n := bytes.Count(values, []byte(r.from)); n != 1 {
			return nil, errors.Errorf("values.yaml has %d lines %q under image, want one", n, strings.TrimSpace(r.from))
		}
		values = bytes.Replace(values, []byte(r.from), []byte(r.to), 1)
	}
	return values, nil
}
