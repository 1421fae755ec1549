package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// Isolation modes.
const (
	// IsolationUserNS: a user namespace owns the network, mount and PID
	// namespaces; nothing runs with privilege on the host (rootless).
	IsolationUserNS = "userns"
	// IsolationRoot: network, mount and PID namespaces made with root's
	// privilege, for hosts that forbid user namespaces; the probe and the
	// services run as an unprivileged user.
	IsolationRoot = "root"
)

// nsConfig is how to make one environment's namespace.
type nsConfig struct {
	Exe       string
	Isolation string   // "" tries IsolationUserNS, then (as root) IsolationRoot
	Share     string   // directory the namespace shares: gw.sock, dns.sock, resolv.conf, service sockets
	Hide      []string // directories covered with an empty tmpfs inside
	Log       *os.File // the helper's stdout and stderr
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
	Dir      string        `json:"dir"`
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

func cloneAttr(mode string) *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
		Pdeathsig:  syscall.SIGKILL,
	}
	if mode == IsolationUserNS {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
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
	hide, _ := json.Marshal(cfg.Hide)
	env := append(minimalEnv(), helperEnv+"="+modeNamespace, "AF_NS_SHARE="+cfg.Share, "AF_NS_HIDE="+string(hide), "AF_NS_ISOLATION="+mode)
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
			Env: env, Files: []*os.File{devnull, logF, logF, childF}, Sys: cloneAttr(mode),
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

// ---- inside the namespace ----

// helper is the namespace's PID 1: it reaps, runs the probe and the services,
// and bridges the services' ports out to Unix sockets.
type helper struct {
	isolation string
	share     string // path to the shared directory, valid after hiding
	stateDir  string // path to the environment's state directory (share's parent), valid after hiding
	proxyPort int
	exe       string

	mu        sync.Mutex
	children  map[int]*child
	services  []*child
	listeners []net.Listener
}

type child struct {
	name   string
	pid    int
	port   int
	done   chan struct{}
	status syscall.WaitStatus
}

func runNamespaceHelper() int {
	ctl := os.NewFile(3, "control")
	conn, err := net.FileConn(ctl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: no control socket:", err)
		return 2
	}
	ctl.Close()
	enc, dec := json.NewEncoder(conn), json.NewDecoder(conn)
	exe, _ := os.Executable()
	h := &helper{isolation: os.Getenv("AF_NS_ISOLATION"), exe: exe, children: map[int]*child{}}
	go h.reap()

	var hide []string
	_ = json.Unmarshal([]byte(os.Getenv("AF_NS_HIDE")), &hide)
	notes, err := h.setup(os.Getenv("AF_NS_SHARE"), hide)
	if err != nil {
		_ = enc.Encode(nsResponse{Error: err.Error()})
		return 1
	}
	_ = enc.Encode(nsResponse{Ready: &nsReady{ProxyPort: h.proxyPort, Notes: notes}})

	for {
		var req nsRequest
		if err := dec.Decode(&req); err != nil {
			// The supervisor is gone: nothing may outlive it.
			h.stopServices(2 * time.Second)
			return 0
		}
		var resp nsResponse
		switch req.Op {
		case "probe":
			resp = h.probe(req.Probe)
		case "start":
			if err := h.startServices(req.Start); err != nil {
				resp.Error = err.Error()
			}
		case "status":
			resp.Services = h.status()
		case "stop":
			h.stopServices(5 * time.Second)
			_ = enc.Encode(resp)
			return 0
		default:
			resp.Error = "unknown op " + req.Op
		}
		if err := enc.Encode(resp); err != nil {
			h.stopServices(2 * time.Second)
			return 0
		}
	}
}

// setup makes the namespace a place to run in: private mounts, loopback up,
// host sockets hidden, the resolver pointed at the gateway, the proxy bridge.
func (h *helper) setup(share string, hide []string) ([]string, error) {
	var notes []string
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("making mounts private: %w", err)
	}
	if err := loUp(); err != nil {
		return nil, fmt.Errorf("bringing lo up: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		notes = append(notes, "kept the host's /proc: "+err.Error())
	}
	fd, err := unix.Open(share, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", share, err)
	}
	h.share = fmt.Sprintf("/proc/self/fd/%d", fd)
	if fd, err = unix.Open(filepath.Dir(share), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("opening %s: %w", filepath.Dir(share), err)
	}
	h.stateDir = fmt.Sprintf("/proc/self/fd/%d", fd)
	resolvTarget, rerr := filepath.EvalSymlinks("/etc/resolv.conf")
	if rerr != nil {
		resolvTarget = "/etc/resolv.conf"
	}
	for _, d := range hide {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=755,size=16m"); err != nil {
			return nil, fmt.Errorf("hiding %s: %w", d, err)
		}
	}
	if err := h.pointResolver(resolvTarget); err != nil {
		notes = append(notes, "services keep the host's resolver configuration (unreachable from here): "+err.Error())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy bridge: %w", err)
	}
	h.proxyPort = ln.Addr().(*net.TCPAddr).Port
	go bridge(ln, func() (net.Conn, error) { return net.Dial("unix", h.share+"/gw.sock") })
	if err := h.dnsBridge(); err != nil {
		notes = append(notes, "no DNS inside: "+err.Error())
	}
	return notes, nil
}

