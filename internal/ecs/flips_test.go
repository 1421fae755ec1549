package ecs

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// The document is mutated as JSON, the way a reviewer would edit it.
type doc map[string]any

func loadDoc(t *testing.T, b []byte) doc {
	t.Helper()
	var d doc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// at walks object keys and list indexes ("0", "1", …) to a value.
func (d doc) at(t *testing.T, path ...string) any {
	t.Helper()
	var cur any = map[string]any(d)
	for _, k := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[k]
			if !ok {
				t.Fatalf("no %q in %v", k, path)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i >= len(c) {
				t.Fatalf("no index %q in %v", k, path)
			}
			cur = c[i]
		default:
			t.Fatalf("cannot walk %q of %v", k, path)
		}
	}
	return cur
}

func (d doc) obj(t *testing.T, path ...string) map[string]any {
	t.Helper()
	m, ok := d.at(t, path...).(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object", path)
	}
	return m
}

func (d doc) appendTo(t *testing.T, value any, path ...string) {
	t.Helper()
	parent := d.obj(t, path[:len(path)-1]...)
	list, _ := parent[path[len(path)-1]].([]any)
	parent[path[len(path)-1]] = append(list, value)
}

func (d doc) bytes(t *testing.T) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editPolicy rewrites the policy of the endpoint for a short service name.
func (d doc) editPolicy(t *testing.T, short string, edit func(p map[string]any)) {
	t.Helper()
	for _, e := range d.at(t, "EC2", "VpcEndpoints").([]any) {
		in := e.(map[string]any)["CreateVpcEndpoint"].(map[string]any)
		if !strings.HasSuffix(in["ServiceName"].(string), "."+short) {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(in["PolicyDocument"].(string)), &p); err != nil {
			t.Fatal(err)
		}
		edit(p)
		b, _ := json.Marshal(p)
		in["PolicyDocument"] = string(b)
		return
	}
	t.Fatalf("no endpoint %s", short)
}

func route(fields map[string]any) map[string]any { return fields }

// stmt is statement i of a decoded policy.
func stmt(p map[string]any, i int) map[string]any { return p["Statement"].([]any)[i].(map[string]any) }

