//go:build linux

package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

const upgradeManifest = "name: shop-pr\nruntime: {provider: kubernetes}\nservices: {web: {image: x, port: 8080, web: true}}\n"

// TestUpgradeIDV0: version 0 IDs move to the two-part key, taken from what
// the state recorded apart (manifest and name), never split by guessing.
func TestUpgradeIDV0(t *testing.T) {
	cases := []struct {
		name          string
		in            map[string]any
		id, ns, env   string
		notUpgradable bool
	}{
		{name: "kubernetes", in: map[string]any{"id": "eu-prod/af-shop-pr-1", "runtime": "kubernetes", "manifest": upgradeManifest, "name": "1", "namespace": "af-shop-pr-1"},
			id: "eu-prod/shop-pr/1", ns: "af-shop-pr-1", env: "1"},
		{name: "kubernetes, context with slashes", in: map[string]any{"id": "arn:aws:eks:eu-west-1:1:cluster/x/af-shop-pr-1", "runtime": "kubernetes", "manifest": upgradeManifest, "name": "1", "namespace": "af-shop-pr-1"},
			id: "arn:aws:eks:eu-west-1:1:cluster/x/shop-pr/1", ns: "af-shop-pr-1", env: "1"},
		{name: "local", in: map[string]any{"id": "shop-pr-1", "runtime": "local", "manifest": "name: shop\nruntime: {provider: local}\n", "name": "pr-1", "namespace": "shop-pr-1"},
			id: "shop/pr-1", ns: "shop/pr-1", env: "pr-1"},
		{name: "imported by version 0, one way to split", in: map[string]any{"id": "eu-prod/af-shop-dev", "runtime": "kubernetes", "namespace": "af-shop-dev"},
			id: "eu-prod/shop/dev", ns: "af-shop-dev", env: "dev"},
		{name: "imported by version 0 on local, one way to split", in: map[string]any{"id": "shop-dev"},
			id: "shop/dev", ns: "shop/dev", env: "dev"},
		{name: "imported by version 0, two ways to split", in: map[string]any{"id": "eu-prod/af-shop-pr-1", "runtime": "kubernetes", "namespace": "af-shop-pr-1"}, notUpgradable: true},
		{name: "imported by version 0 on local, two ways to split", in: map[string]any{"id": "shop-pr-1", "runtime": "local"}, notUpgradable: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := upgradeIDV0(c.in)
			if c.notUpgradable {
				if code(err) != stateNotUpgradable {
					t.Fatalf("err = %v, want %s", err, stateNotUpgradable)
				}
				return
			}
			if err != nil || c.in["id"] != c.id || c.in["namespace"] != c.ns || c.in["name"] != c.env {
				t.Fatalf("got %v (%v), want id %s namespace %s name %s", c.in, err, c.id, c.ns, c.env)
			}
		})
	}
}

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

func code(err error) refusal.Code {
	if rs := refusal.All(err); err != nil && len(rs) > 0 {
		return rs[0].Code
	}
	return ""
}

// TestImportedImages: import reads an override back only where a service
// runs another image than its manifest names; nothing is made up for a
// service not running, for local (no images) or an unreadable manifest.
func TestImportedImages(t *testing.T) {
	src := "name: shop\nruntime: {provider: kubernetes}\nservices:\n  web: {image: shop:1, port: 8080, web: true}\n  worker: {image: shop:1}\n  cron: {image: shop:1}\n"
	st := runtime.State{Source: src, Services: map[string]runtime.ServiceState{
		"web": {Image: "shop:pr-42", Running: true}, "worker": {Image: "shop:1", Running: true},
	}}
	if got := importedImages(st); len(got) != 1 || got["web"] != "shop:pr-42" {
		t.Fatalf("importedImages = %v, want only web = shop:pr-42", got)
	}
	local := runtime.State{Source: "name: shop\nruntime: {provider: local}\nservices: {web: {command: [./x], port: 8080, web: true}}\n",
		Services: map[string]runtime.ServiceState{"web": {Running: true}}}
	if _, err := manifest.Parse([]byte(local.Source)); err != nil {
		t.Fatal(err)
	}
	if got := importedImages(local); len(got) != 0 {
		t.Fatalf("local: importedImages = %v, want none", got)
	}
	if got := importedImages(runtime.State{Source: "{", Services: st.Services}); got != nil {
		t.Fatalf("unreadable manifest: importedImages = %v, want nil", got)
	}
}
