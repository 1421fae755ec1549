package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

func noForwarding(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no forwarding in this test")
}

func captureConfig(t testing.TB, limit int, max int64, redact ...string) Config {
	return Config{
		Environment:     "shop-pr-1",
		Catalogue:       []Rule{{Host: "hooks.capture.test", Mode: manifest.ModeCapture}},
		CaptureFile:     filepath.Join(t.TempDir(), "captures.jsonl"),
		CaptureLimit:    limit,
		CaptureMaxBytes: max,
		Redact:          redact,
	}
}

// Credentials in the query, the headers and the body never reach the
// capture file; what was redacted is named.
func TestCaptureRedactsCredentials(t *testing.T) {
	cfg := captureConfig(t, 4096, 0, "X-Tenant-*", "account_number")
	g, gw := startGateway(t, cfg, noForwarding)
	logPath := filepath.Join(t.TempDir(), "egress.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	g.Log = logFile
	c := proxyClient(gw)
	secrets := []string{"tok-q1", "sig-q2", "key-q3", "pw-j1", "at-j2", "nested-j3", "cut-j4", "form-f1", "hdr-h1", "hdr-h2", "acct-j5", "tenant-h3", "code-q4", "xoxbA1b2C3d4E5f6G7h8I9j0"}
	do(t, c, "GET", "http://hooks.capture.test/cb?access_token=tok-q1&sig=sig-q2&key=key-q3&code=code-q4&page=2", "", map[string]string{
		"X-Stripe-Key": "hdr-h1", "Authorization": "Bearer hdr-h2", "X-Tenant-Id": "tenant-h3", "X-Request-Id": "r-1",
	})
	do(t, c, "POST", "http://hooks.capture.test/json", `{"user":"ann","password":"pw-j1","auth":{"access_token":"at-j2","scopes":["a"]},"items":[{"api_key":"nested-j3","n":1}],"account_number":"acct-j5","country_code":"DE"}`,
		map[string]string{"Content-Type": "application/json"})
	// Cut at the record cap, so it does not parse: redacted by its pairs.
	do(t, c, "POST", "http://hooks.capture.test/big", `{"client_secret":"cut-j4","pad":"`+strings.Repeat("x", 5000)+`"}`, map[string]string{"Content-Type": "application/json"})
	do(t, c, "POST", "http://hooks.capture.test/form", "user=ann&password=form-f1", map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	// A webhook whose secret is in the path.
	do(t, c, "POST", "http://hooks.capture.test/services/T0AB12CD3/B0CD34EF5/xoxbA1b2C3d4E5f6G7h8I9j0", `{"text":"hi"}`, map[string]string{"Content-Type": "application/json"})

	raw, err := os.ReadFile(cfg.CaptureFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(raw), s) {
			t.Errorf("secret %q reached the capture file", s)
		}
	}
	// The gateway logs a decision after it answers: wait for all five.
	var decisions []byte
	for deadline := time.Now().Add(5 * time.Second); bytes.Count(decisions, []byte("\n")) < 5 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		decisions, _ = os.ReadFile(logPath)
	}
	if !bytes.Contains(decisions, []byte("/services/T0AB12CD3/B0CD34EF5/REDACTED")) {
		t.Errorf("the decision log does not hold the redacted webhook path:\n%s", decisions)
	}
	for _, s := range secrets {
		if bytes.Contains(decisions, []byte(s)) {
			t.Errorf("secret %q reached the decision log", s)
		}
	}
	caps, err := ReadCaptures(strings.NewReader(string(raw)))
	if err != nil || len(caps) != 5 {
		t.Fatalf("%d captures: %v", len(caps), err)
	}
	q := caps[0]
	if q.Query != "access_token=REDACTED&sig=REDACTED&key=REDACTED&code=REDACTED&page=2" ||
		!reflect.DeepEqual(q.RedactedQuery, []string{"access_token", "sig", "key", "code"}) {
		t.Errorf("query %q redacted %v", q.Query, q.RedactedQuery)
	}
	if !reflect.DeepEqual(q.Redacted, []string{"Authorization", "X-Stripe-Key", "X-Tenant-Id"}) || q.Headers["X-Request-Id"][0] != "r-1" {
		t.Errorf("headers redacted %v, kept %v", q.Redacted, q.Headers)
	}
	j := caps[1]
	if !reflect.DeepEqual(j.RedactedFields, []string{"$.account_number", "$.auth", "$.items[].api_key", "$.password"}) {
		t.Errorf("fields %v", j.RedactedFields)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(j.Body), &body); err != nil || body["user"] != "ann" || body["country_code"] != "DE" || body["password"] != Redacted {
		t.Errorf("body %s: %v", j.Body, err)
	}
	if b := caps[2]; !b.Truncated || !strings.HasPrefix(b.Body, `{"client_secret":"REDACTED","pad":"xxx`) || !reflect.DeepEqual(b.RedactedFields, []string{"$..client_secret"}) {
		t.Errorf("truncated JSON: %q %v", b.Body[:60], b.RedactedFields)
	}
	if f := caps[3]; f.Body != "user=ann&password=REDACTED" || !reflect.DeepEqual(f.RedactedFields, []string{"password"}) {
		t.Errorf("form %q %v", f.Body, f.RedactedFields)
	}
	if w := caps[4]; w.Path != "/services/T0AB12CD3/B0CD34EF5/REDACTED" || !w.RedactedPath || w.RedactedPath == caps[3].RedactedPath {
		t.Errorf("webhook path %q redacted %v", w.Path, w.RedactedPath)
	}
}

