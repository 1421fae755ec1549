package provider

import (
	"regexp"
	"strconv"
	"time"

	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

// Environment fallbacks of the provider's kubernetes block.
const (
	envK8sGatewayImage = "AF_K8S_GATEWAY_IMAGE"
	envK8sProbeImage   = "AF_K8S_PROBE_IMAGE"
	envK8sIngressClass = "AF_K8S_INGRESS_CLASS"
	envK8sGrace        = "AF_K8S_TERMINATION_GRACE"
)

type kubernetesProviderModel struct {
	GatewayImage     types.String `tfsdk:"gateway_image"`
	ProbeImage       types.String `tfsdk:"probe_image"`
	IngressClassName types.String `tfsdk:"ingress_class_name"`
	TerminationGrace types.Int64  `tfsdk:"termination_grace_seconds"`
}

func kubernetesProviderAttribute() providerschema.Attribute {
	desc := func(what, env string) string { return what + " Falls back to `" + env + "`." }
	return providerschema.SingleNestedAttribute{
		Optional:            true,
		MarkdownDescription: "Settings of the `kubernetes` runtime. Unset values take the runtime's defaults.",
		Attributes: map[string]providerschema.Attribute{
			"gateway_image": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"Image of the environment's egress gateway (default `"+kubernetes.GatewayImageRepository+":<this provider's version>`, the image released with it: "+
					"it holds this provider's own linux binary and runs `terraform-provider-antifailure gateway`; its digests are published beside the release's SHA256SUMS). "+
					"Mirror it into your registry for clusters without access to the default. A development build (version `dev`) has no default and refuses with `AF-CFG-020` until this is set.", envK8sGatewayImage)},
			"probe_image": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"Image of the containment probe pod (default `"+kubernetes.DefaultProbeImage+"`, a stock busybox: the probe is a shell script).", envK8sProbeImage)},
			"ingress_class_name": providerschema.StringAttribute{Optional: true, MarkdownDescription: desc(
				"`ingressClassName` of the web services' Ingresses (default: the cluster's default class).", envK8sIngressClass)},
			"termination_grace_seconds": providerschema.Int64Attribute{Optional: true, MarkdownDescription: desc(
				"`terminationGracePeriodSeconds` of every pod of an environment, 0 to 600 (default 2: a preview's pods hold nothing worth a long drain, "+
					"and Kubernetes' default of 30 s makes every destroy wait for it).", envK8sGrace)},
		},
	}
}

// options resolves the block against its environment fallbacks.
func (m *kubernetesProviderModel) options(getenv func(string) string) kubernetes.Options {
	var cfg kubernetesProviderModel
	if m != nil {
		cfg = *m
	}
	return kubernetes.Options{
		GatewayImage:     stringOr(cfg.GatewayImage, getenv(envK8sGatewayImage)),
		ProbeImage:       stringOr(cfg.ProbeImage, getenv(envK8sProbeImage)),
		IngressClassName: stringOr(cfg.IngressClassName, getenv(envK8sIngressClass)),
	}
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
