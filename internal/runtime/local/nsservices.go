//go:build linux

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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

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
	return dedupeEnv(append(minimalEnv(), append([]string{"HOME=/tmp", "TMPDIR=/tmp", "XDG_STATE_HOME="}, proxyEnv(proxyPort)...)...))
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
		argv := append([]string(nil), s.Command...)
		argv[0] = s.program(h.landlock)
		c, err := h.launch(s.Name, argv, serviceEnv(req, s, h.proxyPort), s.workDir(h.landlock), []*os.File{devnull, logF, logF}, "")
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

// workDir is where a service runs: its application directory, as the view
// shows it (inView) or as the host does; "/" without one.
func (s serviceSpec) workDir(inView bool) string {
	switch {
	case s.Dir == "":
		return "/"
	case inView:
		return appRoot + "/" + s.Name
	}
	return s.Dir
}

// program is the command's program as the view shows it: a relative path
// or one under the application directory moves with that directory.
func (s serviceSpec) program(inView bool) string {
	p := s.Command[0]
	switch {
	case !strings.Contains(p, "/"):
		return p // looked up in PATH
	case !filepath.IsAbs(p):
		return filepath.Join(s.workDir(inView), p)
	case s.Dir != "" && inView:
		if rel, err := filepath.Rel(s.Dir, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return filepath.Join(appRoot, s.Name, rel)
		}
	}
	return p
}

// serviceEnv is a service's whole environment: a small base taken from the
// provider (never its credentials), the gateway as proxy, the port, and the
// manifest's env last so it wins.
func serviceEnv(req *startRequest, s serviceSpec, proxyPort int) []string {
	env := append([]string(nil), req.BaseEnv...)
	// The view has no home directory and no state directory: home and
	// temporary files go to the private /tmp.
	env = append(env, "HOME=/tmp", "TMPDIR=/tmp", "XDG_STATE_HOME=")
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
	if h.pidNS {
		_ = syscall.Kill(-1, syscall.SIGKILL)
	} else {
		// Only the weakened sandbox (no PID namespace) gets here: kill(-1)
		// would reach the host's processes.
		for _, c := range svcs {
			_ = syscall.Kill(-c.pid, syscall.SIGKILL)
		}
	}
	for _, c := range svcs {
		select {
		case <-c.done:
		case <-time.After(2 * time.Second):
		}
	}
}