func (h *helper) pointResolver(target string) error {
	if _, err := os.Stat(target); err != nil {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, nil, 0o644); err != nil {
			return err
		}
	}
	return unix.Mount(h.share+"/resolv.conf", target, "", unix.MS_BIND, "")
}

func loUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// bridge accepts on ln and splices each connection to a new one from dial.
func bridge(ln net.Listener, dial func() (net.Conn, error)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := dial()
			if err != nil {
				c.Close()
				return
			}
			egress.Splice(c, up)
		}()
	}
}

// dnsBridge answers 127.0.0.1:53 (UDP and TCP) by relaying to the gateway's
// DNS socket, which speaks TCP framing.
func (h *helper) dnsBridge() error {
	tl, err := net.Listen("tcp", "127.0.0.1:53")
	if err != nil {
		return err
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		tl.Close()
		return err
	}
	dial := func() (net.Conn, error) { return net.Dial("unix", h.share+"/dns.sock") }
	go bridge(tl, dial)
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := append([]byte(nil), buf[:n]...)
			go func() {
				c, err := dial()
				if err != nil {
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write(append([]byte{byte(len(q) >> 8), byte(len(q))}, q...)); err != nil {
					return
				}
				var l [2]byte
				if _, err := io.ReadFull(c, l[:]); err != nil {
					return
				}
				a := make([]byte, int(l[0])<<8|int(l[1]))
				if _, err := io.ReadFull(c, a); err != nil {
					return
				}
				_, _ = pc.WriteTo(a, from)
			}()
		}
	}()
	return nil
}

// reap is PID 1's duty: collect every child that exits, ours or orphaned.
func (h *helper) reap() {
	sig := make(chan os.Signal, 16)
	notifySIGCHLD(sig)
	for range sig {
		h.mu.Lock()
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
			if c := h.children[pid]; c != nil {
				c.status = ws
				delete(h.children, pid)
				close(c.done)
			}
		}
		h.mu.Unlock()
	}
}

