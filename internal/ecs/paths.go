package ecs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	ecstypes "github.com/aws/aws-sdk-go-v2/service/ecs/types"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53resolver/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
)

// Verdict is what the report says about one egress path.
type Verdict string

// The verdicts. Unproven is not a weaker closed: it is never rounded to
// closed, and nothing moves it on an absence of evidence.
const (
	Closed   Verdict = "closed"
	Open     Verdict = "open"
	Unproven Verdict = "unproven"
)

// Evidence is the grade of evidence behind a verdict.
type Evidence string

// The evidence grades.
const (
	// Computed: a predicate over the generated JSON document.
	Computed Evidence = "computed"
	// Recorded: an attempt made inside a running task, supplied as probe output.
	Recorded Evidence = "recorded"
	// Documented: a cited AWS statement.
	Documented Evidence = "documented"
	// NoEvidence: nothing decides it.
	NoEvidence Evidence = "none"
)

// Citation is an AWS statement a documented verdict rests on.
type Citation struct {
	Title string
	URL   string
	Quote string
}

func (c Citation) String() string { return fmt.Sprintf("AWS, %q: %q (%s)", c.Title, c.Quote, c.URL) }

// The AWS statements the documented verdicts cite.
var (
	CiteTaskMetadata = Citation{
		Title: "Amazon ECS task metadata endpoint version 4 for tasks on Fargate",
		URL:   "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-metadata-endpoint-v4-fargate.html",
		Quote: "The task metadata endpoint is on by default for all Amazon ECS tasks run on AWS Fargate that use platform version 1.4.0 or later.",
	}
	CiteInstanceProfiles = Citation{
		Title: "Amazon ECS task IAM role",
		URL:   "https://docs.aws.amazon.com/AmazonECS/latest/developerguide/task-iam-roles.html",
		Quote: "On ECS Fargate, EC2 instance profiles are not available for containers in your tasks.",
	}
	CiteTimeSync = Citation{
		Title: "Set the time reference on your EC2 instance to use the local Amazon Time Sync Service",
		URL:   "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configure-ec2-ntp.html",
		Quote: "NTP and PTP connections do not require any VPC configuration changes, and your instance does not require access to the internet.",
	}
)

// PathVerdict is the report's line for one egress path.
type PathVerdict struct {
	ID          string
	Description string
	Verdict     Verdict
	Evidence    Evidence
	// ClosedBy is what closes the path; empty unless Verdict is closed.
	ClosedBy string
	// Detail says what was inspected and why the verdict follows, citing the
	// AWS statement for documented verdicts and listing recorded attempts.
	Detail   string
	Citation *Citation
	// Attempts are the recorded attempts for this path, kept apart from the
	// computed closure.
	Attempts []Attempt
}

// Path ids, in the order the report lists them.
const (
	PathPublicIP            = "public-ip"
	PathNATGateway          = "nat-gateway"
	PathIPv6Egress          = "ipv6-egress"
	PathPrivateRoutes       = "private-routes"
	PathVPCLateral          = "vpc-lateral"
	PathInterfaceEndpoints  = "interface-endpoints"
	PathS3Gateway           = "s3-gateway"
	PathAmazonDNS           = "amazon-dns"
	PathECSExec             = "ecs-exec"
	PathTaskRoleCredentials = "task-role-credentials"
	PathTaskMetadata        = "task-metadata"
	PathInstanceMetadata    = "instance-metadata"
	PathTimeSync            = "time-sync"
)

type pathDef struct {
	id, description, closedBy string
	eval                      func(v *view) result
}

type result struct {
	verdict  Verdict
	evidence Evidence
	detail   string
	cite     *Citation
}

func closedComputed(detail string) result { return result{Closed, Computed, detail, nil} }
func openComputed(problems []string) result {
	return result{Open, Computed, "Not closed: " + strings.Join(problems, "; ") + ".", nil}
}

