package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/ecs"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

func newECSEgressReportDataSource() datasource.DataSource { return &ecsEgressReportDataSource{} }

type ecsEgressReportDataSource struct{ data any }

type ecsEgressReportModel struct {
	Manifest types.String `tfsdk:"manifest"`
	// The same network attributes as the provider's ecs block.
	ecsProviderModel
	RecordedAttempts    types.String           `tfsdk:"recorded_attempts"`
	Answer              types.String           `tfsdk:"answer"`
	Summary             types.String           `tfsdk:"summary"`
	Paths               []ecsPathModel         `tfsdk:"paths"`
	Closed              types.Int64            `tfsdk:"closed"`
	Open                types.Int64            `tfsdk:"open"`
	Unproven            types.Int64            `tfsdk:"unproven"`
	PlanJSON            types.String           `tfsdk:"plan_json"`
	DNSFirewallRules    []dnsFirewallRuleModel `tfsdk:"dns_firewall_rules"`
	VPCEndpointPolicies types.Map              `tfsdk:"vpc_endpoint_policies"`
	NetworkDescribed    types.Bool             `tfsdk:"network_described"`
}

type ecsPathModel struct {
	ID          types.String `tfsdk:"id"`
	Description types.String `tfsdk:"description"`
	Verdict     types.String `tfsdk:"verdict"`
	Evidence    types.String `tfsdk:"evidence"`
	ClosedBy    types.String `tfsdk:"closed_by"`
	Detail      types.String `tfsdk:"detail"`
}

func (d *ecsEgressReportDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ecs_egress_report"
}

// networkAttributeDescription documents one network attribute and its
// fallbacks.
func networkAttributeDescription(what, env, how string) string {
	return what + " Falls back to the provider's `ecs` block, then to `" + env + "`" + how + ". " +
		"Setting the network changes the report, not the answer."
}

