package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// injectedEnv are the variables the runtime sets on every service container;
// Read leaves them out of ServiceState.Env.
var injectedEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy"}

// builder makes the objects of one environment.
type builder struct {
	opts      Options
	env       runtime.Environment
	namespace string
	gatewayIP string // the gateway Service's ClusterIP, once known
}

func (b *builder) app() string { return b.env.Manifest.Name }

func (b *builder) labels(extra ...string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelApp: b.app(), LabelEnv: b.env.Name}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

func (b *builder) meta(name string, extra ...string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: b.namespace, Labels: b.labels(extra...)}
}

func (b *builder) namespaceObject(createID string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        b.namespace,
		Labels:      b.labels(),
		Annotations: map[string]string{AnnotationCreateID: createID, AnnotationManifest: b.env.Source},
	}}
}

func selector(m map[string]string) *metav1.LabelSelector {
	if m == nil {
		return nil
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func tcp(port int) networkingv1.NetworkPolicyPort {
	p := corev1.ProtocolTCP
	v := intstr.FromInt32(int32(port))
	return networkingv1.NetworkPolicyPort{Protocol: &p, Port: &v}
}

func udp(port int) networkingv1.NetworkPolicyPort {
	p := corev1.ProtocolUDP
	v := intstr.FromInt32(int32(port))
	return networkingv1.NetworkPolicyPort{Protocol: &p, Port: &v}
}

// gatewayExcept is every range the gateway may not reach, split by family.
func (b *builder) gatewayExcept() (v4, v6 []string) {
	for _, c := range append(slices.Clone(ExcludedRanges), b.opts.ClusterCIDRs...) {
		p := netip.MustParsePrefix(c).Masked() // validated in New
		s := p.String()
		if p.Addr().Is4() {
			if p.Bits() > 0 && !slices.Contains(v4, s) {
				v4 = append(v4, s)
			}
		} else if p.Bits() > 0 && !slices.Contains(v6, s) {
			v6 = append(v6, s)
		}
	}
	return v4, v6
}

// networkPolicies are the runtime's own policies, in creation order: the
// default deny first, so that nothing in the namespace is ever reachable
// without it.
func (b *builder) networkPolicies() []*networkingv1.NetworkPolicy {
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	services := metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: RoleService}}
	gateway := metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: RoleGateway}}
	gatewayPorts := []networkingv1.NetworkPolicyPort{tcp(ProxyPort), udp(GatewayDNSPort), tcp(GatewayDNSPort)}
	v4, v6 := b.gatewayExcept()
	gatewayEgress := []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: v4}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: v6}},
		},
	}}
	if len(b.opts.ClusterDNSSelector) > 0 {
		// The gateway resolves allow/sandbox hosts through the cluster
		// resolver; services never reach it.
		gatewayEgress = append(gatewayEgress, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: selector(map[string]string{"kubernetes.io/metadata.name": b.opts.ClusterDNSNamespace}),
				PodSelector:       selector(b.opts.ClusterDNSSelector),
			}},
			Ports: []networkingv1.NetworkPolicyPort{udp(53), tcp(53)},
		})
	}
	out := []*networkingv1.NetworkPolicy{
		{
			ObjectMeta: b.meta("af-default-deny"),
			Spec:       networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{}, PolicyTypes: both},
		},
		{
			ObjectMeta: b.meta("af-services-to-gateway"),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: services,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &gateway}},
					Ports: gatewayPorts,
				}},
			},
		},
		{
			ObjectMeta: b.meta("af-gateway-from-services"),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: gateway,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{
					{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &services}}, Ports: gatewayPorts},
					// The canary from any source, so that only the connecting
					// pod's own egress policy can refuse it: a refused canary
					// then proves that pod's rules are in force. Admitting
					// only the services would not do: a new pod the enforcer
					// has not programmed yet is not yet one of the services
					// to the gateway's ingress either, and would see the
					// canary refused while it could reach other tenants. The
					// canary only accepts and answers a fixed line.
					{Ports: []networkingv1.NetworkPolicyPort{tcp(CanaryPort)}},
				},
			},
		},
		{
			ObjectMeta: b.meta("af-gateway-egress"),
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: gateway,
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress:      gatewayEgress,
			},
		},
	}
	for _, s := range b.env.Manifest.Services {
		if s.Web {
			out = append(out, b.webPolicy(s))
		}
	}
	return out
}

