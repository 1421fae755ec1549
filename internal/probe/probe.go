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
	Escaped         = refusal.Register("AF-RUN-043", "The containment probe got out: an escape attempt reached its target, so the environment has a way out.", "Fix the network isolation (for Kubernetes: a CNI plugin that enforces NetworkPolicy) and apply again.")
	ControlFailed   = refusal.Register("AF-RUN-044", "The containment probe could not reach the environment's own egress gateway, so its blocked attempts prove nothing.", "Check that the egress gateway is running and reachable from the environment, then apply again.")
	NoAttempts      = refusal.Register("AF-RUN-045", "The containment probe reported no attempts or an unreadable result.", "Read the probe's log for the reason, then apply again.")
	UnclearAttempts = refusal.Register("AF-RUN-110", "The containment probe is inconclusive: an attempt neither got through nor was clearly blocked, so containment is unproven.", "Read the attempt's detail (a tool missing in the probe image, an unexpected exit), fix the probe image or the cluster, then apply again.")
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
	Host         Category = "host"          // the host machine (local runtime)
	Node         Category = "node"          // the pod's own node (kubernetes): reported, never decides
	Tenant       Category = "tenant"        // another environment
	Unix         Category = "unix"          // a host Unix socket (canaries the runtime opens, engines, buses)
	Filesystem   Category = "filesystem"    // a host file, a /proc/<pid>/root path, a host-privileged file, the working directory
	Neighbour    Category = "neighbour"     // another environment's control socket or state
	Signal       Category = "signal"        // signalling the runtime's own processes outside the environment
	Canary       Category = "canary"        // the environment's own canary: a listener no policy admits services to
	Control      Category = "control"       // the positive control: the egress gateway
)

// Outcome is what happened to one attempt.
type Outcome string

// The outcomes. Escape attempts end Blocked, Escape or Unclear; the
// control ends Reached or Failed; an attempt at the node that got through is
// NodeReached.
//
// What counts as what is the same on every runtime (Judge, TCPOutcome, and
// the Kubernetes probe script, which a test runs against the same three
// situations):
//
//   - tcp (public, tcp-dns resolver, metadata, control-plane, tenant, canary,
//     host, node): a completed connection is escaped. A refusal, a reset, an
//     unreachable network or host, or no answer before the timeout is
//     blocked: every target is one that accepts when it is reachable (a
//     public service, a resolver, the API server, a gateway, a canary), and
//     an enforcing plugin answers with exactly these (kube-router REJECTs:
//     "connection refused" after about 1 s). That a refusal also comes from
//     a reachable host with a closed port is why the canary and the positive
//     control exist: an accepting target the policies must block, and one
//     they must let through.
//   - udp-dns: any DNS answer, even an error code, is escaped; no answer is
//     blocked.
//   - dns-lookup: a name resolved is escaped; no answer, or "can't find", is
//     blocked.
//   - anything else (a tool missing in the probe image, an exit status the
//     probe does not know, an outcome this package does not know) is
//     inconclusive, and an inconclusive attempt never lets a verdict be
//     contained.
//   - node: NetworkPolicy never applies between a pod and its own node, so
//     node attempts cannot tell enforcement apart; a node reached is
//     reported as NodeReached with a warning and never decides the verdict.
//     (host, the local runtime's host machine, decides like any other.)
const (
	Blocked     Outcome = "blocked"
	Escape      Outcome = "escaped"
	Unclear     Outcome = "inconclusive"
	NodeReached Outcome = "node-reached"
	Reached     Outcome = "reached"
	Failed      Outcome = "failed"
)

// TCPOutcome judges a TCP connect: err is the dial's result (nil: connected).
func TCPOutcome(err error) Outcome {
	if err == nil {
		return Escape
	}
	return Blocked
}

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
	// Warnings say what the probe saw that does not decide the verdict
	// (a node reached).
	Warnings []string `json:",omitempty"`
}

// Judge turns attempts into a verdict: any escape wins over everything
// else; then any inconclusive attempt; then a failed or missing control; a
// run with no blocked attempt proves nothing. Host attempts never decide
// (see Outcome).
func Judge(attempts []Attempt, duration time.Duration) Result {
	r := Result{Attempts: attempts, Duration: duration}
	controlReached, escapes, unsure, blocked := false, 0, 0, 0
	for i, a := range attempts {
		switch {
		case a.Category == Control:
			if a.Outcome == Reached {
				controlReached = true
			}
		case a.Category == Node:
			if a.Outcome != Blocked {
				attempts[i].Outcome = NodeReached
				r.Warnings = append(r.Warnings, fmt.Sprintf("the probe reached its node at %s (%s); NetworkPolicy does not apply between a pod and its own node, so this does not decide the verdict: restrict node ports on the node itself", a.Target, a.Outcome))
			}
		case a.Outcome == Blocked:
			blocked++
		case a.Outcome == Escape:
			escapes++
		default:
			unsure++
		}
	}
	switch {
	case escapes > 0:
		r.Verdict = NotContained
	case unsure > 0 || blocked == 0:
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
	case Inconclusive:
		if n := r.count(func(a Attempt) bool {
			return a.Category != Control && a.Category != Node && a.Outcome != Blocked && a.Outcome != Escape
		}); n > 0 {
			code, summary = UnclearAttempts, fmt.Sprintf("The containment probe is inconclusive: %d attempts neither got through nor were blocked", n)
			break
		}
		code, summary = NoAttempts, "The containment probe made no escape attempts"
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

// escapes counts the escape attempts that got through.
func (r Result) escapes() int {
	return r.count(func(a Attempt) bool { return a.Category != Control && a.Category != Node && a.Outcome == Escape })
}

func (r Result) controls() int { return r.count(func(a Attempt) bool { return a.Category == Control }) }

func (r Result) count(f func(Attempt) bool) int {
	n := 0
	for _, a := range r.Attempts {
		if f(a) {
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
