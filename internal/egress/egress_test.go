package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// testCatalogue exercises every mode, a wildcard, and an exact entry that
// beats a wildcard.
func testConfig(t *testing.T) Config {
	return Config{
		Environment: "shop-pr-1",
		Catalogue: []Rule{
			{Host: "api.allowed.test", Mode: manifest.ModeAllow},
			{Host: "sandbox.pay.test", Mode: manifest.ModeSandbox},
			{Host: "evil.test", Mode: manifest.ModeBlock},
			{Host: "mock.test", Mode: manifest.ModeMock, Response: &Response{Status: 201, Headers: map[string]string{"X-Mocked": "yes", "Content-Type": "application/json"}, Body: `{"ok":true}`}},
			{Host: "plain-mock.test", Mode: manifest.ModeMock},
			{Host: "hooks.capture.test", Mode: manifest.ModeCapture},
			{Host: "synth.test", Mode: manifest.ModeSynth},
			{Host: "*.wild.test", Mode: manifest.ModeBlock},
			{Host: "ok.wild.test", Mode: manifest.ModeMock, Response: &Response{Body: "exact wins"}},
			{Host: "*.deep.wild.test", Mode: manifest.ModeSynth},
		},
		CaptureFile:  filepath.Join(t.TempDir(), "captures.jsonl"),
		CaptureLimit: 16,
	}
}

// upstream is a loopback server standing in for every forwarded host: the
// injected dialer sends every forwarded connection to it, so no test packet
// ever leaves loopback.
type upstream struct {
	srv   *httptest.Server
	dials chan string
}

func newUpstream(t *testing.T, tlsServer bool) *upstream {
	u := &upstream{dials: make(chan string, 16)}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s %s host=%s auth=%q proxy-auth=%q", r.Method, r.URL.Path, r.Host, r.Header.Get("Authorization"), r.Header.Get("Proxy-Authorization"))
	})
	if tlsServer {
		u.srv = httptest.NewTLSServer(h)
	} else {
		u.srv = httptest.NewServer(h)
	}
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	u.dials <- addr
	var d net.Dialer
	return d.DialContext(ctx, "tcp", u.srv.Listener.Addr().String())
}

func startGateway(t *testing.T, cfg Config, dial DialFunc) (*Gateway, string) {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.Dial = dial
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, Listeners{HTTP: []net.Listener{ln}}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return g, ln.Addr().String()
}

func proxyClient(gw string) *http.Client {
	pu, _ := url.Parse("http://" + gw)
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 5 * time.Second}
}

