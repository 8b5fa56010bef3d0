// Package krew renders kubectl-accord's krew plugin manifest (accord.yaml.tmpl) for a release: the
// platforms `make release-kubectl` builds, their archives and sha256 sums.
package krew

import (
	"bytes"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"text/template"
)

// Binary is the plugin's binary name (kubectl runs kubectl-accord for `kubectl accord`).
const Binary = "kubectl-accord"

// Homepage is the project's page, the manifest's homepage.
const Homepage = "https://github.com/accord-sched/accord"

//go:embed accord.yaml.tmpl
var manifestTemplate string

// Platform is one OS and architecture a release builds kubectl-accord for.
type Platform struct {
	OS, Arch string
}

// Platforms are the targets `make release-kubectl` builds (linux, darwin and windows on amd64 and
// arm64).
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"}, {"windows", "arm64"},
}

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// Bin is the binary's file name on the platform: with .exe on windows.
func (p Platform) Bin() string {
	if p.OS == "windows" {
		return Binary + ".exe"
	}
	return Binary
}

// Archive is the file name of the platform's release archive: a zip on windows, else a tar.gz.
func (p Platform) Archive(version string) string {
	ext := ".tar.gz"
	if p.OS == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("%s_%s_%s_%s%s", Binary, version, p.OS, p.Arch, ext)
}

// Artifact is a built archive: the platform and the sha256 of its archive, hex.
type Artifact struct {
	Platform
	SHA256 string
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// semver is krew's version form: v, then a semantic version.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// ManifestVersion is the krew version of a release version: itself when it is a semantic version
// with the v prefix, else (a `git describe` of an untagged tree) v0.0.0-VERSION.
func ManifestVersion(version string) string {
	if semver.MatchString(version) {
		return version
	}
	return "v0.0.0-" + strings.Trim(regexp.MustCompile(`[^0-9A-Za-z.-]+`).ReplaceAllString(version, "-"), "-")
}

// Render is the krew manifest of a release of version whose archives are downloaded from uriBase
// (each at uriBase/ARCHIVE).
func Render(version, uriBase string, artifacts []Artifact) ([]byte, error) {
	if len(artifacts) == 0 {
		return nil, fmt.Errorf("no artifact to list")
	}
	type platform struct {
		OS, Arch, URI, SHA256, Bin string
	}
	data := struct {
		Version, Homepage string
		Platforms         []platform
	}{Version: ManifestVersion(version), Homepage: Homepage}
	seen := map[Platform]bool{}
	for _, a := range artifacts {
		if !sha256Hex.MatchString(a.SHA256) {
			return nil, fmt.Errorf("platform %s: sha256 %q is not 64 hex digits", a.Platform, a.SHA256)
		}
		if seen[a.Platform] {
			return nil, fmt.Errorf("platform %s: listed twice", a.Platform)
		}
		seen[a.Platform] = true
		data.Platforms = append(data.Platforms, platform{OS: a.OS, Arch: a.Arch, URI: strings.TrimSuffix(uriBase, "/") + "/" + a.Archive(version),
			SHA256: a.SHA256, Bin: a.Bin()})
	}
	t, err := template.New("accord.yaml").Option("missingkey=error").Parse(manifestTemplate)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
