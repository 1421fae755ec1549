package dnsfirewall

import (
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/route53resolver/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

const (
	allow = types.ActionAllow
	alert = types.ActionAlert
	block = types.ActionBlock
)

func catalogue(t *testing.T, egress string) []manifest.EgressRule {
	t.Helper()
	m, err := manifest.Parse([]byte("name: shop\nruntime:\n  provider: ecs\negress:\n" + egress))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return m.Egress
}

func codes(fs []Finding) []refusal.Code {
	var out []refusal.Code
	for _, f := range fs {
		out = append(out, f.Code)
	}
	return out
}

func TestDomainMatches(t *testing.T) {
	for _, c := range []struct {
		domain, name string
		want         bool
	}{
		{"*", "anything.example.com", true},
		{"*.example.com", "www.example.com", true},
		{"*.example.com", "a.b.example.com", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", "badexample.com", false},
		{"*example.com", "badexample.com", true},
		{"*example.com", "example.com", true},
		{"example.com", "example.com", true},
		{"example.com", "www.example.com", false},
		{"Example.COM.", "example.com", true},
		{"example.com", "EXAMPLE.com.", true},
	} {
		if got := DomainMatches(c.domain, c.name); got != c.want {
			t.Errorf("DomainMatches(%q, %q) = %v, want %v", c.domain, c.name, got, c.want)
		}
	}
}

func TestValidDomain(t *testing.T) {
	for _, c := range []struct {
		domain string
		ok     bool
		why    string
	}{
		{"*", true, ""},
		{"*.example.com", true, ""},
		{"*example.com", true, ""},
		{"api.example.com", true, ""},
		{"xn--bcher-kva.example", true, ""},
		{"a-b.example.com", true, ""},
		{"api.*.example.com", false, "position 5"},
		{"example.*", false, "only start with *"},
		{"**.example.com", false, "only start with *"},
		{"_dmarc.example.com", false, "underscore"},
		{"bücher.example", false, "non-ASCII"},
		{"", false, "empty"},
		{"exa mple.com", false, "' '"},
		{strings.Repeat("a", 256), false, "256 characters"},
		{strings.Repeat("a", 255), true, ""},
	} {
		err := ValidDomain(c.domain)
		if (err == nil) != c.ok {
			t.Errorf("ValidDomain(%q) = %v, want ok=%v", c.domain, err, c.ok)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), c.why) {
			t.Errorf("ValidDomain(%q) = %q, want it to mention %q", c.domain, err, c.why)
		}
	}
}

func TestEvaluateFirstMatchByPriority(t *testing.T) {
	rules := []Rule{
		{Name: "last", Priority: 1000, Action: block, Domains: []string{"*"}},
		{Name: "first", Priority: 5, Action: allow, Domains: []string{"*"}},
	}
	r, ok := Evaluate(rules, "exfil.attacker.example")
	if !ok || r.Name != "first" {
		t.Fatalf("Evaluate = %v %v, want the ALLOW at priority 5", r, ok)
	}
	if _, ok := Evaluate([]Rule{{Name: "a", Priority: 1, Action: block, Domains: []string{"a.com"}}}, "b.com"); ok {
		t.Fatal("a name no rule matches must not be decided")
	}
}

func TestCheck(t *testing.T) {
	terminal := Rule{Name: "block-all", Priority: 1000, Action: block, Domains: []string{"*"}}
	cases := []struct {
		name      string
		in        Input
		want      []refusal.Code
		wantRules [][]string
		mention   string
	}{
		{
			name: "clean",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "allow-api", Priority: 100, Action: allow, Domains: []string{"api.example.com"}},
				terminal,
			}},
		},
		{
			name: "allow everything at 5 ahead of block everything at 1000",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "allow-all", Priority: 5, Action: allow, Domains: []string{"*"}},
				terminal,
			}},
			want:      []refusal.Code{AllowAllAhead},
			wantRules: [][]string{{"allow-all", "block-all"}},
			mention:   "blocks nothing",
		},
		{
			name: "alert everything counts as letting through",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "alert-all", Priority: 5, Action: alert, Domains: []string{"example.com", "*"}},
				terminal,
			}},
			want:      []refusal.Code{AllowAllAhead},
			wantRules: [][]string{{"alert-all", "block-all"}},
		},
		{
			name: "block everything not last",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "block-all", Priority: 100, Action: block, Domains: []string{"*"}},
				{Name: "allow-api", Priority: 200, Action: allow, Domains: []string{"api.example.com"}},
			}},
			want:      []refusal.Code{TerminalNotLast},
			wantRules: [][]string{{"block-all", "allow-api"}},
			mention:   "never consulted",
		},
		{
			name: "two rules share the last priority",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "allow-api", Priority: 100, Action: allow, Domains: []string{"api.example.com"}},
				terminal,
				{Name: "allow-other", Priority: 1000, Action: allow, Domains: []string{"other.example.com"}},
			}},
			want:      []refusal.Code{SharedPriority},
			wantRules: [][]string{{"block-all", "allow-other"}},
			mention:   "last priority",
		},
		{
			name: "a star in the middle",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "allow-apis", Priority: 100, Action: allow, Domains: []string{"api.*.example.com"}},
				terminal,
			}},
			want:      []refusal.Code{BadDomain},
			wantRules: [][]string{{"allow-apis"}},
			mention:   `"api.*.example.com"`,
		},
		{
			name: "fail open enabled",
			in: Input{FailOpen: types.FirewallFailOpenStatusEnabled, Rules: []Rule{
				terminal,
			}},
			want:    []refusal.Code{FailOpenEnabled},
			mention: "ENABLED",
		},
		{
			name:    "fail open left to the resource setting",
			in:      Input{FailOpen: types.FirewallFailOpenStatusUseLocalResourceSetting, Rules: []Rule{terminal}},
			want:    []refusal.Code{FailOpenEnabled},
			mention: "USE_LOCAL_RESOURCE_SETTING",
		},
		{
			name:    "fail open unset",
			in:      Input{Rules: []Rule{terminal}},
			want:    []refusal.Code{FailOpenEnabled},
			mention: "not set",
		},
		{
			name: "no terminal block",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "block-evil", Priority: 100, Action: block, Domains: []string{"evil.example.com"}},
			}},
			want:      []refusal.Code{NoTerminalBlock},
			wantRules: [][]string{{"block-evil"}},
		},
		{
			name: "unknown action",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "deny", Priority: 100, Action: "DENY", Domains: []string{"a.example.com"}},
				terminal,
			}},
			want: []refusal.Code{BadRule},
		},
		{
			name: "mock host let through by a wildcard",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "allow-example", Priority: 100, Action: allow, Domains: []string{"*.example.com"}},
				terminal,
			}, Catalogue: catalogue(t, "  - host: hooks.example.com\n    mode: mock\n  - host: \"*.example.com\"\n    mode: allow\n")},
			want:      []refusal.Code{LocalHostLetThrough},
			wantRules: [][]string{{"allow-example"}},
			mention:   "hooks.example.com locally (mode mock, manifest line 5)",
		},
		{
			name: "mock host blocked ahead of the wildcard is fine",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "block-hooks", Priority: 50, Action: block, Domains: []string{"hooks.example.com"}},
				{Name: "allow-example", Priority: 100, Action: allow, Domains: []string{"*.example.com"}},
				terminal,
			}, Catalogue: catalogue(t, "  - host: hooks.example.com\n    mode: mock\n  - host: \"*.example.com\"\n    mode: allow\n")},
		},
		{
			name: "capture wildcard let through under it by a narrower alert",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "alert-deep", Priority: 100, Action: alert, Domains: []string{"*.deep.corp.example"}},
				{Name: "block-corp", Priority: 200, Action: block, Domains: []string{"*.corp.example"}},
				terminal,
			}, Catalogue: catalogue(t, "  - host: \"*.corp.example\"\n    mode: capture\n")},
			want:      []refusal.Code{LocalHostLetThrough},
			wantRules: [][]string{{"alert-deep"}},
			mention:   "af-dns-check-probe.deep.corp.example",
		},
		{
			name: "a forwarded host under a local wildcard may resolve",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{
				{Name: "allow-api", Priority: 100, Action: allow, Domains: []string{"api.corp.example"}},
				{Name: "block-corp", Priority: 200, Action: block, Domains: []string{"*.corp.example"}},
				terminal,
			}, Catalogue: catalogue(t, "  - host: \"*.corp.example\"\n    mode: synth\n  - host: api.corp.example\n    mode: sandbox\n")},
		},
		{
			name: "a local host the rules never name is blocked by the terminal rule",
			in: Input{FailOpen: types.FirewallFailOpenStatusDisabled, Rules: []Rule{terminal},
				Catalogue: catalogue(t, "  - host: \"*.corp.example\"\n    mode: block\n")},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Check(c.in)
			if !reflect.DeepEqual(codes(got), c.want) {
				t.Fatalf("codes = %v, want %v\n%v", codes(got), c.want, got)
			}
			for i, want := range c.wantRules {
				if !reflect.DeepEqual(got[i].Rules, want) {
					t.Errorf("finding %d names %v, want %v", i, got[i].Rules, want)
				}
			}
			if c.mention != "" && !strings.Contains(got[0].Message, c.mention) {
				t.Errorf("message %q does not mention %q", got[0].Message, c.mention)
			}
			for _, f := range got {
				if !f.Code.Known() {
					t.Errorf("code %s is not registered", f.Code)
				}
			}
		})
	}
}

