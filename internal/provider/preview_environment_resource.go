package provider

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	"github.com/antifailure/terraform-provider-antifailure/internal/scheduler"
)

func newPreviewEnvironmentResource() resource.Resource { return &previewEnvironmentResource{} }

type previewEnvironmentResource struct{ data any }

var (
	_ resource.ResourceWithModifyPlan   = (*previewEnvironmentResource)(nil)
	_ resource.ResourceWithImportState  = (*previewEnvironmentResource)(nil)
	_ resource.ResourceWithUpgradeState = (*previewEnvironmentResource)(nil)
)

type previewEnvironmentModel struct {
	ID                types.String   `tfsdk:"id"`
	Manifest          types.String   `tfsdk:"manifest"`
	Name              types.String   `tfsdk:"name"`
	Images            types.Map      `tfsdk:"images"`
	WaitForRollout    types.Bool     `tfsdk:"wait_for_rollout"`
	Timeouts          timeouts.Value `tfsdk:"timeouts"`
	Runtime           types.String   `tfsdk:"runtime"`
	Target            types.String   `tfsdk:"target"`
	KubeconfigContext types.String   `tfsdk:"kubeconfig_context"`
	Placement         types.Object   `tfsdk:"placement"`
	Namespace         types.String   `tfsdk:"namespace"`
	URLs              types.Map      `tfsdk:"urls"`
	Services          types.Map      `tfsdk:"services"`
	Containment       types.Object   `tfsdk:"containment"`
	QueuePosition     types.Int64    `tfsdk:"queue_position"`
}

var (
	envPlacementAttrTypes = map[string]attr.Type{
		"edition":   types.StringType,
		"domain":    types.StringType,
		"residency": types.StringType,
	}
	serviceAttrTypes = map[string]attr.Type{
		"image":    types.StringType,
		"replicas": types.Int64Type,
		"running":  types.BoolType,
	}
	attemptAttrTypes = map[string]attr.Type{
		"category": types.StringType,
		"method":   types.StringType,
		"target":   types.StringType,
		"outcome":  types.StringType,
		"detail":   types.StringType,
	}
	containmentAttrTypes = map[string]attr.Type{
		"verdict":     types.StringType,
		"duration_ms": types.Int64Type,
		"attempts":    types.ListType{ElemType: types.ObjectType{AttrTypes: attemptAttrTypes}},
	}
)

// Default operation timeouts; a create includes the containment probe and the
// rollout.
const (
	defaultCreateTimeout = 10 * time.Minute
	defaultUpdateTimeout = 10 * time.Minute
	defaultReadTimeout   = 2 * time.Minute
	defaultDeleteTimeout = 10 * time.Minute
)

func (r *previewEnvironmentResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_preview_environment"
}