// paths is the enumeration: thirteen egress paths out of a Fargate task
// (platform version 1.4.0 or later).
var paths = []pathDef{
	{PathPublicIP, "task ENI public IP + internet gateway", "assignPublicIp DISABLED; no 0.0.0.0/0 route to an igw-", evalPublicIP},
	{PathNATGateway, "default route through a NAT gateway", "route table holds only local + S3 prefix-list routes", evalNATGateway},
	{PathIPv6Egress, "::/0 through an egress-only internet gateway", "no IPv6 route or assignment", evalIPv6},
	{PathPrivateRoutes, "peering, transit gateway, VPN, other VPC routes", "no pcx-/tgw-/vgw-/eni- targets", evalPrivateRoutes},
	{PathVPCLateral, "other addresses inside the VPC CIDR", "default allow-all egress revoked; egress only to the endpoint security group and the S3 prefix list, TCP 443", evalVPCLateral},
	{PathInterfaceEndpoints, "ECR API, ECR Docker, CloudWatch Logs endpoints used for any repository or log group", "endpoint policies naming this environment's own repository and log group", evalInterfaceEndpoints},
	{PathS3Gateway, "S3 gateway endpoint used for any bucket", "endpoint policy naming the region's ECR layer bucket and this environment's bucket", evalS3Gateway},
	{PathAmazonDNS, "recursive public resolution by the VPC resolver, which security groups and NACLs cannot filter", "Route 53 Resolver DNS Firewall rule group, last rule BLOCK on every domain, fail-open disabled", evalAmazonDNS},
	{PathECSExec, "ECS Exec session channel", "enableExecuteCommand false", evalECSExec},
	{PathTaskRoleCredentials, "task role credentials at 169.254.170.2", "no taskRoleArn", evalTaskRole},
	{PathTaskMetadata, "task metadata endpoint v4, 169.254.170.2", "", evalTaskMetadata},
	{PathInstanceMetadata, "169.254.169.254", "", evalInstanceMetadata},
	{PathTimeSync, "Amazon Time Sync Service, 169.254.169.123", "", evalTimeSync},
}

// PathIDs lists the thirteen path ids in report order.
func PathIDs() []string {
	ids := make([]string, len(paths))
	for i, p := range paths {
		ids[i] = p.id
	}
	return ids
}

// Evaluate judges the thirteen paths by evaluating a plan document, then
// applies recorded attempts: a recorded escape turns a path open; a recorded
// block closes an unproven path (evidence recorded); a recorded block on a
// computed closure is listed beside it, not merged into it.
func Evaluate(doc []byte, attempts []Attempt) ([]PathVerdict, error) {
	p, err := ParsePlan(doc)
	if err != nil {
		return nil, err
	}
	v := newView(p)
	out := make([]PathVerdict, 0, len(paths))
	for _, def := range paths {
		r := def.eval(v)
		pv := PathVerdict{ID: def.id, Description: def.description, Verdict: r.verdict, Evidence: r.evidence, Detail: r.detail, Citation: r.cite}
		if r.verdict == Closed {
			pv.ClosedBy = def.closedBy
		}
		applyAttempts(&pv, attempts)
		out = append(out, pv)
	}
	return out, nil
}

// view is the decoded document with what several predicates need.
type view struct {
	p            *Plan
	vpcCIDR      string
	s3Endpoint   *VpcEndpoint
	s3PrefixList string
	fargate      bool
	platform     string
	probe        string
}

func newView(p *Plan) *view {
	v := &view{p: p, vpcCIDR: aws.ToString(p.Network.Vpc.CidrBlock)}
	for i, e := range p.EC2.VpcEndpoints {
		if aws.ToString(e.CreateVpcEndpoint.ServiceName) == serviceName(p.Region, "s3") && endpointType(e) == types.VpcEndpointTypeGateway {
			v.s3Endpoint = &p.EC2.VpcEndpoints[i]
		}
	}
	if v.s3Endpoint != nil {
		for _, r := range p.EC2.RouteTable.Routes {
			if r.DestinationPrefixListId != nil && aws.ToString(r.GatewayId) == v.s3Endpoint.Ref {
				v.s3PrefixList = *r.DestinationPrefixListId
			}
		}
	}
	td, svc := p.ECS.RegisterTaskDefinition, p.ECS.CreateService
	if td != nil && svc != nil {
		for _, c := range td.RequiresCompatibilities {
			if c == ecstypes.CompatibilityFargate {
				v.fargate = svc.LaunchType == ecstypes.LaunchTypeFargate
				for _, cp := range svc.CapacityProviderStrategy {
					if n := aws.ToString(cp.CapacityProvider); n == "FARGATE" || n == "FARGATE_SPOT" {
						v.fargate = true
					}
				}
			}
		}
		v.platform = aws.ToString(svc.PlatformVersion)
		for _, c := range td.ContainerDefinitions {
			if aws.ToString(c.Name) == ProbeContainerName {
				v.probe = aws.ToString(c.Image)
			}
		}
	}
	return v
}

