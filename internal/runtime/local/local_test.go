//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// testManifest runs the test binary itself as the web service (TestMain
// dispatches on AF_TEST_SERVICE).
func testManifest(t testing.TB, greeting string) *manifest.Manifest {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse([]byte(fmt.Sprintf(`name: shop
runtime: {provider: local}
services:
  web:
    command: [%q, "-test.run=^$"]
    dir: %q
    port: 8080
    web: true
    health: /healthz
    env: {AF_TEST_SERVICE: web, GREETING: %q}
egress:
  - host: api.mock.test
    mode: mock
    response: {status: 200, headers: {Content-Type: application/json}, body: '{"price": 42}'}
  - host: hooks.capture.test
    mode: capture
`, exe, filepath.Dir(exe), greeting)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testRuntime(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.StateBase == "" {
		opts.StateBase = filepath.Join(t.TempDir(), "state")
	}
	if opts.Probe.Public == nil {
		sock := hostSocket(t)
		opts.Probe = testProbe(sock)
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = 20 * time.Second
	}
	return New(opts)
}

func env(m *manifest.Manifest, name string) runtime.Environment {
	return runtime.Environment{Name: name, Manifest: m}
}

// get fetches through the router as a browser would: to 127.0.0.1:<port>
// with the environment's host name.
func get(t testing.TB, rawURL string) (int, []byte) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", "127.0.0.1:"+port)
		},
	}}
	resp, err := c.Get(rawURL)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// leftovers is what must be gone after Delete.
type leftovers struct {
	dir        string
	supervisor procID
	helper     procID
	router     string
}

func snapshot(t testing.TB, r *Runtime, key string) leftovers {
	t.Helper()
	k, err := runtime.ParseLocalID(key)
	if err != nil {
		t.Fatal(err)
	}
	l := leftovers{dir: r.StateDir(k)}
	if err := readJSON(filepath.Join(l.dir, fileSupervisor), &l.supervisor); err != nil {
		t.Fatal(err)
	}
	if err := readJSON(filepath.Join(l.dir, fileHelper), &l.helper); err != nil {
		t.Fatal(err)
	}
	var st stateFile
	if err := readJSON(filepath.Join(l.dir, fileState), &st); err == nil {
		l.router = st.RouterAddr
	}
	if !l.supervisor.Alive() || !l.helper.Alive() || l.helper.NetNS == "" || !netnsInUse(l.helper.NetNS) {
		t.Fatalf("environment not running as expected: %+v", l)
	}
	return l
}

func (l leftovers) assertGone(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(l.dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state directory %s still exists (%v)", l.dir, err)
	}
	if l.supervisor.Alive() {
		t.Errorf("supervisor %d still runs", l.supervisor.Pid)
	}
	if l.helper.Alive() {
		t.Errorf("namespace helper %d still runs", l.helper.Pid)
	}
	if netnsInUse(l.helper.NetNS) {
		t.Errorf("network namespace %s still in use", l.helper.NetNS)
	}
	if l.router != "" {
		if c, err := net.DialTimeout("tcp", l.router, time.Second); err == nil {
			c.Close()
			t.Errorf("router %s still listens", l.router)
		}
	}
}

