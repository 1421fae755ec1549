package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

var tooManyManifests = refusal.Register("AF-DNS-021",
	"dns_firewall_findings takes at most one manifest after rules and fail_open.",
	"Pass one manifest's content as the third argument, or none.")

func newDNSFirewallFindingsFunction() function.Function { return dnsFirewallFindingsFunction{} }

// dnsFirewallFindingsFunction is the DNS Firewall check as a pure function:
// the findings are its result, never an error, so a configuration decides
// what to do with them.
type dnsFirewallFindingsFunction struct{}

var (
	dnsRuleAttrTypes = map[string]attr.Type{
		"name": types.StringType, "priority": types.Int64Type, "action": types.StringType,
		"domains": types.ListType{ElemType: types.StringType},
	}
	dnsFindingAttrTypes = map[string]attr.Type{
		"code": types.StringType, "message": types.StringType, "rules": types.ListType{ElemType: types.StringType},
	}
)

func (dnsFirewallFindingsFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "dns_firewall_findings"
}

func (dnsFirewallFindingsFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The findings of the DNS Firewall check for a rule group",
		MarkdownDescription: functionDescription("Checks a Route 53 Resolver DNS Firewall rule group exactly as the `antifailure_dns_firewall_check` data source does " +
			"and returns its findings, a list of `{ code, message, rules }` in a stable order; an empty list means the group blocks every query its " +
			"rules do not name and does not fail open. Findings are the result, not an error: use them in a `check` block, a precondition or a report.\n\n" +
			"Rules are read by priority from the lowest number up, and the first rule whose domains match ends evaluation. The codes: " +
			"`AF-DNS-010` ALLOW/ALERT `*` ahead of the terminal BLOCK, `AF-DNS-011` BLOCK `*` not last, `AF-DNS-012` shared priorities, " +
			"`AF-DNS-013` a domain the list cannot hold (a `*` not at the front), `AF-DNS-014` `fail_open` not `DISABLED`, `AF-DNS-015` a host " +
			"the manifest answers locally let through (only with `manifest`), `AF-DNS-016` no BLOCK `*`, `AF-DNS-017` an unknown action.\n\n" +
			"An unreadable manifest or a `fail_open` that is no FirewallFailOpen value (`AF-DNS-020`) is the function's error, with every AF- message joined."),
		Parameters: []function.Parameter{
			function.ListParameter{
				Name:                "rules",
				ElementType:         types.ObjectType{AttrTypes: dnsRuleAttrTypes},
				MarkdownDescription: "The rule group's rules: `{ name, priority, action, domains }`, `domains` being the domains of the rule's domain list.",
			},
			function.StringParameter{
				Name:                "fail_open",
				MarkdownDescription: "The VPC firewall config's `FirewallFailOpen` (`ENABLED`, `DISABLED` or `USE_LOCAL_RESOURCE_SETTING`).",
			},
		},
		VariadicParameter: function.StringParameter{
			Name: "manifest",
			MarkdownDescription: "Optional, at most one: the manifest's content. With it, a host its egress catalogue answers locally " +
				"(block, mock, capture, synth) that an earlier ALLOW or ALERT lets through is a finding too (`AF-DNS-015`).",
		},
		Return: function.ListReturn{ElementType: types.ObjectType{AttrTypes: dnsFindingAttrTypes}},
	}
}

func (dnsFirewallFindingsFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var rules []dnsFirewallRuleModel
	var failOpen string
	var manifests []string
	resp.Error = req.Arguments.Get(ctx, &rules, &failOpen, &manifests)
	if resp.Error != nil {
		return
	}
	if err := dnsfirewall.ValidFailOpen(failOpen); err != nil {
		resp.Error = refusalFuncError(1, err)
		return
	}
	if len(manifests) > 1 {
		resp.Error = refusalFuncError(3, refusal.New(tooManyManifests, "dns_firewall_findings was given %d manifests", len(manifests)))
		return
	}
	content := ""
	if len(manifests) == 1 {
		content = manifests[0]
	}
	in, err := dnsCheckInput(rules, failOpen, content)
	if err != nil {
		resp.Error = refusalFuncError(2, err)
		return
	}
	resp.Error = resp.Result.Set(ctx, dnsFindingModels(dnsfirewall.Check(in)))
}
