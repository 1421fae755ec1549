// Package egress is the egress gateway every runtime puts between an
// environment and the world: an HTTP forward proxy (with CONNECT) and a DNS
// answerer, both driven by the manifest's egress catalogue.
//
//   - allow, sandbox: forwarded for real, through the gateway's dialer (which by
//     default refuses loopback, private and link-local addresses, so a catalogue
//     name that resolves inside the network is not a way in to it);
//   - block: refused with 403 and a body naming the catalogue entry;
//   - mock: answered with the entry's response (default 200, empty body);
//   - capture: the request is recorded (credentials redacted, body capped) as one
//     JSON line in the capture file and answered 202; the file rotates once at
//     half of CaptureMaxBytes, so an environment never holds more than that;
//   - synth: answered with a generated, deterministic JSON document;
//   - a host the catalogue does not name: refused with 403 naming the host.
//
// An exact entry beats a wildcard; among wildcards the longest suffix wins.
// "*.example.com" covers every subdomain of example.com, not example.com.
//
// HTTPS to a locally answered host (a CONNECT to a mock, capture or synth
// host) is refused with 403: the gateway would have to answer inside TLS,
// which it cannot do without a certificate the service trusts. Services call
// locally answered hosts over plain http:// in a preview environment.
//
// DNS: locally answered names (and the gateway's own name, ControlHost)
// resolve to the gateway's addresses; allow/sandbox names are resolved by the
// upstream resolver when one is configured; every other name, and forwarded
// names when no upstream is configured, is NXDOMAIN, with an RFC 8914 extended
// error saying why when the client speaks EDNS.
//
// The Kubernetes runtime runs the gateway as a container (the Config comes
// from a ConfigMap as JSON, see ParseConfig and Serve); the local runtime runs
// it in its supervisor on Unix sockets.
package egress

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Codes the gateway answers with. They appear in response bodies so a
// developer reading a failed call in a service's log can look them up.
var (
	Blocked        = refusal.Register("AF-RUN-060", "The egress gateway refused a call: the catalogue entry for the host has mode block.", "Change the entry's mode if the environment should reach the host, or stop calling it.")
	NotInCatalogue = refusal.Register("AF-RUN-061", "The egress gateway refused a call to a host the egress catalogue does not name.", "Add the host to the manifest's egress catalogue with the mode it needs (mock, capture, synth, sandbox, allow or block).")
	TLSToLocal     = refusal.Register("AF-RUN-062", "The egress gateway refused an HTTPS (CONNECT) call to a host it answers locally: it cannot answer inside TLS.", "Call the host over plain http:// in the preview environment (for example through a base-URL setting in the service's env).")
	ForwardFailed  = refusal.Register("AF-RUN-063", "The egress gateway could not forward a call to an allow or sandbox host.", "Check that the host resolves and answers from the machine running the gateway; private and link-local addresses are never forwarded to.")
)

// ControlHost is the gateway's own name. A request for it through the proxy
// is answered by the gateway itself (200, header HeaderGateway); it is what a
// containment probe's positive control asks for. The .invalid top-level
// domain is reserved, so it can never be a real host.
const ControlHost = "gateway.antifailure.invalid"

// HeaderGateway is set on every response the gateway itself writes (refusals
// and local answers), naming the mode and the catalogue entry.
const HeaderGateway = "X-Antifailure-Egress"

// DefaultCaptureLimit is how many bytes of a captured request body are kept.
const DefaultCaptureLimit = manifest.CaptureDefaultMaxBodyBytes

// DefaultCaptureMaxBytes caps the capture file (with its rotated
// predecessor) and, separately, the decision log.
const DefaultCaptureMaxBytes = manifest.CaptureDefaultMaxBytes

// Config is everything a gateway needs. It serialises to and from JSON so a
// runtime can hand it to a gateway in another process or container.
type Config struct {
	// Environment names the environment in responses and logs.
	Environment string `json:"environment,omitempty"`
	// Catalogue is the egress catalogue, in manifest order.
	Catalogue []Rule `json:"catalogue"`
	// CaptureFile is where captured requests are appended, one JSON object a
	// line. Empty: captures are answered but not recorded anywhere.
	CaptureFile string `json:"capture_file,omitempty"`
	// CaptureLimit caps a captured body in bytes; 0 means DefaultCaptureLimit.
	CaptureLimit int `json:"capture_limit,omitempty"`
	// CaptureMaxBytes caps what the gateway writes for the environment: the
	// capture file and its one rotated predecessor (CaptureFile + ".1")
	// together, and the decision log on its own. 0 means
	// DefaultCaptureMaxBytes.
	CaptureMaxBytes int64 `json:"capture_max_bytes,omitempty"`
	// Redact are further names (headers, query parameters, JSON and form
	// fields; "*" matches any run of characters, case ignored) whose values
	// are never written, beside the credential names always redacted.
	Redact []string `json:"redact,omitempty"`
	// AnswerAddrs are the addresses DNS gives for locally answered names: the
	// gateway as the services reach it. Empty: 127.0.0.1.
	AnswerAddrs []string `json:"answer_addrs,omitempty"`
	// UpstreamDNS (host:port) resolves allow and sandbox names. Empty: they
	// are not resolved (NXDOMAIN); the proxy still forwards them.
	UpstreamDNS string `json:"upstream_dns,omitempty"`
}

// Rule is one catalogue entry.
type Rule struct {
	Host     string        `json:"host"`
	Mode     manifest.Mode `json:"mode"`
	Response *Response     `json:"response,omitempty"`
}

// Response is a mock entry's answer.
type Response struct {
	Status  int               `json:"status,omitempty"` // 0 means 200
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
}

