package runtime

import (
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
)

func TestDesiredServices(t *testing.T) {
	m := &manifest.Manifest{Services: []manifest.Service{{Name: "web", Image: "shop:1"}, {Name: "worker", Image: "shop:1"}}}
	k8s := DesiredServices(Environment{Manifest: m, Placement: placement.Decision{Runtime: manifest.ProviderKubernetes}, Images: map[string]string{"web": "shop:pr-7"}})
	if w := k8s["web"]; w.Image != "shop:pr-7" || w.Replicas != 1 || !w.Running || k8s["worker"].Image != "shop:1" {
		t.Fatalf("kubernetes desired = %+v", k8s)
	}
	local := DesiredServices(Environment{Manifest: m, Placement: placement.Decision{Runtime: manifest.ProviderLocal}})
	if local["web"].Image != "" || !local["web"].Running || len(local) != 2 {
		t.Fatalf("local desired = %+v", local)
	}
}

// TestKey: the two colliding pairs of the issue get different IDs, and
// every ID reads back to the key it came from, whatever the context holds.
func TestKey(t *testing.T) {
	a, b := Key{App: "shop", Env: "pr-1"}, Key{App: "shop-pr", Env: "1"}
	if a.LocalID() == b.LocalID() || a.KubernetesID("eu-prod") == b.KubernetesID("eu-prod") {
		t.Fatalf("colliding IDs: %s %s", a.LocalID(), b.LocalID())
	}
	for _, k := range []Key{a, b} {
		got, err := ParseLocalID(k.LocalID())
		if err != nil || got != k {
			t.Errorf("ParseLocalID(%s) = %v, %v", k.LocalID(), got, err)
		}
		for _, kctx := range []string{"eu-prod", "arn:aws:eks:eu-west-1:1:cluster/x", "a/b/c"} {
			c, got, err := ParseKubernetesID(k.KubernetesID(kctx))
			if err != nil || got != k || c != kctx {
				t.Errorf("ParseKubernetesID(%s) = %q %v, %v", k.KubernetesID(kctx), c, got, err)
			}
		}
	}
	for _, bad := range []string{"", "shop-pr-1", "shop/", "/pr-1", "Shop/pr-1", "shop/pr_1", "a/b/c"} {
		if _, err := ParseLocalID(bad); err == nil {
			t.Errorf("ParseLocalID(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "eu-prod/af-shop-pr-1", "shop/pr-1", "/shop/pr-1", "eu-prod/shop/", "eu-prod/Shop/pr-1"} {
		if _, _, err := ParseKubernetesID(bad); err == nil {
			t.Errorf("ParseKubernetesID(%q) accepted", bad)
		}
	}
}
