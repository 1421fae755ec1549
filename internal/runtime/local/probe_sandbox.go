//go:build linux

package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// The probe's attempts on the sandbox, beside the network ones: each target
// is something on the host side that a service must not reach. They run in
// the probe process, inside the view, as the services would.

func sandboxAttempt(ctx context.Context, c Check) (probe.Outcome, string, bool) {
	switch c.Method {
	case "unix":
		conn, err := dialUnix(ctx, c.Target)
		if err != nil {
			return probe.Blocked, shortErr(err), true
		}
		conn.Close()
		return probe.Escape, "connected", true
	case "stat":
		return statAttempt(c.Target)
	case "read":
		b, err := os.ReadFile(c.Target)
		if err != nil {
			return probe.Blocked, shortErr(err), true
		}
		return probe.Escape, fmt.Sprintf("read %d bytes", len(b)), true
	case "write":
		f, err := os.OpenFile(c.Target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return probe.Blocked, shortErr(err), true
		}
		f.Close()
		// Left in place for the supervisor to look for on the host side: a
		// file that exists only inside the view is no way out.
		return probe.Escape, "created", true
	case "proc-root":
		return procRootAttempt(c.Target)
	case "kill":
		return killAttempt(c.Target)
	}
	return "", "", false
}

// statAttempt: the path is visible at all (readable or not).
func statAttempt(path string) (probe.Outcome, string, bool) {
	if _, err := os.Lstat(path); err != nil {
		return probe.Blocked, shortErr(err), true
	}
	if f, err := os.Open(path); err == nil {
		f.Close()
		return probe.Escape, "visible and readable", true
	}
	return probe.Escape, "visible (not readable)", true
}

// procRootAttempt looks for the host file path through the root of every
// process this probe can see: with a PID namespace and a fresh /proc, only
// the environment's own, whose root is the view.
func procRootAttempt(path string) (probe.Outcome, string, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return probe.Blocked, "no /proc: " + shortErr(err), true
	}
	seen := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		seen++
		if _, err := os.Lstat(filepath.Join("/proc", e.Name(), "root", path)); err == nil {
			return probe.Escape, "visible through /proc/" + e.Name() + "/root", true
		}
	}
	return probe.Blocked, fmt.Sprintf("not visible through the root of any of %d processes", seen), true
}

// killAttempt signals (signal 0: the permission check, nothing delivered)
// the process named "pid:starttime". A process that exists with that start
// time is the supervisor, visible from here: the PID namespace is missing.
func killAttempt(target string) (probe.Outcome, string, bool) {
	pidS, startS, _ := strings.Cut(target, ":")
	pid, err := strconv.Atoi(pidS)
	if err != nil || pid <= 1 {
		return probe.Failed, "bad target " + target, true
	}
	err = syscall.Kill(pid, 0)
	switch {
	case errors.Is(err, syscall.ESRCH):
		return probe.Blocked, "no such process here", true
	case err != nil && !errors.Is(err, syscall.EPERM):
		return probe.Blocked, shortErr(err), true
	}
	if start, serr := procStart(pid); serr == nil && strconv.FormatUint(start, 10) != startS {
		return probe.Blocked, "pid " + pidS + " here is another process", true
	}
	if err != nil {
		return probe.Escape, "the supervisor is visible (signalling it was not permitted)", true
	}
	return probe.Escape, "signalled the supervisor", true
}

// peerAttempt is the helper, PID 1 of the environment and the most
// privileged process in it, asking its own supervisor's control socket for
// an answer through the descriptor it keeps to the state directory: a peer
// inside the environment's namespaces, which the supervisor must refuse.
func (h *helper) peerAttempt() probe.Attempt {
	start := time.Now()
	a := probe.Attempt{Category: probe.Neighbour, Method: "control-peer", Target: "own control.sock (from the helper)"}
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", h.stateDir+"/"+fileControl)
	}}}
	resp, err := c.Get("http://supervisor/ping")
	if err != nil {
		a.Outcome, a.Detail = probe.Blocked, "refused: "+shortErr(err)
	} else {
		resp.Body.Close()
		a.Outcome, a.Detail = probe.Escape, fmt.Sprintf("the supervisor answered a peer inside the environment (%d)", resp.StatusCode)
	}
	a.Elapsed = time.Since(start)
	return a
}
