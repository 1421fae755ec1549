package kubernetes

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
)

// HostIPTarget stands for the node's address in a planned attempt: the probe
// learns it from the downward API (status.hostIP) and reports the real one.
const HostIPTarget = "$(HOST_IP)"

// probeTargets is what the probe aims at, learned from the cluster before
// anything is created.
type probeTargets struct {
	gatewayIP   string // the environment's gateway Service
	apiServerIP string // the kubernetes Service in default
	clusterDNS  string // the cluster resolver's Service, "" when there is none
	publicName  string // a public name the catalogue does not cover
	// tenants are other environments' gateway ClusterIPs (at most
	// maxTenantTargets, see pickTenants); none when there is no other
	// environment or the cluster does not let this user list them.
	tenants []string
}

// maxTenantTargets bounds the tenant attempts: a few neighbours show whether
// the services' policies let anything into another environment; more would
// only lengthen every round and the termination message.
const maxTenantTargets = 3

// tenantListLimit bounds the LIST that finds them (one request, one small
// Service per environment), so that a cluster with many environments costs
// no more than a page.
const tenantListLimit = 50

// pickTenants chooses the tenant targets from the gateway Services of other
// environments: the runtime's own gateway Service (by name and labels) in a
// namespace of the runtime's form other than own, with a literal ClusterIP;
// at most maxTenantTargets of them, one per namespace, in namespace order so
// that the plan does not change from one create to the next for no reason.
func pickTenants(svcs []corev1.Service, own string) []string {
	svcs = slices.Clone(svcs)
	slices.SortFunc(svcs, func(a, b corev1.Service) int { return strings.Compare(a.Namespace, b.Namespace) })
	var out []string
	seen := map[string]bool{}
	for _, s := range svcs {
		if len(out) == maxTenantTargets {
			break
		}
		// Every environment's namespace starts with af- (NamespaceFor).
		if s.Namespace == own || seen[s.Namespace] || !strings.HasPrefix(s.Namespace, "af-") ||
			s.Name != GatewayName || s.Labels[LabelManagedBy] != ManagedBy || s.Labels[LabelRole] != RoleGateway {
			continue
		}
		ip, err := netip.ParseAddr(s.Spec.ClusterIP) // "None" and "" do not parse
		if err != nil || ip.IsUnspecified() {
			continue
		}
		seen[s.Namespace] = true
		out = append(out, ip.String())
	}
	return out
}

// plannedAttempt is one attempt of the probe script: what it reports
// (category, method, target) and how the shell makes it.
type plannedAttempt struct {
	probe.Attempt
	fn   string // shell function
	args []string
}

