//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// Isolation modes.
const (
	// IsolationUserNS: a user namespace owns the network, mount and PID
	// namespaces. Made by a normal user, nothing runs with privilege on the
	// host (rootless); made by root, only the helper is host root, and
	// everything it starts runs as nobody.
	IsolationUserNS = "userns"
	// IsolationRoot: network, mount and PID namespaces made with root's
	// privilege, for hosts that forbid user namespaces; the probe and the
	// services run as an unprivileged user.
	IsolationRoot = "root"
)

// nsConfig is how to make one environment's namespace.
type nsConfig struct {
	Exe       string
	Isolation string     // "" tries IsolationUserNS, then (as root) IsolationRoot
	Share     string     // directory the namespace shares: gw.sock, dns.sock, resolv.conf, service sockets
	View      viewConfig // the services' private filesystem view
	Log       *os.File   // the helper's stdout and stderr
}

// nsHandle is the supervisor's end of a running namespace helper.
type nsHandle struct {
	Pid       int
	Isolation string
	ProxyPort int
	NetNS     string // "net:[inode]", to prove later that it is gone
	Notes     []string

	mu   sync.Mutex // one request at a time
	conn net.Conn
	enc  *json.Encoder
	dec  *json.Decoder
	done chan struct{} // closed when the helper has exited
}

// nsRequest is one request to the helper.
type nsRequest struct {
	Op    string        `json:"op"` // probe, start, status, stop
	Probe *ProbeRequest `json:"probe,omitempty"`
	Start *startRequest `json:"start,omitempty"`
}

type startRequest struct {
	App      string        `json:"app"`
	Env      string        `json:"env"`
	BaseEnv  []string      `json:"base_env"`
	LogDir   string        `json:"log_dir"` // relative to the state directory (share's parent)
	Services []serviceSpec `json:"services"`
}

// nsResponse is the helper's answer (or its first message, Ready).
type nsResponse struct {
	Error    string               `json:"error,omitempty"`
	Ready    *nsReady             `json:"ready,omitempty"`
	Attempts []probe.Attempt      `json:"attempts,omitempty"`
	Duration time.Duration        `json:"duration,omitempty"`
	Services map[string]svcStatus `json:"services,omitempty"`
}

type nsReady struct {
	ProxyPort int      `json:"proxy_port"`
	Notes     []string `json:"notes,omitempty"`
}

// svcStatus is one service as the helper sees it.
type svcStatus struct {
	Pid       int    `json:"pid"`      // in the environment's PID namespace
	HostPid   int    `json:"host_pid"` // filled in by the supervisor
	Running   bool   `json:"running"`
	Listening bool   `json:"listening,omitempty"`
	Exit      string `json:"exit,omitempty"`
}

// resolvConf is what the services resolve with: the gateway's DNS, through
// the helper's bridge on the namespace's own loopback.
const resolvConf = "# written by antifailure: names resolve through the environment's egress gateway\nnameserver 127.0.0.1\noptions ndots:1 timeout:1 attempts:2\n"

// spawnError is a namespace that could not be made at all.
type spawnError struct {
	mode string
	err  error
}

func (e *spawnError) Error() string { return e.mode + ": " + e.err.Error() }

// startNamespace makes the namespace and waits until the helper inside has
// loopback up, the hidden directories covered and its bridges listening.
func startNamespace(cfg nsConfig) (*nsHandle, error) {
	var errs []error
	for _, mode := range isolationModes(cfg.Isolation) {
		h, err := spawnHelper(cfg, mode)
		if err == nil {
			return h, nil
		}
		errs = append(errs, err)
		var se *spawnError
		if !errors.As(err, &se) {
			break // the namespace was made but failed inside: do not try weaker isolation
		}
	}
	return nil, errors.Join(errs...)
}

// isolationModes are the modes to try, strongest first: the forced one, or a
// user namespace and then, as root, root's own namespaces.
func isolationModes(forced string) []string {
	if forced != "" {
		return []string{forced}
	}
	if os.Geteuid() == 0 {
		return []string{IsolationUserNS, IsolationRoot}
	}
	return []string{IsolationUserNS}
}

// cloneAttr makes the helper's namespaces. With a user namespace made by a
// normal user, the helper and everything inside are that user (the kernel
// allows one mapping). Made by root, the namespace maps its root to host root
// for the helper alone and nobody to nobody: the exec shim turns every
// service and the probe into nobody, never host uid 0.
func cloneAttr(mode, weaken string) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	if weaken == WeakenPIDNS {
		attr.Cloneflags &^= syscall.CLONE_NEWPID
	}
	if mode == IsolationUserNS {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		uid, gid := os.Getuid(), os.Getgid()
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		if uid == 0 {
			attr.UidMappings = append(attr.UidMappings, syscall.SysProcIDMap{ContainerID: nobody, HostID: nobody, Size: 1})
			attr.GidMappings = append(attr.GidMappings, syscall.SysProcIDMap{ContainerID: nobody, HostID: nobody, Size: 1})
			attr.GidMappingsEnableSetgroups = true
		}
	}
	return attr
}

