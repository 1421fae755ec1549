package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/testfixture"
)

// seedManifest is the source text's two-target manifest.
var seedManifest = testfixture.Shop("shop", 1)

func placementConfig(providerBlock, manifest string) string {
	return providerBlock + `
data "antifailure_placement" "this" {
  manifest = <<-EOT
` + manifest + `
  EOT
}
`
}

var placementAddr = "data.antifailure_placement.this"

func TestAccPlacement_seedPlacedInFrankfurtWithLicense(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{{
			Config: placementConfig(`provider "antifailure" {
  license = "`+testLicense(license.FeatureMultiRuntime)+`"
  policy = { allowed_regions = ["eu-west-1"] }
}`, seedManifest),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("runtime"), knownvalue.StringExact("kubernetes")),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("edition"), knownvalue.StringExact("enterprise")),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("target"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"name":               knownvalue.StringExact("frankfurt"),
					"kubeconfig_context": knownvalue.StringExact("eu-prod"),
					"domain":             knownvalue.StringExact("eu.preview.example.com"),
					"tags":               knownvalue.MapExact(map[string]knownvalue.Check{"region": knownvalue.StringExact("eu-west-1")}),
				})),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("domain"), knownvalue.StringExact("eu.preview.example.com")),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("candidates"), knownvalue.ListExact([]knownvalue.Check{
					knownvalue.ObjectPartial(map[string]knownvalue.Check{
						"name": knownvalue.StringExact("frankfurt"), "matched": knownvalue.Bool(true), "placed": knownvalue.Bool(true),
					}),
					knownvalue.ObjectPartial(map[string]knownvalue.Check{
						"name": knownvalue.StringExact("virginia"), "matched": knownvalue.Bool(false), "placed": knownvalue.Bool(false),
						"reasons": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("missed region=eu-west-1: the target has region=us-east-1")}),
					}),
				})),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("residency"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"verdict": knownvalue.StringExact("allowed"),
					"region":  knownvalue.StringExact("eu-west-1"),
					"reason":  knownvalue.StringRegexp(regexp.MustCompile(`eu-west-1 is in allowed_regions`)),
				})),
			},
		}},
	})
}

func TestAccPlacement_refusalsAtPlan(t *testing.T) {
	enterprise := `provider "antifailure" {
  license = "` + testLicense(license.FeatureMultiRuntime) + `"
}`
	cases := []struct {
		name, provider, manifest string
		want                     *regexp.Regexp
	}{
		{"unsatisfiable requirement", enterprise, strings.Replace(seedManifest, "region: eu-west-1", "region: eu-west-2", 1),
			regexp.MustCompile(`(?s)AF-SCH-001 No runtime satisfies the placement requirement\s+region=eu-west-2\..*Next: Declare a target under\s+runtime.targets carrying that tag, or relax\s+runtime.requires. Nothing was\s+created.`)},
		{"two targets without a license", `provider "antifailure" {}`, seedManifest,
			regexp.MustCompile(`(?s)AF-LIC-010 2 placement targets need an enterprise\s+license with the multi_runtime feature.*Nothing was created`)},
		{"two targets with a license lacking the feature", `provider "antifailure" {
  license = "` + testLicense() + `"
}`, seedManifest, regexp.MustCompile(`AF-LIC-010`)},
		{"unknown runtime", `provider "antifailure" {}`, regexp.MustCompile(`provider: kubernetes`).ReplaceAllString(seedManifest, "provider: nomad"),
			regexp.MustCompile(`(?s)AF-LIC-011 runtime.provider "nomad" is not a runtime this\s+build has.*community edition has: local, kubernetes`)},
		{"misspelled key", `provider "antifailure" {}`, regexp.MustCompile(`domain: preview`).ReplaceAllString(seedManifest, "domian: preview"),
			regexp.MustCompile(`AF-MAN-002 Unknown key "domian" in runtime at line 4:3`)},
		{"refused region", `provider "antifailure" {
  license = "` + testLicense(license.FeatureMultiRuntime) + `"
  policy = { allowed_regions = ["us-east-1"] }
}`, seedManifest, regexp.MustCompile(`(?s)AF-POL-001 Residency policy refuses region eu-west-1 for\s+target "frankfurt".*Nothing was created`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders(nil),
				Steps: []resource.TestStep{{
					Config:             placementConfig(c.provider, c.manifest),
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
					ExpectError:        c.want,
				}},
			})
		})
	}
}

const singleTargetNoRegion = `name: shop
runtime:
  provider: local
  targets:
    - name: laptop
      domain: shop.localhost
services:
  web:
    command: ["./shop"]
    port: 8080
    web: true
`

