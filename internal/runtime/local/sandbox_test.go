//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// needRoot: the host-uid boundary exists only when the provider runs as
// root. Outside CI a non-root run skips; in CI (CI=true) it fails, since a
// skipped boundary test is no proof.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this boundary test needs root, and CI must run it")
	}
	t.Skip("needs root (the host-uid boundary exists only when the provider runs as root)")
}

// hostFiles are a root-only (0600) and a world-readable (0644) file in a
// directory anyone may enter under the host's /tmp.
func hostFiles(t *testing.T) (secret, public string) {
	dir, err := os.MkdirTemp("/tmp", "af-hostile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret, public = filepath.Join(dir, "secret"), filepath.Join(dir, "public")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(public, []byte("host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	return secret, public
}

// openWorkDir is a Terraform working directory anyone could write into, so
// that only the view keeps a service out of it.
func openWorkDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "af-workdir-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func hostileManifest(t *testing.T, vars map[string]string) *manifest.Manifest {
	m := testManifest(t, "x")
	m.Services[0].Env = map[string]string{"AF_TEST_SERVICE": "hostile"}
	for k, v := range vars {
		m.Services[0].Env[k] = v
	}
	return m
}

// The "done when" test: a hostile service, with real namespaces, real files
// and real sockets, finds every way out closed, and still answers through
// the router and reaches a mock host through the gateway.
func TestHostileServiceFindsNoWayOut(t *testing.T) {
	work := openWorkDir(t)
	r := testRuntime(t, Options{WorkDir: work})
	ctx := context.Background()

	// A neighbour under another state base (another XDG_STATE_HOME), running.
	nr := testRuntime(t, Options{WorkDir: work})
	ne := env(testManifest(t, "neighbour"), "pr-20")
	if _, err := nr.Create(ctx, ne); err != nil {
		t.Fatal(err)
	}
	nref := nr.Planned(ne).Ref
	t.Cleanup(func() { _ = nr.Delete(context.Background(), nref) })
	ndir := nr.StateDir(runtime.KeyOf(ne))
	var nsup procID
	if err := readJSON(filepath.Join(ndir, fileSupervisor), &nsup); err != nil {
		t.Fatal(err)
	}
	specBefore, err := os.ReadFile(filepath.Join(ndir, fileSpec))
	if err != nil {
		t.Fatal(err)
	}

	secret, public := hostFiles(t)
	sock := hostSocket(t)
	targets := map[string]string{
		"HOSTILE_SECRET": secret, "HOSTILE_PUBLIC": public, "HOSTILE_SOCKET": sock,
		"HOSTILE_NEIGHBOUR_SOCKET": filepath.Join(ndir, fileControl), "HOSTILE_NEIGHBOUR_SPEC": filepath.Join(ndir, fileSpec),
		"HOSTILE_NEIGHBOUR_PID": strconv.Itoa(nsup.Pid), "HOSTILE_NEIGHBOUR_START": strconv.FormatUint(nsup.Start, 10),
		"HOSTILE_WORKDIR": work,
	}
	// Negative control: the same attempts from this test process, on the
	// host, get through (POST /update with a body that is no specification is answered 400,
	// which is still an answer), so the service's failures below mean the
	// sandbox, not a broken attempt.
	for way, outcome := range hostileTries(func(k string) string { return targets[k] }) {
		if outcome != "" {
			t.Fatalf("from the host, %q should work but failed: %s", way, outcome)
		}
	}
	_ = os.Remove(filepath.Join(work, "hostile-was-here"))
	he := env(hostileManifest(t, targets), "pr-21")
	st, err := r.Create(ctx, he)
	if err != nil {
		t.Fatal(err)
	}
	href := r.Planned(he).Ref
	t.Cleanup(func() { _ = r.Delete(context.Background(), href) })
	logAttempts(t, st.Containment)

	code, body := get(t, st.URLs["web"]+"/")
	var rep hostileReport
	if err := json.Unmarshal(body, &rep); code != 200 || err != nil {
		t.Fatalf("GET through the router: %d %s", code, body)
	}
	if rep.MockStatus != 200 || rep.MockBody != `{"price": 42}` {
		t.Fatalf("the mock host through the gateway: %d %q", rep.MockStatus, rep.MockBody)
	}
	if len(rep.Tried) != 8 {
		t.Fatalf("the hostile service tried %d ways out, want 8: %v", len(rep.Tried), rep.Tried)
	}
	for way, outcome := range rep.Tried {
		if outcome == "" {
			t.Errorf("way out open: %s", way)
		} else {
			t.Logf("%-34s failed: %s", way, outcome)
		}
	}
	if !strings.Contains(rep.FillTmp, "no space left on device") {
		t.Errorf("writing past %s into /tmp inside: %q, want no space left on device", viewTmpSize, rep.FillTmp)
	}
	if !strings.Contains(rep.ListRoot, "permission denied") {
		t.Errorf("listing / inside: %q, want Landlock's permission denied", rep.ListRoot)
	}
	if os.Geteuid() == 0 && rep.UID != nobody {
		t.Errorf("the service runs as uid %d, want nobody (%d)", rep.UID, nobody)
	}
	if _, err := os.Stat(filepath.Join(work, "hostile-was-here")); err == nil {
		t.Error("the service wrote into the working directory")
	}
	if after, _ := os.ReadFile(filepath.Join(ndir, fileSpec)); string(after) != string(specBefore) {
		t.Error("the neighbour's specification changed")
	}
}