// launch starts argv through the exec shim (which drops privilege first), in
// its own process group. Holding h.mu across the start keeps the reaper from
// collecting the child before it is registered.
func (h *helper) launch(name string, argv, env []string, dir string, files []*os.File, next string) (*child, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	env = append(env, helperEnv+"="+modeExec, "AF_EXEC_ISOLATION="+h.isolation)
	if next != "" {
		env = append(env, "AF_EXEC_NEXT="+next)
	}
	p, err := os.StartProcess(h.exe, append([]string{h.exe, "--"}, argv...), &os.ProcAttr{
		Dir: dir, Env: env, Files: files, Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		return nil, err
	}
	c := &child{name: name, pid: p.Pid, done: make(chan struct{})}
	h.children[p.Pid] = c
	_ = p.Release()
	return c, nil
}

func (h *helper) probe(req *ProbeRequest) nsResponse {
	if req == nil {
		return nsResponse{Error: "probe: no request"}
	}
	in, err := json.Marshal(req)
	if err != nil {
		return nsResponse{Error: err.Error()}
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nsResponse{Error: err.Error()}
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nsResponse{Error: err.Error()}
	}
	start := time.Now()
	c, err := h.launch("probe", []string{h.exe}, probeEnv(h.proxyPort), "/", []*os.File{stdinR, stdoutW, os.Stderr}, modeProbe)
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nsResponse{Error: "starting the probe: " + err.Error()}
	}
	_, _ = stdinW.Write(in)
	stdinW.Close()
	var out bytes.Buffer
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(&out, stdoutR); close(copied) }()
	limit := req.Timeout*3 + 10*time.Second
	select {
	case <-c.done:
	case <-time.After(limit):
		_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		<-c.done
	}
	<-copied
	stdoutR.Close()
	duration := time.Since(start)
	attempts, err := probe.ReadLines(&out)
	if err != nil {
		return nsResponse{Error: err.Error()}
	}
	if !c.status.Exited() || c.status.ExitStatus() != 0 {
		return nsResponse{Attempts: attempts, Duration: duration, Error: fmt.Sprintf("the probe process ended badly (%v)", describeExit(c.status))}
	}
	return nsResponse{Attempts: attempts, Duration: duration}
}

// probeEnv is the environment the probe runs with: the one a service gets,
// without the manifest's own variables.
func probeEnv(proxyPort int) []string {
	return append(minimalEnv(), proxyEnv(proxyPort)...)
}

func proxyEnv(port int) []string {
	p := fmt.Sprintf("http://127.0.0.1:%d", port)
	return []string{"HTTP_PROXY=" + p, "HTTPS_PROXY=" + p, "http_proxy=" + p, "https_proxy=" + p,
		"NO_PROXY=localhost,127.0.0.1,::1", "no_proxy=localhost,127.0.0.1,::1"}
}

func (h *helper) startServices(req *startRequest) error {
	if req == nil {
		return errors.New("start: no request")
	}
	h.stopServices(5 * time.Second)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	for _, s := range req.Services {
		if s.Port > 0 {
			sock := h.share + "/" + serviceSocket(s.Name)
			_ = os.Remove(sock)
			ln, err := net.Listen("unix", sock)
			if err != nil {
				return fmt.Errorf("service %s: socket: %w", s.Name, err)
			}
			h.mu.Lock()
			h.listeners = append(h.listeners, ln)
			h.mu.Unlock()
			addr := fmt.Sprintf("127.0.0.1:%d", s.Port)
			go bridge(ln, func() (net.Conn, error) { return net.DialTimeout("tcp", addr, 2*time.Second) })
		}
		logF, err := os.OpenFile(filepath.Join(h.stateDir, req.LogDir, s.Name+".log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("service %s: log: %w", s.Name, err)
		}
		c, err := h.launch(s.Name, s.Command, serviceEnv(req, s, h.proxyPort), req.Dir, []*os.File{devnull, logF, logF}, "")
		logF.Close()
		if err != nil {
			return fmt.Errorf("service %s: %w", s.Name, err)
		}
		c.port = s.Port
		h.mu.Lock()
		h.services = append(h.services, c)
		h.mu.Unlock()
	}
	return nil
}

func serviceSocket(name string) string { return "svc-" + name + ".sock" }

// serviceEnv is a service's whole environment: a small base taken from the
// provider (never its credentials), the gateway as proxy, the port, and the
// manifest's env last so it wins.
func serviceEnv(req *startRequest, s serviceSpec, proxyPort int) []string {
	env := append([]string(nil), req.BaseEnv...)
	env = append(env, proxyEnv(proxyPort)...)
	env = append(env, "AF_APP="+req.App, "AF_ENVIRONMENT="+req.Env, "AF_SERVICE="+s.Name)
	if s.Port > 0 {
		env = append(env, fmt.Sprintf("PORT=%d", s.Port))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		env = append(env, k+"="+s.Env[k])
	}
	return dedupeEnv(env)
}

// dedupeEnv keeps the last value of each variable.
func dedupeEnv(env []string) []string {
	idx := map[string]int{}
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if i, ok := idx[k]; ok {
			out[i] = kv
			continue
		}
		idx[k] = len(out)
		out = append(out, kv)
	}
	return out
}

