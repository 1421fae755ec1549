package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
)

const ecsManifest = `name: shop
runtime:
  provider: ecs
services:
  web:
    image: ghcr.io/acme/shop:1.4.2
    port: 8080
    web: true
egress:
  - host: api.stripe.com
    mode: sandbox
  - host: "*.githubusercontent.com"
    mode: allow
  - host: raw.githubusercontent.com
    mode: mock
`

const ecsReportAddr = "data.antifailure_ecs_egress_report.this"

// ecsNetworkEnv is a described network, as the AF_ECS_* variables.
var ecsNetworkEnv = map[string]string{
	"AF_ECS_REGION":       "eu-west-1",
	"AF_ECS_CLUSTER":      "previews",
	"AF_ECS_VPC_ID":       "vpc-0abc1234def567890",
	"AF_ECS_VPC_CIDR":     "10.20.0.0/16",
	"AF_ECS_SUBNET_IDS":   "subnet-0aaa1111bbb222333,subnet-0ccc4444ddd555666",
	"AF_ECS_SUBNET_CIDRS": "10.20.1.0/24,10.20.2.0/24",
}

func ecsReportConfig(providerBlock, manifest, extra string) string {
	return providerBlock + `
data "antifailure_ecs_egress_report" "this" {
  manifest = <<-EOT
` + manifest + `
  EOT
` + extra + `
}
`
}

func pathCheck(i int, id, verdict, evidence string) statecheck.StateCheck {
	return statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths").AtSliceIndex(i), knownvalue.ObjectPartial(map[string]knownvalue.Check{
		"id": knownvalue.StringExact(id), "verdict": knownvalue.StringExact(verdict), "evidence": knownvalue.StringExact(evidence),
	}))
}

// Unset network: the verdicts stay, nothing appliable is returned, and with
// no account the endpoint paths are unproven (8 / 1 / 4).
func TestAccECSEgressReport_placeholderNetwork(t *testing.T) {
	closed := []string{"public-ip", "nat-gateway", "ipv6-egress", "private-routes", "vpc-lateral"}
	checks := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("answer"), knownvalue.StringExact("refused")),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("closed"), knownvalue.Int64Exact(8)),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("open"), knownvalue.Int64Exact(1)),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("unproven"), knownvalue.Int64Exact(4)),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("network_described"), knownvalue.Bool(false)),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("plan_json"), knownvalue.Null()),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("vpc_endpoint_policies"), knownvalue.Null()),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("summary"), knownvalue.StringRegexp(regexp.MustCompile(
			`1 open \(task-metadata\), 4 unproven \(interface-endpoints, s3-gateway, instance-metadata, time-sync\)\. interface-endpoints and s3-gateway stay unproven until the account is known: set AF_ECS_ACCOUNT_ID \(attribute account_id\) or give AF_ECS_CLUSTER as a cluster ARN.*Use runtime\.provider: kubernetes against an EKS cluster, where the probe runs\.`))),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths"), knownvalue.ListSizeExact(13)),
		pathCheck(5, "interface-endpoints", "unproven", "none"),
		pathCheck(6, "s3-gateway", "unproven", "none"),
		pathCheck(7, "amazon-dns", "closed", "computed"),
		pathCheck(8, "ecs-exec", "closed", "computed"),
		pathCheck(9, "task-role-credentials", "closed", "computed"),
		pathCheck(10, "task-metadata", "open", "documented"),
		pathCheck(11, "instance-metadata", "unproven", "none"),
		pathCheck(12, "time-sync", "unproven", "none"),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths").AtSliceIndex(10).AtMapKey("detail"),
			knownvalue.StringRegexp(regexp.MustCompile(`Amazon ECS task metadata endpoint version 4 for tasks on Fargate.*on by default`))),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths").AtSliceIndex(11).AtMapKey("detail"),
			knownvalue.StringRegexp(regexp.MustCompile(`does not state that the address stops answering.*task-iam-roles.html`))),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths").AtSliceIndex(5).AtMapKey("detail"),
			knownvalue.StringRegexp(regexp.MustCompile(`set AF_ECS_ACCOUNT_ID.*AmazonECR/latest/userguide/vpc-endpoints.html`))),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths").AtSliceIndex(0).AtMapKey("closed_by"),
			knownvalue.StringExact("assignPublicIp DISABLED; no 0.0.0.0/0 route to an igw-")),
		statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("dns_firewall_rules").AtSliceIndex(0), knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": knownvalue.StringExact("mock-raw-githubusercontent-com"), "priority": knownvalue.Int64Exact(100),
			"action": knownvalue.StringExact("BLOCK"), "domains": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("raw.githubusercontent.com")}),
		})),
	}
	for i, id := range closed {
		checks = append(checks, pathCheck(i, id, "closed", "computed"))
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{{
			Config:            ecsReportConfig(`provider "antifailure" {}`, ecsManifest, ""),
			ConfigStateChecks: checks,
		}},
	})
}

