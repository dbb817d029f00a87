package release

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// The SBOM is an SPDX 2.3 document in JSON, of the modules Go recorded in
// the built binary itself (debug/buildinfo): what was linked, replaced
// versions included, not what go.mod might allow.

type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	DocumentDescribes []string           `json:"documentDescribes"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	LicenseConcluded string            `json:"licenseConcluded"`
	LicenseDeclared  string            `json:"licenseDeclared"`
	CopyrightText    string            `json:"copyrightText"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

// writeSBOM writes the SPDX document of the binary at path, with the
// modules of the others the image holds beside it (the candidate
// schedulers built with other Kubernetes versions).
func writeSBOM(out, binary, version string, others ...string) error {
	info, err := readBuildInfo(binary)
	if err != nil {
		return err
	}
	sum, err := fileSHA256(binary)
	if err != nil {
		return err
	}
	main := spdxPackage{
		Name: info.Main.Path, SPDXID: "SPDXRef-Package-placer", VersionInfo: version,
		DownloadLocation: "git+" + Homepage + "@" + version, LicenseConcluded: "Apache-2.0", LicenseDeclared: "Apache-2.0", CopyrightText: "NOASSERTION",
		Checksums:    []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: sum}},
		ExternalRefs: []spdxExternalRef{purl(info.Main.Path, version)},
	}
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT",
		Name:              "placer-" + version,
		DocumentNamespace: Homepage + "/releases/" + version + "/sbom-" + sum[:16],
		CreationInfo:      spdxCreationInfo{Created: epoch.Format(time.RFC3339), Creators: []string{"Tool: placer-release", "Organization: placer"}},
		DocumentDescribes: []string{main.SPDXID},
		Packages:          []spdxPackage{main},
		Relationships:     []spdxRelationship{{Element: "SPDXRef-DOCUMENT", Type: "DESCRIBES", Related: main.SPDXID}},
	}
	// The toolchain's standard library is linked too.
	goPkg := spdxPackage{Name: "stdlib", SPDXID: "SPDXRef-Package-stdlib", VersionInfo: info.GoVersion, DownloadLocation: "https://go.dev/dl/", LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION",
		ExternalRefs: []spdxExternalRef{purl("stdlib", info.GoVersion)}}
	doc.Packages = append(doc.Packages, goPkg)
	doc.Relationships = append(doc.Relationships, spdxRelationship{Element: main.SPDXID, Type: "DEPENDS_ON", Related: goPkg.SPDXID})
	deps := info.Deps
	for _, o := range others {
		oi, err := readBuildInfo(o)
		if err != nil {
			return err
		}
		deps = append(deps, oi.Deps...)
	}
	seen := map[string]bool{}
	for _, d := range deps {
		path, v, h := d.Path, d.Version, d.Sum
		if d.Replace != nil {
			path, v, h = d.Replace.Path, d.Replace.Version, d.Replace.Sum
		}
		// placer itself, as the others name it (from the checkout).
		if d.Path == info.Main.Path || seen[path+"@"+v] {
			continue
		}
		seen[path+"@"+v] = true
		p := spdxPackage{Name: path, SPDXID: spdxID(path, v), VersionInfo: v, DownloadLocation: "https://proxy.golang.org/" + path + "/@v/" + v + ".zip",
			LicenseConcluded: "NOASSERTION", LicenseDeclared: "NOASSERTION", CopyrightText: "NOASSERTION", ExternalRefs: []spdxExternalRef{purl(path, v)}}
		if h != "" {
			p.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: goSumHex(h)}}
			if p.Checksums[0].ChecksumValue == "" {
				p.Checksums = nil
			}
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{Element: main.SPDXID, Type: "DEPENDS_ON", Related: p.SPDXID})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return errors.Wrap(err, "cannot encode the SBOM")
	}
	return errors.Wrap(os.WriteFile(out, append(b, '\n'), 0o644), "cannot write the SBOM")
}

func purl(path, version string) spdxExternalRef {
	return spdxExternalRef{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl", ReferenceLocator: "pkg:golang/" + path + "@" + version}
}

// spdxID is a package's SPDX identifier: letters, digits, dots and dashes.
func spdxID(path, version string) string {
	h := sha256.Sum256([]byte(path + "@" + version))
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, path)
	return "SPDXRef-Package-" + clean + "-" + hex.EncodeToString(h[:4])
}

// goSumHex turns a go.sum hash (h1:base64 of SHA-256) into hex.
func goSumHex(sum string) string {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(b) != sha256.Size {
		return ""
	}
	return hex.EncodeToString(b)
}
