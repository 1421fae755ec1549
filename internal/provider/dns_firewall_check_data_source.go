package provider

import (
	"context"
	"strings"

	r53types "github.com/aws/aws-sdk-go-v2/service/route53resolver/types"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

func newDNSFirewallCheckDataSource() datasource.DataSource { return &dnsFirewallCheckDataSource{} }

// dnsFirewallCheckDataSource needs nothing from the provider's configuration:
// it is a pure analysis of the rules it is given.
type dnsFirewallCheckDataSource struct{}

type dnsFirewallCheckModel struct {
	Rules    []dnsFirewallRuleModel `tfsdk:"rules"`
	FailOpen types.String           `tfsdk:"fail_open"`
	Manifest types.String           `tfsdk:"manifest"`
	// FailOnFindings null is true: the check refuses unless told to report.
	FailOnFindings types.Bool        `tfsdk:"fail_on_findings"`
	OK             types.Bool        `tfsdk:"ok"`
	Findings       []dnsFindingModel `tfsdk:"findings"`
}

// dnsFirewallRuleModel is one rule, the same shape in the check's input and
// the report's output.
type dnsFirewallRuleModel struct {
	Name     types.String   `tfsdk:"name"`
	Priority types.Int64    `tfsdk:"priority"`
	Action   types.String   `tfsdk:"action"`
	Domains  []types.String `tfsdk:"domains"`
}

type dnsFindingModel struct {
	Code    types.String   `tfsdk:"code"`
	Message types.String   `tfsdk:"message"`
	Rules   []types.String `tfsdk:"rules"`
}

func dnsRuleModels(rules []dnsfirewall.Rule) []dnsFirewallRuleModel {
	out := make([]dnsFirewallRuleModel, 0, len(rules))
	for _, r := range rules {
		m := dnsFirewallRuleModel{Name: types.StringValue(r.Name), Priority: types.Int64Value(int64(r.Priority)), Action: types.StringValue(string(r.Action))}
		for _, d := range r.Domains {
			m.Domains = append(m.Domains, types.StringValue(d))
		}
		out = append(out, m)
	}
	return out
}

// findingPath attaches a finding to the first rule it names, or to fail_open
// for the one finding about the firewall config.
func findingPath(f dnsfirewall.Finding, rules []dnsFirewallRuleModel) path.Path {
	if f.Code == dnsfirewall.FailOpenEnabled {
		return path.Root("fail_open")
	}
	if len(f.Rules) > 0 {
		for i, r := range rules {
			if r.Name.ValueString() == f.Rules[0] {
				return path.Root("rules").AtListIndex(i)
			}
		}
	}
	return path.Root("rules")
}

func (d *dnsFirewallCheckDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_dns_firewall_check"
}

func (d *dnsFirewallCheckDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Checks any Route 53 Resolver DNS Firewall rule group, not only the ones this provider generates. Rules are read the way " +
			"Route 53 Resolver reads them: by priority from the lowest number up, and the first rule whose domain list matches ends evaluation; " +
			"`ALLOW` and `ALERT` let the query through, `BLOCK` stops it.\n\n" +
			"Findings, each naming the rules involved: an ALLOW or ALERT on every domain ahead of the terminal BLOCK, which then blocks nothing " +
			"(`AF-DNS-010`); a BLOCK on every domain moved off the end by priority (`AF-DNS-011`); rules sharing a priority (`AF-DNS-012`); a domain " +
			"with `*` anywhere but the front, or any character but letters, digits, hyphens and dots (`AF-DNS-013`); `fail_open` not `DISABLED` " +
			"(`AF-DNS-014`); a host the manifest's egress catalogue answers locally that an earlier ALLOW or ALERT lets through (`AF-DNS-015`, " +
			"with `manifest`); no BLOCK on every domain at all (`AF-DNS-016`); an unknown action (`AF-DNS-017`).\n\n" +
			"By default the check **refuses**: each finding is an error diagnostic whose summary starts with its code and names the rules, " +
			"so `terraform plan` fails. With `fail_on_findings = false` the findings are returned in `findings` and `ok` instead, for reports " +
			"(assert on `ok` in a `check` block to get a warning).\n\n" +
			"The same check is the function `provider::antifailure::dns_firewall_findings` (Terraform 1.8 or later).",
		Attributes: map[string]schema.Attribute{
			"rules": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "The rule group's rules, each with the domains of the domain list it references.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     schema.StringAttribute{Required: true, MarkdownDescription: "Rule name."},
					"priority": schema.Int64Attribute{Required: true, MarkdownDescription: "Rule priority; lowest is evaluated first."},
					"action": schema.StringAttribute{Required: true, MarkdownDescription: "`ALLOW`, `ALERT` or `BLOCK`; anything else is refused by `terraform validate` (`AF-DNS-017`).",
						Validators: []validator.String{refusingString("one of "+strings.Join(dnsfirewall.Actions, ", "), dnsfirewall.ValidAction)}},
					"domains": schema.ListAttribute{Required: true, ElementType: types.StringType, MarkdownDescription: "The domains of the rule's domain list."},
				}},
			},
			"fail_open": schema.StringAttribute{Required: true, MarkdownDescription: "The VPC firewall config's `FirewallFailOpen` " +
				"(`firewall_fail_open` of `aws_route53_resolver_firewall_config`): anything but `DISABLED` is a finding. A value that is not " +
				"`ENABLED`, `DISABLED` or `USE_LOCAL_RESOURCE_SETTING` is refused by `terraform validate` (`AF-DNS-020`).",
				Validators: []validator.String{refusingString("a FirewallFailOpen value", dnsfirewall.ValidFailOpen)}},
			"manifest": schema.StringAttribute{Optional: true, MarkdownDescription: "Optional manifest content. With it, the check also refuses a " +
				"locally answered egress catalogue host (block, mock, capture, synth) that an ALLOW or ALERT lets through. " + manifestDescription,
				Validators: []validator.String{optionalManifestValidator()}},
			"fail_on_findings": schema.BoolAttribute{Optional: true, MarkdownDescription: "Whether findings fail the read (default `true`): " +
				"each finding is an error diagnostic with its `AF-DNS-…` code. `false` returns them in `findings` without failing, for reports."},
			"ok": schema.BoolAttribute{Computed: true, MarkdownDescription: "True when there are no findings (always true when the read succeeds with `fail_on_findings` unset)."},
			"findings": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The findings, in a stable order; empty when `ok`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"code":    schema.StringAttribute{Computed: true, MarkdownDescription: "The `AF-DNS-…` code."},
					"message": schema.StringAttribute{Computed: true, MarkdownDescription: "What is wrong, naming the rules and domains."},
					"rules":   schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "The names of the rules involved."},
				}},
			},
		},
	}
}

