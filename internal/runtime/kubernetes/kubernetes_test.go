package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
)

func code(err error) refusal.Code {
	var r *refusal.Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	var l refusal.List
	if errors.As(err, &l) && len(l) > 0 {
		return l[0].Code
	}
	return ""
}

// TestCheck_MissingContext_ListsContexts: a target context the kubeconfig
// lacks is refused at plan, listing the contexts there are, with no request
// to any cluster.
func TestCheck_MissingContext_ListsContexts(t *testing.T) {
	var cnt counter
	r := newRuntime(t, cnt.wrap, kube.Options{})
	env := environment(t, strings.Replace(shopManifest(2), "kubeconfig_context: eu-prod", "kubeconfig_context: ap-prod", 1), "pr-1")
	err := r.Check(env)
	if code(err) != kube.ContextMissing {
		t.Fatalf("Check = %v, want %s", err, kube.ContextMissing)
	}
	msg := err.Error()
	for _, want := range []string{`"ap-prod"`, "eu-prod, eu-prod-viewer, us-prod", "never uses another context", "Nothing was created."} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal lacks %q:\n%s", want, msg)
		}
	}
	var ref *refusal.Refusal
	errors.As(err, &ref)
	if ref.Line == 0 {
		t.Error("the refusal does not point at the target in the manifest")
	}
	if _, err := r.Create(context.Background(), env); code(err) != kube.ContextMissing {
		t.Errorf("Create = %v, want %s", err, kube.ContextMissing)
	}
	if reqs := cnt.reset(); len(reqs) != 0 {
		t.Errorf("Check and a refused Create sent %d requests: %v", len(reqs), reqs)
	}
}

// TestCheck_NoKubeconfig: no path and no content is a refusal, never a
// fallback to ~/.kube/config, in-cluster configuration or the process's own
// KUBECONFIG (the provider resolves that through its configuration).
func TestCheck_NoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", te.Kubeconfig)
	r, err := kube.New(kube.Kubeconfig{}, nil, kube.Options{GatewayImage: testGatewayImage})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Check(environment(t, shopManifest(2), "pr-1"))
	if code(err) != kube.NoKubeconfig || !strings.Contains(err.Error(), "does not fall back") {
		t.Fatalf("Check = %v, want %s", err, kube.NoKubeconfig)
	}
	// Raw content works on its own (Terraform Cloud: no files).
	raw, _ := readFile(te.Kubeconfig)
	r, _ = kube.New(kube.Kubeconfig{Content: raw}, nil, kube.Options{GatewayImage: testGatewayImage})
	if err := r.Check(environment(t, shopManifest(2), "pr-1")); err != nil {
		t.Fatalf("Check with raw kubeconfig content: %v", err)
	}
	// A KUBECONFIG-style list of files is merged, as kubectl does.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, _ = kube.New(kube.Kubeconfig{Path: other + string(os.PathListSeparator) + te.Kubeconfig}, nil, kube.Options{GatewayImage: testGatewayImage})
	if err := r.Check(environment(t, shopManifest(2), "pr-1")); err != nil {
		t.Fatalf("Check with a list of kubeconfig files: %v", err)
	}
}

func TestCheck_Names(t *testing.T) {
	r := newRuntime(t, nil, kube.Options{})
	long := strings.Repeat("x", 60)
	// af-shop-<60 x> would be 68 characters: the namespace is shortened and
	// hashed (NamespaceFor), but the web service's host label web-<env>
	// cannot be, and is refused.
	if err := r.Check(environment(t, shopManifest(2), long)); code(err) != kube.BadName || !strings.Contains(err.Error(), "host label") || strings.Contains(err.Error(), "namespace") {
		t.Errorf("a 64-character host label: %v", err)
	}
	y := strings.Replace(shopManifest(2), "  worker:", "  af-worker:", 1)
	if err := r.Check(environment(t, y, "pr-1")); code(err) != kube.BadName {
		t.Errorf("a service named af-*: %v", err)
	}
}