func TestCheckReportsEveryFinding(t *testing.T) {
	got := Check(Input{FailOpen: types.FirewallFailOpenStatusEnabled, Rules: []Rule{
		{Name: "allow-all", Priority: 5, Action: allow, Domains: []string{"*"}},
		{Name: "block-all", Priority: 100, Action: block, Domains: []string{"*"}},
		{Name: "bad", Priority: 200, Action: allow, Domains: []string{"a.*.example"}},
		{Name: "twin", Priority: 200, Action: allow, Domains: []string{"b.example"}},
	}})
	want := []refusal.Code{BadDomain, SharedPriority, TerminalNotLast, AllowAllAhead, FailOpenEnabled}
	if !reflect.DeepEqual(codes(got), want) {
		t.Fatalf("codes = %v, want %v\n%v", codes(got), want, got)
	}
}

const sampleEgress = `  - host: api.stripe.com
    mode: sandbox
  - host: "*.githubusercontent.com"
    mode: allow
  - host: hooks.slack.com
    mode: capture
  - host: raw.githubusercontent.com
    mode: mock
  - host: "*.internal.example"
    mode: block
  - host: api.internal.example
    mode: allow
  - host: "*.synth.example"
    mode: synth
`

func TestGenerate(t *testing.T) {
	cat := catalogue(t, sampleEgress)
	rules, err := Generate(cat, []PlatformName{{Name: "platform-logs", Domain: "logs.eu-west-1.amazonaws.com"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, fmt.Sprintf("%d %s %s %s", r.Priority, r.Action, r.Name, strings.Join(r.Domains, ",")))
	}
	want := []string{
		"100 BLOCK capture-hooks-slack-com hooks.slack.com",
		"200 BLOCK mock-raw-githubusercontent-com raw.githubusercontent.com",
		"300 ALLOW sandbox-api-stripe-com api.stripe.com",
		"400 ALLOW allow-api-internal-example api.internal.example",
		"500 ALLOW platform-logs logs.eu-west-1.amazonaws.com",
		"600 BLOCK block-any-internal-example *.internal.example",
		"700 BLOCK synth-any-synth-example *.synth.example",
		"800 ALLOW allow-any-githubusercontent-com *.githubusercontent.com",
		"900 BLOCK block-everything-else *",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if f := Check(Input{Rules: rules, FailOpen: types.FirewallFailOpenStatusDisabled, Catalogue: cat}); len(f) != 0 {
		t.Fatalf("the generated group fails its own check: %v", f)
	}
	// Locally answered hosts do not resolve; forwarded ones do.
	for _, c := range []struct {
		name string
		pass bool
	}{
		{"hooks.slack.com", false},
		{"raw.githubusercontent.com", false},
		{"objects.githubusercontent.com", true},
		{"api.stripe.com", true},
		{"db.internal.example", false},
		{"api.internal.example", true},
		{"x.synth.example", false},
		{"exfil.attacker.example", false},
		{"logs.eu-west-1.amazonaws.com", true},
	} {
		r, _ := Evaluate(rules, c.name)
		if r.Passes() != c.pass {
			t.Errorf("%s decided by %s (%s): passes=%v, want %v", c.name, r.Name, r.Action, r.Passes(), c.pass)
		}
	}
}

func TestGenerateRefusesUnrepresentableHostsByName(t *testing.T) {
	cat := catalogue(t, `  - host: api.stripe.com
    mode: allow
  - host: _dmarc.example.com
    mode: mock
  - host: bücher.example
    mode: allow
`)
	_, err := Generate(cat, nil)
	list := refusal.All(err)
	if len(list) != 2 {
		t.Fatalf("want one refusal per host, got %v", err)
	}
	for i, want := range []struct {
		host string
		line int
		why  string
	}{{"_dmarc.example.com", 7, "underscore"}, {"bücher.example", 9, "non-ASCII"}} {
		r := list[i]
		if r.Code != HostUnrepresentable || !strings.Contains(r.Summary, want.host) || !strings.Contains(r.Summary, want.why) || r.Line != want.line || r.Attribute != "manifest" {
			t.Errorf("refusal %d = %+v, want %s naming %q at line %d", i, r, HostUnrepresentable, want.host, want.line)
		}
		if !strings.HasSuffix(r.Body(), "Nothing was created.") {
			t.Errorf("body %q", r.Body())
		}
	}
}

func TestGenerateRefusesLocalHostCoveringPlatformName(t *testing.T) {
	cat := catalogue(t, "  - host: \"*.amazonaws.com\"\n    mode: mock\n")
	_, err := Generate(cat, []PlatformName{
		{Name: "platform-ecr-dkr", Domain: "*.dkr.ecr.eu-west-1.amazonaws.com"},
		{Name: "platform-logs", Domain: "logs.eu-west-1.amazonaws.com"},
	})
	list := refusal.All(err)
	if len(list) != 2 || list[0].Code != HostNeededByRuntime || !strings.Contains(list[0].Summary, "*.dkr.ecr.eu-west-1.amazonaws.com") {
		t.Fatalf("got %v", err)
	}
}

func TestGenerateNeverDropsOrWidens(t *testing.T) {
	cat := catalogue(t, sampleEgress)
	rules, err := Generate(cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(cat)+1 {
		t.Fatalf("%d rules for %d hosts", len(rules), len(cat))
	}
	for i, e := range cat {
		found := false
		for _, r := range rules {
			if len(r.Domains) == 1 && r.Domains[0] == e.Host {
				found = true
				if (r.Action == allow) != e.Mode.Forwarded() {
					t.Errorf("host %s mode %s got action %s", e.Host, e.Mode, r.Action)
				}
			}
		}
		if !found {
			t.Errorf("host %d %s has no rule of its own", i, e.Host)
		}
	}
}

// TestGeneratedGroupsAlwaysPassTheCheck generates random catalogues over a
// small alphabet of overlapping names and requires every generated group to
// pass the check and to decide every catalogue name as the catalogue does.
func TestGeneratedGroupsAlwaysPassTheCheck(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	labels := []string{"a", "b", "api", "corp"}
	modes := manifest.Modes
	for iter := 0; iter < 300; iter++ {
		var b strings.Builder
		seen := map[string]bool{}
		for n := rng.Intn(6) + 1; n > 0; n-- {
			depth := rng.Intn(3) + 1
			parts := []string{"example"}
			for d := 0; d < depth; d++ {
				parts = append([]string{labels[rng.Intn(len(labels))]}, parts...)
			}
			host := strings.Join(parts, ".")
			if rng.Intn(2) == 0 {
				host = "*." + host
			}
			if seen[host] {
				continue
			}
			seen[host] = true
			fmt.Fprintf(&b, "  - host: %q\n    mode: %s\n", host, modes[rng.Intn(len(modes))])
		}
		cat := catalogue(t, b.String())
		rules, err := Generate(cat, nil)
		if err != nil {
			t.Fatal(err)
		}
		if f := Check(Input{Rules: rules, FailOpen: types.FirewallFailOpenStatusDisabled, Catalogue: cat}); len(f) != 0 {
			t.Fatalf("catalogue:\n%s\nfindings: %v\nrules: %v", b.String(), f, rules)
		}
		for _, e := range cat {
			name := strings.Replace(e.Host, "*", "probe", 1)
			eff, _ := effectiveEntry(cat, name)
			r, _ := Evaluate(rules, name)
			if r.Passes() != eff.Mode.Forwarded() {
				t.Fatalf("catalogue:\n%s\n%s (decided by catalogue entry %s, %s) got rule %s %s", b.String(), name, eff.Host, eff.Mode, r.Name, r.Action)
			}
		}
	}
}

func TestSDKRoundTrip(t *testing.T) {
	rules, err := Generate(catalogue(t, sampleEgress), nil)
	if err != nil {
		t.Fatal(err)
	}
	g := ToSDK("antifailure-shop", rules)
	if len(g.Rules) != len(rules) || len(g.DomainLists) != len(rules) || *g.RuleGroup.RuleCount != int32(len(rules)) {
		t.Fatalf("group %+v", g)
	}
	back, err := FromSDK(g.Rules, g.Domains)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rules) {
		t.Fatalf("round trip:\n%v\nwant\n%v", back, rules)
	}
	delete(g.Domains, *g.Rules[0].FirewallDomainListId)
	if _, err := FromSDK(g.Rules, g.Domains); err == nil || !strings.Contains(err.Error(), rules[0].Name) {
		t.Fatalf("a missing domain list must be named, got %v", err)
	}
}

func TestRuleNames(t *testing.T) {
	long := strings.Repeat("a", 60) + ".example.com"
	n := ruleName("allow", long)
	if len(n) > 64 || !strings.HasPrefix(n, "allow-aaaa") {
		t.Fatalf("ruleName(%q) = %q", long, n)
	}
	if n == ruleName("allow", strings.Repeat("a", 60)+".example.org") {
		t.Fatal("truncated names must stay distinct")
	}
	rules, err := Generate(catalogue(t, "  - host: a-b.example\n    mode: allow\n  - host: a.b.example\n    mode: allow\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if rules[0].Name == rules[1].Name {
		t.Fatalf("duplicate rule names %q", rules[0].Name)
	}
}

func BenchmarkCheck(b *testing.B) {
	var cat []manifest.EgressRule
	for i := 0; i < 100; i++ {
		mode := manifest.ModeAllow
		if i%2 == 0 {
			mode = manifest.ModeMock
		}
		host := fmt.Sprintf("h%d.example.com", i)
		if i%5 == 0 {
			host = fmt.Sprintf("*.w%d.example.com", i)
		}
		cat = append(cat, manifest.EgressRule{Host: host, Mode: mode})
	}
	rules, err := Generate(cat, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if f := Check(Input{Rules: rules, FailOpen: types.FirewallFailOpenStatusDisabled, Catalogue: cat}); len(f) != 0 {
			b.Fatal(f)
		}
	}
}
