// Package provider is the Terraform layer: schemas, plan-time refusals and the
// translation between Terraform values and the packages that decide things.
// It holds no product logic of its own.
package provider

import (
	"cmp"
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/residency"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

// Environment variables the provider falls back to, for CI and Terraform Cloud
// runs where nothing but attributes and variables reach the provider.
const (
	envLicense        = "AF_LICENSE"
	envAllowedRegions = "AF_POLICY_ALLOWED_REGIONS"
	envKubeconfig     = "AF_KUBECONFIG"
	envKubeconfigPath = "KUBECONFIG"
)

// deps is what the provider is built with. Production uses the release
// verifier and the real clock; tests inject their own in-process.
type deps struct {
	verifier license.Verifier
	now      func() time.Time
	getenv   func(string) string
	runtimes runtimeFactory
}

// New returns the provider factory for main.
func New(version string) func() provider.Provider {
	return newWith(version, deps{verifier: license.ReleaseVerifier(), now: time.Now, getenv: os.Getenv, runtimes: releaseRuntimes})
}

func newWith(version string, d deps) func() provider.Provider {
	return func() provider.Provider { return &antifailureProvider{version: version, deps: d} }
}

type antifailureProvider struct {
	version string
	deps    deps
}

var (
	_ provider.ProviderWithFunctions      = (*antifailureProvider)(nil)
	_ provider.ProviderWithValidateConfig = (*antifailureProvider)(nil)
)

type providerModel struct {
	License        types.String             `tfsdk:"license"`
	Policy         *policyModel             `tfsdk:"policy"`
	KubeconfigPath types.String             `tfsdk:"kubeconfig_path"`
	Kubeconfig     types.String             `tfsdk:"kubeconfig"`
	ECS            *ecsProviderModel        `tfsdk:"ecs"`
	Kubernetes     *kubernetesProviderModel `tfsdk:"kubernetes"`
}

type policyModel struct {
	AllowedRegions []types.String `tfsdk:"allowed_regions"`
}

// providerData is handed to every resource and data source.
type providerData struct {
	edition    license.Edition
	licenseErr error // a license that failed verification (license_problem.go)
	policy     *residency.Policy
	kubeconfig kubernetes.Kubeconfig
	now        func() time.Time
	getenv     func(string) string
	runtimes   *runtimeCache
	ecs        ecsSettings
	k8s        kubernetes.Options
	// k8sContext is the context of kubernetes environments whose manifest
	// declares no targets; empty refuses them (AF-K8S-030).
	k8sContext string
}

func (p *antifailureProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "antifailure"
	resp.Version = p.version
}

func (p *antifailureProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Antifailure runs **preview environments**: a short-lived copy of an application, per pull request or branch, " +
			"with every outbound call either contained or answered locally. Without a `license` the provider is the community edition; " +
			"a valid license makes it the enterprise edition with the features it names.",
		Attributes: map[string]schema.Attribute{
			"license": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "Enterprise license token. Falls back to the `" + envLicense + "` environment variable. " +
					"Unset: the community edition. The token is verified offline against keys built into the provider and is never written to state or logs; " +
					"a tampered, expired, not-yet-valid or unknown-key token is refused with an `AF-LIC-…` code that says which, when creating an environment " +
					"or placing one that needs an enterprise feature; it never blocks refresh or destroy of environments that exist (the provider then acts as the community edition).",
			},
			"policy": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Organization policy. Falls back to `" + envAllowedRegions + "` (comma separated regions) for `allowed_regions`. " +
					"Unset: the residency verdict is `no_policy`.",
				Attributes: map[string]schema.Attribute{
					"allowed_regions": schema.ListAttribute{
						ElementType: types.StringType,
						Required:    true,
						MarkdownDescription: "Regions environments may be placed in, compared with the placed target's `region` tag. " +
							"A target in another region is refused at plan (`AF-POL-001`), never placed elsewhere; a target with no `region` tag " +
							"gets the verdict `not_evaluable` and a warning naming it.",
					},
				},
			},
			"kubeconfig_path": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Path to a kubeconfig file for the `kubernetes` runtime, or a `" + envKubeconfigPath + "`-style list of files " +
					"(merged as kubectl merges them). A leading `~/` is the home directory. Falls back to `" + envKubeconfigPath + "`. " +
					"The context used is the placed target's `kubeconfig_context`, or with no targets the provider's `kubernetes.context`; never the " +
					"kubeconfig's current-context, another context or in-cluster configuration. Conflicts with `kubeconfig` (`AF-CFG-003`, at validate).",
			},
			"ecs":        ecsProviderAttribute(),
			"kubernetes": kubernetesProviderAttribute(),
			"kubeconfig": schema.StringAttribute{
				Optional:  true,
				Sensitive: true,
				MarkdownDescription: "Raw kubeconfig content, for runs with no local files (Terraform Cloud). Falls back to `" + envKubeconfig + "`. " +
					"Conflicts with `kubeconfig_path`. Sensitive: its tokens never reach state or logs.",
			},
		},
	}
}

