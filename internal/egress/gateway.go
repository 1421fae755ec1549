package egress

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// DialFunc opens a connection for a forwarded call.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Gateway is one environment's egress gateway. It is an http.Handler (the
// proxy) and a dns.Handler (the answerer).
type Gateway struct {
	// Dial forwards allow and sandbox calls. Nil means PublicOnlyDialer.
	// Tests inject a dialer that reaches loopback servers only.
	Dial DialFunc
	// Log, when set, receives one JSON line per decision (see Decision).
	Log io.Writer
	// Now stamps captures; nil means time.Now.
	Now func() time.Time

	state     atomic.Pointer[gatewayState]
	transport *http.Transport
	proxy     *httputil.ReverseProxy
	logMu     sync.Mutex
	log       boundedLog
	captureMu sync.Mutex
	captures  captureStore
	rotations atomic.Int64
}

type gatewayState struct {
	cfg Config
	cat catalogue
	red redactor
}

// New builds a gateway for cfg.
func New(cfg Config) (*Gateway, error) {
	g := &Gateway{}
	if err := g.Reload(cfg); err != nil {
		return nil, err
	}
	g.transport = &http.Transport{
		Proxy:                 nil, // never chain to another proxy from the environment
		DialContext:           g.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          32,
		IdleConnTimeout:       60 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.URL.Host
			pr.Out.Header.Del("Proxy-Authorization")
			pr.Out.Header.Del("Proxy-Connection")
		},
		Transport: g.transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			m := r.Context().Value(matchKey{}).(Match)
			g.refuse(w, r, m, http.StatusBadGateway, fmt.Sprintf("%s could not forward to %s (catalogue entry %q, mode %s): %v", ForwardFailed, r.URL.Host, m.Rule.Host, m.Rule.Mode, err))
		},
	}
	return g, nil
}

// Reload replaces the configuration; calls in flight finish under the old one.
func (g *Gateway) Reload(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(cfg.AnswerAddrs) == 0 {
		cfg.AnswerAddrs = []string{"127.0.0.1"}
	}
	if cfg.CaptureLimit == 0 {
		cfg.CaptureLimit = DefaultCaptureLimit
	}
	if cfg.CaptureMaxBytes == 0 {
		cfg.CaptureMaxBytes = DefaultCaptureMaxBytes
	}
	g.state.Store(&gatewayState{cfg: cfg, cat: compile(cfg.Catalogue), red: newRedactor(cfg.Redact)})
	return nil
}

// Config is the configuration in force.
func (g *Gateway) Config() Config { return g.state.Load().cfg }

// Lookup says what the catalogue in force does with host.
func (g *Gateway) Lookup(host string) Match { return g.state.Load().cat.lookup(host) }

// Close releases idle forwarded connections.
func (g *Gateway) Close() { g.transport.CloseIdleConnections() }

func (g *Gateway) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if g.Dial != nil {
		return g.Dial(ctx, network, addr)
	}
	return PublicOnlyDialer(ctx, network, addr)
}

// PublicOnlyDialer dials like net.Dialer but refuses, at connect time (after
// resolution, so a name that resolves inward is caught too), loopback,
// private, shared (100.64/10), link-local, multicast and unspecified
// addresses: the gateway opens the way to the catalogue's public hosts, not to
// the network it runs in or the cloud's metadata service.
func PublicOnlyDialer(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 15 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return err
		}
		if !Public(ap.Addr()) {
			return fmt.Errorf("refusing to forward to non-public address %s", ap.Addr())
		}
		return nil
	}}
	return d.DialContext(ctx, network, addr)
}

var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// Public reports whether a is an address the gateway may forward to.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsValid() && a.IsGlobalUnicast() && !a.IsPrivate() && !sharedSpace.Contains(a) && !thisNetwork.Contains(a)
}

type matchKey struct{}

// Decision is one line of the gateway's log.
type Decision struct {
	Time   time.Time `json:"time"`
	Kind   string    `json:"kind"` // http, connect, dns
	Method string    `json:"method,omitempty"`
	Host   string    `json:"host"`
	Path   string    `json:"path,omitempty"`
	Mode   string    `json:"mode"` // the entry's mode, or "not-in-catalogue"
	Entry  string    `json:"entry,omitempty"`
	Status int       `json:"status,omitempty"`
	// Note says what the gateway did about its own files (a rotated capture
	// file, a log that stops at its cap).
	Note string `json:"note,omitempty"`
}

