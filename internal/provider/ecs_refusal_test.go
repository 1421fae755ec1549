package provider

import (
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/ecs"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// refuseECS computes the ecs refusal for the provider's network: the
// provider's ecs block over the variables.
func TestRefuseECSUsesTheProvidersNetwork(t *testing.T) {
	m, err := manifest.Parse([]byte(ecsManifest))
	if err != nil {
		t.Fatal(err)
	}
	unset := &providerData{getenv: func(string) string { return "" }}
	r := unset.refuseECS(m)
	if r.Code != ecs.RuntimeRefused || !strings.Contains(r.Body(), "placeholder network") || !strings.Contains(r.Summary, "1 open (task-metadata)") {
		t.Fatalf("%s", r.Error())
	}

	env := &providerData{getenv: func(k string) string { return ecsNetworkEnv[k] }}
	env.ecs.Region = "eu-central-1"
	r = env.refuseECS(m)
	if r.Code != ecs.RuntimeRefused || !strings.Contains(r.Body(), "vpc-0abc1234def567890") || !strings.Contains(r.Body(), "in eu-central-1") {
		t.Fatalf("%s", r.Error())
	}

	bad := &providerData{getenv: func(k string) string { return ecsNetworkEnv[k] }}
	bad.ecs.VPCCIDR = "10.20.0.0/33"
	r = bad.refuseECS(m)
	if r.Code != ecs.NetworkBadValue || r.Attribute != "" || !strings.Contains(r.Summary, "AF_ECS_VPC_CIDR") {
		t.Fatalf("%s", r.Error())
	}

	unknown := &providerData{getenv: func(string) string { return "" }}
	unknown.ecs.unknown = "vpc_id"
	if r = unknown.refuseECS(m); !strings.Contains(r.Summary, "ecs.vpc_id is not known until apply") {
		t.Fatalf("%s", r.Error())
	}
}