// TestCreate_KubeletStandIn_TwoClusters_PlacedOnly is the whole bring-up of
// a two-service environment, with the kubelet stand-in finishing the probe
// and readying pods: everything lands in the placed cluster (eu-prod) and
// nothing in the other (us-prod); the probe comes before any application
// Deployment and is gone after; then refresh and delete, with their request
// counts.
func TestCreate_KubeletStandIn_TwoClusters_PlacedOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var cnt counter
	r := newRuntime(t, cnt.wrap, kube.Options{IngressClassName: "nginx", ClusterCIDRs: []string{"10.0.0.0/24", "10.244.0.0/16"}})
	env := environment(t, shopManifest(2), "two")
	ns := "af-shop-two"
	eu, us := te.Client(t, testenv.EU), te.Client(t, testenv.US)

	if got := r.Planned(env); got.Ref.ID != "eu-prod/shop/two" || got.Namespace != ns || got.URLs["web"] != "http://web-two.eu.preview.example.com" {
		t.Fatalf("Planned = %+v", got)
	}
	start := time.Now()
	st, err := r.Create(ctx, env)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	createReqs := cnt.reset()
	t.Logf("create: %d requests in %s", len(createReqs), time.Since(start).Round(time.Millisecond))
	for i, q := range createReqs {
		t.Logf("  %2d %s", i+1, q)
	}

	// The returned state.
	if st.Ref.ID != "eu-prod/shop/two" || st.Namespace != ns {
		t.Errorf("state ref %q namespace %q", st.Ref.ID, st.Namespace)
	}
	if got := st.URLs["web"]; got != "http://web-two.eu.preview.example.com" {
		t.Errorf("URL %q", got)
	}
	if len(st.URLs) != 1 {
		t.Errorf("URLs %v: only web is a web service", st.URLs)
	}
	for _, s := range []string{"web", "worker"} {
		ss, ok := st.Services[s]
		if !ok || !ss.Running || ss.Replicas != 1 || ss.Image != "ghcr.io/acme/shop:1.4.2" {
			t.Errorf("service %s: %+v", s, ss)
		}
	}
	if st.Services["web"].Env["LOG_LEVEL"] != "debug" || len(st.Services["web"].Env) != 1 {
		t.Errorf("web env %v: want only the manifest's, not the injected proxy variables", st.Services["web"].Env)
	}
	if c := st.Containment; c.Verdict != probe.Contained || len(c.Attempts) < 10 || c.Duration <= 0 {
		t.Errorf("containment %s, %d attempts, %s", c.Verdict, len(c.Attempts), c.Duration)
	}
	// Alone on the cluster: no other environment, so no tenant attempt.
	if got := tenantAttempts(st.Containment.Attempts); len(got) != 0 {
		t.Errorf("tenant attempts with no other environment on the cluster: %v", got)
	}

	// Order on the wire: policies and gateway, then the probe, then the
	// application; the probe deleted before any application Deployment.
	probeAt := indexOf(createReqs, func(q string) bool { return q == "POST /api/v1/namespaces/"+ns+"/pods" })
	probeDel := indexOf(createReqs, func(q string) bool { return q == "DELETE /api/v1/namespaces/"+ns+"/pods/"+kube.ProbePodName })
	lastPolicy, gateway, firstApp := -1, -1, -1
	deploys := 0
	for i, q := range createReqs {
		switch {
		case q == "POST /apis/networking.k8s.io/v1/namespaces/"+ns+"/networkpolicies":
			lastPolicy = i
		case q == "POST /apis/apps/v1/namespaces/"+ns+"/deployments":
			deploys++
			if deploys == 1 {
				gateway = i
			} else if firstApp < 0 {
				firstApp = i
			}
		}
	}
	if !(createReqs[0] == "GET /api/v1/namespaces/default/services/kubernetes" && lastPolicy < gateway && gateway < probeAt && probeAt < probeDel && probeDel < firstApp) {
		t.Errorf("order: policies ≤%d, gateway %d, probe %d, probe deleted %d, first application Deployment %d", lastPolicy, gateway, probeAt, probeDel, firstApp)
	}
	if len(createReqs) > 25 {
		t.Errorf("create took %d requests; expected about 22 for two services", len(createReqs))
	}

	// What is on the placed cluster.
	nsObj, err := eu.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil || nsObj.Labels[kube.LabelManagedBy] != kube.ManagedBy || nsObj.Labels[kube.LabelApp] != "shop" || nsObj.Labels[kube.LabelEnv] != "two" {
		t.Fatalf("namespace: %v %v", err, nsObj.Labels)
	}
	nps, _ := eu.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	var npNames []string
	for _, np := range nps.Items {
		npNames = append(npNames, np.Name)
		if np.Name == "af-default-deny" && (len(np.Spec.PolicyTypes) != 2 || len(np.Spec.PodSelector.MatchLabels) != 0 || len(np.Spec.Ingress)+len(np.Spec.Egress) != 0) {
			t.Errorf("default deny: %+v", np.Spec)
		}
		if np.Name == "af-gateway-egress" {
			except := np.Spec.Egress[0].To[0].IPBlock.Except
			for _, want := range []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "169.254.0.0/16", "10.244.0.0/16"} {
				if !slices.Contains(except, want) {
					t.Errorf("gateway egress does not exclude %s: %v", want, except)
				}
			}
		}
		if np.Name == "af-web-web" {
			from := np.Spec.Ingress[0].From[0]
			if from.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "ingress-nginx" || np.Spec.Ingress[0].Ports[0].Port.IntValue() != 8080 {
				t.Errorf("web ingress policy: %+v", np.Spec.Ingress)
			}
		}
	}
	slices.Sort(npNames)
	if want := []string{"af-default-deny", "af-gateway-egress", "af-gateway-from-services", "af-services-to-gateway", "af-web-web"}; !slices.Equal(npNames, want) {
		t.Errorf("NetworkPolicies %v, want %v", npNames, want)
	}
	gw, err := eu.CoreV1().Services(ns).Get(ctx, kube.GatewayName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web, err := eu.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := web.Spec.Template.Spec
	envOf := map[string]string{}
	for _, e := range pod.Containers[0].Env {
		envOf[e.Name] = e.Value
	}
	if envOf["HTTP_PROXY"] != "http://"+gw.Spec.ClusterIP+":3128" || envOf["HTTPS_PROXY"] != envOf["HTTP_PROXY"] {
		t.Errorf("proxy env %v, gateway %s", envOf, gw.Spec.ClusterIP)
	}
	if pod.DNSPolicy != corev1.DNSNone || pod.DNSConfig == nil || !slices.Equal(pod.DNSConfig.Nameservers, []string{gw.Spec.ClusterIP}) {
		t.Errorf("dns: policy %s config %+v", pod.DNSPolicy, pod.DNSConfig)
	}
	if !slices.Equal(pod.Containers[0].Command, []string{"./shop", "serve"}) || pod.Containers[0].ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("container: %+v", pod.Containers[0])
	}
	ing, err := eu.NetworkingV1().Ingresses(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil || ing.Spec.Rules[0].Host != "web-two.eu.preview.example.com" || *ing.Spec.IngressClassName != "nginx" {
		t.Errorf("ingress: %v %+v", err, ing.Spec)
	}
	if _, err := eu.CoreV1().Services(ns).Get(ctx, "worker", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("worker is not a web service, yet: %v", err)
	}
	cm, err := eu.CoreV1().ConfigMaps(ns).Get(ctx, kube.GatewayConfigMap, metav1.GetOptions{})
	if err != nil || !strings.Contains(cm.Data["config.json"], "api.stripe.com") || !strings.Contains(cm.Data["config.json"], gw.Spec.ClusterIP) {
		t.Errorf("egress config: %v %v", err, cm.Data)
	}
	if _, err := eu.CoreV1().Pods(ns).Get(ctx, kube.ProbePodName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the probe pod is still there: %v", err)
	}
	// Nothing on the other cluster.
	if left := leftovers(t, us, "af-shop-"); len(left) != 0 {
		t.Errorf("us-prod holds %v", left)
	}

	// Refresh: four requests.
	got, err := r.Read(ctx, st.Ref)
	if err != nil {
		t.Fatal(err)
	}
	readReqs := cnt.reset()
	t.Logf("refresh: %d requests: %v", len(readReqs), readReqs)
	if len(readReqs) > 6 {
		t.Errorf("refresh took %d requests, the target is ≤ 6", len(readReqs))
	}
	if got.URLs["web"] != st.URLs["web"] || got.Containment.Verdict != probe.Contained || len(got.Services) != 2 || !got.Services["worker"].Running {
		t.Errorf("Read = %+v", got)
	}

	// Delete: one namespace delete and a watch (plus the ownership GET).
	start = time.Now()
	if err := r.Delete(ctx, st.Ref); err != nil {
		t.Fatal(err)
	}
	delReqs := cnt.reset()
	t.Logf("delete: %d requests in %s: %v", len(delReqs), time.Since(start).Round(time.Millisecond), delReqs)
	if len(delReqs) > 10 || count(delReqs, "DELETE ") != 4 {
		t.Errorf("delete took %d requests", len(delReqs))
	}
	if left := leftovers(t, eu, ns); len(left) != 0 {
		t.Errorf("left after delete: %v", left)
	}
	if _, err := r.Read(ctx, st.Ref); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Read after delete = %v, want ErrNotFound", err)
	}
	if err := r.Delete(ctx, st.Ref); err != nil {
		t.Errorf("a second Delete = %v, want nil", err)
	}
}

