// Package dnsfirewall reads and writes Route 53 Resolver DNS Firewall rule
// groups.
//
// A rule group is read the way Route 53 Resolver reads it: rules by priority
// from the lowest number up, and the first rule whose domain list matches the
// query name ends evaluation. ALLOW and ALERT let the query through, BLOCK
// stops it. Check refuses the shapes of a rule group that look closed and are
// not; Generate writes the rule group for an egress catalogue.
//
// Both work on any rule group, not only the ones this provider generates.
package dnsfirewall

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/route53resolver/types"
)

// Rule is one DNS Firewall rule as the check reads it: the rule's name,
// priority and action, and the domains of the domain list it references.
type Rule struct {
	Name     string
	Priority int
	Action   types.Action
	Domains  []string
}

// label names the rule in messages, also when it has no name.
func (r Rule) label() string {
	if r.Name == "" {
		return fmt.Sprintf("(unnamed rule at priority %d)", r.Priority)
	}
	return r.Name
}

// Passes reports whether the rule's action lets a matching query through.
func (r Rule) Passes() bool { return r.Action == types.ActionAllow || r.Action == types.ActionAlert }

// Everything is the domain that matches every query name.
const Everything = "*"

// MatchesEverything reports whether the rule's domain list holds "*".
func (r Rule) MatchesEverything() bool {
	for _, d := range r.Domains {
		if normalize(d) == Everything {
			return true
		}
	}
	return false
}

// Matches reports whether the rule's domain list matches the query name.
func (r Rule) Matches(name string) bool {
	for _, d := range r.Domains {
		if DomainMatches(d, name) {
			return true
		}
	}
	return false
}

// normalize lower-cases a domain or name and drops one trailing dot: DNS names
// are case-insensitive and "example.com." is "example.com".
func normalize(s string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
}

// DomainMatches reports whether a DNS Firewall domain matches a query name.
// A domain without a star matches that name only. A domain starting with "*"
// matches every name ending in the rest of it: "*.example.com" matches
// www.example.com and a.b.example.com but not example.com; "*" alone matches
// every name.
func DomainMatches(domain, name string) bool {
	d, n := normalize(domain), normalize(name)
	if rest, ok := strings.CutPrefix(d, "*"); ok {
		return strings.HasSuffix(n, rest)
	}
	return d == n
}

// maxDomainLength is DNS Firewall's limit on one domain list entry.
const maxDomainLength = 255

// ValidDomain says why d cannot be a DNS Firewall domain list entry, or
// returns nil. An entry may start with "*"; otherwise it holds letters, digits,
// hyphens and dots, 1–255 characters (UpdateFirewallDomains' rule).
func ValidDomain(d string) error {
	if d == "" {
		return errors.New("it is empty")
	}
	if len(d) > maxDomainLength {
		return fmt.Errorf("it is %d characters long; DNS Firewall takes 1-%d", len(d), maxDomainLength)
	}
	rest := strings.TrimPrefix(d, "*")
	offset := len(d) - len(rest)
	for i, c := range rest {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.':
		case c == '*':
			return fmt.Errorf("it has a * at position %d; a domain list entry may only start with *", offset+i+1)
		case c == '_':
			return errors.New("it contains an underscore, which DNS Firewall domain lists cannot hold")
		case c > 127:
			return fmt.Errorf("it contains the non-ASCII character %q; DNS Firewall domain lists hold ASCII letters, digits, hyphens and dots only", c)
		default:
			return fmt.Errorf("it contains %q; DNS Firewall domain lists hold letters, digits, hyphens and dots only", c)
		}
	}
	return nil
}

// Ordered returns the rules in evaluation order: by priority, lowest first;
// rules sharing a priority (which AWS refuses) keep their input order.
func Ordered(rules []Rule) []Rule {
	out := append([]Rule(nil), rules...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out
}

// Evaluate returns the rule that decides a query for name: the first rule, in
// evaluation order, whose domain list matches. ok is false when no rule
// matches, in which case Route 53 Resolver answers the query.
func Evaluate(rules []Rule, name string) (decided Rule, ok bool) {
	return firstMatch(Ordered(rules), name)
}

// SDKGroup is a rule group in the shapes of the Route 53 Resolver API: the
// rule group, its rules, the domain lists they reference and the domains of
// each list (by domain list id).
type SDKGroup struct {
	RuleGroup   types.FirewallRuleGroup
	Rules       []types.FirewallRule
	DomainLists []types.FirewallDomainList
	Domains     map[string][]string
}

// FromSDK reads a rule group in the API's shapes into the rules Check takes.
// A rule referencing a domain list that is not in domains is an error: the
// check would otherwise judge a rule that matches nothing.
func FromSDK(rules []types.FirewallRule, domains map[string][]string) ([]Rule, error) {
	out := make([]Rule, 0, len(rules))
	for _, r := range rules {
		rule := Rule{Action: r.Action}
		if r.Name != nil {
			rule.Name = *r.Name
		}
		if r.Priority != nil {
			rule.Priority = int(*r.Priority)
		}
		if r.FirewallDomainListId == nil {
			return nil, fmt.Errorf("rule %s references no domain list", rule.label())
		}
		d, ok := domains[*r.FirewallDomainListId]
		if !ok {
			return nil, fmt.Errorf("rule %s references domain list %s, whose domains were not given", rule.label(), *r.FirewallDomainListId)
		}
		rule.Domains = append([]string(nil), d...)
		out = append(out, rule)
	}
	return out, nil
}

// ToSDK writes rules in the API's shapes, one domain list per rule, with
// identifiers "<group>/<rule>" standing in for the ones AWS assigns.
func ToSDK(group string, rules []Rule) SDKGroup {
	g := SDKGroup{
		RuleGroup: types.FirewallRuleGroup{Name: ptr(group), Id: ptr(group), RuleCount: ptr(int32(len(rules)))},
		Domains:   map[string][]string{},
	}
	for _, r := range Ordered(rules) {
		id := group + "/" + r.Name
		g.DomainLists = append(g.DomainLists, types.FirewallDomainList{Id: ptr(id), Name: ptr(id), DomainCount: ptr(int32(len(r.Domains)))})
		g.Domains[id] = append([]string(nil), r.Domains...)
		fr := types.FirewallRule{
			Name: ptr(r.Name), Priority: ptr(int32(r.Priority)), Action: r.Action,
			FirewallDomainListId: ptr(id), FirewallRuleGroupId: ptr(group),
		}
		if r.Action == types.ActionBlock {
			fr.BlockResponse = types.BlockResponseNxdomain
		}
		g.Rules = append(g.Rules, fr)
	}
	return g
}

func ptr[T any](v T) *T { return &v }
