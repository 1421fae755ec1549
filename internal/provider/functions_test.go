package provider

import (
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// Provider functions need Terraform 1.8; an older binary fails the test
// instead of skipping it.
var functionsFloor = []tfversion.TerraformVersionCheck{tfversion.RequireAbove(tfversion.Version1_8_0)}

const findingsRules = `[
    { name = "allow-all", priority = 5, action = "ALLOW", domains = ["*"] },
    { name = "allow-example", priority = 100, action = "ALLOW", domains = ["*.example.com"] },
    { name = "block-all", priority = 1000, action = "BLOCK", domains = ["*"] },
  ]`

const mockManifest = `<<-EOT
name: shop
runtime:
  provider: kubernetes
  targets:
    - name: eu
      kubeconfig_context: eu-prod
services:
  web:
    image: nginx:1.27
    port: 8080
    web: true
egress:
  - host: hooks.example.com
    mode: mock
    response:
      status: 202
      body: ok
  - host: api.stripe.com
    mode: sandbox
  EOT
`

func TestAccFunctionDNSFirewallFindings(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionsFloor,
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{
			{
				// Without the manifest: the ALLOW * ahead of BLOCK *.
				Config: `output "findings" {
  value = provider::antifailure::dns_firewall_findings(` + findingsRules + `, "DISABLED")
}`,
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownOutputValue("findings", knownvalue.ListExact([]knownvalue.Check{
					finding("AF-DNS-010", "allow-all", "block-all"),
				}))},
			},
			{
				// With it: the mock host let through by the first ALLOW is a
				// finding too; fail_open ENABLED is one more.
				Config: `output "findings" {
  value = [for f in provider::antifailure::dns_firewall_findings(` + findingsRules + `, "ENABLED", ` + mockManifest + `) : f.code]
}`,
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownOutputValue("findings", knownvalue.ListExact([]knownvalue.Check{
					knownvalue.StringExact("AF-DNS-010"), knownvalue.StringExact("AF-DNS-014"), knownvalue.StringExact("AF-DNS-015"),
				}))},
			},
			{
				// A clean group: no findings, an empty list (not an error).
				Config: `output "findings" {
  value = provider::antifailure::dns_firewall_findings([
    { name = "allow-api", priority = 100, action = "ALLOW", domains = ["api.example.com"] },
    { name = "block-all", priority = 1000, action = "BLOCK", domains = ["*"] },
  ], "DISABLED")
}`,
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownOutputValue("findings", knownvalue.ListExact([]knownvalue.Check{}))},
			},
			{
				Config:      `output "x" { value = provider::antifailure::dns_firewall_findings([], "maybe") }`,
				ExpectError: regexp.MustCompile(`(?s)AF-DNS-020 fail_open is "maybe",\s+which is not a\s+FirewallFailOpen value`),
			},
			{
				Config:      `output "x" { value = provider::antifailure::dns_firewall_findings([], "DISABLED", "a: [", "b") }`,
				ExpectError: regexp.MustCompile(`AF-DNS-021`),
			},
		},
	})
}

func TestAccFunctionManifestDecode(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   functionsFloor,
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{
			{
				Config: `locals {
  m = provider::antifailure::manifest_decode(` + mockManifest + `)
}
output "name" { value = local.m.name }
output "runtime" { value = local.m.runtime.provider }
output "web_port" { value = local.m.services.web.port }
output "modes" { value = { for e in local.m.egress : e.host => e.mode } }
output "context" { value = local.m.runtime.targets[0].kubeconfig_context }
output "nulls" { value = [local.m.runtime.domain == null, local.m.egress[1].response == null] }
output "mock_status" { value = local.m.egress[0].response.status }
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("name", knownvalue.StringExact("shop")),
					statecheck.ExpectKnownOutputValue("runtime", knownvalue.StringExact("kubernetes")),
					statecheck.ExpectKnownOutputValue("web_port", knownvalue.Int64Exact(8080)),
					statecheck.ExpectKnownOutputValue("modes", knownvalue.MapExact(map[string]knownvalue.Check{
						"hooks.example.com": knownvalue.StringExact("mock"), "api.stripe.com": knownvalue.StringExact("sandbox"),
					})),
					statecheck.ExpectKnownOutputValue("context", knownvalue.StringExact("eu-prod")),
					statecheck.ExpectKnownOutputValue("nulls", knownvalue.ListExact([]knownvalue.Check{knownvalue.Bool(true), knownvalue.Bool(true)})),
					statecheck.ExpectKnownOutputValue("mock_status", knownvalue.Int64Exact(202)),
				},
			},
			{
				// Every refusal is in the one error, joined, each with its code.
				Config: `output "m" {
  value = provider::antifailure::manifest_decode("name: Shop\nruntime:\n  provider: local\nfoo: 1\n")
}`,
				ExpectError: regexp.MustCompile(`(?s)AF-MAN-005 .*line 1.*AF-MAN-002 Unknown key "foo".*line 4`),
			},
		},
	})
}
