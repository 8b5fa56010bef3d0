package krew

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// plugin is krew's v1alpha2 Plugin, as much of it as the manifest sets (decoded strictly: a field
// krew does not know fails the test).
type plugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string `json:"version"`
		Homepage         string `json:"homepage"`
		ShortDescription string `json:"shortDescription"`
		Description      string `json:"description"`
		Platforms        []struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			URI    string `json:"uri"`
			SHA256 string `json:"sha256"`
			Files  []struct {
				From string `json:"from"`
				To   string `json:"to"`
			} `json:"files"`
			Bin string `json:"bin"`
		} `json:"platforms"`
	} `json:"spec"`
}

func sumOf(p Platform) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(p.String()))) }

// The manifest of a release lists every platform the release target builds, once, with its
// archive's URI and sum, and a bin that is the archive's binary (.exe on windows).
func TestManifestShape(t *testing.T) {
	var arts []Artifact
	for _, p := range Platforms {
		arts = append(arts, Artifact{Platform: p, SHA256: sumOf(p)})
	}
	out, err := Render("v1.2.3", "https://example.com/releases/v1.2.3/", arts)
	if err != nil {
		t.Fatal(err)
	}
	var m plugin
	if err := yaml.UnmarshalStrict(out, &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "accord" ||
		m.Spec.Version != "v1.2.3" || m.Spec.Homepage != Homepage || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("manifest header: %+v", m)
	}
	if len(m.Spec.Platforms) != len(Platforms) {
		t.Fatalf("%d platforms listed, the release builds %d", len(m.Spec.Platforms), len(Platforms))
	}
	listed := map[Platform]bool{}
	for _, mp := range m.Spec.Platforms {
		p := Platform{OS: mp.Selector.MatchLabels["os"], Arch: mp.Selector.MatchLabels["arch"]}
		if len(mp.Selector.MatchLabels) != 2 || listed[p] {
			t.Errorf("platform %v: selector %v (listed before: %t)", p, mp.Selector.MatchLabels, listed[p])
		}
		listed[p] = true
		wantBin := "kubectl-accord"
		if p.OS == "windows" {
			wantBin += ".exe"
		}
		if mp.Bin != wantBin || len(mp.Files) != 1 || mp.Files[0].From != wantBin || mp.Files[0].To != "." {
			t.Errorf("platform %v: bin %q files %+v, want %q", p, mp.Bin, mp.Files, wantBin)
		}
		if mp.URI != "https://example.com/releases/v1.2.3/"+p.Archive("v1.2.3") || mp.SHA256 != sumOf(p) {
			t.Errorf("platform %v: uri %q sha256 %q", p, mp.URI, mp.SHA256)
		}
		if wantExt := map[bool]string{true: ".zip", false: ".tar.gz"}[p.OS == "windows"]; !strings.HasSuffix(mp.URI, wantExt) {
			t.Errorf("platform %v: archive %q, want a %s", p, mp.URI, wantExt)
		}
	}
	for _, os := range []string{"linux", "darwin", "windows"} {
		for _, arch := range []string{"amd64", "arm64"} {
			if !listed[Platform{os, arch}] {
				t.Errorf("%s/%s is not listed", os, arch)
			}
		}
	}
}

func TestRenderRefuses(t *testing.T) {
	p := Platforms[0]
	for name, arts := range map[string][]Artifact{
		"none":      nil,
		"bad sum":   {{Platform: p, SHA256: "abc"}},
		"twice":     {{Platform: p, SHA256: sumOf(p)}, {Platform: p, SHA256: sumOf(p)}},
		"uppercase": {{Platform: p, SHA256: strings.ToUpper(sumOf(p))}},
	} {
		if _, err := Render("v1.0.0", "https://x", arts); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestManifestVersion(t *testing.T) {
	for in, want := range map[string]string{"v1.2.3": "v1.2.3", "v0.1.0-rc.1": "v0.1.0-rc.1", "d832fac": "v0.0.0-d832fac",
		"v1.2.3-4-gabc-dirty": "v1.2.3-4-gabc-dirty", "abc/def": "v0.0.0-abc-def"} {
		if got := ManifestVersion(in); got != want || !semver.MatchString(got) {
			t.Errorf("ManifestVersion(%q) = %q, want %q", in, got, want)
		}
	}
}
