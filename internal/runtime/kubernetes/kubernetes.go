// Package kubernetes is the Kubernetes runtime: one namespace per preview
// environment, holding the runtime's own NetworkPolicies, an egress gateway,
// and per service a Deployment (per web service also a Service and an
// Ingress), created through client-go against the cluster behind the placed
// target's kubeconfig context.
//
// Order of creation, and why:
//
//  1. the namespace (NamespaceFor: af-<app>-<env>, hashed where that name
//     could belong to another pair), labelled as ours and with app and env;
//  2. the NetworkPolicies: default deny in both directions; services may reach
//     only the egress gateway's proxy and DNS ports; the gateway may reach the
//     outside except private, shared, link-local and the cluster's ranges; web
//     services accept ingress from the ingress controller's namespace;
//  3. the egress gateway (catalogue ConfigMap, Service, Deployment), rolled out;
//  4. the containment probe: a Pod with the service labels, so it runs under
//     exactly the services' rules, making literal-IP escape attempts (public
//     addresses and resolvers, metadata, the API server, the node, and other
//     tenants: up to three other environments' gateways, found with one LIST
//     across namespaces before anything is created) and a positive control
//     over a short window. Contained: the probe is deleted and creation goes
//     on. Anything else: AF-RUN-043/044/045, everything is removed, nothing
//     of the application was started;
//  5. per service a Deployment, per web service a Service and an Ingress;
//     then the rollout is awaited.
//
// Any failing step removes the namespace (and so everything in it) and waits
// until it is gone before refusing; the refusal names what was created and
// removed again.
//
// Cost: a refresh is six requests whatever the number of services (GET the
// namespace, LIST Deployments, Services, Ingresses, ConfigMaps and
// NetworkPolicies); a delete is six (GET, three DELETE collections so that no
// controller churns while the namespace terminates, DELETE with a UID
// precondition, one WATCH until gone).
package kubernetes

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// Codes this runtime refuses with (AF-RUN-043/044/045, the probe's verdicts,
// belong to package probe).
var (
	ContextMissing = refusal.Register("AF-K8S-001",
		"The placed target's kubeconfig_context is not a context of the kubeconfig.",
		"Add the context to the kubeconfig, or set the target's kubeconfig_context to one of the contexts listed.")
	NoKubeconfig = refusal.Register("AF-K8S-002",
		"No usable kubeconfig: none was given, or it cannot be read or parsed.",
		"Set the provider's kubeconfig_path or kubeconfig, or KUBECONFIG, to a valid kubeconfig.")
	BadName = refusal.Register("AF-K8S-003",
		"A name the environment needs on Kubernetes is not valid there (too long, or reserved).",
		"Shorten the application, environment or service name as the message says.")
	APIFailed = refusal.Register("AF-K8S-004",
		"A Kubernetes API request failed.",
		"Check that the cluster is reachable and that the kubeconfig's user may manage namespaces and their objects, then apply again.")
	RolloutFailed = refusal.Register("AF-K8S-005",
		"A Deployment did not become available: it exceeded its progress deadline, or the timeout ran out.",
		"Read the Deployment's events and its pods' status for the reason (image, readiness path, resources), fix it, and apply again.")
	ProbeDidNotRun = refusal.Register("AF-K8S-006",
		"The containment probe pod did not finish in time, so containment is unproven.",
		"Check that the cluster can schedule pods in the namespace and pull the probe image, then apply again.")
	AlreadyExists = refusal.Register("AF-K8S-007",
		"The environment's namespace already exists.",
		"Import the environment (terraform import with <kubeconfig_context>/<app>/<env>) or choose another environment name.")
	NotOurs = refusal.Register("AF-K8S-008",
		"The namespace is not an Antifailure preview environment (it lacks the runtime's labels).",
		"Name an environment the Kubernetes runtime created (<kubeconfig_context>/<app>/<env>).")
	BadImportID = refusal.Register("AF-K8S-009",
		"The import ID is not <kubeconfig_context>/<app>/<env>.",
		"Import with an ID such as eu-prod/shop/pr-42: the kubeconfig context, the manifest's name and the environment's name.")
	// GatewayImageUnset: a release build defaults the gateway image to its
	// own version's tag; a development build has none to default to, and
	// the runtime never guesses one (a :latest would run another version).
	GatewayImageUnset = refusal.Register("AF-CFG-020",
		"No egress gateway image: this provider build (version dev) has no released image to default to.",
		"Set the provider's kubernetes.gateway_image (or AF_K8S_GATEWAY_IMAGE) to an image built from this provider, or use a released provider version.")
)

