package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/accord-sched/accord/manifests/krew"
)

// release packs each platform's binary at its archive's root (tar.gz, zip with .exe on windows),
// and SHA256SUMS and the krew manifest carry the archives' real sums. The build is a stand-in that
// writes the platform's name: `make release-kubectl` runs go build.
func TestRelease(t *testing.T) {
	out := t.TempDir()
	fake := func(p krew.Platform, pkg, ldflags, bin string) error {
		if pkg != "./cmd/kubectl-accord" || ldflags != "-X a.b=c" {
			t.Errorf("build %s %q", pkg, ldflags)
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			return err
		}
		return os.WriteFile(bin, []byte("binary for "+p.String()), 0o755)
	}
	targets := []krew.Platform{{OS: "linux", Arch: "arm64"}, {OS: "windows", Arch: "amd64"}}
	if err := release(out, "v1.0.0", "-X a.b=c", "https://example.com/r", "./cmd/kubectl-accord", targets, fake); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(out, "accord.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Spec struct {
			Platforms []struct {
				URI, SHA256, Bin string
			}
		}
	}
	if err := yaml.Unmarshal(manifest, &m); err != nil || len(m.Spec.Platforms) != 2 {
		t.Fatalf("manifest: %v, %+v\n%s", err, m, manifest)
	}
	for i, p := range targets {
		archive := filepath.Join(out, p.Archive("v1.0.0"))
		sum, err := fileSHA256(archive)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(sums), sum+"  "+p.Archive("v1.0.0")+"\n") {
			t.Errorf("SHA256SUMS lacks %s's sum %s:\n%s", archive, sum, sums)
		}
		mp := m.Spec.Platforms[i]
		if mp.SHA256 != sum || mp.URI != "https://example.com/r/"+p.Archive("v1.0.0") || mp.Bin != p.Bin() {
			t.Errorf("manifest platform %s: %+v, want sum %s", p, mp, sum)
		}
		name, mode, content := readArchive(t, archive, p.OS == "windows")
		if name != p.Bin() || mode&0o111 == 0 || content != "binary for "+p.String() {
			t.Errorf("%s holds %q (mode %v): %q", archive, name, mode, content)
		}
	}
}

// readArchive returns the one file of a zip or tar.gz.
func readArchive(t *testing.T, path string, isZip bool) (string, os.FileMode, string) {
	t.Helper()
	if isZip {
		zr, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		if len(zr.File) != 1 {
			t.Fatalf("%s: %d files", path, len(zr.File))
		}
		rc, err := zr.File[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return zr.File[0].Name, zr.File[0].Mode(), string(b)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	h, err := tr.Next()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(tr)
	if _, err := tr.Next(); err != io.EOF {
		t.Errorf("%s: more than one file", path)
	}
	return h.Name, h.FileInfo().Mode(), string(b)
}

func TestSelectPlatforms(t *testing.T) {
	if all, err := selectPlatforms(""); err != nil || len(all) != len(krew.Platforms) {
		t.Errorf("default: %v, %v", all, err)
	}
	if got, err := selectPlatforms("linux/amd64, windows/arm64"); err != nil || len(got) != 2 || got[1] != (krew.Platform{OS: "windows", Arch: "arm64"}) {
		t.Errorf("two: %v, %v", got, err)
	}
	for _, bad := range []string{"linux", "plan9/amd64", "linux/386"} {
		if _, err := selectPlatforms(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
