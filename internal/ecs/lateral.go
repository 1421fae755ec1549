package ecs

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// permissionKey is a canonical text of one security group permission.
func permissionKey(p types.IpPermission) string {
	var parts []string
	for _, r := range p.IpRanges {
		parts = append(parts, "cidr:"+aws.ToString(r.CidrIp))
	}
	for _, r := range p.Ipv6Ranges {
		parts = append(parts, "cidr6:"+aws.ToString(r.CidrIpv6))
	}
	for _, r := range p.PrefixListIds {
		parts = append(parts, "pl:"+aws.ToString(r.PrefixListId))
	}
	for _, r := range p.UserIdGroupPairs {
		parts = append(parts, "sg:"+aws.ToString(r.GroupId))
	}
	sort.Strings(parts)
	proto := strings.ToLower(aws.ToString(p.IpProtocol))
	if proto == "-1" || proto == "all" {
		return "all " + strings.Join(parts, ",")
	}
	return fmt.Sprintf("%s %s-%s %s", proto, portText(p.FromPort), portText(p.ToPort), strings.Join(parts, ","))
}

func portText(p *int32) string {
	if p == nil {
		return "?"
	}
	return strconv.Itoa(int(*p))
}

// splitPermission splits a permission into one per target, as EC2 stores
// rules, so revoking and judging work per target.
func splitPermission(p types.IpPermission) []types.IpPermission {
	base := types.IpPermission{IpProtocol: p.IpProtocol, FromPort: p.FromPort, ToPort: p.ToPort}
	var out []types.IpPermission
	for _, r := range p.IpRanges {
		q := base
		q.IpRanges = []types.IpRange{r}
		out = append(out, q)
	}
	for _, r := range p.Ipv6Ranges {
		q := base
		q.Ipv6Ranges = []types.Ipv6Range{r}
		out = append(out, q)
	}
	for _, r := range p.PrefixListIds {
		q := base
		q.PrefixListIds = []types.PrefixListId{r}
		out = append(out, q)
	}
	for _, r := range p.UserIdGroupPairs {
		q := base
		q.UserIdGroupPairs = []types.UserIdGroupPair{r}
		out = append(out, q)
	}
	return out
}

// EffectiveEgress is what a security group's egress holds once its inputs are
// applied: the allow-all rule EC2 creates, minus what is revoked, plus what
// is authorized; one permission per target.
func EffectiveEgress(sg SecurityGroup) []types.IpPermission {
	rules := map[string]types.IpPermission{}
	var order []string
	add := func(p types.IpPermission) {
		for _, q := range splitPermission(p) {
			k := permissionKey(q)
			if _, ok := rules[k]; !ok {
				order = append(order, k)
			}
			rules[k] = q
		}
	}
	add(allEgress())
	if sg.RevokeSecurityGroupEgress != nil {
		for _, p := range sg.RevokeSecurityGroupEgress.IpPermissions {
			for _, q := range splitPermission(p) {
				delete(rules, permissionKey(q))
			}
		}
	}
	if sg.AuthorizeSecurityGroupEgress != nil {
		for _, p := range sg.AuthorizeSecurityGroupEgress.IpPermissions {
			add(p)
		}
	}
	var out []types.IpPermission
	for _, k := range order {
		if p, ok := rules[k]; ok {
			out = append(out, p)
			delete(rules, k)
		}
	}
	return out
}

func evalVPCLateral(v *view) result {
	var problems []string
	task := v.p.EC2.TaskSecurityGroup
	if c := v.awsvpc(); c == nil {
		problems = append(problems, "CreateService has no awsvpcConfiguration, so the task's security groups are unknown")
	} else {
		if len(c.SecurityGroups) == 0 {
			problems = append(problems, "the service names no security group, so the task gets the VPC's default group, which allows all egress")
		}
		for _, g := range c.SecurityGroups {
			if g != task.Ref {
				problems = append(problems, "the task is also in security group "+g+", whose rules this document does not hold")
			}
		}
	}
	endpointSG := v.p.EC2.EndpointSecurityGroup.Ref
	egress := EffectiveEgress(task)
	for _, p := range egress {
		proto := strings.ToLower(aws.ToString(p.IpProtocol))
		https := (proto == "tcp" || proto == "6") && aws.ToInt32(p.FromPort) == 443 && aws.ToInt32(p.ToPort) == 443
		target := ""
		switch {
		case len(p.UserIdGroupPairs) == 1 && aws.ToString(p.UserIdGroupPairs[0].GroupId) == endpointSG && endpointSG != "":
			target = "endpoint security group"
		case len(p.PrefixListIds) == 1 && aws.ToString(p.PrefixListIds[0].PrefixListId) == v.s3PrefixList && v.s3PrefixList != "":
			target = "S3 prefix list"
		}
		if !https || target == "" {
			problems = append(problems, "the task security group allows egress "+permissionKey(p))
		}
	}
	if len(problems) > 0 {
		return openComputed(problems)
	}
	return closedComputed(fmt.Sprintf("The allow-all egress rule EC2 creates is revoked; the task security group's egress is %d rule(s), TCP 443 to the endpoint security group %s and to the S3 prefix list %s, and the service uses no other group.",
		len(egress), endpointSG, v.s3PrefixList))
}