// TestCreate_KubeletStandIn_ProbeVerdicts: an escape refuses with
// AF-RUN-043 listing every attempt, a failed control with AF-RUN-044, a
// silent probe with AF-RUN-045, a probe that never runs with AF-K8S-006;
// each removes everything and starts nothing of the application.
func TestCreate_KubeletStandIn_ProbeVerdicts(t *testing.T) {
	cases := []struct {
		result standin.ProbeResult
		code   refusal.Code
		says   []string
	}{
		{standin.Escaped, probe.Escaped, []string{"1 of 16 attempts escaped", "1.1.1.1:443", "escaped", "169.254.169.254:80", "10.0.0.1:443", "udp-dns", standin.HostIP + ":10250", "blocked"}},
		{standin.ControlFailed, probe.ControlFailed, []string{"could not reach the egress gateway", "failed"}},
		{standin.Silent, probe.NoAttempts, []string{"made no escape attempts", "AFPROBE line", "phase Succeeded"}},
		{standin.Pending, kube.ProbeDidNotRun, []string{"did not finish within", "phase Pending", "not scheduled"}},
	}
	eu := te.Client(t, testenv.EU)
	for i, tc := range cases {
		t.Run(string(tc.result), func(t *testing.T) {
			var cnt counter
			r := newRuntime(t, cnt.wrap, kube.Options{ProbeTimeout: 3 * time.Second})
			name := fmt.Sprintf("verdict-%d", i)
			var err error
			withProbe(tc.result, func() {
				_, err = r.Create(context.Background(), environment(t, shopManifest(2), name))
			})
			if code(err) != tc.code {
				t.Fatalf("Create = %v, want %s", err, tc.code)
			}
			msg := err.Error()
			for _, want := range append(tc.says, "No application process or image was started.", "Created and removed again: namespace af-shop-"+name+" on context eu-prod", "Nothing is left.") {
				if !strings.Contains(msg, want) {
					t.Errorf("refusal lacks %q:\n%s", want, msg)
				}
			}
			reqs := cnt.reset()
			if n := count(reqs, "POST /apis/apps/v1/namespaces/af-shop-"+name+"/deployments"); n != 1 {
				t.Errorf("%d Deployments were created; only the gateway may be", n)
			}
			if left := leftovers(t, eu, "af-shop-"+name); len(left) != 0 {
				t.Errorf("left: %v", left)
			}
			if tc.result == standin.Escaped {
				t.Logf("the refusal:\n%s", msg)
			}
		})
	}
}