func endpointType(e VpcEndpoint) types.VpcEndpointType {
	if e.CreateVpcEndpoint.VpcEndpointType == "" {
		return types.VpcEndpointTypeGateway // CreateVpcEndpoint's default
	}
	return e.CreateVpcEndpoint.VpcEndpointType
}

// routeTarget names a route's target for messages.
func routeTarget(r types.Route) string {
	for _, t := range []*string{r.GatewayId, r.NatGatewayId, r.EgressOnlyInternetGatewayId, r.TransitGatewayId,
		r.VpcPeeringConnectionId, r.NetworkInterfaceId, r.InstanceId, r.LocalGatewayId, r.CarrierGatewayId, r.CoreNetworkArn, r.OdbNetworkArn} {
		if t != nil && *t != "" {
			return *t
		}
	}
	return "no target"
}

func routeDest(r types.Route) string {
	for _, d := range []*string{r.DestinationCidrBlock, r.DestinationIpv6CidrBlock, r.DestinationPrefixListId} {
		if d != nil && *d != "" {
			return *d
		}
	}
	return "no destination"
}

func describeRoute(r types.Route) string {
	return fmt.Sprintf("route %s -> %s", routeDest(r), routeTarget(r))
}

// classifyRoute assigns a route the one path it opens, or "" for the two
// routes the closure allows: local for the VPC's own CIDR, and the S3
// gateway endpoint's prefix-list route.
func (v *view) classifyRoute(r types.Route) string {
	gw := aws.ToString(r.GatewayId)
	switch {
	case aws.ToString(r.DestinationIpv6CidrBlock) != "" || aws.ToString(r.EgressOnlyInternetGatewayId) != "":
		return PathIPv6Egress
	case strings.HasPrefix(gw, "igw-"):
		return PathPublicIP
	case strings.HasPrefix(gw, "vgw-"), aws.ToString(r.VpcPeeringConnectionId) != "", aws.ToString(r.TransitGatewayId) != "",
		aws.ToString(r.NetworkInterfaceId) != "", aws.ToString(r.InstanceId) != "", aws.ToString(r.LocalGatewayId) != "",
		aws.ToString(r.CarrierGatewayId) != "", aws.ToString(r.CoreNetworkArn) != "", aws.ToString(r.OdbNetworkArn) != "":
		return PathPrivateRoutes
	case aws.ToString(r.NatGatewayId) != "":
		return PathNATGateway
	case gw == "local":
		if aws.ToString(r.DestinationCidrBlock) == v.vpcCIDR {
			return ""
		}
		return PathPrivateRoutes // another CIDR routed inside: another VPC's range
	case v.s3Endpoint != nil && gw == v.s3Endpoint.Ref && aws.ToString(r.DestinationPrefixListId) != "":
		return ""
	}
	return PathNATGateway // anything else breaks "only local + S3 prefix-list routes"
}

func (v *view) routesOpening(path string) []string {
	var out []string
	for _, r := range v.p.EC2.RouteTable.Routes {
		if v.classifyRoute(r) == path {
			out = append(out, describeRoute(r))
		}
	}
	return out
}

func (v *view) awsvpc() *ecstypes.AwsVpcConfiguration {
	if s := v.p.ECS.CreateService; s != nil && s.NetworkConfiguration != nil {
		return s.NetworkConfiguration.AwsvpcConfiguration
	}
	return nil
}

func evalPublicIP(v *view) result {
	var problems []string
	switch c := v.awsvpc(); {
	case c == nil:
		problems = append(problems, "CreateService has no awsvpcConfiguration, so nothing states assignPublicIp")
	case c.AssignPublicIp != ecstypes.AssignPublicIpDisabled:
		state := string(c.AssignPublicIp)
		if state == "" {
			state = "not stated"
		}
		problems = append(problems, "CreateService assignPublicIp is "+state+": the task ENI gets a public address")
	}
	for _, r := range v.routesOpening(PathPublicIP) {
		problems = append(problems, r+" reaches the internet gateway")
	}
	if len(problems) > 0 {
		return openComputed(problems)
	}
	return closedComputed(fmt.Sprintf("CreateService assignPublicIp is DISABLED, and none of the route table's %d routes targets an internet gateway.", len(v.p.EC2.RouteTable.Routes)))
}