// probePlan lists the attempts, escape attempts first, then the positive
// controls. Every escape attempt aims at a literal IP, so that a DNS failure
// is never mistaken for a blocked connection.
func (o Options) probePlan(t probeTargets) []plannedAttempt {
	var plan []plannedAttempt
	add := func(cat probe.Category, method, target, fn string, args ...string) {
		plan = append(plan, plannedAttempt{Attempt: probe.Attempt{Category: cat, Method: method, Target: target}, fn: fn, args: args})
	}
	hostPort := netipJoin
	for _, ip := range o.ProbePublicIPs {
		add(probe.Public, "tcp", hostPort(ip, 443), "try_tcp", ip, "443")
		add(probe.Public, "tcp", hostPort(ip, 80), "try_tcp", ip, "80")
	}
	for _, ip := range o.ProbeResolvers {
		add(probe.Resolver, "udp-dns", hostPort(ip, 53), "try_dns", ip)
		add(probe.Resolver, "tcp-dns", hostPort(ip, 53), "try_tcp", ip, "53")
	}
	add(probe.Metadata, "tcp", "169.254.169.254:80", "try_tcp", "169.254.169.254", "80")
	add(probe.ControlPlane, "tcp", hostPort(t.apiServerIP, 443), "try_tcp", t.apiServerIP, "443")
	if t.clusterDNS != "" {
		add(probe.Resolver, "udp-dns", hostPort(t.clusterDNS, 53), "try_dns", t.clusterDNS)
		add(probe.Resolver, "tcp-dns", hostPort(t.clusterDNS, 53), "try_tcp", t.clusterDNS, "53")
		add(probe.PublicName, "dns-lookup", t.publicName+"@"+t.clusterDNS, "try_lookup", t.publicName, t.clusterDNS)
	}
	// Through the pod's own resolver, which is the gateway: a name outside
	// the catalogue must not resolve.
	add(probe.PublicName, "dns-lookup", t.publicName, "try_lookup", t.publicName, "")
	add(probe.Node, "tcp", HostIPTarget+":10250", "try_tcp", `$HOST_IP`, "10250")
	// Other tenants: another environment's gateway, by ClusterIP, on its
	// proxy port, which answers any pod its own policies let in. With no
	// other environment on the cluster there is nothing to aim at and no
	// tenant attempt is made: the result then simply has no tenant line,
	// never a "blocked" one for an attempt that did not happen.
	for _, ip := range t.tenants {
		add(probe.Tenant, "tcp", hostPort(ip, ProxyPort), "try_tcp", ip, strconv.Itoa(ProxyPort))
	}
	// The environment's own canary: it accepts whenever it is reachable, so
	// even the only environment on a cluster has a target that tells a
	// policy in force from one that is merely accepted.
	add(probe.Canary, "tcp", hostPort(t.gatewayIP, CanaryPort), "try_tcp", t.gatewayIP, strconv.Itoa(CanaryPort))
	for _, hp := range o.ProbeCanaries {
		ap := netip.MustParseAddrPort(hp) // validated by New
		add(probe.Tenant, "tcp", ap.String(), "try_tcp", ap.Addr().String(), strconv.Itoa(int(ap.Port())))
	}
	// Positive controls: the gateway answers its own name over the proxy and
	// over DNS. Without them a probe with no network at all would pass.
	add(probe.Control, "http", hostPort(t.gatewayIP, ProxyPort), "ctl_http", hostPort(t.gatewayIP, ProxyPort))
	add(probe.Control, "dns-lookup", egress.ControlHost+"@"+t.gatewayIP, "ctl_dns", t.gatewayIP)
	return plan
}

// publicNameFor picks a public name the catalogue does not answer, so that a
// resolution of it can only come from outside.
func publicNameFor(cfg egress.Config) string {
	g, err := egress.New(cfg)
	if err != nil {
		return "example.com"
	}
	defer g.Close()
	for _, n := range []string{"example.com", "example.net", "example.org", "iana.org"} {
		if !g.Lookup(n).Found {
			return n
		}
	}
	return "antifailure-probe.example"
}

