package kubernetes

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// busyboxPath makes a directory whose only commands are busybox applets, so
// that the script runs with exactly the tools of the default probe image.
func busyboxPath(t *testing.T, applets ...string) string {
	t.Helper()
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal("busybox is not installed (apt-get install busybox-static): the probe script must run under the shell it will really have")
	}
	dir := t.TempDir()
	for _, a := range applets {
		if err := os.Symlink(bb, filepath.Join(dir, a)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var probeApplets = []string{"sh", "nc", "nslookup", "wget", "timeout", "grep", "tr", "cut", "mkdir", "tail", "sleep", "cat", "echo"}

func startGateway(t *testing.T) (httpAddr, dnsAddr string) {
	t.Helper()
	l, err := egress.Listen(egress.Addrs{HTTP: []string{"127.0.0.1:0"}, DNS: []string{"127.0.0.1:0"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- egress.Serve(ctx, egress.Config{Environment: "probe-test", AnswerAddrs: []string{"127.0.0.1"}}, l)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("gateway: %v", err)
		}
	})
	return l.HTTP[0].Addr().String(), l.DNSPacket[0].LocalAddr().String()
}

// TestProbeScript_Busybox runs the generated script under busybox sh against
// local stand-ins for everything it tries: an open port (must read
// "escaped"), a closed one ("blocked"), a real egress gateway (the controls
// "reached"; its DNS answering counts as a resolver reached) and a silent UDP
// port (a resolver that does not answer is "blocked"). The tenant attempt
// aims at the open port too: another environment that answers is out.
func TestProbeScript_Busybox(t *testing.T) {
	path := busyboxPath(t, probeApplets...)
	gwHTTP, gwDNS := startGateway(t)

	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	go func() {
		for {
			c, err := open.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	closedL, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := closedL.Addr().String()
	closedL.Close()
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, openPort, _ := net.SplitHostPort(open.Addr().String())
	_, closedPort, _ := net.SplitHostPort(closed)

	plan := []plannedAttempt{
		{Attempt: probe.Attempt{Category: probe.Public, Method: "tcp", Target: open.Addr().String()}, fn: "try_tcp", args: []string{"127.0.0.1", openPort}},
		{Attempt: probe.Attempt{Category: probe.Public, Method: "tcp", Target: closed}, fn: "try_tcp", args: []string{"127.0.0.1", closedPort}},
		{Attempt: probe.Attempt{Category: probe.Resolver, Method: "udp-dns", Target: gwDNS}, fn: "try_dns", args: []string{gwDNS}},
		{Attempt: probe.Attempt{Category: probe.Resolver, Method: "udp-dns", Target: silent.LocalAddr().String()}, fn: "try_dns", args: []string{silent.LocalAddr().String()}},
		{Attempt: probe.Attempt{Category: probe.PublicName, Method: "dns-lookup", Target: "example.com"}, fn: "try_lookup", args: []string{"example.com", gwDNS}},
		{Attempt: probe.Attempt{Category: probe.Node, Method: "tcp", Target: HostIPTarget + ":" + openPort}, fn: "try_tcp", args: []string{"$HOST_IP", openPort}},
		{Attempt: probe.Attempt{Category: probe.Tenant, Method: "tcp", Target: open.Addr().String()}, fn: "try_tcp", args: []string{"127.0.0.1", openPort}},
		{Attempt: probe.Attempt{Category: probe.Control, Method: "http", Target: gwHTTP}, fn: "ctl_http", args: []string{gwHTTP}},
		{Attempt: probe.Attempt{Category: probe.Control, Method: "dns-lookup", Target: egress.ControlHost}, fn: "ctl_dns", args: []string{gwDNS}},
	}
	result := filepath.Join(t.TempDir(), "termination-log")
	cmd := exec.Command(filepath.Join(path, "sh"), "-c", probeScript(plan))
	cmd.Env = []string{
		"PATH=" + path, "AF_PROBE_WINDOW=2", "AF_PROBE_INTERVAL=1", "AF_PROBE_TIMEOUT=1",
		"AF_PROBE_NAME=example.com", "HOST_IP=127.0.0.1", "AF_PROBE_CANARY=127.0.0.1", "AF_PROBE_RESULT_FILE=" + result, "AF_PROBE_DIR=" + t.TempDir(),
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	t.Logf("script ran %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	logged, err := probe.ReadLines(strings.NewReader(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if rounds := len(logged) / len(plan); rounds < 2 || len(logged)%len(plan) != 0 {
		t.Errorf("log holds %d lines for %d attempts: want whole rounds, at least 2 over a 2s window", len(logged), len(plan))
	}
	raw, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) > 4096 {
		t.Errorf("termination message is %d bytes; the kubelet keeps 4096", len(raw))
	}
	summary, err := probe.ReadLines(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	want := []probe.Outcome{probe.Escape, probe.Blocked, probe.Escape, probe.Blocked, probe.Blocked, probe.Escape, probe.Escape, probe.Reached, probe.Reached}
	if len(summary) != len(want) {
		t.Fatalf("summary has %d attempts, want %d:\n%s", len(summary), len(want), raw)
	}
	for i, a := range summary {
		if a.Outcome != want[i] {
			t.Errorf("attempt %d %s: outcome %s, want %s", i, a, a.Outcome, want[i])
		}
		if a.Category != plan[i].Category || a.Method != plan[i].Method {
			t.Errorf("attempt %d is %s/%s, want %s/%s", i, a.Category, a.Method, plan[i].Category, plan[i].Method)
		}
	}
	// The same situations judged the same way as every runtime judges them
	// (probe.TCPOutcome, which the local runtime uses): the script's
	// outcome for the open and the closed port is what a Go dial gives.
	for _, i := range []int{0, 1} {
		c, err := net.DialTimeout("tcp", plan[i].Target, time.Second)
		if err == nil {
			c.Close()
		}
		if got := probe.TCPOutcome(err); got != summary[i].Outcome {
			t.Errorf("%s: the script says %s, the runtimes' rule says %s", plan[i].Target, summary[i].Outcome, got)
		}
	}
	if got := summary[5].Target; got != "127.0.0.1:"+openPort {
		t.Errorf("host attempt reports target %q, want the hostIP filled in", got)
	}
	if r := probe.Judge(summarize(logged), time.Since(start)); r.Verdict != probe.NotContained {
		t.Errorf("verdict from the log %s, want %s", r.Verdict, probe.NotContained)
	}
	if r := probe.Judge(summary, time.Since(start)); r.Verdict != probe.NotContained {
		t.Errorf("verdict from the termination message %s, want %s", r.Verdict, probe.NotContained)
	}
}

// TestProbeScript_MissingTool: an image without the tools reports nothing,
// which judges inconclusive (never contained).
func TestProbeScript_MissingTool(t *testing.T) {
	// dash, not busybox sh: busybox finds its own applets without PATH.
	path := busyboxPath(t, "nslookup", "wget", "timeout", "grep", "tr", "cut", "mkdir", "tail", "sleep", "cat") // no nc
	if err := os.Symlink("/bin/sh", filepath.Join(path, "sh")); err != nil {
		t.Fatal(err)
	}
	plan := Options{}.withDefaults().probePlan(probeTargets{gatewayIP: "127.0.0.1", apiServerIP: "10.0.0.1", publicName: "example.com"})
	cmd := exec.Command(filepath.Join(path, "sh"), "-c", probeScript(plan))
	cmd.Env = []string{"PATH=" + path, "AF_PROBE_WINDOW=1", "AF_PROBE_INTERVAL=1", "AF_PROBE_TIMEOUT=1", "AF_PROBE_NAME=example.com",
		"AF_PROBE_RESULT_FILE=" + filepath.Join(t.TempDir(), "r"), "AF_PROBE_DIR=" + t.TempDir()}
	out, _ := cmd.CombinedOutput()
	attempts, err := probe.ReadLines(strings.NewReader(string(out)))
	if err != nil || len(attempts) != 0 || !strings.Contains(string(out), "lacks nc") {
		t.Fatalf("want no attempts and a note about nc, got %d (%v):\n%s", len(attempts), err, out)
	}
	if r := probe.Judge(attempts, time.Second); r.Verdict != probe.Inconclusive {
		t.Errorf("verdict %s, want %s", r.Verdict, probe.Inconclusive)
	}
}

// TestProbeScript_Shape checks the generated plan and script without running
// them: literal-IP targets for every escape attempt, the controls last, the
// script valid for a POSIX sh, and a termination message that fits.
func TestProbeScript_Shape(t *testing.T) {
	o := Options{}.withDefaults()
	// The worst case: every optional target, the longest tenant addresses.
	tg := probeTargets{gatewayIP: "10.0.0.77", apiServerIP: "10.0.0.1", clusterDNS: "10.0.0.10", publicName: "example.com",
		tenants: []string{"10.0.0.21", "fd00:10:96:ffff:ffff:ffff:ffff:ffff", "10.0.0.23"}}
	plan := o.probePlan(tg)
	seen := map[probe.Category]bool{}
	for i, a := range plan {
		seen[a.Category] = true
		if a.Category == probe.Control {
			continue
		}
		if a.Method == "dns-lookup" {
			continue // a name lookup is the point of that attempt
		}
		host, _, err := net.SplitHostPort(strings.ReplaceAll(a.Target, HostIPTarget, "192.0.2.1"))
		if err != nil || net.ParseIP(host) == nil {
			t.Errorf("attempt %d %s: target is not a literal IP:port", i, a.Attempt)
		}
	}
	for _, c := range []probe.Category{probe.Public, probe.Resolver, probe.PublicName, probe.Metadata, probe.ControlPlane, probe.Node, probe.Tenant, probe.Canary, probe.Control} {
		if !seen[c] {
			t.Errorf("no attempt of category %s", c)
		}
	}
	if plan[len(plan)-1].Category != probe.Control {
		t.Error("the controls should come last")
	}
	for _, want := range []string{"1.1.1.1:443", "8.8.8.8:80", "8.8.8.8:53", "169.254.169.254:80", "10.0.0.1:443", "10.0.0.10:53", HostIPTarget + ":10250", "10.0.0.77:3128",
		"10.0.0.21:3128", "[fd00:10:96:ffff:ffff:ffff:ffff:ffff]:3128", "10.0.0.23:3128"} {
		found := false
		for _, a := range plan {
			found = found || a.Target == want
		}
		if !found {
			t.Errorf("no attempt at %s", want)
		}
	}
	script := probeScript(plan)
	cmd := exec.Command("sh", "-n")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sh -n: %v\n%s", err, out)
	}
	// The worst case of the termination message: every attempt's line with
	// a full detail must fit in the kubelet's 4096 bytes.
	var msg []string
	for _, a := range plan {
		a.Outcome, a.Detail, a.Elapsed = probe.Blocked, "r99 "+strings.Repeat("x", 48), 99*time.Second
		msg = append(msg, probe.Line(a.Attempt))
	}
	if n := len(strings.Join(msg, "\n")); n > 4000 {
		t.Errorf("termination message could be %d bytes", n)
	} else {
		t.Logf("worst-case termination message: %d bytes for %d attempts", n, len(plan))
	}
	if !strings.Contains(script, "  try_tcp a15 tenant tcp '10.0.0.21:3128' '10.0.0.21' '3128' &\n") {
		t.Errorf("the script lacks the first tenant attempt:\n%s", script)
	}

	// No other environment: no tenant attempt at all (not one reported as
	// blocked), everything else unchanged.
	tg.tenants = nil
	alone := o.probePlan(tg)
	if len(alone) != len(plan)-3 {
		t.Errorf("without tenants the plan has %d attempts, want %d", len(alone), len(plan)-3)
	}
	for _, a := range alone {
		if a.Category == probe.Tenant {
			t.Errorf("a tenant attempt without another environment: %s", a.Attempt)
		}
	}
}

func TestPickTenants(t *testing.T) {
	gw := func(ns, ip string) corev1.Service {
		return corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: GatewayName, Namespace: ns, Labels: map[string]string{LabelManagedBy: ManagedBy, LabelRole: RoleGateway}},
			Spec:       corev1.ServiceSpec{ClusterIP: ip},
		}
	}
	other := gw("af-shop-x", "10.0.0.9")
	other.Name = "web"
	unlabelled := gw("af-shop-y", "10.0.0.8")
	unlabelled.Labels = nil
	svcs := []corev1.Service{
		gw("af-shop-pr-3", "10.0.0.33"),
		gw("af-shop-me", "10.0.0.1"), // the environment being created (a predecessor still terminating)
		gw("af-shop-pr-1", "10.0.0.31"),
		gw("af-shop-pr-1", "10.0.0.99"), // one per namespace
		gw("af-shop-headless", "None"),
		gw("af-shop-none", ""),
		gw("kube-system", "10.0.0.7"), // not an environment's namespace
		other, unlabelled,
		gw("af-shop-pr-2", "fd00::32"),
		gw("af-shop-pr-4", "10.0.0.34"),
	}
	got := pickTenants(svcs, "af-shop-me")
	if want := []string{"10.0.0.31", "fd00::32", "10.0.0.33"}; !slices.Equal(got, want) {
		t.Errorf("pickTenants = %v, want %v", got, want)
	}
	if got := pickTenants(svcs[1:2], "af-shop-me"); len(got) != 0 {
		t.Errorf("only the environment itself: %v, want none", got)
	}
	if got := pickTenants(nil, "af-shop-me"); len(got) != 0 {
		t.Errorf("no Services: %v, want none", got)
	}
	if svcs[0].Namespace != "af-shop-pr-3" {
		t.Error("pickTenants reordered its argument")
	}
}

func TestSummarize(t *testing.T) {
	a := func(cat probe.Category, target string, o probe.Outcome) probe.Attempt {
		return probe.Attempt{Category: cat, Method: "tcp", Target: target, Outcome: o}
	}
	in := []probe.Attempt{
		a(probe.Public, "1.1.1.1:443", probe.Blocked), a(probe.Control, "gw", probe.Failed),
		a(probe.Public, "1.1.1.1:443", probe.Escape), a(probe.Control, "gw", probe.Reached),
		a(probe.Public, "1.1.1.1:443", probe.Blocked), a(probe.Control, "gw", probe.Failed),
		a(probe.Metadata, "169.254.169.254:80", probe.Blocked),
	}
	got := summarize(in)
	if len(got) != 3 || got[0].Outcome != probe.Escape || got[1].Outcome != probe.Reached || got[2].Outcome != probe.Blocked {
		t.Fatalf("summarize = %v", got)
	}
}

func TestParseRef(t *testing.T) {
	for id, ok := range map[string]bool{
		"eu-prod/shop/pr-1": true, "arn:aws:eks:eu-west-1:1:cluster/x/a/b": true,
		"nope": false, "eu-prod/af-shop-pr-1": false, "/a/b": false, "eu-prod/a/": false, "eu-prod/a/Not_A_Label": false,
	} {
		_, _, err := ParseRef(refOf(id))
		if (err == nil) != ok {
			t.Errorf("ParseRef(%q) err = %v, want ok=%v", id, err, ok)
		}
	}
	kctx, k, _ := ParseRef(refOf("arn:aws:eks:eu-west-1:1:cluster/x/a/b"))
	if kctx != "arn:aws:eks:eu-west-1:1:cluster/x" || k != (runtime.Key{App: "a", Env: "b"}) {
		t.Errorf("context %q key %v", kctx, k)
	}
}

// TestNamespaceFor: one namespace per pair, a DNS label within 63
// characters; the plain af-<app>-<env> only where no other pair can have it.
func TestNamespaceFor(t *testing.T) {
	long := strings.Repeat("a", 63)
	cases := map[runtime.Key]string{
		{App: "shop", Env: "pr-1"}:  "af-shop-pr-1",
		{App: "shop", Env: "pr-42"}: "af-shop-pr-42",
		{App: "tfshop", Env: "1"}:   "af-tfshop-1",
	}
	for k, want := range cases {
		if got := NamespaceFor(k); got != want {
			t.Errorf("NamespaceFor(%v) = %s, want %s", k, got, want)
		}
	}
	keys := []runtime.Key{
		{App: "shop", Env: "pr-1"}, {App: "shop-pr", Env: "1"}, {App: "shop-pr-1", Env: "x"}, {App: "shop", Env: "pr-1-x"},
		{App: long, Env: long}, {App: long, Env: long[:62] + "b"}, {App: "a", Env: long}, {App: "a-b", Env: "c"}, {App: "a", Env: "b-c"},
		// An env that ends the way hashed names end cannot take another
		// pair's hashed name.
		{App: "shop", Env: "pr-1-" + NamespaceFor(runtime.Key{App: "shop-pr", Env: "1"})[len("af-shop-pr-1-"):]},
	}
	seen := map[string]runtime.Key{}
	for _, k := range keys {
		ns := NamespaceFor(k)
		if !isDNSLabel(ns) || !strings.HasPrefix(ns, "af-") {
			t.Errorf("NamespaceFor(%v) = %q is not a DNS label starting af-", k, ns)
		}
		if other, dup := seen[ns]; dup {
			t.Errorf("%v and %v share namespace %s", k, other, ns)
		}
		seen[ns] = k
	}
	if a, b := NamespaceFor(runtime.Key{App: "shop-pr", Env: "1"}), "af-shop-pr-1"; !strings.HasPrefix(a, b+"-") || len(a) != len(b)+1+hashLen {
		t.Errorf("shop-pr/1 = %s, want %s-<hash>", a, b)
	}
}

func TestGatewayExcept(t *testing.T) {
	b := &builder{opts: Options{ClusterCIDRs: []string{"10.96.0.0/12", "203.0.113.0/24", "fd00:10::/64"}}.withDefaults()}
	v4, v6 := b.gatewayExcept()
	for _, want := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "10.96.0.0/12", "203.0.113.0/24"} {
		if !contains(v4, want) {
			t.Errorf("IPv4 except lacks %s: %v", want, v4)
		}
	}
	if !contains(v6, "fd00:10::/64") || !contains(v6, "fe80::/10") {
		t.Errorf("IPv6 except %v", v6)
	}
	if _, err := New(Kubeconfig{}, nil, Options{ClusterCIDRs: []string{"10.0.0.0/33"}}); err == nil {
		t.Error("a bad cluster CIDR was accepted")
	}
	if _, err := New(Kubeconfig{}, nil, Options{ProbePublicIPs: []string{"one.one.one.one"}}); err == nil {
		t.Error("a probe target that is a name was accepted")
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func refOf(id string) runtime.Ref { return runtime.Ref{ID: id} }

// TestCanaryRefusedOnlyByThePodsOwnEgress: the gateway's ingress admits the
// canary port from any source, and no egress rule of the services admits it,
// so a refused canary proves the connecting pod's own egress rules are in
// force. Were the gateway's ingress to admit it only from the services (as it
// once did), a new pod the enforcer had not programmed yet (not yet one of
// the services to the gateway's ingress) would see the canary refused and
// start counting while it could reach other tenants; were it to refuse it
// altogether (as before that), every pod would.
func TestCanaryRefusedOnlyByThePodsOwnEgress(t *testing.T) {
	m, err := manifest.Parse([]byte("name: shop\nruntime: {provider: kubernetes, domain: preview.example.com}\nservices: {web: {image: x, port: 8080, web: true}, worker: {image: x}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	b := &builder{opts: Options{}.withDefaults(), env: runtime.Environment{Name: "pr-1", Manifest: m}, namespace: "af-shop-pr-1"}
	admits := func(ports []networkingv1.NetworkPolicyPort) bool {
		return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.IntValue() == CanaryPort })
	}
	var ingressAdmitsAnySource, egressAdmits bool
	for _, np := range b.networkPolicies() {
		switch np.Spec.PodSelector.MatchLabels[LabelRole] {
		case RoleGateway:
			for _, r := range np.Spec.Ingress {
				ingressAdmitsAnySource = ingressAdmitsAnySource || (admits(r.Ports) && len(r.From) == 0)
			}
		case RoleService:
			for _, r := range np.Spec.Egress {
				egressAdmits = egressAdmits || admits(r.Ports)
			}
		}
	}
	if !ingressAdmitsAnySource {
		t.Error("the gateway's ingress does not admit the canary from any source: a refused canary would not prove the pod's own rules")
	}
	if egressAdmits {
		t.Error("an egress rule of the services admits the canary: a reached canary would not prove an escape")
	}
}
