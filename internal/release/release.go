// Package release builds what a placer release publishes, without a
// container engine: the CLI archived for each platform, the multi-arch
// image as an OCI layout (go-containerregistry), the manifests of
// config/ rendered and the Helm charts packaged, both pinned to the
// image's digest, a krew manifest, an SPDX SBOM read from the built
// binary, and the checksums of all of it.
package release

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/mod/semver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/placer-dev/placer/internal/deploy"
	"github.com/placer-dev/placer/internal/skew"
)

// Defaults of a release.
const (
	DefaultRepository = "ghcr.io/placer-dev/placer"
	DefaultDownload   = "https://github.com/placer-dev/placer/releases/download"
	Homepage          = "https://github.com/placer-dev/placer"
)

// DefaultCLIPlatforms are the platforms the CLI is released for.
var DefaultCLIPlatforms = []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "windows/amd64", "windows/arm64"}

// DefaultImagePlatforms are the platforms of the image.
var DefaultImagePlatforms = []string{"linux/amd64", "linux/arm64"}

// Options of a release.
type Options struct {
	// Version, a semantic version with its v (v0.1.0).
	Version string
	// Commit the release is built from, recorded in the image's labels.
	Commit string
	// ModuleDir is placer's module, where go build runs.
	ModuleDir string
	// Out is the folder the release is written to; it must not exist or
	// be empty.
	Out string
	// Repository the image is pushed to, named in the manifests.
	Repository string
	// Download is the address the archives are published under
	// (Download/Version/archive), named in the krew manifest.
	Download string
	// CLIPlatforms and ImagePlatforms, each os/arch.
	CLIPlatforms   []string
	ImagePlatforms []string
	// Log receives one line per step; nil for none.
	Log io.Writer
}

// Result names what Run wrote, relative to Out.
type Result struct {
	Archives  map[string]string // platform: archive
	Image     string            // the OCI layout folder
	Digest    v1.Hash           // the image index's digest
	Reference string            // repository:version@digest, as the manifests name it
	Manifests []string
	Charts    []string
	Krew      string
	SBOM      string
	Checksums string
}

// Run builds the release.
func Run(ctx context.Context, o Options) (*Result, error) {
	o, err := o.complete()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, errors.Wrap(err, "cannot create the release folder")
	}
	build := filepath.Join(o.Out, "build")
	defer os.RemoveAll(build) //nolint:errcheck // Scratch space.

	// One binary per platform, whether the CLI or the image needs it.
	binaries := map[string]string{}
	for _, p := range union(o.CLIPlatforms, o.ImagePlatforms) {
		bin, err := o.goBuild(ctx, p, build)
		if err != nil {
			return nil, err
		}
		binaries[p] = bin
	}
	r := &Result{Archives: map[string]string{}}
	if err := o.writeCLI(r, binaries); err != nil {
		return nil, err
	}
	r.Image = "image"
	images, err := o.imageFiles(ctx, binaries, build)
	if err != nil {
		return nil, err
	}
	if r.Digest, err = writeImage(filepath.Join(o.Out, r.Image), o.Version, o.Commit, images); err != nil {
		return nil, err
	}
	r.Reference = fmt.Sprintf("%s:%s@%s", o.Repository, o.Version, r.Digest)
	o.logf("image %s (OCI layout in %s)", r.Reference, r.Image)
	if err := o.writeInstall(r); err != nil {
		return nil, err
	}
	r.SBOM = fmt.Sprintf("placer_%s.spdx.json", o.Version)
	// The modules are the same on every platform: the SBOM is read from
	// the first binary.
	sbomOf := binaries[union(o.CLIPlatforms, o.ImagePlatforms)[0]]
	var others []string
	for _, f := range images[o.ImagePlatforms[0]][1:] {
		others = append(others, f.path)
	}
	if err := writeSBOM(filepath.Join(o.Out, r.SBOM), sbomOf, o.Version, others...); err != nil {
		return nil, err
	}
	r.Checksums = fmt.Sprintf("placer_%s_checksums.txt", o.Version)
	files := append(slices.Sorted(maps.Values(r.Archives)), r.Manifests...)
	files = append(files, r.Charts...)
	files = append(files, r.Krew, r.SBOM)
	if err := writeChecksums(o.Out, r.Checksums, files); err != nil {
		return nil, err
	}
	o.logf("checksums %s", r.Checksums)
	return r, nil
}

