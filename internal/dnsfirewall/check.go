package dnsfirewall

import (
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/route53resolver/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// The check's findings, one code per shape of rule group that lets a query through.
var (
	AllowAllAhead = refusal.Register("AF-DNS-010",
		"An ALLOW or ALERT rule on every domain (*) comes before the terminal BLOCK: it lets every query through, so the BLOCK blocks nothing.",
		"Remove the ALLOW/ALERT * rule, or replace it with rules naming the domains that must resolve.")
	TerminalNotLast = refusal.Register("AF-DNS-011",
		"The BLOCK on every domain (*) is not the rule group's last rule by priority: the rules after it are never consulted, and the group does not end where it looks like it ends.",
		"Give the BLOCK * rule the highest priority number in the rule group, or remove the rules after it.")
	SharedPriority = refusal.Register("AF-DNS-012",
		"Two or more rules share a priority, which AWS refuses (a priority must be unique in a rule group) and which leaves their order undefined.",
		"Give every rule its own priority.")
	BadDomain = refusal.Register("AF-DNS-013",
		"A domain list entry is not something a DNS Firewall domain list can hold: it may start with *, otherwise only letters, digits, hyphens and dots, 1-255 characters.",
		"Rewrite the entry: a * only at the front (\"*.example.com\"), no underscores, non-ASCII names in their xn-- form.")
	FailOpenEnabled = refusal.Register("AF-DNS-014",
		"The firewall config does not set FirewallFailOpen to DISABLED: when DNS Firewall cannot evaluate a query it lets it through.",
		"Set FirewallFailOpen (firewall_fail_open in aws_route53_resolver_firewall_config) to DISABLED.")
	LocalHostLetThrough = refusal.Register("AF-DNS-015",
		"A host the egress catalogue answers locally (block, mock, capture, synth) is let through by an ALLOW or ALERT rule that comes before any BLOCK covering it, so it resolves publicly: a route around the manifest's decision.",
		"Put a BLOCK rule naming the host ahead of the ALLOW/ALERT rule, or narrow the ALLOW/ALERT rule's domains.")
	NoTerminalBlock = refusal.Register("AF-DNS-016",
		"The rule group has no BLOCK rule on every domain (*): a query no rule matches is answered.",
		"Add a BLOCK rule on the domain * with the highest priority number in the rule group.")
	BadRule = refusal.Register("AF-DNS-017",
		"A rule is not a DNS Firewall rule the check can read (an action other than ALLOW, ALERT or BLOCK).",
		"Give the rule one of the actions ALLOW, ALERT, BLOCK.")
)

// Finding is one refused shape, naming the rules involved.
type Finding struct {
	Code    refusal.Code
	Message string
	Rules   []string
}

func (f Finding) String() string { return fmt.Sprintf("%s %s", f.Code, f.Message) }

// Input is a rule group to check.
type Input struct {
	Rules []Rule
	// FailOpen is the VPC firewall config's FirewallFailOpen; anything but
	// DISABLED (including unset) is a finding.
	FailOpen types.FirewallFailOpenStatus
	// Catalogue is optional: with it, the check also refuses a locally answered
	// catalogue host that an ALLOW or ALERT lets through.
	Catalogue []manifest.EgressRule
}

// Check returns the findings for a rule group, in a stable order; none means
// the group blocks every query its rules do not name and does not fail open.
func Check(in Input) []Finding {
	var out []Finding
	add := func(code refusal.Code, rules []string, format string, args ...any) {
		out = append(out, Finding{Code: code, Message: fmt.Sprintf(format, args...), Rules: rules})
	}
	ordered := Ordered(in.Rules)

	for _, r := range ordered {
		switch r.Action {
		case types.ActionAllow, types.ActionAlert, types.ActionBlock:
		default:
			add(BadRule, []string{r.label()}, "Rule %s has the action %q; DNS Firewall rules are ALLOW, ALERT or BLOCK.", r.label(), string(r.Action))
		}
		for _, d := range r.Domains {
			if err := ValidDomain(d); err != nil {
				add(BadDomain, []string{r.label()}, "Rule %s: the domain %q cannot be a DNS Firewall domain list entry: %s.", r.label(), d, err)
			}
		}
	}

	// Shared priorities, in priority order.
	byPriority := map[int][]string{}
	var priorities []int
	for _, r := range ordered {
		if _, seen := byPriority[r.Priority]; !seen {
			priorities = append(priorities, r.Priority)
		}
		byPriority[r.Priority] = append(byPriority[r.Priority], r.label())
	}
	for i, p := range priorities {
		names := byPriority[p]
		if len(names) < 2 {
			continue
		}
		where := ""
		if i == len(priorities)-1 {
			where = " the last priority, so the group has no single last rule;"
		}
		add(SharedPriority, names, "Rules %s share priority %d:%s AWS requires a unique priority for each rule in a rule group.", join(names), p, where)
	}

	// The terminal BLOCK: the first BLOCK on every domain in evaluation order.
	// Everything after it is never consulted.
	term := -1
	for i, r := range ordered {
		if r.Action == types.ActionBlock && r.MatchesEverything() {
			term = i
			break
		}
	}
	if term < 0 {
		var names []string
		if len(ordered) > 0 {
			names = []string{ordered[len(ordered)-1].label()}
		}
		add(NoTerminalBlock, names, "No rule blocks every domain: a query that matches none of the %d rule(s) is answered. The last rule should be BLOCK on *.", len(ordered))
	} else {
		t := ordered[term]
		var after []string
		for _, r := range ordered[term+1:] {
			if r.Priority > t.Priority {
				after = append(after, r.label())
			}
		}
		if len(after) > 0 {
			add(TerminalNotLast, append([]string{t.label()}, after...),
				"Rule %s blocks every domain at priority %d, but %s come(s) after it by priority and are never consulted: the BLOCK * must be the last rule.",
				t.label(), t.Priority, join(after))
		}
		for _, r := range ordered[:term] {
			if r.Passes() && r.MatchesEverything() && r.Priority < t.Priority {
				add(AllowAllAhead, []string{r.label(), t.label()},
					"Rule %s (%s on every domain, priority %d) comes before %s (BLOCK *, priority %d): %s lets every query through, so the BLOCK blocks nothing.",
					r.label(), r.Action, r.Priority, t.label(), t.Priority, r.Action)
			}
		}
	}

	if in.FailOpen != types.FirewallFailOpenStatusDisabled {
		state := string(in.FailOpen)
		if state == "" {
			state = "not set"
		}
		add(FailOpenEnabled, nil, "FirewallFailOpen is %s: when DNS Firewall cannot evaluate a query it lets it through. It must be DISABLED.", state)
	}

	out = append(out, localHostsLetThrough(ordered, in.Catalogue)...)
	return out
}

// localHostsLetThrough finds catalogue hosts answered locally that an ALLOW or
// ALERT rule lets through. For a wildcard host it tries one name per rule
// domain and catalogue entry that falls under the wildcard, which finds every
// rule that lets some name under it through (rules match by suffix).
func localHostsLetThrough(ordered []Rule, catalogue []manifest.EgressRule) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, e := range catalogue {
		if e.Mode.Forwarded() || e.Host == "" {
			continue
		}
		for _, name := range candidates(e.Host, ordered, catalogue) {
			if eff, ok := effectiveEntry(catalogue, name); !ok || eff.Mode.Forwarded() {
				// A more specific catalogue entry forwards this name: it must resolve.
				continue
			}
			r, ok := firstMatch(ordered, name)
			if !ok || !r.Passes() {
				continue
			}
			key := e.Host + "\x00" + r.label()
			if seen[key] {
				continue
			}
			seen[key] = true
			what := fmt.Sprintf("%q", name)
			if name != e.Host {
				what = fmt.Sprintf("%q (under %q)", name, e.Host)
			}
			out = append(out, Finding{
				Code:  LocalHostLetThrough,
				Rules: []string{r.label()},
				Message: fmt.Sprintf("The egress catalogue answers %s locally (mode %s, manifest line %d), but rule %s (%s, priority %d) lets %s through before any BLOCK: the name resolves publicly.",
					e.Host, e.Mode, e.Pos.Line, r.label(), r.Action, r.Priority, what),
			})
		}
	}
	return out
}