// The negative controls: each switch removes one boundary, and Create must
// refuse with AF-RUN-043, naming an escaped attempt of that boundary's
// category, and leave nothing behind.
func TestWeakenedSandboxIsRefused(t *testing.T) {
	cases := []struct {
		name, weaken, isolation string
		category                probe.Category
		root                    bool
	}{
		{"no private view", WeakenView, "", probe.Unix, false},
		{"no PID namespace", WeakenPIDNS, "", probe.Signal, false},
		{"control socket checks only the uid", WeakenPeer, "", probe.Neighbour, false},
		{"host uid", WeakenUID, "", probe.Filesystem, true},
		{"host uid, isolation root", WeakenUID, IsolationRoot, probe.Filesystem, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root {
				needRoot(t)
			}
			r := testRuntime(t, Options{WeakenForTest: c.weaken, Isolation: c.isolation, WorkDir: openWorkDir(t)})
			e := env(testManifest(t, "x"), "pr-30")
			_, err := r.Create(context.Background(), e)
			if !hasCode(err, probe.Escaped) {
				t.Fatalf("create with the %s switch: %v, want %s", c.weaken, err, probe.Escaped)
			}
			detail := refusal.All(err)[0].Detail
			caught := false
			for _, line := range strings.Split(detail, "\n") {
				if f := strings.Fields(line); len(f) >= 4 && f[0] == string(c.category) && strings.Contains(line, " "+string(probe.Escape)+" (") {
					caught = true
					t.Logf("caught: %s", strings.TrimSpace(line))
				}
			}
			if !caught {
				t.Fatalf("no %s attempt escaped:\n%s", c.category, detail)
			}
			if _, err := os.Stat(r.StateDir(runtime.KeyOf(e))); err == nil {
				t.Fatal("state directory left behind")
			}
			assertNoHelperProcesses(t, r.opts.StateBase)
		})
	}
}

// runControlDialer (the test binary as AF_TEST_SERVICE=dial) asks the
// control socket AF_TEST_SOCKET for /status and prints what came back.
func runControlDialer() {
	c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, os.Getenv("AF_TEST_SOCKET"))
	}}}
	resp, err := c.Get("http://supervisor/status")
	if err != nil {
		fmt.Println("refused:", err)
		return
	}
	resp.Body.Close()
	fmt.Println("answered:", resp.StatusCode)
}