func TestEnvironmentLifecycle(t *testing.T) {
	r := testRuntime(t, Options{})
	ctx := context.Background()
	e := env(testManifest(t, "hello"), "pr-1")
	if p := r.Planned(e); p.Ref.ID != "shop/pr-1" || p.Namespace != "shop/pr-1" || p.URLs != nil {
		t.Fatalf("Planned = %+v", p)
	}
	if err := r.Check(e); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	st, err := r.Create(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created in %s; containment %s in %s", time.Since(start).Round(time.Millisecond), st.Containment.Verdict, st.Containment.Duration.Round(time.Millisecond))
	left := snapshot(t, r, "shop/pr-1")
	t.Cleanup(func() { _ = r.Delete(context.Background(), runtime.Ref{ID: "shop/pr-1"}) })

	if st.Ref.ID != "shop/pr-1" || st.Namespace != "shop/pr-1" || st.Containment.Verdict != probe.Contained {
		t.Fatalf("state %+v", st)
	}
	u := st.URLs["web"]
	if !strings.HasPrefix(u, "http://web-pr-1.localhost:") {
		t.Fatalf("url %q", u)
	}
	if s := st.Services["web"]; !s.Running || s.Env["GREETING"] != "hello" || s.Replicas != 1 {
		t.Fatalf("service %+v", s)
	}

	// The service, through the router, through the gateway.
	code, body := get(t, u+"/")
	var rep serviceReport
	if err := json.Unmarshal(body, &rep); code != 200 || err != nil {
		t.Fatalf("GET %s: %d %s", u, code, body)
	}
	if rep.Greeting != "hello" || rep.MockStatus != 200 || rep.MockBody != `{"price": 42}` || rep.CaptureStatus != 202 {
		t.Fatalf("service report %+v", rep)
	}
	if rep.RefusedStatus != 403 || !strings.Contains(rep.RefusedBody, "AF-RUN-061 not-listed.test") {
		t.Fatalf("a host outside the catalogue was not refused: %d %q", rep.RefusedStatus, rep.RefusedBody)
	}
	if len(rep.Resolved) != 1 || rep.Resolved[0] != "127.0.0.1" || rep.ResolveErr != "" {
		t.Fatalf("DNS inside: %v %s", rep.Resolved, rep.ResolveErr)
	}
	// Confinement as the service sees it.
	if rep.CapEff != "0000000000000000" || rep.CapBnd != "0000000000000000" || rep.NoNewPrivs != "1" {
		t.Fatalf("service privileges: CapEff %s CapBnd %s NoNewPrivs %s", rep.CapEff, rep.CapBnd, rep.NoNewPrivs)
	}
	if len(rep.RunEntries) > 1 { // a file the resolver bind-mount may need, nothing of the host's /run
		t.Fatalf("/run is not hidden: %v", rep.RunEntries)
	}
	for _, kv := range rep.Env {
		if strings.HasPrefix(kv, helperEnv+"=") || strings.HasPrefix(kv, "AF_EXEC_") {
			t.Fatalf("helper variable leaked into the service: %s", kv)
		}
	}
	// The capture, without the credential.
	raw, err := os.ReadFile(filepath.Join(left.dir, fileCaptures))
	if err != nil {
		t.Fatal(err)
	}
	caps, err := egress.ReadCaptures(strings.NewReader(string(raw)))
	if err != nil || len(caps) != 1 || caps[0].Path != "/notify" || caps[0].Body != `{"order":42}` || strings.Contains(string(raw), "service-secret") {
		t.Fatalf("captures %v %v:\n%s", caps, err, raw)
	}
	// An unknown host on the router lists the services.
	if code, body := get(t, strings.Replace(u, "web-pr-1", "nope-pr-1", 1)); code != 404 || !strings.Contains(string(body), "web-pr-1.localhost") {
		t.Fatalf("unknown host: %d %s", code, body)
	}

	// Read: running; then kill the service and Read shows it.
	got, err := r.Read(ctx, runtime.Ref{ID: "shop/pr-1"})
	if err != nil || !got.Services["web"].Running || got.URLs["web"] != u || got.Containment.Verdict != probe.Contained {
		t.Fatalf("read: %+v %v", got, err)
	}
	rep2, err := r.status(ctx, left.dir)
	if err != nil || rep2.Services["web"].HostPid == 0 {
		t.Fatalf("status %+v %v", rep2, err)
	}
	if err := syscall.Kill(rep2.Services["web"].HostPid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err = r.Read(ctx, runtime.Ref{ID: "shop/pr-1"})
		if err != nil {
			t.Fatal(err)
		}
		if !got.Services["web"].Running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a killed service still reads as running")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Update: new env, services restart, same URL.
	st, err = r.Update(ctx, env(testManifest(t, "bonjour"), "pr-1"), runtime.Ref{ID: "shop/pr-1"})
	if err != nil {
		t.Fatal(err)
	}
	if st.URLs["web"] != u || !st.Services["web"].Running || st.Services["web"].Env["GREETING"] != "bonjour" {
		t.Fatalf("after update: %+v", st)
	}
	if _, body := get(t, u+"/"); !strings.Contains(string(body), `"greeting":"bonjour"`) {
		t.Fatalf("after update the service says %s", body)
	}
	if snap := snapshot(t, r, "shop/pr-1"); snap.helper != left.helper {
		t.Fatalf("update replaced the namespace: %+v → %+v", left.helper, snap.helper)
	}

	// A second Create of the same environment is refused.
	if _, err := r.Create(ctx, e); !hasCode(err, AlreadyRunning) {
		t.Fatalf("second create: %v", err)
	}

	// Delete leaves nothing; Read then says not found.
	if err := r.Delete(ctx, runtime.Ref{ID: "shop/pr-1"}); err != nil {
		t.Fatal(err)
	}
	left.assertGone(t)
	if _, err := r.Read(ctx, runtime.Ref{ID: "shop/pr-1"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
	if err := r.Delete(ctx, runtime.Ref{ID: "shop/pr-1"}); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func hasCode(err error, code refusal.Code) bool {
	for _, r := range refusal.All(err) {
		if r.Code == code {
			return true
		}
	}
	return false
}

// A dead supervisor reads as drift (nothing running), and Update starts the
// environment afresh.
func TestSupervisorGoneIsDriftAndUpdateRecreates(t *testing.T) {
	r := testRuntime(t, Options{})
	ctx := context.Background()
	e := env(testManifest(t, "hi"), "pr-2")
	if _, err := r.Create(ctx, e); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Delete(context.Background(), runtime.Ref{ID: "shop/pr-2"}) })
	left := snapshot(t, r, "shop/pr-2")
	left.supervisor.kill(0)
	for left.helper.Alive() {
		time.Sleep(20 * time.Millisecond) // the helper follows its supervisor
	}
	got, err := r.Read(ctx, runtime.Ref{ID: "shop/pr-2"})
	if err != nil || got.Services["web"].Running {
		t.Fatalf("read with the supervisor gone: %+v %v", got, err)
	}
	st, err := r.Update(ctx, e, runtime.Ref{ID: "shop/pr-2"})
	if err != nil || !st.Services["web"].Running || st.Containment.Verdict != probe.Contained {
		t.Fatalf("update: %+v %v", st, err)
	}
	if code, _ := get(t, st.URLs["web"]+"/healthz"); code != 200 {
		t.Fatalf("after recreate: %d", code)
	}
}

// Negative control (a) through the whole runtime: the namespace gets a way
// out before the probe; Create refuses with AF-RUN-043, no service starts,
// and nothing is left.
func TestCreateRefusesNamespaceWithWayOut(t *testing.T) {
	opts := Options{Probe: escapeProbe(), PrepareNamespace: wayOut(t)}
	r := testRuntime(t, opts)
	marker := filepath.Join(t.TempDir(), "started")
	m := testManifest(t, "x")
	m.Services[0].Command = []string{"/bin/sh", "-c", "touch " + marker + "; sleep 60"}
	m.Services[0].Health = ""
	_, err := r.Create(context.Background(), env(m, "pr-3"))
	if !hasCode(err, probe.Escaped) {
		t.Fatalf("create: %v", err)
	}
	t.Logf("%v", err)
	ref := refusal.All(err)[0]
	if !strings.Contains(ref.Detail, "198.51.100.2:80") || !strings.Contains(ref.Body(), "nothing is left") {
		t.Fatalf("refusal does not list the attempts or what was removed:\n%s", ref.Error())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a service started although the probe got out")
	}
	if _, err := os.Stat(r.StateDir(runtime.Key{App: "shop", Env: "pr-3"})); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state directory left: %v", err)
	}
	assertNoHelperProcesses(t, r.opts.StateBase)
}

// Negative control (b) through the whole runtime: the control cannot reach a
// gateway, so Create refuses with AF-RUN-044 and leaves nothing.
func TestCreateRefusesWhenControlFails(t *testing.T) {
	sock := hostSocket(t)
	p := testProbe(sock)
	p.ControlProxy = "http://127.0.0.1:9" // nothing inside the namespace answers there
	r := testRuntime(t, Options{Probe: p})
	_, err := r.Create(context.Background(), env(testManifest(t, "x"), "pr-4"))
	if !hasCode(err, probe.ControlFailed) {
		t.Fatalf("create: %v", err)
	}
	if _, err := os.Stat(r.StateDir(runtime.Key{App: "shop", Env: "pr-4"})); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state directory left: %v", err)
	}
	assertNoHelperProcesses(t, r.opts.StateBase)
}

// assertNoHelperProcesses: no process of ours still names this state base.
func assertNoHelperProcesses(t testing.TB, base string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), "AF_LOCAL_STATE="+base) {
			t.Errorf("process %s still runs for %s", e.Name(), base)
		}
	}
}

