package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func newLicenseDataSource() datasource.DataSource { return &licenseDataSource{} }

type licenseDataSource struct{ data any }

type licenseModel struct {
	Edition      types.String `tfsdk:"edition"`
	Organization types.String `tfsdk:"organization"`
	Features     types.List   `tfsdk:"features"`
	ExpiresAt    types.String `tfsdk:"expires_at"`
}

func (d *licenseDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_license"
}

func (d *licenseDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The edition this provider configuration runs as, from its `license`. Never exposes the token itself.",
		Attributes: map[string]schema.Attribute{
			"edition":      schema.StringAttribute{Computed: true, MarkdownDescription: "`community` (no license) or `enterprise`."},
			"organization": schema.StringAttribute{Computed: true, MarkdownDescription: "The organization the license was issued to; empty for the community edition."},
			"features":     schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Enterprise features the license grants, sorted (for example `multi_runtime`)."},
			"expires_at":   schema.StringAttribute{Computed: true, MarkdownDescription: "When the license expires (RFC 3339); empty for the community edition."},
		},
	}
}

func (d *licenseDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, _ *datasource.ConfigureResponse) {
	d.data = req.ProviderData
}

func (d *licenseDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	pd, ok := requireConfigured(d.data, &resp.Diagnostics)
	if !ok {
		return
	}
	if pd.licenseErr != nil {
		addLicenseRefusal(&resp.Diagnostics, pd.licenseErr)
		return
	}
	ed := pd.edition
	features, diags := types.ListValueFrom(ctx, types.StringType, append([]string{}, ed.Features...))
	resp.Diagnostics.Append(diags...)
	m := licenseModel{
		Edition:      types.StringValue(ed.Name),
		Organization: types.StringValue(ed.Organization),
		Features:     features,
		ExpiresAt:    types.StringValue(""),
	}
	if !ed.Expiry.IsZero() {
		m.ExpiresAt = types.StringValue(ed.Expiry.UTC().Format(time.RFC3339))
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
