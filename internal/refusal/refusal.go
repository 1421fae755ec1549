// Package refusal is the AF-… error catalogue: every way the provider says no.
//
// A refusal is never a bare error string. It carries the code a user can search
// for, the one-line summary a Terraform diagnostic shows, the detail, what to do
// next, and whether anything was created, so that the Terraform layer can render
// each one the same way and attach it to the attribute it concerns.
package refusal

import (
	"errors"
	"fmt"
	"strings"
)

// Refusal is one coded refusal.
type Refusal struct {
	Code    Code
	Summary string // one line, without the code
	Detail  string // optional, may span lines
	Next    string // what the user should do; always present
	// Created says what exists because of the refused operation. Empty means
	// nothing was created, which is the normal case for plan-time refusals.
	Created string
	// Line and Column locate the refusal in the manifest (1-based; 0 = unknown).
	Line, Column int
	// Attribute names the Terraform attribute the refusal concerns when it is not
	// the obvious one (for example "license" rather than "manifest").
	Attribute string
	// Warning marks a finding that is reported but does not stop the operation.
	Warning bool
}

// New builds a refusal with the catalogue's default Next line for the code.
func New(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Summary: fmt.Sprintf(format, args...), Next: code.Next()}
}

// At locates the refusal in the manifest.
func (r *Refusal) At(line, column int) *Refusal { r.Line, r.Column = line, column; return r }

// WithDetail sets the detail.
func (r *Refusal) WithDetail(format string, args ...any) *Refusal {
	r.Detail = fmt.Sprintf(format, args...)
	return r
}

// WithNext replaces the catalogue's Next line with a more specific one.
func (r *Refusal) WithNext(format string, args ...any) *Refusal {
	r.Next = fmt.Sprintf(format, args...)
	return r
}

// OnAttribute names the Terraform attribute the refusal concerns.
func (r *Refusal) OnAttribute(name string) *Refusal { r.Attribute = name; return r }

// Position is "line:column", or "" when unknown.
func (r *Refusal) Position() string {
	if r.Line == 0 {
		return ""
	}
	return fmt.Sprintf("%d:%d", r.Line, r.Column)
}

// Title is the diagnostic summary: the code first, then the summary. A manifest
// reading refusal ends with its position, because the position is the point;
// other refusals keep the summary as written and give the position in Body.
func (r *Refusal) Title() string {
	if p := r.Position(); p != "" && r.Code.manifest() {
		return fmt.Sprintf("%s %s at line %s", r.Code, r.Summary, p)
	}
	return fmt.Sprintf("%s %s", r.Code, r.Summary)
}

// Body is the diagnostic detail. It ends with the Next line, followed by what was
// created, in the form of the seed text:
//
//	Next: Declare a target under runtime.targets carrying that tag, or relax
//	runtime.requires. Nothing was created.
func (r *Refusal) Body() string {
	var b strings.Builder
	if p := r.Position(); p != "" && !r.Code.manifest() {
		fmt.Fprintf(&b, "Manifest line %s.\n", p)
	}
	if r.Detail != "" {
		b.WriteString(r.Detail)
		b.WriteString("\n\n")
	}
	b.WriteString("Next: ")
	b.WriteString(r.Next)
	if !r.Warning {
		b.WriteString(" ")
		b.WriteString(r.createdSentence())
	}
	return b.String()
}

// RolledBack is the Created sentence of a refusal whose operation made things
// and removed them again before refusing: it names what was made, so that
// nobody reads "Nothing was created." after objects came and went (a watch,
// an audit log, a quota all saw them).
func RolledBack(made []string) string {
	if len(made) == 0 {
		return ""
	}
	return "Created and removed again: " + strings.Join(made, ", ") + ". Nothing is left."
}

func (r *Refusal) createdSentence() string {
	if r.Created == "" {
		return "Nothing was created."
	}
	return r.Created
}

// Error renders the refusal as the text a CLI prints: the title, then the body
// indented by two spaces.
func (r *Refusal) Error() string {
	return r.Title() + "\n  " + strings.ReplaceAll(r.Body(), "\n", "\n  ")
}

// List is several refusals found together (a manifest can be wrong in many places;
// reporting them one plan at a time would waste the user's afternoon).
type List []*Refusal

func (l List) Error() string {
	parts := make([]string, len(l))
	for i, r := range l {
		parts[i] = r.Error()
	}
	return strings.Join(parts, "\n")
}

// All unpacks err into refusals. An error that is not a refusal is wrapped as
// AF-INT-001 so that nothing reaches the user without a code.
func All(err error) List {
	if err == nil {
		return nil
	}
	var list List
	if errors.As(err, &list) {
		return list
	}
	var one *Refusal
	if errors.As(err, &one) {
		return List{one}
	}
	return List{New(Internal, "%s", err.Error())}
}