func do(t *testing.T, c *http.Client, method, u, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestHTTPModes(t *testing.T) {
	up := newUpstream(t, false)
	cfg := testConfig(t)
	_, gw := startGateway(t, cfg, up.dial)
	c := proxyClient(gw)

	t.Run("allow forwards for real", func(t *testing.T) {
		resp, body := do(t, c, "GET", "http://api.allowed.test/v1/x", "", map[string]string{"Authorization": "Bearer s3cret"})
		if resp.StatusCode != http.StatusOK || body != `upstream saw GET /v1/x host=api.allowed.test auth="Bearer s3cret" proxy-auth=""` {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if got := <-up.dials; got != "api.allowed.test:80" {
			t.Fatalf("dialed %q", got)
		}
	})
	t.Run("sandbox forwards for real", func(t *testing.T) {
		resp, body := do(t, c, "POST", "http://sandbox.pay.test/charge", "x", nil)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "upstream saw POST /charge host=sandbox.pay.test") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		<-up.dials
	})
	t.Run("block refuses naming the entry", func(t *testing.T) {
		resp, body := do(t, c, "GET", "http://evil.test/", "", nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `AF-RUN-060 evil.test is blocked by the egress catalogue entry "evil.test"`) {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
		if h := resp.Header.Get(HeaderGateway); h != "block; entry=evil.test" {
			t.Fatalf("header %q", h)
		}
	})
	t.Run("not in catalogue refuses naming the host", func(t *testing.T) {
		resp, body := do(t, c, "GET", "http://unknown.test/x", "", nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "AF-RUN-061 unknown.test is not in the egress catalogue") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("a literal IP is not in the catalogue", func(t *testing.T) {
		resp, body := do(t, c, "GET", "http://203.0.113.9/", "", nil)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "203.0.113.9 is not in the egress catalogue") {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("mock answers with the entry's response", func(t *testing.T) {
		resp, body := do(t, c, "POST", "http://mock.test/anything?q=1", "ignored", nil)
		if resp.StatusCode != http.StatusCreated || body != `{"ok":true}` || resp.Header.Get("X-Mocked") != "yes" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
		}
	})
	t.Run("mock without a response is 200 empty", func(t *testing.T) {
		resp, body := do(t, c, "GET", "http://plain-mock.test/", "", nil)
		if resp.StatusCode != http.StatusOK || body != "" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("synth is generated and deterministic", func(t *testing.T) {
		_, b1 := do(t, c, "PUT", "http://synth.test/orders/7?x=1", "hello", nil)
		_, b2 := do(t, c, "PUT", "http://synth.test/orders/7?x=1", "hello", nil)
		_, b3 := do(t, c, "PUT", "http://synth.test/orders/8?x=1", "hello", nil)
		var s synthetic
		if err := json.Unmarshal([]byte(b1), &s); err != nil {
			t.Fatal(err)
		}
		if b1 != b2 || b1 == b3 || !s.Synthetic || s.Method != http.MethodPut || s.Path != "/orders/7" || s.Host != "synth.test" || s.BodyBytes != 5 || s.Query["x"][0] != "1" || len(s.ID) != 16 {
			t.Fatalf("b1=%s b2=%s b3=%s", b1, b2, b3)
		}
	})
	t.Run("wildcards, exact beats wildcard, apex not covered", func(t *testing.T) {
		if resp, _ := do(t, c, http.MethodGet, "http://a.b.wild.test/", "", nil); resp.StatusCode != http.StatusForbidden || resp.Header.Get(HeaderGateway) != "block; entry=*.wild.test" {
			t.Fatalf("subdomain: %d %v", resp.StatusCode, resp.Header)
		}
		if resp, body := do(t, c, http.MethodGet, "http://OK.Wild.Test./", "", nil); resp.StatusCode != http.StatusOK || body != "exact wins" {
			t.Fatalf("exact: %d %q", resp.StatusCode, body)
		}
		if resp, _ := do(t, c, http.MethodGet, "http://x.deep.wild.test/", "", nil); resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderGateway) != "synth; entry=*.deep.wild.test" {
			t.Fatalf("longest wildcard: %d %v", resp.StatusCode, resp.Header)
		}
		if resp, body := do(t, c, http.MethodGet, "http://wild.test/", "", nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "AF-RUN-061") {
			t.Fatalf("apex: %d %q", resp.StatusCode, body)
		}
	})
	t.Run("control host answers", func(t *testing.T) {
		resp, body := do(t, c, "GET", "http://"+ControlHost+"/healthz", "", nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderGateway) != "control" || !strings.Contains(body, `"environment":"shop-pr-1"`) {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	})
	t.Run("origin-form request uses the Host header", func(t *testing.T) {
		plain := &http.Client{Timeout: 5 * time.Second}
		req, _ := http.NewRequest(http.MethodGet, "http://"+gw+"/direct", nil)
		req.Host = "mock.test"
		resp, err := plain.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || string(b) != `{"ok":true}` {
			t.Fatalf("got %d %q", resp.StatusCode, b)
		}
	})
	select {
	case d := <-up.dials:
		t.Fatalf("a locally answered or refused call was forwarded to %s", d)
	default:
	}
}

func TestCapture(t *testing.T) {
	cfg := testConfig(t)
	g, gw := startGateway(t, cfg, func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no forwarding in this test")
	})
	g.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	c := proxyClient(gw)
	resp, body := do(t, c, "POST", "http://hooks.capture.test/services/T1?a=b", "0123456789abcdefXYZ", map[string]string{
		"Authorization": "Bearer s3cret", "Cookie": "sid=1", "X-Api-Key": "k", "X-Github-Token": "t",
		"X-Stripe-Secret": "s", "Content-Type": "application/json", "X-Request-Id": "r-1",
	})
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(body, `"captured":true`) {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	do(t, c, "GET", "http://hooks.capture.test/bin", "", map[string]string{"Proxy-Authorization": "Basic x"})
	raw, err := os.ReadFile(cfg.CaptureFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), "sid=1") || strings.Contains(string(raw), "Basic x") {
		t.Fatalf("a credential reached the capture file:\n%s", raw)
	}
	caps, err := ReadCaptures(strings.NewReader(string(raw)))
	if err != nil || len(caps) != 2 {
		t.Fatalf("captures %v %v:\n%s", caps, err, raw)
	}
	c0 := caps[0]
	if c0.Method != http.MethodPost || c0.Host != "hooks.capture.test" || c0.Path != "/services/T1" || c0.Query != "a=b" || c0.Entry != "hooks.capture.test" {
		t.Fatalf("capture %+v", c0)
	}
	if c0.Body != "0123456789abcdef" || !c0.Truncated || c0.BodyBytes != 19 {
		t.Fatalf("body cap: %+v", c0)
	}
	if !reflect.DeepEqual(c0.Redacted, []string{"Authorization", "Cookie", "X-Api-Key", "X-Github-Token", "X-Stripe-Secret"}) {
		t.Fatalf("redacted %v", c0.Redacted)
	}
	if c0.Headers["X-Request-Id"][0] != "r-1" || c0.Headers["Content-Type"][0] != "application/json" {
		t.Fatalf("headers %v", c0.Headers)
	}
	if !c0.Time.Equal(g.Now()) {
		t.Fatalf("time %v", c0.Time)
	}
	if caps[1].Method != http.MethodGet || len(caps[1].Headers["Proxy-Authorization"]) != 0 {
		t.Fatalf("second capture %+v", caps[1])
	}
	if fi, _ := os.Stat(cfg.CaptureFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("capture file mode %v", fi.Mode())
	}
}

func TestConnect(t *testing.T) {
	up := newUpstream(t, true)
	_, gw := startGateway(t, testConfig(t), up.dial)
	c := proxyClient(gw)

	resp, body := do(t, c, "GET", "https://api.allowed.test/secure", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(body, "upstream saw GET /secure host=api.allowed.test") {
		t.Fatalf("tunnel: %d %q", resp.StatusCode, body)
	}
	if got := <-up.dials; got != "api.allowed.test:443" {
		t.Fatalf("dialed %q", got)
	}
	for host, want := range map[string]string{
		"mock.test":          "AF-RUN-062 mock.test is answered locally",
		"hooks.capture.test": "AF-RUN-062 hooks.capture.test is answered locally",
		"evil.test":          "AF-RUN-060",
		"unknown.test":       "AF-RUN-061",
	} {
		status, msg := rawConnect(t, gw, host+":443")
		if status != 403 || !strings.Contains(msg, want) {
			t.Errorf("CONNECT %s: %d %q, want 403 with %q", host, status, msg, want)
		}
	}
	select {
	case d := <-up.dials:
		t.Fatalf("a refused CONNECT was dialed to %s", d)
	default:
	}
}

func rawConnect(t *testing.T, gw, target string) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", gw, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestForwardFailureIsReported(t *testing.T) {
	_, gw := startGateway(t, testConfig(t), func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("dial refused by test")
	})
	resp, body := do(t, proxyClient(gw), "GET", "http://api.allowed.test/", "", nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "AF-RUN-063") || !strings.Contains(body, "dial refused by test") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
}

func TestPublicOnlyDialerRefusesInwardAddresses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = PublicOnlyDialer(context.Background(), "tcp", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "non-public address 127.0.0.1") {
		t.Fatalf("err = %v", err)
	}
	for a, want := range map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "100.64.0.1": false, "127.0.0.1": false, "::1": false, "fe80::1": false,
		"fd00::2": false, "0.0.0.0": false, "224.0.0.1": false, "::ffff:10.0.0.1": false,
	} {
		if got := Public(netip.MustParseAddr(a)); got != want {
			t.Errorf("Public(%s) = %v", a, got)
		}
	}
}

func TestDNS(t *testing.T) {
	// A fake upstream resolver on loopback, answering 198.51.100.7 for anything.
	upConn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 8)
	upSrv := &dns.Server{PacketConn: upConn, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		asked <- r.Question[0].Name
		m := new(dns.Msg).SetReply(r)
		rr, _ := dns.NewRR(r.Question[0].Name + " 60 IN A 198.51.100.7")
		m.Answer = append(m.Answer, rr)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = upSrv.ActivateAndServe() }()
	defer upConn.Close()

	for _, withUpstream := range []bool{false, true} {
		t.Run(fmt.Sprintf("upstream=%v", withUpstream), func(t *testing.T) {
			cfg := testConfig(t)
			cfg.AnswerAddrs = []string{"127.0.0.1", "::1"}
			if withUpstream {
				cfg.UpstreamDNS = upConn.LocalAddr().String()
			}
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			udp, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			tcp, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- g.Serve(ctx, Listeners{DNSPacket: []net.PacketConn{udp}, DNSStream: []net.Listener{tcp}})
			}()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()

			type want struct {
				rcode  int
				answer string
			}
			cases := map[string]want{
				"mock.test.":          {dns.RcodeSuccess, "127.0.0.1"},
				"HOOKS.capture.test.": {dns.RcodeSuccess, "127.0.0.1"},
				"x.deep.wild.test.":   {dns.RcodeSuccess, "127.0.0.1"},
				ControlHost + ".":     {dns.RcodeSuccess, "127.0.0.1"},
				"evil.test.":          {dns.RcodeNameError, ""},
				"a.wild.test.":        {dns.RcodeNameError, ""},
				"example.com.":        {dns.RcodeNameError, ""},
				"api.allowed.test.":   {dns.RcodeNameError, ""},
			}
			if withUpstream {
				cases["api.allowed.test."] = want{dns.RcodeSuccess, "198.51.100.7"}
			}
			for _, network := range []string{"udp", "tcp"} {
				addr := udp.LocalAddr().String()
				if network == "tcp" {
					addr = tcp.Addr().String()
				}
				for name, w := range cases {
					q := new(dns.Msg).SetQuestion(name, dns.TypeA)
					q.SetEdns0(1232, false)
					r, _, err := (&dns.Client{Net: network, Timeout: 2 * time.Second}).Exchange(q, addr)
					if err != nil {
						t.Fatalf("%s %s: %v", network, name, err)
					}
					got := ""
					if len(r.Answer) == 1 {
						got = r.Answer[0].(*dns.A).A.String()
					}
					if r.Rcode != w.rcode || got != w.answer {
						t.Errorf("%s %s: rcode %s answer %q, want %s %q", network, name, dns.RcodeToString[r.Rcode], got, dns.RcodeToString[w.rcode], w.answer)
					}
					if r.Rcode == dns.RcodeNameError {
						if opt := r.IsEdns0(); opt == nil || len(opt.Option) != 1 || !strings.Contains(opt.Option[0].(*dns.EDNS0_EDE).ExtraText, strings.TrimSuffix(name, ".")) {
							t.Errorf("%s %s: no extended error naming the host: %v", network, name, r)
						}
					}
				}
			}
			// AAAA for a locally answered name gives the IPv6 gateway address.
			q := new(dns.Msg).SetQuestion("mock.test.", dns.TypeAAAA)
			r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, udp.LocalAddr().String())
			if err != nil || len(r.Answer) != 1 || r.Answer[0].(*dns.AAAA).AAAA.String() != "::1" {
				t.Fatalf("AAAA: %v %v", r, err)
			}
			if withUpstream {
				for range 2 { // once over UDP, once over TCP
					if got := <-asked; got != "api.allowed.test." {
						t.Fatalf("upstream asked %q", got)
					}
				}
			}
			select {
			case n := <-asked:
				t.Fatalf("upstream was asked about %s", n)
			default:
			}
		})
	}
}