func (r *previewEnvironmentResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	computedString := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		Version: environmentSchemaVersion,
		MarkdownDescription: "A preview environment: a short-lived copy of the application the manifest describes, on the target placement chooses, " +
			"with no way out. Before any application process or image starts, the runtime isolates the environment, starts its egress gateway and runs a " +
			"**containment probe** under exactly the rules the services run under; any escape refuses the environment with `AF-RUN-043` and removes " +
			"everything created. Refusals the manifest decides (manifest, placement, license, residency, unknown runtime, `ecs`) happen at `terraform plan`.\n\n" +
			"Drift is detected: a service killed, deleted, scaled or re-imaged by hand shows in the next plan as a change to `services`, and apply restores it.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "The environment's ID, also its import ID: `<kubeconfig_context>/<app>/<name>` on `kubernetes`, `<app>/<name>` on `local` " +
					"(`<app>` is the manifest's `name`). Application and environment stay two parts, so app `shop` with `pr-1` and app `shop-pr` with `1` are two environments; " +
					"an environment that belongs to another pair is refused, never adopted, imported or deleted.",
			},
			"manifest": schema.StringAttribute{Required: true, MarkdownDescription: manifestDescription, Validators: []validator.String{manifestValidator()}},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "The environment's name, a DNS label (for example `pr-42`). It becomes part of the namespace and the URLs; " +
					"changing it replaces the environment.",
				Validators:    []validator.String{refusingString("a DNS label", checkEnvName)},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"images": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Image overrides by service name (for example the image a pull request built). Changed in place. A name that is not a service in the manifest is refused; so is `images` on an environment of `runtime.provider: local`, which runs commands, not images (`AF-RUN-082`, at plan).",
			},
			"wait_for_rollout": schema.BoolAttribute{
				Optional:            true,
				Computed:            true,
				Default:             booldefault.StaticBool(true),
				MarkdownDescription: "Wait until every service is available before create and update finish. Defaults to `true`.",
			},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Read: true, Update: true, Delete: true}),
			"runtime":  computedString("The runtime provider the manifest names (`local` or `kubernetes`)."),
			"target":   computedString("The placed target's name (the runtime provider itself when the manifest declares no targets). A change of placement replaces the environment."),
			"kubeconfig_context": computedString("The kubeconfig context the environment lives on (`kubernetes` only; an empty string on `local`): the placed target's " +
				"`kubeconfig_context`, or, when the manifest declares no targets, the provider's `kubernetes.context` (`AF_K8S_CONTEXT`); with neither the plan is " +
				"refused (`AF-K8S-030`), and the kubeconfig's current-context is never used. It is the first part of the ID, and a change replaces the environment. " +
				"A context missing from the kubeconfig is refused at plan, listing the contexts that exist."),
			"placement": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The placement decision, as `antifailure_placement` reports it.",
				Attributes: map[string]schema.Attribute{
					"edition":   computedString("`community` or `enterprise`: the edition the environment was created under (a license that expires later does not change it)."),
					"domain":    computedString("The effective domain for URLs."),
					"residency": computedString("The residency verdict: `allowed`, `not_evaluable` or `no_policy`."),
				},
			},
			"namespace": computedString("Where the environment's objects live, known at plan: the Kubernetes namespace (`af-<app>-<name>`, or, when that name could also " +
				"belong to another pair or is longer than 63 characters, a shortened form ending in a hash of both; labelled with app and environment), or on `local` the key `<app>/<name>`."),
			"urls": schema.MapAttribute{
				Computed:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "URL of each web service, by service name. Known at plan on `kubernetes`; on `local` the router's port is chosen at apply.",
			},
			"services": schema.MapNestedAttribute{
				Computed: true,
				MarkdownDescription: "Each service as observed on the runtime. The plan always proposes every service running with one replica and the configured image, " +
					"so anything changed by hand shows as a diff.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"image":    computedString("The image running (`kubernetes`); empty on `local`."),
					"replicas": schema.Int64Attribute{Computed: true, MarkdownDescription: "Desired replicas as set on the runtime."},
					"running":  schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the service exists and runs."},
				}},
			},
			"containment": schema.SingleNestedAttribute{
				Computed:            true,
				MarkdownDescription: "The containment probe's result from when the environment was created: the verdict, every attempt and how long the probe took.",
				Attributes: map[string]schema.Attribute{
					"verdict": computedString("`contained` (anything else refuses the environment). On refresh, `drifted: <what>` when a NetworkPolicy, the gateway's " +
						"catalogue or its Deployment differs from what the probe ran under (changed, deleted or added by hand): the next apply restores them and probes again. " +
						"When that probe does not find the environment contained, the apply refuses (`AF-RUN-043`…), the services are stopped (scaled to zero) and a refresh reports " +
						"the probe's verdict (e.g. `escaped`): the next apply probes again before it starts them."),
					"duration_ms": schema.Int64Attribute{Computed: true, MarkdownDescription: "How long the probe ran, in milliseconds."},
					"attempts": schema.ListNestedAttribute{
						Computed:            true,
						MarkdownDescription: "Every attempt: what it tried to reach, how, and what happened.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"category": computedString("What the attempt tried to reach: `public`, `resolver`, `public-name`, `metadata`, `control-plane`, `host` (the local runtime's host), `node` (the pod's own node: reported, never deciding, since NetworkPolicy does not apply between a pod and its node), `tenant`, `canary` (the gateway's canary port, which no egress policy admits services to and which accepts any other source), or `control` (the positive control: the egress gateway)."),
							"method":   computedString("How: `tcp`, `udp-dns`, `tcp-dns`, `dns-lookup`, `http`, `unix` (a host Unix socket; the target is its path)."),
							"target":   computedString("The literal address (or, for a lookup, the name)."),
							"outcome":  computedString("`blocked`, `escaped` or `inconclusive` (never contained) for escape attempts; `node-reached` for a node attempt that got through; `reached` or `failed` for the control."),
							"detail":   computedString("What the attempt saw."),
						}},
					},
				},
			},
			"queue_position": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: "The position the scheduler gave this run when it was created. Terraform dispatches one run at a time, " +
					"through the same scheduler a control plane uses for batches.",
			},
		},
	}
}

