package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/residency"
)

func newPlacementDataSource() datasource.DataSource { return &placementDataSource{} }

type placementDataSource struct{ data any }

type placementModel struct {
	Manifest   types.String `tfsdk:"manifest"`
	Runtime    types.String `tfsdk:"runtime"`
	Edition    types.String `tfsdk:"edition"`
	Target     types.Object `tfsdk:"target"`
	Domain     types.String `tfsdk:"domain"`
	Candidates types.List   `tfsdk:"candidates"`
	Residency  types.Object `tfsdk:"residency"`
}

var (
	targetAttrTypes = map[string]attr.Type{
		"name":               types.StringType,
		"kubeconfig_context": types.StringType,
		"domain":             types.StringType,
		"tags":               types.MapType{ElemType: types.StringType},
	}
	candidateAttrTypes = map[string]attr.Type{
		"name":    types.StringType,
		"matched": types.BoolType,
		"placed":  types.BoolType,
		"reasons": types.ListType{ElemType: types.StringType},
	}
	residencyAttrTypes = map[string]attr.Type{
		"verdict": types.StringType,
		"region":  types.StringType,
		"reason":  types.StringType,
	}
)

func (d *placementDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_placement"
}

// manifestDescription is shared by every schema that takes the manifest, so
// that the docs say the same thing everywhere.
const manifestDescription = "Content of the application's manifest, conventionally `file(\"${path.module}/antifailure.yaml\")`. " +
	"Read strictly: an unknown key, a wrong type, a duplicate, an invalid name, a web service without a port, an egress host that is not a host name " +
	"or an unknown mode is refused by `terraform validate` (and so at plan) with an `AF-MAN-…` code and its line:column. A second YAML document is refused; at most the first 20 problems are reported, then how many more there are."

func (d *placementDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Where an environment of this manifest is placed, and why. Placement is a pure function of the manifest and the edition: " +
			"no capacity, no health, no cluster calls, so every command that has to find the environment works it out the same way. " +
			"A requirement nothing satisfies is refused at plan (`AF-SCH-001`); so are more than one target without the `multi_runtime` feature, " +
			"a runtime this build does not have, and a region the residency policy refuses.",
		Attributes: map[string]schema.Attribute{
			"manifest": schema.StringAttribute{Required: true, MarkdownDescription: manifestDescription, Validators: []validator.String{manifestValidator()}},
			"runtime":  schema.StringAttribute{Computed: true, MarkdownDescription: "The runtime provider the manifest names (`local` or `kubernetes`)."},
			"edition":  schema.StringAttribute{Computed: true, MarkdownDescription: "`community` or `enterprise`: the edition the provider's license grants."},
			"target": schema.SingleNestedAttribute{
				Computed: true,
				MarkdownDescription: "The placed target: the first listed target whose tags meet every `runtime.requires` entry. " +
					"With no targets, the runtime itself: `name` is the runtime provider and `domain` is `runtime.domain`.",
				Attributes: map[string]schema.Attribute{
					"name":               schema.StringAttribute{Computed: true, MarkdownDescription: "Target name."},
					"kubeconfig_context": schema.StringAttribute{Computed: true, MarkdownDescription: "The kubeconfig context the `kubernetes` runtime uses: the target's, or with no targets the provider's `kubernetes.context` (empty on other runtimes)."},
					"domain":             schema.StringAttribute{Computed: true, MarkdownDescription: "The target's own domain, empty when it declares none."},
					"tags":               schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "The target's tags, as declared in the manifest."},
				},
			},
			"domain": schema.StringAttribute{Computed: true, MarkdownDescription: "The effective domain for URLs: the target's `domain`, else `runtime.domain`."},
			"candidates": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "Every declared target in manifest order, with which requirement it met or missed. Empty when the manifest declares no targets.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":    schema.StringAttribute{Computed: true, MarkdownDescription: "Target name."},
					"matched": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the target met every requirement."},
					"placed":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the environment is placed on this target."},
					"reasons": schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "One line per requirement met or missed, then the outcome."},
				}},
			},
			"residency": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The residency policy's verdict on the placed target.",
				Attributes: map[string]schema.Attribute{
					"verdict": schema.StringAttribute{Computed: true, MarkdownDescription: "`allowed`, `not_evaluable` (the target has no `region` tag; a warning names it) or `no_policy`. A refused region never reaches state: it fails the plan with `AF-POL-001`."},
					"region":  schema.StringAttribute{Computed: true, MarkdownDescription: "The placed target's `region` tag, empty when it has none."},
					"reason":  schema.StringAttribute{Computed: true, MarkdownDescription: "Why, in one sentence."},
				},
			},
		},
	}
}

func (d *placementDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	d.data = req.ProviderData
}

func (d *placementDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	pd, ok := requireConfigured(d.data, &resp.Diagnostics)
	if !ok {
		return
	}
	var m placementModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	dec, ok := pd.decide(m.Manifest.ValueString(), path.Root("manifest"), &resp.Diagnostics)
	if !ok {
		return
	}
	m.Runtime = types.StringValue(dec.placement.Runtime)
	m.Edition = types.StringValue(pd.edition.Name)
	m.Domain = types.StringValue(dec.placement.Domain)
	m.Target = targetValue(dec.placement.Target, &resp.Diagnostics)
	m.Candidates = candidatesValue(dec.placement.Candidates, &resp.Diagnostics)
	m.Residency = residencyValue(dec.residency, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func targetValue(t placement.Target, diags *diag.Diagnostics) types.Object {
	tags, d := types.MapValueFrom(context.Background(), types.StringType, t.Tags)
	diags.Append(d...)
	obj, d := types.ObjectValue(targetAttrTypes, map[string]attr.Value{
		"name":               types.StringValue(t.Name),
		"kubeconfig_context": types.StringValue(t.KubeconfigContext),
		"domain":             types.StringValue(t.Domain),
		"tags":               tags,
	})
	diags.Append(d...)
	return obj
}

func candidatesValue(cs []placement.Candidate, diags *diag.Diagnostics) types.List {
	elems := make([]attr.Value, 0, len(cs))
	for _, c := range cs {
		reasons, d := types.ListValueFrom(context.Background(), types.StringType, c.Reasons)
		diags.Append(d...)
		obj, d := types.ObjectValue(candidateAttrTypes, map[string]attr.Value{
			"name":    types.StringValue(c.Name),
			"matched": types.BoolValue(c.Matched),
			"placed":  types.BoolValue(c.Placed),
			"reasons": reasons,
		})
		diags.Append(d...)
		elems = append(elems, obj)
	}
	list, d := types.ListValue(types.ObjectType{AttrTypes: candidateAttrTypes}, elems)
	diags.Append(d...)
	return list
}

func residencyValue(v residency.Verdict, diags *diag.Diagnostics) types.Object {
	obj, d := types.ObjectValue(residencyAttrTypes, map[string]attr.Value{
		"verdict": types.StringValue(v.Verdict),
		"region":  types.StringValue(v.Region),
		"reason":  types.StringValue(v.Reason),
	})
	diags.Append(d...)
	return obj
}
