//go:build linux

package local

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// Check is one attempt the probe will make.
type Check struct {
	Category probe.Category `json:"category"`
	// Method: tcp, udp-dns, tcp-dns, dns-lookup, http (the control), or
	// one of the sandbox attempts (probe_sandbox.go).
	Method string `json:"method"`
	Target string `json:"target"`
}

// ProbeRequest is what a probe process is given.
type ProbeRequest struct {
	Checks  []Check       `json:"checks"`
	Timeout time.Duration `json:"timeout"`
}

// Defaults used when a ProbeOptions list is nil. Public targets are literal
// addresses, so that a DNS failure is never mistaken for a blocked connection.
var (
	DefaultPublic       = []string{"1.1.1.1:443", "8.8.8.8:443", "9.9.9.9:443", "208.67.222.222:80", "[2606:4700:4700::1111]:443"}
	DefaultResolvers    = []string{"1.1.1.1", "8.8.8.8"}
	DefaultResolvConf   = []string{"/etc/resolv.conf", "/run/systemd/resolve/resolv.conf"}
	DefaultHostPorts    = []int{22, 80, 443}
	DefaultMetadata     = []string{"169.254.169.254:80", "169.254.170.2:80", "[fd00:ec2::254]:80"}
	DefaultPublicName   = "example.com"
	DefaultProbeTimeout = 600 * time.Millisecond
)

// wellKnownSockets are host Unix sockets through which a process could get
// out without the network (a container engine runs a container on the host
// network; the system bus reaches the host's resolver and network manager).
func wellKnownSockets() []string {
	uid := strconv.Itoa(os.Getuid())
	list := []string{
		"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
		"/run/podman/podman.sock", "/run/dbus/system_bus_socket", "/var/run/dbus/system_bus_socket",
		"/run/systemd/resolve/io.systemd.Resolve", "/run/user/" + uid + "/bus",
		"/run/user/" + uid + "/docker.sock", "/run/user/" + uid + "/podman/podman.sock",
		"/tmp/.X11-unix/X0",
	}
	if home, err := os.UserHomeDir(); err == nil {
		list = append(list, filepath.Join(home, ".docker/run/docker.sock"), filepath.Join(home, ".docker/desktop/docker.sock"))
	}
	var out []string
	for _, p := range list {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			out = append(out, p)
		}
	}
	return out
}

// Checks resolves the options on this host into the attempts the probe makes,
// the positive control last. The control's target is ControlProxy; empty
// means the environment's own gateway, filled in once the namespace exists.
func (o ProbeOptions) Checks() []Check {
	var cs []Check
	add := func(cat probe.Category, method, target string) {
		cs = append(cs, Check{Category: cat, Method: method, Target: target})
	}
	for _, t := range orDefault(o.Public, DefaultPublic) {
		add(probe.Public, "tcp", t)
	}
	resolvers := o.Resolvers
	if resolvers == nil {
		resolvers = append(resolversFrom(orDefault(o.ResolvConf, DefaultResolvConf)), DefaultResolvers...)
	}
	for _, r := range dedupe(resolvers) {
		hp := net.JoinHostPort(r, "53")
		add(probe.Resolver, "udp-dns", hp)
		add(probe.Resolver, "tcp-dns", hp)
	}
	hosts := o.HostAddrs
	if hosts == nil {
		hosts = hostAddrs()
	}
	ports := o.HostPorts
	if ports == nil {
		ports = DefaultHostPorts
	}
	for _, h := range hosts {
		for _, p := range ports {
			add(probe.Host, "tcp", net.JoinHostPort(h, strconv.Itoa(p)))
		}
	}
	for _, t := range orDefault(o.Metadata, DefaultMetadata) {
		add(probe.Metadata, "tcp", t)
	}
	socks := o.UnixSockets
	if socks == nil {
		socks = wellKnownSockets()
	}
	for _, s := range socks {
		add(probe.Unix, "unix", s)
	}
	switch name := o.PublicName; name {
	case "-":
	case "":
		add(probe.PublicName, "dns-lookup", DefaultPublicName)
	default:
		add(probe.PublicName, "dns-lookup", name)
	}
	add(probe.Control, "http", o.ControlProxy)
	return cs
}

func (o ProbeOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultProbeTimeout
}

func orDefault(l, def []string) []string {
	if l == nil {
		return def
	}
	return l
}

func dedupe(l []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range l {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// resolversFrom reads nameserver lines, leaving out loopback resolvers (in the
// namespace they would be the namespace's own loopback, which proves nothing).
func resolversFrom(files []string) []string {
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 || fields[0] != "nameserver" {
				continue
			}
			a, err := netip.ParseAddr(fields[1])
			if err != nil || a.IsLoopback() || a.Zone() != "" {
				continue
			}
			out = append(out, a.String())
		}
	}
	return out
}

// hostAddrs are this host's addresses a namespace must not reach.
func hostAddrs() []string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr()
		if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsMulticast() {
			continue
		}
		out = append(out, ip.String())
	}
	return dedupe(out)
}

