package ociimage

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// A provider release publishes its gateway image as an OCI archive (the
// image layout in one tar) beside the zips, and the digests of the image in
// a text file covered by the release's signed SHA256SUMS: the provider's
// default gateway_image is a tag (a binary cannot embed the digest of the
// image that contains it), the digests are what a user pins.

// GatewayRelease is the gateway image of provider version version: one
// image per linux binary (by platform, e.g. "linux/arm64"), tagged
// repository:version.
func GatewayRelease(repository, version string, binaries map[string][]byte) (Tagged, error) {
	if len(binaries) == 0 {
		return Tagged{}, fmt.Errorf("gateway image %s: no binaries", version)
	}
	platforms := make([]string, 0, len(binaries))
	for p := range binaries {
		platforms = append(platforms, p)
	}
	slices.Sort(platforms) // the index lists platforms in a stable order
	labels := map[string]string{
		"org.opencontainers.image.title":    "antifailure egress gateway",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.licenses": "MPL-2.0",
	}
	var images []v1.Image
	for _, s := range platforms {
		p, err := ParsePlatform(s)
		if err != nil {
			return Tagged{}, err
		}
		spec, err := Gateway(binaries[s], p, labels)
		if err != nil {
			return Tagged{}, fmt.Errorf("%s: %w", s, err)
		}
		img, err := Build(spec)
		if err != nil {
			return Tagged{}, err
		}
		images = append(images, img)
	}
	return NewTagged(repository+":"+version, images...)
}

// Digest is one published digest: the top-level one (Platform empty: the
// index, or the manifest of a one-platform image) or a platform's manifest.
type Digest struct {
	Ref      string
	Platform string
	Digest   v1.Hash
}

func (d Digest) String() string {
	if d.Platform == "" {
		return d.Ref + " " + d.Digest.String()
	}
	return d.Ref + " " + d.Platform + " " + d.Digest.String()
}

// LayoutDigests reads the digests of the image in an OCI layout directory:
// what a registry serves after the layout is pushed as is.
func LayoutDigests(dir string) ([]Digest, error) {
	top, err := layoutTop(dir)
	if err != nil {
		return nil, err
	}
	ref := top.ref
	out := []Digest{{Ref: ref, Digest: top.desc.Digest}}
	if top.index == nil {
		p, err := platformOf(top.image)
		if err != nil {
			return nil, err
		}
		return append(out, Digest{Ref: ref, Platform: p.String(), Digest: top.desc.Digest}), nil
	}
	m, err := top.index.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("%s: index entry %s has no platform", dir, d.Digest)
		}
		out = append(out, Digest{Ref: ref, Platform: d.Platform.String(), Digest: d.Digest})
	}
	return out, nil
}

// FormatDigests is the text of the published digests file, one per line.
func FormatDigests(ds []Digest) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	return b.String()
}

type top struct {
	ref   string
	desc  v1.Descriptor
	index v1.ImageIndex // set for a multi-platform image
	image v1.Image      // set for a one-platform image
}

// layoutTop is the layout's one top-level descriptor and what it names.
func layoutTop(dir string) (top, error) {
	p, err := layout.FromPath(dir)
	if err != nil {
		return top{}, err
	}
	root, err := p.ImageIndex()
	if err != nil {
		return top{}, err
	}
	m, err := root.IndexManifest()
	if err != nil {
		return top{}, err
	}
	if len(m.Manifests) != 1 {
		return top{}, fmt.Errorf("%s: %d top-level descriptors, want one", dir, len(m.Manifests))
	}
	t := top{desc: m.Manifests[0], ref: m.Manifests[0].Annotations[AnnotationContainerName]}
	if t.ref == "" {
		return top{}, fmt.Errorf("%s: the top-level descriptor names no image (%s)", dir, AnnotationContainerName)
	}
	if t.desc.MediaType.IsIndex() {
		t.index, err = root.ImageIndex(t.desc.Digest)
	} else {
		t.image, err = root.Image(t.desc.Digest)
	}
	return t, err
}

// PushLayout pushes the image in an OCI layout directory to ref (the
// layout's own reference unless ref is set), with the credentials of the
// default keychain (docker config, as crane and skopeo use).
func PushLayout(ctx context.Context, dir, ref string, opts ...remote.Option) (name.Reference, error) {
	t, err := layoutTop(dir)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		ref = t.ref
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if t.index != nil {
		return r, remote.WriteIndex(r, t.index, opts...)
	}
	return r, remote.Write(r, t.image, opts...)
}

// ExtractArchive unpacks an OCI archive (WriteArchive's tar) into dir.
func ExtractArchive(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	return untar(f, dir)
}

// untar writes the archive's directories and regular files under dir and
// refuses anything else: a release archive is data from outside, and an
// entry that climbs out of dir, or a link, is not one WriteArchive makes.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel := filepath.FromSlash(strings.TrimSuffix(h.Name, "/"))
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("archive entry %q is outside the layout", h.Name)
		}
		target := filepath.Join(dir, rel)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFile(target, tr)
		default:
			err = fmt.Errorf("archive entry %q is not a file or directory", h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