// webPolicy lets the ingress controller reach one web service on its port.
func (b *builder) webPolicy(s manifest.Service) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		ObjectMeta: b.meta("af-web-"+s.Name, LabelSvc, s.Name),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: RoleService, LabelSvc: s.Name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: selector(b.opts.IngressNamespaceSelector),
					PodSelector:       selector(b.opts.IngressPodSelector),
				}},
				Ports: []networkingv1.NetworkPolicyPort{tcp(s.Port)},
			}},
		},
	}
}

// egressConfig is the gateway's configuration: the manifest's catalogue,
// answering locally answered names with the gateway's ClusterIP and
// resolving forwarded names through the cluster resolver when there is one.
func (b *builder) egressConfig(clusterDNS string) egress.Config {
	cfg := egress.FromManifest(b.env.Manifest)
	cfg.Environment = b.namespace
	if b.gatewayIP != "" {
		cfg.AnswerAddrs = []string{b.gatewayIP}
	}
	if clusterDNS != "" {
		cfg.UpstreamDNS = netipJoin(clusterDNS, 53)
	}
	return cfg
}

func netipJoin(ip string, port int) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip + ":" + strconv.Itoa(port)
	}
	return netip.AddrPortFrom(a, uint16(port)).String()
}

func (b *builder) configMap(cfg egress.Config) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: b.meta(GatewayConfigMap, LabelRole, RoleGateway),
		Data:       map[string]string{"config.json": string(cfg.JSON())},
	}
}

func configHash(cfg egress.Config) string {
	h := sha256.Sum256(cfg.JSON())
	return hex.EncodeToString(h[:])
}

func (b *builder) gatewayService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: b.meta(GatewayName, LabelRole, RoleGateway),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{LabelManagedBy: ManagedBy, LabelRole: RoleGateway},
			Ports: []corev1.ServicePort{
				{Name: "proxy", Protocol: corev1.ProtocolTCP, Port: ProxyPort, TargetPort: intstr.FromInt32(ProxyPort)},
				// A service that resolved a locally answered name to the
				// gateway and calls it directly, without the proxy.
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(ProxyPort)},
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: ServiceDNSPort, TargetPort: intstr.FromInt32(GatewayDNSPort)},
				{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: ServiceDNSPort, TargetPort: intstr.FromInt32(GatewayDNSPort)},
				// No policy admits services here: see CanaryPort.
				{Name: "canary", Protocol: corev1.ProtocolTCP, Port: CanaryPort, TargetPort: intstr.FromInt32(CanaryPort)},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// grace is the pods' terminationGracePeriodSeconds (Options.TerminationGrace).
func (b *builder) grace() *int64 { return ptr(int64(b.opts.TerminationGrace.Seconds())) }

