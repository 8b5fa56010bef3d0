// Command release builds kubectl-accord for every platform of manifests/krew (static: CGO_ENABLED=0,
// -trimpath, -s -w and the -ldflags given), packs each binary into its archive (tar.gz, zip on windows),
// writes SHA256SUMS and the krew manifest (accord.yaml) with the sums filled in. `make
// release-kubectl` runs it.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/accord-sched/accord/manifests/krew"
)

func main() {
	out := flag.String("out", "bin/release", "directory for the archives, SHA256SUMS and accord.yaml")
	version := flag.String("version", "", "the release's version (archive names; the manifest's version, see krew.ManifestVersion)")
	ldflags := flag.String("ldflags", "", "go build -ldflags (the version stamp of make build)")
	uriBase := flag.String("uri-base", "", "where the archives are downloaded from (the manifest's uri is URI-BASE/ARCHIVE)")
	platforms := flag.String("platforms", "", "comma-separated OS/ARCH to build (default: every platform of manifests/krew); the manifest lists those built")
	pkg := flag.String("package", "./cmd/kubectl-accord", "the package to build")
	flag.Parse()
	if *version == "" || *uriBase == "" {
		fmt.Fprintln(os.Stderr, "release: -version and -uri-base are required")
		os.Exit(2)
	}
	targets, err := selectPlatforms(*platforms)
	if err != nil {
		fmt.Fprintf(os.Stderr, "release: -platforms: %v\n", err)
		os.Exit(2)
	}
	if err := release(*out, *version, *ldflags, *uriBase, *pkg, targets, build); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

// selectPlatforms parses -platforms: every krew.Platforms entry when empty.
func selectPlatforms(list string) ([]krew.Platform, error) {
	if list == "" {
		return krew.Platforms, nil
	}
	var out []krew.Platform
	for _, s := range strings.Split(list, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(s), "/")
		p := krew.Platform{OS: os, Arch: arch}
		found := false
		for _, k := range krew.Platforms {
			found = found || k == p
		}
		if !ok || !found {
			return nil, fmt.Errorf("%q is not one of the release's platforms %v", s, krew.Platforms)
		}
		out = append(out, p)
	}
	return out, nil
}

// buildFunc builds pkg for p into bin.
type buildFunc func(p krew.Platform, pkg, ldflags, bin string) error

// build runs go build, static, without local paths and without the symbol table and DWARF (-s -w:
// a third smaller).
func build(p krew.Platform, pkg, ldflags, bin string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+ldflags), "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	fmt.Printf("CGO_ENABLED=0 GOOS=%s GOARCH=%s go build -trimpath -ldflags '-s -w ...' -o %s %s\n", p.OS, p.Arch, bin, pkg)
	return cmd.Run()
}

// release builds and packs each target into out, then writes SHA256SUMS and accord.yaml.
func release(out, version, ldflags, uriBase, pkg string, targets []krew.Platform, build buildFunc) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "accord-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var arts []krew.Artifact
	var sums strings.Builder
	for _, p := range targets {
		bin := filepath.Join(work, p.OS+"_"+p.Arch, p.Bin())
		if err := build(p, pkg, ldflags, bin); err != nil {
			return fmt.Errorf("building %s: %w", p, err)
		}
		archive := filepath.Join(out, p.Archive(version))
		if err := pack(archive, bin, p.OS == "windows"); err != nil {
			return fmt.Errorf("packing %s: %w", archive, err)
		}
		sum, err := fileSHA256(archive)
		if err != nil {
			return err
		}
		arts = append(arts, krew.Artifact{Platform: p, SHA256: sum})
		fmt.Fprintf(&sums, "%s  %s\n", sum, filepath.Base(archive))
	}
	if err := os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	manifest, err := krew.Render(version, uriBase, arts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "accord.yaml"), manifest, 0o644); err != nil {
		return err
	}
	fmt.Printf("wrote %d archives, SHA256SUMS and the krew manifest accord.yaml to %s\n", len(arts), out)
	return nil
}

// pack writes the binary bin, at the archive's root with mode 0755, into a zip or a tar.gz.
func pack(archive, bin string, asZip bool) (err error) {
	f, err := os.Create(archive)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	name, mtime := filepath.Base(bin), time.Now().UTC().Truncate(time.Second)
	if asZip {
		zw := zip.NewWriter(f)
		h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: mtime}
		h.SetMode(0o755)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, src); err != nil {
			return err
		}
		return zw.Close()
	}
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: st.Size(), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.Copy(tw, src); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}
