//go:build linux

package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// The exec shim's settings, from the helper.
const (
	shimIsolation = "AF_EXEC_ISOLATION"
	shimNext      = "AF_EXEC_NEXT"
	shimDropUID   = "AF_EXEC_DROP_UID" // "1": become nobody (the helper's user is host root)
	shimLandlock  = "AF_EXEC_LANDLOCK" // "1": restrict the filesystem to the view's list
)

// nobody is who services and the probe run as whenever the helper's user is
// host root: never host uid 0.
const nobody = 65534

// runExecShim drops privilege and execs the command after "--": the services
// and the probe start this way, so they run under the same rules. Always:
// no_new_privs, an empty bounding set, no capabilities, and (where the kernel
// has it) Landlock limiting the filesystem to the view and scoping signals
// and abstract sockets to the environment. When the helper's user is host
// root (the provider runs as root): the user nobody, so owner bits protect
// the host's files too.
func runExecShim() int {
	goruntime.LockOSThread()
	args := os.Args
	i := 0
	for i < len(args) && args[i] != "--" {
		i++
	}
	if i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "exec shim: no command")
		return 127
	}
	argv := args[i+1:]
	next, dropUID, useLandlock := os.Getenv(shimNext), os.Getenv(shimDropUID) == "1", os.Getenv(shimLandlock) == "1"
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case helperEnv, shimIsolation, shimNext, shimDropUID, shimLandlock:
			continue
		}
		env = append(env, kv)
	}
	if err := dropPrivilege(dropUID); err != nil {
		fmt.Fprintln(os.Stderr, "exec shim: dropping privilege:", err)
		return 126
	}
	if useLandlock {
		if err := restrictLandlock(); err != nil {
			fmt.Fprintln(os.Stderr, "exec shim: landlock:", err)
			return 126
		}
	}
	if next == modeProbe && dropUID {
		// setuid changed every thread and Landlock restricts every thread:
		// run the probe right here (nobody may not be able to exec the binary).
		return runProbeProcess()
	}
	if next != "" {
		env = append(env, helperEnv+"="+next)
	}
	path, err := lookPath(argv[0], env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "antifailure: cannot start %q: %v\n", argv[0], err)
		return 127
	}
	err = syscall.Exec(path, argv, env)
	fmt.Fprintf(os.Stderr, "antifailure: cannot start %q: %v\n", argv[0], err)
	return 126
}

func dropPrivilege(dropUID bool) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	if dropUID {
		// Go's setuid changes every thread; leaving uid 0 clears every
		// capability (no securebits set, so the kernel's fixup applies).
		if err := syscall.Setgroups(nil); err != nil {
			return err
		}
		if err := syscall.Setgid(nobody); err != nil {
			return err
		}
		if err := syscall.Setuid(nobody); err != nil {
			return err
		}
	} else {
		const secbits = 0x2f // NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP, NO_SETUID_FIXUP_LOCKED, KEEP_CAPS_LOCKED
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
			return fmt.Errorf("securebits: %w", err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	var none [2]unix.CapUserData
	return unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0])
}

// restrictLandlock is the second layer behind the view: the same directories,
// read-only but for /tmp and /dev; signals and abstract Unix sockets only
// within the environment. Best effort: a kernel without Landlock keeps the
// view alone.
func restrictLandlock() error {
	ro := append(append([]string(nil), systemDirs...), appRoot, afDir, "/proc")
	cfg := landlock.V6.BestEffort()
	if err := cfg.RestrictPaths(
		landlock.RODirs(ro...).IgnoreIfMissing(),
		landlock.RWDirs("/tmp", "/dev").IgnoreIfMissing(),
	); err != nil {
		return err
	}
	return cfg.RestrictScoped()
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 63
	}
	var n int
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		return 63
	}
	return n
}

func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in PATH %q", path)
}