// TestEachClosedPathFlips mutates the generated document once per closure
// and requires exactly the matching path to turn open, evidence computed.
func TestEachClosedPathFlips(t *testing.T) {
	base := planDoc(t, described())
	before := mustEvaluate(t, base, nil)
	cases := []struct {
		name   string
		path   string
		mutate func(t *testing.T, d doc)
		says   string
	}{
		{"public IP on", PathPublicIP, func(t *testing.T, d doc) {
			d.obj(t, "ECS", "CreateService", "networkConfiguration", "awsvpcConfiguration")["assignPublicIp"] = "ENABLED"
		}, "assignPublicIp is ENABLED"},
		{"igw default route", PathPublicIP, func(t *testing.T, d doc) {
			d.appendTo(t, route(map[string]any{"DestinationCidrBlock": "0.0.0.0/0", "GatewayId": "igw-0123456789abcdef0"}), "EC2", "RouteTable", "Routes")
		}, "0.0.0.0/0 -> igw-0123456789abcdef0"},
		{"NAT default route", PathNATGateway, func(t *testing.T, d doc) {
			d.appendTo(t, route(map[string]any{"DestinationCidrBlock": "0.0.0.0/0", "NatGatewayId": "nat-0123456789abcdef0"}), "EC2", "RouteTable", "Routes")
		}, "nat-0123456789abcdef0"},
		{"::/0 route", PathIPv6Egress, func(t *testing.T, d doc) {
			d.appendTo(t, route(map[string]any{"DestinationIpv6CidrBlock": "::/0", "EgressOnlyInternetGatewayId": "eigw-0123456789abcdef0"}), "EC2", "RouteTable", "Routes")
		}, "::/0"},
		{"IPv6 block on a subnet", PathIPv6Egress, func(t *testing.T, d doc) {
			d.obj(t, "Network", "Subnets", "0")["Ipv6CidrBlockAssociationSet"] = []any{map[string]any{"Ipv6CidrBlock": "2001:db8::/64"}}
		}, "IPv6 CIDR block"},
		{"peering route", PathPrivateRoutes, func(t *testing.T, d doc) {
			d.appendTo(t, route(map[string]any{"DestinationCidrBlock": "172.16.0.0/12", "VpcPeeringConnectionId": "pcx-0123456789abcdef0"}), "EC2", "RouteTable", "Routes")
		}, "pcx-0123456789abcdef0"},
		{"transit gateway route", PathPrivateRoutes, func(t *testing.T, d doc) {
			d.appendTo(t, route(map[string]any{"DestinationCidrBlock": "192.168.0.0/16", "TransitGatewayId": "tgw-0123456789abcdef0"}), "EC2", "RouteTable", "Routes")
		}, "tgw-0123456789abcdef0"},
		{"VPN route", PathPrivateRoutes, func(t *testing.T, d doc) {
			d.appendTo(t, route(map[string]any{"DestinationCidrBlock": "192.168.0.0/16", "GatewayId": "vgw-0123456789abcdef0"}), "EC2", "RouteTable", "Routes")
		}, "vgw-0123456789abcdef0"},
		{"allow-all egress", PathVPCLateral, func(t *testing.T, d doc) {
			d.appendTo(t, map[string]any{"IpProtocol": "-1", "IpRanges": []any{map[string]any{"CidrIp": "0.0.0.0/0"}}},
				"EC2", "TaskSecurityGroup", "AuthorizeSecurityGroupEgress", "IpPermissions")
		}, "allows egress all cidr:0.0.0.0/0"},
		{"default egress not revoked", PathVPCLateral, func(t *testing.T, d doc) {
			delete(d.obj(t, "EC2", "TaskSecurityGroup"), "RevokeSecurityGroupEgress")
		}, "allows egress all cidr:0.0.0.0/0"},
		{"egress to the VPC CIDR", PathVPCLateral, func(t *testing.T, d doc) {
			d.appendTo(t, map[string]any{"IpProtocol": "tcp", "FromPort": 443, "ToPort": 443, "IpRanges": []any{map[string]any{"CidrIp": "10.20.0.0/16"}}},
				"EC2", "TaskSecurityGroup", "AuthorizeSecurityGroupEgress", "IpPermissions")
		}, "cidr:10.20.0.0/16"},
		{"another security group on the service", PathVPCLateral, func(t *testing.T, d doc) {
			d.appendTo(t, "sg-0123456789abcdef0", "ECS", "CreateService", "networkConfiguration", "awsvpcConfiguration", "securityGroups")
		}, "sg-0123456789abcdef0"},
		{"ECR endpoint policy widened to *", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "ecr.dkr", func(p map[string]any) {
				p["Statement"].([]any)[1].(map[string]any)["Resource"] = "*"
			})
		}, "on *"},
		{"logs endpoint policy on every log group", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "logs", func(p map[string]any) {
				p["Statement"].([]any)[0].(map[string]any)["Resource"] = "arn:aws:logs:eu-west-1:*:log-group:*"
			})
		}, "log-group:*"},
		{"ECR policy for any account's repository", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "ecr.api", func(p map[string]any) {
				p["Statement"].([]any)[1].(map[string]any)["Resource"] = "arn:aws:ecr:eu-west-1:*:repository/antifailure/shop"
			})
		}, "repository/antifailure/shop"},
		{"S3 endpoint policy widened to *", PathS3Gateway, func(t *testing.T, d doc) {
			d.editPolicy(t, "s3", func(p map[string]any) {
				p["Statement"].([]any)[1].(map[string]any)["Resource"] = "*"
			})
		}, "on *"},
		{"S3 endpoint without a policy", PathS3Gateway, func(t *testing.T, d doc) {
			for _, e := range d.at(t, "EC2", "VpcEndpoints").([]any) {
				in := e.(map[string]any)["CreateVpcEndpoint"].(map[string]any)
				if in["VpcEndpointType"] == "Gateway" {
					delete(in, "PolicyDocument")
				}
			}
		}, "has no policy"},
		{"a policy variable for the repository's account", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "ecr.dkr", func(p map[string]any) {
				stmt(p, 1)["Resource"] = "arn:aws:ecr:eu-west-1:${aws:PrincipalAccount}:repository/antifailure/shop"
			})
		}, "policy variable in a Resource"},
		{"logs policy naming another account", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "logs", func(p map[string]any) {
				stmt(p, 0)["Resource"] = "arn:aws:logs:eu-west-1:999999999999:log-group:/antifailure/shop"
			})
		}, "in account 999999999999, not the environment's 123456789012"},
		{"pull not pinned to the execution role", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "ecr.api", func(p map[string]any) { delete(stmt(p, 1), "Condition") })
		}, "does not pin the caller"},
		{"token not pinned to the execution role", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "ecr.dkr", func(p map[string]any) { delete(stmt(p, 0), "Condition") })
		}, "does not pin the caller"},
		{"caller pinned to any role", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "logs", func(p map[string]any) {
				stmt(p, 1)["Condition"] = map[string]any{"ArnLike": map[string]any{"aws:PrincipalArn": "arn:aws:iam::123456789012:role/*"}}
			})
		}, "does not pin the caller"},
		{"caller pinned to another account's role", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "logs", func(p map[string]any) {
				stmt(p, 1)["Condition"] = map[string]any{"ArnEquals": map[string]any{"aws:PrincipalArn": "arn:aws:iam::999999999999:role/antifailure-shop-execution"}}
			})
		}, "pins aws:PrincipalArn to arn:aws:iam::999999999999"},
		{"another action on * beside the token", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.editPolicy(t, "ecr.api", func(p map[string]any) {
				stmt(p, 0)["Action"] = []any{"ecr:GetAuthorizationToken", "ecr:PutImage"}
			})
		}, "which is every resource"},
		{"execution role not created", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			delete(d.obj(t, "IAM"), "CreateRole")
		}, "creates no execution role"},
		{"execution role created after the endpoints", PathInterfaceEndpoints, func(t *testing.T, d doc) {
			d.obj(t)["ApplyOrder"] = []any{"S3", "ECR", "Logs", "EC2", "IAM", "Route53Resolver", "ECS"}
		}, "execution role is not created before"},
		{"layer bucket writable", PathS3Gateway, func(t *testing.T, d doc) {
			d.editPolicy(t, "s3", func(p map[string]any) { stmt(p, 0)["Action"] = []any{"s3:GetObject", "s3:PutObject"} })
		}, "s3:GetObject only"},
		{"own bucket without an owner condition", PathS3Gateway, func(t *testing.T, d doc) {
			d.editPolicy(t, "s3", func(p map[string]any) { delete(stmt(p, 2), "Condition") })
		}, "without a StringEquals s3:ResourceAccount"},
		{"own bucket owned by another account", PathS3Gateway, func(t *testing.T, d doc) {
			d.editPolicy(t, "s3", func(p map[string]any) {
				stmt(p, 1)["Condition"] = map[string]any{"StringEquals": map[string]any{"s3:ResourceAccount": "999999999999"}}
			})
		}, "pins s3:ResourceAccount to 999999999999"},
		{"another bucket", PathS3Gateway, func(t *testing.T, d doc) {
			d.editPolicy(t, "s3", func(p map[string]any) { stmt(p, 2)["Resource"] = "arn:aws:s3:::someone-elses-bucket/*" })
		}, "someone-elses-bucket/*, which is not this environment's own"},
		{"a policy variable in a bucket name", PathS3Gateway, func(t *testing.T, d doc) {
			d.editPolicy(t, "s3", func(p map[string]any) { stmt(p, 2)["Resource"] = "arn:aws:s3:::antifailure-${aws:PrincipalAccount}/*" })
		}, "policy variable in a Resource"},
		{"bucket not created", PathS3Gateway, func(t *testing.T, d doc) {
			delete(d.obj(t, "S3"), "CreateBucket")
		}, "which the document does not create"},
		{"bucket created after the endpoint", PathS3Gateway, func(t *testing.T, d doc) {
			d.obj(t)["ApplyOrder"] = []any{"IAM", "ECR", "Logs", "EC2", "S3", "Route53Resolver", "ECS"}
		}, "bucket is not created before"},
		{"exec enabled", PathECSExec, func(t *testing.T, d doc) {
			d.obj(t, "ECS", "CreateService")["enableExecuteCommand"] = true
		}, "enableExecuteCommand is true"},
		{"task role added", PathTaskRoleCredentials, func(t *testing.T, d doc) {
			d.obj(t, "ECS", "RegisterTaskDefinition")["taskRoleArn"] = "arn:aws:iam::123456789012:role/app"
		}, "role/app"},
		{"terminal BLOCK removed", PathAmazonDNS, func(t *testing.T, d doc) {
			fw := d.obj(t, "Route53Resolver")
			rules := fw["CreateFirewallRule"].([]any)
			fw["CreateFirewallRule"] = rules[:len(rules)-1]
		}, "AF-DNS-016"},
		{"fail-open enabled", PathAmazonDNS, func(t *testing.T, d doc) {
			d.obj(t, "Route53Resolver", "UpdateFirewallConfig")["FirewallFailOpen"] = "ENABLED"
		}, "FirewallFailOpen is ENABLED"},
		{"ALLOW * at priority 5", PathAmazonDNS, func(t *testing.T, d doc) {
			d.appendTo(t, map[string]any{"Name": "allow-all", "Priority": 5, "Action": "ALLOW", "FirewallRuleGroupId": RefRuleGroup, "FirewallDomainListId": "ref:firewall-domain-list/allow-all"},
				"Route53Resolver", "CreateFirewallRule")
			d.appendTo(t, map[string]any{"UpdateFirewallDomains": map[string]any{"FirewallDomainListId": "ref:firewall-domain-list/allow-all", "Domains": []any{"*"}}},
				"Route53Resolver", "DomainLists")
		}, "blocks nothing"},
		{"rule group associated elsewhere", PathAmazonDNS, func(t *testing.T, d doc) {
			d.obj(t, "Route53Resolver", "AssociateFirewallRuleGroup")["VpcId"] = "vpc-0fff0000fff000000"
		}, "vpc-0fff0000fff000000"},
		{"association priority out of range", PathAmazonDNS, func(t *testing.T, d doc) {
			d.obj(t, "Route53Resolver", "AssociateFirewallRuleGroup")["Priority"] = 10000
		}, "outside 100-9900"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := loadDoc(t, base)
			c.mutate(t, d)
			after := mustEvaluate(t, d.bytes(t), nil)
			for id, b := range before {
				a := after[id]
				if id == c.path {
					if a.Verdict != Open || a.Evidence != Computed || a.ClosedBy != "" {
						t.Errorf("%s: %s/%s closed_by %q, want open/computed", id, a.Verdict, a.Evidence, a.ClosedBy)
					}
					if !strings.Contains(a.Detail, c.says) {
						t.Errorf("%s detail %q does not say %q", id, a.Detail, c.says)
					}
					continue
				}
				if a.Verdict != b.Verdict || a.Evidence != b.Evidence {
					t.Errorf("%s moved too: %s/%s -> %s/%s (%s)", id, b.Verdict, b.Evidence, a.Verdict, a.Evidence, a.Detail)
				}
			}
		})
	}
}
