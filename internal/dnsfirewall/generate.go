package dnsfirewall

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/route53resolver/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// The generator's refusals.
var (
	HostUnrepresentable = refusal.Register("AF-DNS-001",
		"An egress catalogue host cannot be written as a Route 53 Resolver DNS Firewall domain (for example it contains an underscore or non-ASCII letters). It is refused by name rather than dropped from the rule group or widened to a wildcard.",
		"Write an internationalised name in its ASCII (xn--) form; a host with an underscore cannot be expressed in DNS Firewall: remove it from the catalogue or run the environment on kubernetes, whose egress gateway answers it.")
	HostNeededByRuntime = refusal.Register("AF-DNS-002",
		"An egress catalogue host answered locally covers a name the runtime itself must resolve (its own VPC endpoints), so DNS Firewall cannot both block it and let the environment start.",
		"Narrow the catalogue entry so it does not cover the runtime's endpoint names, or run the environment on kubernetes.")
)

// Rule names and priorities of generated groups.
const (
	// TerminalRuleName is the last rule of every generated group: BLOCK on *.
	TerminalRuleName = "block-everything-else"
	// PriorityStep spaces generated priorities (100, 200, …) so rules can be
	// inserted by hand later, as AWS recommends.
	PriorityStep = 100
	// maxRuleName is DNS Firewall's limit on a rule name.
	maxRuleName = 64
)

// PlatformName is a name the runtime itself must resolve (for ECS, the
// private DNS names of its own VPC endpoints). The generator allows it like a
// forwarded catalogue host.
type PlatformName struct {
	Name   string // rule name
	Domain string
}

// Generate writes the rule group for an egress catalogue: an explicit BLOCK
// for every host answered locally (block, mock, capture, synth) ahead of any
// ALLOW that would cover it, an ALLOW for every host forwarded for real (allow,
// sandbox) and for every platform name, and a terminal BLOCK on * last.
//
// Rules are ordered from the most specific domain to the least (exact names,
// then wildcards with more labels first), so a BLOCK for a host always comes
// before an ALLOW wildcard covering it, and an ALLOW for a host the catalogue
// forwards comes before a BLOCK wildcard covering it. Priorities are 100, 200, ….
//
// A host that cannot be a DNS Firewall domain is refused by name
// (AF-DNS-001), never dropped or widened; so is a locally answered host
// covering a platform name (AF-DNS-002). All refusals are returned together.
func Generate(catalogue []manifest.EgressRule, platform []PlatformName) ([]Rule, error) {
	type entry struct {
		rule  Rule
		local bool
		index int
	}
	var entries []entry
	var errs refusal.List
	for i, e := range catalogue {
		if err := ValidDomain(e.Host); err != nil {
			errs = append(errs, refusal.New(HostUnrepresentable,
				"Egress host %q cannot be written as a DNS Firewall domain: %s", e.Host, err).
				At(e.Pos.Line, e.Pos.Column).OnAttribute("manifest"))
			continue
		}
		action := types.ActionAllow
		if !e.Mode.Forwarded() {
			action = types.ActionBlock
			for _, p := range platform {
				if DomainMatches(e.Host, p.Domain) || (strings.HasPrefix(p.Domain, "*") && covers(e.Host, p.Domain)) {
					errs = append(errs, refusal.New(HostNeededByRuntime,
						"Egress host %q is answered locally (mode %s), but it covers %s, which the runtime itself must resolve (%s)", e.Host, e.Mode, p.Domain, p.Name).
						At(e.Pos.Line, e.Pos.Column).OnAttribute("manifest"))
				}
			}
		}
		entries = append(entries, entry{
			rule:  Rule{Name: ruleName(string(e.Mode), e.Host), Action: action, Domains: []string{e.Host}},
			local: !e.Mode.Forwarded(),
			index: i,
		})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	for i, p := range platform {
		if err := ValidDomain(p.Domain); err != nil {
			return nil, refusal.New(refusal.Internal, "platform name %q is not a DNS Firewall domain: %s", p.Domain, err)
		}
		entries = append(entries, entry{
			rule:  Rule{Name: p.Name, Action: types.ActionAllow, Domains: []string{p.Domain}},
			index: len(catalogue) + i,
		})
	}
	sort.SliceStable(entries, func(i, j int) bool {
		a, b := entries[i], entries[j]
		if sa, sb := specificity(a.rule.Domains[0]), specificity(b.rule.Domains[0]); sa != sb {
			return sa > sb
		}
		if a.local != b.local {
			return a.local
		}
		return a.index < b.index
	})
	rules := make([]Rule, 0, len(entries)+1)
	used := map[string]bool{TerminalRuleName: true}
	for i, e := range entries {
		r := e.rule
		r.Priority = (i + 1) * PriorityStep
		for n := 2; used[r.Name]; n++ {
			// Two hosts that differ only in punctuation ("a-b.com", "a.b.com").
			r.Name = truncateName(fmt.Sprintf("%s-%d", e.rule.Name, n))
		}
		used[r.Name] = true
		rules = append(rules, r)
	}
	rules = append(rules, Rule{
		Name: TerminalRuleName, Priority: (len(entries) + 1) * PriorityStep,
		Action: types.ActionBlock, Domains: []string{Everything},
	})
	return rules, nil
}

// covers reports whether the catalogue host's names include every name a
// wildcard domain matches (so a BLOCK for the host would also stop them).
func covers(host, wildcard string) bool {
	h, ok := strings.CutPrefix(host, "*")
	if !ok {
		return false
	}
	w := strings.TrimPrefix(wildcard, "*")
	return strings.HasSuffix(w, h)
}

// specificity orders domains: an exact name above any wildcard (exact names
// never overlap, so their order among themselves does not matter); among
// wildcards, more labels above fewer.
func specificity(domain string) int {
	if strings.HasPrefix(domain, "*") {
		return strings.Count(domain, ".") + 1
	}
	return 1000
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// ruleName names the rule for a catalogue host after its mode and host:
// "sandbox-api-stripe-com", "allow-any-githubusercontent-com".
func ruleName(mode, host string) string {
	h := host
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		h = "any-" + rest
	}
	h = strings.Trim(nameUnsafe.ReplaceAllString(strings.ToLower(h), "-"), "-")
	return truncateName(mode + "-" + h)
}

// truncateName keeps a rule name within DNS Firewall's 64 characters, keeping
// it unique with a hash of the whole name.
func truncateName(n string) string {
	if len(n) <= maxRuleName {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:maxRuleName-9] + "-" + hex.EncodeToString(sum[:4])
}
