//go:build linux

package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// helper is the namespace's PID 1: it reaps, runs the probe and the services,
// and bridges the services' ports out to Unix sockets.
type helper struct {
	isolation string
	share     string // path to the shared directory, valid after hiding
	stateDir  string // path to the environment's state directory (share's parent), valid after hiding
	proxyPort int
	exe       string // the provider binary, inside the view once entered
	dropUID   bool   // the shim makes children nobody
	landlock  bool   // the shim restricts children with Landlock
	pidNS     bool   // the helper is PID 1 of its own PID namespace

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
	h := &helper{isolation: os.Getenv("AF_NS_ISOLATION"), exe: exe, children: map[int]*child{}, pidNS: os.Getpid() == 1}
	go h.reap()

	var view viewConfig
	if err := json.Unmarshal([]byte(os.Getenv("AF_NS_VIEW")), &view); err != nil {
		_ = enc.Encode(nsResponse{Error: "helper: unreadable view: " + err.Error()})
		return 1
	}
	notes, err := h.setup(os.Getenv("AF_NS_SHARE"), view)
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
		case "peer":
			resp.Attempts = []probe.Attempt{h.peerAttempt()}
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
// the private view built and entered, the resolver pointed at the gateway,
// the proxy bridge.
func (h *helper) setup(share string, view viewConfig) ([]string, error) {
	var notes []string
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("making mounts private: %w", err)
	}
	if err := loUp(); err != nil {
		return nil, fmt.Errorf("bringing lo up: %w", err)
	}
	// The helper keeps its way to its own state directory as descriptors,
	// opened before the pivot; none of its children inherits them.
	fd, err := unix.Open(share, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", share, err)
	}
	h.share = fmt.Sprintf("/proc/self/fd/%d", fd)
	if fd, err = unix.Open(filepath.Dir(share), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("opening %s: %w", filepath.Dir(share), err)
	}
	h.stateDir = fmt.Sprintf("/proc/self/fd/%d", fd)
	h.dropUID = view.Weaken != WeakenUID && hostRoot()
	if view.Weaken == WeakenView {
		// The weakened sandbox: the host's filesystem, a fresh /proc.
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			notes = append(notes, "kept the host's /proc: "+err.Error())
		}
		if err := pointResolverIn("", share+"/resolv.conf"); err != nil {
			notes = append(notes, "services keep the host's resolver configuration: "+err.Error())
		}
	} else {
		root := filepath.Join(share, "root")
		if err := os.MkdirAll(root, 0o700); err != nil {
			return nil, err
		}
		if err := buildView(root, h.exe, view); err != nil {
			return nil, fmt.Errorf("building the private view: %w", err)
		}
		if err := pointResolverIn(root, share+"/resolv.conf"); err != nil {
			return nil, fmt.Errorf("the resolver: %w", err)
		}
		if err := sealView(root); err != nil {
			return nil, fmt.Errorf("entering the private view: %w", err)
		}
		h.exe, h.landlock = viewExe, true
	}
	// Not dumpable: nothing inside may open the helper's /proc entries (its
	// descriptors lead to the state directory).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("dumpable: %w", err)
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

// hostRoot reports whether this process's user is host root: uid 0 here,
// mapped (if in a user namespace) from host uid 0.
func hostRoot() bool {
	if os.Getuid() != 0 {
		return false
	}
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true // no user namespaces at all: root is host root
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "0" {
			return f[1] == "0"
		}
	}
	return false
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
	env = append(env, helperEnv+"="+modeExec, shimIsolation+"="+h.isolation)
	if next != "" {
		env = append(env, shimNext+"="+next)
	}
	if h.dropUID {
		env = append(env, shimDropUID+"=1")
	}
	if h.landlock {
		env = append(env, shimLandlock+"=1")
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
