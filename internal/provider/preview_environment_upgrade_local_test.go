//go:build linux

package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// TestAccPreviewEnvironment_local_stateUpgradeFromV0_realState, through
// terraform: an environment recorded by version 0 (schema_version 0, id
// "shop-pr-1", its state directory at the flat <base>/shop-pr-1) is read
// through the upgrader as shop-pr/1, still found where it lives, planned
// with no changes; restored after a crash into this release's layout; and
// destroyed.
func TestAccPreviewEnvironment_local_stateUpgradeFromV0_realState(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", tmp)
	marker := testMarker()
	rt := localTestRuntime(t)
	config := localEnvironmentsConfig(t, `provider "antifailure" {}`, marker, []localEnv{{"b", "shop-pr", "1", "upgraded"}}, "")
	const addr = "antifailure_preview_environment.b"
	nested := rt.StateDir(runtime.Key{App: "shop-pr", Env: "1"})
	legacy := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(nested))), "shop-pr-1")

	toV0 := func() {
		asVersion0(t, tmp, "b", func(attrs map[string]any) { attrs["id"], attrs["namespace"] = "shop-pr-1", "shop-pr-1" })
		// Where version 0 kept it. The supervisor works relative to its
		// directory, so it keeps running across the rename.
		if err := os.Rename(nested, legacy); err != nil {
			t.Fatal(err)
		}
	}

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: localTestProviders(rt),
		CheckDestroy: func(*terraform.State) error {
			for _, d := range []string{nested, legacy} {
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					return fmt.Errorf("%s still exists (%w)", d, err)
				}
			}
			if pids := servicePids(marker); len(pids) > 0 {
				return fmt.Errorf("services still run: %v", pids)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{Config: config, Check: resource.TestCheckResourceAttr(addr, "id", "shop-pr/1")},
			{
				PreConfig: toV0,
				Config:    config,
				PlanOnly:  true, // empty: upgraded, refreshed, nothing to change
			},
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "shop-pr/1"),
					resource.TestCheckResourceAttr(addr, "namespace", "shop-pr/1"),
					resource.TestCheckResourceAttr(addr, "services.web.running", "true"),
					servesGreeting(addr, "upgraded"),
				),
			},
			{ // Its supervisor dies: apply starts it afresh, now where this
				// release keeps environments, and nothing is left at the old
				// place.
				PreConfig: func() { killEnvironment(t, legacy, "supervisor.json", "helper.json") },
				Config:    config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "services.web.running", "true"),
					servesGreeting(addr, "upgraded"),
					func(*terraform.State) error {
						if _, err := os.Stat(filepath.Join(nested, "state.json")); err != nil {
							return fmt.Errorf("not restarted in %s: %w", nested, err)
						}
						if _, err := os.Stat(legacy); !os.IsNotExist(err) {
							return fmt.Errorf("%s still exists (%w)", legacy, err)
						}
						return nil
					},
				),
			},
		},
	})
}