func (p *antifailureProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if cfg.License.IsUnknown() || cfg.KubeconfigPath.IsUnknown() || cfg.Kubeconfig.IsUnknown() {
		// Known only after apply of something else: leave the provider
		// unconfigured; whoever needs it reports that with a code.
		return
	}
	getenv := p.deps.getenv
	token := stringOr(cfg.License, getenv(envLicense))
	verifier := p.deps.verifier
	verifier.Now = p.deps.now
	edition, licenseErr := verifier.Verify(token)
	if licenseErr != nil {
		edition = license.CommunityEdition // see license_problem.go
	}

	pd := &providerData{edition: edition, licenseErr: licenseErr, now: p.deps.now, getenv: getenv}
	pd.ecs = cfg.ECS.settings()
	var err error
	if pd.k8s, err = cfg.Kubernetes.options(getenv); err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("kubernetes"))
		return
	}
	pd.k8sContext = cfg.Kubernetes.kubeContext(getenv)
	pd.k8s.GatewayImage = cmp.Or(pd.k8s.GatewayImage, DefaultGatewayImage(p.version))
	if pd.k8s.TerminationGrace, err = cfg.Kubernetes.terminationGrace(getenv); err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("kubernetes").AtName("termination_grace_seconds"))
		return
	}
	pd.runtimes = &runtimeCache{build: p.deps.runtimes, built: map[string]runtime.Runtime{}}
	if pd.policy, err = readPolicy(cfg.Policy, getenv(envAllowedRegions)); err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("policy").AtName("allowed_regions"))
		return
	}
	if pd.kubeconfig, err = readKubeconfigSource(cfg, getenv); err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("kubeconfig_path"))
		return
	}
	resp.DataSourceData = pd
	resp.ResourceData = pd
}

func stringOr(v types.String, fallback string) string {
	if v.IsNull() || v.IsUnknown() {
		return fallback
	}
	return v.ValueString()
}

func readPolicy(m *policyModel, env string) (*residency.Policy, error) {
	var regions []string
	switch {
	case m != nil:
		for _, r := range m.AllowedRegions {
			if r.IsUnknown() || r.IsNull() {
				return nil, refusal.New(refusal.ConfigInvalid, "policy.allowed_regions holds an unknown or null region").
					WithNext("Give policy.allowed_regions values known at plan time.")
			}
			regions = append(regions, r.ValueString())
		}
	case env != "":
		for _, r := range strings.Split(env, ",") {
			regions = append(regions, strings.TrimSpace(r))
		}
	default:
		return nil, nil
	}
	if err := checkRegions(regions); err != nil {
		return nil, err
	}
	return &residency.Policy{AllowedRegions: regions}, nil
}

// readKubeconfigSource is where the Kubernetes runtime reads its kubeconfig
// from: raw content wins over a path; both set is refused rather than one
// chosen silently.
func readKubeconfigSource(cfg providerModel, getenv func(string) string) (kubernetes.Kubeconfig, error) {
	content := stringOr(cfg.Kubeconfig, getenv(envKubeconfig))
	p := stringOr(cfg.KubeconfigPath, "")
	if content != "" && p != "" {
		return kubernetes.Kubeconfig{}, bothKubeconfigs()
	}
	if content != "" {
		return kubernetes.Kubeconfig{Content: content}, nil
	}
	if p == "" {
		p = getenv(envKubeconfigPath)
	}
	p = expandHome(p, getenv)
	// Like kubectl, a KUBECONFIG-style list of files is merged by the runtime;
	// every file named must exist.
	for _, file := range filepath.SplitList(p) {
		if _, err := os.Stat(file); err != nil {
			return kubernetes.Kubeconfig{}, refusal.New(refusal.ConfigInvalid, "kubeconfig_path %s cannot be read: %v", file, err).
				WithNext("Point kubeconfig_path (or " + envKubeconfigPath + ") at existing kubeconfig files, or pass the content as kubeconfig.")
		}
	}
	return kubernetes.Kubeconfig{Path: p}, nil
}

func (p *antifailureProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		newPreviewEnvironmentResource,
	}
}

func (p *antifailureProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{
		newPlacementDataSource,
		newLicenseDataSource,
		newECSEgressReportDataSource,
		newDNSFirewallCheckDataSource,
	}
}

func (p *antifailureProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{
		newDNSFirewallFindingsFunction,
		newManifestDecodeFunction,
	}
}