func (r *previewEnvironmentResource) Configure(_ context.Context, req resource.ConfigureRequest, _ *resource.ConfigureResponse) {
	r.data = req.ProviderData
}

// planned is what ModifyPlan, Create and Update all work out the same way.
type planned struct {
	decision
	env runtime.Environment
	rt  runtime.Runtime
}

// plan decides placement and checks the runtime: every refusal the manifest
// and local configuration decide, before anything exists.
func (r *previewEnvironmentResource) plan(ctx context.Context, pd *providerData, m previewEnvironmentModel, diags *diag.Diagnostics) (planned, bool) {
	var p planned
	dec, ok := pd.decide(m.Manifest.ValueString(), path.Root("manifest"), diags)
	if !ok {
		return p, false
	}
	p.decision = dec
	images := map[string]string{}
	if !m.Images.IsNull() && !m.Images.IsUnknown() {
		diags.Append(m.Images.ElementsAs(ctx, &images, false)...)
		for name := range images {
			if _, ok := dec.manifest.Service(name); !ok {
				addRefusals(diags, refusal.New(refusal.ConfigInvalid, "images names %q, which is not a service in the manifest", name).
					WithNext("Use a service name from the manifest's services: %s.", strings.Join(serviceNames(dec.manifest), ", ")), path.Root("images").AtMapKey(name))
			}
		}
	}
	p.env = runtime.Environment{
		Name:           m.Name.ValueString(),
		Manifest:       dec.manifest,
		Placement:      dec.placement,
		Source:         m.Manifest.ValueString(),
		Images:         images,
		WaitForRollout: m.WaitForRollout.IsNull() || m.WaitForRollout.ValueBool(),
	}
	rt, err := pd.runtime(dec.placement.Runtime)
	if err != nil {
		addRefusals(diags, err, path.Root("manifest"))
		return p, false
	}
	p.rt = rt
	if err := rt.Check(p.env); err != nil {
		addRefusals(diags, err, path.Root("manifest"))
	}
	return p, !diags.HasError()
}

func serviceNames(m *manifest.Manifest) []string {
	names := make([]string, len(m.Services))
	for i, s := range m.Services {
		names[i] = s.Name
	}
	return names
}

