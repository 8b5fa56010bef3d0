// Command imagebuilder packs a static binary into an OCI image tarball without a container runtime,
// a base image or a registry: one layer holding the binary at /NAME on an empty base, run as the
// non-root user 65532 with the binary as entrypoint and the OCI labels version, revision and
// source. `make images` runs it for every product binary; it also prints the equivalent
// Dockerfile (-dockerfile) for people who build with Docker.
//
//	go run ./hack/imagebuilder -binary bin/images/linux_amd64/accord-scheduler -name accord-scheduler \
//	    -version v0.1.0 -revision $(git rev-parse HEAD) -arch amd64 -out bin/images/accord-scheduler.tar
//
// The tarball is an OCI image layout (index.json, oci-layout, blobs/); `docker load`, `podman load`,
// `ctr images import` and `kind load image-archive` read it. Its bytes depend only on the binary and
// the flags (fixed timestamps), so a rebuild of the same binary yields the same image digest.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the numeric user and group the images run as (the conventional "nonroot").
const User = "65532:65532"

// OCI label keys (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	// AnnotationRefName tags the image inside the layout; containerd reads its own annotation.
	AnnotationRefName   = "org.opencontainers.image.ref.name"
	AnnotationContainer = "io.containerd.image.name"
)

// epoch is the timestamp of every file and of the image: images are reproducible.
var epoch = time.Unix(0, 0).UTC()

// Spec describes one image.
type Spec struct {
	// Name is the binary's and the image's name (accord-scheduler); the binary is /Name.
	Name     string
	Version  string
	Revision string
	Source   string
	// Repository prefixes Name in the image reference the tarball carries (e.g. ghcr.io/org).
	Repository string
	Arch       string
}

// Labels returns the image's labels.
func (s Spec) Labels() map[string]string {
	return map[string]string{
		LabelTitle:    s.Name,
		LabelVersion:  s.Version,
		LabelRevision: s.Revision,
		LabelSource:   s.Source,
	}
}

// Reference is the image's name:tag.
func (s Spec) Reference() string {
	name := s.Name
	if s.Repository != "" {
		name = s.Repository + "/" + s.Name
	}
	return name + ":" + s.Version
}

// Image builds the image of binary (the file's bytes) for s.
func Image(s Spec, binary []byte) (v1.Image, error) {
	if s.Name == "" || s.Version == "" || s.Arch == "" {
		return nil, errors.New("name, version and arch are required")
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Name: s.Name, Mode: 0o755, Size: int64(len(binary)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "imagebuilder: COPY " + s.Name + " /" + s.Name, Comment: "static binary"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = s.Arch, "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Author = "Accord"
	cf.Config.User = User
	cf.Config.Entrypoint = []string{"/" + s.Name}
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = s.Labels()
	return mutate.ConfigFile(img, cf)
}

// WriteTarball writes img as an OCI image layout tarball to out, tagged with s.Reference().
func WriteTarball(s Spec, img v1.Image, out string) error {
	dir, err := os.MkdirTemp("", "imagebuilder-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	ref := s.Reference()
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			Annotations: map[string]string{AnnotationRefName: s.Version, AnnotationContainer: ref},
			Platform:    &v1.Platform{OS: "linux", Architecture: s.Arch},
		},
	})
	if _, err := layout.Write(dir, idx); err != nil {
		return err
	}
	return tarDir(dir, out)
}

// tarDir writes the files under dir into a tarball at out, sorted, with fixed timestamps.
func tarDir(dir, out string) error {
	var files []string
	if err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir {
			files = append(files, path)
		}
		return nil
	}); err != nil {
		return err
	}
	sort.Strings(files)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	for _, path := range files {
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Mode: 0o644, Format: tar.FormatPAX}
		if info.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// Dockerfile returns the multi-stage Dockerfile that builds the same image as Image with Docker:
// the binary built by `make static` (the flags `make images` uses) on golang, copied alone to
// /NAME on scratch, run as User, with the same entrypoint and labels.
func Dockerfile(name, cmd, source string) string {
	return fmt.Sprintf(`# syntax=docker/dockerfile:1
# %[1]s: the same image as `+"`make images`"+` (bin/images/%[1]s.tar), built with Docker.
# Generated by hack/imagebuilder (make dockerfiles); do not edit. Build from the repository root:
#   docker build -f hack/docker/%[1]s.Dockerfile --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg GIT_COMMIT=$(git rev-parse HEAD) -t %[1]s:dev .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=v0.0.0
ARG GIT_COMMIT=unknown
ARG TARGETARCH=amd64
RUN make static IMAGE_COMMANDS=%[2]s ARCH=$TARGETARCH VERSION=$VERSION GIT_COMMIT=$GIT_COMMIT IMAGES_DIR=/out \
 && cp /out/linux_$TARGETARCH/%[1]s /%[1]s

FROM scratch
ARG VERSION=v0.0.0
ARG GIT_COMMIT=unknown
COPY --from=build /%[1]s /%[1]s
LABEL %[3]s="%[1]s" \
      %[4]s="$VERSION" \
      %[5]s="$GIT_COMMIT" \
      %[6]s="%[7]s"
USER %[8]s
WORKDIR /
ENTRYPOINT ["/%[1]s"]
`, name, cmd, LabelTitle, LabelVersion, LabelRevision, LabelSource, source, User)
}

func main() {
	var s Spec
	var binary, out, dockerfile, cmd string
	flag.StringVar(&binary, "binary", "", "static binary to pack")
	flag.StringVar(&s.Name, "name", "", "image and binary name (e.g. accord-scheduler)")
	flag.StringVar(&s.Version, "version", "", "image tag and org.opencontainers.image.version")
	flag.StringVar(&s.Revision, "revision", "", "org.opencontainers.image.revision (git commit)")
	flag.StringVar(&s.Source, "source", "https://github.com/accord-sched/accord", "org.opencontainers.image.source")
	flag.StringVar(&s.Repository, "repository", "", "registry/repository prefix of the image reference")
	flag.StringVar(&s.Arch, "arch", "amd64", "GOARCH of the binary")
	flag.StringVar(&out, "out", "", "OCI image tarball to write")
	flag.StringVar(&dockerfile, "dockerfile", "", "write the Dockerfile for -name to this file instead of building")
	flag.StringVar(&cmd, "cmd", "", "with -dockerfile: the cmd/ directory of the binary")
	flag.Parse()
	if err := run(s, binary, out, dockerfile, cmd); err != nil {
		fmt.Fprintln(os.Stderr, "imagebuilder:", err)
		os.Exit(1)
	}
}

func run(s Spec, binary, out, dockerfile, cmd string) error {
	if dockerfile != "" {
		if s.Name == "" || cmd == "" {
			return errors.New("-dockerfile needs -name and -cmd")
		}
		return os.WriteFile(dockerfile, []byte(Dockerfile(s.Name, cmd, s.Source)), 0o644)
	}
	if binary == "" || out == "" {
		return errors.New("-binary and -out are required")
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return err
	}
	img, err := Image(s, data)
	if err != nil {
		return err
	}
	if err := WriteTarball(s, img, out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s\n", out, s.Reference(), digest)
	return nil
}
