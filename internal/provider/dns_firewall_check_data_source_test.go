package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

const dnsCheckAddr = "data.antifailure_dns_firewall_check.this"

func dnsCheckConfig(rules, failOpen, extra string) string {
	return `provider "antifailure" {}

data "antifailure_dns_firewall_check" "this" {
  rules = [
` + rules + `
  ]
  fail_open = "` + failOpen + `"
` + extra + `
}
`
}

const blockAll = `    { name = "block-all", priority = 1000, action = "BLOCK", domains = ["*"] },`

func finding(code string, rules ...string) knownvalue.Check {
	names := make([]knownvalue.Check, len(rules))
	for i, r := range rules {
		names[i] = knownvalue.StringExact(r)
	}
	return knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"code": knownvalue.StringExact(code), "rules": knownvalue.ListExact(names),
	})
}

// By default the check refuses: the plan fails with one error per finding,
// its code first and the rules named; the same group with fail_on_findings =
// false reads, reporting the finding. A clean group passes by default (the
// negative control: the refusal is the findings', not the data source's).
func TestAccDNSFirewallCheck_refusesByDefault(t *testing.T) {
	allowAll := `    { name = "allow-all", priority = 5, action = "ALLOW", domains = ["*"] },` + "\n" + blockAll
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{
			{
				Config:      dnsCheckConfig(allowAll, "DISABLED", ""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Error: AF-DNS-010 Rule allow-all \(ALLOW on every domain, priority 5\) comes\s+before block-all \(BLOCK \*, priority 1000\).*Next: Remove the ALLOW/ALERT \* rule`),
			},
			{
				// Two findings, two errors: the fail-open one on fail_open.
				Config:      dnsCheckConfig(allowAll, "ENABLED", ""),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)AF-DNS-010 Rule allow-all.*AF-DNS-014 FirewallFailOpen is ENABLED.*fail_open\s+= "ENABLED"`),
			},
			{
				Config: dnsCheckConfig(allowAll, "DISABLED", "  fail_on_findings = false"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("ok"), knownvalue.Bool(false)),
					statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("findings"), knownvalue.ListExact([]knownvalue.Check{finding("AF-DNS-010", "allow-all", "block-all")})),
				},
			},
			{
				Config: dnsCheckConfig(`    { name = "allow-api", priority = 100, action = "ALLOW", domains = ["api.example.com"] },`+"\n"+blockAll, "DISABLED", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("ok"), knownvalue.Bool(true)),
				},
			},
		},
	})
}

func TestAccDNSFirewallCheck(t *testing.T) {
	cases := []struct {
		name             string
		rules, failOpen  string
		extra            string
		ok               bool
		findings         []knownvalue.Check
		firstMessageLike *regexp.Regexp
	}{
		{name: "clean", rules: `    { name = "allow-api", priority = 100, action = "ALLOW", domains = ["api.example.com"] },` + "\n" + blockAll,
			failOpen: "DISABLED", ok: true, findings: []knownvalue.Check{}},
		{name: "ALLOW * at 5 ahead of BLOCK * at 1000", rules: `    { name = "allow-all", priority = 5, action = "ALLOW", domains = ["*"] },` + "\n" + blockAll,
			failOpen: "DISABLED", findings: []knownvalue.Check{finding("AF-DNS-010", "allow-all", "block-all")},
			firstMessageLike: regexp.MustCompile(`blocks nothing`)},
		{name: "BLOCK * not last", rules: `    { name = "block-all", priority = 100, action = "BLOCK", domains = ["*"] },
    { name = "allow-api", priority = 200, action = "ALLOW", domains = ["api.example.com"] },`,
			failOpen: "DISABLED", findings: []knownvalue.Check{finding("AF-DNS-011", "block-all", "allow-api")}},
		{name: "two rules at the last priority", rules: blockAll + "\n" + `    { name = "allow-api", priority = 1000, action = "ALLOW", domains = ["api.example.com"] },`,
			failOpen: "DISABLED", findings: []knownvalue.Check{finding("AF-DNS-012", "block-all", "allow-api")}},
		{name: "a star in the middle", rules: `    { name = "allow-apis", priority = 100, action = "ALLOW", domains = ["api.*.example.com"] },` + "\n" + blockAll,
			failOpen: "DISABLED", findings: []knownvalue.Check{finding("AF-DNS-013", "allow-apis")},
			firstMessageLike: regexp.MustCompile(`"api\.\*\.example\.com"`)},
		{name: "fail-open enabled", rules: blockAll, failOpen: "ENABLED", findings: []knownvalue.Check{finding("AF-DNS-014")}},
		{name: "mock host let through by a wildcard", rules: `    { name = "allow-example", priority = 100, action = "ALLOW", domains = ["*.example.com"] },` + "\n" + blockAll,
			failOpen: "DISABLED", extra: `  manifest = <<-EOT
name: shop
runtime:
  provider: kubernetes
egress:
  - host: hooks.example.com
    mode: mock
  EOT`, findings: []knownvalue.Check{finding("AF-DNS-015", "allow-example")},
			firstMessageLike: regexp.MustCompile(`answers hooks\.example\.com locally \(mode mock`)},
		{name: "no terminal BLOCK", rules: `    { name = "block-evil", priority = 100, action = "BLOCK", domains = ["evil.example.com"] },`,
			failOpen: "DISABLED", findings: []knownvalue.Check{finding("AF-DNS-016", "block-evil")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checks := []statecheck.StateCheck{
				statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("ok"), knownvalue.Bool(c.ok)),
				statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("findings"), knownvalue.ListExact(c.findings)),
			}
			if c.firstMessageLike != nil {
				checks = append(checks, statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("findings").AtSliceIndex(0).AtMapKey("message"),
					knownvalue.StringRegexp(c.firstMessageLike)))
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders(nil),
				Steps: []resource.TestStep{{
					Config:            dnsCheckConfig(c.rules, c.failOpen, c.extra+"\n  fail_on_findings = false"),
					ConfigStateChecks: checks,
				}},
			})
		})
	}
}

// The report's generated rules feed the check unchanged, and pass it.
func TestAccDNSFirewallCheck_ofTheReportsOwnRules(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{{
			Config: ecsReportConfig(`provider "antifailure" {}`, ecsManifest, "") + `
data "antifailure_dns_firewall_check" "this" {
  rules     = data.antifailure_ecs_egress_report.this.dns_firewall_rules
  fail_open = "DISABLED"
  manifest  = data.antifailure_ecs_egress_report.this.manifest
}
`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("ok"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(dnsCheckAddr, tfjsonpath.New("findings"), knownvalue.ListExact([]knownvalue.Check{})),
			},
		}},
	})
}

func TestAccDNSFirewallCheck_manifestRefused(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{{
			Config:      dnsCheckConfig(blockAll, "DISABLED", `  manifest = "name: shop\nruntime:\n  provider: kubernetes\nfoo: 1\n"`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)AF-MAN-002 Unknown key "foo".*manifest = "name: shop`),
		}},
	})
}
