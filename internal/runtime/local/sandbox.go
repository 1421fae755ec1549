//go:build linux

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The private filesystem view every service and the probe run in. The
// namespace helper builds it in its own mount namespace and pivots into it
// (as bubblewrap and nsjail do), so that no path inside leads back to the
// host's root:
//
//	/usr /bin /sbin /lib* /etc  the host's, read-only (nosuid, nodev)
//	/etc/resolv.conf            the gateway's DNS bridge on the namespace's loopback
//	/app/<service>              services.<name>.dir, read-only; the service's working directory
//	/tmp, /dev/shm              private, empty, writable (tmpfs of viewTmpSize each, gone with the environment)
//	/dev                        null zero full random urandom tty, and the fd links
//	/proc                       a fresh proc of the environment's PID namespace
//	/.antifailure/exe           the provider binary (the exec shim), read-only
//
// Nothing else: not the host's /tmp or /run, no home directory, not the
// Terraform working directory, no environment's state directory (its own
// included; the helper reaches its own through descriptors opened before
// the pivot). Landlock repeats the same list as a second layer.
const (
	appRoot    = "/app"
	afDir      = "/.antifailure"
	viewExe    = afDir + "/exe"
	viewCanary = afDir + "/canary"
)

// systemDirs are bound read-only; a missing one is skipped and a symlink
// (a merged /usr) is recreated as the same symlink.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"}

// devNodes are bound from the host's /dev.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// Weakenings: test-only switches, each removing one boundary, so that CI can
// show the probe catches a sandbox without it. Only Options.WeakenForTest
// sets one; nothing a user configures reaches it.
const (
	WeakenUID   = "uid"   // services keep the helper's user (host root when the provider runs as root)
	WeakenView  = "view"  // no private filesystem view (no pivot, no Landlock)
	WeakenPIDNS = "pidns" // no PID namespace: the host's /proc and processes
	WeakenPeer  = "peer"  // the control socket checks only the peer's uid
)

// viewConfig is what the helper needs to build the view.
type viewConfig struct {
	Apps   map[string]string `json:"apps,omitempty"` // service → host directory
	Canary bool              `json:"canary,omitempty"`
	Weaken string            `json:"weaken,omitempty"`
}

// canaryText is the content of the root-only canary inside the view.
const canaryText = "antifailure canary: a service that reads this runs with a host-privileged user\n"

// buildView constructs the new root under dir (an empty directory) from the
// host's filesystem, exe being the provider binary.
func buildView(dir, exe string, cfg viewConfig) error {
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=1m"); err != nil {
		return fmt.Errorf("root tmpfs: %w", err)
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
			continue
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, dir+d); err != nil {
				return err
			}
		case fi.IsDir():
			if err := bindRO(d, dir+d, true); err != nil {
				return err
			}
		}
	}
	for name, src := range cfg.Apps {
		if err := bindRO(src, filepath.Join(dir, appRoot, name), true); err != nil {
			return fmt.Errorf("services.%s.dir: %w", name, err)
		}
	}
	if err := tmpfsAt(dir+"/tmp", "mode=1777,size="+viewTmpSize); err != nil {
		return err
	}
	if err := buildDev(dir + "/dev"); err != nil {
		return err
	}
	if err := os.MkdirAll(dir+"/proc", 0o555); err != nil {
		return err
	}
	if cfg.Weaken == WeakenPIDNS {
		// Without a PID namespace a fresh proc cannot be mounted: the weakened
		// sandbox shows the host's.
		if err := unix.Mount("/proc", dir+"/proc", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("/proc: %w", err)
		}
	} else if err := unix.Mount("proc", dir+"/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("a fresh /proc: %w", err)
	}
	if err := bindFileRO(exe, dir+viewExe); err != nil {
		return fmt.Errorf("the provider binary: %w", err)
	}
	if cfg.Canary {
		// Owned by the helper's user, which is host root when the provider
		// runs as root: a service reading it runs with host privilege.
		if err := os.WriteFile(dir+viewCanary, []byte(canaryText), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// pointResolverIn binds src over the view's /etc/resolv.conf, following a
// symlink (to /run/systemd/...) inside the view.
func pointResolverIn(root, src string) error {
	target := "/etc/resolv.conf"
	for range 8 {
		l, err := os.Readlink(root + target)
		if err != nil {
			break
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(target), l)
		}
		target = filepath.Clean(l)
	}
	p := root + target
	if _, err := os.Stat(p); err != nil {
		if !strings.HasPrefix(target, "/run/") {
			return fmt.Errorf("/etc/resolv.conf leads to %s, which the view does not have", target)
		}
		if err := tmpfsAt(root+"/run", "mode=755"); err != nil && !errors.Is(err, unix.EBUSY) {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return err
		}
	}
	return unix.Mount(src, p, "", unix.MS_BIND, "")
}

// sealView makes the root and /dev read-only (their tmpfs held only mount
// points and links), then pivots into root and detaches the host's.
func sealView(root string) error {
	for _, d := range []string{root + "/dev", root} {
		if err := setAttr(d, unix.MOUNT_ATTR_RDONLY, false); err != nil {
			return fmt.Errorf("read-only %s: %w", d, err)
		}
	}
	if err := unix.Chdir(root); err != nil {
		return err
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's root: %w", err)
	}
	return unix.Chdir("/")
}

func bindRO(src, dst string, recursive bool) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(src, dst, "", flags, ""); err != nil {
		return fmt.Errorf("binding %s: %w", src, err)
	}
	return setAttr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, recursive)
}

func bindFileRO(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, nil, 0o555); err != nil {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return setAttr(dst, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, false)
}

// setAttr adds mount attributes (mount_setattr), to the whole tree when
// recursive, so that a mount below a read-only bind is read-only too.
func setAttr(path string, attr uint64, recursive bool) error {
	flags := 0
	if recursive {
		flags = unix.AT_RECURSIVE
	}
	return unix.MountSetattr(unix.AT_FDCWD, path, uint(flags), &unix.MountAttr{Attr_set: attr})
}

// viewTmpSize caps each of the view's writable tmpfs (/tmp, /dev/shm): a
// tmpfs without size= may take half the host's memory, and a preview's
// scratch space is no reason to let one environment starve the machine.
const viewTmpSize = "64m"

func tmpfsAt(dir, opts string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts)
}

// buildDev is a minimal /dev: a few host device nodes bound in, the fd links,
// a private /dev/shm.
func buildDev(dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
		if err := os.MkdirAll(dev, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=755,size=64k"); err != nil {
			return fmt.Errorf("/dev: %w", err)
		}
	}
	for _, n := range devNodes {
		if _, err := os.Stat("/dev/" + n); err != nil {
			continue
		}
		if err := os.WriteFile(dev+"/"+n, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+n, dev+"/"+n, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("/dev/%s: %w", n, err)
		}
	}
	links := map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}
	for name, target := range links {
		if err := os.Symlink(target, dev+"/"+name); err != nil {
			return err
		}
	}
	return tmpfsAt(dev+"/shm", "mode=1777,size="+viewTmpSize)
}
