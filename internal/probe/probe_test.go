package probe

import (
	"strings"
	"testing"
	"time"
)

func attempt(c Category, o Outcome) Attempt {
	return Attempt{Category: c, Method: "tcp", Target: "198.51.100.7:443", Outcome: o}
}

func TestJudge(t *testing.T) {
	control := attempt(Control, Reached)
	cases := []struct {
		name     string
		attempts []Attempt
		want     Verdict
		code     string
	}{
		{"every attempt blocked and the control reached", []Attempt{attempt(Public, Blocked), attempt(Metadata, Blocked), control}, Contained, ""},
		{"one escape among blocks", []Attempt{attempt(Public, Blocked), attempt(Host, Escape), control}, NotContained, "AF-RUN-043: 1 of 2 attempts escaped"},
		{"an unknown outcome is not containment", []Attempt{attempt(Public, Blocked), attempt(Public, "timeout?"), control}, Inconclusive, "AF-RUN-110: 1 attempts"},
		{"a tool missing in the probe image is not containment", []Attempt{attempt(Canary, Blocked), attempt(Tenant, Unclear), control}, Inconclusive, "AF-RUN-110"},
		{"an escape wins over an inconclusive attempt", []Attempt{attempt(Canary, Escape), attempt(Tenant, Unclear), control}, NotContained, "AF-RUN-043: 1 of 2"},
		{"the node reached does not decide", []Attempt{attempt(Canary, Blocked), attempt(Node, Escape), control}, Contained, ""},
		{"the node alone proves nothing", []Attempt{attempt(Node, Blocked), control}, Inconclusive, "AF-RUN-045"},
		{"an escape wins over a failed control", []Attempt{attempt(Public, Escape), attempt(Control, Failed)}, NotContained, "AF-RUN-043"},
		{"blocked everything but no control: proves nothing", []Attempt{attempt(Public, Blocked), attempt(Control, Failed)}, ControlNotPassed, "AF-RUN-044"},
		{"control missing entirely", []Attempt{attempt(Public, Blocked)}, ControlNotPassed, "AF-RUN-044"},
		{"no escape attempts at all", []Attempt{control}, Inconclusive, "AF-RUN-045"},
		{"nothing", nil, Inconclusive, "AF-RUN-045"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Judge(c.attempts, 1500*time.Millisecond)
			if r.Verdict != c.want {
				t.Fatalf("verdict = %s, want %s", r.Verdict, c.want)
			}
			ref := r.Refusal("")
			if c.code == "" {
				if ref != nil {
					t.Fatalf("contained result refused: %v", ref)
				}
				return
			}
			code, summary, _ := strings.Cut(c.code, ": ")
			if ref == nil || string(ref.Code) != code || !strings.Contains(ref.Summary, summary) {
				t.Fatalf("refusal = %v, want %s", ref, c.code)
			}
			for _, a := range c.attempts {
				if !strings.Contains(ref.Detail, a.Target) || !strings.Contains(ref.Detail, string(a.Outcome)) {
					t.Fatalf("refusal does not list attempt %v: %s", a, ref.Detail)
				}
			}
			if !strings.HasSuffix(ref.Body(), "Nothing was created.") {
				t.Fatalf("body = %q", ref.Body())
			}
		})
	}
}

func TestJudgeWarnsAboutTheNode(t *testing.T) {
	r := Judge([]Attempt{attempt(Canary, Blocked), attempt(Node, Escape), attempt(Control, Reached)}, time.Second)
	if r.Verdict != Contained || len(r.Warnings) != 1 || r.Attempts[1].Outcome != NodeReached {
		t.Fatalf("verdict %s, warnings %v, node attempt %s", r.Verdict, r.Warnings, r.Attempts[1].Outcome)
	}
}

func TestLinesRoundTrip(t *testing.T) {
	in := []Attempt{attempt(Public, Blocked), {Category: Control, Method: "http", Target: "10.0.0.9:3128", Outcome: Reached, Elapsed: 3 * time.Millisecond}}
	var log strings.Builder
	log.WriteString("starting probe\n")
	for _, a := range in {
		log.WriteString(Line(a) + "\n")
	}
	log.WriteString("done\n")
	out, err := ReadLines(strings.NewReader(log.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("round trip = %+v", out)
	}
	if _, err := ReadLines(strings.NewReader(LinePrefix + "{not json\n")); err == nil {
		t.Fatal("an unreadable probe line must be an error, not a pass")
	}
}
