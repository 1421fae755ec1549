package ecs

import (
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

func TestResolveNetwork(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	full := map[string]string{
		EnvRegion: "eu-west-1", EnvCluster: "previews", EnvVPCID: "vpc-0abc1234def567890", EnvVPCCIDR: "10.20.0.0/16",
		EnvSubnetIDs: "subnet-0aaa1111bbb222333, subnet-0ccc4444ddd555666", EnvSubnetCIDRs: "10.20.1.0/24,10.20.2.0/24",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	t.Run("unset gives the placeholder network", func(t *testing.T) {
		n, err := ResolveNetwork(NetworkSettings{}, noEnv)
		if err != nil || n.Described || n.VPCID != PlaceholderNetwork().VPCID {
			t.Fatalf("%+v %v", n, err)
		}
		if s := n.Sentence(); !strings.Contains(s, "Setting them changes the report, not the answer") || !strings.Contains(s, EnvSubnetCIDRs) {
			t.Errorf("sentence %q", s)
		}
	})
	t.Run("probe image alone keeps the placeholder", func(t *testing.T) {
		n, err := ResolveNetwork(NetworkSettings{}, env(map[string]string{EnvProbeImage: "ghcr.io/antifailure/probe:1"}))
		if err != nil || n.Described || n.ProbeImage != "ghcr.io/antifailure/probe:1" {
			t.Fatalf("%+v %v", n, err)
		}
	})
	t.Run("from the environment", func(t *testing.T) {
		n, err := ResolveNetwork(NetworkSettings{}, env(full))
		if err != nil {
			t.Fatal(err)
		}
		if !n.Described || n.Region != "eu-west-1" || len(n.Subnets) != 2 || n.Subnets[1].ID != "subnet-0ccc4444ddd555666" || n.Subnets[1].CIDR.String() != "10.20.2.0/24" {
			t.Fatalf("%+v", n)
		}
		if s := n.Sentence(); !strings.Contains(s, "vpc-0abc1234def567890") || !strings.Contains(s, "not the answer") {
			t.Errorf("sentence %q", s)
		}
	})
	t.Run("the account", func(t *testing.T) {
		n, err := ResolveNetwork(NetworkSettings{}, env(with(EnvCluster, "arn:aws:ecs:eu-west-1:123456789012:cluster/previews")))
		if err != nil || n.Account != "123456789012" || n.Cluster != "arn:aws:ecs:eu-west-1:123456789012:cluster/previews" || !strings.Contains(n.Sentence(), "Account 123456789012 (from AF_ECS_CLUSTER") {
			t.Fatalf("from the cluster ARN: %+v %v", n, err)
		}
		n, err = ResolveNetwork(NetworkSettings{}, env(with(EnvAccountID, "210987654321")))
		if err != nil || n.Account != "210987654321" || n.AccountFrom != "AF_ECS_ACCOUNT_ID (from the environment)" {
			t.Fatalf("from AF_ECS_ACCOUNT_ID: %+v %v", n, err)
		}
		n, err = ResolveNetwork(NetworkSettings{}, env(full))
		if err != nil || n.Account != "" || !strings.Contains(n.Sentence(), "The account is unknown (set AF_ECS_ACCOUNT_ID") {
			t.Fatalf("a cluster name carries no account: %+v %v", n, err)
		}
	})
	t.Run("explicit wins", func(t *testing.T) {
		n, err := ResolveNetwork(NetworkSettings{Region: "eu-central-1", SubnetIDs: []string{"subnet-0eee7777fff888999"}, SubnetCIDRs: []string{"10.20.9.0/24"}}, env(full))
		if err != nil {
			t.Fatal(err)
		}
		if n.Region != "eu-central-1" || len(n.Subnets) != 1 || n.Subnets[0].ID != "subnet-0eee7777fff888999" || n.Cluster != "previews" {
			t.Fatalf("%+v", n)
		}
	})
	bad := []struct {
		name     string
		explicit NetworkSettings
		env      map[string]string
		code     refusal.Code
		attr     string
		says     string
	}{
		{"count mismatch", NetworkSettings{}, with(EnvSubnetCIDRs, "10.20.1.0/24"), SubnetCountMismatch, AttrSubnetCIDRs, "AF_ECS_SUBNET_IDS (from the environment) lists 2 subnet(s) but AF_ECS_SUBNET_CIDRS (from the environment) lists 1"},
		{"invalid CIDR", NetworkSettings{}, with(EnvVPCCIDR, "10.20.0.0/33"), NetworkBadValue, AttrVPCCIDR, `AF_ECS_VPC_CIDR (from the environment) "10.20.0.0/33" is not a CIDR block`},
		{"host bits", NetworkSettings{}, with(EnvVPCCIDR, "10.20.0.1/16"), NetworkBadValue, AttrVPCCIDR, "host bits set"},
		{"IPv6 VPC block", NetworkSettings{}, with(EnvVPCCIDR, "2001:db8::/56"), NetworkBadValue, AttrVPCCIDR, "not an IPv4"},
		{"subnet outside the VPC", NetworkSettings{}, with(EnvSubnetCIDRs, "10.20.1.0/24,10.99.2.0/24"), SubnetOutsideVPC, AttrSubnetCIDRs, "entry 2, 10.99.2.0/24, lies outside the VPC's 10.20.0.0/16"},
		{"subnet larger than the VPC", NetworkSettings{}, with(EnvSubnetCIDRs, "10.20.1.0/24,10.0.0.0/8"), NetworkBadValue, AttrSubnetCIDRs, "/8"},
		{"overlapping subnets", NetworkSettings{}, with(EnvSubnetCIDRs, "10.20.0.0/20,10.20.2.0/24"), SubnetOutsideVPC, AttrSubnetCIDRs, "overlap"},
		{"duplicate subnet id", NetworkSettings{}, with(EnvSubnetIDs, "subnet-0aaa1111bbb222333,subnet-0aaa1111bbb222333"), SubnetOutsideVPC, AttrSubnetIDs, "twice"},
		{"bad subnet id", NetworkSettings{}, with(EnvSubnetIDs, "subnet-0aaa1111bbb222333,sn-2"), NetworkBadValue, AttrSubnetIDs, `entry 2, "sn-2"`},
		{"bad region", NetworkSettings{}, with(EnvRegion, "Ireland"), NetworkBadValue, AttrRegion, `AF_ECS_REGION (from the environment) "Ireland"`},
		{"bad VPC id", NetworkSettings{}, with(EnvVPCID, "vpc-xyz"), NetworkBadValue, AttrVPCID, "not a VPC id"},
		{"cluster ARN in another region", NetworkSettings{}, with(EnvCluster, "arn:aws:ecs:us-east-1:123456789012:cluster/previews"), NetworkBadValue, AttrCluster, "in us-east-1, not in eu-west-1"},
		{"bad attribute named as attribute", NetworkSettings{VPCCIDR: "ten"}, full, NetworkBadValue, AttrVPCCIDR, "AF_ECS_VPC_CIDR (attribute vpc_cidr)"},
		{"partly set", NetworkSettings{}, map[string]string{EnvRegion: "eu-west-1", EnvVPCID: "vpc-0abc1234def567890"}, NetworkIncomplete, AttrRegion, "AF_ECS_CLUSTER (cluster), AF_ECS_VPC_CIDR (vpc_cidr), AF_ECS_SUBNET_IDS (subnet_ids), AF_ECS_SUBNET_CIDRS (subnet_cidrs) are not set, while AF_ECS_REGION, AF_ECS_VPC_ID are"},
		{"bad probe image", NetworkSettings{ProbeImage: "probe image"}, nil, NetworkBadValue, AttrProbeImage, "not an image reference"},
		{"bad account id", NetworkSettings{AccountID: "12345"}, full, NetworkBadValue, AttrAccountID, `AF_ECS_ACCOUNT_ID (attribute account_id) "12345" is not an AWS account id`},
		{"account and cluster ARN disagree", NetworkSettings{AccountID: "210987654321"}, with(EnvCluster, "arn:aws:ecs:eu-west-1:123456789012:cluster/previews"),
			AccountMismatch, AttrAccountID, "AF_ECS_ACCOUNT_ID (attribute account_id) is 210987654321, but AF_ECS_CLUSTER (from the environment)"},
		{"ARN of something else", NetworkSettings{}, with(EnvCluster, "arn:aws:ecs:eu-west-1:123456789012:service/previews/web"), NetworkBadValue, AttrCluster, "not an ECS cluster ARN"},
		{"cluster ARN without an account", NetworkSettings{}, with(EnvCluster, "arn:aws:ecs:eu-west-1::cluster/previews"), NetworkBadValue, AttrCluster, "not an AWS account id"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ResolveNetwork(c.explicit, env(c.env))
			list := refusal.All(err)
			if len(list) == 0 {
				t.Fatal("accepted")
			}
			r := list[0]
			if r.Code != c.code || r.Attribute != c.attr || !strings.Contains(r.Summary, c.says) {
				t.Fatalf("got %s on %s: %q\nwant %s on %s mentioning %q", r.Code, r.Attribute, r.Summary, c.code, c.attr, c.says)
			}
			if !r.Code.Known() || !strings.HasSuffix(r.Body(), "Nothing was created.") {
				t.Errorf("body %q", r.Body())
			}
		})
	}
}
