// Command release builds a placer release into a folder (make release):
// the CLI archives, the image as an OCI layout, the pinned manifests, the
// krew manifest, the SBOM and the checksums. It publishes nothing.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/placer-dev/placer/internal/release"
)

func main() {
	var o release.Options
	var cli, image string
	flag.StringVar(&o.Version, "version", "", "the release's semantic version, with its v (v0.1.0)")
	flag.StringVar(&o.Out, "out", "", "folder to write the release to (default _output/release/<version>)")
	flag.StringVar(&o.Repository, "repository", release.DefaultRepository, "the image's repository, named in the manifests")
	flag.StringVar(&o.Download, "download", release.DefaultDownload, "where the archives are published (<download>/<version>/<archive>), named in the krew manifest")
	flag.StringVar(&cli, "cli-platforms", strings.Join(release.DefaultCLIPlatforms, ","), "os/arch list of the CLI")
	flag.StringVar(&image, "image-platforms", strings.Join(release.DefaultImagePlatforms, ","), "os/arch list of the image")
	flag.Parse()
	if o.Out == "" {
		o.Out = filepath.Join("_output", "release", o.Version)
	}
	o.CLIPlatforms, o.ImagePlatforms = split(cli), split(image)
	o.ModuleDir, o.Log = ".", os.Stdout
	if b, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		o.Commit = strings.TrimSpace(string(b))
	}
	r, err := release.Run(context.Background(), o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
	fmt.Printf("release %s written to %s\nimage: %s\npush it with: skopeo copy --all oci:%s:%s docker://%s:%s\n",
		o.Version, o.Out, r.Reference, filepath.Join(o.Out, r.Image), o.Version, o.Repository, o.Version)
}

func split(s string) []string {
	out := []string{}
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