func (r *previewEnvironmentResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan previewEnvironmentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.Manifest.IsUnknown() || plan.Name.IsUnknown() || plan.Images.IsUnknown() {
		return
	}
	pd, ok := configured(r.data, &resp.Diagnostics)
	if !ok {
		return
	}
	p, ok := r.plan(ctx, pd, plan, &resp.Diagnostics)
	if !ok {
		return
	}
	planned := p.rt.Planned(p.env)
	plan.ID = types.StringValue(planned.Ref.ID)
	plan.Runtime = types.StringValue(p.placement.Runtime)
	plan.Target = types.StringValue(p.placement.Target.Name)
	plan.KubeconfigContext = types.StringValue(p.placement.Target.KubeconfigContext)
	plan.Placement = r.placementValue(pd, p.decision, &resp.Diagnostics)
	plan.Services = servicesValue(runtime.DesiredServices(p.env), &resp.Diagnostics)
	plan.Namespace = types.StringValue(planned.Namespace)
	if planned.URLs != nil {
		plan.URLs = stringMap(planned.URLs, &resp.Diagnostics)
	}

	if req.State.Raw.IsNull() {
		if pd.licenseErr != nil {
			// A license problem never blocks reading or removing what
			// exists; it does refuse making anything new.
			addLicenseRefusal(&resp.Diagnostics, pd.licenseErr)
		}
	} else {
		var state previewEnvironmentModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if moved(state.Runtime, plan.Runtime) || moved(state.Target, plan.Target) || moved(state.KubeconfigContext, plan.KubeconfigContext) || moved(state.ID, plan.ID) {
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("target"))
		} else {
			// Facts from creation stay as they were: the namespace the
			// environment really lives in (an earlier release's name, say).
			plan.Namespace = state.Namespace
			plan.QueuePosition = state.QueuePosition
			if ed, ok := state.Placement.Attributes()["edition"].(types.String); ok && !ed.IsNull() {
				// The edition it was created under: a license that expired
				// since is no reason to touch the environment.
				plan.Placement = r.placementValueAs(ed.ValueString(), p.decision, &resp.Diagnostics)
			}
			plan.Containment = state.Containment
			if planned.URLs == nil {
				plan.URLs = state.URLs
			}
			if updates(state, plan) {
				// An update may have to start the environment afresh (its
				// supervisor or namespace is gone), which probes again and
				// may choose another router port; objects the probe ran
				// under that changed by hand are restored and probed again:
				// those values are known only after apply.
				plan.Containment = types.ObjectUnknown(containmentAttrTypes)
				if planned.URLs == nil {
					plan.URLs = types.MapUnknown(types.StringType)
				}
			}
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// updates reports whether the plan makes Update run: something the runtime
// acts on differs from the state, or the refreshed containment is not
// proven (objects it ran under changed by hand, or a refused re-probe).
func updates(state, plan previewEnvironmentModel) bool {
	return containmentUnproven(state.Containment) || !state.Manifest.Equal(plan.Manifest) || !state.Images.Equal(plan.Images) || !state.Services.Equal(plan.Services) ||
		!state.WaitForRollout.Equal(plan.WaitForRollout) || !state.Name.Equal(plan.Name)
}

// moved reports a change between a known prior value and the plan. A null
// prior (after import, nothing recorded it) is not a move.
func moved(prior, next types.String) bool {
	return !prior.IsNull() && !prior.IsUnknown() && !prior.Equal(next)
}

func (r *previewEnvironmentResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan previewEnvironmentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	pd, ok := requireConfigured(r.data, &resp.Diagnostics)
	if !ok || resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(d...)
	p, ok := r.plan(ctx, pd, plan, &resp.Diagnostics)
	if !ok {
		return
	}
	if pd.licenseErr != nil {
		addLicenseRefusal(&resp.Diagnostics, pd.licenseErr)
		return
	}
	ref := p.rt.Planned(p.env).Ref
	now := pd.now()
	position, waiting := scheduler.Single(scheduler.Run{
		ID: ref.ID, Organization: pd.organization(), Kind: scheduler.Kind("terraform-apply"), EnqueuedAt: now,
	}, 0, 0, now)
	if waiting != nil {
		addRefusals(&resp.Diagnostics, refusal.New(refusal.Internal, "The scheduler held the run: %s", waiting), path.Root("name"))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := p.rt.Create(ctx, p.env)
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("manifest"))
		return
	}
	plan.QueuePosition = types.Int64Value(int64(position.Position))
	r.record(&plan, st, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *previewEnvironmentResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state previewEnvironmentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	pd, ok := requireConfigured(r.data, &resp.Diagnostics)
	if !ok || resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Read(ctx, defaultReadTimeout)
	resp.Diagnostics.Append(d...)
	rt, err := pd.runtimeOf(&state)
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("id"))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := rt.Read(ctx, runtime.Ref{ID: state.ID.ValueString()})
	if errors.Is(err, runtime.ErrNotFound) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("id"))
		return
	}
	r.record(&state, st, &resp.Diagnostics)
	r.completeImported(pd, &state, st)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *previewEnvironmentResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state previewEnvironmentModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	pd, ok := requireConfigured(r.data, &resp.Diagnostics)
	if !ok || resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	resp.Diagnostics.Append(d...)
	p, ok := r.plan(ctx, pd, plan, &resp.Diagnostics)
	if !ok {
		return
	}
	if !updates(state, plan) {
		// Only what the runtime never sees changed (timeouts, or what an
		// import could not record): nothing to do on the environment.
		resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := p.rt.Update(ctx, p.env, runtime.Ref{ID: state.ID.ValueString()})
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("manifest"))
		return
	}
	if plan.QueuePosition.IsUnknown() {
		plan.QueuePosition = state.QueuePosition
	}
	r.record(&plan, st, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *previewEnvironmentResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state previewEnvironmentModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	pd, ok := requireConfigured(r.data, &resp.Diagnostics)
	if !ok || resp.Diagnostics.HasError() {
		return
	}
	timeout, d := state.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(d...)
	rt, err := pd.runtimeOf(&state)
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("id"))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rt.Delete(ctx, runtime.Ref{ID: state.ID.ValueString()}); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		addRefusals(&resp.Diagnostics, err, path.Root("id"))
	}
}

// runtimeOf is the runtime holding an environment in state (ImportState
// records it too).
func (pd *providerData) runtimeOf(state *previewEnvironmentModel) (runtime.Runtime, error) {
	return pd.runtime(state.Runtime.ValueString())
}

func (pd *providerData) organization() string {
	if pd.edition.Organization == "" {
		return "community"
	}
	return pd.edition.Organization
}