// probeScriptHead holds the shell functions. They judge as package probe
// documents (Outcome): a connection that completes, or any DNS answer from a
// resolver other than the gateway, is "escaped"; a refusal, a timeout or no
// answer is "blocked"; an exit status the script does not expect (a missing
// tool) is "inconclusive". Every line is written to the log; at the end the
// worst result per attempt goes to the termination message (well under its
// 4096 bytes).
const probeScriptHead = `set -u
R=${AF_PROBE_DIR:-/tmp/afprobe}; mkdir -p "$R"
W=$AF_PROBE_WINDOW; I=$AF_PROBE_INTERVAL; T=$AF_PROBE_TIMEOUT
HOST_IP=${HOST_IP:-0.0.0.0}
cs() { read -r u _ </proc/uptime; echo "${u%.*}${u#*.}"; }
clean() { printf '%s' "$1" | tr '\n\r\t' '   ' | tr -cd 'A-Za-z0-9 ._:;,/()=@+-' | cut -c1-48; }
emit() { # id category method target outcome detail start
  l="AFPROBE {\"category\":\"$2\",\"method\":\"$3\",\"target\":\"$4\",\"outcome\":\"$5\",\"detail\":\"r$n $(clean "$6")\",\"elapsed_ns\":$(( ($(cs) - $7) * 10000000 ))}"
  echo "$l"; echo "$l" >>"$R/$1"
}
try_tcp() { # id category method target host port; nc without -z (not every busybox has it)
  t=$(cs); timeout "$((T+1))" nc -w "$T" "$5" "$6" </dev/null >/dev/null 2>"$R/e$1"; rc=$?; o=$(cat "$R/e$1")
  case $rc in 0) emit "$1" "$2" "$3" "$4" escaped "connected" "$t" ;;
    1) emit "$1" "$2" "$3" "$4" blocked "${o:-no connection}" "$t" ;;
    124|143) emit "$1" "$2" "$3" "$4" escaped "connected, held open" "$t" ;;
    *) emit "$1" "$2" "$3" "$4" inconclusive "exit $rc ${o}" "$t" ;; esac
}
try_dns() { # id category method target server: any answer means the resolver was reached
  t=$(cs); o=$(timeout "$T" nslookup "$AF_PROBE_NAME" "$5" 2>&1); rc=$?
  case $rc in 126|127) emit "$1" "$2" "$3" "$4" inconclusive "exit $rc ${o}" "$t"; return ;; esac
  # rcodes in capitals only: "Connection refused" (an ICMP reject) is a block
  if [ $rc -eq 0 ] || printf '%s' "$o" | grep -qE "can't find|NXDOMAIN|SERVFAIL|REFUSED|NOTIMP"; then
    emit "$1" "$2" "$3" "$4" escaped "answered" "$t"
  else emit "$1" "$2" "$3" "$4" blocked "${o:-no answer}" "$t"; fi
}
try_lookup() { # id category method target name [server]: resolving the name at all is out
  t=$(cs); if [ -n "$6" ]; then o=$(timeout "$T" nslookup "$5" "$6" 2>&1); rc=$?; else o=$(timeout "$T" nslookup "$5" 2>&1); rc=$?; fi
  case $rc in 0) emit "$1" "$2" "$3" "$4" escaped "resolved" "$t" ;;
    126|127) emit "$1" "$2" "$3" "$4" inconclusive "exit $rc ${o}" "$t" ;;
    *) emit "$1" "$2" "$3" "$4" blocked "$(printf '%s' "$o" | grep -m1 -iE "can't find|timed out|unreachable|refused" || echo "no answer")" "$t" ;; esac
}
ctl_http() { # id category method target proxy(host:port): the gateway answers its own name
  t=$(cs); o=$(http_proxy="http://$5" timeout "$T" wget -q -Y on -O /dev/null "http://@CONTROLHOST@/" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then emit "$1" "$2" "$3" "$4" reached "gateway answered" "$t"; else emit "$1" "$2" "$3" "$4" failed "exit $rc ${o}" "$t"; fi
}
ctl_dns() { # id category method target gateway
  t=$(cs); o=$(timeout "$T" nslookup "@CONTROLHOST@" "$5" 2>&1); rc=$?
  if [ $rc -eq 0 ]; then emit "$1" "$2" "$3" "$4" reached "gateway answered" "$t"; else emit "$1" "$2" "$3" "$4" failed "exit $rc ${o}" "$t"; fi
}
for c in nc nslookup wget timeout grep tr cut cat; do
  command -v "$c" >/dev/null 2>&1 || { echo "AFPROBE-ERROR the probe image lacks $c"; exit 2; }
done
# Wait, as every service pod's init container does, until this pod's rules
# are in force (the gateway's proxy answers and its canary, which admits any
# source, does not), at most one window: the rounds then measure what a
# service's application can reach. A canary that never stops answering is
# then reported by the rounds as an escape, a proxy that never answers as a
# failed control.
s0=$(cs); n=0
until nc -w "$T" "$AF_PROBE_CANARY" @PROXYPORT@ </dev/null >/dev/null 2>&1 && ! nc -w "$T" "$AF_PROBE_CANARY" @CANARYPORT@ </dev/null >/dev/null 2>&1; do
  [ $(( ($(cs) - s0) / 100 )) -ge "$W" ] && break
  sleep 0.2
done
echo "AFPROBE-SETTLED after $(( ($(cs) - s0) * 10 ))ms"
s0=$(cs)
while :; do
  n=$((n+1))
`

const probeScriptTail = `  wait
  [ $(( ($(cs) - s0) / 100 )) -ge "$W" ] && break
  sleep "$I"
done
echo "AFPROBE-DONE rounds=$n seconds=$(( ($(cs) - s0) / 100 ))"
for f in "$R"/a*; do
  l=$(grep -m1 -e '"outcome":"escaped"' -e '"outcome":"inconclusive"' "$f") || l=$(grep -m1 '"outcome":"reached"' "$f") || l=$(tail -n1 "$f")
  echo "$l"
done >"${AF_PROBE_RESULT_FILE:-/dev/termination-log}" 2>/dev/null || true
`