// Labels and annotations the runtime puts on what it creates.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "antifailure"
	LabelApp       = "antifailure.dev/app"
	LabelEnv       = "antifailure.dev/environment"
	// LabelRole is RoleService on service pods and the probe, RoleGateway on
	// the gateway; the NetworkPolicies select on it.
	LabelRole   = "antifailure.dev/role"
	RoleService = "service"
	RoleGateway = "gateway"
	LabelSvc    = "antifailure.dev/service"
	LabelWeb    = "antifailure.dev/web"
	// LabelProbe marks the containment probe pod.
	LabelProbe = "antifailure.dev/probe"

	// AnnotationCreateID is a random token set on the namespace at creation,
	// so that a create whose response was lost can tell its own namespace
	// from one that was there before.
	AnnotationCreateID = "antifailure.dev/create-id"
	// AnnotationContainment holds the probe result (probe.Result as JSON).
	AnnotationContainment = "antifailure.dev/containment"
	// AnnotationProbePlan holds the probe's planned attempts (probe.Attempt
	// without outcomes, as JSON) on the probe pod.
	AnnotationProbePlan = "antifailure.dev/probe-plan"
	// AnnotationConfigHash on the gateway's pod template rolls the gateway
	// when the egress catalogue changes.
	AnnotationConfigHash = "antifailure.dev/egress-config-sha256"
	// AnnotationConfigVersion on the gateway's pod template is the
	// resourceVersion of the ConfigMap it reads: it rolls the gateway when
	// the ConfigMap is rewritten, also to the same catalogue (a repair).
	AnnotationConfigVersion = "antifailure.dev/egress-config-version"
)

// Names of the objects the runtime itself owns inside the namespace. Service
// names starting with "af-" are refused so that they never collide.
const (
	GatewayName      = "af-egress-gateway"
	GatewayConfigMap = "af-egress-config"
	ProbePodName     = "af-containment-probe"
	reservedPrefix   = "af-"
)

// Gateway ports: the proxy, and DNS (the container listens on an
// unprivileged port; the Service maps 53 onto it).
const (
	ProxyPort      = 3128
	GatewayDNSPort = 5353
	// CanaryPort is the gateway's canary (egress.Command's --canary): it
	// accepts every connection, the gateway's ingress admits it from any
	// source, and no egress policy lets a service reach it, so a connection
	// to it that completes proves the connecting pod's own policies are not
	// in force, and a refused one that they are.
	CanaryPort        = 3129
	ServiceDNSPort    = 53
	gatewayConfigPath = "/etc/antifailure/egress/config.json"
)

// Defaults for Options. The gateway image has no default here: the provider
// defaults it to GatewayImageRepository tagged with its own version.
const (
	DefaultProbeImage      = "busybox:1.36.1"
	GatewayImageRepository = "ghcr.io/antifailure/egress-gateway"
	DefaultURLScheme       = "http"
	// DefaultTerminationGrace is Options.TerminationGrace's default.
	DefaultTerminationGrace = 2 * time.Second
)

// DefaultGatewayArgs is the gateway container's argv after the image's
// entrypoint.
var DefaultGatewayArgs = []string{
	"--config=" + gatewayConfigPath,
	fmt.Sprintf("--http=:%d", ProxyPort),
	fmt.Sprintf("--dns=:%d", GatewayDNSPort),
	fmt.Sprintf("--canary=:%d", CanaryPort),
}