func TestRedactPath(t *testing.T) {
	for in, want := range map[string]string{
		"/services/T0AB12CD3/B0CD34EF5/xoxbA1b2C3d4E5f6G7h8I9j0":       "/services/T0AB12CD3/B0CD34EF5/REDACTED",
		"/api/webhooks/123456789012345678/aB3dEf6hIjK9mNoP-qRsT_uV":    "/api/webhooks/123456789012345678/REDACTED",
		"/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/sendMessage": "/REDACTED/sendMessage",
		"/v1/charges":                       "/v1/charges",
		"/repos/acme/shop/contents/README":  "/repos/acme/shop/contents/README",
		"/orders/1234567890123456789/items": "/orders/1234567890123456789/items",
		"/internationalization-settings":    "/internationalization-settings",
		"/":                                 "/",
	} {
		got, changed := RedactPath(in)
		if got != want || changed != (in != want) {
			t.Errorf("RedactPath(%q) = %q, %v; want %q", in, got, changed, want)
		}
	}
}

func TestCredentialNames(t *testing.T) {
	for name, want := range map[string]bool{
		"access_token": true, "refresh_token": true, "sig": true, "X-Amz-Signature": true, "X-Goog-Api-Key": true, "X-Foo-Key": true,
		"password": true, "client_secret": true, "Cookie": true, "session_id": true, "key": true, "code": true,
		"page": false, "monkey": false, "country_code": false, "X-Request-Id": false, "Content-Type": false, "user": false,
	} {
		if got := credentialName(name) || IsCredentialHeader(name); got != want {
			t.Errorf("%s: redacted %v, want %v", name, got, want)
		}
	}
	r := newRedactor([]string{"X-*-Id", "acct"})
	if !r.name("x-tenant-id") || !r.name("ACCT") || r.name("acct2") || r.name("X-Id") {
		t.Error("capture.redact patterns")
	}
}

