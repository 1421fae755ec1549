package ociimage

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations on the layout's top-level descriptor: the OCI reference name
// (the tag, as the image-spec suggests) and containerd's full image name,
// which `ctr images import` uses as the imported image's reference.
const (
	AnnotationRefName       = "org.opencontainers.image.ref.name"
	AnnotationContainerName = "io.containerd.image.name"
)

// WriteLayout writes an OCI image layout into dir (which must not exist or
// be empty): one image for one platform is the layout's manifest itself;
// several platforms become one image index. Either way the top-level
// descriptor carries the reference.
func WriteLayout(dir string, t Tagged) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("OCI layout directory %s is not empty", dir)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	ann := layout.WithAnnotations(map[string]string{
		AnnotationRefName:       t.Ref.TagStr(),
		AnnotationContainerName: t.Ref.Name(),
	})
	if len(t.Images) == 1 {
		return p.AppendImage(t.Images[0], ann)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, img := range t.Images {
		pl, err := platformOf(img)
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pl}})
	}
	return p.AppendIndex(idx, ann)
}

// WriteArchive writes the OCI layout of t as one tar to w (the format of
// `ctr images import` and of `docker load` for OCI archives). Entries are
// sorted and carry no timestamps, so the archive is reproducible too.
func WriteArchive(w io.Writer, t Tagged) error {
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := WriteLayout(dir, t); err != nil {
		return err
	}
	var paths []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(paths)
	tw := tar.NewWriter(w)
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
		} else {
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			if err := copyFile(tw, p); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// WriteArchiveFile is WriteArchive into a file, replaced only once complete.
func WriteArchiveFile(path string, t Tagged) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := WriteArchive(f, t); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func copyFile(w io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
