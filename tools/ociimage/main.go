// Command ociimage builds the project's container images without Docker or
// a registry and writes them as an OCI archive (-out, for `ctr images
// import`) and/or an OCI image layout directory (-layout, for publishing with
// any OCI tool):
//
//	go run ./tools/ociimage -kind gateway -tag ghcr.io/antifailure/egress-gateway:v1.2.3 \
//	    -platform linux/amd64,linux/arm64 -layout out/gateway
//	go run ./tools/ociimage -kind busybox -tag local.test/busybox:1.35 -out busybox.tar
//
// Kinds: gateway (the provider binary of this module, built static for each
// platform, or -binary for one platform), busybox (the probe image, from a
// static busybox such as Debian's busybox-static) and pause (a pod sandbox
// image made of the same busybox). It prints one line per image with its
// digest.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/ociimage"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

type labelFlags map[string]string

func (l labelFlags) String() string { return fmt.Sprint(map[string]string(l)) }
func (l labelFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q is not key=value", s)
	}
	l[k] = v
	return nil
}

func run() error {
	kind := flag.String("kind", "", "gateway, busybox or pause")
	tag := flag.String("tag", "", "image reference with a registry host and a tag, e.g. local.test/busybox:1.35")
	out := flag.String("out", "", "write an OCI archive (tar) here")
	layoutDir := flag.String("layout", "", "write an OCI image layout into this (new or empty) directory")
	platforms := flag.String("platform", "linux/"+runtime.GOARCH, "comma-separated os/arch list")
	busybox := flag.String("busybox", "/bin/busybox", "static busybox binary (busybox and pause)")
	binary := flag.String("binary", "", "a prebuilt static provider binary (gateway, one platform); default: build this module")
	version := flag.String("version", "dev", "the version the built provider binary reports (-X main.version; gateway without -binary)")
	labels := labelFlags{}
	flag.Var(labels, "label", "image label key=value (repeatable)")
	flag.Parse()
	if *tag == "" || (*out == "" && *layoutDir == "") {
		return fmt.Errorf("-tag and one of -out or -layout are required")
	}
	var imgs []v1.Image
	var pls []v1.Platform
	for _, s := range strings.Split(*platforms, ",") {
		p, err := ociimage.ParsePlatform(strings.TrimSpace(s))
		if err != nil {
			return err
		}
		pls = append(pls, p)
	}
	if *binary != "" && len(pls) > 1 {
		return fmt.Errorf("-binary is one platform's binary; give one -platform")
	}
	for _, p := range pls {
		spec, err := specFor(*kind, p, *busybox, *binary, *version, labels)
		if err != nil {
			return err
		}
		img, err := ociimage.Build(spec)
		if err != nil {
			return err
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s %s\n", *tag, p, d)
		imgs = append(imgs, img)
	}
	t, err := ociimage.NewTagged(*tag, imgs...)
	if err != nil {
		return err
	}
	if *layoutDir != "" {
		if err := ociimage.WriteLayout(*layoutDir, t); err != nil {
			return err
		}
	}
	if *out != "" {
		return ociimage.WriteArchiveFile(*out, t)
	}
	return nil
}

func specFor(kind string, p v1.Platform, busyboxPath, binary, version string, labels map[string]string) (ociimage.Spec, error) {
	switch kind {
	case "gateway":
		var data []byte
		var err error
		if binary != "" {
			data, err = os.ReadFile(binary)
		} else {
			data, err = buildProvider(p, version)
		}
		if err != nil {
			return ociimage.Spec{}, err
		}
		return ociimage.Gateway(data, p, labels)
	case "busybox", "pause":
		data, err := os.ReadFile(busyboxPath)
		if err != nil {
			return ociimage.Spec{}, fmt.Errorf("%w (Debian: apt-get install busybox-static)", err)
		}
		if kind == "pause" {
			return ociimage.Pause(data, p)
		}
		// The applet list comes from running the binary, so it must be this
		// machine's architecture (CheckStaticELF refuses any other).
		if err := ociimage.CheckStaticELF("busybox", data, p); err != nil {
			return ociimage.Spec{}, err
		}
		list, err := exec.Command(busyboxPath, "--list-full").Output()
		if err != nil {
			return ociimage.Spec{}, fmt.Errorf("%s --list-full: %w", busyboxPath, err)
		}
		return ociimage.Busybox(data, strings.Fields(string(list)), p)
	}
	return ociimage.Spec{}, fmt.Errorf("-kind %q is not gateway, busybox or pause", kind)
}

// buildProvider builds this module's main package static for the platform,
// reporting version, as the release build does.
func buildProvider(p v1.Platform, version string) ([]byte, error) {
	mod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOMOD: %w", err)
	}
	if m := strings.TrimSpace(string(mod)); m == "" || m == os.DevNull {
		return nil, fmt.Errorf("run from inside the provider's module (go env GOMOD is %q)", m)
	}
	dir, err := os.MkdirTemp("", "ociimage-bin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "terraform-provider-antifailure")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w -X main.version="+version, "-o", bin, ".")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(mod)))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Variant != "" && p.Architecture == "arm" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building the provider for %s: %w", p, err)
	}
	return os.ReadFile(bin)
}
