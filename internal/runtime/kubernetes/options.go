package kubernetes

import (
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Options tune the runtime. The zero value is usable.
type Options struct {
	// GatewayImage runs the egress gateway (package egress behind a main);
	// required. GatewayCommand and GatewayArgs override its entrypoint and
	// argv.
	GatewayImage   string
	GatewayCommand []string
	GatewayArgs    []string
	// ProbeImage runs the containment probe script; it needs a POSIX shell
	// with busybox's nc, nslookup, wget and timeout. Default DefaultProbeImage.
	ProbeImage string

	// IngressClassName is set on every Ingress; empty leaves the cluster's
	// default class to decide.
	IngressClassName string
	// IngressNamespaceSelector selects the ingress controller's namespace,
	// the only source web services accept traffic from. Default
	// kubernetes.io/metadata.name=ingress-nginx.
	IngressNamespaceSelector map[string]string
	// IngressPodSelector narrows that to the controller's pods (optional).
	IngressPodSelector map[string]string
	// ClusterDNSNamespace and ClusterDNSSelector find the cluster resolver:
	// the probe tries to reach it (by its Service's ClusterIP, read from
	// ClusterDNSService), and the gateway alone may use it to resolve
	// allow/sandbox hosts. Defaults kube-system, k8s-app=kube-dns, kube-dns.
	ClusterDNSNamespace string
	ClusterDNSService   string
	ClusterDNSSelector  map[string]string
	// ClusterCIDRs are the cluster's pod, service and node ranges, excluded
	// from the gateway's egress on top of ExcludedRanges.
	ClusterCIDRs []string
	// URLScheme is the scheme of the URLs reported for web services
	// (default http; an Ingress with TLS for its host reports https).
	URLScheme string

	// ProbeWindow is how long the probe repeats its attempts (policies may
	// be programmed late for new pods); ProbeInterval is the pause between
	// rounds; ProbeAttemptTimeout bounds one attempt. Defaults 4s, 1s, 2s:
	// on a real node with kube-router the policy held from the very first
	// attempt, a REJECTed connect reads "connection refused" after about 1 s
	// (the SYN retransmission), so the timeout must stay above 1.5 s, and two
	// rounds show that a block holds.
	ProbeWindow         time.Duration
	ProbeInterval       time.Duration
	ProbeAttemptTimeout time.Duration
	// ProbeTimeout bounds the whole probe, from creating the pod to reading
	// its result (scheduling and image pull included). Default 3m.
	ProbeTimeout time.Duration
	// ProbePublicIPs are the public addresses tried on TCP 443 and 80, and
	// ProbeResolvers the public resolvers tried on UDP and TCP 53.
	// Defaults 1.1.1.1, 8.8.8.8 for both.
	ProbePublicIPs []string
	ProbeResolvers []string
	// ProbeCanaries are extra tenant targets (literal ip:port) that accept a
	// connection whenever they are reachable, tried like other environments'
	// gateways. Tests set them (a listener pod in another namespace), so that
	// an unenforcing network plugin is caught even when the environment is
	// the only one on the cluster.
	ProbeCanaries []string

	// TerminationGrace is the terminationGracePeriodSeconds of every pod the
	// runtime runs (default 2s: a preview's pods hold nothing worth a
	// graceful drain, and the Kubernetes default of 30 s makes every destroy
	// wait for it). Nil means the default; zero is allowed.
	TerminationGrace *time.Duration

	// ProgressDeadline is each Deployment's progressDeadlineSeconds (default
	// 10m, the Kubernetes default); a rollout that exceeds it fails at once.
	ProgressDeadline time.Duration
	// CleanupTimeout bounds removing a failed create (default 3m); it runs
	// even when the create's own context has run out.
	CleanupTimeout time.Duration

	// QPS and Burst for the client (defaults 50, 100; a negative QPS turns
	// the client-side rate limit off).
	QPS   float32
	Burst int
}

func (o Options) withDefaults() Options {
	if o.GatewayArgs == nil {
		o.GatewayArgs = DefaultGatewayArgs
	}
	if o.ProbeImage == "" {
		o.ProbeImage = DefaultProbeImage
	}
	if o.IngressNamespaceSelector == nil {
		o.IngressNamespaceSelector = map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}
	}
	if o.ClusterDNSNamespace == "" {
		o.ClusterDNSNamespace = "kube-system"
	}
	if o.ClusterDNSService == "" {
		o.ClusterDNSService = "kube-dns"
	}
	if o.ClusterDNSSelector == nil {
		o.ClusterDNSSelector = map[string]string{"k8s-app": "kube-dns"}
	}
	if o.URLScheme == "" {
		o.URLScheme = DefaultURLScheme
	}
	if o.ProbeWindow == 0 {
		o.ProbeWindow = 4 * time.Second
	}
	if o.ProbeInterval == 0 {
		o.ProbeInterval = time.Second
	}
	if o.TerminationGrace == nil {
		o.TerminationGrace = ptr(DefaultTerminationGrace)
	}
	if o.ProbeAttemptTimeout == 0 {
		o.ProbeAttemptTimeout = 2 * time.Second
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = 3 * time.Minute
	}
	if o.ProbePublicIPs == nil {
		o.ProbePublicIPs = []string{"1.1.1.1", "8.8.8.8"}
	}
	if o.ProbeResolvers == nil {
		o.ProbeResolvers = []string{"1.1.1.1", "8.8.8.8"}
	}
	if o.ProgressDeadline == 0 {
		o.ProgressDeadline = 10 * time.Minute
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = 3 * time.Minute
	}
	if o.QPS == 0 {
		o.QPS = 50
	}
	if o.Burst == 0 {
		o.Burst = 100
	}
	return o
}

func (o Options) validate() error {
	if o.GatewayImage == "" {
		return refusal.New(GatewayImageUnset, "No egress gateway image is set for the kubernetes runtime").
			WithDetail("A released provider defaults kubernetes.gateway_image to %s:<its version>; this build's version has no released image.", GatewayImageRepository)
	}
	for _, c := range o.ClusterCIDRs {
		if _, err := netip.ParsePrefix(c); err != nil {
			return fmt.Errorf("kubernetes runtime: cluster CIDR %q: %w", c, err)
		}
	}
	for _, ip := range append(slices.Clone(o.ProbePublicIPs), o.ProbeResolvers...) {
		if _, err := netip.ParseAddr(ip); err != nil {
			return fmt.Errorf("kubernetes runtime: probe address %q is not a literal IP", ip)
		}
	}
	for _, hp := range o.ProbeCanaries {
		if _, err := netip.ParseAddrPort(hp); err != nil {
			return fmt.Errorf("kubernetes runtime: probe canary %q is not a literal ip:port", hp)
		}
	}
	if *o.TerminationGrace < 0 {
		return fmt.Errorf("kubernetes runtime: termination grace must not be negative")
	}
	if o.URLScheme != "http" && o.URLScheme != "https" {
		return fmt.Errorf("kubernetes runtime: URL scheme %q is not http or https", o.URLScheme)
	}
	if o.ProbeWindow < 0 || o.ProbeInterval < 0 || o.ProbeAttemptTimeout < time.Second || o.ProbeTimeout < 0 {
		return fmt.Errorf("kubernetes runtime: probe durations must be positive (attempt timeout at least 1s)")
	}
	return nil
}
