package provider

import (
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

// Environment fallbacks of the provider's kubernetes block.
const (
	envK8sContext          = "AF_K8S_CONTEXT"
	envK8sGatewayImage     = "AF_K8S_GATEWAY_IMAGE"
	envK8sProbeImage       = "AF_K8S_PROBE_IMAGE"
	envK8sIngressClass     = "AF_K8S_INGRESS_CLASS"
	envK8sIngressNamespace = "AF_K8S_INGRESS_NAMESPACE"
	envK8sClusterCIDRs     = "AF_K8S_CLUSTER_CIDRS"
	envK8sGrace            = "AF_K8S_TERMINATION_GRACE"
)

// defaultIngressNamespace is where the ingress controller runs when the
// block does not say: the ingress-nginx chart's namespace.
const defaultIngressNamespace = "ingress-nginx"

// Codes of the kubernetes block and of placing on Kubernetes without targets.
var (
	noContext = refusal.Register("AF-K8S-030",
		"The manifest declares no targets for the kubernetes runtime and the provider names no kubernetes.context: nothing says which cluster to use.",
		"Set the provider's kubernetes.context (or AF_K8S_CONTEXT) to a kubeconfig context, or declare one target with kubeconfig_context under runtime.targets (one target is community).")
	badClusterCIDR = refusal.Register("AF-K8S-031",
		"A kubernetes.cluster_cidrs entry is not a CIDR prefix.",
		"Write the cluster's pod, service and node ranges as prefixes such as 10.244.0.0/16 (in AF_K8S_CLUSTER_CIDRS: comma separated).")
	targetNoContext = refusal.Register("AF-K8S-033",
		"The placed kubernetes target declares no kubeconfig_context: nothing says which cluster to use.",
		"Add kubeconfig_context to the target in runtime.targets.")
	badIngressNamespace = refusal.Register("AF-K8S-032",
		"kubernetes.ingress_namespace is not a namespace name (a DNS label).",
		"Set kubernetes.ingress_namespace (or AF_K8S_INGRESS_NAMESPACE) to the namespace the ingress controller's pods run in, for example ingress-nginx.")
)

type kubernetesProviderModel struct {
	Context          types.String `tfsdk:"context"`
	GatewayImage     types.String `tfsdk:"gateway_image"`
	ProbeImage       types.String `tfsdk:"probe_image"`
	IngressClassName types.String `tfsdk:"ingress_class_name"`
	IngressNamespace types.String `tfsdk:"ingress_namespace"`
	ClusterCIDRs     types.List   `tfsdk:"cluster_cidrs"`
	TerminationGrace types.Int64  `tfsdk:"termination_grace_seconds"`
}

func kubernetesProviderAttribute() providerschema.Attribute {
	desc := func(what, env string) string { return what + " Falls back to `" + env + "`." }
	return providerschema.SingleNestedAttribute{
		Optional:            true,
		MarkdownDescription: "Settings of the `kubernetes` runtime. Unset values take the `AF_K8S_*` environment variables, then the runtime's defaults.",
		Attributes: map[string]providerschema.Attribute{
			"context": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"The kubeconfig context environments use when the manifest declares **no targets**. A manifest with targets always uses the placed "+
					"target's `kubeconfig_context`, and this is ignored. With no targets and no context the plan is refused (`AF-K8S-030`): the "+
					"kubeconfig's current-context (a name on somebody's laptop) never decides where an environment goes.", envK8sContext)},
			"gateway_image": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"Image of the environment's egress gateway (default `"+kubernetes.GatewayImageRepository+":<this provider's version>`, the image released with it: "+
					"it holds this provider's own linux binary and runs `terraform-provider-antifailure gateway`; its digests are published beside the release's SHA256SUMS). "+
					"Mirror it into your registry for clusters without access to the default. A development build (version `dev`) has no default and refuses with `AF-CFG-020` until this is set.", envK8sGatewayImage)},
			"probe_image": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"Image of the containment probe pod (default `"+kubernetes.DefaultProbeImage+"`, a stock busybox: the probe is a shell script).", envK8sProbeImage)},
			"ingress_class_name": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"`ingressClassName` of the web services' Ingresses (default: the cluster's default class).", envK8sIngressClass)},
			"ingress_namespace": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"The namespace the ingress controller's pods run in (default `"+defaultIngressNamespace+"`): the only source web services accept "+
					"traffic from. A wrong namespace leaves the web services unreachable, never open.", envK8sIngressNamespace),
				Validators: []validator.String{refusingString("a namespace name", validIngressNamespace)}},
			"cluster_cidrs": providerschema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "The cluster's pod, " +
				"service and node ranges (CIDR prefixes), excluded from the egress gateway's way out on top of the ranges it always excludes " +
				"(RFC 1918, RFC 6598 shared space, link-local, IPv6 unique-local and link-local). Set it when the cluster uses public ranges " +
				"internally. Falls back to `" + envK8sClusterCIDRs + "` (comma separated).",
				Validators: []validator.List{refusingStrings(validClusterCIDR)}},
			"termination_grace_seconds": providerschema.Int64Attribute{Optional: true, MarkdownDescription: desc(
				"`terminationGracePeriodSeconds` of every pod of an environment, 0 to 600 (default 2: a preview's pods hold nothing worth a long drain, "+
					"and Kubernetes' default of 30 s makes every destroy wait for it).", envK8sGrace)},
		},
	}
}

