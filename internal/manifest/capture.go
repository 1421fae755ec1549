package manifest

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Capture adjusts what the egress gateway keeps of calls to capture hosts
// and how much it writes per environment. Zero values mean the gateway's
// defaults.
type Capture struct {
	// MaxBodyBytes caps the body kept in one capture record.
	MaxBodyBytes int64
	// MaxBytes caps what the environment's gateway writes: the capture file
	// (with its one rotated predecessor), and the decision log, each.
	MaxBytes int64
	// Redact are further header, query-parameter and JSON-field names whose
	// values are never written; "*" matches any run of characters
	// ("X-*-Key"), case is ignored.
	Redact []string
	Pos    Position
}

// The bounds a capture section may set. A record must fit in half of
// MaxBytes (the file rotates at half), and neither cap may be so large that
// one environment can fill a disk.
const (
	CaptureDefaultMaxBodyBytes = 64 << 10
	CaptureDefaultMaxBytes     = 8 << 20
	CaptureMaxBodyCeiling      = 16 << 20
	CaptureMaxBytesFloor       = 64 << 10
	CaptureMaxBytesCeil        = 1 << 30
	captureRedactMax           = 128
)

// Capture refusals.
var (
	CaptureBadSize = refusal.Register("AF-MAN-020",
		"A capture size is out of range: capture.max_body_bytes is 1 byte to 16 MiB, capture.max_bytes 64 KiB to 1 GiB and at least twice max_body_bytes (the capture file rotates at half of it).",
		"Give the size in bytes within the range the message names, or leave it out for the gateway's default.")
	CaptureBadRedact = refusal.Register("AF-MAN-021",
		"A capture.redact entry is not a header, query-parameter or JSON-field name (letters, digits, '-', '_', '.', with '*' for any run of characters).",
		`Write the name as it appears in requests, for example "X-Session-Key", "refresh_token" or "X-*-Key".`)
)

// captureSize reads a byte count.
func (r *reader) captureSize(n *yaml.Node, where string, lo, hi int64) int64 {
	v := int64(r.integer(n, where))
	if n.Tag == "!!int" && (v < lo || v > hi) {
		r.failAt(n, CaptureBadSize, "%s is %d; it must be %d to %d bytes", where, v, lo, hi)
	}
	return v
}

func (r *reader) capture(k, n *yaml.Node) *Capture {
	c := &Capture{Pos: pos(k)}
	var bodyNode, maxNode *yaml.Node
	r.fields(n, "capture",
		field{"max_body_bytes", false, func(_, v *yaml.Node) {
			bodyNode = v
			c.MaxBodyBytes = r.captureSize(v, "capture.max_body_bytes", 1, CaptureMaxBodyCeiling)
		}},
		field{"max_bytes", false, func(_, v *yaml.Node) {
			maxNode = v
			c.MaxBytes = r.captureSize(v, "capture.max_bytes", CaptureMaxBytesFloor, CaptureMaxBytesCeil)
		}},
		field{"redact", false, func(_, v *yaml.Node) {
			c.Redact = r.strings(v, "capture.redact")
			for i, name := range c.Redact {
				if item := v.Content[i]; item.Kind == yaml.ScalarNode && item.Tag != "!!null" && !redactName(name) {
					r.failAt(item, CaptureBadRedact, "capture.redact[%d] %q is not a name to redact", i, name)
				}
			}
		}},
	)
	body := c.MaxBodyBytes
	if body == 0 {
		body = CaptureDefaultMaxBodyBytes
	}
	if maxNode != nil && c.MaxBytes >= CaptureMaxBytesFloor && c.MaxBytes < 2*body {
		what := "the default max_body_bytes"
		if bodyNode != nil {
			what = fmt.Sprintf("capture.max_body_bytes (line %d)", bodyNode.Line)
		}
		r.failAt(maxNode, CaptureBadSize, "capture.max_bytes is %d, less than twice %s, %d: a record must fit in the half at which the capture file rotates", c.MaxBytes, what, body)
	}
	return c
}

func redactName(s string) bool {
	if s == "" || len(s) > captureRedactMax || strings.Trim(s, "*") == "" {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.*", c)
		if !ok {
			return false
		}
	}
	return true
}