// complete checks the options and fills in the defaults.
func (o Options) complete() (Options, error) {
	if !semver.IsValid(o.Version) || semver.Canonical(o.Version) != strings.SplitN(o.Version, "+", 2)[0] {
		return o, errors.Errorf("version %q is not a semantic version with its v and three numbers (v0.1.0, v0.2.0-rc.1)", o.Version)
	}
	if semver.Build(o.Version) != "" {
		return o, errors.Errorf("version %q: build metadata (+…) cannot be an image tag", o.Version)
	}
	if o.Repository == "" {
		o.Repository = DefaultRepository
	}
	if o.Download == "" {
		o.Download = DefaultDownload
	}
	if o.CLIPlatforms == nil {
		o.CLIPlatforms = DefaultCLIPlatforms
	}
	if o.ImagePlatforms == nil {
		o.ImagePlatforms = DefaultImagePlatforms
	}
	if len(o.ImagePlatforms) == 0 {
		return o, errors.New("no image platform: the manifests need an image")
	}
	for _, p := range o.ImagePlatforms {
		if !strings.HasPrefix(p, "linux/") {
			return o, errors.Errorf("image platform %q: the image is for linux only", p)
		}
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		return o, errors.Errorf("%s is not empty: a release is written into a new folder", o.Out)
	}
	return o, nil
}

// writeCLI writes the CLI's archives and the krew manifest that installs
// them.
func (o Options) writeCLI(r *Result, binaries map[string]string) error {
	license, err := os.ReadFile(filepath.Join(o.ModuleDir, "LICENSE"))
	if err != nil {
		return errors.Wrap(err, "cannot read the LICENSE")
	}
	for _, p := range o.CLIPlatforms {
		name, err := o.archive(p, binaries[p], license)
		if err != nil {
			return err
		}
		r.Archives[p] = name
		o.logf("archive %s", name)
	}
	r.Krew = "placer.krew.yaml"
	return o.writeKrew(filepath.Join(o.Out, r.Krew), r.Archives)
}

// writeInstall writes the manifests and the charts, pinned to the image.
func (o Options) writeInstall(r *Result) error {
	for _, side := range []string{"management", "member"} {
		name := "placer-" + side + ".yaml"
		if err := writeManifests(filepath.Join(o.Out, name), side, r.Reference); err != nil {
			return err
		}
		r.Manifests = append(r.Manifests, name)
		o.logf("manifests %s", name)
	}
	for _, c := range Charts {
		name, err := o.packageChart(c, r.Digest)
		if err != nil {
			return err
		}
		r.Charts = append(r.Charts, name)
		o.logf("chart %s", name)
	}
	return nil
}

func (o Options) logf(format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, ">> "+format+"\n", args...)
	}
}

// imageFiles are each image platform's binaries: placer, and the
// candidate scheduler of each other kube-scheduler version
// (skew.CandidateSchedulers) beside it, which 'placer candidate-scheduler'
// starts for the members that need it.
func (o Options) imageFiles(ctx context.Context, binaries map[string]string, dir string) (map[string][]imageFile, error) {
	out := map[string][]imageFile{}
	for _, p := range o.ImagePlatforms {
		out[p] = []imageFile{{name: strings.TrimPrefix(ImageEntrypoint, "/"), path: binaries[p]}}
		for _, v := range skew.CandidateSchedulers[1:] {
			goos, goarch, _ := strings.Cut(p, "/")
			f := imageFile{name: skew.CandidateBinary(v), path: filepath.Join(dir, goos+"_"+goarch, skew.CandidateBinary(v))}
			o.logf("go build %s %s for %s", f.name, o.Version, p)
			if err := BuildCandidate(ctx, o.ModuleDir, v, p, o.Version, f.path); err != nil {
				return nil, err
			}
			out[p] = append(out[p], f)
		}
	}
	return out, nil
}

// KubeLDFlags stamp the Kubernetes code of a binary with its version, as
// Kubernetes' own builds do: kube-scheduler's kubernetes_build_info says
// which one a candidate scheduler is.
func KubeLDFlags(kubeVersion string) string {
	major, minor := skew.MajorMinor(kubeVersion)
	const pkg = "k8s.io/component-base/version"
	return fmt.Sprintf("-X %s.gitVersion=%s -X %s.gitMajor=%d -X %s.gitMinor=%d -X %s.gitTreeState=clean -X %s.buildDate=1970-01-01T00:00:00Z",
		pkg, kubeVersion, pkg, major, pkg, minor, pkg, pkg)
}

