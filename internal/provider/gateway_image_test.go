package provider

import (
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
)

func TestDefaultGatewayImageIsTheVersionTag(t *testing.T) {
	for version, want := range map[string]string{
		"0.1.0":          "ghcr.io/antifailure/egress-gateway:0.1.0",
		"0.1.1-snapshot": "ghcr.io/antifailure/egress-gateway:0.1.1-snapshot",
		"dev":            "", // a plain go build: no image is tagged for it
		"":               "",
		"1.0.0+build.7":  "", // '+' cannot be in an OCI tag
		"-rc":            "",
	} {
		if got := DefaultGatewayImage(version); got != want {
			t.Errorf("DefaultGatewayImage(%q) = %q, want %q", version, got, want)
		}
	}
}

// versionedProviders serves the provider as a build of the given version
// with the release runtimes and an empty environment.
func versionedProviders(version string) map[string]func() (tfprotov6.ProviderServer, error) {
	d := deps{verifier: testVerifier(), now: func() time.Time { return testNow }, getenv: func(string) string { return "" }, runtimes: releaseRuntimes}
	return map[string]func() (tfprotov6.ProviderServer, error){
		"antifailure": providerserver.NewProtocol6WithError(newWith(version, d)()),
	}
}

// gatewayConfig is a plan of a Kubernetes environment with no kubeconfig:
// past the gateway image, the next refusal is AF-K8S-002, which shows that
// the gateway check passed without any cluster.
func gatewayConfig(kubernetesBlock string) string {
	return `provider "antifailure" {
  license = "` + testLicense(license.FeatureMultiRuntime) + `"
` + kubernetesBlock + `
}

resource "antifailure_preview_environment" "this" {
  name     = "pr-9"
  manifest = <<-EOT
` + kubeManifest + `
  EOT
}
`
}

// TestAccPreviewEnvironment_devBuildRefusesWithoutGatewayImage: a dev build
// has no image to default to and refuses at plan with AF-CFG-020; setting
// gateway_image, or a release version's default, gets past it.
func TestAccPreviewEnvironment_devBuildRefusesWithoutGatewayImage(t *testing.T) {
	step := func(version, block string, want *regexp.Regexp) resource.TestCase {
		return resource.TestCase{
			ProtoV6ProviderFactories: versionedProviders(version),
			Steps:                    []resource.TestStep{{Config: gatewayConfig(block), PlanOnly: true, ExpectNonEmptyPlan: true, ExpectError: want}},
		}
	}
	t.Run("dev", func(t *testing.T) {
		resource.UnitTest(t, step("dev", "", regexp.MustCompile(`(?s)AF-CFG-020 No egress gateway image is set.*egress-gateway:<its version>.*Next: Set the provider's kubernetes.gateway_image.*Nothing was created\.`)))
	})
	// Negative controls: the same plan with an image, or from a release
	// build, is not refused for the gateway (AF-K8S-002: no kubeconfig).
	noKubeconfig := regexp.MustCompile(`AF-K8S-002`)
	t.Run("dev with gateway_image", func(t *testing.T) {
		resource.UnitTest(t, step("dev", `  kubernetes = { gateway_image = "registry.example/mirror/egress-gateway:0.1.0" }`, noKubeconfig))
	})
	t.Run("release default", func(t *testing.T) {
		resource.UnitTest(t, step("0.1.0", "", noKubeconfig))
	})
}
