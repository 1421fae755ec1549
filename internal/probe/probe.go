// Package probe is the containment probe's attempt model, shared by every
// runtime: what an escape attempt is, how its result is written and read back,
// and the verdict over a set of attempts.
//
// A runtime may start an environment only after the probe, running under
// exactly the rules the services run under, has tried to get out and failed,
// and has reached the environment's own egress gateway. The positive control
// matters as much as the escapes: a probe with no network at all blocks
// everything and proves nothing.
package probe

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Codes this package refuses with.
var (
	Escaped       = refusal.Register("AF-RUN-043", "The containment probe got out: an escape attempt reached its target, so the environment has a way out.", "Fix the network isolation (for Kubernetes: a CNI plugin that enforces NetworkPolicy) and apply again.")
	ControlFailed = refusal.Register("AF-RUN-044", "The containment probe could not reach the environment's own egress gateway, so its blocked attempts prove nothing.", "Check that the egress gateway is running and reachable from the environment, then apply again.")
	NoAttempts    = refusal.Register("AF-RUN-045", "The containment probe reported no attempts or an unreadable result.", "Read the probe's log for the reason, then apply again.")
)

// Category says what an attempt tries to reach.
type Category string

// The categories, in the order a report lists them.
const (
	Public       Category = "public"        // a public address, by literal IP
	Resolver     Category = "resolver"      // a DNS resolver, public or the platform's
	PublicName   Category = "public-name"   // resolving a public name at all
	Metadata     Category = "metadata"      // link-local metadata addresses
	ControlPlane Category = "control-plane" // the cluster's API server
	Host         Category = "host"          // the node or host machine
	Tenant       Category = "tenant"        // another environment
	Unix         Category = "unix"          // a host Unix socket (canaries the runtime opens, engines, buses)
	Filesystem   Category = "filesystem"    // a host file, a /proc/<pid>/root path, a host-privileged file, the working directory
	Neighbour    Category = "neighbour"     // another environment's control socket or state
	Signal       Category = "signal"        // signalling the runtime's own processes outside the environment
	Control      Category = "control"       // the positive control: the egress gateway
)

// Outcome is what happened to one attempt.
type Outcome string

// The outcomes. Escape attempts end Blocked or Escaped; the control ends
// Reached or Failed.
const (
	Blocked Outcome = "blocked"
	Escape  Outcome = "escaped"
	Reached Outcome = "reached"
	Failed  Outcome = "failed"
)

// Attempt is one try and its result.
type Attempt struct {
	Category Category `json:"category"`
	// Method is how it was tried: tcp, udp-dns, tcp-dns, dns-lookup, http; unix,
	// stat, read, write, proc-root, kill for the sandbox categories.
	Method string `json:"method"`
	// Target is a literal address (host:port), so that a DNS failure is never
	// mistaken for a blocked connection; for dns-lookup it is the name.
	Target  string        `json:"target"`
	Outcome Outcome       `json:"outcome"`
	Detail  string        `json:"detail,omitempty"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// String is one human-readable line.
func (a Attempt) String() string {
	s := fmt.Sprintf("%-13s %-10s %-28s %s", a.Category, a.Method, a.Target, a.Outcome)
	if a.Detail != "" {
		s += " (" + a.Detail + ")"
	}
	return s
}

// Verdict is the probe's answer.
type Verdict string

// The verdicts.
const (
	Contained        Verdict = "contained"
	NotContained     Verdict = "escaped"
	ControlNotPassed Verdict = "control_failed"
	Inconclusive     Verdict = "inconclusive"
)

// Result is a whole probe run.
type Result struct {
	Verdict  Verdict
	Attempts []Attempt
	Duration time.Duration
}

// Judge turns attempts into a verdict. Any escape wins over everything else;
// then a failed or missing control; an empty run proves nothing.
func Judge(attempts []Attempt, duration time.Duration) Result {
	r := Result{Attempts: attempts, Duration: duration}
	controlReached, escapes, blocked := false, 0, 0
	for _, a := range attempts {
		switch {
		case a.Category == Control:
			if a.Outcome == Reached {
				controlReached = true
			}
		case a.Outcome == Blocked:
			blocked++
		default:
			// Anything but a clean block counts as out: an unknown outcome
			// is not evidence of containment.
			escapes++
		}
	}
	switch {
	case escapes > 0:
		r.Verdict = NotContained
	case blocked == 0:
		r.Verdict = Inconclusive
	case !controlReached:
		r.Verdict = ControlNotPassed
	default:
		r.Verdict = Contained
	}
	return r
}

// Refusal is nil for a contained result and the matching AF-RUN refusal
// otherwise, listing every attempt and its result.
func (r Result) Refusal(created string) *refusal.Refusal {
	var code refusal.Code
	var summary string
	switch r.Verdict {
	case Contained:
		return nil
	case NotContained:
		code, summary = Escaped, fmt.Sprintf("The containment probe got out: %d of %d attempts escaped", r.escapes(), len(r.Attempts)-r.controls())
	case ControlNotPassed:
		code, summary = ControlFailed, "The containment probe could not reach the egress gateway, so its blocked attempts prove nothing"
	default:
		code, summary = NoAttempts, "The containment probe made no escape attempts"
	}
	lines := make([]string, len(r.Attempts))
	for i, a := range r.Attempts {
		lines[i] = "  " + a.String()
	}
	ref := refusal.New(code, "%s", summary).
		WithDetail("Attempts (probe ran %s):\n%s\nNo application process or image was started.", r.Duration.Round(time.Millisecond), strings.Join(lines, "\n"))
	ref.Created = created
	return ref
}

// escapes counts the escape attempts that were not blocked (as Judge does,
// an unknown outcome counts as out).
func (r Result) escapes() int {
	n := 0
	for _, a := range r.Attempts {
		if a.Category != Control && a.Outcome != Blocked {
			n++
		}
	}
	return n
}

func (r Result) controls() int {
	n := 0
	for _, a := range r.Attempts {
		if a.Category == Control {
			n++
		}
	}
	return n
}

// LinePrefix starts every structured line a probe writes, so that its result
// can be picked out of a log that holds other output too.
const LinePrefix = "AFPROBE "

// Line renders an attempt as one structured line.
func Line(a Attempt) string {
	b, err := json.Marshal(a)
	if err != nil {
		panic(err) // Attempt always marshals
	}
	return LinePrefix + string(b)
}

// ReadLines collects the attempts from a probe's output, ignoring other lines.
// A line that carries the prefix but does not parse is an error: a probe result
// that cannot be read is not a pass.
func ReadLines(r io.Reader) ([]Attempt, error) {
	var out []Attempt
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, LinePrefix)
		if !ok {
			continue
		}
		var a Attempt
		if err := json.Unmarshal([]byte(rest), &a); err != nil {
			return nil, fmt.Errorf("unreadable probe line %q: %w", line, err)
		}
		out = append(out, a)
	}
	return out, sc.Err()
}
