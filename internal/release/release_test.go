package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/skew"
)

const testVersion = "v0.0.0-test.1"

// TestRelease builds a release as make release does, for the Linux and
// Windows CLI and the Linux image of this machine's architecture (every
// platform would take minutes; make cross builds the others), and checks
// every artefact: what a team downloads, runs and pins must be what it
// says.
func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatalf("the release is built on linux; this is %s", runtime.GOOS)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	host := "linux/" + runtime.GOARCH
	out := t.TempDir()
	r, err := Run(ctx, Options{
		Version: testVersion, Commit: "0123456789abcdef", ModuleDir: "../..", Out: out,
		CLIPlatforms: []string{host, "windows/amd64"}, ImagePlatforms: []string{host},
	})
	if err != nil {
		t.Fatal(err)
	}

	// The archives: the binary and the licence; the Linux one runs and
	// says its version.
	linuxFiles := untarGz(t, filepath.Join(out, r.Archives[host]))
	wantFiles(t, r.Archives[host], linuxFiles, "placer", "LICENSE")
	if linuxFiles["placer"].mode&0o111 == 0 {
		t.Errorf("%s: placer is not executable (%o)", r.Archives[host], linuxFiles["placer"].mode)
	}
	winFiles := unzip(t, filepath.Join(out, r.Archives["windows/amd64"]))
	wantFiles(t, r.Archives["windows/amd64"], winFiles, "placer.exe", "LICENSE")
	if !bytes.HasPrefix(winFiles["placer.exe"].data, []byte("MZ")) {
		t.Errorf("placer.exe is not a Windows executable")
	}
	cli := filepath.Join(t.TempDir(), "placer")
	if err := os.WriteFile(cli, linuxFiles["placer"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	wantVersion(t, cli)

	// The checksums: one line per published file, each right.
	sums := readChecksums(t, filepath.Join(out, r.Checksums))
	published := append([]string{r.Archives[host], r.Archives["windows/amd64"], r.Krew, r.SBOM}, r.Manifests...)
	published = append(published, r.Charts...)
	for _, f := range published {
		if sums[f] == "" {
			t.Errorf("%s lists no checksum for %s", r.Checksums, f)
			continue
		}
		if got := sha256Of(t, filepath.Join(out, f)); got != sums[f] {
			t.Errorf("%s: checksum %s, file has %s", f, sums[f], got)
		}
	}
	if len(sums) != len(published) {
		t.Errorf("%s lists %d files, want %d: %v", r.Checksums, len(sums), len(published), sums)
	}

	// The image: one index named by the version, its digest the one the
	// manifests pin; the image's config and layers as a cluster runs them.
	image := checkImage(t, filepath.Join(out, r.Image), r.Digest, host)
	if !bytes.Equal(image["placer"].data, linuxFiles["placer"].data) {
		t.Errorf("the image's /placer differs from the archive's placer")
	}
	// Beside it, the candidate scheduler of each other kube-scheduler
	// version: built with that version's modules, and placer's version.
	for _, v := range skew.CandidateSchedulers[1:] {
		name := skew.CandidateBinary(v)
		f, ok := image[name]
		if !ok || f.mode != 0o755 {
			t.Errorf("image: /%s missing or not executable (%o)", name, f.mode)
			continue
		}
		bin := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(bin, f.data, 0o755); err != nil {
			t.Fatal(err)
		}
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		deps := map[string]string{}
		for _, d := range bi.Deps {
			deps[d.Path] = d.Version
		}
		if deps["k8s.io/kubernetes"] != v {
			t.Errorf("image: /%s is built with k8s.io/kubernetes %q, want %s", name, deps["k8s.io/kubernetes"], v)
		}
		if b, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.Contains(string(b), testVersion) {
			t.Errorf("image: /%s --version: %s (%v), want %s", name, b, err, testVersion)
		}
	}

	// The manifests: every placer container pinned to the version and the
	// digest, pulled only when missing.
	wantDeployments := map[string][]string{"placer-management.yaml": {"placer-manager"}, "placer-member.yaml": {"placer-agent", "placer-candidate-scheduler"}}
	wantRef := DefaultRepository + ":" + testVersion + "@" + r.Digest.String()
	for _, m := range r.Manifests {
		var deployments []string
		for _, o := range readObjects(t, filepath.Join(out, m)) {
			if o.GetKind() != "Deployment" {
				continue
			}
			deployments = append(deployments, o.GetName())
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				c := c.(map[string]any)
				if c["image"] != wantRef || c["imagePullPolicy"] != "IfNotPresent" {
					t.Errorf("%s: Deployment %s runs %v (pull %v), want %s (IfNotPresent)", m, o.GetName(), c["image"], c["imagePullPolicy"], wantRef)
				}
			}
		}
		if strings.Join(deployments, ",") != strings.Join(wantDeployments[m], ",") {
			t.Errorf("%s: Deployments %v, want %v", m, deployments, wantDeployments[m])
		}
	}

	// The charts: versioned as the release, their default image pinned.
	if strings.Join(r.Charts, ",") != "placer-0.0.0-test.1.tgz,placer-member-0.0.0-test.1.tgz" {
		t.Errorf("charts %v", r.Charts)
	}
	for _, c := range r.Charts {
		objs, err := deploy.RenderChart(filepath.Join(out, c), deploy.Namespace, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, o := range objs {
			if o.GetKind() != "Deployment" {
				continue
			}
			n++
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			if image := containers[0].(map[string]any)["image"]; image != wantRef {
				t.Errorf("chart %s: Deployment %s runs %v, want %s", c, o.GetName(), image, wantRef)
			}
		}
		if n == 0 {
			t.Errorf("chart %s renders no Deployment", c)
		}
	}

	// The krew manifest: each archive, its address and its checksum.
	var k KrewPlugin
	b, err := os.ReadFile(filepath.Join(out, r.Krew))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("%s: %v", r.Krew, err)
	}
	if k.Kind != "Plugin" || k.Metadata.Name != "placer" || k.Spec.Version != testVersion || len(k.Spec.Platforms) != 2 {
		t.Errorf("krew manifest: %s %s %s with %d platforms", k.Kind, k.Metadata.Name, k.Spec.Version, len(k.Spec.Platforms))
	}
	for _, p := range k.Spec.Platforms {
		platform := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		archive := r.Archives[platform]
		if archive == "" {
			t.Errorf("krew manifest: platform %s has no archive", platform)
			continue
		}
		if want := DefaultDownload + "/" + testVersion + "/" + archive; p.URI != want {
			t.Errorf("krew %s: uri %s, want %s", platform, p.URI, want)
		}
		if p.SHA256 != sums[archive] {
			t.Errorf("krew %s: sha256 %s, the archive's is %s", platform, p.SHA256, sums[archive])
		}
		files := linuxFiles
		if p.Selector.MatchLabels["os"] == "windows" {
			files = winFiles
		}
		if _, ok := files[p.Bin]; !ok {
			t.Errorf("krew %s: bin %s is not in %s", platform, p.Bin, archive)
		}
	}

	// The SBOM: SPDX 2.3, describing the binary (its checksum) and the
	// modules linked into it, at the versions go.mod replaces them with.
	var doc spdxDocument
	b, err = os.ReadFile(filepath.Join(out, r.SBOM))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", r.SBOM, err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.DocumentDescribes) != 1 {
		t.Errorf("SBOM: %s describing %v", doc.SPDXVersion, doc.DocumentDescribes)
	}
	versions := map[string][]string{}
	for _, p := range doc.Packages {
		versions[p.Name] = append(versions[p.Name], p.VersionInfo)
		if p.SPDXID == doc.DocumentDescribes[0] {
			if p.VersionInfo != testVersion || len(p.Checksums) != 1 || p.Checksums[0].ChecksumValue != hexSHA256(linuxFiles["placer"].data) {
				t.Errorf("SBOM: the described package %s %s %v is not the released binary", p.Name, p.VersionInfo, p.Checksums)
			}
		}
	}
	// placer's modules, and those of the candidate schedulers beside it
	// in the image.
	for mod, v := range map[string][]string{"k8s.io/client-go": {"v0.35.4", "v0.37.2"}, "k8s.io/kubernetes": {"v1.35.4", "v1.37.2"}, "github.com/placer-dev/placer": {testVersion}} {
		if !slices.Equal(versions[mod], v) {
			t.Errorf("SBOM: %s at %q, want %s", mod, versions[mod], v)
		}
	}
	if len(doc.Relationships) != len(doc.Packages) {
		t.Errorf("SBOM: %d relationships for %d packages", len(doc.Relationships), len(doc.Packages))
	}

	// The same sources give the same image.
	again, err := Run(ctx, Options{Version: testVersion, Commit: "0123456789abcdef", ModuleDir: "../..", Out: t.TempDir(), CLIPlatforms: []string{}, ImagePlatforms: []string{host}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != r.Digest {
		t.Errorf("a second build of the same sources gives the image %s, the first %s", again.Digest, r.Digest)
	}
}

// TestReleaseRefuses checks what Run refuses before it builds anything.
func TestReleaseRefuses(t *testing.T) {
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"no v":           {Version: "0.1.0", Out: t.TempDir()},
		"two numbers":    {Version: "v0.1", Out: t.TempDir()},
		"not a version":  {Version: "latest", Out: t.TempDir()},
		"build metadata": {Version: "v0.1.0+build.1", Out: t.TempDir()},
		"image for mac":  {Version: "v0.1.0", Out: t.TempDir(), ImagePlatforms: []string{"darwin/arm64"}},
		"folder in use":  {Version: "v0.1.0", Out: full},
		"bad platform":   {Version: "v0.1.0", Out: t.TempDir(), CLIPlatforms: []string{"linux"}, ImagePlatforms: []string{"linux/amd64"}, ModuleDir: "../.."},
		"no image":       {Version: "v0.1.0", Out: t.TempDir(), ImagePlatforms: []string{}},
		"missing module": {Version: "v0.1.0", Out: t.TempDir(), CLIPlatforms: []string{}, ImagePlatforms: []string{"linux/amd64"}, ModuleDir: t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Run(context.Background(), o); err == nil {
				t.Errorf("Run(%+v) succeeded", o)
			}
		})
	}
}