func (h *helper) status() map[string]svcStatus {
	h.mu.Lock()
	svcs := append([]*child(nil), h.services...)
	h.mu.Unlock()
	out := map[string]svcStatus{}
	for _, c := range svcs {
		st := svcStatus{Pid: c.pid}
		select {
		case <-c.done:
			st.Exit = describeExit(c.status)
		default:
			st.Running = true
			if c.port > 0 {
				if conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.port), 200*time.Millisecond); err == nil {
					conn.Close()
					st.Listening = true
				}
			}
		}
		out[c.name] = st
	}
	return out
}

func describeExit(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("ended (%#x)", uint32(ws))
}

// stopServices asks every service's process group to end, waits up to grace,
// then kills everything left in the PID namespace but itself.
func (h *helper) stopServices(grace time.Duration) {
	h.mu.Lock()
	svcs := h.services
	h.services = nil
	for _, ln := range h.listeners {
		ln.Close()
	}
	h.listeners = nil
	h.mu.Unlock()
	for _, c := range svcs {
		_ = syscall.Kill(-c.pid, syscall.SIGTERM)
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for _, c := range svcs {
		select {
		case <-c.done:
		case <-ctx.Done():
		}
	}
	_ = syscall.Kill(-1, syscall.SIGKILL)
	for _, c := range svcs {
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
	}
}

// ---- the exec shim ----

// runExecShim drops privilege on this thread and execs the command after
// "--": the services and the probe start this way, so they run under the same
// rules. With a user namespace: no capabilities (bounding set emptied,
// securebits locked), so a service cannot undo a mount or change the
// network; as root: an unprivileged user. Both: no_new_privs.
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
	isolation, next := os.Getenv("AF_EXEC_ISOLATION"), os.Getenv("AF_EXEC_NEXT")
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == helperEnv || k == "AF_EXEC_ISOLATION" || k == "AF_EXEC_NEXT" {
			continue
		}
		env = append(env, kv)
	}
	if err := dropPrivilege(isolation); err != nil {
		fmt.Fprintln(os.Stderr, "exec shim: dropping privilege:", err)
		return 126
	}
	if next == modeProbe && isolation == IsolationRoot {
		// setuid changed every thread: run the probe right here (the binary
		// may not be readable by the unprivileged user).
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

func dropPrivilege(isolation string) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if isolation == IsolationRoot {
		uid, gid := unprivilegedIDs()
		if err := syscall.Setgroups(nil); err != nil {
			return err
		}
		if err := syscall.Setgid(gid); err != nil {
			return err
		}
		return syscall.Setuid(uid)
	}
	const secbits = 0x2f // NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP, NO_SETUID_FIXUP_LOCKED, KEEP_CAPS_LOCKED
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbits, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	for c := 0; c <= lastCap(); c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("bounding set: %w", err)
		}
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	var none [2]unix.CapUserData
	return unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &none[0])
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

// unprivilegedIDs is who services run as when the namespace was made as
// root: the user behind sudo, else nobody.
func unprivilegedIDs() (int, int) {
	var uid, gid int
	if _, err := fmt.Sscan(os.Getenv("SUDO_UID"), &uid); err == nil && uid > 0 {
		if _, err := fmt.Sscan(os.Getenv("SUDO_GID"), &gid); err == nil && gid > 0 {
			return uid, gid
		}
	}
	return 65534, 65534
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
