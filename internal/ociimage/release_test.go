package ociimage_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"errors"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/antifailure/terraform-provider-antifailure/internal/ociimage"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

// release is the gateway image under test and the binaries it must hold.
type release struct {
	version   string
	platforms []string          // e.g. linux/amd64
	archive   string            // the OCI archive
	digests   string            // the published digests file ("" when built here)
	binaries  map[string]string // platform -> the provider binary that must be inside
}

// releaseUnderTest is the release in AF_RELEASE_DIST (scripts/release-check.sh
// sets it, with the zips' binaries unpacked in AF_RELEASE_BINARIES), or else
// an image this test builds from this module for OCIIMAGE_PLATFORMS (default
// linux/amd64; make image-arm64 adds linux/arm64) with the same code the
// release uses.
func releaseUnderTest(t *testing.T) release {
	t.Helper()
	if dist := os.Getenv("AF_RELEASE_DIST"); dist != "" {
		r := release{version: os.Getenv("AF_RELEASE_VERSION"), platforms: strings.Split(os.Getenv("AF_RELEASE_PLATFORMS"), ","), binaries: map[string]string{}}
		if r.version == "" || os.Getenv("AF_RELEASE_PLATFORMS") == "" || os.Getenv("AF_RELEASE_BINARIES") == "" {
			t.Fatal("AF_RELEASE_DIST needs AF_RELEASE_VERSION, AF_RELEASE_PLATFORMS and AF_RELEASE_BINARIES")
		}
		r.archive = filepath.Join(dist, "terraform-provider-antifailure_"+r.version+"_gateway_image.tar")
		r.digests = filepath.Join(dist, "terraform-provider-antifailure_"+r.version+"_gateway_image_digests.txt")
		for _, p := range r.platforms {
			r.binaries[p] = filepath.Join(os.Getenv("AF_RELEASE_BINARIES"), "linux_"+p[len("linux/"):], "terraform-provider-antifailure_v"+r.version)
		}
		return r
	}
	platforms := "linux/amd64"
	if p := os.Getenv("OCIIMAGE_PLATFORMS"); p != "" {
		platforms = p
	}
	r := release{version: "0.0.0-roundtrip", platforms: strings.Split(platforms, ","), binaries: map[string]string{}}
	data := map[string][]byte{}
	for _, p := range r.platforms {
		r.binaries[p] = buildProvider(t, p, r.version)
		b, err := os.ReadFile(r.binaries[p])
		if err != nil {
			t.Fatal(err)
		}
		data[p] = b
	}
	tagged, err := ociimage.GatewayRelease(kubernetes.GatewayImageRepository, r.version, data)
	if err != nil {
		t.Fatal(err)
	}
	r.archive = filepath.Join(t.TempDir(), "gateway.tar")
	if err := ociimage.WriteArchiveFile(r.archive, tagged); err != nil {
		t.Fatal(err)
	}
	return r
}

// buildProvider builds this module's provider as the release does.
func buildProvider(t *testing.T, platform, version string) string {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "terraform-provider-antifailure")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version, "-o", bin, ".")
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+platform[len("linux/"):])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the provider for %s: %v\n%s", platform, err, out)
	}
	return bin
}