func wantVersion(t *testing.T, bin string) {
	t.Helper()
	b, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("placer version: %v\n%s", err, b)
	}
	if first := strings.SplitN(string(b), "\n", 2)[0]; first != "placer:      "+testVersion {
		t.Errorf("placer version says %q, want the release's %s", first, testVersion)
	}
	b, err = exec.Command(bin, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(b)) != "placer "+testVersion {
		t.Errorf("placer --version: %q, %v", b, err)
	}
}

// checkImage checks the OCI layout and returns the image's /placer.
func checkImage(t *testing.T, dir string, digest v1.Hash, platform string) map[string]file {
	t.Helper()
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Digest != digest || im.Manifests[0].Annotations[RefName] != testVersion {
		t.Fatalf("index.json: %+v, want one index %s named %s", im.Manifests, digest, testVersion)
	}
	idx, err := top.ImageIndex(digest)
	if err != nil {
		t.Fatal(err)
	}
	children, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(children.Manifests) != 1 || children.Manifests[0].Platform == nil || children.Manifests[0].Platform.OS+"/"+children.Manifests[0].Platform.Architecture != platform {
		t.Fatalf("image index: %+v, want one image for %s", children.Manifests, platform)
	}
	img, err := idx.Image(children.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS+"/"+cf.Architecture != platform || cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != "/placer" ||
		cf.Config.Labels["org.opencontainers.image.version"] != testVersion || cf.Config.Labels["org.opencontainers.image.revision"] != "0123456789abcdef" {
		t.Errorf("image config: %s/%s user %q entrypoint %v labels %v", cf.OS, cf.Architecture, cf.Config.User, cf.Config.Entrypoint, cf.Config.Labels)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]file{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range readTar(t, rc) {
			files[name] = f
		}
		_ = rc.Close()
	}
	if f := files["placer"]; f.mode != 0o755 || f.uid != 0 {
		t.Errorf("image: /placer mode %o owner %d, want 755 and root", f.mode, f.uid)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "nonroot:x:65532:65532:") {
		t.Errorf("image: /etc/passwd has no nonroot user:\n%s", files["etc/passwd"].data)
	}
	if f, ok := files["tmp/"]; !ok || f.mode != 0o1777 {
		t.Errorf("image: /tmp mode %o", f.mode)
	}
	return files
}

type file struct {
	mode int64
	uid  int
	data []byte
}

func readTar(t *testing.T, r io.Reader) map[string]file {
	t.Helper()
	out := map[string]file{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = file{mode: h.Mode, uid: h.Uid, data: b}
	}
}

func untarGz(t *testing.T, path string) map[string]file {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // Read only.
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return readTar(t, gz)
}

func unzip(t *testing.T, path string) map[string]file {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close() //nolint:errcheck // Read only.
	out := map[string]file{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		_ = rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		out[f.Name] = file{mode: int64(f.Mode().Perm()), data: b}
	}
	return out
}

func wantFiles(t *testing.T, archive string, files map[string]file, names ...string) {
	t.Helper()
	if len(files) != len(names) {
		t.Errorf("%s holds %d files, want %v", archive, len(files), names)
	}
	for _, n := range names {
		if len(files[n].data) == 0 {
			t.Errorf("%s has no %s", archive, n)
		}
	}
}

func readChecksums(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // Read only.
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		sum, name, ok := strings.Cut(s.Text(), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not 'sha256  file'", path, s.Text())
		}
		out[name] = sum
	}
	return out
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return hexSHA256(b)
}

func hexSHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() //nolint:errcheck // Read only.
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}
