package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
)

func environmentConfig(providerBlock, manifest, extra string) string {
	return providerBlock + `
resource "antifailure_preview_environment" "this" {
  name     = "pr-1"
  manifest = <<-EOT
` + manifest + `
  EOT
` + extra + `
}
`
}

// Refusals the manifest decides stop terraform plan, before any runtime is
// asked to do anything.
func TestAccPreviewEnvironment_manifestRefusalsAtPlan(t *testing.T) {
	enterprise := `provider "antifailure" {
  license = "` + testLicense(license.FeatureMultiRuntime) + `"
}`
	community := `provider "antifailure" {}`
	cases := []struct {
		name, provider, manifest, extra string
		want                            *regexp.Regexp
	}{
		{"unsatisfiable requirement", enterprise, strings.Replace(seedManifest, "region: eu-west-1", "region: eu-west-2", 1), "",
			regexp.MustCompile(`AF-SCH-001 No runtime satisfies the placement requirement\s+region=eu-west-2\.`)},
		{"two targets in the community edition", community, seedManifest, "", regexp.MustCompile(`AF-LIC-010 .*multi_runtime`)},
		{"unknown runtime", community, strings.Replace(seedManifest, "provider: kubernetes", "provider: nomad", 1), "",
			regexp.MustCompile(`AF-LIC-011 .*nomad`)},
		{"bad manifest", community, "name: shop\nruntime: {provider: local}\nservices: {web: {command: [x], web: true}}\n", "",
			regexp.MustCompile(`AF-MAN-007 Service "web" is web but has no port at line 3:`)},
		{"image override for a service the manifest does not have", community, singleTargetNoRegion, `  images = { api = "shop:pr-7" }`,
			regexp.MustCompile(`AF-CFG-001 images names "api", which is not a service in the\s+manifest`)},
		{"refused region", `provider "antifailure" {
  license = "` + testLicense(license.FeatureMultiRuntime) + `"
  policy  = { allowed_regions = ["us-east-1"] }
}`, seedManifest, "", regexp.MustCompile(`AF-POL-001`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders(nil),
				Steps: []resource.TestStep{{
					Config:             environmentConfig(c.provider, c.manifest, c.extra),
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
					ExpectError:        c.want,
				}},
			})
		})
	}
}

func TestAccPreviewEnvironment_nameMustBeADNSLabel(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{{
			Config: `provider "antifailure" {}
resource "antifailure_preview_environment" "this" {
  name     = "PR_1"
  manifest = "name: shop\nruntime: {provider: local}\n"
}`,
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)AF-CFG-005 name "PR_1" is not a DNS label.*name     = "PR_1"`),
		}},
	})
}