func (d *dnsFirewallCheckDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m dnsFirewallCheckModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	in, err := dnsCheckInput(m.Rules, m.FailOpen.ValueString(), m.Manifest.ValueString())
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("manifest"))
		return
	}
	findings := dnsfirewall.Check(in)
	if m.FailOnFindings.IsNull() || m.FailOnFindings.ValueBool() {
		for _, f := range findings {
			addRefusals(&resp.Diagnostics, f.Refusal(), findingPath(f, m.Rules))
		}
		if len(findings) > 0 {
			return
		}
	}
	m.OK = types.BoolValue(len(findings) == 0)
	m.Findings = dnsFindingModels(findings)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// dnsCheckInput is the check's input, shared by the data source and the
// function; an empty manifest means none.
func dnsCheckInput(rules []dnsFirewallRuleModel, failOpen, manifestContent string) (dnsfirewall.Input, error) {
	in := dnsfirewall.Input{FailOpen: r53types.FirewallFailOpenStatus(failOpen)}
	for _, r := range rules {
		in.Rules = append(in.Rules, dnsfirewall.Rule{
			Name: r.Name.ValueString(), Priority: int(r.Priority.ValueInt64()),
			Action: r53types.Action(r.Action.ValueString()), Domains: stringValues(r.Domains),
		})
	}
	if manifestContent != "" {
		man, err := manifest.Parse([]byte(manifestContent))
		if err != nil {
			return in, err
		}
		in.Catalogue = man.Egress
	}
	return in, nil
}

func dnsFindingModels(findings []dnsfirewall.Finding) []dnsFindingModel {
	out := make([]dnsFindingModel, 0, len(findings))
	for _, f := range findings {
		fm := dnsFindingModel{Code: types.StringValue(string(f.Code)), Message: types.StringValue(f.Message), Rules: []types.String{}}
		for _, r := range f.Rules {
			fm.Rules = append(fm.Rules, types.StringValue(r))
		}
		out = append(out, fm)
	}
	return out
}