// RunChecks makes every attempt, in parallel, each bounded by timeout, and
// returns the attempts in the order of checks.
func RunChecks(ctx context.Context, req ProbeRequest) []probe.Attempt {
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	out := make([]probe.Attempt, len(req.Checks))
	var wg sync.WaitGroup
	for i, c := range req.Checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			outcome, detail := attempt(actx, c)
			out[i] = probe.Attempt{Category: c.Category, Method: c.Method, Target: c.Target, Outcome: outcome, Detail: detail, Elapsed: time.Since(start)}
		}()
	}
	wg.Wait()
	return out
}

func attempt(ctx context.Context, c Check) (probe.Outcome, string) {
	switch c.Method {
	case "tcp", "tcp-dns":
		return tcpAttempt(ctx, c.Target)
	case "udp-dns":
		return udpDNSAttempt(ctx, c.Target)
	case "dns-lookup":
		return lookupAttempt(ctx, c.Target)
	case "http":
		return controlAttempt(ctx, c.Target)
	}
	if outcome, detail, ok := sandboxAttempt(ctx, c); ok {
		return outcome, detail
	}
	return probe.Failed, "unknown method " + c.Method
}

// tcpAttempt judges as every runtime does (probe.Outcome): a connection is
// out; a refusal is blocked, like a timeout, because every target accepts
// when reachable and a REJECTing firewall answers with exactly a refusal.
func tcpAttempt(ctx context.Context, target string) (probe.Outcome, string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", target)
	if probe.TCPOutcome(err) == probe.Escape {
		conn.Close()
		return probe.Escape, "connected"
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return probe.Blocked, "connection refused"
	}
	return blockedBy(ctx, err)
}

func blockedBy(ctx context.Context, err error) (probe.Outcome, string) {
	switch {
	case errors.Is(err, syscall.ENETUNREACH):
		return probe.Blocked, "network unreachable"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return probe.Blocked, "host unreachable"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return probe.Blocked, "no source address"
	case ctx.Err() != nil || os.IsTimeout(err):
		return probe.Blocked, "no answer before the timeout"
	}
	return probe.Blocked, shortErr(err)
}

func shortErr(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	return err.Error()
}

// udpDNSAttempt sends a real query; any answer (or an ICMP port unreachable,
// which is a host answering) is out.
func udpDNSAttempt(ctx context.Context, target string) (probe.Outcome, string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", target)
	if err != nil {
		return blockedBy(ctx, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	q := new(dns.Msg).SetQuestion(dns.Fqdn(DefaultPublicName), dns.TypeA)
	dc := &dns.Conn{Conn: conn}
	if err := dc.WriteMsg(q); err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return probe.Escape, "port unreachable came back: a packet reached a host"
		}
		return blockedBy(ctx, err)
	}
	r, err := dc.ReadMsg()
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return probe.Escape, "port unreachable came back: a packet reached a host"
		}
		return blockedBy(ctx, err)
	}
	return probe.Escape, "answered (" + dns.RcodeToString[r.Rcode] + ")"
}

// lookupAttempt resolves a public name with the resolver configuration the
// services get. A locally answered name resolving to the gateway is not out.
func lookupAttempt(ctx context.Context, name string) (probe.Outcome, string) {
	r := &net.Resolver{PreferGo: true}
	addrs, err := r.LookupNetIP(ctx, "ip", name)
	if err != nil {
		var de *net.DNSError
		if errors.As(err, &de) && de.IsNotFound {
			return probe.Blocked, "not found (NXDOMAIN)"
		}
		return blockedBy(ctx, err)
	}
	strs := make([]string, len(addrs))
	local := true
	for i, a := range addrs {
		strs[i] = a.String()
		local = local && a.IsLoopback()
	}
	if !local {
		return probe.Escape, "resolved to " + strings.Join(strs, ", ")
	}
	return probe.Blocked, "answered locally by the gateway (" + strings.Join(strs, ", ") + ")"
}

// controlAttempt asks the gateway, through the proxy the services get, for
// its own control host.
func controlAttempt(ctx context.Context, proxy string) (probe.Outcome, string) {
	pu, err := url.Parse(proxy)
	if err != nil {
		return probe.Failed, err.Error()
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), DisableKeepAlives: true}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+egress.ControlHost+"/healthz", nil)
	resp, err := c.Do(req)
	if err != nil {
		return probe.Failed, "gateway not reached: " + shortErr(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(egress.HeaderGateway) != "control" {
		return probe.Failed, fmt.Sprintf("something answered but not the gateway (status %d)", resp.StatusCode)
	}
	return probe.Reached, "gateway answered through " + pu.Host
}

// runProbeProcess is the probe process: the request on stdin, one structured
// line per attempt on stdout (probe.Line).
func runProbeProcess() int {
	var req ProbeRequest
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "probe: unreadable request:", err)
		return 2
	}
	w := bufio.NewWriter(os.Stdout)
	for _, a := range RunChecks(context.Background(), req) {
		fmt.Fprintln(w, probe.Line(a))
	}
	if err := w.Flush(); err != nil {
		return 2
	}
	return 0
}
