package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
)

// kubeImagesConfig is one environment of kubeManifest named env, with
// images as its images attribute (none when empty) and extra appended.
func kubeImagesConfig(kubeconfig, env string, images map[string]string, extra string) string {
	var attr string
	if len(images) > 0 {
		var b strings.Builder
		b.WriteString("  images = {\n")
		for k, v := range images {
			fmt.Fprintf(&b, "    %s = %q\n", k, v)
		}
		attr = b.String() + "  }\n"
	}
	return kubeProviderBlock(kubeconfig) + environmentBlock("this", env, attr, kubeManifest) + extra
}

// TestAccPreviewEnvironment_kubernetes_importKeepsImages_KubeletStandIn,
// through terraform against the real API servers: an environment whose
// configuration overrides web's image is imported, by an import block and by
// terraform import, and the next plan is empty, because import reads the
// override back from the Deployments. The control: the same import under a
// configuration asking for another image plans an update in place, not a
// replacement and not an empty plan.
func TestAccPreviewEnvironment_kubernetes_importKeepsImages_KubeletStandIn(t *testing.T) {
	te, _ := kubeTestenv(t)
	eu := te.Client(t, testenv.EU)
	const addr, id = "antifailure_preview_environment.this", "eu-prod/tfshop/img-1"
	pr42 := map[string]string{"web": "ghcr.io/acme/shop:pr-42"}
	config := kubeImagesConfig(te.Kubeconfig, "img-1", pr42, "")

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: kubernetesTestProviders(&kubeRequests{}),
		CheckDestroy:             nothingLeftOn(eu),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", id),
					resource.TestCheckResourceAttr(addr, "services.web.image", "ghcr.io/acme/shop:pr-42"),
					resource.TestCheckResourceAttr(addr, "services.worker.image", "ghcr.io/acme/shop:1.4.2"),
					func(*terraform.State) error {
						d, err := eu.AppsV1().Deployments("af-tfshop-img-1").Get(context.Background(), "web", metav1.GetOptions{})
						if err != nil {
							return err
						}
						if got := d.Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/acme/shop:pr-42" {
							return fmt.Errorf("web's Deployment runs %s", got)
						}
						return nil
					},
				),
			},
			// An import block: nothing to change.
			importBlockNoopStep(config, addr, id),
			{ // The control: another image in the configuration is an
				// update in place of images and services, never a replacement.
				Config:             kubeImagesConfig(te.Kubeconfig, "img-1", map[string]string{"web": "ghcr.io/acme/shop:pr-43"}, ""),
				ResourceName:       addr,
				ImportState:        true,
				ImportStateKind:    resource.ImportBlockWithID,
				ImportStateId:      id,
				ExpectNonEmptyPlan: true,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("images"), knownvalue.MapExact(map[string]knownvalue.Check{
						"web": knownvalue.StringExact("ghcr.io/acme/shop:pr-43")})),
				}},
			},
			{ // terraform import records what the environment has: images
				// and the manifest as the configuration holds them.
				Config:                  config,
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           id,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"queue_position"},
			},
			{ // Forget it without destroying it...
				Config: kubeProviderBlock(te.Kubeconfig) + `
removed {
  from = antifailure_preview_environment.this
  lifecycle {
    destroy = false
  }
}
`,
				Check: func(*terraform.State) error {
					_, err := eu.CoreV1().Namespaces().Get(context.Background(), "af-tfshop-img-1", metav1.GetOptions{})
					return err
				},
			},
			// ...terraform import it back...
			importBackStep(config, addr, id),
			{ // ...and the plan is empty.
				Config:   config,
				PlanOnly: true,
			},
		},
	})
}

// TestAccPreviewEnvironment_kubernetes_stateUpgradeFromV0_realState_KubeletStandIn,
// through terraform against the real API servers: two environments recorded
// by version 0 (schema_version 0, ids <context>/af-<app>-<env>) are read
// through the upgrader and planned with no changes, and the next apply
// records the new IDs: a: eu-prod/af-tfshop-up-1, created by version 0
// (state holds manifest and name), becomes eu-prod/tfshop/up-1; b:
// eu-prod/af-tfshop-u1, imported by version 0 (no manifest, no name, no
// placement), splits one way only and becomes eu-prod/tfshop/u1, its
// manifest read back from the namespace. Both are found in the namespaces
// they live in. The control: a without the manifest and name that say where
// app ends and env begins (tfshop/up-1 or tfshop-up/1) is refused with
// AF-RUN-092, not guessed.
func TestAccPreviewEnvironment_kubernetes_stateUpgradeFromV0_realState_KubeletStandIn(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", tmp)
	te, _ := kubeTestenv(t)
	eu := te.Client(t, testenv.EU)
	const addrA, addrB = "antifailure_preview_environment.a", "antifailure_preview_environment.b"
	config := kubeEnvironmentsConfig(te.Kubeconfig, [][3]string{{"a", "tfshop", "up-1"}, {"b", "tfshop", "u1"}}, "")
	var manifestText string

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: kubernetesTestProviders(&kubeRequests{}),
		CheckDestroy:             nothingLeftOn(eu),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addrA, "id", "eu-prod/tfshop/up-1"),
					resource.TestCheckResourceAttr(addrB, "id", "eu-prod/tfshop/u1"),
					func(s *terraform.State) error {
						manifestText = s.RootModule().Resources[addrA].Primary.Attributes["manifest"]
						return nil
					},
				),
			},
			{ // The control.
				PreConfig: func() {
					asVersion0(t, tmp, "a", func(attrs map[string]any) {
						attrs["id"], attrs["manifest"], attrs["name"] = "eu-prod/af-tfshop-up-1", nil, nil
					})
				},
				Config:      config,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`AF-RUN-092`),
			},
			{ // Version 0 as it recorded a created and an imported
				// environment: terraform plan (which refreshes) upgrades,
				// reads and plans nothing to change; apply records the new
				// IDs. (A plan without refresh would update b: until a
				// refresh its state holds no manifest.)
				PreConfig: func() {
					asVersion0(t, tmp, "a", func(attrs map[string]any) {
						attrs["id"], attrs["manifest"], attrs["name"] = "eu-prod/af-tfshop-up-1", manifestText, "up-1"
					})
					asVersion0(t, tmp, "b", func(attrs map[string]any) {
						attrs["id"] = "eu-prod/af-tfshop-u1"
						for _, k := range []string{"manifest", "name", "target", "placement", "wait_for_rollout", "queue_position"} {
							attrs[k] = nil
						}
					})
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addrA, plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction(addrB, plancheck.ResourceActionNoop),
					plancheck.ExpectEmptyPlan(),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addrA, "id", "eu-prod/tfshop/up-1"),
					resource.TestCheckResourceAttr(addrA, "namespace", "af-tfshop-up-1"),
					resource.TestCheckResourceAttr(addrA, "services.web.running", "true"),
					resource.TestCheckResourceAttr(addrB, "id", "eu-prod/tfshop/u1"),
					resource.TestCheckResourceAttr(addrB, "name", "u1"),
					resource.TestCheckResourceAttr(addrB, "namespace", "af-tfshop-u1"),
					resource.TestCheckResourceAttr(addrB, "services.web.running", "true"),
				),
			},
		},
	})
}