func (d *ecsEgressReportDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	str := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The ECS/Fargate egress report: the thirteen egress paths out of a Fargate task (platform version 1.4.0 or later), " +
			"each judged by a predicate over the configuration the `ecs` runtime would generate for this environment — real AWS API input " +
			"(aws-sdk-go-v2 shapes) serialised as `plan_json` — with the grade of evidence behind it. The answer is always `refused`: an environment on " +
			"Fargate cannot be proven contained, so `runtime.provider: ecs` refuses with this report. " + ecs.KubernetesSentence + "\n\n" +
			"For a described network **with the account known** the split is 10 closed / 1 open (`task-metadata`) / 2 unproven " +
			"(`instance-metadata`, `time-sync`, evidence `none`: neither the configuration nor AWS's documentation decides them, only a recorded attempt does). " +
			"The account comes from `cluster` when it is a cluster ARN (`arn:aws:ecs:<region>:<account>:cluster/<name>`), or from `account_id` / `AF_ECS_ACCOUNT_ID`; " +
			"every endpoint policy statement names that literal account and admits only the task execution role (`aws:PrincipalArn`), and the environment's " +
			"bucket only while the account owns it (`s3:ResourceAccount`). Without the account, `interface-endpoints` and `s3-gateway` are unproven " +
			"(evidence `none`, 8 / 1 / 4) and the summary names the variable that settles them.\n\n" +
			"An analysis, not a placement: it answers in the community and the enterprise edition. The network comes from the attributes, " +
			"then the provider's `ecs` block, then the variables `AF_ECS_REGION`, `AF_ECS_CLUSTER`, `AF_ECS_VPC_ID`, `AF_ECS_VPC_CIDR`, " +
			"`AF_ECS_SUBNET_IDS` and `AF_ECS_SUBNET_CIDRS` (comma separated, in matching order); with none set the verdicts are computed for a " +
			"placeholder network, `network_described` is false, and `plan_json` and `vpc_endpoint_policies` are null, so nothing placeholder can be applied. " +
			"`AF_ECS_PROBE_IMAGE` (`probe_image`) adds the containment probe container.",
		Attributes: map[string]schema.Attribute{
			"manifest": schema.StringAttribute{Required: true, MarkdownDescription: manifestDescription + " Its egress catalogue generates the DNS Firewall rules.", Validators: []validator.String{manifestValidator()}},
			"region":   schema.StringAttribute{Optional: true, MarkdownDescription: networkAttributeDescription("AWS region of the network, e.g. `eu-west-1`.", ecs.EnvRegion, "")},
			"cluster":  schema.StringAttribute{Optional: true, MarkdownDescription: networkAttributeDescription("ECS cluster name or ARN.", ecs.EnvCluster, "")},
			"vpc_id":   schema.StringAttribute{Optional: true, MarkdownDescription: networkAttributeDescription("VPC id (`vpc-…`).", ecs.EnvVPCID, "")},
			"vpc_cidr": schema.StringAttribute{Optional: true, MarkdownDescription: networkAttributeDescription("The VPC's primary IPv4 CIDR block.", ecs.EnvVPCCIDR, "")},
			"subnet_ids": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: networkAttributeDescription("Subnet ids the task runs in.", ecs.EnvSubnetIDs, " (comma separated)")},
			"subnet_cidrs": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: networkAttributeDescription("The subnets' CIDR blocks, in the order of `subnet_ids`; each inside `vpc_cidr`.", ecs.EnvSubnetCIDRs, " (comma separated)")},
			"account_id": schema.StringAttribute{Optional: true, MarkdownDescription: "The environment's 12-digit AWS account. Falls back to the provider's `ecs` block, then to `" +
				ecs.EnvAccountID + "`; a cluster ARN in `cluster` carries it too (the two must agree). Unknown: `interface-endpoints` and `s3-gateway` are unproven."},
			"probe_image": schema.StringAttribute{Optional: true, MarkdownDescription: "Image of the containment probe container. Falls back to the provider's `ecs` block, then to `" +
				ecs.EnvProbeImage + "`. Unset: the plan carries no probe container, and the `instance-metadata` path says so."},
			"recorded_attempts": schema.StringAttribute{Optional: true, MarkdownDescription: "Output of a probe run inside a real task: a JSON list of " +
				"`{\"path\": \"<path id>\", \"target\": \"169.254.169.254:80\", \"result\": \"reached\" | \"blocked\", \"time\": \"<RFC 3339>\"}`. " +
				"A recorded escape turns the path open; a recorded block closes an unproven path with evidence `recorded`. Recorded closures are " +
				"reported apart from computed ones; nothing moves on an absence of evidence."},
			"answer":  str("Always `refused`."),
			"summary": str("One paragraph: the counts, which path is open, which are unproven, and what to use instead."),
			"paths": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The thirteen paths, in a fixed order.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"id":          str("Path id, e.g. `public-ip`, `amazon-dns`, `task-metadata`."),
					"description": str("The path."),
					"verdict":     str("`closed`, `open` or `unproven`. Unproven is never rounded to closed."),
					"evidence":    str("`computed` (a predicate over the generated configuration), `recorded` (an attempt in a running task, from `recorded_attempts`), `documented` (a cited AWS statement) or `none`."),
					"closed_by":   str("What closes the path; empty unless `verdict` is `closed`."),
					"detail":      str("What was inspected and why the verdict follows; documented verdicts cite the AWS page title and quote, and the endpoint paths the AWS ECR, CloudWatch Logs, IAM and S3 pages their statements were checked against."),
				}},
			},
			"closed":    schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of closed paths."},
			"open":      schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of open paths."},
			"unproven":  schema.Int64Attribute{Computed: true, MarkdownDescription: "Number of unproven paths."},
			"plan_json": str("The configuration the `ecs` runtime would generate, as normalized JSON (sorted keys): ECS, ECR and CloudWatch Logs inputs in their wire form, IAM, S3, EC2 and Route 53 Resolver inputs with the APIs' member names, and `ApplyOrder` (the execution role and the bucket before the endpoints whose policies name them). Identifiers AWS assigns at creation appear as `ref:…`; an unknown account as `ACCOUNT_ID`. Null when `network_described` is false."),
			"dns_firewall_rules": schema.ListNestedAttribute{
				Computed: true,
				MarkdownDescription: "The DNS Firewall rules generated from the egress catalogue, in priority order, ready for " +
					"`aws_route53_resolver_firewall_domain_list` and `aws_route53_resolver_firewall_rule` (one domain list per rule): a BLOCK for every locally answered host ahead of any ALLOW covering it, an ALLOW for every forwarded host and for the task's own endpoint names, and `block-everything-else` (BLOCK `*`) last.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":     str("Rule name."),
					"priority": schema.Int64Attribute{Computed: true, MarkdownDescription: "Priority: 100, 200, …; lowest evaluated first."},
					"action":   str("`ALLOW` or `BLOCK`."),
					"domains":  schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "The rule's domain list."},
				}},
			},
			"vpc_endpoint_policies": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Endpoint policy JSON by service (`ecr.api`, `ecr.dkr`, `logs`, `s3`), one statement per resource: `ecr:GetAuthorizationToken` on `*`, the environment's repository and log group with the literal account, each for the execution role only (`aws:PrincipalArn`); on S3 `s3:GetObject` on the AWS-owned `prod-<region>-starport-layer-bucket/*` and the environment's bucket under `s3:ResourceAccount`. Null when `network_described` is false."},
			"network_described": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the network variables or attributes were set; false: the verdicts are for a placeholder network, and `plan_json` and `vpc_endpoint_policies` are null."},
		},
	}
}

