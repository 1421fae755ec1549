package provider

import (
	"context"

	r53types "github.com/aws/aws-sdk-go-v2/service/route53resolver/types"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
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
	OK       types.Bool             `tfsdk:"ok"`
	Findings []dnsFindingModel      `tfsdk:"findings"`
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
			"Findings are outputs, not errors: assert on `ok` in a `check` block or a postcondition.",
		Attributes: map[string]schema.Attribute{
			"rules": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "The rule group's rules, each with the domains of the domain list it references.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     schema.StringAttribute{Required: true, MarkdownDescription: "Rule name."},
					"priority": schema.Int64Attribute{Required: true, MarkdownDescription: "Rule priority; lowest is evaluated first."},
					"action":   schema.StringAttribute{Required: true, MarkdownDescription: "`ALLOW`, `ALERT` or `BLOCK`."},
					"domains":  schema.ListAttribute{Required: true, ElementType: types.StringType, MarkdownDescription: "The domains of the rule's domain list."},
				}},
			},
			"fail_open": schema.StringAttribute{Required: true, MarkdownDescription: "The VPC firewall config's `FirewallFailOpen` " +
				"(`firewall_fail_open` of `aws_route53_resolver_firewall_config`): anything but `DISABLED` is a finding."},
			"manifest": schema.StringAttribute{Optional: true, MarkdownDescription: "Optional manifest content. With it, the check also refuses a " +
				"locally answered egress catalogue host (block, mock, capture, synth) that an ALLOW or ALERT lets through. " + manifestDescription},
			"ok": schema.BoolAttribute{Computed: true, MarkdownDescription: "True when there are no findings."},
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
	in := dnsfirewall.Input{FailOpen: r53types.FirewallFailOpenStatus(m.FailOpen.ValueString())}
	for _, r := range m.Rules {
		in.Rules = append(in.Rules, dnsfirewall.Rule{
			Name: r.Name.ValueString(), Priority: int(r.Priority.ValueInt64()),
			Action: r53types.Action(r.Action.ValueString()), Domains: stringValues(r.Domains),
		})
	}
	if !m.Manifest.IsNull() && m.Manifest.ValueString() != "" {
		man, err := manifest.Parse([]byte(m.Manifest.ValueString()))
		if err != nil {
			addRefusals(&resp.Diagnostics, err, path.Root("manifest"))
			return
		}
		in.Catalogue = man.Egress
	}
	findings := dnsfirewall.Check(in)
	m.OK = types.BoolValue(len(findings) == 0)
	m.Findings = make([]dnsFindingModel, 0, len(findings))
	for _, f := range findings {
		fm := dnsFindingModel{Code: types.StringValue(string(f.Code)), Message: types.StringValue(f.Message), Rules: []types.String{}}
		for _, r := range f.Rules {
			fm.Rules = append(fm.Rules, types.StringValue(r))
		}
		m.Findings = append(m.Findings, fm)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
