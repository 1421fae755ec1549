// Command gatewayrelease makes and publishes the egress gateway image of a
// provider release (scripts/release-image.sh runs it as goreleaser's before
// hook):
//
//	go run ./tools/gatewayrelease build -version 0.1.0 \
//	    -binary linux/amd64=bin/amd64 -binary linux/arm64=bin/arm64 -out dist-image
//	go run ./tools/gatewayrelease push -archive dist-image/..._gateway_image.tar [-to REF]
//
// build writes terraform-provider-antifailure_<version>_gateway_image.tar (an
// OCI archive: the image layout in one tar) and ..._gateway_image_digests.txt
// (the index and per-platform manifest digests, one per line) into -out. The
// image is tagged <repository>:<version>, which is the provider's default
// gateway_image for that version. push sends the archive's image to its own
// reference (or -to), with the docker config's credentials.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/ociimage"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gatewayrelease:", err)
		os.Exit(1)
	}
}

type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }
func (b binaryFlags) Set(s string) error {
	p, file, ok := strings.Cut(s, "=")
	if !ok || p == "" || file == "" {
		return fmt.Errorf("-binary %q is not os/arch=path", s)
	}
	b[p] = file
	return nil
}

// ArchiveName and DigestsName are the release's file names for version.
func ArchiveName(version string) string {
	return "terraform-provider-antifailure_" + version + "_gateway_image.tar"
}

func DigestsName(version string) string {
	return "terraform-provider-antifailure_" + version + "_gateway_image_digests.txt"
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: gatewayrelease build|push [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "build":
		version := fs.String("version", "", "the provider version (the image's tag)")
		repository := fs.String("repository", kubernetes.GatewayImageRepository, "the image repository")
		out := fs.String("out", "dist-image", "output directory")
		binaries := binaryFlags{}
		fs.Var(binaries, "binary", "os/arch=path of a static linux provider binary (repeatable)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *version == "" || *version == "dev" {
			return fmt.Errorf("-version must be a release version (a dev build has no image)")
		}
		return build(*repository, *version, binaries, *out)
	case "push":
		archive := fs.String("archive", "", "the release's gateway image archive")
		to := fs.String("to", "", "push to this reference instead of the archive's own")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "gatewayrelease-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := ociimage.ExtractArchive(*archive, dir); err != nil {
			return err
		}
		ref, err := ociimage.PushLayout(context.Background(), dir, *to)
		if err != nil {
			return err
		}
		fmt.Println("pushed", ref)
		return nil
	}
	return fmt.Errorf("unknown command %q: build or push", args[0])
}

func build(repository, version string, files map[string]string, out string) error {
	binaries := map[string][]byte{}
	for p, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		binaries[p] = data
	}
	t, err := ociimage.GatewayRelease(repository, version, binaries)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	archive := filepath.Join(out, ArchiveName(version))
	if err := ociimage.WriteArchiveFile(archive, t); err != nil {
		return err
	}
	// The digests are read back from the archive, as a user would get them.
	dir, err := os.MkdirTemp("", "gatewayrelease-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := ociimage.ExtractArchive(archive, dir); err != nil {
		return err
	}
	ds, err := ociimage.LayoutDigests(dir)
	if err != nil {
		return err
	}
	text := ociimage.FormatDigests(ds)
	fmt.Print(text)
	return os.WriteFile(filepath.Join(out, DigestsName(version)), []byte(text), 0o644)
}
