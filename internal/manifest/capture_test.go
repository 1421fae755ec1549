package manifest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

const captureBase = "name: shop\nruntime:\n  provider: local\n"

func TestCaptureSection(t *testing.T) {
	m, err := Parse([]byte(captureBase + "capture:\n  max_body_bytes: 1024\n  max_bytes: 1048576\n  redact: [X-Session-Key, refresh_token, \"X-*-Sig\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Capture{MaxBodyBytes: 1024, MaxBytes: 1 << 20, Redact: []string{"X-Session-Key", "refresh_token", "X-*-Sig"}, Pos: Position{4, 1}}
	if !reflect.DeepEqual(m.Capture, want) {
		t.Fatalf("capture %+v, want %+v", m.Capture, want)
	}
	if m, err := Parse([]byte(captureBase)); err != nil || m.Capture != nil {
		t.Fatalf("no section: %+v %v", m, err)
	}
}

// The reader is strict: each mistake is refused with its code and
// line:column.
func TestCaptureSectionRefusals(t *testing.T) {
	for _, c := range []struct{ name, section, want string }{
		{"unknown key", "capture:\n  max_body: 10\n", `AF-MAN-002 Unknown key "max_body" in capture at line 5:3`},
		{"not a mapping", "capture: 10\n", "AF-MAN-003 capture must be a mapping, found the scalar \"10\" at line 4:10"},
		{"size as a string", "capture:\n  max_bytes: 8MiB\n", "AF-MAN-003 capture.max_bytes must be an integer, found the scalar \"8MiB\" at line 5:14"},
		{"body too large", "capture:\n  max_body_bytes: 999999999\n", "AF-MAN-020 capture.max_body_bytes is 999999999; it must be 1 to 16777216 bytes at line 5:19"},
		{"zero body", "capture:\n  max_body_bytes: 0\n", "AF-MAN-020 capture.max_body_bytes is 0"},
		{"total too small", "capture:\n  max_bytes: 1000\n", "AF-MAN-020 capture.max_bytes is 1000; it must be 65536 to 1073741824 bytes at line 5:14"},
		{"total less than two records", "capture:\n  max_body_bytes: 100000\n  max_bytes: 150000\n",
			"AF-MAN-020 capture.max_bytes is 150000, less than twice capture.max_body_bytes (line 5), 100000: a record must fit in the half at which the capture file rotates at line 6:14"},
		{"total less than two default records", "capture:\n  max_bytes: 100000\n", "less than twice the default max_body_bytes, 65536"},
		{"redact not a list", "capture:\n  redact: Authorization\n", "AF-MAN-003 capture.redact must be a list of strings"},
		{"redact with a space", "capture:\n  redact: [ok, \"x y\"]\n", `AF-MAN-021 capture.redact[1] "x y" is not a name to redact at line 5:16`},
		{"redact only a wildcard", "capture:\n  redact: [\"*\"]\n", `AF-MAN-021 capture.redact[0] "*"`},
		{"duplicate key", "capture:\n  max_bytes: 100000000\n  max_bytes: 100000000\n", "AF-MAN-006 capture \"max_bytes\" is declared twice (first at line 5) at line 6:3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(captureBase + c.section))
			list := refusal.All(err)
			if len(list) == 0 {
				t.Fatal("accepted")
			}
			if got := list[0].Title(); !strings.Contains(got, c.want) {
				t.Fatalf("got %q\nwant %q", got, c.want)
			}
			if len(list) != 1 {
				t.Errorf("%d refusals: %v", len(list), list)
			}
		})
	}
}
