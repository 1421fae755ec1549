//go:build realnode

package provider

// The RealNode tests: terraform against a real one-node cluster
// (scripts/realnode.sh: kubelet, containerd, runc, the bridge CNI,
// kube-proxy, and kube-router as the NetworkPolicy enforcer), so every
// verdict rests on packets a real probe pod sent. They change node-wide
// state (enforcement on and off), so they live in this one build-tagged file
// and run serially: `make test-realnode` starts the node, runs them with
// -p 1 and stops it. Without the node they fail; they never skip.
//
// Off the pod network the node drops everything (the script's safety
// rules), so public attempts are aimed at TEST-NET addresses (a test-only
// setting) and only in-network targets can show enforcement: a canary
// listener pod in its own namespace, which accepts whenever it is reachable.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
)

const (
	realNodeApp       = "rn"
	realNodeCanaryNS  = "realnode-canary"
	realNodeCanaryMsg = "canary-reached"
	realNodeMockBody  = "mocked-by-the-gateway"
)

// realNode is the running node as the script's env file describes it.
type realNode struct {
	kubeconfig, script, busybox, gateway string
	c                                    k8s.Interface
	canary                               string // ip:port of the canary listener
}

func needRealNode(t *testing.T) *realNode {
	t.Helper()
	n := &realNode{
		kubeconfig: os.Getenv("REALNODE_KUBECONFIG"), script: os.Getenv("REALNODE_SCRIPT"),
		busybox: os.Getenv("REALNODE_BUSYBOX_IMAGE"), gateway: os.Getenv("REALNODE_GATEWAY_IMAGE"),
	}
	if n.kubeconfig == "" || n.script == "" || n.busybox == "" || n.gateway == "" {
		t.Fatal("no real node: run these tests with `make test-realnode` (root; it starts scripts/realnode.sh and sources its env file)")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if n.c, err = k8s.NewForConfig(rc); err != nil {
		t.Fatal(err)
	}
	n.canary = n.startCanary(t)
	n.followProbeLogs(t)
	return n
}

// followProbeLogs keeps every probe pod's log, with the kubelet's
// timestamps, and writes it to the test log when the test fails: the runtime
// deletes a refused probe pod, and its rounds are the evidence of what got
// out and when (set REALNODE_PROBE_LOGS=1 to see them always).
func (n *realNode) followProbeLogs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if t.Failed() || os.Getenv("REALNODE_PROBE_LOGS") != "" {
			t.Logf("probe pod logs:\n%s", strings.Join(lines, "\n"))
		}
	})
	w, err := n.c.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: kube.LabelProbe + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer w.Stop()
		following := map[string]bool{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || following[string(p.UID)] || p.Status.Phase == corev1.PodPending {
				continue
			}
			following[string(p.UID)] = true
			wg.Add(1)
			go func(ns, name string) {
				defer wg.Done()
				rc, err := n.c.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Follow: true, Timestamps: true}).Stream(ctx)
				if err != nil {
					return
				}
				defer rc.Close()
				sc := bufio.NewScanner(rc)
				for sc.Scan() {
					mu.Lock()
					lines = append(lines, ns+": "+sc.Text())
					mu.Unlock()
				}
			}(p.Namespace, p.Name)
		}
	}()
}

// enforce switches kube-router on or off for the whole node.
func (n *realNode) enforce(t *testing.T, on bool) {
	t.Helper()
	cmd := "enforce-off"
	if on {
		cmd = "enforce-on"
	}
	if out, err := exec.Command(n.script, cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", n.script, cmd, err, out)
	}
}

