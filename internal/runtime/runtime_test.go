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