func TestConfigJSON(t *testing.T) {
	cfg := testConfig(t)
	cfg.AnswerAddrs = []string{"10.0.0.5"}
	cfg.UpstreamDNS = "127.0.0.1:53"
	back, err := ParseConfig(cfg.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, cfg) {
		t.Fatalf("round trip:\n%+v\n%+v", back, cfg)
	}
	for _, bad := range []string{
		`{"catalogue":[{"host":"a.test","mode":"allow"}],"bogus":1}`,
		`{"catalogue":[{"host":"a.test","mode":"teleport"}]}`,
		`{"catalogue":[{"host":"a.test","mode":"allow"},{"host":"A.test","mode":"block"}]}`,
		`{"catalogue":[{"host":"http://a.test","mode":"allow"}]}`,
		`{"catalogue":[{"host":"a.test","mode":"allow","response":{"status":200}}]}`,
		`{"catalogue":[],"answer_addrs":["gateway"]}`,
	} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestFromManifest(t *testing.T) {
	m, err := manifest.Parse([]byte(`name: shop
runtime: {provider: local}
services:
  web: {command: ["./shop"], port: 8080, web: true}
egress:
  - host: api.stripe.com
    mode: sandbox
  - host: hooks.slack.com
    mode: mock
    response: {status: 204, headers: {X-A: b}, body: hi}
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromManifest(m)
	want := []Rule{{Host: "api.stripe.com", Mode: manifest.ModeSandbox}, {Host: "hooks.slack.com", Mode: manifest.ModeMock, Response: &Response{Status: 204, Headers: map[string]string{"X-A": "b"}, Body: "hi"}}}
	if !reflect.DeepEqual(cfg.Catalogue, want) {
		t.Fatalf("%+v", cfg.Catalogue)
	}
}

func TestServeOnUnixSocketsAndReload(t *testing.T) {
	dir := t.TempDir()
	l, err := Listen(Addrs{HTTP: []string{"unix:" + filepath.Join(dir, "gw.sock")}, DNS: []string{"unix:" + filepath.Join(dir, "dns.sock")}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{Catalogue: []Rule{{Host: "a.test", Mode: manifest.ModeMock}}})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	g.Log = &log
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, l) }()
	c := &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: "gateway"}),
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return net.Dial("unix", filepath.Join(dir, "gw.sock"))
		},
	}}
	if resp, _ := do(t, c, http.MethodGet, "http://a.test/", "", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("before reload: %d", resp.StatusCode)
	}
	if err := g.Reload(Config{Catalogue: []Rule{{Host: "a.test", Mode: manifest.ModeBlock}}}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := do(t, c, http.MethodGet, "http://a.test/", "", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("after reload: %d", resp.StatusCode)
	}
	// DNS over the Unix stream socket, TCP framing.
	conn, err := net.Dial("unix", filepath.Join(dir, "dns.sock"))
	if err != nil {
		t.Fatal(err)
	}
	dc := &dns.Conn{Conn: conn}
	if err := dc.WriteMsg(new(dns.Msg).SetQuestion("a.test.", dns.TypeA)); err != nil {
		t.Fatal(err)
	}
	r, err := dc.ReadMsg()
	if err != nil || r.Rcode != dns.RcodeNameError {
		t.Fatalf("dns over unix: %v %v", r, err)
	}
	conn.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `"mode":"mock"`) || !strings.Contains(log.String(), `"mode":"block","entry":"a.test","status":403`) {
		t.Fatalf("log:\n%s", log.String())
	}
}
