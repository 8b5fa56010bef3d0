package main

import (
	"archive/tar"
	"debug/buildinfo"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const repoRoot = "../.."

// productCommands are the cmd/NAME directories with a main package, except the playground and the
// kubectl plugins (cmd/kubectl-NAME, client binaries): the same list the Makefile's IMAGE_COMMANDS
// computes.
func productCommands(t *testing.T) []string {
	t.Helper()
	mains, err := filepath.Glob(filepath.Join(repoRoot, "cmd", "*", "main.go"))
	if err != nil || len(mains) == 0 {
		t.Fatalf("no commands under cmd/: %v", err)
	}
	var out []string
	for _, m := range mains {
		if name := filepath.Base(filepath.Dir(m)); name != "playground" && !strings.HasPrefix(name, "kubectl-") {
			out = append(out, name)
		}
	}
	return out
}

// imagesDir returns the directory `make images` wrote: ACCORD_IMAGES_DIR (make test-images sets it,
// after building), or a fresh `make images` run into a temporary directory.
func imagesDir(t *testing.T) string {
	t.Helper()
	if dir := os.Getenv("ACCORD_IMAGES_DIR"); dir != "" {
		return dir
	}
	dir := t.TempDir()
	cmd := exec.Command("make", "images", "IMAGES_DIR="+dir)
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make images: %v\n%s", err, out)
	}
	return dir
}

// TestImages loads every image tarball and checks the image's configuration, its single layer and
// that the binary in it runs --version.
func TestImages(t *testing.T) {
	dir := imagesDir(t)
	commands := productCommands(t)
	if env := os.Getenv("ACCORD_IMAGE_COMMANDS"); env != "" && !slices.Equal(strings.Fields(env), commands) {
		t.Errorf("the Makefile builds images for %q, but the product commands are %q", env, commands)
	}
	for _, c := range commands {
		name := "accord-" + c
		t.Run(name, func(t *testing.T) {
			img := loadTarball(t, filepath.Join(dir, name+".tar"))
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
				t.Errorf("media types %s / %s, want OCI", m.MediaType, m.Config.MediaType)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
				t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
			}
			if cf.Config.User != User {
				t.Errorf("user %q, want %q (non-root)", cf.Config.User, User)
			}
			if want := []string{"/" + name}; !slices.Equal(cf.Config.Entrypoint, want) {
				t.Errorf("entrypoint %v, want %v", cf.Config.Entrypoint, want)
			}
			for _, l := range []string{LabelVersion, LabelRevision, LabelSource} {
				if cf.Config.Labels[l] == "" {
					t.Errorf("label %s is missing (labels %v)", l, cf.Config.Labels)
				}
			}
			if cf.Config.Labels[LabelTitle] != name {
				t.Errorf("label %s = %q, want %q", LabelTitle, cf.Config.Labels[LabelTitle], name)
			}

			// One layer, one file: the binary. No shell, nothing else.
			layers, err := img.Layers()
			if err != nil || len(layers) != 1 {
				t.Fatalf("layers: %d, %v", len(layers), err)
			}
			files := layerFiles(t, layers[0])
			if len(files) != 1 || files[name] == nil {
				var names []string
				for n := range files {
					names = append(names, n)
				}
				t.Fatalf("layer holds %v, want exactly %s", names, name)
			}
			bin := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(bin, files[name], 0o755); err != nil {
				t.Fatal(err)
			}
			// A command with a CPU profile beside its main package (accord-scheduler's default.pgo) ships
			// built with it, and only such a command.
			info, err := buildinfo.ReadFile(bin)
			if err != nil {
				t.Fatalf("%s: build info: %v", name, err)
			}
			pgo := ""
			for _, st := range info.Settings {
				if st.Key == "-pgo" {
					pgo = st.Value
				}
			}
			_, err = os.Stat(filepath.Join(repoRoot, "cmd", c, "default.pgo"))
			switch hasProfile := err == nil; {
			case hasProfile && pgo == "":
				t.Errorf("%s was built without profile-guided optimisation, but cmd/%s/default.pgo exists", name, c)
			case !hasProfile && pgo != "":
				t.Errorf("%s was built with the profile %q, but cmd/%s has no default.pgo", name, pgo, c)
			}
			out, err := exec.Command(bin, "--version").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --version: %v\n%s", name, err, out)
			}
			if v := cf.Config.Labels[LabelVersion]; !strings.Contains(string(out), "+accord."+v) {
				t.Errorf("%s --version printed %q, want the image's version %s", name, out, v)
			}
		})
	}
}

func loadTarball(t *testing.T, path string) v1.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index of %s: %v manifests, %v", path, im, err)
	}
	if ref := im.Manifests[0].Annotations[AnnotationContainer]; !strings.Contains(ref, strings.TrimSuffix(filepath.Base(path), ".tar")+":") {
		t.Errorf("image reference %q does not name the image", ref)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func layerFiles(t *testing.T, l v1.Layer) map[string][]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = data
		if hdr.Mode&0o111 == 0 || hdr.Uid != 0 {
			t.Errorf("%s: mode %o uid %d, want an executable owned by root (read-only for the image's user)", hdr.Name, hdr.Mode, hdr.Uid)
		}
	}
}

// TestDockerfilesUpToDate: every image has a Dockerfile, and each is what `make dockerfiles` writes.
func TestDockerfilesUpToDate(t *testing.T) {
	for _, c := range productCommands(t) {
		name := "accord-" + c
		got, err := os.ReadFile(filepath.Join(repoRoot, "hack", "docker", name+".Dockerfile"))
		if err != nil {
			t.Errorf("%v (run make dockerfiles)", err)
			continue
		}
		if want := Dockerfile(name, c, "https://github.com/accord-sched/accord"); string(got) != want {
			t.Errorf("hack/docker/%s.Dockerfile is stale: run make dockerfiles", name)
		}
	}
}

// The image is reproducible: the same binary and spec give the same digest.
func TestImageReproducible(t *testing.T) {
	s := Spec{Name: "accord-x", Version: "v1", Revision: "abc", Source: "src", Arch: "amd64"}
	a, err := Image(s, []byte("binary"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Image(s, []byte("binary"))
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests differ: %s, %s", da, db)
	}
}
