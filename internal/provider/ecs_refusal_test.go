package provider

import (
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/antifailure/terraform-provider-antifailure/internal/ecs"
	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// ecsAccountEnv is a described network whose cluster is an ARN in account
// 123456789012.
func ecsAccountEnv() map[string]string {
	env := maps.Clone(ecsNetworkEnv)
	env["AF_ECS_CLUSTER"] = "arn:aws:ecs:eu-west-1:123456789012:cluster/previews"
	return env
}

// refuseECS computes the ecs refusal for the provider's network: the
// provider's ecs block over the variables.
func TestRefuseECSUsesTheProvidersNetwork(t *testing.T) {
	m, err := manifest.Parse([]byte(ecsManifest))
	if err != nil {
		t.Fatal(err)
	}
	unset := &providerData{getenv: func(string) string { return "" }}
	r := unset.refuseECS(m)
	if r.Code != ecs.RuntimeRefused || !strings.Contains(r.Body(), "placeholder network") || !strings.Contains(r.Summary, "1 open (task-metadata)") ||
		!strings.Contains(r.Summary, "4 unproven (interface-endpoints, s3-gateway, instance-metadata, time-sync)") {
		t.Fatalf("%s", r.Error())
	}

	env := &providerData{getenv: func(k string) string { return ecsAccountEnv()[k] }}
	env.ecs.Region = "eu-central-1"
	if r = env.refuseECS(m); r.Code != ecs.RuntimeRefused || !strings.Contains(r.Body(), "AF_ECS_CLUSTER (from the environment) \"arn:aws:ecs:eu-west-1:123456789012:cluster/previews\" is a cluster in eu-west-1, not in eu-central-1") {
		t.Fatalf("%s", r.Error())
	}
	env.ecs.Region = ""
	env.ecs.AccountID = "123456789012"
	if r = env.refuseECS(m); r.Code != ecs.RuntimeRefused || !strings.Contains(r.Summary, "10 are closed, 1 open (task-metadata) and 2 unproven") || !strings.Contains(r.Body(), "vpc-0abc1234def567890") {
		t.Fatalf("%s", r.Error())
	}

	bad := &providerData{getenv: func(k string) string { return ecsNetworkEnv[k] }}
	bad.ecs.VPCCIDR = "10.20.0.0/33"
	r = bad.refuseECS(m)
	if r.Code != ecs.RuntimeRefused || r.Attribute != "manifest" || !strings.Contains(r.Summary, "AF-ECS-011 AF_ECS_VPC_CIDR") || tablePaths(r.Body()) != 13 {
		t.Fatalf("%s", r.Error())
	}

	unknown := &providerData{getenv: func(string) string { return "" }}
	unknown.ecs.unknown = "vpc_id"
	if r = unknown.refuseECS(m); !strings.Contains(r.Summary, "ecs.vpc_id is not known until apply") || tablePaths(r.Body()) != 13 {
		t.Fatalf("%s", r.Error())
	}
}

// tablePaths counts the paths a refusal lists.
func tablePaths(body string) int {
	n := 0
	for _, id := range ecs.PathIDs() {
		if regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(id) + `\s+(closed|open|unproven)\s`).MatchString(body) {
			n++
		}
	}
	return n
}

// words matches a phrase across the line breaks terraform wraps diagnostics at.
func words(phrase string) string {
	return strings.Join(strings.Fields(regexp.QuoteMeta(phrase)), `\s+`)
}

// The table as terraform prints it: every path, in order, with its verdict.
func reportTable(rows [][3]string) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = words(strings.Join(r[:], " "))
	}
	return strings.Join(parts, `.*`)
}

var ecsManifestForRuntime = strings.Replace(ecsManifest, "provider: ecs", "provider: ecs\n  domain: preview.example.com", 1)