// restricted is the container security context of the runtime's own
// containers (gateway, probe): non-root, no capabilities, read-only root.
func restricted(uid int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr(true),
		RunAsUser:                ptr(uid),
		AllowPrivilegeEscalation: ptr(false),
		ReadOnlyRootFilesystem:   ptr(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// gatewayDeployment is the egress gateway, reading the catalogue in cm. The
// gateway reads it only when it starts, so the pod template carries both the
// catalogue's hash and the ConfigMap's resourceVersion as written: a
// catalogue restored after a change by hand (same hash, new version) rolls
// the gateway too, and a pod that restarted while the ConfigMap was widened
// never keeps serving the widened catalogue.
func (b *builder) gatewayDeployment(cfg egress.Config, cm *corev1.ConfigMap) *appsv1.Deployment {
	sel := map[string]string{LabelManagedBy: ManagedBy, LabelRole: RoleGateway}
	podLabels := b.labels(LabelRole, RoleGateway)
	return &appsv1.Deployment{
		ObjectMeta: b.meta(GatewayName, LabelRole, RoleGateway),
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr(int32(1)),
			Selector:                &metav1.LabelSelector{MatchLabels: sel},
			ProgressDeadlineSeconds: ptr(int32(b.opts.ProgressDeadline.Seconds())),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: map[string]string{AnnotationConfigHash: configHash(cfg), AnnotationConfigVersion: cm.ResourceVersion}},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken:  ptr(false),
					EnableServiceLinks:            ptr(false),
					TerminationGracePeriodSeconds: b.grace(),
					Containers: []corev1.Container{{
						Name:    "gateway",
						Image:   b.opts.GatewayImage,
						Command: b.opts.GatewayCommand,
						Args:    b.opts.GatewayArgs,
						Ports: []corev1.ContainerPort{
							{Name: "proxy", ContainerPort: ProxyPort, Protocol: corev1.ProtocolTCP},
							{Name: "dns", ContainerPort: GatewayDNSPort, Protocol: corev1.ProtocolUDP},
							{Name: "dns-tcp", ContainerPort: GatewayDNSPort, Protocol: corev1.ProtocolTCP},
							{Name: "canary", ContainerPort: CanaryPort, Protocol: corev1.ProtocolTCP},
						},
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(ProxyPort)}},
							PeriodSeconds: 2,
						},
						VolumeMounts:    []corev1.VolumeMount{{Name: "config", MountPath: "/etc/antifailure/egress", ReadOnly: true}},
						SecurityContext: restricted(65532),
					}},
					Volumes: []corev1.Volume{{
						Name: "config",
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: GatewayConfigMap},
						}},
					}},
				},
			},
		},
	}
}

// dnsToGateway makes the gateway the pod's only resolver: a service has no
// public DNS.
func (b *builder) dnsToGateway(spec *corev1.PodSpec) {
	spec.DNSPolicy = corev1.DNSNone
	spec.DNSConfig = &corev1.PodDNSConfig{
		Nameservers: []string{b.gatewayIP},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr("1")}},
	}
}

func (b *builder) proxyEnv() []corev1.EnvVar {
	proxy := "http://" + netipJoin(b.gatewayIP, ProxyPort)
	return []corev1.EnvVar{
		{Name: "HTTP_PROXY", Value: proxy}, {Name: "HTTPS_PROXY", Value: proxy},
		{Name: "http_proxy", Value: proxy}, {Name: "https_proxy", Value: proxy},
		{Name: "NO_PROXY", Value: "localhost,127.0.0.1,::1"}, {Name: "no_proxy", Value: "localhost,127.0.0.1,::1"},
	}
}

func (b *builder) image(s manifest.Service) string {
	if img, ok := b.env.Images[s.Name]; ok && img != "" {
		return img
	}
	return s.Image
}

// serviceSelector is immutable once the Deployment exists.
func (b *builder) serviceSelector(name string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRole: RoleService, LabelSvc: name}
}

func (b *builder) serviceDeployment(s manifest.Service) *appsv1.Deployment {
	podLabels := b.labels(LabelRole, RoleService, LabelSvc, s.Name)
	if s.Web {
		podLabels[LabelWeb] = "true"
	}
	env := make([]corev1.EnvVar, 0, len(s.Env)+len(injectedEnv))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if !slices.Contains(injectedEnv, k) {
			env = append(env, corev1.EnvVar{Name: k, Value: s.Env[k]})
		}
	}
	env = append(env, b.proxyEnv()...)
	c := corev1.Container{
		Name:    s.Name,
		Image:   b.image(s),
		Command: s.Command,
		Env:     env,
	}
	if s.Port > 0 {
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: int32(s.Port), Protocol: corev1.ProtocolTCP}}
		if s.Health != "" {
			c.ReadinessProbe = &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: s.Health, Port: intstr.FromInt32(int32(s.Port))}},
				PeriodSeconds: 5,
			}
		}
	}
	spec := corev1.PodSpec{
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		TerminationGracePeriodSeconds: b.grace(),
		InitContainers:                []corev1.Container{b.waitForPolicy()},
		Containers:                    []corev1.Container{c},
	}
	b.dnsToGateway(&spec)
	return &appsv1.Deployment{
		ObjectMeta: b.meta(s.Name, LabelRole, RoleService, LabelSvc, s.Name),
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr(int32(1)),
			Selector:                &metav1.LabelSelector{MatchLabels: b.serviceSelector(s.Name)},
			ProgressDeadlineSeconds: ptr(int32(b.opts.ProgressDeadline.Seconds())),
			Template:                corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: podLabels}, Spec: spec},
		},
	}
}