// startCanary runs (once per node) a listener in a namespace of its own that
// answers every connection, and proves from the host that it answers: the
// canary's positive control, so that a blocked attempt at it means blocked.
func (n *realNode) startCanary(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	_, err := n.c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: realNodeCanaryNS}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	grace := int64(0)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "canary", Namespace: realNodeCanaryNS, Labels: map[string]string{"app": "canary"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  new(bool),
			Containers: []corev1.Container{{
				Name: "canary", Image: n.busybox, ImagePullPolicy: corev1.PullNever,
				Command: []string{"nc", "-ll", "-p", "8080", "-e", "echo", realNodeCanaryMsg},
			}},
		},
	}
	if _, err := n.c.CoreV1().Pods(realNodeCanaryNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var ip string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		p, err := n.c.CoreV1().Pods(realNodeCanaryNS).Get(ctx, "canary", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			ip = p.Status.PodIP
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if ip == "" {
		t.Fatal("the canary pod did not run within 60s")
	}
	addr := net.JoinHostPort(ip, "8080")
	for time.Now().Before(deadline) {
		if got, err := dialRead(addr); err == nil && strings.Contains(got, realNodeCanaryMsg) {
			return addr
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the canary %s does not answer the host", addr)
	return ""
}

func dialRead(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	return line, err
}

func (n *realNode) providers(cnt *kubeRequests) map[string]func() (tfprotov6.ProviderServer, error) {
	return runtimeTestProviders(func(pd *providerData, kind string) (runtime.Runtime, error) {
		if kind != manifest.ProviderKubernetes {
			return releaseRuntimes(pd, kind)
		}
		o := pd.k8s
		o.ProbeImage, o.GatewayImage = n.busybox, n.gateway
		// Test-only: no pod is ever pointed at a real outside address.
		o.ProbePublicIPs, o.ProbeResolvers = []string{"192.0.2.10"}, []string{"198.51.100.53"}
		o.ProbeCanaries = []string{n.canary}
		o.ProbeTimeout = 90 * time.Second
		return kube.New(kube.Kubeconfig{Path: pd.kubeconfig.Path}, cnt.wrap, o)
	})
}

func (n *realNode) config(env string) string {
	m := fmt.Sprintf(`    name: %s
    runtime:
      provider: kubernetes
      domain: preview.example.com
      targets:
        - name: node
          kubeconfig_context: eu-prod
    services:
      web:
        image: %s
        command: ["sh", "-c", "mkdir -p /tmp/www && echo ok >/tmp/www/healthz && exec httpd -f -p 8080 -h /tmp/www"]
        port: 8080
        web: true
        health: /healthz
      worker:
        image: %s
        command: ["sh", "-c", "trap 'exit 0' TERM; while :; do sleep 1; done"]
    egress:
      - host: api.mock.test
        mode: mock
        response: {status: 200, body: %s}`, realNodeApp, n.busybox, n.busybox, realNodeMockBody)
	return kubeProviderBlock(n.kubeconfig) + environmentBlock("this", env, "", m)
}

// leftovers lists these tests' namespaces and every pod on the node outside
// the canary's namespace.
func (n *realNode) leftovers() ([]string, error) {
	ctx := context.Background()
	nss, err := n.c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, "af-"+realNodeApp+"-") {
			out = append(out, "namespace/"+ns.Name+" ("+string(ns.Status.Phase)+")")
		}
	}
	pods, err := n.c.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		if p.Namespace != realNodeCanaryNS {
			out = append(out, "pod/"+p.Namespace+"/"+p.Name)
		}
	}
	return out, nil
}

func (n *realNode) checkNothingLeft(*terraform.State) error {
	left, err := n.leftovers()
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("left on the node: %v", left)
	}
	return nil
}

// exec runs a command in a service's pod through the real kubelet.
// exec runs cmd in target ("deploy/worker", "pod/canary") in namespace ns.
func (n *realNode) exec(ns, target string, cmd ...string) (string, error) {
	args := append([]string{"--kubeconfig", n.kubeconfig, "-n", ns, "exec", target, "--"}, cmd...)
	out, err := exec.Command("kubectl", args...).CombinedOutput()
	return string(out), err
}

// attr reads one attribute of the environment from the state.
func stateAttr(s *terraform.State, key string) string {
	return s.RootModule().Resources["antifailure_preview_environment.this"].Primary.Attributes[key]
}

// attempts renders the recorded probe attempts as "category target outcome (detail)" lines.
func attempts(s *terraform.State) []string {
	var out []string
	for i := 0; ; i++ {
		p := fmt.Sprintf("containment.attempts.%d.", i)
		if stateAttr(s, p+"category") == "" {
			return out
		}
		out = append(out, fmt.Sprintf("%s %s %s (%s)", stateAttr(s, p+"category"), stateAttr(s, p+"target"), stateAttr(s, p+"outcome"), stateAttr(s, p+"detail")))
	}
}

func hasAttempt(list []string, prefix, outcome string) bool {
	for _, a := range list {
		if strings.HasPrefix(a, prefix) && strings.Contains(a, " "+outcome+" ") {
			return true
		}
	}
	return false
}

