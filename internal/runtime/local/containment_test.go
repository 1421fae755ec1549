//go:build linux

package local

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// Every probe target in these tests is a TEST-NET address (RFC 5737,
// RFC 3849), reachable, if at all, only inside namespaces the test makes.
// From a clean namespace no packet is even sent: there is no route.

// testProbe is a probe configuration that names every list, so no default
// (real public) target is ever used. hidden is a directory the namespace
// covers, holding a Unix socket the probe tries.
func testProbe(hiddenSock string) ProbeOptions {
	socks := []string{}
	if hiddenSock != "" {
		socks = []string{hiddenSock}
	}
	return ProbeOptions{
		Public:      []string{"203.0.113.10:443", "198.51.100.10:80", "[2001:db8::10]:443"},
		Resolvers:   []string{"203.0.113.53"},
		ResolvConf:  []string{},
		HostAddrs:   []string{"203.0.113.2"},
		HostPorts:   []int{22, 80},
		Metadata:    []string{"203.0.113.254:80"},
		UnixSockets: socks,
		PublicName:  "example.com",
		Timeout:     600 * time.Millisecond,
	}
}

// hostSocket makes a listening Unix socket on the host that anyone may
// connect to, in a directory anyone may enter: a stand-in for docker.sock
// that only the private view keeps from the services.
func hostSocket(t testing.TB) string {
	dir, err := os.MkdirTemp("/tmp", "af-hostsock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "engine.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go acceptAndClose(ln)
	return sock
}

// testNamespace is a namespace with a gateway behind its share directory, as
// the supervisor makes it, driven directly by the test.
type testNamespace struct {
	*nsHandle
	share string
}

func startTestNamespace(t testing.TB, isolation string, withGateway bool, view viewConfig) *testNamespace {
	t.Helper()
	if goruntime.GOOS != "linux" {
		t.Fatalf("the local runtime's containment tests need Linux namespaces; this is %s", goruntime.GOOS)
	}
	share := t.TempDir()
	if withGateway {
		g, err := egress.New(egress.Config{Catalogue: []egress.Rule{{Host: "api.mock.test", Mode: manifest.ModeMock}}})
		if err != nil {
			t.Fatal(err)
		}
		l, err := egress.Listen(egress.Addrs{HTTP: []string{"unix:" + share + "/gw.sock"}, DNS: []string{"unix:" + share + "/dns.sock"}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- g.Serve(ctx, l) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h, err := startNamespace(nsConfig{Exe: exe, Isolation: isolation, Share: share, View: view, Log: openTestLog(t, share)})
	if err != nil {
		// Loud on purpose: a machine that cannot make namespaces cannot
		// prove containment, and these tests exist to prove it.
		t.Fatalf("cannot make a namespace (isolation %q): %v", isolation, err)
	}
	t.Cleanup(func() {
		h.Stop(context.Background())
		if netnsInUse(h.NetNS) {
			t.Errorf("network namespace %s still in use after Stop", h.NetNS)
		}
	})
	return &testNamespace{nsHandle: h, share: share}
}

func openTestLog(t testing.TB, dir string) *os.File {
	f, err := os.Create(filepath.Join(dir, "helper.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			t.Logf("helper log:\n%s", b)
		}
		f.Close()
	})
	return f
}

func probeReq(o ProbeOptions, proxyPort int) ProbeRequest {
	checks := o.Checks()
	for i, c := range checks {
		if c.Category == probe.Control && c.Target == "" {
			checks[i].Target = "http://127.0.0.1:" + strconv.Itoa(proxyPort)
		}
	}
	return ProbeRequest{Checks: checks, Timeout: o.timeout()}
}

func logAttempts(t testing.TB, r probe.Result) {
	t.Logf("verdict %s in %s", r.Verdict, r.Duration.Round(time.Millisecond))
	for _, a := range r.Attempts {
		t.Logf("  %s", a)
	}
}

// The positive test: a clean namespace is contained, every escape attempt
// blocked, the control reached, the verdict well under 2 s.
func TestProbeCleanNamespaceIsContained(t *testing.T) {
	sock := hostSocket(t)
	ns := startTestNamespace(t, "", true, viewConfig{})
	res, err := ns.Probe(context.Background(), probeReq(testProbe(sock), ns.ProxyPort))
	if err != nil {
		t.Fatal(err)
	}
	logAttempts(t, res)
	if res.Verdict != probe.Contained || res.Refusal("") != nil {
		t.Fatalf("verdict %s, want contained", res.Verdict)
	}
	methods := map[string]bool{}
	for _, a := range res.Attempts {
		methods[a.Method] = true
		if a.Category == probe.Control && a.Outcome != probe.Reached {
			t.Errorf("control: %s", a)
		}
	}
	for _, m := range []string{"tcp", "udp-dns", "tcp-dns", "dns-lookup", "unix", "http"} {
		if !methods[m] {
			t.Errorf("no %s attempt made", m)
		}
	}
	if res.Duration > 2*time.Second {
		t.Errorf("verdict took %s, goal < 2s", res.Duration)
	}
}

// A host Unix socket the view does not keep out is a way out, and the probe
// says so (the weakened sandbox: no private view).
func TestProbeCatchesReachableHostSocket(t *testing.T) {
	sock := hostSocket(t)
	ns := startTestNamespace(t, "", true, viewConfig{Weaken: WeakenView})
	res, err := ns.Probe(context.Background(), probeReq(testProbe(sock), ns.ProxyPort))
	if err != nil {
		t.Fatal(err)
	}
	logAttempts(t, res)
	if res.Verdict != probe.NotContained {
		t.Fatalf("verdict %s, want escaped", res.Verdict)
	}
}

// wayOut is negative control (a): a second namespace the test owns, with a
// veth pair whose far end (aftB, 198.51.100.2) has a TCP listener on :80 and
// a DNS responder on :53. The returned hook moves the near end into the
// environment's namespace (AF_NS_PID) with 198.51.100.1/24 and a default
// route through the far end.
func wayOut(t testing.TB) []string {
	t.Helper()
	var rnd [3]byte
	_, _ = rand.Read(rnd[:])
	name := "aftest-" + hex.EncodeToString(rnd[:])
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("ip", "netns", "add", name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	run("ip", "-n", name, "link", "add", "aftB", "type", "veth", "peer", "name", "aftA")
	run("ip", "-n", name, "addr", "add", "198.51.100.2/24", "dev", "aftB")
	run("ip", "-n", name, "link", "set", "aftB", "up")
	run("ip", "-n", name, "link", "set", "lo", "up")

	// Listeners inside the second namespace: this thread enters it and is
	// thrown away afterwards (the goroutine ends locked).
	ready := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		f, err := os.Open("/run/netns/" + name)
		if err != nil {
			ready <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ready <- err
			return
		}
		ln, err := net.Listen("tcp", "198.51.100.2:80")
		if err != nil {
			ready <- err
			return
		}
		pc, err := net.ListenPacket("udp", "198.51.100.2:53")
		if err != nil {
			ln.Close()
			ready <- err
			return
		}
		t.Cleanup(func() { ln.Close(); pc.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		go func() {
			_ = dns.ActivateAndServe(nil, pc, dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { _ = w.WriteMsg(new(dns.Msg).SetReply(r)) }))
		}()
		ready <- nil
	}()
	if err := <-ready; err != nil {
		t.Fatalf("listeners in %s: %v", name, err)
	}
	script := `set -e
ip -n ` + name + ` link set aftA netns "$AF_NS_PID"
nsenter --net=/proc/"$AF_NS_PID"/ns/net ip addr add 198.51.100.1/24 dev aftA
nsenter --net=/proc/"$AF_NS_PID"/ns/net ip link set aftA up
nsenter --net=/proc/"$AF_NS_PID"/ns/net ip route add default via 198.51.100.2`
	return []string{"sh", "-c", script}
}

// escapeProbe points the probe at the way out, next to targets that stay
// blocked (routed into the second namespace, which forwards nothing).
func escapeProbe() ProbeOptions {
	o := testProbe("")
	o.Public = []string{"198.51.100.2:80", "203.0.113.10:443"}
	o.Resolvers = []string{"198.51.100.2"}
	return o
}

// Negative control (a), at the namespace level, with real packets.
func TestProbeCatchesVethWayOut(t *testing.T) {
	hook := wayOut(t)
	ns := startTestNamespace(t, "", true, viewConfig{})
	cmd := exec.Command(hook[0], hook[1:]...)
	cmd.Env = append(os.Environ(), "AF_NS_PID="+strconv.Itoa(ns.Pid))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("giving the namespace a way out: %v\n%s", err, out)
	}
	res, err := ns.Probe(context.Background(), probeReq(escapeProbe(), ns.ProxyPort))
	if err != nil {
		t.Fatal(err)
	}
	logAttempts(t, res)
	ref := res.Refusal("")
	if res.Verdict != probe.NotContained || ref == nil || ref.Code != probe.Escaped {
		t.Fatalf("verdict %s, want escaped (AF-RUN-043)", res.Verdict)
	}
	escaped := map[string]bool{}
	for _, a := range res.Attempts {
		if a.Outcome == probe.Escape {
			escaped[a.Method+" "+a.Target] = true
		}
	}
	for _, want := range []string{"tcp 198.51.100.2:80", "udp-dns 198.51.100.2:53"} {
		if !escaped[want] {
			t.Errorf("%s not reported as escaped", want)
		}
	}
	if escaped["tcp 203.0.113.10:443"] {
		t.Errorf("a target the second namespace drops was reported as escaped")
	}
	// The refusal lists every attempt and its result.
	for _, a := range res.Attempts {
		if !strings.Contains(ref.Detail, a.Target) {
			t.Errorf("refusal detail does not list %s:\n%s", a.Target, ref.Detail)
		}
	}
	t.Logf("%s", ref.Error())
}

// Negative control (b): a gateway that cannot be reached fails the control,
// even though every escape attempt is blocked.
func TestProbeUnreachableGatewayFailsControl(t *testing.T) {
	ns := startTestNamespace(t, "", false, viewConfig{}) // nothing listens on gw.sock
	res, err := ns.Probe(context.Background(), probeReq(testProbe(""), ns.ProxyPort))
	if err != nil {
		t.Fatal(err)
	}
	logAttempts(t, res)
	ref := res.Refusal("")
	if res.Verdict != probe.ControlNotPassed || ref == nil || ref.Code != probe.ControlFailed {
		t.Fatalf("verdict %s, want control_failed (AF-RUN-044)", res.Verdict)
	}
}

// The same namespace made as root, for hosts without user namespaces.
func TestProbeRootIsolationIsContained(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("isolation root needs root")
	}
	ns := startTestNamespace(t, IsolationRoot, true, viewConfig{})
	if ns.Isolation != IsolationRoot {
		t.Fatalf("isolation %s", ns.Isolation)
	}
	res, err := ns.Probe(context.Background(), probeReq(testProbe(""), ns.ProxyPort))
	if err != nil {
		t.Fatal(err)
	}
	logAttempts(t, res)
	if res.Verdict != probe.Contained {
		t.Fatalf("verdict %s", res.Verdict)
	}
}

func TestChecksDefaults(t *testing.T) {
	dir := t.TempDir()
	rc := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(rc, []byte("nameserver 127.0.0.53\nnameserver 10.9.8.7\nnameserver fe80::1%eth0\nsearch x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := ProbeOptions{ResolvConf: []string{rc}, HostAddrs: []string{}, UnixSockets: []string{}}.Checks()
	got := map[string]bool{}
	for _, c := range cs {
		got[string(c.Category)+" "+c.Method+" "+c.Target] = true
	}
	for _, want := range []string{
		"public tcp 1.1.1.1:443", "resolver udp-dns 10.9.8.7:53", "resolver tcp-dns 10.9.8.7:53",
		"resolver udp-dns 8.8.8.8:53", "metadata tcp 169.254.169.254:80", "public-name dns-lookup example.com", "control http ",
	} {
		if !got[want] {
			t.Errorf("missing %q in %v", want, cs)
		}
	}
	if got["resolver udp-dns 127.0.0.53:53"] {
		t.Error("a loopback resolver was kept")
	}
	if cs[len(cs)-1].Category != probe.Control {
		t.Error("the control is not last")
	}
	for _, a := range hostAddrs() {
		if ip := net.ParseIP(a); ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
			t.Errorf("host address %q", a)
		}
	}
}

// BenchmarkProbe is one containment verdict in a ready namespace.
func BenchmarkProbe(b *testing.B) {
	ns := startTestNamespace(b, "", true, viewConfig{})
	req := probeReq(testProbe(""), ns.ProxyPort)
	var last probe.Result
	for b.Loop() {
		res, err := ns.Probe(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != probe.Contained {
			b.Fatalf("verdict %s", res.Verdict)
		}
		last = res
	}
	b.ReportMetric(float64(len(last.Attempts)), "attempts")
}
