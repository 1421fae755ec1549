package manifest

import (
	"bytes"
	"errors"
	"io"

	"go.yaml.in/yaml/v3"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Codes of the reader's limits.
var (
	ManifestMultiDocument = refusal.Register("AF-MAN-014",
		"The manifest holds more than one YAML document: everything after the first --- would be ignored.",
		"Keep one document per manifest: remove the --- and what follows, or split it into one file per application.")
	ManifestMoreProblems = refusal.Register("AF-MAN-015",
		"The manifest has more problems than are reported: only the first ones are shown, the count of the rest is given.",
		"Fix the problems shown and plan again; the rest are reported then.")
)

// MaxRefusals is how many refusals one read reports before summing up the
// rest in one more: a generated manifest with thousands of mistakes must not
// print megabytes of diagnostics (20,000 bad services used to produce 40,000
// of them), and the first few say what is wrong.
const MaxRefusals = 20

// decodeOne reads the first YAML document of content and refuses any second
// one that holds something. An empty trailing document (a final "---") holds
// nothing that could be ignored and passes.
func decodeOne(content []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(content))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, refusal.List{syntaxRefusal(err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return &doc, nil
	case err != nil:
		r := syntaxRefusal(err)
		return nil, refusal.List{refusal.New(ManifestMultiDocument, "The manifest holds a second YAML document, which is not valid YAML either: %s", r.Summary).At(r.Line, 1)}
	case emptyDocument(&next):
		return &doc, nil
	}
	return nil, refusal.List{refusal.New(ManifestMultiDocument, "The manifest holds a second YAML document").At(documentLine(&next), 1)}
}

func emptyDocument(d *yaml.Node) bool {
	if len(d.Content) == 0 {
		return true
	}
	n := d.Content[0]
	return len(d.Content) == 1 && n.Kind == yaml.ScalarNode && n.Tag == "!!null" && n.Value == ""
}

// documentLine is the line of the second document's "---": yaml reports the
// line of its first node, and the separator is the line above it.
func documentLine(d *yaml.Node) int {
	line := d.Line
	if len(d.Content) > 0 {
		line = d.Content[0].Line
	}
	return max(line-1, 1)
}

// reader collects refusals; past MaxRefusals it only counts them (more) and
// keeps where the first of those is, so a huge bad manifest costs no
// message formatting beyond the ones shown.
type reader struct {
	errs      refusal.List
	more      int
	firstMore Position
}

func (r *reader) failed() bool { return len(r.errs) > 0 }

func (r *reader) fail(f *refusal.Refusal) {
	if len(r.errs) < MaxRefusals {
		r.errs = append(r.errs, f)
		return
	}
	r.counted(Position{f.Line, f.Column})
}

func (r *reader) counted(p Position) {
	if r.more == 0 {
		r.firstMore = p
	}
	r.more++
}

func (r *reader) failAt(n *yaml.Node, code refusal.Code, format string, args ...any) {
	if len(r.errs) >= MaxRefusals {
		r.counted(pos(n))
		return
	}
	r.fail(refusal.New(code, format, args...).At(n.Line, n.Column))
}

// report is the refusals shown, and when there were more, one more that
// counts the rest and points at the first of them.
func (r *reader) report() refusal.List {
	if r.more == 0 {
		return r.errs
	}
	return append(r.errs, refusal.New(ManifestMoreProblems, "and %d more problems in the manifest, not shown (the first of them)", r.more).
		At(r.firstMore.Line, r.firstMore.Column))
}