func shellQuote(s string) string {
	if s == `$HOST_IP` {
		return `"$HOST_IP"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// probeScript renders the plan as a busybox sh script.
func probeScript(plan []plannedAttempt) string {
	var b strings.Builder
	b.WriteString(strings.NewReplacer("@CONTROLHOST@", egress.ControlHost, "@CANARYPORT@", strconv.Itoa(CanaryPort), "@PROXYPORT@", strconv.Itoa(ProxyPort)).Replace(probeScriptHead))
	for i, a := range plan {
		target := shellQuote(a.Target)
		if strings.HasPrefix(a.Target, HostIPTarget) {
			target = `"$HOST_IP` + strings.TrimPrefix(a.Target, HostIPTarget) + `"`
		}
		fmt.Fprintf(&b, "  %s a%02d %s %s %s", a.fn, i, a.Category, a.Method, target)
		for _, arg := range a.args {
			b.WriteString(" " + shellQuote(arg))
		}
		b.WriteString(" &\n")
	}
	b.WriteString(probeScriptTail)
	return b.String()
}

// ProbePlan reads the planned attempts from a probe pod (the kubelet
// stand-in answers them).
func ProbePlan(pod *corev1.Pod) ([]probe.Attempt, error) {
	var plan []probe.Attempt
	if err := json.Unmarshal([]byte(pod.Annotations[AnnotationProbePlan]), &plan); err != nil {
		return nil, fmt.Errorf("probe pod %s/%s: plan annotation: %w", pod.Namespace, pod.Name, err)
	}
	return plan, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%d", int((d+time.Second-1)/time.Second)) }

func (b *builder) probePod(plan []plannedAttempt, publicName string) *corev1.Pod {
	planned := make([]probe.Attempt, len(plan))
	for i, a := range plan {
		planned[i] = a.Attempt
	}
	planJSON, _ := json.Marshal(planned)
	o := b.opts
	// The pod's own deadline: the window, a round's worth of timeouts, and
	// room to start.
	deadline := int64((o.ProbeWindow + o.ProbeInterval + 3*o.ProbeAttemptTimeout + 30*time.Second).Seconds())
	labels := b.labels(LabelRole, RoleService, LabelProbe, "true")
	env := append([]corev1.EnvVar{
		{Name: "AF_PROBE_WINDOW", Value: secs(o.ProbeWindow)},
		{Name: "AF_PROBE_INTERVAL", Value: secs(o.ProbeInterval)},
		{Name: "AF_PROBE_TIMEOUT", Value: secs(o.ProbeAttemptTimeout)},
		{Name: "AF_PROBE_NAME", Value: publicName},
		{Name: "AF_PROBE_CANARY", Value: b.gatewayIP},
		{Name: "HOST_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
	}, b.proxyEnv()...)
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		ActiveDeadlineSeconds:         &deadline,
		TerminationGracePeriodSeconds: ptr(int64(1)),
		AutomountServiceAccountToken:  ptr(false),
		EnableServiceLinks:            ptr(false),
		Containers: []corev1.Container{{
			Name:                     "probe",
			Image:                    o.ProbeImage,
			Command:                  []string{"sh", "-c", probeScript(plan)},
			Env:                      env,
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			SecurityContext:          restricted(65534),
			VolumeMounts:             []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			},
		}},
		Volumes: []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}
	b.dnsToGateway(&spec)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: ProbePodName, Namespace: b.namespace, Labels: labels,
			Annotations: map[string]string{AnnotationProbePlan: string(planJSON)},
		},
		Spec: spec,
	}
}

// summarize keeps one attempt per (category, method, target), the worst seen
// across rounds: an escape (or anything that is not a clean block) wins; for
// a control, reaching the gateway once is enough. Order of first appearance.
func summarize(attempts []probe.Attempt) []probe.Attempt {
	type key struct {
		c probe.Category
		m string
		t string
	}
	idx := map[key]int{}
	var out []probe.Attempt
	for _, a := range attempts {
		k := key{a.Category, a.Method, a.Target}
		i, seen := idx[k]
		if !seen {
			idx[k] = len(out)
			out = append(out, a)
			continue
		}
		cur := out[i]
		switch {
		case a.Category == probe.Control:
			if cur.Outcome != probe.Reached {
				out[i] = a
			}
		case cur.Outcome == probe.Blocked:
			out[i] = a // a later escape replaces a block; a later block changes nothing
		}
	}
	return out
}