func TestServiceThatDiesIsNotReady(t *testing.T) {
	r := testRuntime(t, Options{})
	m := testManifest(t, "x")
	m.Services[0].Command = []string{"/bin/sh", "-c", "echo starting up; echo cannot bind >&2; exit 3"}
	_, err := r.Create(context.Background(), env(m, "pr-5"))
	if !hasCode(err, NotReady) || !strings.Contains(err.Error(), "exited with status 3") || !strings.Contains(err.Error(), "cannot bind") {
		t.Fatalf("create: %v", err)
	}
	if _, err := os.Stat(r.StateDir(runtime.Key{App: "shop", Env: "pr-5"})); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("state directory left: %v", err)
	}
}

func TestCheckRefusesMissingCommand(t *testing.T) {
	r := testRuntime(t, Options{WorkDir: t.TempDir()})
	m := testManifest(t, "x")
	m.Services[0].Command = []string{"./no-such-program"}
	err := r.Check(env(m, "pr-6"))
	if !hasCode(err, CommandNotFound) || !strings.Contains(err.Error(), "no-such-program") {
		t.Fatalf("check: %v", err)
	}
	if refusal.All(err)[0].Line == 0 {
		t.Errorf("the refusal does not point at the manifest: %v", err)
	}
}

func TestRootIsolationRunsServicesUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation root needs root")
	}
	r := testRuntime(t, Options{Isolation: IsolationRoot, WorkDir: "/"})
	m := testManifest(t, "x")
	m.Services[0].Command = []string{"/bin/sh", "-c", "id -u; grep -E '^Cap(Eff|Bnd)' /proc/self/status; touch /etc/af-test-must-fail && echo WROTE-ETC; echo done; exec sleep 60"}
	m.Services[0].Port, m.Services[0].Web, m.Services[0].Health = 0, false, ""
	st, err := r.Create(context.Background(), env(m, "pr-7"))
	if err != nil {
		t.Fatal(err)
	}
	left := snapshot(t, r, "shop/pr-7")
	defer func() {
		if err := r.Delete(context.Background(), runtime.Ref{ID: "shop/pr-7"}); err != nil {
			t.Error(err)
		}
		left.assertGone(t)
	}()
	if st.Containment.Verdict != probe.Contained {
		t.Fatalf("containment %s", st.Containment.Verdict)
	}
	var b []byte
	for range 200 {
		if b, _ = os.ReadFile(filepath.Join(left.dir, dirLogs, "web.log")); strings.Contains(string(b), "done") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(string(b), "65534\n") || !strings.Contains(string(b), "CapEff:\t0000000000000000") || strings.Contains(string(b), "WROTE-ETC") {
		t.Fatalf("service identity and rights:\n%s", b)
	}
}