// Both editions answer: the report is an analysis, not a placement. A
// described network with a cluster ARN in 123456789012: 10 / 1 / 2, every
// statement names the account, no Resource holds a policy variable.
func TestAccECSEgressReport_enterpriseAndNetworkFromEnvironment(t *testing.T) {
	noVariable := regexp.MustCompile(`^[^$]*$`)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(ecsAccountEnv()),
		Steps: []resource.TestStep{{
			Config: ecsReportConfig(`provider "antifailure" {
  license = "`+testLicense(license.FeatureMultiRuntime)+`"
}`, ecsManifest, ""),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("network_described"), knownvalue.Bool(true)),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("closed"), knownvalue.Int64Exact(10)),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("open"), knownvalue.Int64Exact(1)),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("unproven"), knownvalue.Int64Exact(2)),
				pathCheck(5, "interface-endpoints", "closed", "computed"),
				pathCheck(6, "s3-gateway", "closed", "computed"),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("plan_json"), knownvalue.StringRegexp(regexp.MustCompile(
					`^\{"Account":"123456789012","ApplyOrder":\["IAM","S3","ECR","Logs","EC2","Route53Resolver","ECS"\].*"VpcId":"vpc-0abc1234def567890".*"RoleName":"antifailure-shop-execution".*"CreateBucket":\{"Bucket":"antifailure-shop-0abc1234def567890"`))),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("plan_json"), knownvalue.StringRegexp(noVariable)),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("vpc_endpoint_policies"), knownvalue.MapExact(map[string]knownvalue.Check{
					"ecr.api": knownvalue.StringRegexp(regexp.MustCompile(`^[^$]*"Resource":"arn:aws:ecr:eu-west-1:123456789012:repository/antifailure/shop"[^$]*$`)),
					"ecr.dkr": knownvalue.StringRegexp(regexp.MustCompile(`"aws:PrincipalArn":"arn:aws:iam::123456789012:role/antifailure-shop-execution"`)),
					"logs":    knownvalue.StringRegexp(regexp.MustCompile(`^[^$]*log-group:/antifailure/shop:\*"[^$]*$`)),
					"s3": knownvalue.StringRegexp(regexp.MustCompile(
						`^[^$]*prod-eu-west-1-starport-layer-bucket/\*.*"s3:ResourceAccount":"123456789012"[^$]*$`)),
				})),
			},
		}},
	})
}

// Attributes win over the provider's ecs block, which wins over the variables.
func TestAccECSEgressReport_attributesWin(t *testing.T) {
	env := ecsAccountEnv()
	env["AF_ECS_VPC_CIDR"] = "not a cidr"
	env["AF_ECS_REGION"] = "us-west-2"
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(env),
		Steps: []resource.TestStep{{
			Config: ecsReportConfig(`provider "antifailure" {
  ecs = { region = "eu-central-1", account_id = "123456789012" }
}`, ecsManifest, `  cluster     = "previews"
  vpc_cidr    = "10.20.0.0/16"
  probe_image = "ghcr.io/antifailure/probe:1"`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("plan_json"), knownvalue.StringRegexp(regexp.MustCompile(
					`"Region":"eu-central-1".*"image":"ghcr.io/antifailure/probe:1"|"image":"ghcr.io/antifailure/probe:1".*"Region":"eu-central-1"`))),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("plan_json"), knownvalue.StringRegexp(regexp.MustCompile(`"Account":"123456789012"`))),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("closed"), knownvalue.Int64Exact(10)),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("paths").AtSliceIndex(11).AtMapKey("detail"),
					knownvalue.StringRegexp(regexp.MustCompile(`carries the probe container ghcr.io/antifailure/probe:1`))),
			},
		}},
	})
}