func evalNATGateway(v *view) result {
	problems := v.routesOpening(PathNATGateway)
	associated := map[string]bool{}
	for _, a := range v.p.EC2.RouteTable.AssociateRouteTable {
		if aws.ToString(a.RouteTableId) == v.p.EC2.RouteTable.Ref {
			associated[aws.ToString(a.SubnetId)] = true
		}
	}
	if c := v.awsvpc(); c != nil {
		for _, s := range c.Subnets {
			if !associated[s] {
				problems = append(problems, "the task's subnet "+s+" is not associated with the plan's route table, so its routes are not in this document")
			}
		}
	} else {
		problems = append(problems, "CreateService has no awsvpcConfiguration, so the task's subnets are unknown")
	}
	if len(problems) > 0 {
		return openComputed(problems)
	}
	return closedComputed(fmt.Sprintf("The route table associated with every task subnet holds %d routes: local for %s and the S3 gateway endpoint's prefix-list route; no NAT gateway or other target.",
		len(v.p.EC2.RouteTable.Routes), v.vpcCIDR))
}

func evalIPv6(v *view) result {
	problems := v.routesOpening(PathIPv6Egress)
	if len(v.p.Network.Vpc.Ipv6CidrBlockAssociationSet) > 0 {
		problems = append(problems, "the VPC has an IPv6 CIDR block")
	}
	for _, s := range v.p.Network.Subnets {
		id := aws.ToString(s.SubnetId)
		switch {
		case len(s.Ipv6CidrBlockAssociationSet) > 0:
			problems = append(problems, "subnet "+id+" has an IPv6 CIDR block, so the task ENI can get an IPv6 address")
		case aws.ToBool(s.AssignIpv6AddressOnCreation), aws.ToBool(s.Ipv6Native):
			problems = append(problems, "subnet "+id+" assigns IPv6 addresses")
		}
	}
	if len(problems) > 0 {
		return openComputed(problems)
	}
	return closedComputed(fmt.Sprintf("No route has an IPv6 destination or an egress-only internet gateway, and neither the VPC nor its %d subnet(s) carry an IPv6 block.", len(v.p.Network.Subnets)))
}

func evalPrivateRoutes(v *view) result {
	if problems := v.routesOpening(PathPrivateRoutes); len(problems) > 0 {
		return openComputed(problems)
	}
	return closedComputed("No route targets a peering connection, transit gateway, virtual private gateway, network interface, instance or other gateway, and the only local route is the VPC's own " + v.vpcCIDR + ".")
}

func evalAmazonDNS(v *view) result {
	var problems []string
	fw := v.p.Route53Resolver
	vpc := aws.ToString(v.p.Network.Vpc.VpcId)
	rules, err := v.p.FirewallRules()
	if err != nil {
		problems = append(problems, "the DNS Firewall rules cannot be read: "+err.Error())
	}
	for _, r := range fw.CreateFirewallRule {
		if r != nil && aws.ToString(r.FirewallRuleGroupId) != fw.RuleGroupRef {
			problems = append(problems, fmt.Sprintf("rule %s belongs to rule group %s, not to the associated group %s", aws.ToString(r.Name), aws.ToString(r.FirewallRuleGroupId), fw.RuleGroupRef))
		}
	}
	a := fw.AssociateFirewallRuleGroup
	switch {
	case fw.CreateFirewallRuleGroup == nil || fw.RuleGroupRef == "":
		problems = append(problems, "the document creates no DNS Firewall rule group")
	case a == nil:
		problems = append(problems, "the rule group is not associated with the VPC")
	default:
		if aws.ToString(a.VpcId) != vpc {
			problems = append(problems, fmt.Sprintf("the rule group is associated with %s, not with the task's VPC %s", aws.ToString(a.VpcId), vpc))
		}
		if aws.ToString(a.FirewallRuleGroupId) != fw.RuleGroupRef {
			problems = append(problems, "the association names rule group "+aws.ToString(a.FirewallRuleGroupId)+", not "+fw.RuleGroupRef)
		}
		if p := aws.ToInt32(a.Priority); p < 100 || p > 9900 {
			problems = append(problems, fmt.Sprintf("the association's priority %d is outside 100-9900", p))
		}
	}
	failOpen := r53types.FirewallFailOpenStatus("")
	if c := fw.UpdateFirewallConfig; c != nil && aws.ToString(c.ResourceId) == vpc {
		failOpen = c.FirewallFailOpen
	}
	findings := dnsfirewall.Check(dnsfirewall.Input{Rules: rules, FailOpen: failOpen, Catalogue: v.p.catalogue()})
	for _, f := range findings {
		problems = append(problems, f.String())
	}
	if len(problems) > 0 {
		return openComputed(problems)
	}
	last := rules[len(rules)-1]
	return closedComputed(fmt.Sprintf("Rule group %s is associated with %s at priority %d; its %d rules end with %s (BLOCK * at priority %d), every locally answered catalogue host is blocked ahead of any ALLOW covering it, and FirewallFailOpen is DISABLED. The DNS Firewall check finds nothing.",
		aws.ToString(fw.CreateFirewallRuleGroup.Name), vpc, aws.ToInt32(a.Priority), len(rules), last.Name, last.Priority))
}