// ExcludedRanges are never reachable from the gateway: RFC 1918, shared
// address space (RFC 6598) and link-local, plus IPv6 unique-local and
// link-local. Options.ClusterCIDRs adds the cluster's own ranges.
var ExcludedRanges = []string{
	"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16",
	"fc00::/7", "fe80::/10",
}

// Kubeconfig is where the runtime reads its kubeconfig from. Content wins
// over Path; Path may be a KUBECONFIG-style list of files, merged as kubectl
// does. The caller resolves environment fallbacks (the provider reads
// KUBECONFIG through its own configuration), so the runtime never reads the
// process environment, and with neither it refuses: no ~/.kube/config, no
// in-cluster configuration.
type Kubeconfig struct {
	Path    string
	Content string
}

// Runtime is the Kubernetes runtime. It is safe for concurrent use.
type Runtime struct {
	src  Kubeconfig
	wrap func(http.RoundTripper) http.RoundTripper
	opts Options

	mu      sync.Mutex
	clients map[string]k8s.Interface // by context name
}

var _ runtime.Runtime = (*Runtime)(nil)

// New builds the runtime. wrap, when not nil, wraps every HTTP round trip the
// runtime makes (tests count or fail requests with it). Nothing is read or
// dialled until a method needs it.
func New(src Kubeconfig, wrap func(http.RoundTripper) http.RoundTripper, opts Options) (*Runtime, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Runtime{src: src, wrap: wrap, opts: opts, clients: map[string]k8s.Interface{}}, nil
}

// loadKubeconfig reads the kubeconfig, locally. where says which source it
// came from, for messages.
func (r *Runtime) loadKubeconfig() (cfg *clientcmdapi.Config, where string, err error) {
	switch {
	case r.src.Content != "":
		where = "the provider's kubeconfig attribute"
		cfg, err = clientcmd.Load([]byte(r.src.Content))
	case r.src.Path != "":
		where = r.src.Path
		cfg, err = (&clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(r.src.Path)}).Load()
	default:
		return nil, "", refusal.New(NoKubeconfig, "No kubeconfig was given for the kubernetes runtime").
			WithDetail("The provider's kubeconfig_path and kubeconfig are unset and KUBECONFIG is empty. The runtime does not fall back to ~/.kube/config or to in-cluster configuration.").
			OnAttribute("kubeconfig_path")
	}
	if err != nil {
		return nil, "", refusal.New(NoKubeconfig, "The kubeconfig from %s cannot be read: %v", where, err).OnAttribute("kubeconfig_path")
	}
	return cfg, where, nil
}

// contextFor is the kubeconfig context an environment uses: the placed
// target's kubeconfig_context, which the provider fills from its
// kubernetes.context when the manifest declares no targets. The kubeconfig's
// current-context is never a fallback: it is a name on somebody's laptop.
func contextFor(env runtime.Environment) string {
	return env.Placement.Target.KubeconfigContext
}

// checkContext refuses a context the kubeconfig cfg (read from where) does
// not have, listing those it has.
func checkContext(cfg *clientcmdapi.Config, where, name string, pos manifest.Position) error {
	if name != "" {
		if _, ok := cfg.Contexts[name]; ok {
			return nil
		}
	}
	have := make([]string, 0, len(cfg.Contexts))
	for n := range cfg.Contexts {
		have = append(have, n)
	}
	slices.Sort(have)
	list := "none"
	if len(have) > 0 {
		list = strings.Join(have, ", ")
	}
	var ref *refusal.Refusal
	if name == "" {
		ref = refusal.New(ContextMissing, "The environment names no kubeconfig context (no target's kubeconfig_context, no provider kubernetes.context); the kubeconfig's (%s) current-context is never used", where)
	} else {
		ref = refusal.New(ContextMissing, "kubeconfig context %q does not exist in the kubeconfig (%s)", name, where)
	}
	ref.Detail = fmt.Sprintf("Contexts in the kubeconfig: %s. The runtime never uses another context instead.", list)
	ref.Line, ref.Column = pos.Line, pos.Column
	return ref
}

