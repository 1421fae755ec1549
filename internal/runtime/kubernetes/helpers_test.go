package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
	"github.com/antifailure/terraform-provider-antifailure/internal/testfixture"
)

var te *testenv.Env

// The kubelet stand-ins, one per cluster, for the whole test binary. Tests
// that change the probe result take standinMu.
var (
	standins  = map[string]*standin.StandIn{}
	standinMu sync.Mutex
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	te, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer te.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, kctx := range []string{testenv.EU, testenv.US} {
		cfg, err := te.RESTConfig(kctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL:", err)
			return 1
		}
		c := k8s.NewForConfigOrDie(cfg)
		if _, err := testenv.EnsureClusterDNS(ctx, c); err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: creating kube-dns:", err)
			return 1
		}
		s, err := standin.New(c, standin.Options{Interval: 50 * time.Millisecond, NamespacePrefix: "af-shop-"})
		if err != nil {
			panic(err)
		}
		standins[kctx] = s
		go s.Run(ctx)
	}
	return m.Run()
}

// withProbe runs f while the stand-ins make probes report r.
func withProbe(r standin.ProbeResult, f func()) {
	standinMu.Lock()
	defer standinMu.Unlock()
	for _, s := range standins {
		s.SetProbe(r)
	}
	defer func() {
		for _, s := range standins {
			s.SetProbe(standin.Contained)
		}
	}()
	f()
}

// shopManifest is the seed manifest (testfixture.Shop) with n services:
// web (a web service) and worker, then svc-3 … svc-n.
func shopManifest(n int) string { return testfixture.Shop("shop", n) }

func environment(t testing.TB, yaml, name string) runtime.Environment {
	t.Helper()
	m, err := manifest.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	ed := license.Edition{Name: license.Enterprise, Features: []string{license.FeatureMultiRuntime}}
	d, err := placement.Decide(m, placement.Rules{Edition: ed})
	if err != nil {
		t.Fatalf("placement: %v", err)
	}
	return runtime.Environment{Name: name, Manifest: m, Source: yaml, Placement: d, WaitForRollout: true}
}

// counter counts the runtime's requests and keeps them in order.
type counter struct {
	mu   sync.Mutex
	reqs []string
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		c.mu.Lock()
		line := r.Method + " " + r.URL.Path
		if r.URL.Query().Get("watch") == "true" {
			line = "WATCH " + r.URL.Path
		}
		c.reqs = append(c.reqs, line)
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *counter) reset() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reqs
	c.reqs = nil
	return r
}

// errInjected is the failure the failing RoundTripper injects.
var errInjected = errors.New("injected failure")

// failer fails the at-th request: before it is sent, or after the server
// has answered (the answer is lost, as on a dropped connection).
type failer struct {
	at    int64
	after bool
	n     atomic.Int64
	what  atomic.Value // string: the request that failed
	// nsCreated: the server created the environment's namespace (whether
	// or not its answer got through).
	nsCreated atomic.Bool
}

func (f *failer) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		nsCreate := r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces"
		if f.n.Add(1) != f.at {
			resp, err := rt.RoundTrip(r)
			if nsCreate && err == nil && resp.StatusCode == http.StatusCreated {
				f.nsCreated.Store(true)
			}
			return resp, err
		}
		f.what.Store(r.Method + " " + r.URL.String())
		if f.after {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				if nsCreate && resp.StatusCode == http.StatusCreated {
					f.nsCreated.Store(true)
				}
				resp.Body.Close()
			}
		}
		return nil, errInjected
	})
}

// testGatewayImage stands for a released gateway image: the kubelet
// stand-in never pulls it.
const testGatewayImage = kube.GatewayImageRepository + ":0.0.0-test"

func newRuntime(t testing.TB, wrap func(http.RoundTripper) http.RoundTripper, opts kube.Options) *kube.Runtime {
	t.Helper()
	if opts.GatewayImage == "" {
		opts.GatewayImage = testGatewayImage
	}
	if opts.ProbeTimeout == 0 {
		opts.ProbeTimeout = 30 * time.Second
	}
	if opts.CleanupTimeout == 0 {
		opts.CleanupTimeout = 90 * time.Second
	}
	r, err := kube.New(kube.Kubeconfig{Path: te.Kubeconfig}, wrap, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// leftovers lists everything of the runtime on a cluster: namespaces
// (labelled, or named af-*) and, across all namespaces, the kinds it creates.
func leftovers(t testing.TB, c k8s.Interface, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy}
	var out []string
	nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if strings.HasPrefix(ns.Name, prefix) {
			out = append(out, "namespace "+ns.Name+" ("+string(ns.Status.Phase)+")")
		}
	}
	inPrefix := func(ns string) bool { return strings.HasPrefix(ns, prefix) }
	deps, err := c.AppsV1().Deployments("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range deps.Items {
		if inPrefix(o.Namespace) {
			out = append(out, "deployment "+o.Namespace+"/"+o.Name)
		}
	}
	pods, _ := c.CoreV1().Pods("").List(ctx, sel)
	for _, o := range pods.Items {
		if inPrefix(o.Namespace) {
			out = append(out, "pod "+o.Namespace+"/"+o.Name)
		}
	}
	svcs, _ := c.CoreV1().Services("").List(ctx, sel)
	for _, o := range svcs.Items {
		if inPrefix(o.Namespace) {
			out = append(out, "service "+o.Namespace+"/"+o.Name)
		}
	}
	ings, _ := c.NetworkingV1().Ingresses("").List(ctx, sel)
	for _, o := range ings.Items {
		if inPrefix(o.Namespace) {
			out = append(out, "ingress "+o.Namespace+"/"+o.Name)
		}
	}
	nps, _ := c.NetworkingV1().NetworkPolicies("").List(ctx, sel)
	for _, o := range nps.Items {
		if inPrefix(o.Namespace) {
			out = append(out, "networkpolicy "+o.Namespace+"/"+o.Name)
		}
	}
	cms, _ := c.CoreV1().ConfigMaps("").List(ctx, sel)
	for _, o := range cms.Items {
		if inPrefix(o.Namespace) {
			out = append(out, "configmap "+o.Namespace+"/"+o.Name)
		}
	}
	sort.Strings(out)
	return out
}

func count(reqs []string, prefix string) int {
	n := 0
	for _, r := range reqs {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

func indexOf(reqs []string, f func(string) bool) int {
	for i, r := range reqs {
		if f(r) {
			return i
		}
	}
	return -1
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