func evalECSExec(v *view) result {
	s := v.p.ECS.CreateService
	switch {
	case s == nil:
		return openComputed([]string{"the document has no CreateService, so nothing states enableExecuteCommand"})
	case s.EnableExecuteCommand:
		return openComputed([]string{"CreateService enableExecuteCommand is true: an ECS Exec session is a channel in and out of the task"})
	}
	return closedComputed("CreateService enableExecuteCommand is false (the SDK leaves a false value out of the request; false is the API's default).")
}

func evalTaskRole(v *view) result {
	td := v.p.ECS.RegisterTaskDefinition
	switch {
	case td == nil:
		return openComputed([]string{"the document has no RegisterTaskDefinition, so nothing states the task role"})
	case aws.ToString(td.TaskRoleArn) != "":
		return openComputed([]string{"the task definition has taskRoleArn " + aws.ToString(td.TaskRoleArn) + ": its credentials are served to the containers at 169.254.170.2"})
	}
	return closedComputed("The task definition has no taskRoleArn, so no credentials are served to the containers at 169.254.170.2 (the execution role's credentials go to the Fargate agent, not to the containers).")
}

// platformAtLeast140 reports whether a Fargate platform version is LATEST
// (or unset, which means LATEST) or 1.4.0 or later.
func platformAtLeast140(version string) bool {
	if version == "" || strings.EqualFold(version, "LATEST") {
		return true
	}
	parts := strings.Split(version, ".")
	want := []int{1, 4, 0}
	for i := 0; i < 3; i++ {
		n := 0
		if i < len(parts) {
			var err error
			if n, err = strconv.Atoi(parts[i]); err != nil {
				return false
			}
		}
		if n != want[i] {
			return n > want[i]
		}
	}
	return true
}

func (v *view) notFargate() string {
	return fmt.Sprintf("The document does not describe a Fargate task on platform version 1.4.0 or later (Fargate: %v, platform version %q); the statements this report cites cover only that, so nothing decides the path.", v.fargate, v.platform)
}

func evalTaskMetadata(v *view) result {
	if !v.fargate || !platformAtLeast140(v.platform) {
		return result{Unproven, NoEvidence, v.notFargate(), nil}
	}
	c := CiteTaskMetadata
	return result{Open, Documented, fmt.Sprintf("The task runs on Fargate platform version %s; nothing in the configuration turns the endpoint off, and AWS documents no way to. %s", v.platform, c), &c}
}

func (v *view) probeSentence() string {
	if v.probe == "" {
		return "With " + EnvProbeImage + " unset the plan carries no probe container, so no attempt can be recorded from it; set it, run the task, and pass the probe's output as recorded_attempts."
	}
	return "The plan carries the probe container " + v.probe + "; pass its output as recorded_attempts to settle the path."
}

// instance-metadata and time-sync are decided by neither the configuration
// nor AWS's documentation: evidence none until a recorded attempt exists. The
// detail cites what AWS does state, and says what it does not.
func evalInstanceMetadata(v *view) result {
	if !v.fargate {
		return result{Unproven, NoEvidence, v.notFargate() + " " + v.probeSentence(), nil}
	}
	c := CiteInstanceProfiles
	return result{Unproven, NoEvidence, "Nothing in the configuration addresses 169.254.169.254. AWS states that Fargate gives containers no instance profile; it does not state that the address stops answering, and those are different claims, so the statement is cited, not counted as evidence. " +
		v.probeSentence() + " " + c.String(), &c}
}

func evalTimeSync(v *view) result {
	c := CiteTimeSync
	what := "the task"
	if !v.fargate {
		what = "the task, which the document does not even place on Fargate"
	}
	return result{Unproven, NoEvidence, "Nothing in the configuration addresses 169.254.169.123. AWS documents the local Time Sync Service for EC2 instances, reached without any VPC configuration, and is silent on whether it answers " +
		what + "; silence is not evidence either way. " + v.probeSentence() + " " + c.String(), &c}
}