// TestAccRealNode_Enforcing: kube-router enforces. A two-service manifest
// from local images is contained (a real probe pod: the gateway answered,
// the canary in another namespace was refused by the services' policies),
// both services run through a real rollout, a service reaches a mock host
// through the real gateway and is refused an uncatalogued one, the next plan
// is empty and a refresh costs at most six requests, and destroy leaves
// nothing on the node.
func TestAccRealNode_Enforcing(t *testing.T) {
	n := needRealNode(t)
	n.enforce(t, true)
	var cnt kubeRequests
	var t0, destroyStart time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: n.providers(&cnt),
		CheckDestroy: func(s *terraform.State) error {
			t.Logf("destroy: %s", time.Since(destroyStart).Round(100*time.Millisecond))
			return n.checkNothingLeft(s)
		},
		Steps: []resource.TestStep{
			{
				PreConfig: func() { t0 = time.Now() },
				Config:    n.config("pr-1"),
				Check: func(s *terraform.State) error {
					t.Logf("apply: %s, %d API requests, probe %s ms", time.Since(t0).Round(100*time.Millisecond), cnt.take(), stateAttr(s, "containment.duration_ms"))
					list := attempts(s)
					t.Logf("probe attempts:\n  %s", strings.Join(list, "\n  "))
					if v := stateAttr(s, "containment.verdict"); v != "contained" {
						return fmt.Errorf("verdict %q, want contained", v)
					}
					if !hasAttempt(list, "control ", "reached") || !hasAttempt(list, "tenant "+n.canary, "blocked") {
						return fmt.Errorf("want the gateway reached and the canary %s blocked: %v", n.canary, list)
					}
					for _, svc := range []string{"web", "worker"} {
						if stateAttr(s, "services."+svc+".running") != "true" {
							return fmt.Errorf("service %s not running", svc)
						}
					}
					ns := stateAttr(s, "namespace")
					pods, err := n.c.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
					if err != nil {
						return err
					}
					for _, p := range pods.Items {
						if p.Labels[kube.LabelProbe] == "true" {
							return fmt.Errorf("the probe pod %s is still there", p.Name)
						}
						if p.Status.Phase != corev1.PodRunning {
							return fmt.Errorf("pod %s is %s", p.Name, p.Status.Phase)
						}
					}
					out, err := n.exec(ns, "deploy/worker", "wget", "-q", "-O-", "http://api.mock.test/")
					if err != nil || !strings.Contains(out, realNodeMockBody) {
						return fmt.Errorf("worker -> mock host through the gateway: %w %q", err, out)
					}
					out, err = n.exec(ns, "deploy/worker", "wget", "-q", "-O-", "http://uncatalogued.example/")
					if err == nil || !strings.Contains(out, "403") {
						return fmt.Errorf("worker -> an uncatalogued host was not refused by the gateway (exec: %s): %q", fmt.Sprint(err), out)
					}
					// The gateway's canary answers a pod whose egress nothing
					// enforces (the canary listener's, in a namespace without
					// policies), as it answers a new pod the enforcer has not
					// programmed yet: only the connecting pod's own rules can
					// refuse it, so a refused canary means they are in force.
					gw, err := n.c.CoreV1().Services(ns).Get(context.Background(), kube.GatewayName, metav1.GetOptions{})
					if err != nil {
						return err
					}
					out, err = n.exec(realNodeCanaryNS, "pod/canary", "nc", "-w", "3", gw.Spec.ClusterIP, strconv.Itoa(kube.CanaryPort))
					if err != nil || !strings.Contains(out, strings.TrimSpace(egress.CanaryReply)) {
						return fmt.Errorf("an unpoliced pod -> the gateway's canary did not get its answer (exec: %s): %q", fmt.Sprint(err), out)
					}
					// The canary is all it gets: the proxy stays the services' own.
					out, err = n.exec(realNodeCanaryNS, "pod/canary", "nc", "-w", "3", gw.Spec.ClusterIP, strconv.Itoa(kube.ProxyPort))
					if err == nil {
						return fmt.Errorf("an unpoliced pod reached the gateway's proxy port: %q", out)
					}
					// And no way around the gateway: straight to the canary.
					out, err = n.exec(ns, "deploy/worker", "nc", "-w", "3", strings.Split(n.canary, ":")[0], "8080")
					if err == nil || strings.Contains(out, realNodeCanaryMsg) {
						return fmt.Errorf("worker reached the canary directly (exec: %s): %q", fmt.Sprint(err), out)
					}
					return nil
				},
			},
			{
				PreConfig: func() { cnt.take() },
				Config:    n.config("pr-1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: func(*terraform.State) error {
					// one refresh before the plan, one after (the framework's own check)
					got := cnt.take()
					t.Logf("plan + refresh: %d API requests", got)
					if got > 2*6 {
						return fmt.Errorf("two refreshes cost %d requests, the budget is 6 each", got)
					}
					destroyStart = time.Now()
					return nil
				},
			},
		},
	})
}