// FromManifest builds the catalogue part of a Config from a manifest.
func FromManifest(m *manifest.Manifest) Config {
	cfg := Config{Catalogue: make([]Rule, 0, len(m.Egress))}
	for _, e := range m.Egress {
		r := Rule{Host: e.Host, Mode: e.Mode}
		if e.Response != nil {
			r.Response = &Response{Status: e.Response.Status, Headers: e.Response.Headers, Body: e.Response.Body}
		}
		cfg.Catalogue = append(cfg.Catalogue, r)
	}
	if c := m.Capture; c != nil {
		cfg.CaptureLimit, cfg.CaptureMaxBytes = int(c.MaxBodyBytes), c.MaxBytes
		cfg.Redact = append([]string(nil), c.Redact...)
	}
	return cfg
}

// JSON is the config as JSON.
func (c Config) JSON() []byte {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		panic(err) // plain data always marshals
	}
	return b
}

// ParseConfig reads a JSON config strictly (unknown fields are an error) and
// validates it.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("egress config: %w", err)
	}
	return c, c.Validate()
}

// LoadConfig reads a JSON config file.
func LoadConfig(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(b)
}

// Validate checks the config the way the gateway will use it.
func (c Config) Validate() error {
	seen := map[string]bool{}
	for i, r := range c.Catalogue {
		h := strings.TrimSuffix(strings.ToLower(r.Host), ".")
		name := strings.TrimPrefix(h, "*.")
		if name == "" || strings.ContainsAny(name, "*/:[] ") {
			return fmt.Errorf("egress config: catalogue[%d]: %q is not a host name or *.domain wildcard", i, r.Host)
		}
		if seen[h] {
			return fmt.Errorf("egress config: catalogue[%d]: %q is listed twice", i, r.Host)
		}
		seen[h] = true
		if !slices.Contains(manifest.Modes, r.Mode) {
			return fmt.Errorf("egress config: catalogue[%d] (%s): unknown mode %q", i, r.Host, r.Mode)
		}
		if r.Response != nil && r.Mode != manifest.ModeMock {
			return fmt.Errorf("egress config: catalogue[%d] (%s): a response is only for mode mock", i, r.Host)
		}
		if r.Response != nil && r.Response.Status != 0 && (r.Response.Status < 100 || r.Response.Status > 599) {
			return fmt.Errorf("egress config: catalogue[%d] (%s): status %d is not an HTTP status", i, r.Host, r.Response.Status)
		}
	}
	for _, a := range c.AnswerAddrs {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("egress config: answer_addrs: %q is not an IP address", a)
		}
	}
	if c.CaptureLimit < 0 || c.CaptureLimit > manifest.CaptureMaxBodyCeiling {
		return fmt.Errorf("egress config: capture_limit must be 0 (the default) to %d", manifest.CaptureMaxBodyCeiling)
	}
	if c.CaptureMaxBytes != 0 && (c.CaptureMaxBytes < manifest.CaptureMaxBytesFloor || c.CaptureMaxBytes > manifest.CaptureMaxBytesCeil) {
		return fmt.Errorf("egress config: capture_max_bytes must be 0 (the default) or %d to %d", manifest.CaptureMaxBytesFloor, manifest.CaptureMaxBytesCeil)
	}
	limit, total := int64(c.CaptureLimit), c.CaptureMaxBytes
	if limit == 0 {
		limit = DefaultCaptureLimit
	}
	if total == 0 {
		total = DefaultCaptureMaxBytes
	}
	if total < 2*limit {
		return fmt.Errorf("egress config: capture_max_bytes %d is less than twice the body cap %d", total, limit)
	}
	return nil
}

// Match is what the catalogue says about one host.
type Match struct {
	Host  string // the host asked for, normalised
	Found bool
	Rule  Rule // the winning entry when Found
}

// Local reports whether the gateway answers the host itself.
func (m Match) Local() bool {
	return m.Found && (m.Rule.Mode == manifest.ModeMock || m.Rule.Mode == manifest.ModeCapture || m.Rule.Mode == manifest.ModeSynth)
}

// Forwarded reports whether calls to the host leave for real.
func (m Match) Forwarded() bool { return m.Found && m.Rule.Mode.Forwarded() }

type catalogue struct {
	exact    map[string]Rule
	wildcard map[string]Rule // keyed by the suffix without "*."
}

func compile(rules []Rule) catalogue {
	c := catalogue{exact: map[string]Rule{}, wildcard: map[string]Rule{}}
	for _, r := range rules {
		h := normalizeHost(r.Host)
		if suffix, ok := strings.CutPrefix(h, "*."); ok {
			c.wildcard[suffix] = r
		} else {
			c.exact[h] = r
		}
	}
	return c
}

// lookup finds the entry for host: an exact entry first, then the most
// specific wildcard.
func (c catalogue) lookup(host string) Match {
	h := normalizeHost(host)
	m := Match{Host: h}
	if r, ok := c.exact[h]; ok {
		m.Found, m.Rule = true, r
		return m
	}
	for rest := h; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			return m
		}
		rest = rest[i+1:]
		if r, ok := c.wildcard[rest]; ok {
			m.Found, m.Rule = true, r
			return m
		}
	}
}

// normalizeHost lower-cases a host and removes a port, brackets and a
// trailing dot.
func normalizeHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if strings.HasPrefix(h, "[") {
		if i := strings.IndexByte(h, ']'); i > 0 {
			return h[1:i]
		}
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.Count(h, ":") == 1 {
		h = h[:i]
	}
	return strings.TrimSuffix(h, ".")
}