// The control socket's peer check, with a real peer in real namespaces: a
// process with the supervisor's uid but in its own user, network and PID
// namespaces is refused; the supervisor's own namespaces are admitted; and
// the weakened check (uid only) lets the namespaced peer in, so the test can
// fail.
func TestControlSocketRefusesPeersInsideNamespaces(t *testing.T) {
	for _, uidOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("uid only %v", uidOnly), func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, fileControl)
			raw, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			var logs strings.Builder
			ln := &peerListener{Listener: raw, log: newTestLogger(&logs), uidOnly: uidOnly}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "status") })}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { srv.Close() })

			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			dial := func(sys *syscall.SysProcAttr) string {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(minimalEnv(), "AF_TEST_SERVICE=dial", "AF_TEST_SOCKET="+sock)
				cmd.SysProcAttr = sys
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("dialer: %v\n%s", err, out)
				}
				return strings.TrimSpace(string(out))
			}
			if got := dial(nil); !strings.HasPrefix(got, "answered") {
				t.Fatalf("a peer in the supervisor's namespaces: %s", got)
			}
			inside := cloneAttr(IsolationUserNS, "")
			inside.Cloneflags &^= syscall.CLONE_NEWNS
			got := dial(inside)
			t.Logf("peer in its own user+net+pid namespaces: %s; log: %s", got, strings.TrimSpace(logs.String()))
			switch {
			case !uidOnly && !strings.HasPrefix(got, "refused"):
				t.Fatalf("a peer inside other namespaces was answered: %s", got)
			case uidOnly && !strings.HasPrefix(got, "answered"):
				t.Fatalf("the weakened check (uid only) refused the peer, so this test could not fail: %s", got)
			}
		})
	}
}

func newTestLogger(w *strings.Builder) *log.Logger { return log.New(w, "", 0) }

// Input the manifest reader refuses at plan (AF-MAN-010), handed to the
// runtime directly: the supervisor answers with a refusal and cleans up; it
// never panics or vanishes.
func TestSupervisorRefusesBadInputWithoutPanic(t *testing.T) {
	cases := map[string]func(m *manifest.Manifest){
		"control characters in health": func(m *manifest.Manifest) { m.Services[0].Health = "/healthz\r\nX-Evil: 1" },
		"NUL in env":                   func(m *manifest.Manifest) { m.Services[0].Env["BAD"] = "a\x00b" },
		"NUL in command":               func(m *manifest.Manifest) { m.Services[0].Command = append(m.Services[0].Command, "a\x00b") },
	}
	r := testRuntime(t, Options{ReadyTimeout: 2 * time.Second})
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := testManifest(t, "x")
			mutate(m)
			e := env(m, "pr-40")
			_, err := r.Create(context.Background(), e)
			if !hasCode(err, StartFailed) && !hasCode(err, NotReady) {
				t.Fatalf("create: %v, want %s or %s", err, StartFailed, NotReady)
			}
			if strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "reported nothing") || strings.Contains(err.Error(), "no report") {
				t.Fatalf("the supervisor did not answer cleanly: %v", err)
			}
			t.Logf("%s", refusal.All(err)[0].Summary)
			if _, err := os.Stat(r.StateDir(runtime.KeyOf(e))); err == nil {
				t.Fatal("state directory left behind")
			}
		})
	}
}

// Check refuses at plan what the view would not show a service, or a dir
// that would show it the working directory or the state.
func TestCheckRefusesWhatTheViewCannotShow(t *testing.T) {
	work := openWorkDir(t)
	app := filepath.Join(work, "app")
	if err := os.Mkdir(app, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "outside"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := testRuntime(t, Options{WorkDir: work, StateBase: filepath.Join(work, "app", "state")})
	cases := []struct {
		name    string
		command []string
		dir     string
		want    refusal.Code
	}{
		{"program in dir", []string{"./server"}, "app", ""},
		{"absolute program in dir", []string{filepath.Join(app, "server")}, app, ""},
		{"system program from PATH", []string{"sh", "-c", "true"}, "", ""},
		{"relative program without dir", []string{"./server"}, "", CommandNotFound},
		{"program outside the view", []string{filepath.Join(work, "outside")}, "app", CommandNotFound},
		{"dir is the working directory", []string{"./app/server"}, ".", BadDir},
		{"dir contains the state", []string{"./server"}, "app", BadDir},
		{"dir missing", []string{"./server"}, "nope", BadDir},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rt := r
			if c.name != "dir contains the state" {
				rt = testRuntime(t, Options{WorkDir: work})
			}
			m := testManifest(t, "x")
			m.Services[0].Command, m.Services[0].Dir = c.command, c.dir
			err := rt.Check(env(m, "pr-50"))
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && !hasCode(err, c.want):
				t.Fatalf("got %v, want %s", err, c.want)
			case err != nil:
				t.Logf("%s", refusal.All(err)[0].Summary)
			}
		})
	}
}