// fileSize is the size of path, 0 when it does not exist.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A service that floods its capture host, over real HTTP through the
// gateway: the capture file and its rotated predecessor stay within
// capture_max_bytes, the decision log within its cap, and both say what
// happened in the log. The flood is many times the cap, so a gateway that
// did not bound its files fails here.
func TestCaptureFloodStaysBounded(t *testing.T) {
	const max = 64 << 10
	cfg := captureConfig(t, 8<<10, max)
	logPath := filepath.Join(filepath.Dir(cfg.CaptureFile), "egress.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.Log = logFile
	g.Dial = noForwarding
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, Listeners{HTTP: []net.Listener{ln}}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	// Bodies full of control characters take six bytes each in JSON.
	escapes := strings.Repeat("\x01", 8<<10)
	var sent atomic.Int64
	var wg sync.WaitGroup
	c := proxyClient(ln.Addr().String())
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 150; i++ {
				body := strings.Repeat("y", 20<<10)
				if i%3 == 0 {
					body = escapes
				}
				resp, err := c.Post(fmt.Sprintf("http://hooks.capture.test/flood/%d/%d", w, i), "text/plain", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusAccepted {
					t.Errorf("status %d", resp.StatusCode)
					return
				}
				sent.Add(int64(len(body)))
			}
		}(w)
	}
	wg.Wait()
	if sent.Load() < 100*max {
		t.Fatalf("the flood sent only %d bytes", sent.Load())
	}
	capBytes := fileSize(t, cfg.CaptureFile) + fileSize(t, cfg.CaptureFile+".1")
	if capBytes > max || capBytes < max/4 {
		t.Errorf("captures hold %d bytes; cap %d", capBytes, max)
	}
	if l := fileSize(t, logPath); l > max {
		t.Errorf("egress.log holds %d bytes; cap %d", l, max)
	}
	// Every capture line is whole JSON; the newest capture survived.
	f, _ := os.Open(cfg.CaptureFile)
	caps, err := ReadCaptures(f)
	f.Close()
	if err != nil || len(caps) == 0 {
		t.Fatalf("capture file: %d records, %v", len(caps), err)
	}
	// The log says what happened: rotations, then the stop.
	lf, _ := os.Open(logPath)
	defer lf.Close()
	var kinds []string
	var last Decision
	sc := bufio.NewScanner(lf)
	for sc.Scan() {
		var d Decision
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		kinds = append(kinds, d.Kind)
		last = d
	}
	if !strings.Contains(strings.Join(kinds, " "), "capture-rotated") {
		t.Error("no rotation is logged")
	}
	if last.Kind != "log-limit" || !strings.Contains(last.Note, "reached its cap of 65536 bytes") {
		t.Errorf("last log line %+v", last)
	}
	// The counters, through the gateway's own endpoint.
	resp, err := c.Get("http://" + ControlHost + "/")
	if err != nil {
		t.Fatal(err)
	}
	var ctl struct {
		Rotations int64 `json:"capture_rotations"`
		Dropped   int64 `json:"log_lines_dropped"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ctl)
	resp.Body.Close()
	if ctl.Rotations < 10 || ctl.Dropped < 100 {
		t.Errorf("counters %+v", ctl)
	}
	t.Logf("flood: %d bytes sent in %d requests; captures %d bytes after %d rotations; egress.log %d bytes, %d lines dropped",
		sent.Load(), 8*150, capBytes, ctl.Rotations, fileSize(t, logPath), ctl.Dropped)
}

// A log that already holds its cap (a restarted supervisor appending to the
// same file) writes nothing more.
func TestDecisionLogStartsFromTheFilesSize(t *testing.T) {
	cfg := captureConfig(t, 1024, 64<<10)
	path := filepath.Join(t.TempDir(), "egress.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 64<<10-100)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, _ := New(cfg)
	g.Log = f
	for i := 0; i < 10; i++ {
		g.logDecision(Decision{Kind: "http", Host: "hooks.capture.test", Mode: "capture"})
	}
	if n := fileSize(t, path); n > 64<<10 {
		t.Fatalf("log grew to %d past its cap", n)
	}
	if g.log.dropped != 10 {
		t.Errorf("dropped %d", g.log.dropped)
	}
}

// A record that would not fit half the cap is shrunk, never split or
// dropped: the body first, then the headers.
func TestFitShrinksARecord(t *testing.T) {
	c := Capture{Method: "POST", Host: "h", Path: "/", Headers: map[string][]string{"X-Big": {strings.Repeat("h", 3000)}}, Body: strings.Repeat("\x02", 4000)}
	line, err := fit(c, 2000)
	if err != nil || len(line) >= 2000 {
		t.Fatalf("%d bytes, %v", len(line), err)
	}
	var back Capture
	_ = json.Unmarshal(line, &back)
	if !back.Truncated || !back.HeadersOmitted {
		t.Errorf("%+v", back)
	}
	if line, _ := fit(Capture{Body: "small"}, 2000); !strings.Contains(string(line), `"body":"small"`) {
		t.Errorf("%s", line)
	}
}

// A capture that cannot be written is refused with its code, never answered
// 202 as if it had been recorded.
func TestCaptureThatCannotBeWrittenIsRefused(t *testing.T) {
	cfg := captureConfig(t, 1024, 0)
	cfg.CaptureFile = filepath.Join(t.TempDir(), "missing-dir", "captures.jsonl")
	_, gw := startGateway(t, cfg, noForwarding)
	resp, body := do(t, proxyClient(gw), "POST", "http://hooks.capture.test/x", "payload", nil)
	if resp.StatusCode != http.StatusInternalServerError || !strings.HasPrefix(body, "AF-RUN-100 ") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

func TestCaptureSettingsFromTheManifest(t *testing.T) {
	m, err := manifest.Parse([]byte("name: shop\nruntime: {provider: local}\negress:\n  - {host: hooks.capture.test, mode: capture}\ncapture:\n  max_body_bytes: 2048\n  max_bytes: 1048576\n  redact: [X-*-Id]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := FromManifest(m)
	if cfg.CaptureLimit != 2048 || cfg.CaptureMaxBytes != 1<<20 || !reflect.DeepEqual(cfg.Redact, []string{"X-*-Id"}) {
		t.Fatalf("%+v", cfg)
	}
	back, err := ParseConfig(cfg.JSON())
	if err != nil || !reflect.DeepEqual(back, cfg) {
		t.Fatalf("JSON round trip: %+v %v", back, err)
	}
	for _, bad := range []Config{{CaptureMaxBytes: 1000}, {CaptureLimit: 64 << 10, CaptureMaxBytes: 100 << 10}, {CaptureLimit: 32 << 20}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// BenchmarkCaptureThroughTheGateway measures captured requests per second
// (and body bytes per second) over loopback HTTP, redaction and rotation
// included.
func BenchmarkCaptureThroughTheGateway(b *testing.B) {
	cfg := captureConfig(b, 0, 1<<20)
	g, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	g.Log = io.Discard
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, Listeners{HTTP: []net.Listener{ln}}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Serve: %v", err)
		}
	}()
	c := proxyClient(ln.Addr().String())
	body := `{"user":"ann","password":"pw","items":[` + strings.Repeat(`{"n":1,"access_token":"t"},`, 100) + `{"n":2}]}`
	b.SetBytes(int64(len(body)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Post("http://hooks.capture.test/bench?sig=x", "application/json", strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
