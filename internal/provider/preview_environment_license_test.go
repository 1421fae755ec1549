//go:build linux

package provider

import (
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// TestAccPreviewEnvironment_local_licenseProblemsNeverBlockDestroy: an
// environment created under a valid license is refreshed and planned (no
// changes) with the license expired, tampered with or removed, and
// destroyed with it expired, in a configuration that also reads an
// antifailure_placement data source (destroy reads data sources too). A
// license problem still refuses creating an environment and a placement
// that needs an enterprise feature, naming the problem.
func TestAccPreviewEnvironment_local_licenseProblemsNeverBlockDestroy(t *testing.T) {
	marker := testMarker()
	rt := localTestRuntime(t)
	valid := testLicense(license.FeatureMultiRuntime)
	expired := license.Sign(testLicenseKey, license.Claims{KeyID: "test", Organization: "acme", Features: []string{license.FeatureMultiRuntime},
		NotBefore: testNow.Add(-48 * time.Hour), Expiry: testNow.Add(-time.Hour)})
	tampered := valid[:10] + "x" + valid[11:]
	if tampered == valid {
		tampered = valid[:10] + "y" + valid[11:]
	}
	providerWith := func(token string) string {
		if token == "" {
			return `provider "antifailure" {}`
		}
		return fmt.Sprintf("provider \"antifailure\" {\n  license = %q\n}", token)
	}
	const placementDS = `
data "antifailure_placement" "this" {
  manifest = "name: shop\nruntime: {provider: local}\nservices: {web: {command: [x], port: 8080, web: true}}\n"
}
`
	a := localEnv{"a", "shop", "pr-1", "licensed"}
	config := func(token string, extra string, more ...localEnv) string {
		return localEnvironmentsConfig(t, providerWith(token), marker, append([]localEnv{a}, more...), placementDS+extra)
	}
	dirA := rt.StateDir(runtime.Key{App: "shop", Env: "pr-1"})
	dirC := rt.StateDir(runtime.Key{App: "shop", Env: "pr-2"})
	const addrA = "antifailure_preview_environment.a"

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: localTestProviders(rt),
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(dirA); !os.IsNotExist(err) {
				return fmt.Errorf("the destroy left %s (%w)", dirA, err)
			}
			if pids := servicePids(marker); len(pids) > 0 {
				return fmt.Errorf("services still run: %v", pids)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config(valid, ""),
				Check:  resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(addrA, "placement.edition", "enterprise"), servesGreeting(addrA, a.greeting)),
			},
			// Refresh and plan: no changes, whatever is wrong with the license.
			{Config: config(expired, ""), PlanOnly: true},
			{Config: config(tampered, ""), PlanOnly: true},
			{Config: config("", ""), PlanOnly: true},
			{ // Creating is refused...
				Config:      config(expired, "", localEnv{"c", "shop", "pr-2", "new"}),
				ExpectError: regexp.MustCompile(`AF-LIC-004 The license for acme expired`),
				Check: func(*terraform.State) error {
					if _, err := os.Stat(dirC); !os.IsNotExist(err) {
						return fmt.Errorf("a refused create left %s", dirC)
					}
					return nil
				},
			},
			{ // ...and so is a placement among several targets.
				Config: config(expired, `
data "antifailure_placement" "multi" {
  manifest = <<-EOT
`+seedManifest+`
  EOT
}
`),
				ExpectError: regexp.MustCompile(`(?s)AF-LIC-004 The license for acme expired.*AF-LIC-010`),
			},
			{ // The environment still runs, and destroy removes it.
				Config:  config(expired, ""),
				Destroy: true,
			},
		},
	})
	if _, err := os.Stat(dirC); !os.IsNotExist(err) {
		t.Errorf("the refused create left %s (%v)", dirC, err)
	}
}