// TestCreate_KubeletStandIn_Tenants: with another environment on the
// cluster, the probe also aims at that environment's egress gateway by its
// ClusterIP (category tenant), found with one LIST before anything is
// created; a tenant attempt that gets out refuses the create with AF-RUN-043,
// removes everything of it and leaves the other environment as it was; a
// user RBAC does not let list Services across namespaces gets no tenant
// attempt, and no failure either.
func TestCreate_KubeletStandIn_Tenants(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	eu := te.Client(t, testenv.EU)
	r := newRuntime(t, nil, kube.Options{})
	other, err := r.Create(ctx, environment(t, shopManifest(2), "tenant-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Delete(context.Background(), other.Ref); err != nil {
			t.Error(err)
		}
	}()
	// Alone on the cluster, the first environment made no tenant attempt.
	if got := tenantAttempts(other.Containment.Attempts); len(got) != 0 {
		t.Errorf("tenant attempts with no other environment: %v", got)
	}
	gw, err := eu.CoreV1().Services(other.Namespace).Get(ctx, kube.GatewayName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(gw.Spec.ClusterIP, strconv.Itoa(kube.ProxyPort))
	const list = "GET /api/v1/services" // across namespaces

	t.Run("planned", func(t *testing.T) {
		var cnt counter
		r := newRuntime(t, cnt.wrap, kube.Options{})
		st, err := r.Create(ctx, environment(t, shopManifest(2), "tenant-b"))
		if err != nil {
			t.Fatal(err)
		}
		reqs := cnt.reset()
		defer func() {
			if err := r.Delete(context.Background(), st.Ref); err != nil {
				t.Error(err)
			}
		}()
		t.Logf("create with another environment present: %d requests", len(reqs))
		got := tenantAttempts(st.Containment.Attempts)
		if len(got) != 1 || got[0].Method != "tcp" || got[0].Target != target || got[0].Outcome != probe.Blocked {
			t.Errorf("tenant attempts %v, want one tcp attempt at %s (the other environment's gateway), blocked", got, target)
		}
		if n := len(st.Containment.Attempts); n != 19 {
			t.Errorf("%d attempts, want 19 (18 and one tenant)", n)
		}
		listAt := indexOf(reqs, func(q string) bool { return q == list })
		nsAt := indexOf(reqs, func(q string) bool { return q == "POST /api/v1/namespaces" })
		if count(reqs, list) != 1 || listAt < 0 || listAt > nsAt {
			t.Errorf("want one LIST of Services across namespaces, before the namespace is created: %v", reqs)
		}
	})

	t.Run("escaped", func(t *testing.T) {
		var cnt counter
		r := newRuntime(t, cnt.wrap, kube.Options{})
		const name = "tenant-c"
		ns := "af-shop-" + name
		var (
			err   error
			pod   *corev1.Pod
			ferr  error
			fdone = make(chan struct{})
		)
		// The shared stand-ins leave probe pods pending; this one reports
		// the tenant attempt as out and everything else as contained.
		withProbe(standin.Pending, func() {
			fctx, fcancel := context.WithCancel(ctx)
			go func() {
				defer close(fdone)
				pod, ferr = finishProbe(fctx, eu, ns, func(a *probe.Attempt) {
					if a.Category == probe.Tenant {
						a.Outcome, a.Detail, a.Elapsed = probe.Escape, "r1 connected (kubelet stand-in)", 40*time.Millisecond
					}
				})
			}()
			var st runtime.State
			st, err = r.Create(ctx, environment(t, shopManifest(2), name))
			fcancel()
			<-fdone
			if err == nil { // wrong, but leave nothing to later tests
				_ = r.Delete(context.Background(), st.Ref)
			}
		})
		if ferr != nil {
			t.Fatalf("finishing the probe: %v", ferr)
		}
		if code(err) != probe.Escaped {
			t.Fatalf("Create = %v, want %s", err, probe.Escaped)
		}
		msg := err.Error()
		t.Logf("the refusal:\n%s", msg)
		for _, want := range []string{"1 of 17 attempts escaped", "No application process or image was started.", "Created and removed again: namespace ", "Nothing is left."} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal lacks %q", want)
			}
		}
		if !regexp.MustCompile(`tenant\s+tcp\s+` + regexp.QuoteMeta(target) + `\s+escaped`).MatchString(msg) {
			t.Errorf("refusal does not list the tenant attempt at %s as escaped", target)
		}
		// What the pod was to run: the same attempt, in its script.
		script := strings.Join(pod.Spec.Containers[0].Command, " ")
		line := fmt.Sprintf(`try_tcp a\d\d tenant tcp '%s' '%s' '%d' &`, regexp.QuoteMeta(target), regexp.QuoteMeta(gw.Spec.ClusterIP), kube.ProxyPort)
		if !regexp.MustCompile(line).MatchString(script) {
			t.Errorf("the probe script has no line like %s", line)
		}
		reqs := cnt.reset()
		if n := count(reqs, "POST /apis/apps/v1/namespaces/"+ns+"/deployments"); n != 1 {
			t.Errorf("%d Deployments were created; only the gateway may be", n)
		}
		if left := leftovers(t, eu, ns); len(left) != 0 {
			t.Errorf("left: %v", left)
		}
		// The other environment is as it was.
		got, err := r.Read(ctx, other.Ref)
		if err != nil || got.Containment.Verdict != probe.Contained || len(got.Services) != 2 || !got.Services["web"].Running {
			t.Errorf("the other environment after the refused create: %v %+v", err, got)
		}
	})

	t.Run("forbidden", func(t *testing.T) {
		viewer := bindViewer(t, eu)
		if _, err := viewer.CoreV1().Services("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
			t.Fatalf("the viewer lists Services across namespaces: %v; the test needs that forbidden", err)
		}
		var cnt counter
		r := newRuntime(t, cnt.wrap, kube.Options{})
		env := environment(t, strings.Replace(shopManifest(2), "kubeconfig_context: eu-prod", "kubeconfig_context: eu-prod-viewer", 1), "tenant-d")
		st, err := r.Create(ctx, env)
		if err != nil {
			t.Fatalf("Create as a user that may not list Services across namespaces: %v", err)
		}
		reqs := cnt.reset()
		defer func() {
			if err := r.Delete(context.Background(), st.Ref); err != nil {
				t.Error(err)
			}
			if left := leftovers(t, eu, st.Namespace); len(left) != 0 {
				t.Errorf("left: %v", left)
			}
		}()
		if count(reqs, list) != 1 {
			t.Errorf("want one (forbidden) LIST of Services across namespaces: %v", reqs)
		}
		c := st.Containment
		if got := tenantAttempts(c.Attempts); c.Verdict != probe.Contained || len(got) != 0 || len(c.Attempts) != 18 {
			t.Errorf("containment %s with %d attempts, tenant %v: want contained, 18 attempts, none of them tenant (not made, never reported as blocked)", c.Verdict, len(c.Attempts), got)
		}
	})
}