// TestGatewayImageRoundTrip pushes the gateway image to an in-process
// registry, pulls it back by the provider's version tag and checks what a
// cluster would run: the platforms, the entrypoint and user, the binary
// (the release's own, byte for byte) and the version it reports, which is
// also the tag of its own default gateway_image.
func TestGatewayImageRoundTrip(t *testing.T) {
	r := releaseUnderTest(t)
	layoutDir := t.TempDir()
	if err := ociimage.ExtractArchive(r.archive, layoutDir); err != nil {
		t.Fatal(err)
	}
	ds, err := ociimage.LayoutDigests(layoutDir)
	if err != nil {
		t.Fatal(err)
	}
	wantRef := kubernetes.GatewayImageRepository + ":" + r.version
	if ds[0].Ref != wantRef {
		t.Fatalf("the archive's image is %s, want %s (the provider's default for %s)", ds[0].Ref, wantRef, r.version)
	}
	if r.digests != "" {
		published, err := os.ReadFile(r.digests)
		if err != nil {
			t.Fatal(err)
		}
		if got := ociimage.FormatDigests(ds); string(published) != got {
			t.Fatalf("published digests:\n%s\nthe archive's:\n%s", published, got)
		}
	}

	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/antifailure/egress-gateway"
	if _, err := ociimage.PushLayout(context.Background(), layoutDir, repo+":"+r.version); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo + ":" + r.version)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest != ds[0].Digest {
		t.Errorf("the registry serves %s for the tag, the release publishes %s", desc.Digest, ds[0].Digest)
	}
	published := map[string]v1.Hash{}
	for _, d := range ds[1:] {
		published[d.Platform] = d.Digest
	}
	var got []string
	for p := range published {
		got = append(got, p)
	}
	slices.Sort(got)
	want := slices.Clone(r.platforms)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("platforms %v, want %v", got, want)
	}
	if len(want) > 1 && !desc.MediaType.IsIndex() {
		t.Errorf("%d platforms under a %s, want an image index", len(want), desc.MediaType)
	}

	for _, p := range want {
		t.Run(p, func(t *testing.T) {
			pl, _ := ociimage.ParsePlatform(p)
			img, err := remote.Image(ref, remote.WithPlatform(pl))
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := img.Digest(); d != published[p] {
				t.Errorf("pulled manifest %s, published %s", d, published[p])
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS+"/"+cf.Architecture != p || !slices.Equal(cf.Config.Entrypoint, []string{"/antifailure", "gateway"}) || cf.Config.User != "65532:65532" {
				t.Errorf("config: platform %s/%s, entrypoint %q, user %q", cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Config.User)
			}
			if v := cf.Config.Labels["org.opencontainers.image.version"]; v != r.version {
				t.Errorf("version label %q, want %q", v, r.version)
			}
			inside := fileInImage(t, img, "antifailure")
			want, err := os.ReadFile(r.binaries[p])
			if err != nil {
				t.Fatal(err)
			}
			if sha256.Sum256(inside) != sha256.Sum256(want) {
				t.Fatalf("the image's /antifailure is not the release binary %s", r.binaries[p])
			}
			checkVersion(t, p, inside, r.version)
		})
	}

	// Negative controls: nothing is published as :latest, and a binary is
	// never packed under a platform it was not built for.
	latest, _ := name.ParseReference(repo + ":latest")
	if _, err := remote.Get(latest); err == nil {
		t.Error("the registry serves a :latest gateway image")
	}
	wrong := map[string][]byte{"linux/arm64": mustRead(t, r.binaries[want[0]])}
	if want[0] == "linux/arm64" {
		wrong = map[string][]byte{"linux/amd64": mustRead(t, r.binaries[want[0]])}
	}
	if _, err := ociimage.GatewayRelease(kubernetes.GatewayImageRepository, r.version, wrong); err == nil {
		t.Error("a binary labelled with another platform was packed")
	}
}

// checkVersion: the binary's build says the version; on this machine's own
// platform the binary runs and says it, and that its default gateway image
// is this image's tag.
func checkVersion(t *testing.T, platform string, binary []byte, version string) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(binary))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	// -trimpath keeps -ldflags out of the build info, so a binary this
	// machine cannot run shows its -X main.version as the string itself.
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" || settings["GOOS"]+"/"+settings["GOARCH"] != platform {
		t.Errorf("build settings %v", settings)
	}
	if !bytes.Contains(binary, []byte(version)) {
		t.Errorf("the binary does not hold its version %q", version)
	}
	if platform != "linux/"+runtime.GOARCH || runtime.GOOS != "linux" {
		return
	}
	exe := filepath.Join(t.TempDir(), "antifailure")
	if err := os.WriteFile(exe, binary, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", exe, err)
	}
	if want := "terraform-provider-antifailure " + version + "\ndefault gateway_image " + kubernetes.GatewayImageRepository + ":" + version + "\n"; string(out) != want {
		t.Errorf("the image's binary says %q, want %q", out, want)
	}
}

func fileInImage(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			t.Fatalf("the image has no %s", path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimPrefix(h.Name, "/") == path {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
