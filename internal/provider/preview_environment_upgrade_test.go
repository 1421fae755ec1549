package provider

import (
	"testing"

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