// BenchmarkEnvironmentStart is Create to ready (namespace, gateway, router,
// probe, one web service answering its health check); Delete is outside the
// timing.
func BenchmarkEnvironmentStart(b *testing.B) {
	r := testRuntime(b, Options{})
	e := env(testManifest(b, "bench"), "bench")
	var probeTotal time.Duration
	n := 0
	for b.Loop() {
		st, err := r.Create(context.Background(), e)
		if err != nil {
			b.Fatal(err)
		}
		probeTotal += st.Containment.Duration
		n++
		b.StopTimer()
		if err := r.Delete(context.Background(), runtime.Ref{ID: "shop/bench"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(probeTotal.Milliseconds())/float64(n), "probe-ms/op")
}

// TestRootless runs the lifecycle and the clean probe again as an
// unprivileged user (nobody), from a copy of this test binary: the
// namespaces are then made through a user namespace with no privilege at all.
func TestRootless(t *testing.T) {
	if os.Getenv("AF_TEST_ROOTLESS_CHILD") != "" {
		t.Skip("already the unprivileged run")
	}
	if os.Geteuid() != 0 {
		// Not root: every other test in this package already ran rootless.
		t.Skip("already unprivileged")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "af-rootless-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o777); err != nil { // not subject to the umask
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin", "local.test")
	src, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run", "^(TestEnvironmentLifecycle|TestProbeCleanNamespaceIsContained|TestCreateRefusesWhenControlFails|TestHostileServiceFindsNoWayOut|TestWeakenedSandboxIsRefused)$", "-test.count=1", "-test.v")
	cmd.Dir = tmp
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp, "AF_TEST_ROOTLESS_CHILD=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", out)
	if err != nil || !strings.Contains(string(out), "--- PASS: TestEnvironmentLifecycle") || !strings.Contains(string(out), "--- PASS: TestHostileServiceFindsNoWayOut") {
		t.Fatalf("rootless run failed: %v", err)
	}
}

// markerPids are live processes whose environment holds marker.
func markerPids(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !strings.Contains(string(b), "\x00AF_TEST_MARKER="+marker+"\x00") {
			continue
		}
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, state, err := procStat(pid); err == nil && state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// Services that ignore SIGTERM, and a process that left its service's
// process group and session, still end with the environment: the helper is
// PID 1 of the environment's PID namespace.
func TestDeleteLeavesNothingBehindStubbornProcesses(t *testing.T) {
	r := testRuntime(t, Options{})
	marker := fmt.Sprintf("stubborn-%d", time.Now().UnixNano())
	m := testManifest(t, "x")
	web := m.Services[0]
	web.Env = map[string]string{"AF_TEST_SERVICE": "web", "AF_TEST_MARKER": marker}
	m.Services = []manifest.Service{
		web,
		{Name: "deaf", Command: []string{"/bin/sh", "-c", `trap "" TERM; sleep 300`}, Env: map[string]string{"AF_TEST_MARKER": marker}},
		{Name: "daemon", Command: []string{"/bin/sh", "-c", "setsid sleep 300 & exec sleep 300"}, Env: map[string]string{"AF_TEST_MARKER": marker}},
	}
	if _, err := r.Create(context.Background(), env(m, "pr-8")); err != nil {
		t.Fatal(err)
	}
	left := snapshot(t, r, "shop/pr-8")
	var pids []int
	for range 100 {
		if pids = markerPids(marker); len(pids) >= 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(pids) < 5 {
		t.Fatalf("expected web, deaf (sh+sleep) and daemon (2 sleeps) processes, found %v", pids)
	}
	start := time.Now()
	if err := r.Delete(context.Background(), runtime.Ref{ID: "shop/pr-8"}); err != nil {
		t.Fatal(err)
	}
	t.Logf("delete took %s", time.Since(start).Round(time.Millisecond))
	left.assertGone(t)
	if pids := markerPids(marker); len(pids) > 0 {
		t.Fatalf("processes left behind: %v", pids)
	}
}

// A state directory deeper than a Unix socket path may be long (108 bytes)
// still works: sockets are reached relative to it or through /proc/self/fd.
func TestLongStateDirectory(t *testing.T) {
	base := filepath.Join(t.TempDir(), strings.Repeat("long-directory-name-", 6))
	r := testRuntime(t, Options{StateBase: base})
	ctx := context.Background()
	st, err := r.Create(ctx, env(testManifest(t, "far"), "pr-9"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(filepath.Join(r.StateDir(runtime.Key{App: "shop", Env: "pr-9"}), fileControl)); n <= 108 {
		t.Fatalf("the control socket path is only %d bytes", n)
	}
	left := snapshot(t, r, "shop/pr-9")
	if code, body := get(t, st.URLs["web"]+"/"); code != 200 || !strings.Contains(string(body), `"greeting":"far"`) {
		t.Fatalf("GET: %d %s", code, body)
	}
	if got, err := r.Read(ctx, runtime.Ref{ID: "shop/pr-9"}); err != nil || !got.Services["web"].Running {
		t.Fatalf("read: %+v %v", got, err)
	}
	if err := r.Delete(ctx, runtime.Ref{ID: "shop/pr-9"}); err != nil {
		t.Fatal(err)
	}
	left.assertGone(t)
}
