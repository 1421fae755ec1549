// Package ociimage builds small container images without Docker or a
// registry: one layer made from files given in memory, a config with the
// platform, entrypoint and user, written as an OCI image layout (a directory,
// for publishing) or as an OCI archive (the same layout in one tar, which
// `ctr images import` reads). Several platforms of one image go into one
// index under one tag.
//
// Builds are reproducible: every timestamp is the zero time and every file is
// owned by root unless the File says otherwise, so the same inputs give the
// same digest (a release can be rebuilt and compared).
package ociimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one entry of the image's single layer.
type File struct {
	Path string // absolute path inside the image, e.g. /bin/busybox
	Mode int64  // permission bits; 0 means 0644 for files, 0755 for directories
	Data []byte // content of a regular file
	// Link, when set, makes the entry a symbolic link to Link.
	Link string
	// Dir makes the entry a directory.
	Dir      bool
	UID, GID int
}

// Spec is one image for one platform.
type Spec struct {
	Platform   v1.Platform
	Files      []File
	Entrypoint []string
	Cmd        []string
	Env        []string
	User       string
	WorkingDir string
	Labels     map[string]string
}

// DefaultPath is the PATH every image gets unless Env sets one.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ParsePlatform reads os/arch[/variant], e.g. linux/arm64.
func ParsePlatform(s string) (v1.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return v1.Platform{}, fmt.Errorf("platform %q is not os/arch[/variant]", s)
	}
	p := v1.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

// Build makes the image.
func Build(s Spec) (v1.Image, error) {
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		return nil, fmt.Errorf("image spec has no platform")
	}
	data, err := layerTar(s.Files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	env := s.Env
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		env = append([]string{DefaultPath}, env...)
	}
	cf.Config = v1.Config{
		Entrypoint: s.Entrypoint, Cmd: s.Cmd, Env: env, User: s.User, WorkingDir: s.WorkingDir, Labels: s.Labels,
	}
	return mutate.ConfigFile(img, cf)
}

// layerTar writes the files as a tar, parents before children, with every
// missing parent directory added (root-owned, 0755).
func layerTar(files []File) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		p := path.Clean("/" + f.Path)
		if p == "/" {
			return nil, fmt.Errorf("file path %q names the root", f.Path)
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("file %s is given twice", p)
		}
		f.Path = p
		byPath[p] = f
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := byPath[d]; !ok {
				byPath[d] = File{Path: d, Dir: true}
			}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths) // a parent sorts before its children
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		if f.Dir && (f.Link != "" || f.Data != nil) {
			return nil, fmt.Errorf("%s: a directory has no content or link target", p)
		}
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Uid: f.UID, Gid: f.GID, Mode: f.Mode, Format: tar.FormatPAX}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
			if h.Mode == 0 {
				h.Mode = 0o755
			}
		case f.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.Link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
			if h.Mode == 0 {
				h.Mode = 0o644
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Tagged is one reference and the images (one per platform) it names.
type Tagged struct {
	Ref    name.Tag
	Images []v1.Image
}

// NewTagged checks the reference (it must carry a tag, and a registry host
// with a dot or a port, so that containerd's CRI does not read it as a
// docker.io name) and that no platform is given twice.
func NewTagged(ref string, images ...v1.Image) (Tagged, error) {
	t, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return Tagged{}, fmt.Errorf("image reference %q: %w", ref, err)
	}
	if len(images) == 0 {
		return Tagged{}, fmt.Errorf("image reference %q names no image", ref)
	}
	seen := map[string]bool{}
	for _, img := range images {
		p, err := platformOf(img)
		if err != nil {
			return Tagged{}, err
		}
		if seen[p.String()] {
			return Tagged{}, fmt.Errorf("image reference %q: platform %s given twice", ref, p)
		}
		seen[p.String()] = true
	}
	return Tagged{Ref: t, Images: images}, nil
}

func platformOf(img v1.Image) (v1.Platform, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return v1.Platform{}, err
	}
	return v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}, nil
}