// waitForPolicy is every service pod's init container: the application
// starts only once the pod's own policies are in force, seen by packets from
// the pod's network namespace: the gateway's proxy answers and its canary
// does not. A network plugin programs a new pod's rules after the pod
// starts (kube-router v2.1.0 left a new pod's egress open for about 0.8 s on
// the real test node), and an application must not get that window. It
// waits as long as it takes: a pod whose rules never hold never starts
// (the rollout then fails), which is the safe way to fail.
func (b *builder) waitForPolicy() corev1.Container {
	gw := shellQuote(b.gatewayIP)
	script := fmt.Sprintf(`n=0
until nc -w 2 %[1]s %[2]d </dev/null >/dev/null 2>&1 && ! nc -w 2 %[1]s %[3]d </dev/null >/dev/null 2>&1; do
  n=$((n+1)); [ $((n %% 50)) -eq 0 ] && echo "waiting: the gateway's canary %[1]s:%[3]d is still reachable, or its proxy is not"
  sleep 0.2
done
echo "the pod's policies are in force after $n retries"`, gw, ProxyPort, CanaryPort)
	return corev1.Container{
		Name:            "af-wait-for-policy",
		Image:           b.opts.ProbeImage,
		Command:         []string{"sh", "-c", script},
		SecurityContext: restricted(65534),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("8Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
		},
	}
}

func (b *builder) webService(s manifest.Service) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: b.meta(s.Name, LabelRole, RoleService, LabelSvc, s.Name),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: b.serviceSelector(s.Name),
			Ports: []corev1.ServicePort{{
				Name: "http", Protocol: corev1.ProtocolTCP, Port: int32(s.Port), TargetPort: intstr.FromInt32(int32(s.Port)),
			}},
		},
	}
}

func (b *builder) ingress(s manifest.Service) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		ObjectMeta: b.meta(s.Name, LabelRole, RoleService, LabelSvc, s.Name),
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: HostFor(s.Name, b.env.Name, b.env.Placement.Domain),
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/",
						PathType: &prefix,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: s.Name, Port: networkingv1.ServiceBackendPort{Number: int32(s.Port)},
						}},
					}},
				}},
			}},
		},
	}
	if b.opts.IngressClassName != "" {
		ing.Spec.IngressClassName = ptr(b.opts.IngressClassName)
	}
	return ing
}

// serviceState reads a service back from its Deployment.
func serviceState(d *appsv1.Deployment) runtime.ServiceState {
	st := runtime.ServiceState{Env: map[string]string{}}
	if d.Spec.Replicas != nil {
		st.Replicas = int(*d.Spec.Replicas)
	} else {
		st.Replicas = 1
	}
	if len(d.Spec.Template.Spec.Containers) > 0 {
		c := d.Spec.Template.Spec.Containers[0]
		st.Image = c.Image
		st.Command = c.Command
		for _, e := range c.Env {
			if !slices.Contains(injectedEnv, e.Name) && e.ValueFrom == nil {
				st.Env[e.Name] = e.Value
			}
		}
	}
	st.Running = st.Replicas > 0 && d.DeletionTimestamp == nil
	return st
}

func fmtDeploymentName(ns, name string) string { return fmt.Sprintf("Deployment %s/%s", ns, name) }