// firstMatch is Evaluate on rules already in evaluation order.
func firstMatch(ordered []Rule, name string) (Rule, bool) {
	for _, r := range ordered {
		if r.Matches(name) {
			return r, true
		}
	}
	return Rule{}, false
}

// probeLabel is the label put in front of a suffix to name something under it.
const probeLabel = "af-dns-check-probe"

// candidates lists query names covered by a catalogue host: the host itself
// when exact; for "*.s", one name under s for the host and for every rule
// domain and catalogue entry that reaches under s.
func candidates(host string, ordered []Rule, catalogue []manifest.EgressRule) []string {
	if !strings.HasPrefix(host, "*.") {
		return []string{host}
	}
	suffix := host[1:] // ".s"
	set := map[string]bool{probeLabel + suffix: true}
	consider := func(d string) {
		d = normalize(d)
		if rest, ok := strings.CutPrefix(d, "*"); ok {
			if rest == "" {
				return
			}
			if !strings.HasPrefix(rest, ".") {
				set[rest] = true
			}
			set[probeLabel+rest] = true
			if !strings.HasPrefix(rest, ".") {
				set[probeLabel+"."+rest] = true
			}
			return
		}
		set[d] = true
	}
	for _, r := range ordered {
		for _, d := range r.Domains {
			consider(d)
		}
	}
	for _, e := range catalogue {
		consider(e.Host)
	}
	var out []string
	for n := range set {
		if strings.HasSuffix(n, suffix) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// effectiveEntry is the catalogue entry that decides a name: an exact entry,
// else the wildcard with the longest suffix covering it.
func effectiveEntry(catalogue []manifest.EgressRule, name string) (manifest.EgressRule, bool) {
	var best manifest.EgressRule
	bestLen := -1
	for _, e := range catalogue {
		if e.Host == name {
			return e, true
		}
		if rest, ok := strings.CutPrefix(e.Host, "*"); ok && strings.HasSuffix(name, rest) && len(rest) > bestLen {
			best, bestLen = e, len(rest)
		}
	}
	return best, bestLen >= 0
}

func join(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