func TestAccECSEgressReport_recordedAttempts(t *testing.T) {
	attempts := `[{"path":"instance-metadata","target":"169.254.169.254:80","result":"blocked","time":"2026-11-30T11:00:00Z"}]`
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testProviders(nil),
		Steps: []resource.TestStep{{
			Config: ecsReportConfig(`provider "antifailure" {}`, ecsManifest, fmt.Sprintf("  recorded_attempts = %q", attempts)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("closed"), knownvalue.Int64Exact(9)),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("unproven"), knownvalue.Int64Exact(3)),
				pathCheck(11, "instance-metadata", "closed", "recorded"),
				statecheck.ExpectKnownValue(ecsReportAddr, tfjsonpath.New("summary"), knownvalue.StringRegexp(regexp.MustCompile(
					`9 closed \(8 computed from the generated configuration, 1 recorded inside a running task\)`))),
			},
		}},
	})
}

func TestAccECSEgressReport_refusals(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		extra string
		mf    string
		want  *regexp.Regexp
	}{
		{"invalid CIDR attribute", nil, `  vpc_cidr = "10.20.0.0/33"`, ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-010 AF_ECS_REGION \(region\), AF_ECS_CLUSTER.*are not set, while\s+AF_ECS_VPC_CIDR is.*vpc_cidr = "10.20.0.0/33".*Nothing was created`)},
		{"invalid CIDR variable", map[string]string{"AF_ECS_REGION": "eu-west-1", "AF_ECS_CLUSTER": "previews", "AF_ECS_VPC_ID": "vpc-0abc1234def567890",
			"AF_ECS_VPC_CIDR": "10.20.0.0/33", "AF_ECS_SUBNET_IDS": "subnet-0aaa1111bbb222333", "AF_ECS_SUBNET_CIDRS": "10.20.1.0/24"}, "", ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-011 AF_ECS_VPC_CIDR \(from the environment\)\s+"10.20.0.0/33" is not a CIDR block.*Next:.*Nothing was\s+created`)},
		{"subnet count mismatch", ecsNetworkEnv, `  subnet_cidrs = ["10.20.1.0/24"]`, ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-012 AF_ECS_SUBNET_IDS \(from the environment\) lists 2\s+subnet\(s\) but AF_ECS_SUBNET_CIDRS \(attribute subnet_cidrs\) lists 1.*subnet_cidrs = \["10.20.1.0/24"\]`)},
		{"subnet outside the VPC", ecsNetworkEnv, `  subnet_cidrs = ["10.20.1.0/24", "10.99.0.0/24"]`, ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-013 .*entry 2, 10.99.0.0/24, lies\s+outside the VPC's 10.20.0.0/16`)},
		{"bad account id", nil, `  account_id = "12345"`, ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-011 AF_ECS_ACCOUNT_ID \(attribute account_id\) "12345" is not an AWS\s+account id`)},
		{"account and cluster ARN disagree", ecsAccountEnv(), `  account_id = "210987654321"`, ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-030 AF_ECS_ACCOUNT_ID \(attribute account_id\) is 210987654321, but\s+AF_ECS_CLUSTER`)},
		{"unreadable recorded attempts", nil, `  recorded_attempts = "[{\"path\":\"imds\"}]"`, ecsManifest,
			regexp.MustCompile(`(?s)AF-ECS-020 recorded_attempts entry 1: path "imds" is not one of.*recorded_attempts =`)},
		{"unrepresentable egress host", nil, "", strings.Replace(ecsManifest, "raw.githubusercontent.com", "_dmarc.example.com", 1),
			regexp.MustCompile(`(?s)AF-DNS-001 Egress host "_dmarc.example.com" cannot be written as a\s+DNS Firewall domain: it contains an underscore.*Nothing was created`)},
		{"manifest refused", nil, "", strings.Replace(ecsManifest, "mode: mock", "mode: mocked", 1),
			regexp.MustCompile(`AF-MAN-009`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testProviders(c.env),
				Steps: []resource.TestStep{{
					Config:      ecsReportConfig(`provider "antifailure" {}`, c.mf, c.extra),
					PlanOnly:    true,
					ExpectError: c.want,
				}},
			})
		})
	}
}
