package release

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user, as distroless' nonroot: no shell, no root.
const (
	ImageUser       = "65532:65532"
	ImageEntrypoint = "/placer"
	// LabelVersion and the other OCI labels the image carries.
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelLicenses = "org.opencontainers.image.licenses"
	LabelTitle    = "org.opencontainers.image.title"
	// RefName names the index inside the OCI layout (oci:<dir>:<version>).
	RefName = "org.opencontainers.image.ref.name"
)

// The base layer: the users and groups the nonroot user needs, its home,
// and /tmp.
var (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// imageFile is a binary of the image: placer (the entrypoint), and beside
// it the candidate schedulers built with other kube-scheduler versions.
type imageFile struct{ name, path string }

// writeImage writes an OCI layout at dir holding one image index, with an
// image per platform from its binaries, and returns the index's digest.
func writeImage(dir, version, commit string, binaries map[string][]imageFile) (v1.Hash, error) {
	base, err := layerOf([]tarEntry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, dir: true, uid: 65532},
		{name: "tmp/", mode: 0o1777, dir: true},
	})
	if err != nil {
		return v1.Hash{}, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, platform := range slices.Sorted(maps.Keys(binaries)) {
		goos, goarch, _ := strings.Cut(platform, "/")
		var entries []tarEntry
		for _, f := range binaries[platform] {
			bin, err := os.ReadFile(f.path)
			if err != nil {
				return v1.Hash{}, errors.Wrap(err, "cannot read the built binary")
			}
			entries = append(entries, tarEntry{name: f.name, mode: 0o755, data: bin})
		}
		app, err := layerOf(entries)
		if err != nil {
			return v1.Hash{}, err
		}
		img, err := mutate.AppendLayers(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON), base, app)
		if err != nil {
			return v1.Hash{}, errors.Wrap(err, "cannot add the image's layers")
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return v1.Hash{}, errors.Wrap(err, "cannot read the image's config")
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = goos, goarch
		cf.Created = v1.Time{Time: epoch}
		cf.Config.User = ImageUser
		cf.Config.Entrypoint = []string{ImageEntrypoint}
		cf.Config.WorkingDir = "/"
		cf.Config.Env = []string{"PATH=/"}
		cf.Config.Labels = map[string]string{
			LabelVersion:  version,
			LabelRevision: commit,
			LabelSource:   Homepage,
			LabelLicenses: "Apache-2.0",
			LabelTitle:    "placer",
		}
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			return v1.Hash{}, errors.Wrap(err, "cannot set the image's config")
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: goarch}}})
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, errors.Wrap(err, "cannot start the OCI layout")
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefName: version})); err != nil {
		return v1.Hash{}, errors.Wrap(err, "cannot write the image")
	}
	d, err := idx.Digest()
	return d, errors.Wrap(err, "cannot compute the image's digest")
}

type tarEntry struct {
	name string
	mode int64
	dir  bool
	uid  int
	data []byte
}

// layerOf makes a layer of the entries, owned by root unless they say,
// with fixed times: the same binary gives the same digest.
func layerOf(entries []tarEntry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Uid: e.uid, Gid: e.uid, Typeflag: tar.TypeReg, Size: int64(len(e.data)), Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, errors.Wrap(err, "cannot write a layer")
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, errors.Wrap(err, "cannot write a layer")
		}
	}
	if err := tw.Close(); err != nil {
		return nil, errors.Wrap(err, "cannot write a layer")
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	return l, errors.Wrap(err, "cannot make a layer")
}
