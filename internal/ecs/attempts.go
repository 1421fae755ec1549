package ecs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// AttemptsInvalid refuses recorded_attempts that cannot be read.
var AttemptsInvalid = refusal.Register("AF-ECS-020",
	"recorded_attempts is not a list of recorded probe attempts (path, target, result reached or blocked, time).",
	`Pass the probe's output: a JSON list of {"path": "<path id>", "target": "169.254.169.254:80", "result": "blocked", "time": "2025-01-01T00:00:00Z"}.`)

// Attempt results. "escaped", the containment probe's word for an escape
// attempt that got out, is read as reached.
const (
	Reached = "reached"
	Blocked = "blocked"
	escaped = "escaped"
)

// Attempt is one escape attempt made inside a running task, as the
// containment probe records it.
type Attempt struct {
	Path   string    `json:"path"`
	Target string    `json:"target"`
	Result string    `json:"result"`
	Time   time.Time `json:"time"`
}

func (a Attempt) String() string {
	return fmt.Sprintf("%s %s at %s", a.Result, a.Target, a.Time.UTC().Format(time.RFC3339))
}

// ParseAttempts reads recorded attempts: a JSON list of objects with path
// (one of the thirteen path ids), target, result (reached or blocked;
// escaped reads as reached) and
// time (RFC 3339). Empty input is no attempts. Every problem is refused
// (AF-ECS-020), naming the entry, on the recorded_attempts attribute.
func ParseAttempts(raw string) ([]Attempt, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.DisallowUnknownFields()
	var list []Attempt
	if err := dec.Decode(&list); err != nil {
		return nil, refusal.List{refusal.New(AttemptsInvalid, "recorded_attempts is not a JSON list of attempts: %v", err).OnAttribute("recorded_attempts")}
	}
	known := map[string]bool{}
	for _, id := range PathIDs() {
		known[id] = true
	}
	var errs refusal.List
	for i := range list {
		if list[i].Result == escaped {
			list[i].Result = Reached
		}
		a := list[i]
		var why []string
		if !known[a.Path] {
			why = append(why, fmt.Sprintf("path %q is not one of %s", a.Path, strings.Join(PathIDs(), ", ")))
		}
		if strings.TrimSpace(a.Target) == "" {
			why = append(why, "target is empty")
		}
		if a.Result != Reached && a.Result != Blocked {
			why = append(why, fmt.Sprintf("result %q is neither %q nor %q", a.Result, Reached, Blocked))
		}
		if a.Time.IsZero() {
			why = append(why, "time is missing")
		}
		if len(why) > 0 {
			errs = append(errs, refusal.New(AttemptsInvalid, "recorded_attempts entry %d: %s", i+1, strings.Join(why, "; ")).OnAttribute("recorded_attempts"))
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return list, nil
}

// applyAttempts folds the recorded attempts for one path into its verdict.
// A recorded escape turns any path open. A recorded block closes an
// unproven path (evidence recorded). A recorded block beside a computed
// closure is listed, not merged: they are different claims. A recorded block
// never closes a path the documentation says is open; the disagreement is
// reported.
func applyAttempts(pv *PathVerdict, attempts []Attempt) {
	var reached, blocked []Attempt
	for _, a := range attempts {
		if a.Path != pv.ID {
			continue
		}
		pv.Attempts = append(pv.Attempts, a)
		if a.Result == Reached {
			reached = append(reached, a)
		} else {
			blocked = append(blocked, a)
		}
	}
	if len(pv.Attempts) == 0 {
		return
	}
	list := func(as []Attempt) string {
		parts := make([]string, len(as))
		for i, a := range as {
			parts[i] = a.String()
		}
		return strings.Join(parts, "; ")
	}
	switch {
	case len(reached) > 0:
		was := fmt.Sprintf("%s (%s)", pv.Verdict, pv.Evidence)
		pv.Verdict, pv.Evidence, pv.ClosedBy = Open, Recorded, ""
		pv.Detail = fmt.Sprintf("Recorded escape inside a running task: %s. The verdict from the configuration was %s; the recorded attempt overrides it. %s", list(reached), was, pv.Detail)
		if len(blocked) > 0 {
			pv.Detail += " Also recorded: " + list(blocked) + "."
		}
	case pv.Verdict == Unproven:
		pv.Verdict, pv.Evidence = Closed, Recorded
		pv.ClosedBy = "recorded attempt: " + list(blocked)
		pv.Detail = fmt.Sprintf("Closed by a recorded attempt inside a running task (%s), not by the configuration or the documentation. %s", list(blocked), pv.Detail)
	case pv.Verdict == Closed:
		pv.Detail += " Recorded separately, not merged into the computed closure: " + list(blocked) + "."
	default: // open, documented or computed
		pv.Detail += " A recorded attempt was blocked (" + list(blocked) + "), which disagrees with the verdict; one blocked attempt does not outweigh it, so the path stays open."
	}
}