// BuildCandidate builds the candidate scheduler of kube-scheduler
// kubeVersion (placer-candidate-MINOR, from hack/candidate/MINOR of
// placer's module at moduleDir) for platform into out, as placer itself is
// built, its kube-scheduler stamped with its version as Kubernetes stamps
// its own.
func BuildCandidate(ctx context.Context, moduleDir, kubeVersion, platform, version, out string) error {
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok {
		return errors.Errorf("platform %q is not os/arch", platform)
	}
	major, minor := skew.MajorMinor(kubeVersion)
	ldflags := "-s -w -X main.version=" + version + " " + KubeLDFlags(kubeVersion)
	// The build runs in the candidate's module: out from here.
	out, err := filepath.Abs(out)
	if err != nil {
		return errors.Wrap(err, "cannot resolve the output path")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", fmt.Sprintf("kube%d.%d", major, minor), "-ldflags", ldflags, "-o", out, "github.com/placer-dev/placer/cmd/placer-candidate")
	cmd.Dir = filepath.Join(moduleDir, "hack", "candidate", fmt.Sprintf("%d.%d", major, minor))
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return errors.Errorf("go build placer-candidate (kube-scheduler %s) for %s: %v\n%s", kubeVersion, platform, err, b)
	}
	return nil
}

// goBuild builds placer for platform, reproducibly: no cgo, no paths of
// this machine, the version in the binary.
func (o Options) goBuild(ctx context.Context, platform, dir string) (string, error) {
	goos, goarch, ok := strings.Cut(platform, "/")
	if !ok {
		return "", errors.Errorf("platform %q is not os/arch", platform)
	}
	out := filepath.Join(dir, goos+"_"+goarch, binaryName(goos))
	o.logf("go build placer %s for %s", o.Version, platform)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+o.Version+" "+KubeLDFlags(skew.CandidateSchedulerVersion), "-o", out, "./cmd/placer")
	cmd.Dir = o.ModuleDir
	cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", errors.Errorf("go build for %s: %v\n%s", platform, err, b)
	}
	return out, nil
}

func binaryName(goos string) string {
	if goos == "windows" {
		return "placer.exe"
	}
	return "placer"
}

// ArchiveName is the name of the CLI's archive for a platform.
func ArchiveName(version, platform string) string {
	goos, goarch, _ := strings.Cut(platform, "/")
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("placer_%s_%s_%s%s", version, goos, goarch, ext)
}

// writeManifests writes Manifests(side, ref) to path.
func writeManifests(path, side, ref string) error {
	b, err := Manifests(side, ref)
	if err != nil {
		return err
	}
	return errors.Wrapf(os.WriteFile(path, b, 0o644), "cannot write %s", path)
}

// Manifests renders config/<side> as one YAML file, with every placer
// container's image pinned to ref: a release's placer-<side>.yaml.
func Manifests(side, ref string) ([]byte, error) {
	objs, err := deploy.Render(side)
	if err != nil {
		return nil, err
	}
	pinned := 0
	var buf bytes.Buffer
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			n, err := pinImage(o, ref)
			if err != nil {
				return nil, err
			}
			pinned += n
		}
		b, err := yaml.Marshal(o.Object)
		if err != nil {
			return nil, errors.Wrapf(err, "cannot encode %s %s", o.GetKind(), o.GetName())
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	if pinned == 0 {
		return nil, errors.Errorf("config/%s: no container runs %s", side, DefaultRepository)
	}
	return buf.Bytes(), nil
}

// pinImage points each container of placer's image at ref, pulled only
// when the node lacks it.
func pinImage(d *unstructured.Unstructured, ref string) (int, error) {
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return 0, errors.Wrapf(err, "Deployment %s", d.GetName())
	}
	n := 0
	for _, c := range containers {
		c := c.(map[string]any)
		if image, _ := c["image"].(string); strings.HasPrefix(image, DefaultRepository+":") || strings.HasPrefix(image, DefaultRepository+"@") {
			c["image"] = ref
			c["imagePullPolicy"] = "IfNotPresent"
			n++
		}
	}
	return n, errors.Wrapf(unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers"), "Deployment %s", d.GetName())
}

func writeChecksums(dir, name string, files []string) error {
	var buf bytes.Buffer
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, f)
	}
	return errors.Wrap(os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644), "cannot write the checksums")
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // A file of the release.
	if err != nil {
		return "", errors.Wrap(err, "cannot open a release file")
	}
	defer f.Close() //nolint:errcheck // Read only.
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", errors.Wrapf(err, "cannot read %s", path)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readBuildInfo is what Go recorded in a built binary.
func readBuildInfo(path string) (*buildinfo.BuildInfo, error) {
	info, err := buildinfo.ReadFile(path)
	return info, errors.Wrapf(err, "cannot read the build information of %s", path)
}

func union(a, b []string) []string {
	out := append([]string{}, a...)
	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