func (d *ecsEgressReportDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	d.data = req.ProviderData
}

func (d *ecsEgressReportDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	pd, ok := requireConfigured(d.data, &resp.Diagnostics)
	if !ok {
		return
	}
	var m ecsEgressReportModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	man, err := manifest.Parse([]byte(m.Manifest.ValueString()))
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("manifest"))
		return
	}
	net, err := pd.ecsNetwork(m.network())
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("vpc_id"))
		return
	}
	attempts, err := ecs.ParseAttempts(m.RecordedAttempts.ValueString())
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("recorded_attempts"))
		return
	}
	r, err := ecs.NewReport(man, net, attempts)
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("manifest"))
		return
	}
	m.Answer = types.StringValue(r.Answer)
	m.Summary = types.StringValue(r.Summary)
	m.Paths = nil
	for _, p := range r.Paths {
		m.Paths = append(m.Paths, ecsPathModel{
			ID: types.StringValue(p.ID), Description: types.StringValue(p.Description), Verdict: types.StringValue(string(p.Verdict)),
			Evidence: types.StringValue(string(p.Evidence)), ClosedBy: types.StringValue(p.ClosedBy), Detail: types.StringValue(p.Detail),
		})
	}
	m.Closed, m.Open, m.Unproven = types.Int64Value(int64(r.Closed)), types.Int64Value(int64(r.Open)), types.Int64Value(int64(r.Unproven))
	// Without a described network nothing appliable is returned.
	m.PlanJSON, m.VPCEndpointPolicies = types.StringNull(), types.MapNull(types.StringType)
	if r.NetworkDescribed {
		m.PlanJSON = types.StringValue(r.PlanJSON)
		policies, diags := types.MapValueFrom(ctx, types.StringType, r.VPCEndpointPolicies)
		resp.Diagnostics.Append(diags...)
		m.VPCEndpointPolicies = policies
	}
	m.DNSFirewallRules = dnsRuleModels(r.DNSFirewallRules)
	m.NetworkDescribed = types.BoolValue(r.NetworkDescribed)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func stringValues(vs []types.String) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.ValueString())
	}
	return out
}

// ecsSettings are the provider's `ecs` block: the ECS network for every
// report and ECS refusal, below the data source's own attributes and above
// the AF_ECS_* variables.
type ecsSettings struct {
	ecs.NetworkSettings
	// unknown names a setting whose value is not known until apply.
	unknown string
}

// ecsNetwork resolves the network: explicit (data source attributes) wins,
// then the provider's ecs block, then the variables.
func (pd *providerData) ecsNetwork(explicit ecs.NetworkSettings) (ecs.Network, error) {
	if pd.ecs.unknown != "" {
		return ecs.Network{}, refusal.New(ecsProviderUnknown, "The provider's ecs.%s is not known until apply", pd.ecs.unknown).OnAttribute("vpc_id")
	}
	return ecs.ResolveNetwork(explicit.Or(pd.ecs.NetworkSettings), pd.getenv)
}

// refuseECS is the refusal runtime.provider ecs answers with (enterprise
// edition), computed for the provider's ECS network: wire it as
// placement.Rules.RefuseECS. A network that cannot be resolved is named in
// the refusal, which still lists the thirteen paths; placement locates it
// at runtime.provider in the manifest.
func (pd *providerData) refuseECS(m *manifest.Manifest) *refusal.Refusal {
	net, err := pd.ecsNetwork(ecs.NetworkSettings{})
	return ecs.Refusal(m, net, err)
}