func validIngressNamespace(ns string) error {
	if !manifest.DNSLabel.MatchString(ns) {
		return refusal.New(badIngressNamespace, "kubernetes.ingress_namespace %q is not a namespace name", ns)
	}
	return nil
}

func validClusterCIDR(c string) error {
	if _, err := netip.ParsePrefix(c); err != nil {
		return refusal.New(badClusterCIDR, "kubernetes.cluster_cidrs holds %q, which is not a CIDR prefix", c).WithDetail("%v", err)
	}
	return nil
}

// options resolves the block against its environment fallbacks. The
// environment's values are checked here, since validation sees only the
// configuration.
func (m *kubernetesProviderModel) options(getenv func(string) string) (kubernetes.Options, error) {
	var cfg kubernetesProviderModel
	if m != nil {
		cfg = *m
	}
	o := kubernetes.Options{
		GatewayImage:     stringOr(cfg.GatewayImage, getenv(envK8sGatewayImage)),
		ProbeImage:       stringOr(cfg.ProbeImage, getenv(envK8sProbeImage)),
		IngressClassName: stringOr(cfg.IngressClassName, getenv(envK8sIngressClass)),
	}
	ns := stringOr(cfg.IngressNamespace, getenv(envK8sIngressNamespace))
	if ns == "" {
		ns = defaultIngressNamespace
	}
	if err := validIngressNamespace(ns); err != nil {
		return o, err
	}
	o.IngressNamespaceSelector = map[string]string{"kubernetes.io/metadata.name": ns}
	var cidrs []string
	for _, e := range cfg.ClusterCIDRs.Elements() {
		if c, ok := e.(types.String); ok {
			cidrs = append(cidrs, c.ValueString())
		}
	}
	if cfg.ClusterCIDRs.IsNull() {
		for _, c := range strings.Split(getenv(envK8sClusterCIDRs), ",") {
			if c = strings.TrimSpace(c); c != "" {
				cidrs = append(cidrs, c)
			}
		}
	}
	for _, c := range cidrs {
		if err := validClusterCIDR(c); err != nil {
			return o, err
		}
	}
	o.ClusterCIDRs = cidrs
	return o, nil
}

// kubeContext is the context for environments of a manifest without targets.
func (m *kubernetesProviderModel) kubeContext(getenv func(string) string) string {
	var cfg kubernetesProviderModel
	if m != nil {
		cfg = *m
	}
	return stringOr(cfg.Context, getenv(envK8sContext))
}

// placeOnContext completes a kubernetes placement with the context it uses,
// or refuses it. The placed target's kubeconfig_context decides; with no
// targets, the provider's kubernetes.context. The kubeconfig's
// current-context never does: it is a name on somebody's laptop, and
// following it would move environments between clusters when they switch.
func (pd *providerData) placeOnContext(m *manifest.Manifest, d *placement.Decision) error {
	if d.Runtime != manifest.ProviderKubernetes || d.Target.KubeconfigContext != "" {
		return nil
	}
	pos := m.Runtime.ProviderPos
	if len(m.Runtime.Targets) > 0 {
		return refusal.New(targetNoContext, "Target %q declares no kubeconfig_context", d.Target.Name).At(pos.Line, pos.Column)
	}
	if pd.k8sContext == "" {
		return refusal.New(noContext, "The manifest declares no targets and the provider's kubernetes.context is not set").
			WithDetail("The kubeconfig's current-context is never used: it would place environments wherever kubectl last pointed.").
			At(pos.Line, pos.Column)
	}
	d.Target.KubeconfigContext = pd.k8sContext
	return nil
}

// imageTag is what an OCI tag may be; a version outside it has no image.
var imageTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// DefaultGatewayImage is the gateway image released with provider version
// version: the repository tagged with the version itself, never :latest
// (which would run another version's gateway). "dev", a plain go build, has
// none, and the Kubernetes runtime then refuses with AF-CFG-020.
func DefaultGatewayImage(version string) string {
	if version == "dev" || !imageTag.MatchString(version) {
		return ""
	}
	return kubernetes.GatewayImageRepository + ":" + version
}

// terminationGrace resolves termination_grace_seconds (nil: the runtime's
// default), refusing what is not 0 to 600 seconds.
func (m *kubernetesProviderModel) terminationGrace(getenv func(string) string) (*time.Duration, error) {
	from, grace, set := "kubernetes.termination_grace_seconds", int64(0), false
	if m != nil && !m.TerminationGrace.IsNull() && !m.TerminationGrace.IsUnknown() {
		grace, set = m.TerminationGrace.ValueInt64(), true
	}
	if v := getenv(envK8sGrace); !set && v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, refusal.New(badGrace, "%s=%q is not a whole number of seconds", envK8sGrace, v).OnAttribute("kubernetes")
		}
		from, grace, set = envK8sGrace, n, true
	}
	if !set {
		return nil, nil
	}
	if grace < 0 || grace > 600 {
		return nil, refusal.New(badGrace, "%s is %d; it must be 0 to 600 seconds", from, grace).OnAttribute("kubernetes")
	}
	d := time.Duration(grace) * time.Second
	return &d, nil
}

var badGrace = refusal.Register("AF-K8S-020",
	"The kubernetes runtime's termination grace is not a whole number of seconds from 0 to 600.",
	"Set kubernetes.termination_grace_seconds (or AF_K8S_TERMINATION_GRACE) to a value from 0 to 600, or leave it unset for the default of 2.")