func tenantAttempts(as []probe.Attempt) []probe.Attempt {
	var out []probe.Attempt
	for _, a := range as {
		if a.Category == probe.Tenant {
			out = append(out, a)
		}
	}
	return out
}

// finishProbe plays the kubelet stand-in for the probe pod in ns (while the
// shared stand-ins leave probes pending): it reports the planned attempts as
// contained, changed by change, in the termination message as the probe
// does. It returns the pod as created.
func finishProbe(ctx context.Context, c k8s.Interface, ns string, change func(*probe.Attempt)) (*corev1.Pod, error) {
	for {
		p, err := c.CoreV1().Pods(ns).Get(ctx, kube.ProbePodName, metav1.GetOptions{})
		switch {
		case err == nil && (p.Status.Phase == "" || p.Status.Phase == corev1.PodPending):
			plan, err := kube.ProbePlan(p)
			if err != nil {
				return p, err
			}
			var lines []string
			for _, a := range standin.Attempts(plan, standin.Contained, standin.HostIP) {
				change(&a)
				lines = append(lines, probe.Line(a))
			}
			created := p.DeepCopy()
			now := metav1.Now()
			p.Status.Phase = corev1.PodSucceeded
			p.Status.HostIP, p.Status.HostIPs = standin.HostIP, []corev1.HostIP{{IP: standin.HostIP}}
			p.Status.StartTime = &now
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{
				Name: "probe", Image: p.Spec.Containers[0].Image, ImageID: "standin://" + p.Spec.Containers[0].Image, ContainerID: "standin://" + string(p.UID),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					Reason: "Completed", Message: strings.Join(lines, "\n"), StartedAt: now, FinishedAt: now,
				}},
			}}
			_, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			if err == nil {
				return created, nil
			}
			if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				return created, err
			}
		case err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil:
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no probe pod in %s to finish: %w", ns, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// bindViewer gives the eu-prod-viewer user what a create and a delete need
// (cluster-wide, as a ClusterRoleBinding) except listing Services, so that
// the LIST across namespaces is forbidden; it is removed when the test ends,
// and the viewer is back to no rights before the next test.
func bindViewer(t *testing.T, admin k8s.Interface) k8s.Interface {
	t.Helper()
	ctx := context.Background()
	const name = "af-test-runtime-without-service-list"
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create", "delete", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "create"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies", "ingresses"}, Verbs: []string{"create"}},
	}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "viewer"}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	viewer := te.Client(t, "eu-prod-viewer")
	allowed := func() bool {
		_, err := viewer.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		return err == nil
	}
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
		for i := 0; allowed(); i++ {
			if i == 100 {
				t.Error("the viewer still has rights 10s after its binding was removed")
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	for i := 0; !allowed(); i++ {
		if i == 100 {
			t.Fatal("the viewer's binding did not take effect within 10s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	return viewer
}

// TestCreate_KubeletStandIn_FailureAtEveryRequest injects a failure at each
// request of a create in turn — once before the request is sent, once after
// the server answered (the answer lost) — and lists the cluster after each:
// nothing may be left, and the refusal says what was created and removed
// again ("Nothing was created." only while the namespace was not created).
func TestCreate_KubeletStandIn_FailureAtEveryRequest(t *testing.T) {
	eu := te.Client(t, testenv.EU)
	var cnt counter
	r := newRuntime(t, cnt.wrap, kube.Options{})
	st, err := r.Create(context.Background(), environment(t, shopManifest(2), "fail-0"))
	if err != nil {
		t.Fatal(err)
	}
	total := len(cnt.reset())
	if err := r.Delete(context.Background(), st.Ref); err != nil {
		t.Fatal(err)
	}
	t.Logf("a clean create makes %d requests; failing each in turn, before and after sending", total)
	// The runs are independent (one environment name each), so several go
	// at once: most of a run is waiting for its namespace to be removed.
	var (
		wg    sync.WaitGroup
		sem   = make(chan struct{}, 6)
		mu    sync.Mutex
		lines []string
	)
	for _, after := range []bool{false, true} {
		for at := 1; at <= total; at++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				mode := "before"
				if after {
					mode = "after"
				}
				name := fmt.Sprintf("fail-%s%02d", mode[:1], at) // equal lengths: no name is a prefix of another
				f := &failer{at: int64(at), after: after}
				r := newRuntime(t, f.wrap, kube.Options{})
				start := time.Now()
				_, err := r.Create(context.Background(), environment(t, shopManifest(2), name))
				what, _ := f.what.Load().(string)
				if err == nil {
					t.Errorf("%s request %d (%s): Create succeeded", mode, at, what)
					return
				}
				msg := strings.TrimSpace(err.Error())
				if strings.HasSuffix(msg, "Nothing was created.") == strings.HasSuffix(msg, "Nothing is left.") ||
					strings.HasSuffix(msg, "Nothing is left.") && !strings.Contains(msg, "Created and removed again: namespace af-shop-"+name) {
					t.Errorf("%s request %d (%s): refusal does not end with what was created and removed, or Nothing was created.:\n%s", mode, at, what, err)
				}
				if nsMade := f.nsCreated.Load(); nsMade != strings.HasSuffix(msg, "Nothing is left.") {
					t.Errorf("%s request %d (%s): the namespace was created: %v, but the refusal says:\n%s", mode, at, what, nsMade, err)
				}
				if left := leftovers(t, eu, "af-shop-"+name); len(left) != 0 {
					t.Errorf("%s request %d (%s): left %v", mode, at, what, left)
				}
				mu.Lock()
				lines = append(lines, fmt.Sprintf("%-6s %2d %-100s → %s (%s)", mode, at, what, code(err), time.Since(start).Round(time.Millisecond)))
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	slices.Sort(lines)
	for _, l := range lines {
		t.Log(l)
	}
	if len(lines) != 2*total {
		t.Errorf("%d of %d injected failures were refused", len(lines), 2*total)
	}
}

// TestCreate_KubeletStandIn_RolloutFails: a service whose pods never become
// ready (the stand-in leaves pods of a "never-ready" image pending, as a node
// does with an image it cannot pull) stops the create as soon as its
// Deployment passes its progress deadline, and everything is removed; with
// a longer deadline, the create's own timeout does the same.
func TestCreate_KubeletStandIn_RolloutFails(t *testing.T) {
	eu := te.Client(t, testenv.EU)
	env := environment(t, shopManifest(2), "stuck")
	env.Images = map[string]string{"worker": "ghcr.io/acme/shop:" + standin.NeverReady}

	r := newRuntime(t, nil, kube.Options{ProgressDeadline: 2 * time.Second})
	start := time.Now()
	_, err := r.Create(context.Background(), env)
	if code(err) != kube.RolloutFailed || !strings.Contains(err.Error(), "exceeded its progress deadline") || !strings.Contains(err.Error(), "removed again: namespace af-shop-stuck on context eu-prod, its 5 NetworkPolicies") || !strings.Contains(err.Error(), "Deployment worker") {
		t.Fatalf("Create = %v", err)
	}
	t.Logf("stopped after %s:\n%s", time.Since(start).Round(time.Millisecond), err)
	if left := leftovers(t, eu, "af-shop-stuck"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}

	r = newRuntime(t, nil, kube.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	_, err = r.Create(ctx, env)
	if code(err) != kube.RolloutFailed || !strings.Contains(err.Error(), "Deployment af-shop-stuck/worker: ") || !strings.Contains(err.Error(), "Nothing is left.") {
		t.Fatalf("Create with a short timeout = %v", err)
	}
	if left := leftovers(t, eu, "af-shop-stuck"); len(left) != 0 {
		t.Errorf("left: %v", left)
	}
}

// TestRead_KubeletStandIn_Drift: a Deployment deleted or scaled by hand
// shows in the state; Update puts it back; a namespace deleted by hand is
// ErrNotFound.
func TestRead_KubeletStandIn_Drift(t *testing.T) {
	ctx := context.Background()
	eu := te.Client(t, testenv.EU)
	r := newRuntime(t, nil, kube.Options{})
	env := environment(t, shopManifest(2), "drift")
	st, err := r.Create(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	ns := st.Namespace
	if err := eu.AppsV1().Deployments(ns).Delete(ctx, "worker", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := eu.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(ctx, st.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Services["worker"]; ok {
		t.Errorf("worker was deleted by hand, yet Read has it: %+v", got.Services["worker"])
	}
	if got.Services["web"].Replicas != 3 {
		t.Errorf("web scaled to 3 by hand, Read says %d", got.Services["web"].Replicas)
	}

	// Scaled to zero: not running.
	if _, err := eu.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ = r.Read(ctx, st.Ref)
	if got.Services["web"].Running {
		t.Error("web scaled to 0 reads as running")
	}
	// A web service's Ingress deleted by hand: not running either.
	_ = eu.NetworkingV1().Ingresses(ns).Delete(ctx, "web", metav1.DeleteOptions{})

	// Update restores the declared state, with a new image for web.
	env.Images = map[string]string{"web": "ghcr.io/acme/shop:1.4.3"}
	got, err = r.Update(ctx, env, st.Ref)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if w := got.Services["web"]; w.Replicas != 1 || !w.Running || w.Image != "ghcr.io/acme/shop:1.4.3" || got.URLs["web"] == "" {
		t.Errorf("after Update web = %+v, URLs %v", w, got.URLs)
	}
	if w := got.Services["worker"]; !w.Running || w.Replicas != 1 {
		t.Errorf("after Update worker = %+v", w)
	}

	// Services added and removed in place.
	grown := environment(t, shopManifest(3), "drift")
	got, err = r.Update(ctx, grown, st.Ref)
	if err != nil || len(got.Services) != 3 || !got.Services["svc-3"].Running {
		t.Fatalf("Update to three services: %v %+v", err, got.Services)
	}
	shrunk := environment(t, strings.Replace(shopManifest(1), "web: true", "web: false", 1), "drift")
	got, err = r.Update(ctx, shrunk, st.Ref)
	if err != nil || len(got.Services) != 1 || len(got.URLs) != 0 {
		t.Fatalf("Update to one service, not web: %v %+v %v", err, got.Services, got.URLs)
	}
	if left := leftovers(t, eu, ns); strings.Contains(strings.Join(left, " "), "ingress") || strings.Contains(strings.Join(left, " "), "af-web-web") {
		t.Errorf("web objects left after web was turned off: %v", left)
	}

	// The namespace deleted by hand: gone from the runtime's point of view
	// as soon as it is terminating.
	if err := eu.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Read(ctx, st.Ref); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Read = %v, want ErrNotFound", err)
	}
	// A new create of the same name waits for the old namespace to go.
	st2, err := r.Create(ctx, env)
	if err != nil {
		t.Fatalf("Create over a terminating namespace: %v", err)
	}
	if err := r.Delete(ctx, st2.Ref); err != nil {
		t.Fatal(err)
	}
}

// TestImportAndOwnership: the import ID names context, app and env; a
// namespace the runtime did not create is refused for read and delete and
// left alone; an existing namespace stops a create without being touched.
func TestImportAndOwnership(t *testing.T) {
	ctx := context.Background()
	eu := te.Client(t, testenv.EU)
	r := newRuntime(t, nil, kube.Options{})
	for _, bad := range []string{"af-shop-x", "eu-prod/af-shop-x"} {
		if _, err := r.Read(ctx, runtime.Ref{ID: bad}); code(err) != kube.BadImportID {
			t.Errorf("bad import ID %s: %v", bad, err)
		}
	}
	if _, err := r.Read(ctx, runtime.Ref{ID: "ap-prod/shop/x"}); code(err) != kube.ContextMissing {
		t.Errorf("unknown context: %v", err)
	}
	if _, err := r.Read(ctx, runtime.Ref{ID: "eu-prod/shop/nothing"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("absent namespace: %v", err)
	}

	// Someone else's namespace of the same name.
	other := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "af-shop-taken", Labels: map[string]string{"team": "other"}}}
	if _, err := eu.CoreV1().Namespaces().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = eu.CoreV1().Namespaces().Delete(ctx, "af-shop-taken", metav1.DeleteOptions{}) }()
	_, err := r.Create(ctx, environment(t, shopManifest(2), "taken"))
	if code(err) != kube.NotOurs || !strings.Contains(err.Error(), "Nothing was created.") {
		t.Errorf("Create over another's namespace = %v", err)
	}
	if _, err := r.Read(ctx, runtime.Ref{ID: "eu-prod/shop/taken"}); code(err) != kube.NotOurs {
		t.Errorf("Read of a namespace not ours = %v, want %s", err, kube.NotOurs)
	}
	if err := r.Delete(ctx, runtime.Ref{ID: "eu-prod/shop/taken"}); code(err) != kube.NotOurs {
		t.Errorf("Delete of a namespace not ours = %v, want %s", err, kube.NotOurs)
	}
	got, err := eu.CoreV1().Namespaces().Get(ctx, "af-shop-taken", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.Labels["team"] != "other" {
		t.Errorf("the other namespace was touched: %v %+v", err, got.ObjectMeta)
	}

	// Import of a real environment by its ID.
	st, err := r.Create(ctx, environment(t, shopManifest(2), "imp"))
	if err != nil {
		t.Fatal(err)
	}
	fresh := newRuntime(t, nil, kube.Options{})
	imported, err := fresh.Read(ctx, runtime.Ref{ID: "eu-prod/shop/imp"})
	if err != nil || imported.Namespace != "af-shop-imp" || len(imported.Services) != 2 || imported.Containment.Verdict != probe.Contained || imported.Source != shopManifest(2) {
		t.Errorf("import: %v %+v", err, imported)
	}
	// An update records the manifest it applied, for the next import.
	changed := shopManifest(2) + "# reviewed\n"
	if _, err := fresh.Update(ctx, environment(t, changed, "imp"), st.Ref); err != nil {
		t.Fatal(err)
	}
	if got, err := fresh.Read(ctx, st.Ref); err != nil || got.Source != changed {
		t.Errorf("after an update the namespace keeps %q (%v), want the updated manifest", got.Source, err)
	}
	if err := fresh.Delete(ctx, st.Ref); err != nil {
		t.Fatal(err)
	}
}

// TestCollidingPairs_KubeletStandIn is issue 9's collision: app shop + env
// col-1 and app shop-col + env 1 were one namespace (af-shop-col-1). Now
// they coexist in two, each labelled with its pair; deleting one leaves the
// other running. A namespace under a pair's own name that is labelled for
// another pair is refused for create, read and delete and left alone, and
// an environment an earlier release made under the plain name is still
// found, only by its own pair.
func TestCollidingPairs_KubeletStandIn(t *testing.T) {
	ctx := context.Background()
	eu := te.Client(t, testenv.EU)
	r := newRuntime(t, nil, kube.Options{})
	a := environment(t, shopManifest(1), "col-1")
	b := environment(t, strings.Replace(shopManifest(1), "name: shop\n", "name: shop-col\n", 1), "1")
	sa, err := r.Create(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := r.Create(ctx, b)
	if err != nil {
		t.Fatalf("the second pair could not be created beside the first: %v", err)
	}
	if sa.Ref.ID != "eu-prod/shop/col-1" || sb.Ref.ID != "eu-prod/shop-col/1" || sa.Namespace != "af-shop-col-1" || !strings.HasPrefix(sb.Namespace, "af-shop-col-1-") {
		t.Fatalf("IDs %s %s, namespaces %s %s", sa.Ref.ID, sb.Ref.ID, sa.Namespace, sb.Namespace)
	}
	for i, st := range []runtime.State{sa, sb} {
		k := []runtime.Key{{App: "shop", Env: "col-1"}, {App: "shop-col", Env: "1"}}[i]
		ns, err := eu.CoreV1().Namespaces().Get(ctx, st.Namespace, metav1.GetOptions{})
		if err != nil || ns.Labels[kube.LabelApp] != k.App || ns.Labels[kube.LabelEnv] != k.Env {
			t.Errorf("namespace %s labels %v (%v), want %v", st.Namespace, ns.Labels, err, k)
		}
		got, err := r.Read(ctx, st.Ref)
		if err != nil || got.Namespace != st.Namespace {
			t.Errorf("Read(%s) = %s, %v", st.Ref.ID, got.Namespace, err)
		}
	}
	if err := r.Delete(ctx, sb.Ref); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Read(ctx, sa.Ref); err != nil || !got.Services["web"].Running {
		t.Fatalf("deleting shop-col/1 touched shop/col-1: %+v %v", got, err)
	}
	if _, err := r.Read(ctx, sb.Ref); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("Read of the deleted pair = %v", err)
	}

	// shop-col/1 as an earlier release made it: in af-shop-col-1, which is
	// now shop/col-1's. Its own pair still finds it (with the other gone);
	// shop/col-1 refuses it.
	if err := r.Delete(ctx, sa.Ref); err != nil {
		t.Fatal(err)
	}
	legacy := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "af-shop-col-1", Labels: map[string]string{
		kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: "shop-col", kube.LabelEnv: "1"}}}
	if _, err := eu.CoreV1().Namespaces().Create(ctx, legacy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = eu.CoreV1().Namespaces().Delete(ctx, "af-shop-col-1", metav1.DeleteOptions{}) }()
	if got, err := r.Read(ctx, sb.Ref); err != nil || got.Namespace != "af-shop-col-1" {
		t.Errorf("the earlier release's namespace of shop-col/1: %+v %v", got, err)
	}
	if _, err := r.Create(ctx, b); code(err) != kube.AlreadyExists {
		t.Errorf("Create beside the earlier release's namespace of the same pair = %v, want %s", err, kube.AlreadyExists)
	}
	if _, err := r.Read(ctx, sa.Ref); code(err) != kube.OtherPair {
		t.Errorf("Read of shop/col-1 over shop-col/1's namespace = %v, want %s", err, kube.OtherPair)
	}
	if err := r.Delete(ctx, sa.Ref); code(err) != kube.OtherPair {
		t.Errorf("Delete of shop/col-1 over shop-col/1's namespace = %v, want %s", err, kube.OtherPair)
	}
	if _, err := r.Create(ctx, a); code(err) != kube.OtherPair || !strings.Contains(err.Error(), "Nothing was created.") {
		t.Errorf("Create of shop/col-1 over shop-col/1's namespace = %v, want %s", err, kube.OtherPair)
	}
	got, err := eu.CoreV1().Namespaces().Get(ctx, "af-shop-col-1", metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.Labels[kube.LabelApp] != "shop-col" {
		t.Errorf("the other pair's namespace was touched: %v %+v", err, got.ObjectMeta)
	}
}

// TestPlanned_NoTargets: a manifest without targets runs on the context the
// provider places it on (its kubernetes.context, as the target's
// kubeconfig_context), which the ID then names for good. Without one the
// runtime refuses: the kubeconfig's current-context (eu-prod here) never
// decides.
func TestPlanned_NoTargets(t *testing.T) {
	r := newRuntime(t, nil, kube.Options{})
	y := shopManifest(2)
	a, b := strings.Index(y, "  requires:"), strings.Index(y, "services:")
	env := environment(t, y[:a]+y[b:], "nt")
	env.Placement.Target.KubeconfigContext = ""
	if err := r.Check(env); code(err) != kube.ContextMissing {
		t.Fatalf("Check without a context = %v, want %s (never the current-context)", err, kube.ContextMissing)
	}
	env.Placement.Target.KubeconfigContext = "us-prod"
	if err := r.Check(env); err != nil {
		t.Fatal(err)
	}
	if got := r.Planned(env).Ref.ID; got != "us-prod/shop/nt" {
		t.Errorf("Planned ID = %q, want the provider's context us-prod", got)
	}
}

// TestCreate_Forbidden: a user RBAC refuses gets AF-K8S-004 at the first
// request and nothing is created.
func TestCreate_Forbidden(t *testing.T) {
	r := newRuntime(t, nil, kube.Options{})
	env := environment(t, strings.Replace(shopManifest(2), "kubeconfig_context: eu-prod", "kubeconfig_context: eu-prod-viewer", 1), "rbac")
	_, err := r.Create(context.Background(), env)
	if code(err) != kube.APIFailed || !strings.Contains(err.Error(), "forbidden") || !strings.Contains(err.Error(), "Nothing was created.") {
		t.Fatalf("Create = %v", err)
	}
}

// BenchmarkRefresh_KubeletStandIn measures a refresh (Read) of environments
// of 1, 5 and 20 services: the requests per refresh must not grow.
func BenchmarkRefresh_KubeletStandIn(b *testing.B) {
	for _, n := range []int{1, 5, 20} {
		b.Run(fmt.Sprintf("services=%d", n), func(b *testing.B) {
			var cnt counter
			// No client-side rate limit: the time measured is the server's.
			r := newRuntime(b, cnt.wrap, kube.Options{QPS: -1})
			ctx := context.Background()
			st, err := r.Create(ctx, environment(b, shopManifest(n), fmt.Sprintf("bench-%d", n)))
			if err != nil {
				b.Fatal(err)
			}
			created := len(cnt.reset())
			defer func() {
				cnt.reset()
				if err := r.Delete(ctx, st.Ref); err != nil {
					b.Error(err)
				}
				b.Logf("services=%d: create %d requests, delete %d requests", n, created, len(cnt.reset()))
			}()
			iterations := 0
			for b.Loop() {
				iterations++
				got, err := r.Read(ctx, st.Ref)
				if err != nil || len(got.Services) != n {
					b.Fatalf("Read: %v, %d services", err, len(got.Services))
				}
			}
			reqs := cnt.reset()
			perOp := float64(len(reqs)) / float64(iterations)
			b.ReportMetric(perOp, "requests/op")
			if perOp > 6 {
				b.Errorf("a refresh costs %.1f requests; the target is ≤ 6 whatever the size", perOp)
			}
		})
	}
}