var ecsProviderUnknown = refusal.Register("AF-ECS-014",
	"A value in the provider's ecs block is not known at plan time, so the report cannot say which network it is for.",
	"Give the provider's ecs block values known at plan time, or set the network on the data source.")

// ecsProviderModel is the provider's `ecs` block.
type ecsProviderModel struct {
	Region      types.String   `tfsdk:"region"`
	Cluster     types.String   `tfsdk:"cluster"`
	VPCID       types.String   `tfsdk:"vpc_id"`
	VPCCIDR     types.String   `tfsdk:"vpc_cidr"`
	SubnetIDs   []types.String `tfsdk:"subnet_ids"`
	SubnetCIDRs []types.String `tfsdk:"subnet_cidrs"`
	ProbeImage  types.String   `tfsdk:"probe_image"`
	AccountID   types.String   `tfsdk:"account_id"`
}

// settings reads the block; nil (no block) is no settings.
func (m *ecsProviderModel) settings() ecsSettings {
	var s ecsSettings
	if m == nil {
		return s
	}
	for name, v := range map[string]types.String{"region": m.Region, "cluster": m.Cluster, "vpc_id": m.VPCID, "vpc_cidr": m.VPCCIDR, "probe_image": m.ProbeImage, "account_id": m.AccountID} {
		if v.IsUnknown() {
			s.unknown = name
		}
	}
	for name, l := range map[string][]types.String{"subnet_ids": m.SubnetIDs, "subnet_cidrs": m.SubnetCIDRs} {
		for _, v := range l {
			if v.IsUnknown() {
				s.unknown = name
			}
		}
	}
	s.NetworkSettings = m.network()
	return s
}

// network is what the attributes set; unset ones are empty and fall back.
func (m *ecsProviderModel) network() ecs.NetworkSettings {
	return ecs.NetworkSettings{
		Region: m.Region.ValueString(), Cluster: m.Cluster.ValueString(), VPCID: m.VPCID.ValueString(), VPCCIDR: m.VPCCIDR.ValueString(),
		SubnetIDs: stringValues(m.SubnetIDs), SubnetCIDRs: stringValues(m.SubnetCIDRs), ProbeImage: m.ProbeImage.ValueString(),
		AccountID: m.AccountID.ValueString(),
	}
}

// ecsProviderAttribute is the provider's `ecs` block schema.
func ecsProviderAttribute() providerschema.Attribute {
	desc := func(what, env string) string { return what + " Falls back to `" + env + "`." }
	list := func(what, env string) string { return what + " Falls back to `" + env + "` (comma separated)." }
	return providerschema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "The ECS network the `antifailure_ecs_egress_report` data source and the `runtime.provider: ecs` refusal are computed for. " +
			"Each value falls back to its `AF_ECS_*` variable; a data source's own attributes win over this block. " +
			"None set anywhere: the report is computed for a placeholder network, and says that setting them changes the report, not the answer.",
		Attributes: map[string]providerschema.Attribute{
			"region":       providerschema.StringAttribute{Optional: true, MarkdownDescription: desc("AWS region, e.g. `eu-west-1`.", ecs.EnvRegion)},
			"cluster":      providerschema.StringAttribute{Optional: true, MarkdownDescription: desc("ECS cluster name or ARN.", ecs.EnvCluster)},
			"vpc_id":       providerschema.StringAttribute{Optional: true, MarkdownDescription: desc("VPC id.", ecs.EnvVPCID)},
			"vpc_cidr":     providerschema.StringAttribute{Optional: true, MarkdownDescription: desc("The VPC's primary IPv4 CIDR block.", ecs.EnvVPCCIDR)},
			"subnet_ids":   providerschema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: list("Subnet ids.", ecs.EnvSubnetIDs)},
			"subnet_cidrs": providerschema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: list("The subnets' CIDR blocks, in the order of `subnet_ids`.", ecs.EnvSubnetCIDRs)},
			"probe_image":  providerschema.StringAttribute{Optional: true, MarkdownDescription: desc("Image of the containment probe container (optional).", ecs.EnvProbeImage)},
			"account_id":   providerschema.StringAttribute{Optional: true, MarkdownDescription: desc("The environment's 12-digit AWS account (optional; a cluster ARN carries it). Unknown: the endpoint paths are unproven.", ecs.EnvAccountID)},
		},
	}
}