func TestAccPlacement_residencyNotEvaluableWarnsAndCommunityTakesOneTarget(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(map[string]string{"AF_POLICY_ALLOWED_REGIONS": "eu-west-1,eu-central-1"}),
		Steps: []resource.TestStep{{
			Config: placementConfig(`provider "antifailure" {}`, singleTargetNoRegion),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("edition"), knownvalue.StringExact("community")),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("target").AtMapKey("name"), knownvalue.StringExact("laptop")),
				statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("residency"), knownvalue.ObjectExact(map[string]knownvalue.Check{
					"verdict": knownvalue.StringExact("not_evaluable"),
					"region":  knownvalue.StringExact(""),
					"reason":  knownvalue.StringRegexp(regexp.MustCompile(`target "laptop" carries no region tag`)),
				})),
			},
		}},
	})
}

// With no targets the Kubernetes placement is the runtime itself, on the
// provider's kubernetes.context (or AF_K8S_CONTEXT); with neither it is
// refused at plan, naming both ways out.
func TestAccPlacement_noTargetsIsTheRuntimeItself(t *testing.T) {
	m := `name: shop
runtime:
  provider: kubernetes
  domain: preview.example.com
`
	placed := func(context string) []statecheck.StateCheck {
		return []statecheck.StateCheck{
			statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("target").AtMapKey("name"), knownvalue.StringExact("kubernetes")),
			statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("target").AtMapKey("kubeconfig_context"), knownvalue.StringExact(context)),
			statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("domain"), knownvalue.StringExact("preview.example.com")),
			statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("candidates"), knownvalue.ListSizeExact(0)),
			statecheck.ExpectKnownValue(placementAddr, tfjsonpath.New("residency").AtMapKey("verdict"), knownvalue.StringExact("no_policy")),
		}
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{
			{
				Config:      placementConfig(`provider "antifailure" {}`, m),
				ExpectError: regexp.MustCompile(`(?s)AF-K8S-030 The manifest declares no targets and the provider's\s+kubernetes.context is not set.*current-context is never used.*Next: Set the provider's kubernetes.context \(or AF_K8S_CONTEXT\).*or\s+declare one target`),
			},
			{
				Config:            placementConfig(`provider "antifailure" { kubernetes = { context = "eu-prod" } }`, m),
				ConfigStateChecks: placed("eu-prod"),
			},
		},
	})
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(map[string]string{"AF_K8S_CONTEXT": "from-env"}),
		Steps: []resource.TestStep{
			{Config: placementConfig(`provider "antifailure" {}`, m), ConfigStateChecks: placed("from-env")},
			// The attribute wins over the environment.
			{Config: placementConfig(`provider "antifailure" { kubernetes = { context = "eu-prod" } }`, m), ConfigStateChecks: placed("eu-prod")},
		},
	})
}

func TestAccLicense_refusedTokensNameTheCheck(t *testing.T) {
	expired := license.Sign(testLicenseKey, license.Claims{KeyID: "test", Organization: "acme",
		NotBefore: testNow.Add(-48 * 3600e9), Expiry: testNow.Add(-3600e9)})
	for name, c := range map[string]struct {
		token string
		want  string
	}{
		"expired":  {expired, `AF-LIC-004 The license for acme expired`},
		"tampered": {testLicense()[:10] + "x" + testLicense()[11:], `AF-LIC-00[12]`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders(map[string]string{"AF_LICENSE": c.token}),
				Steps: []resource.TestStep{{
					Config:      `data "antifailure_license" "this" {}`,
					ExpectError: regexp.MustCompile(c.want),
				}},
			})
		})
	}
}

func TestAccLicense_exposesEditionNeverTheToken(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(map[string]string{"AF_LICENSE": testLicense(license.FeatureMultiRuntime)}),
		Steps: []resource.TestStep{{
			Config: `data "antifailure_license" "this" {}`,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("data.antifailure_license.this", tfjsonpath.New("edition"), knownvalue.StringExact("enterprise")),
				statecheck.ExpectKnownValue("data.antifailure_license.this", tfjsonpath.New("organization"), knownvalue.StringExact("acme")),
				statecheck.ExpectKnownValue("data.antifailure_license.this", tfjsonpath.New("features"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("multi_runtime")})),
				statecheck.ExpectKnownValue("data.antifailure_license.this", tfjsonpath.New("expires_at"), knownvalue.StringExact("2026-12-30T12:00:00Z")),
			},
		}},
	})
}
