package release

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// epoch is every archived file's time: the same sources give the same
// bytes.
var epoch = time.Unix(0, 0).UTC()

// archive writes the CLI of one platform with the licence: a zip for
// Windows, else a gzipped tar.
func (o Options) archive(platform, binary string, license []byte) (string, error) {
	bin, err := os.ReadFile(binary) //nolint:gosec // Built just now.
	if err != nil {
		return "", errors.Wrap(err, "cannot read the built binary")
	}
	name := ArchiveName(o.Version, platform)
	files := []archived{{name: filepath.Base(binary), mode: 0o755, data: bin}, {name: "LICENSE", mode: 0o644, data: license}}
	var b []byte
	if strings.HasSuffix(name, ".zip") {
		b, err = zipOf(files)
	} else {
		b, err = tarGzOf(files)
	}
	if err != nil {
		return "", errors.Wrapf(err, "cannot archive %s", name)
	}
	return name, errors.Wrapf(os.WriteFile(filepath.Join(o.Out, name), b, 0o644), "cannot write %s", name)
}

type archived struct {
	name string
	mode int64
	data []byte
}

func tarGzOf(files []archived) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func zipOf(files []archived) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
		h.SetMode(os.FileMode(f.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
