package ociimage

import (
	"bytes"
	"debug/elf"
	"fmt"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The project's images.
const (
	// GatewayBinary is where the provider binary sits in the gateway image;
	// its entrypoint runs the binary's gateway command.
	GatewayBinary = "/antifailure"
	// NonRootUser is the user the gateway runs as (distroless' nonroot).
	NonRootUser = "65532:65532"
)

// elfMachines maps a platform architecture to the ELF machine of its
// binaries.
var elfMachines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"386": elf.EM_386, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
}

// CheckStaticELF refuses a binary that is not a static ELF executable for
// the platform: a dynamically linked binary would not start in an image
// that has no libc, and a binary of another architecture would not start at
// all, both only once a pod runs it.
func CheckStaticELF(what string, data []byte, p v1.Platform) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", what, err)
	}
	defer f.Close()
	want, ok := elfMachines[p.Architecture]
	if !ok {
		return fmt.Errorf("platform %s: unknown architecture", p)
	}
	if f.Machine != want {
		return fmt.Errorf("%s is built for %s, not for platform %s", what, f.Machine, p)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it names an interpreter); build it static (CGO_ENABLED=0)", what)
		}
	}
	return nil
}

// Gateway is the egress gateway image: the provider binary itself (static,
// CGO_ENABLED=0), run as nonroot with `gateway` as its command. The runtime passes the gateway's flags as
// the container's args.
func Gateway(binary []byte, p v1.Platform, labels map[string]string) (Spec, error) {
	if err := CheckStaticELF("the provider binary", binary, p); err != nil {
		return Spec{}, err
	}
	return Spec{
		Platform: p,
		Files: []File{
			{Path: GatewayBinary, Data: binary, Mode: 0o755},
			{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
			{Path: "/etc/group", Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
			{Path: "/home/nonroot", Dir: true, UID: 65532, GID: 65532, Mode: 0o700},
			{Path: "/tmp", Dir: true, Mode: 0o1777},
		},
		Entrypoint: []string{GatewayBinary, "gateway"},
		User:       NonRootUser,
		Labels:     labels,
	}, nil
}

// Busybox is the probe image: one static busybox binary (Debian's
// busybox-static) with a symlink per applet (applets as `busybox --list-full`
// prints them: bin/sh, usr/bin/nc, ...), a passwd with root and nobody, and
// sh as its command.
func Busybox(binary []byte, applets []string, p v1.Platform) (Spec, error) {
	if err := CheckStaticELF("busybox", binary, p); err != nil {
		return Spec{}, err
	}
	files := []File{
		{Path: "/bin/busybox", Data: binary, Mode: 0o755},
		{Path: "/etc/passwd", Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")},
		{Path: "/etc/group", Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "/tmp", Dir: true, Mode: 0o1777},
		{Path: "/root", Dir: true, Mode: 0o700},
	}
	seen := map[string]bool{"/bin/busybox": true}
	for _, a := range applets {
		a = "/" + strings.TrimPrefix(strings.TrimSpace(a), "/")
		if a == "/" || seen[a] {
			continue
		}
		seen[a] = true
		files = append(files, File{Path: a, Link: "/bin/busybox"})
	}
	if !seen["/bin/sh"] {
		return Spec{}, fmt.Errorf("busybox lists no sh applet")
	}
	return Spec{Platform: p, Files: files, Cmd: []string{"sh"}}, nil
}

// Pause is the pod sandbox image: busybox sleeping. The sandbox only holds
// the pod's namespaces; the container runtime stops it with SIGKILL.
func Pause(binary []byte, p v1.Platform) (Spec, error) {
	if err := CheckStaticELF("busybox", binary, p); err != nil {
		return Spec{}, err
	}
	return Spec{
		Platform:   p,
		Files:      []File{{Path: "/bin/busybox", Data: binary, Mode: 0o755}},
		Entrypoint: []string{"/bin/busybox", "sleep", "2147483647"},
	}, nil
}
