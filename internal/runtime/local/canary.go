//go:build linux

package local

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// canaries are what the supervisor puts on the host side for the probe to
// try, for the length of one probe run: Unix sockets anyone may connect to
// (in the state base and in the host's /tmp), a file the invoking user can
// read in /tmp, the Terraform working directory to write into, every other
// environment's control socket and specification, and the supervisor itself
// to signal. A contained environment reaches none of them.
type canaries struct {
	checks []Check
	files  []string
	lns    []net.Listener
	write  string // the file the write attempt creates, looked for on the host afterwards
}

func (s *supervisor) openCanaries(spec envSpec) (*canaries, error) {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tag := hex.EncodeToString(rnd[:])
	c := &canaries{}
	add := func(cat probe.Category, method, target string) {
		c.checks = append(c.checks, Check{Category: cat, Method: method, Target: target})
	}
	tmpSock := "/tmp/af-canary-" + tag + ".sock"
	baseSock := filepath.Join(spec.StateBase, ".af-canary-"+tag+".sock")
	for _, p := range []string{tmpSock, baseSock} {
		// Listening through a path relative to the state directory keeps a
		// long state base within a socket address.
		at := p
		if rel, err := filepath.Rel(s.dir, p); err == nil && len(rel) < len(p) {
			at = rel
		}
		ln, err := net.Listen("unix", at)
		if err != nil {
			c.close()
			return nil, err
		}
		c.lns = append(c.lns, ln)
		c.files = append(c.files, p)
		_ = os.Chmod(at, 0o666) // only the view may stand in the way
		go acceptAndClose(ln)
		add(probe.Unix, "unix", p)
	}
	tmpFile := "/tmp/af-canary-" + tag
	if err := os.WriteFile(tmpFile, []byte("antifailure canary\n"), 0o600); err != nil {
		c.close()
		return nil, err
	}
	c.files = append(c.files, tmpFile)
	add(probe.Filesystem, "stat", tmpFile)
	add(probe.Filesystem, "stat", filepath.Join(s.dir, fileSpec))
	add(probe.Filesystem, "proc-root", tmpFile)
	if os.Getuid() == 0 {
		add(probe.Filesystem, "read", viewCanary)
	}
	if spec.Dir != "" {
		c.write = filepath.Join(spec.Dir, ".antifailure-probe-"+tag)
		add(probe.Filesystem, "write", c.write)
	}
	for _, n := range neighbours(spec.StateBase, s.dir) {
		add(probe.Neighbour, "unix", n)
		add(probe.Neighbour, "stat", filepath.Join(filepath.Dir(n), fileSpec))
	}
	add(probe.Signal, "kill", strconv.Itoa(os.Getpid())+":"+strconv.FormatUint(idOf(os.Getpid()).Start, 10))
	return c, nil
}

// judgeWrite corrects the write attempt: a file the probe created counts only
// if it is there on the host (otherwise it was the view's own /tmp).
func (c *canaries) judgeWrite(attempts []probe.Attempt) {
	for i, a := range attempts {
		if a.Method != "write" || a.Target != c.write || a.Outcome != probe.Escape {
			continue
		}
		if _, err := os.Lstat(c.write); errors.Is(err, fs.ErrNotExist) {
			attempts[i].Outcome, attempts[i].Detail = probe.Blocked, "created only inside the private view, not on the host"
		}
	}
}

func (c *canaries) close() {
	for _, ln := range c.lns {
		ln.Close()
	}
	for _, f := range c.files {
		_ = os.Remove(f)
	}
	if c.write != "" {
		_ = os.Remove(c.write)
	}
}

func acceptAndClose(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		conn.Close()
	}
}

// neighbours are the control sockets of the other environments under base.
func neighbours(base, own string) []string {
	var out []string
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && (p == own || strings.Count(strings.TrimPrefix(p, base), "/") > 3) {
			return filepath.SkipDir
		}
		if d.Name() == fileControl && d.Type()&fs.ModeSocket != 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}
