package manifest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

func TestSecondDocumentRefused(t *testing.T) {
	one := "name: shop\nruntime:\n  provider: local\n"
	for _, c := range []struct {
		name, content string
		line          int // 0: accepted
	}{
		{"second document", one + "---\nname: other\nruntime:\n  provider: local\n", 4},
		{"second document not YAML", one + "---\nname: [\n", 5},
		{"a scalar after ---", one + "---\nhello\n", 4},
		// Controls: nothing is ignored, so nothing is refused.
		{"one document", one, 0},
		{"leading ---", "---\n" + one, 0},
		{"empty trailing document", one + "---\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.content))
			if c.line == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			l := refusal.All(err)
			if len(l) != 1 || l[0].Code != ManifestMultiDocument || l[0].Line != c.line {
				t.Fatalf("want one %s at line %d, got %v", ManifestMultiDocument, c.line, err)
			}
		})
	}
}

func badServices(n int) []byte {
	var b strings.Builder
	b.WriteString("name: shop\nruntime:\n  provider: kubernetes\nservices:\n")
	for i := range n {
		// Two refusals each: not a DNS label, and web without a port.
		fmt.Fprintf(&b, "  Svc_%d:\n    image: nginx\n    web: true\n", i)
	}
	return []byte(b.String())
}

func TestDiagnosticsCapped(t *testing.T) {
	_, err := Parse(badServices(20000))
	var l refusal.List
	if !errors.As(err, &l) {
		t.Fatalf("not a list: %v", err)
	}
	if len(l) != MaxRefusals+1 {
		t.Fatalf("%d refusals, want %d", len(l), MaxRefusals+1)
	}
	last := l[MaxRefusals]
	// 40,000 found, 20 shown: the 21st says how many more and where the
	// first of them is (service 10's name, line 5 + 3*10).
	if last.Code != ManifestMoreProblems || !strings.Contains(last.Summary, "and 39980 more problems") || last.Line != 35 {
		t.Fatalf("summary refusal: %s (line %d)", last.Title(), last.Line)
	}
	if size := len(err.Error()); size > 16<<10 {
		t.Fatalf("the error is %d bytes; a capped report must stay small", size)
	}
	// Control: exactly MaxRefusals problems are all shown, with no summary.
	_, err = Parse(badServices(MaxRefusals / 2))
	if l := refusal.All(err); len(l) != MaxRefusals || l[len(l)-1].Code == ManifestMoreProblems {
		t.Fatalf("%d problems must all be shown uncapped, got %d", MaxRefusals, len(l))
	}
}

// BenchmarkParse20000BadServices is the generated manifest that used to
// produce 40,000 diagnostics: the refusals reported and the bytes of their
// text are reported per read.
func BenchmarkParse20000BadServices(b *testing.B) {
	content := badServices(20000)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	var shown, size int
	for b.Loop() {
		_, err := Parse(content)
		shown, size = len(refusal.All(err)), len(err.Error())
	}
	b.ReportMetric(float64(shown), "refusals/op")
	b.ReportMetric(float64(size), "errbytes/op")
}