// runtime.provider ecs, enterprise edition, through terraform: refused at
// plan with the report, through the placement data source and the
// resource, and nothing is in state afterwards.
func TestAccECSRuntime_refusedAtPlanWithTheReport(t *testing.T) {
	enterprise := `provider "antifailure" {
  license = "` + testLicense(license.FeatureMultiRuntime) + `"
}`
	closed := func(id string) [3]string { return [3]string{id, "closed", "computed"} }
	full := []string{
		words("AF-ECS-001 runtime.provider ecs is refused: of 13 egress paths out of a Fargate task, 10 are closed, 1 open (task-metadata) and 2 unproven (instance-metadata, time-sync)"),
		reportTable([][3]string{closed("public-ip"), closed("nat-gateway"), closed("ipv6-egress"), closed("private-routes"), closed("vpc-lateral"),
			closed("interface-endpoints"), closed("s3-gateway"), closed("amazon-dns"), closed("ecs-exec"), closed("task-role-credentials"),
			{"task-metadata", "open", "documented"}, {"instance-metadata", "unproven", "none"}, {"time-sync", "unproven", "none"}}),
		words("Account 123456789012 (from AF_ECS_CLUSTER (from the environment), a cluster ARN)"),
		words("Use runtime.provider: kubernetes against an EKS cluster"), words("Nothing was created."),
	}
	badEnv := ecsAccountEnv()
	badEnv["AF_ECS_VPC_CIDR"] = "10.20.0.0/33"
	bad := []string{
		words(`AF-ECS-001 runtime.provider ecs is refused, and AF-ECS-011 AF_ECS_VPC_CIDR (from the environment) "10.20.0.0/33" is not a CIDR block`),
		reportTable([][3]string{{"public-ip", "unproven", "none"}, {"amazon-dns", "unproven", "none"}, closed("ecs-exec"), closed("task-role-credentials"),
			{"task-metadata", "open", "documented"}, {"instance-metadata", "unproven", "none"}, {"time-sync", "unproven", "none"}}),
		words("Next: Correct the variable or attribute named in the message."), words("Nothing was created."),
	}
	noAccount := []string{
		words("8 are closed, 1 open (task-metadata) and 4 unproven (interface-endpoints, s3-gateway, instance-metadata, time-sync)"),
		words("interface-endpoints and s3-gateway stay unproven until the account is known: set AF_ECS_ACCOUNT_ID (attribute account_id)"),
	}
	unrepresentable := []string{
		words(`AF-ECS-001 runtime.provider ecs is refused, and AF-DNS-001 Egress host "_dmarc.example.com"`),
		reportTable([][3]string{closed("public-ip"), {"amazon-dns", "unproven", "none"}, {"time-sync", "unproven", "none"}}),
	}
	for _, c := range []struct {
		name, config string
		env          map[string]string
		want         []string
	}{
		{"placement, described network with an account", placementConfig(enterprise, ecsManifestForRuntime), ecsAccountEnv(), full},
		{"resource, described network with an account", environmentConfig(enterprise, ecsManifestForRuntime, ""), ecsAccountEnv(), full},
		{"placement, bad variable", placementConfig(enterprise, ecsManifestForRuntime), badEnv, bad},
		{"resource, bad variable", environmentConfig(enterprise, ecsManifestForRuntime, ""), badEnv, bad},
		{"resource, no account", environmentConfig(enterprise, ecsManifestForRuntime, ""), ecsNetworkEnv, noAccount},
		{"placement, unrepresentable host", placementConfig(enterprise, strings.Replace(ecsManifestForRuntime, "raw.githubusercontent.com", "_dmarc.example.com", 1)), ecsAccountEnv(), unrepresentable},
	} {
		t.Run(c.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders(c.env),
				Steps: []resource.TestStep{
					{
						Config:             c.config,
						PlanOnly:           true,
						ExpectNonEmptyPlan: true,
						ExpectError:        regexp.MustCompile(`(?s)` + strings.Join(c.want, `.*`)),
					},
					{
						// The refused plan left nothing behind.
						Config: enterprise,
						Check: func(s *terraform.State) error {
							if n := len(s.RootModule().Resources); n != 0 {
								return fmt.Errorf("%d resources in state after a refused plan", n)
							}
							return nil
						},
					},
				},
			})
		})
	}
}

// The community edition has no ecs runtime: refused by name, not with the
// report (the report is the data source, in every edition).
func TestAccECSRuntime_communityEditionHasNoECS(t *testing.T) {
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(ecsAccountEnv()),
		Steps: []resource.TestStep{{
			Config:             environmentConfig(`provider "antifailure" {}`, ecsManifestForRuntime, ""),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ExpectError:        regexp.MustCompile(`(?s)AF-LIC-011.*ecs.*antifailure_ecs_egress_report`),
		}},
	})
}