// client returns the (cached) clientset for a context. The context must have
// passed checkContext.
func (r *Runtime) client(name string) (k8s.Interface, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.clients[name]; ok {
		return c, nil
	}
	cfg, where, err := r.loadKubeconfig()
	if err != nil {
		return nil, err
	}
	if err := checkContext(cfg, where, name, manifest.Position{}); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, refusal.New(NoKubeconfig, "kubeconfig context %q cannot be used: %v", name, err).OnAttribute("kubeconfig_path")
	}
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = r.opts.QPS, r.opts.Burst
	rc.UserAgent = "terraform-provider-antifailure"
	if r.wrap != nil {
		prev := rc.WrapTransport
		rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			if prev != nil {
				rt = prev(rt)
			}
			return r.wrap(rt)
		}
	}
	c, err := k8s.NewForConfig(rc)
	if err != nil {
		return nil, refusal.New(NoKubeconfig, "kubeconfig context %q cannot be used: %v", name, err).OnAttribute("kubeconfig_path")
	}
	r.clients[name] = c
	return c, nil
}

// HostFor is a web service's Ingress host: <service>-<env>.<domain>.
func HostFor(service, env, domain string) string { return service + "-" + env + "." + domain }

// Planned is the environment's ID (<kubeconfig_context>/<app>/<env>), its
// namespace and its URLs, all known before it is created.
func (r *Runtime) Planned(env runtime.Environment) runtime.State {
	k := runtime.KeyOf(env)
	st := runtime.State{Ref: runtime.Ref{ID: k.KubernetesID(contextFor(env))}, Namespace: NamespaceFor(k), URLs: map[string]string{}}
	for _, s := range env.Manifest.Services {
		if s.Web {
			st.URLs[s.Name] = r.opts.URLScheme + "://" + HostFor(s.Name, env.Name, env.Placement.Domain)
		}
	}
	return st
}

// Check refuses, without any cluster call, what can be told from the
// environment and the kubeconfig alone: a context that does not exist, and
// names Kubernetes would reject.
func (r *Runtime) Check(env runtime.Environment) error {
	m := env.Manifest
	var errs refusal.List
	for _, s := range m.Services {
		if strings.HasPrefix(s.Name, reservedPrefix) {
			errs = append(errs, refusal.New(BadName, "Service name %q starts with %q, which the kubernetes runtime reserves for its own objects", s.Name, reservedPrefix).
				At(s.Pos.Line, s.Pos.Column).WithNext("Rename the service."))
		}
		if !s.Web {
			continue
		}
		if s.Name[0] >= '0' && s.Name[0] <= '9' {
			errs = append(errs, refusal.New(BadName, "Web service %q starts with a digit; a Kubernetes Service name must start with a letter", s.Name).
				At(s.Pos.Line, s.Pos.Column).WithNext("Rename the service to start with a letter."))
		}
		if label := s.Name + "-" + env.Name; len(label) > 63 {
			errs = append(errs, refusal.New(BadName, "The host label %s of web service %q is %d characters; DNS allows 63", label, s.Name, len(label)).
				At(s.Pos.Line, s.Pos.Column).WithNext("Shorten the service or environment name."))
		}
		if host := HostFor(s.Name, env.Name, env.Placement.Domain); len(host) > 253 {
			errs = append(errs, refusal.New(BadName, "The host %s of web service %q is longer than 253 characters", host, s.Name).
				At(s.Pos.Line, s.Pos.Column))
		}
	}
	var pos manifest.Position
	for _, t := range m.Runtime.Targets {
		if t.Name == env.Placement.Target.Name {
			pos = t.Pos
		}
	}
	cfg, where, err := r.loadKubeconfig()
	if err != nil {
		errs = append(errs, refusal.All(err)...)
	} else if err := checkContext(cfg, where, contextFor(env), pos); err != nil {
		errs = append(errs, refusal.All(err)...)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