func spawnHelper(cfg nsConfig, mode string) (*nsHandle, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	parentF, childF := os.NewFile(uintptr(fds[0]), "helper-control"), os.NewFile(uintptr(fds[1]), "helper-control")
	defer parentF.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		childF.Close()
		return nil, err
	}
	defer devnull.Close()
	if err := os.WriteFile(filepath.Join(cfg.Share, "resolv.conf"), []byte(resolvConf), 0o644); err != nil {
		childF.Close()
		return nil, err
	}
	view, _ := json.Marshal(cfg.View)
	env := append(minimalEnv(), helperEnv+"="+modeNamespace, "AF_NS_SHARE="+cfg.Share, "AF_NS_VIEW="+string(view), "AF_NS_ISOLATION="+mode)
	logF := cfg.Log
	if logF == nil {
		logF = devnull
	}

	h := &nsHandle{Isolation: mode, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Pdeathsig follows the thread that forked, so this goroutine keeps
		// its thread for the helper's whole life.
		goruntime.LockOSThread()
		p, err := os.StartProcess(cfg.Exe, []string{cfg.Exe}, &os.ProcAttr{
			Env: env, Files: []*os.File{devnull, logF, logF, childF}, Sys: cloneAttr(mode, cfg.View.Weaken),
		})
		if err != nil {
			started <- &spawnError{mode, err}
			close(h.done)
			return
		}
		h.Pid = p.Pid
		started <- nil
		_, _ = p.Wait()
		close(h.done)
	}()
	err = <-started
	childF.Close()
	if err != nil {
		return nil, err
	}
	conn, err := net.FileConn(parentF)
	if err != nil {
		h.kill()
		return nil, err
	}
	h.conn, h.enc, h.dec = conn, json.NewEncoder(conn), json.NewDecoder(conn)
	h.NetNS, _ = os.Readlink(fmt.Sprintf("/proc/%d/ns/net", h.Pid))

	_ = conn.SetReadDeadline(time.Now().Add(15 * time.Second))
	var first nsResponse
	if err := h.dec.Decode(&first); err != nil {
		h.kill()
		return nil, fmt.Errorf("%s: the namespace helper did not report ready: %w%s", mode, err, logTail(cfg.Log))
	}
	_ = conn.SetReadDeadline(time.Time{})
	if first.Error != "" || first.Ready == nil {
		h.kill()
		return nil, fmt.Errorf("%s: setting up the namespace failed: %s", mode, first.Error)
	}
	h.ProxyPort, h.Notes = first.Ready.ProxyPort, first.Ready.Notes
	return h, nil
}

// logTail is the end of a log file, for error messages.
func logTail(f *os.File) string {
	if f == nil {
		return ""
	}
	b, err := os.ReadFile(f.Name())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return "\n" + strings.TrimSpace(string(b))
}

func (h *nsHandle) call(ctx context.Context, req nsRequest) (nsResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var resp nsResponse
	if dl, ok := ctx.Deadline(); ok {
		_ = h.conn.SetDeadline(dl)
		defer func() { _ = h.conn.SetDeadline(time.Time{}) }()
	}
	if err := h.enc.Encode(req); err != nil {
		return resp, fmt.Errorf("namespace helper: %w", err)
	}
	if err := h.dec.Decode(&resp); err != nil {
		return resp, fmt.Errorf("namespace helper: %w", err)
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}

// Probe runs the containment probe inside, the way a service would run.
func (h *nsHandle) Probe(ctx context.Context, req ProbeRequest) (probe.Result, error) {
	resp, err := h.call(ctx, nsRequest{Op: "probe", Probe: &req})
	if err != nil {
		return probe.Result{}, err
	}
	return probe.Judge(resp.Attempts, resp.Duration), nil
}

// Alive reports whether the helper still runs.
func (h *nsHandle) Alive() bool {
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// Stop stops the services and the helper and waits until the helper (and so
// the PID namespace, and with it every process inside) is gone.
func (h *nsHandle) Stop(ctx context.Context) {
	if h.Alive() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _ = h.call(sctx, nsRequest{Op: "stop"})
		cancel()
	}
	h.conn.Close()
	select {
	case <-h.done:
	case <-time.After(3 * time.Second):
		h.kill()
	}
}

func (h *nsHandle) kill() {
	if h.Pid > 0 {
		_ = syscall.Kill(h.Pid, syscall.SIGKILL)
	}
	if h.conn != nil {
		h.conn.Close()
	}
	<-h.done
}