// TestAccRealNode_NotEnforcing: kube-router stopped, the NetworkPolicy
// objects are accepted and enforce nothing. The same manifest, as the only
// environment on the node, is refused AF-RUN-043 naming the attempt that got
// an answer (the canary), and nothing is left.
func TestAccRealNode_NotEnforcing(t *testing.T) {
	n := needRealNode(t)
	n.enforce(t, false)
	t.Cleanup(func() { n.enforce(t, true) })
	if left, _ := n.leftovers(); len(left) > 0 {
		t.Fatalf("not the only environment: %v", left)
	}
	var cnt kubeRequests
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: n.providers(&cnt),
		CheckDestroy:             n.checkNothingLeft,
		Steps: []resource.TestStep{{
			Config:      n.config("pr-2"),
			ExpectError: regexp.MustCompile(`(?s)AF-RUN-043.*tenant\s+tcp\s+` + regexp.QuoteMeta(n.canary) + `\s+escaped`),
		}},
	})
	if err := n.checkNothingLeft(nil); err != nil {
		t.Fatal(err)
	}
}

// TestAccRealNode_ContainmentDrift: after a contained apply, a
// NetworkPolicy deleted by hand, then the gateway's catalogue widened by
// hand, each show in the next plan as an in-place update whose containment
// verdict names what differs; the apply restores the object and runs the
// probe again (a new probe result on the namespace) before the environment
// counts as contained. Then, with enforcement stopped, a repair's probe gets
// out: AF-RUN-043 and the services stopped; with enforcement back the next
// apply probes again and starts them.
func TestAccRealNode_ContainmentDrift(t *testing.T) {
	n := needRealNode(t)
	n.enforce(t, true)
	t.Cleanup(func() { n.enforce(t, true) })
	var cnt kubeRequests
	ctx := context.Background()
	var ns, lastProbe string
	probeRecord := func() string {
		o, err := n.c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return "unreadable: " + err.Error()
		}
		return o.Annotations[kube.AnnotationContainment]
	}
	drifted := func(what string) plancheck.PlanCheck {
		return planCheckFunc(func(_ context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
			for _, rc := range req.Plan.ResourceChanges {
				if rc.Address != "antifailure_preview_environment.this" {
					continue
				}
				if !rc.Change.Actions.Update() {
					resp.Error = fmt.Errorf("want an in-place update, plan says %v", rc.Change.Actions)
					return
				}
				before, _ := rc.Change.Before.(map[string]any)
				c, _ := before["containment"].(map[string]any)
				if v, _ := c["verdict"].(string); !strings.Contains(v, what) {
					resp.Error = fmt.Errorf("the refreshed containment verdict %q does not name %q", v, what)
				}
				t.Logf("plan: containment verdict %q -> known after apply", c["verdict"])
				return
			}
			resp.Error = fmt.Errorf("no change planned for the environment")
		})
	}
	reprobed := func(s *terraform.State) error {
		if v := stateAttr(s, "containment.verdict"); v != "contained" {
			return fmt.Errorf("verdict %q after the repair", v)
		}
		now := probeRecord()
		if now == lastProbe {
			return fmt.Errorf("the probe did not run again: the namespace holds the same result")
		}
		lastProbe = now
		t.Logf("re-probed in %s ms, %d API requests", stateAttr(s, "containment.duration_ms"), cnt.take())
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: n.providers(&cnt),
		CheckDestroy:             n.checkNothingLeft,
		Steps: []resource.TestStep{
			{
				Config: n.config("pr-3"),
				Check: func(s *terraform.State) error {
					ns, lastProbe = stateAttr(s, "namespace"), ""
					lastProbe = probeRecord()
					if stateAttr(s, "containment.verdict") != "contained" {
						return fmt.Errorf("verdict %q", stateAttr(s, "containment.verdict"))
					}
					return nil
				},
			},
			{
				PreConfig: func() {
					if err := n.c.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "af-services-to-gateway", metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: n.config("pr-3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{drifted("NetworkPolicy af-services-to-gateway deleted")},
				},
				Check: func(s *terraform.State) error {
					if _, err := n.c.NetworkingV1().NetworkPolicies(ns).Get(ctx, "af-services-to-gateway", metav1.GetOptions{}); err != nil {
						return fmt.Errorf("the policy was not restored: %w", err)
					}
					return reprobed(s)
				},
			},
			{
				PreConfig: func() {
					cm, err := n.c.CoreV1().ConfigMaps(ns).Get(ctx, kube.GatewayConfigMap, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					cfg, err := egress.ParseConfig([]byte(cm.Data["config.json"]))
					if err != nil {
						t.Fatal(err)
					}
					cfg.Catalogue = append([]egress.Rule{{Host: "*.widened.test", Mode: manifest.ModeAllow}}, cfg.Catalogue...)
					cm.Data["config.json"] = string(cfg.JSON())
					if _, err := n.c.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: n.config("pr-3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{drifted("ConfigMap " + kube.GatewayConfigMap)},
				},
				Check: func(s *terraform.State) error {
					cm, err := n.c.CoreV1().ConfigMaps(ns).Get(ctx, kube.GatewayConfigMap, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if strings.Contains(cm.Data["config.json"], "widened.test") {
						return fmt.Errorf("the catalogue was not restored: %s", cm.Data["config.json"])
					}
					return reprobed(s)
				},
			},
			{
				// Enforcement stops and a policy is deleted: the repair's
				// probe gets out, and the refusal stops the services.
				PreConfig: func() {
					n.enforce(t, false)
					if err := n.c.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "af-default-deny", metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:      n.config("pr-3"),
				ExpectError: regexp.MustCompile(`(?s)AF-RUN-043.*services\s+were\s+stopped`),
			},
			{
				// Enforcement back: the plan updates the stopped environment,
				// and the apply probes again before the services start.
				PreConfig: func() {
					n.enforce(t, true)
					deps, err := n.c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRole + "=" + kube.RoleService})
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range deps.Items {
						if *d.Spec.Replicas != 0 {
							t.Errorf("service %s wants %d replicas after the refused repair, want 0", d.Name, *d.Spec.Replicas)
						}
					}
				},
				Config: n.config("pr-3"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("antifailure_preview_environment.this", plancheck.ResourceActionUpdate)},
				},
				Check: func(s *terraform.State) error {
					for _, svc := range []string{"web", "worker"} {
						if stateAttr(s, "services."+svc+".running") != "true" {
							return fmt.Errorf("service %s not running after the repair", svc)
						}
					}
					return reprobed(s)
				},
			},
		},
	})
}

