package egress

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// CaptureFailed is the answer to a capture call the gateway could not
// record: the call is refused (500), never answered as if it were recorded.
var CaptureFailed = refusal.Register("AF-RUN-100",
	"The egress gateway could not record a call to a capture host in the environment's capture file, so it refused the call rather than answer it as captured.",
	"Check the environment's state directory (local) or the gateway container's disk (kubernetes): the capture file must be writable; its size is bounded by capture.max_bytes.")

// maxRecordedText caps the path and the query a record keeps: a request
// line may be a megabyte, a record must fit its file.
const maxRecordedText = 4 << 10

// Capture is one captured request, one line of the capture file.
type Capture struct {
	Time    time.Time           `json:"time"`
	Entry   string              `json:"entry"`
	Method  string              `json:"method"`
	Host    string              `json:"host"`
	Path    string              `json:"path"`
	Query   string              `json:"query,omitempty"`
	Headers map[string][]string `json:"headers"`
	// Redacted names the credential headers that were left out.
	Redacted []string `json:"redacted,omitempty"`
	// RedactedPath: path segments that looked like credentials (RedactPath)
	// were replaced by REDACTED.
	RedactedPath bool `json:"redacted_path,omitempty"`
	// RedactedQuery and RedactedFields name the query parameters and the
	// body fields ($.a.b for JSON) whose values were replaced by REDACTED.
	RedactedQuery  []string `json:"redacted_query,omitempty"`
	RedactedFields []string `json:"redacted_fields,omitempty"`
	// Body is the body as text when it is valid UTF-8, else BodyBase64.
	Body       string `json:"body,omitempty"`
	BodyBase64 []byte `json:"body_base64,omitempty"`
	BodyBytes  int64  `json:"body_bytes"` // the whole body's size
	Truncated  bool   `json:"truncated,omitempty"`
	// HeadersOmitted: the headers did not fit the record and were left out.
	HeadersOmitted bool `json:"headers_omitted,omitempty"`
}

func cut(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

func (g *Gateway) capture(w http.ResponseWriter, r *http.Request, m Match) {
	st := g.state.Load()
	cfg, red := st.cfg, st.red
	body, _ := io.ReadAll(io.LimitReader(r.Body, int64(cfg.CaptureLimit)))
	rest, _ := io.Copy(io.Discard, r.Body)
	c := Capture{
		Time: g.now().UTC(), Entry: m.Rule.Host, Method: r.Method, Host: m.Host, Headers: map[string][]string{},
		BodyBytes: int64(len(body)) + rest, Truncated: rest > 0,
	}
	var cutPath, cutQuery bool
	path, redactedPath := RedactPath(r.URL.Path)
	c.Path, cutPath = cut(path, maxRecordedText)
	c.RedactedPath = redactedPath
	query, names := red.pairs(r.URL.RawQuery)
	c.Query, cutQuery = cut(query, maxRecordedText)
	c.RedactedQuery = names
	c.Truncated = c.Truncated || cutPath || cutQuery
	for k, v := range r.Header {
		if red.header(k) {
			c.Redacted = append(c.Redacted, k)
			continue
		}
		if k == "Proxy-Connection" {
			continue
		}
		c.Headers[k] = v
	}
	sort.Strings(c.Redacted)
	if utf8.Valid(body) {
		c.Body, c.RedactedFields = red.body(r.Header.Get("Content-Type"), string(body), !c.Truncated)
	} else {
		c.BodyBase64 = body
	}
	if err := g.appendCapture(cfg, c); err != nil {
		g.refuse(w, r, m, http.StatusInternalServerError, fmt.Sprintf("%s the gateway could not record the capture: %v", CaptureFailed, err))
		return
	}
	w.Header().Set(HeaderGateway, gatewayHeader(m))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(map[string]any{"captured": true, "entry": m.Rule.Host})
	g.logDecision(Decision{Kind: "http", Method: r.Method, Host: m.Host, Path: c.Path, Mode: modeOf(m), Entry: m.Rule.Host, Status: http.StatusAccepted})
}

// fit marshals a record into at most limit bytes: the body is halved until
// it fits (marked truncated), then the headers are left out. A body of n
// bytes can take 6n in JSON (\u00XX escapes), so the byte cap on the body
// alone does not bound the line.
func fit(c Capture, limit int) ([]byte, error) {
	for {
		line, err := json.Marshal(c)
		if err != nil || len(line)+1 <= limit {
			return line, err
		}
		switch {
		case c.Body != "":
			c.Body, _ = cut(c.Body, len(c.Body)/2)
			c.Truncated = true
		case len(c.BodyBase64) > 0:
			c.BodyBase64 = c.BodyBase64[:len(c.BodyBase64)/2]
			c.Truncated = true
		case len(c.Headers) > 0:
			c.Headers, c.HeadersOmitted = map[string][]string{}, true
		default:
			return nil, fmt.Errorf("a capture record of %d bytes does not fit half of capture.max_bytes (%d)", len(line), limit)
		}
	}
}

// captureStore is the capture file: it rotates to <file>.1 (replacing the
// older one) when the next record would take it past half the cap, so the
// two together never exceed the cap and the newest captures are kept.
type captureStore struct {
	path string
	size int64 // -1: not yet read from the file
}

func (g *Gateway) appendCapture(cfg Config, c Capture) error {
	if cfg.CaptureFile == "" {
		return nil
	}
	half := cfg.CaptureMaxBytes / 2
	line, err := fit(c, int(half))
	if err != nil {
		return err
	}
	line = append(line, '\n')
	g.captureMu.Lock()
	defer g.captureMu.Unlock()
	s := &g.captures
	if s.path != cfg.CaptureFile {
		s.path, s.size = cfg.CaptureFile, -1
	}
	if s.size < 0 {
		s.size = 0
		if fi, err := os.Stat(s.path); err == nil {
			s.size = fi.Size()
		}
	}
	if s.size+int64(len(line)) > half {
		if err := os.Rename(s.path, s.path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		g.rotations.Add(1)
		g.logDecision(Decision{Kind: "capture-rotated", Host: c.Host, Mode: "capture", Entry: c.Entry,
			Note: fmt.Sprintf("%s reached %d bytes, half of capture.max_bytes (%d); moved to %s, replacing the older captures there",
				filepath.Base(s.path), s.size, cfg.CaptureMaxBytes, filepath.Base(s.path)+".1")})
		s.size = 0
	}
	f, err := openAppend(s.path)
	if err != nil {
		return err
	}
	n, werr := f.Write(line)
	s.size += int64(n)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	return werr
}

// ReadCaptures reads a capture file.
func ReadCaptures(r io.Reader) ([]Capture, error) {
	var out []Capture
	dec := json.NewDecoder(r)
	for {
		var c Capture
		if err := dec.Decode(&c); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, c)
	}
}