func (g *Gateway) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

// logDecision writes one decision line, within the log's cap: the last line
// the cap allows says that the log stops there.
func (g *Gateway) logDecision(d Decision) {
	if g.Log == nil {
		return
	}
	d.Time = g.now().UTC()
	d.Path, _ = RedactPath(d.Path)
	b, _ := json.Marshal(d)
	g.logMu.Lock()
	defer g.logMu.Unlock()
	g.log.write(g.Log, g.Config().CaptureMaxBytes, append(b, '\n'), func() []byte {
		n, _ := json.Marshal(Decision{Time: d.Time, Kind: "log-limit", Host: ControlHost, Mode: "gateway",
			Note: fmt.Sprintf("the decision log reached its cap of %d bytes (capture.max_bytes); further decisions are decided and answered but not written here", g.Config().CaptureMaxBytes)})
		return append(n, '\n')
	})
}

func modeOf(m Match) string {
	if !m.Found {
		return "not-in-catalogue"
	}
	return string(m.Rule.Mode)
}

// ServeHTTP is the proxy. It takes absolute-form requests (a client using the
// gateway as HTTP_PROXY), CONNECT, and origin-form requests whose Host header
// names the destination (a client that resolved a locally answered name to
// the gateway and called it directly).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		g.connect(w, r)
		return
	}
	target := *r.URL
	if !target.IsAbs() {
		target.Scheme, target.Host = "http", r.Host
	}
	if target.Scheme != "http" {
		http.Error(w, fmt.Sprintf("the egress gateway forwards http:// requests and CONNECT tunnels, not %s://", target.Scheme), http.StatusBadRequest)
		return
	}
	r.URL = &target
	if normalizeHost(target.Host) == ControlHost {
		g.control(w)
		return
	}
	m := g.Lookup(target.Host)
	switch {
	case !m.Found:
		g.refuse(w, r, m, http.StatusForbidden, notInCatalogue(m.Host))
	case m.Rule.Mode == manifest.ModeBlock:
		g.refuse(w, r, m, http.StatusForbidden, blocked(m))
	case m.Rule.Mode == manifest.ModeMock:
		g.mock(w, r, m)
	case m.Rule.Mode == manifest.ModeCapture:
		g.capture(w, r, m)
	case m.Rule.Mode == manifest.ModeSynth:
		g.synth(w, r, m)
	default: // allow, sandbox
		g.logDecision(Decision{Kind: "http", Method: r.Method, Host: m.Host, Path: target.Path, Mode: modeOf(m), Entry: m.Rule.Host})
		g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), matchKey{}, m)))
	}
}

func notInCatalogue(host string) string {
	return fmt.Sprintf("%s %s is not in the egress catalogue, so the gateway refuses calls to it.\nAdd it to the manifest's egress list with the mode it needs (mock, capture, synth, sandbox, allow or block).", NotInCatalogue, host)
}

func blocked(m Match) string {
	return fmt.Sprintf("%s %s is blocked by the egress catalogue entry %q (mode block).", Blocked, m.Host, m.Rule.Host)
}

func gatewayHeader(m Match) string {
	if !m.Found {
		return "refused; not-in-catalogue"
	}
	return fmt.Sprintf("%s; entry=%s", m.Rule.Mode, m.Rule.Host)
}

func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, m Match, status int, msg string) {
	g.logDecision(Decision{Kind: kindOf(r), Method: r.Method, Host: m.Host, Path: r.URL.Path, Mode: modeOf(m), Entry: m.Rule.Host, Status: status})
	w.Header().Set(HeaderGateway, gatewayHeader(m))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg+"\n")
}

func kindOf(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return "connect"
	}
	return "http"
}

func (g *Gateway) control(w http.ResponseWriter) {
	w.Header().Set(HeaderGateway, "control")
	w.Header().Set("Content-Type", "application/json")
	cfg := g.Config()
	g.logMu.Lock()
	dropped := g.log.dropped
	g.logMu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"gateway": "ok", "environment": cfg.Environment, "entries": len(cfg.Catalogue),
		"capture_rotations": g.rotations.Load(), "log_lines_dropped": dropped})
}

