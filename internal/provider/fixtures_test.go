package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
	"github.com/antifailure/terraform-provider-antifailure/internal/testfixture"
)

// The fixtures the preview environment acceptance tests share (local,
// Kubernetes and RealNode): how the provider is served, the configuration
// blocks and manifests they write, the testenv with its kubelet stand-in,
// the import steps they repeat and the version 0 state they fake. This file
// has no build tag: the Kubernetes tests, untagged, use it too. One place, so a change to the seed's
// manifest shape or to the setup is made once.

// runtimeTestProviders serves the provider with the test verifier and clock,
// an empty environment, and the runtimes runtimes returns.
func runtimeTestProviders(runtimes func(pd *providerData, kind string) (runtime.Runtime, error)) map[string]func() (tfprotov6.ProviderServer, error) {
	d := deps{
		verifier: testVerifier(),
		now:      func() time.Time { return testNow },
		getenv:   func(string) string { return "" },
		runtimes: runtimes,
	}
	return map[string]func() (tfprotov6.ProviderServer, error){
		"antifailure": providerserver.NewProtocol6WithError(newWith("test", d)()),
	}
}

// environmentBlock is one preview environment resource: its label, name,
// attribute lines before the manifest (each ending in a newline; may be
// empty) and the manifest as a heredoc (indented by four spaces, no final
// newline). It starts with an empty line, to follow a provider block.
func environmentBlock(label, name, attrs, manifest string) string {
	return fmt.Sprintf(`
resource "antifailure_preview_environment" %q {
  name     = %q
%s  manifest = <<-EOT
%s
  EOT
}
`, label, name, attrs, manifest)
}

// localServiceManifest is the local runtime's manifest of app whose one web
// service is this test binary (see runLocalTestService), found later by
// marker and answering with greeting.
func localServiceManifest(t *testing.T, app, marker, greeting string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`    name: %s
    runtime:
      provider: local
    services:
      web:
        command: [%q, "-test.run=^$"]
        dir: %q
        port: 8080
        web: true
        health: /healthz
        env:
          AF_TEST_LOCAL_SERVICE: web
          AF_TEST_MARKER: %s
          GREETING: %s`, app, exe, filepath.Dir(exe), marker, greeting)
}

// kubeProviderBlock is the provider licensed for Kubernetes, reading the
// kubeconfig at path.
func kubeProviderBlock(path string) string {
	return fmt.Sprintf(`provider "antifailure" {
  license         = %q
  kubeconfig_path = %q
}
`, testLicense(license.FeatureMultiRuntime), path)
}

// The application is "tfshop" so that these tests' namespaces (af-tfshop-…)
// never mix with the runtime package's (af-shop-…) on a shared testenv.
var kubeManifest = testfixture.Indent(testfixture.Shop("tfshop", 2), "    ")

// kubeRequests counts the Kubernetes runtime's API requests in these tests.
type kubeRequests struct {
	mu sync.Mutex
	n  int
}

func (c *kubeRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (c *kubeRequests) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = 0
	return n
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// kubernetesTestProviders serves the provider with the Kubernetes runtime
// built from the provider's own kubeconfig_path / kubeconfig attributes, as
// a release build does, with a request counter on its transport.
func kubernetesTestProviders(cnt *kubeRequests) map[string]func() (tfprotov6.ProviderServer, error) {
	return runtimeTestProviders(func(pd *providerData, kind string) (runtime.Runtime, error) {
		if kind != manifest.ProviderKubernetes {
			return releaseRuntimes(pd, kind)
		}
		return kube.New(kube.Kubeconfig{Path: pd.kubeconfig.Path, Content: pd.kubeconfig.Content}, cnt.wrap,
			kube.Options{GatewayImage: pd.k8s.GatewayImage, ProbeTimeout: 30 * time.Second, IngressClassName: "nginx"})
	})
}

// kubeTestenv joins or starts the test API servers and runs a kubelet
// stand-in on eu-prod for the test.
func kubeTestenv(t *testing.T) (*testenv.Env, *standin.StandIn) {
	t.Helper()
	te, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(te.Stop)
	for _, kctx := range []string{testenv.EU, testenv.US} {
		if _, err := testenv.EnsureClusterDNS(context.Background(), te.Client(t, kctx)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := standin.New(te.Client(t, testenv.EU), standin.Options{Interval: 50 * time.Millisecond, NamespacePrefix: "af-tfshop-"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return te, s
}

// nothingLeftOn is a CheckDestroy: none of these tests' objects (afObjects)
// remain on the cluster c.
func nothingLeftOn(c k8s.Interface) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if left, _ := afObjects(c); len(left) != 0 {
			return fmt.Errorf("left after destroy: %v", left)
		}
		return nil
	}
}

// importBlockNoopStep imports addr by id through an import block under
// config, and wants a no-op import: nothing to change.
func importBlockNoopStep(config, addr, id string) resource.TestStep {
	return resource.TestStep{
		Config:          config,
		ResourceName:    addr,
		ImportState:     true,
		ImportStateKind: resource.ImportBlockWithID,
		ImportStateId:   id,
		ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
			plancheck.ExpectEmptyPlan(),
		}},
	}
}

// importBackStep is terraform import of addr by id under config, kept in
// the state (after a removed block forgot it).
func importBackStep(config, addr, id string) resource.TestStep {
	return resource.TestStep{
		Config:             config,
		ResourceName:       addr,
		ImportState:        true,
		ImportStatePersist: true,
		ImportStateId:      id,
	}
}

// asVersion0 rewrites resource name of the test's state (under
// TF_ACC_TEMP_DIR tmp) as version 0 recorded it: schema_version 0 and the
// attributes edit changes, so that the next terraform command upgrades a
// real state file.
func asVersion0(t *testing.T, tmp, name string, edit func(attrs map[string]any)) {
	t.Helper()
	states, _ := filepath.Glob(filepath.Join(tmp, "*", "*", "terraform.tfstate"))
	if len(states) == 0 {
		states, _ = filepath.Glob(filepath.Join(tmp, "*", "terraform.tfstate"))
	}
	if len(states) != 1 {
		t.Fatalf("want one state file under %s, found %v", tmp, states)
	}
	b, err := os.ReadFile(states[0])
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range st["resources"].([]any) {
		if res := r.(map[string]any); res["name"] == name {
			inst := res["instances"].([]any)[0].(map[string]any)
			inst["schema_version"] = 0
			edit(inst["attributes"].(map[string]any))
			found = true
		}
	}
	if !found {
		t.Fatalf("no resource %q in %s", name, states[0])
	}
	if b, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(states[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
}
