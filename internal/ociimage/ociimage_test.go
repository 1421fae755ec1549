package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// selfBinary is the test binary: an ELF executable of this machine's
// architecture, for the wrong-architecture check.
func selfBinary(t *testing.T) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func host() v1.Platform { return v1.Platform{OS: "linux", Architecture: runtime.GOARCH} }

func TestBuildIsReproducible(t *testing.T) {
	spec := Spec{Platform: host(), Files: []File{{Path: "/a/b/c", Data: []byte("x")}, {Path: "/l", Link: "/a/b/c"}}, Entrypoint: []string{"/a/b/c"}}
	a, err := Build(spec)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(spec)
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("same spec, two digests: %s %s", da, db)
	}
	spec.Files[0].Data = []byte("y")
	c, _ := Build(spec)
	if dc, _ := c.Digest(); dc == da {
		t.Fatal("different content, same digest")
	}
	cf, _ := a.ConfigFile()
	if cf.Architecture != runtime.GOARCH || cf.Config.Env[0] != DefaultPath {
		t.Fatalf("config: %+v", cf.Config)
	}
}

func TestLayerRefusesDuplicatesAndRoot(t *testing.T) {
	for _, files := range [][]File{{{Path: "/x"}, {Path: "x"}}, {{Path: "/"}}, {{Path: "/d", Dir: true, Link: "/e"}}} {
		if _, err := layerTar(files); err == nil {
			t.Errorf("layerTar(%v) accepted", files)
		}
	}
}

func TestCheckStaticELF(t *testing.T) {
	if err := CheckStaticELF("text", []byte("#!/bin/sh\n"), host()); err == nil {
		t.Error("a script passed as an ELF executable")
	}
	other := v1.Platform{OS: "linux", Architecture: "arm64"}
	if runtime.GOARCH == "arm64" {
		other.Architecture = "amd64"
	}
	self := selfBinary(t)
	if err := CheckStaticELF("self", self, other); err == nil || !strings.Contains(err.Error(), "not for platform") {
		t.Errorf("a %s binary passed for %s: %v", runtime.GOARCH, other, err)
	}
	// /bin/sh on Debian is dynamically linked (dash, bash): the negative control.
	if sh, err := os.ReadFile("/bin/sh"); err == nil {
		if err := CheckStaticELF("/bin/sh", sh, host()); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
			t.Errorf("/bin/sh passed as static: %v", err)
		}
	}
}

func TestArchiveNamesTheImageForContainerd(t *testing.T) {
	a, _ := Build(Spec{Platform: host(), Files: []File{{Path: "/f", Data: []byte("1")}}})
	b, _ := Build(Spec{Platform: v1.Platform{OS: "linux", Architecture: "s390x"}, Files: []File{{Path: "/f", Data: []byte("2")}}})
	tg, err := NewTagged("local.test/x:1", a, b)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir() + "/layout"
	if err := WriteLayout(dir, tg); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, _ := p.ImageIndex()
	im, _ := top.IndexManifest()
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations[AnnotationContainerName] != "local.test/x:1" || im.Manifests[0].Annotations[AnnotationRefName] != "1" {
		t.Fatalf("top-level descriptors: %+v", im.Manifests)
	}
	inner, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := inner.IndexManifest()
	if len(m.Manifests) != 2 || m.Manifests[1].Platform.Architecture != "s390x" {
		t.Fatalf("platform index: %+v", m.Manifests)
	}
	var buf1, buf2 bytes.Buffer
	if err := WriteArchive(&buf1, tg); err != nil {
		t.Fatal(err)
	}
	_ = WriteArchive(&buf2, tg)
	if !bytes.Equal(buf1.Bytes(), buf2.Bytes()) {
		t.Error("two archives of the same images differ")
	}
	tr := tar.NewReader(&buf1)
	var idx v1.IndexManifest
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("archive has no index.json: %v", err)
		}
		if h.Name == "index.json" {
			if err := json.NewDecoder(tr).Decode(&idx); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if len(idx.Manifests) != 1 || idx.Manifests[0].Annotations[AnnotationContainerName] != "local.test/x:1" {
		t.Errorf("archive's index.json: %+v", idx.Manifests)
	}
	if _, err := NewTagged("local.test/x:1", a, a); err == nil {
		t.Error("one platform twice accepted")
	}
	if _, err := NewTagged("busybox", a); err == nil {
		t.Error("a reference without tag accepted")
	}
}