func (g *Gateway) mock(w http.ResponseWriter, r *http.Request, m Match) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	resp := Response{}
	if m.Rule.Response != nil {
		resp = *m.Rule.Response
	}
	if resp.Status == 0 {
		resp.Status = http.StatusOK
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set(HeaderGateway, gatewayHeader(m))
	w.WriteHeader(resp.Status)
	_, _ = io.WriteString(w, resp.Body)
	g.logDecision(Decision{Kind: "http", Method: r.Method, Host: m.Host, Path: r.URL.Path, Mode: modeOf(m), Entry: m.Rule.Host, Status: resp.Status})
}

// synthetic is the body a synth host answers with: what was asked, and an id
// derived from it, so the same request always gets the same answer.
type synthetic struct {
	Synthetic bool                `json:"synthetic"`
	Entry     string              `json:"entry"`
	ID        string              `json:"id"`
	Method    string              `json:"method"`
	Host      string              `json:"host"`
	Path      string              `json:"path"`
	Query     map[string][]string `json:"query,omitempty"`
	BodyBytes int                 `json:"body_bytes"`
}

func (g *Gateway) synth(w http.ResponseWriter, r *http.Request, m Match) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%s\n%s\n%s\n", r.Method, m.Host, r.URL.Path, r.URL.RawQuery)
	h.Write(body)
	s := synthetic{
		Synthetic: true, Entry: m.Rule.Host, ID: hex.EncodeToString(h.Sum(nil))[:16],
		Method: r.Method, Host: m.Host, Path: r.URL.Path, BodyBytes: len(body),
	}
	if q := r.URL.Query(); len(q) > 0 {
		s.Query = q
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set(HeaderGateway, gatewayHeader(m))
	_ = json.NewEncoder(w).Encode(s)
	g.logDecision(Decision{Kind: "http", Method: r.Method, Host: m.Host, Path: r.URL.Path, Mode: modeOf(m), Entry: m.Rule.Host, Status: http.StatusOK})
}

// connect handles CONNECT: a tunnel for forwarded hosts, a refusal otherwise.
func (g *Gateway) connect(w http.ResponseWriter, r *http.Request) {
	r.URL = &url.URL{Host: r.Host}
	m := g.Lookup(r.Host)
	switch {
	case !m.Found:
		g.refuse(w, r, m, http.StatusForbidden, notInCatalogue(m.Host))
		return
	case m.Rule.Mode == manifest.ModeBlock:
		g.refuse(w, r, m, http.StatusForbidden, blocked(m))
		return
	case m.Local():
		g.refuse(w, r, m, http.StatusForbidden, fmt.Sprintf("%s %s is answered locally by the gateway (catalogue entry %q, mode %s), and a CONNECT tunnel is TLS the gateway cannot answer inside.\nCall it over plain http:// in the preview environment.", TLSToLocal, m.Host, m.Rule.Host, m.Rule.Mode))
		return
	}
	addr := r.Host
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "443")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	upstream, err := g.dial(ctx, "tcp", addr)
	cancel()
	if err != nil {
		g.refuse(w, r, m, http.StatusBadGateway, fmt.Sprintf("%s could not open a tunnel to %s (catalogue entry %q, mode %s): %v", ForwardFailed, addr, m.Rule.Host, m.Rule.Mode, err))
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "CONNECT needs HTTP/1.1", http.StatusHTTPVersionNotSupported)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	g.logDecision(Decision{Kind: "connect", Host: m.Host, Mode: modeOf(m), Entry: m.Rule.Host, Status: http.StatusOK})
	_, _ = client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	// Bytes the client sent after the CONNECT header, already buffered.
	if n := buf.Reader.Buffered(); n > 0 {
		b, _ := buf.Peek(n)
		if _, err := upstream.Write(b); err != nil {
			client.Close()
			upstream.Close()
			return
		}
	}
	Splice(client, upstream)
}

// Splice copies both ways until either side is done, then closes both.
func Splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
	a.Close()
	b.Close()
}