type planCheckFunc func(context.Context, plancheck.CheckPlanRequest, *plancheck.CheckPlanResponse)

func (f planCheckFunc) CheckPlan(ctx context.Context, req plancheck.CheckPlanRequest, resp *plancheck.CheckPlanResponse) {
	f(ctx, req, resp)
}

// TestAccRealNode_NotEnforcingBesideAnother: one environment created while
// kube-router enforces; then enforcement stops and a second environment's
// probe reaches the first one's gateway (a tenant attempt that got an
// answer): AF-RUN-043 naming it, and the second leaves nothing.
func TestAccRealNode_NotEnforcingBesideAnother(t *testing.T) {
	n := needRealNode(t)
	n.enforce(t, true)
	t.Cleanup(func() { n.enforce(t, true) })
	var cnt kubeRequests
	one := n.config("pr-4")
	two := one + strings.Replace(strings.SplitN(n.config("pr-5"), "}\n", 2)[1], `"this"`, `"second"`, 1)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: n.providers(&cnt),
		CheckDestroy:             n.checkNothingLeft,
		Steps: []resource.TestStep{
			{Config: one},
			{
				PreConfig:   func() { n.enforce(t, false) },
				Config:      two,
				ExpectError: regexp.MustCompile(`(?s)AF-RUN-043.*tenant\s+tcp\s+10\.0\.\d+\.\d+:3128\s+escaped`),
			},
			{
				PreConfig: func() {
					n.enforce(t, true)
					_, err := n.c.CoreV1().Namespaces().Get(context.Background(), "af-"+realNodeApp+"-pr-5", metav1.GetOptions{})
					if !apierrors.IsNotFound(err) {
						t.Errorf("the refused environment's namespace: %v", err)
					}
				},
				Config:   one,
				PlanOnly: true,
			},
		},
	})
}
