package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// A kubeconfig whose current-context is the laptop's: it must never decide.
const laptopKubeconfig = `apiVersion: v1
kind: Config
current-context: laptop
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: laptop
  context: {cluster: c, user: u}
- name: eu-prod
  context: {cluster: c, user: u}
`

func TestAccKubernetesContext_neverTheCurrentContext(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".kube", "config"), []byte(laptopKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	resourceConfig := func(provider string) string {
		return provider + `
resource "antifailure_preview_environment" "x" {
  name     = "pr-1"
  manifest = "name: shop\nruntime:\n  provider: kubernetes\nservices:\n  web:\n    image: nginx:1.27\n    port: 80\n    web: true\n"
}
`
	}
	const addr = "antifailure_preview_environment.x"
	resource.UnitTest(t, resource.TestCase{
		// HOME is the test's: "~/.kube/config" is expanded against it.
		ProtoV6ProviderFactories: testProviders(map[string]string{"HOME": dir}),
		Steps: []resource.TestStep{
			{
				// The kubeconfig has a current-context; without
				// kubernetes.context the plan is still refused.
				Config:      resourceConfig(`provider "antifailure" { kubeconfig_path = "~/.kube/config" }`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`AF-K8S-030`),
			},
			{
				Config: resourceConfig(`provider "antifailure" {
  kubeconfig_path = "~/.kube/config"
  kubernetes      = { context = "eu-prod" }
}`),
				// The plan is checked; the apply then fails against the
				// kubeconfig's unreachable server (no cluster here).
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("kubeconfig_context"), knownvalue.StringExact("eu-prod")),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact("eu-prod/shop/pr-1")),
				}},
				ExpectError: regexp.MustCompile(`AF-K8S-004`),
			},
			{
				// A context the kubeconfig lacks is refused, not replaced by
				// the current-context.
				Config: resourceConfig(`provider "antifailure" {
  kubeconfig_path = "~/.kube/config"
  kubernetes      = { context = "us-prod" }
}`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)AF-K8S-001 kubeconfig context "us-prod" does not exist.*eu-prod, laptop`),
			},
		},
	})
}

func TestExpandHome(t *testing.T) {
	env := func(k string) string { return map[string]string{"HOME": "/home/u"}[k] }
	sep := string(os.PathListSeparator)
	for in, want := range map[string]string{
		"~/.kube/config":          "/home/u/.kube/config",
		"~":                       "/home/u",
		"/etc/kube" + sep + "~/b": "/etc/kube" + sep + "/home/u/b",
		"~other/config":           "~other/config",
		"/srv/~/config":           "/srv/~/config",
		"":                        "",
	} {
		if got := expandHome(in, env); got != want {
			t.Errorf("expandHome(%q) = %q, want %q", in, got, want)
		}
	}
	// Through the provider's reading: "~" reaches an existing file.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kc"), []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := readKubeconfigSource(providerModel{KubeconfigPath: types.StringValue("~/kc"), Kubeconfig: types.StringNull()},
		func(k string) string { return map[string]string{"HOME": dir}[k] })
	if err != nil || src.Path != filepath.Join(dir, "kc") {
		t.Fatalf("~/kc: %+v, %v", src, err)
	}
}
