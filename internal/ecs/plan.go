// Package ecs is the ECS/Fargate egress report: the configuration
// the ECS runtime would generate for one environment, as real AWS API input,
// and the predicate that judges the thirteen egress paths out of a Fargate task
// by evaluating that document.
//
// runtime.provider ecs never starts anything: an environment on Fargate
// cannot be proven contained, so the runtime refuses with this report.
package ecs

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecrtypes "github.com/aws/aws-sdk-go-v2/service/ecr/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	ecstypes "github.com/aws/aws-sdk-go-v2/service/ecs/types"
	"github.com/aws/aws-sdk-go-v2/service/route53resolver"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53resolver/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// Identifiers AWS assigns at creation are written in the plan as references,
// "ref:<what>", which every input that needs the identifier uses. Applying the
// plan replaces each with the identifier the creating call returned.
const (
	RefTaskSecurityGroup     = "ref:task-security-group"
	RefEndpointSecurityGroup = "ref:endpoint-security-group"
	RefRouteTable            = "ref:route-table"
	RefS3PrefixList          = "ref:s3-prefix-list" // the region's com.amazonaws.<region>.s3 prefix list
	RefS3Endpoint            = "ref:vpc-endpoint/s3"
	RefRuleGroup             = "ref:firewall-rule-group"
	refDomainListPrefix      = "ref:firewall-domain-list/"
	refEndpointPrefix        = "ref:vpc-endpoint/"
)

// AccountPlaceholder stands for the AWS account id where an input needs it
// (the execution role ARN, image URIs). The account is not one of the network
// variables; endpoint policies use ${aws:PrincipalAccount} instead, which AWS
// resolves itself.
const AccountPlaceholder = "ACCOUNT_ID"

// PrincipalAccount is the IAM policy variable endpoint policies name the
// account with.
const PrincipalAccount = "${aws:PrincipalAccount}"

// Fixed choices of the generated configuration.
const (
	PlatformVersion             = "1.4.0"
	ProbeContainerName          = "antifailure-probe"
	FirewallAssociationPriority = 101
	LogRetentionDays            = 7
	taskCPU, taskMemory         = "512", "1024"
	tagEnvironment              = "antifailure:environment"
)

// Interface endpoint services, by the short names the report uses.
var interfaceServices = []string{"ecr.api", "ecr.dkr", "logs"}

// Plan is the configuration the ECS runtime would generate for one
// environment. Every AWS input is the aws-sdk-go-v2 input (or, for EC2, whose
// client package is not linked into the provider, a struct with the EC2
// input's member names over the SDK's ec2/types shapes).
type Plan struct {
	Environment string
	Region      string
	Partition   string
	Account     string
	Cluster     string
	// ProbeImage is the containment probe container's image; empty: none.
	ProbeImage string
	Network    PlanNetwork
	// EgressCatalogue is the manifest's catalogue the DNS Firewall rules were
	// generated from, so the document can be judged on its own.
	EgressCatalogue []CatalogueEntry
	ECS             ECSInputs
	ECR             ECRInputs
	Logs            LogsInputs
	S3              S3Names
	EC2             EC2Inputs
	Route53Resolver DNSFirewallInputs
}

// PlanNetwork is the network the plan is for.
type PlanNetwork struct {
	Described bool
	Vpc       types.Vpc
	Subnets   []types.Subnet
}

// CatalogueEntry is one egress catalogue entry.
type CatalogueEntry struct {
	Host string
	Mode manifest.Mode
	Line int
}

// ECSInputs are the task definition and the service.
type ECSInputs struct {
	RegisterTaskDefinition *ecs.RegisterTaskDefinitionInput
	CreateService          *ecs.CreateServiceInput
}

// ECRInputs is the environment's own repository.
type ECRInputs struct {
	CreateRepository *ecr.CreateRepositoryInput
}

// LogsInputs is the environment's own log group.
type LogsInputs struct {
	CreateLogGroup     *cloudwatchlogs.CreateLogGroupInput
	PutRetentionPolicy *cloudwatchlogs.PutRetentionPolicyInput
}

// S3Names are the buckets the S3 gateway endpoint policy names.
type S3Names struct {
	Bucket      string // the environment's own bucket
	LayerBucket string // the region's ECR layer bucket
}

// EC2Inputs are the security groups, the route table and the VPC endpoints.
type EC2Inputs struct {
	TaskSecurityGroup     SecurityGroup
	EndpointSecurityGroup SecurityGroup
	RouteTable            RouteTable
	VpcEndpoints          []VpcEndpoint
}

// SecurityGroup is a security group as the EC2 calls that make it: create it
// (EC2 adds a rule allowing all egress), revoke that rule, authorize the rules
// the group should hold.
type SecurityGroup struct {
	Ref                           string
	CreateSecurityGroup           CreateSecurityGroupInput
	RevokeSecurityGroupEgress     *SecurityGroupRulesInput `json:",omitempty"`
	AuthorizeSecurityGroupEgress  *SecurityGroupRulesInput `json:",omitempty"`
	AuthorizeSecurityGroupIngress *SecurityGroupRulesInput `json:",omitempty"`
}

// CreateSecurityGroupInput has the members of ec2.CreateSecurityGroupInput.
type CreateSecurityGroupInput struct {
	Description       *string
	GroupName         *string
	VpcId             *string
	TagSpecifications []types.TagSpecification
}

// SecurityGroupRulesInput has the members of ec2.RevokeSecurityGroupEgressInput,
// ec2.AuthorizeSecurityGroupEgressInput and ec2.AuthorizeSecurityGroupIngressInput
// the plan uses.
type SecurityGroupRulesInput struct {
	GroupId       *string
	IpPermissions []types.IpPermission
}

// RouteTable is the subnets' route table: created, associated with every
// subnet, and holding Routes once the plan is applied: the local route EC2
// creates with the table and the prefix-list route CreateVpcEndpoint adds for
// the S3 gateway endpoint. The plan creates no other route.
type RouteTable struct {
	Ref                 string
	CreateRouteTable    CreateRouteTableInput
	AssociateRouteTable []AssociateRouteTableInput
	Routes              []types.Route
}

// CreateRouteTableInput has the members of ec2.CreateRouteTableInput.
type CreateRouteTableInput struct {
	VpcId             *string
	TagSpecifications []types.TagSpecification
}

// AssociateRouteTableInput has the members of ec2.AssociateRouteTableInput.
type AssociateRouteTableInput struct {
	RouteTableId *string
	SubnetId     *string
}

// VpcEndpoint is one VPC endpoint.
type VpcEndpoint struct {
	Ref               string
	CreateVpcEndpoint CreateVpcEndpointInput
}

// CreateVpcEndpointInput has the members of ec2.CreateVpcEndpointInput the
// plan uses.
type CreateVpcEndpointInput struct {
	ServiceName       *string
	VpcId             *string
	VpcEndpointType   types.VpcEndpointType
	PolicyDocument    *string
	PrivateDnsEnabled *bool
	RouteTableIds     []string
	SecurityGroupIds  []string
	SubnetIds         []string
	TagSpecifications []types.TagSpecification
}

// DNSFirewallInputs are the Route 53 Resolver DNS Firewall inputs: the rule
// group, one domain list per rule, the rules, the VPC association and the
// VPC's firewall config.
type DNSFirewallInputs struct {
	RuleGroupRef               string
	CreateFirewallRuleGroup    *route53resolver.CreateFirewallRuleGroupInput
	DomainLists                []DomainList
	CreateFirewallRule         []*route53resolver.CreateFirewallRuleInput
	AssociateFirewallRuleGroup *route53resolver.AssociateFirewallRuleGroupInput
	UpdateFirewallConfig       *route53resolver.UpdateFirewallConfigInput
}

// DomainList is one domain list: created, then filled.
type DomainList struct {
	Ref                      string
	CreateFirewallDomainList *route53resolver.CreateFirewallDomainListInput
	UpdateFirewallDomains    *route53resolver.UpdateFirewallDomainsInput
}

// Names derived for an environment.
type names struct {
	app, prefix, partition, dnsSuffix         string
	repository, logGroup, bucket, layerBucket string
	repositoryARN, logGroupARN, bucketARN     string
	layerObjectsARN, executionRole, imageURI  string
}

func deriveNames(app string, net Network) names {
	n := names{app: app, prefix: "antifailure-" + app, partition: "aws", dnsSuffix: "amazonaws.com"}
	switch {
	case strings.HasPrefix(net.Region, "cn-"):
		n.partition, n.dnsSuffix = "aws-cn", "amazonaws.com.cn"
	case strings.HasPrefix(net.Region, "us-gov-"):
		n.partition = "aws-us-gov"
	}
	n.repository = "antifailure/" + app
	n.logGroup = "/antifailure/" + app
	// Bucket names are global: the VPC id keeps two accounts' "shop" apart.
	vpc := strings.TrimPrefix(net.VPCID, "vpc-")
	base := app
	if max := 63 - len("antifailure--") - len(vpc); len(base) > max {
		base = strings.TrimRight(base[:max], "-")
	}
	n.bucket = "antifailure-" + base + "-" + vpc
	n.layerBucket = "prod-" + net.Region + "-starport-layer-bucket"
	n.repositoryARN = fmt.Sprintf("arn:%s:ecr:%s:%s:repository/%s", n.partition, net.Region, PrincipalAccount, n.repository)
	n.logGroupARN = fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s", n.partition, net.Region, PrincipalAccount, n.logGroup)
	n.bucketARN = fmt.Sprintf("arn:%s:s3:::%s", n.partition, n.bucket)
	n.layerObjectsARN = fmt.Sprintf("arn:%s:s3:::%s/*", n.partition, n.layerBucket)
	n.executionRole = fmt.Sprintf("arn:%s:iam::%s:role/%s-execution", n.partition, AccountPlaceholder, n.prefix)
	n.imageURI = fmt.Sprintf("%s.dkr.ecr.%s.%s/%s", AccountPlaceholder, net.Region, n.dnsSuffix, n.repository)
	return n
}

// serviceName is the VPC endpoint service name for a short service name.
func serviceName(region, short string) string { return "com.amazonaws." + region + "." + short }

// platformNames are the names the task itself must resolve: its VPC
// endpoints' private DNS names and the S3 names its image layers and its own
// bucket are fetched from. They come from the plan's names, not from a list
// kept beside the catalogue.
func platformNames(region string, n names) []dnsfirewall.PlatformName {
	suffix := "." + region + "." + n.dnsSuffix
	return []dnsfirewall.PlatformName{
		{Name: "platform-ecr-api", Domain: "api.ecr" + suffix},
		{Name: "platform-ecr-dkr", Domain: "*.dkr.ecr" + suffix},
		{Name: "platform-logs", Domain: "logs" + suffix},
		{Name: "platform-s3-ecr-layers", Domain: n.layerBucket + ".s3" + suffix},
		{Name: "platform-s3-bucket", Domain: n.bucket + ".s3" + suffix},
	}
}

// BuildPlan generates the configuration for the manifest's environment on
// the network. It fails only when the DNS Firewall rule group cannot be
// generated from the egress catalogue (a host DNS Firewall cannot express is
// refused by name).
func BuildPlan(m *manifest.Manifest, net Network) (*Plan, error) {
	n := deriveNames(m.Name, net)
	rules, err := dnsfirewall.Generate(m.Egress, platformNames(net.Region, n))
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Environment: m.Name,
		Region:      net.Region,
		Partition:   n.partition,
		Account:     AccountPlaceholder,
		Cluster:     net.Cluster,
		ProbeImage:  net.ProbeImage,
		S3:          S3Names{Bucket: n.bucket, LayerBucket: n.layerBucket},
	}
	p.Network.Described = net.Described
	p.Network.Vpc = types.Vpc{VpcId: aws.String(net.VPCID), CidrBlock: aws.String(net.VPCCIDR.String())}
	var subnetIDs []string
	for _, s := range net.Subnets {
		subnetIDs = append(subnetIDs, s.ID)
		p.Network.Subnets = append(p.Network.Subnets, types.Subnet{
			SubnetId: aws.String(s.ID), CidrBlock: aws.String(s.CIDR.String()), VpcId: aws.String(net.VPCID),
			AssignIpv6AddressOnCreation: aws.Bool(false),
		})
	}
	for _, e := range m.Egress {
		p.EgressCatalogue = append(p.EgressCatalogue, CatalogueEntry{Host: e.Host, Mode: e.Mode, Line: e.Pos.Line})
	}

	p.ECS.RegisterTaskDefinition = taskDefinition(m, net, n)
	p.ECS.CreateService = &ecs.CreateServiceInput{
		Cluster:         aws.String(net.Cluster),
		ServiceName:     aws.String(m.Name),
		TaskDefinition:  aws.String(n.prefix),
		DesiredCount:    aws.Int32(1),
		LaunchType:      ecstypes.LaunchTypeFargate,
		PlatformVersion: aws.String(PlatformVersion),
		NetworkConfiguration: &ecstypes.NetworkConfiguration{AwsvpcConfiguration: &ecstypes.AwsVpcConfiguration{
			Subnets:        subnetIDs,
			SecurityGroups: []string{RefTaskSecurityGroup},
			AssignPublicIp: ecstypes.AssignPublicIpDisabled,
		}},
		EnableExecuteCommand: false,
		PropagateTags:        ecstypes.PropagateTagsTaskDefinition,
		Tags:                 []ecstypes.Tag{{Key: aws.String(tagEnvironment), Value: aws.String(m.Name)}},
	}
	p.ECR.CreateRepository = &ecr.CreateRepositoryInput{
		RepositoryName:             aws.String(n.repository),
		ImageScanningConfiguration: &ecrtypes.ImageScanningConfiguration{ScanOnPush: true},
		Tags:                       []ecrtypes.Tag{{Key: aws.String(tagEnvironment), Value: aws.String(m.Name)}},
	}
	p.Logs.CreateLogGroup = &cloudwatchlogs.CreateLogGroupInput{
		LogGroupName: aws.String(n.logGroup),
		Tags:         map[string]string{tagEnvironment: m.Name},
	}
	p.Logs.PutRetentionPolicy = &cloudwatchlogs.PutRetentionPolicyInput{
		LogGroupName: aws.String(n.logGroup), RetentionInDays: aws.Int32(LogRetentionDays),
	}

	p.EC2 = ec2Inputs(m.Name, net, n, subnetIDs)
	p.Route53Resolver = dnsFirewallInputs(n, net, rules)
	return p, nil
}

func tags(resource types.ResourceType, app, name string) []types.TagSpecification {
	return []types.TagSpecification{{ResourceType: resource, Tags: []types.Tag{
		{Key: aws.String("Name"), Value: aws.String(name)},
		{Key: aws.String(tagEnvironment), Value: aws.String(app)},
	}}}
}

func taskDefinition(m *manifest.Manifest, net Network, n names) *ecs.RegisterTaskDefinitionInput {
	logs := func(prefix string) *ecstypes.LogConfiguration {
		return &ecstypes.LogConfiguration{LogDriver: ecstypes.LogDriverAwslogs, Options: map[string]string{
			"awslogs-group": n.logGroup, "awslogs-region": net.Region, "awslogs-stream-prefix": prefix,
		}}
	}
	var containers []ecstypes.ContainerDefinition
	if net.ProbeImage != "" {
		// The probe runs first, under exactly the rules the services run
		// under; every service waits for it to exit successfully.
		containers = append(containers, ecstypes.ContainerDefinition{
			Name: aws.String(ProbeContainerName), Image: aws.String(net.ProbeImage),
			Essential: aws.Bool(false), LogConfiguration: logs("probe"),
		})
	}
	for _, s := range m.Services {
		c := ecstypes.ContainerDefinition{
			Name: aws.String(s.Name),
			// Images are pulled from the environment's own repository only;
			// the manifest's image is mirrored there under the service's tag.
			Image:            aws.String(n.imageURI + ":" + s.Name),
			Essential:        aws.Bool(true),
			LogConfiguration: logs(s.Name),
		}
		if s.Image != "" {
			c.DockerLabels = map[string]string{"antifailure.image": s.Image}
		}
		if s.Port > 0 {
			c.PortMappings = []ecstypes.PortMapping{{ContainerPort: aws.Int32(int32(s.Port)), Protocol: ecstypes.TransportProtocolTcp}}
		}
		for _, k := range slices.Sorted(maps.Keys(s.Env)) {
			c.Environment = append(c.Environment, ecstypes.KeyValuePair{Name: aws.String(k), Value: aws.String(s.Env[k])})
		}
		if net.ProbeImage != "" {
			c.DependsOn = []ecstypes.ContainerDependency{{ContainerName: aws.String(ProbeContainerName), Condition: ecstypes.ContainerConditionSuccess}}
		}
		containers = append(containers, c)
	}
	return &ecs.RegisterTaskDefinitionInput{
		Family:                  aws.String(n.prefix),
		NetworkMode:             ecstypes.NetworkModeAwsvpc,
		RequiresCompatibilities: []ecstypes.Compatibility{ecstypes.CompatibilityFargate},
		Cpu:                     aws.String(taskCPU),
		Memory:                  aws.String(taskMemory),
		RuntimePlatform: &ecstypes.RuntimePlatform{
			OperatingSystemFamily: ecstypes.OSFamilyLinux, CpuArchitecture: ecstypes.CPUArchitectureX8664,
		},
		// The execution role pulls images and pushes logs for the Fargate
		// agent; its credentials are not given to the containers. There is
		// no task role: no credentials at 169.254.170.2.
		ExecutionRoleArn:     aws.String(n.executionRole),
		ContainerDefinitions: containers,
		Tags:                 []ecstypes.Tag{{Key: aws.String(tagEnvironment), Value: aws.String(m.Name)}},
	}
}

// allEgress is the rule EC2 puts in every new security group.
func allEgress() types.IpPermission {
	return types.IpPermission{IpProtocol: aws.String("-1"), IpRanges: []types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}}
}

func https() (from, to *int32, proto *string) {
	return aws.Int32(443), aws.Int32(443), aws.String("tcp")
}

func ec2Inputs(app string, net Network, n names, subnetIDs []string) EC2Inputs {
	from, to, proto := https()
	var out EC2Inputs
	out.TaskSecurityGroup = SecurityGroup{
		Ref: RefTaskSecurityGroup,
		CreateSecurityGroup: CreateSecurityGroupInput{
			GroupName:         aws.String(n.prefix + "-task"),
			Description:       aws.String("Antifailure " + app + ": the task ENI; egress only to the VPC endpoints, TCP 443"),
			VpcId:             aws.String(net.VPCID),
			TagSpecifications: tags(types.ResourceTypeSecurityGroup, app, n.prefix+"-task"),
		},
		RevokeSecurityGroupEgress: &SecurityGroupRulesInput{GroupId: aws.String(RefTaskSecurityGroup), IpPermissions: []types.IpPermission{allEgress()}},
		AuthorizeSecurityGroupEgress: &SecurityGroupRulesInput{GroupId: aws.String(RefTaskSecurityGroup), IpPermissions: []types.IpPermission{
			{IpProtocol: proto, FromPort: from, ToPort: to, UserIdGroupPairs: []types.UserIdGroupPair{{
				GroupId: aws.String(RefEndpointSecurityGroup), Description: aws.String("VPC interface endpoints: ECR API, ECR Docker, CloudWatch Logs"),
			}}},
			{IpProtocol: proto, FromPort: from, ToPort: to, PrefixListIds: []types.PrefixListId{{
				PrefixListId: aws.String(RefS3PrefixList), Description: aws.String("S3 gateway endpoint"),
			}}},
		}},
	}
	out.EndpointSecurityGroup = SecurityGroup{
		Ref: RefEndpointSecurityGroup,
		CreateSecurityGroup: CreateSecurityGroupInput{
			GroupName:         aws.String(n.prefix + "-endpoints"),
			Description:       aws.String("Antifailure " + app + ": the VPC interface endpoints; TCP 443 from the task only"),
			VpcId:             aws.String(net.VPCID),
			TagSpecifications: tags(types.ResourceTypeSecurityGroup, app, n.prefix+"-endpoints"),
		},
		RevokeSecurityGroupEgress: &SecurityGroupRulesInput{GroupId: aws.String(RefEndpointSecurityGroup), IpPermissions: []types.IpPermission{allEgress()}},
		AuthorizeSecurityGroupIngress: &SecurityGroupRulesInput{GroupId: aws.String(RefEndpointSecurityGroup), IpPermissions: []types.IpPermission{
			{IpProtocol: proto, FromPort: from, ToPort: to, UserIdGroupPairs: []types.UserIdGroupPair{{
				GroupId: aws.String(RefTaskSecurityGroup), Description: aws.String("the environment's task"),
			}}},
		}},
	}
	out.RouteTable = RouteTable{
		Ref:              RefRouteTable,
		CreateRouteTable: CreateRouteTableInput{VpcId: aws.String(net.VPCID), TagSpecifications: tags(types.ResourceTypeRouteTable, app, n.prefix)},
		Routes: []types.Route{
			{DestinationCidrBlock: aws.String(net.VPCCIDR.String()), GatewayId: aws.String("local"), Origin: types.RouteOriginCreateRouteTable, State: types.RouteStateActive},
			{DestinationPrefixListId: aws.String(RefS3PrefixList), GatewayId: aws.String(RefS3Endpoint), Origin: types.RouteOriginCreateRoute, State: types.RouteStateActive},
		},
	}
	for _, id := range subnetIDs {
		out.RouteTable.AssociateRouteTable = append(out.RouteTable.AssociateRouteTable,
			AssociateRouteTableInput{RouteTableId: aws.String(RefRouteTable), SubnetId: aws.String(id)})
	}
	policies := endpointPolicies(n)
	for _, short := range interfaceServices {
		out.VpcEndpoints = append(out.VpcEndpoints, VpcEndpoint{
			Ref: refEndpointPrefix + short,
			CreateVpcEndpoint: CreateVpcEndpointInput{
				ServiceName: aws.String(serviceName(net.Region, short)), VpcId: aws.String(net.VPCID),
				VpcEndpointType: types.VpcEndpointTypeInterface, PolicyDocument: aws.String(policies[short]),
				PrivateDnsEnabled: aws.Bool(true), SubnetIds: subnetIDs, SecurityGroupIds: []string{RefEndpointSecurityGroup},
				TagSpecifications: tags(types.ResourceTypeVpcEndpoint, app, n.prefix+"-"+short),
			},
		})
	}
	out.VpcEndpoints = append(out.VpcEndpoints, VpcEndpoint{
		Ref: RefS3Endpoint,
		CreateVpcEndpoint: CreateVpcEndpointInput{
			ServiceName: aws.String(serviceName(net.Region, "s3")), VpcId: aws.String(net.VPCID),
			VpcEndpointType: types.VpcEndpointTypeGateway, PolicyDocument: aws.String(policies["s3"]),
			RouteTableIds:     []string{RefRouteTable},
			TagSpecifications: tags(types.ResourceTypeVpcEndpoint, app, n.prefix+"-s3"),
		},
	})
	return out
}

// PolicyDocument is an IAM policy document as endpoint policies use it.
type PolicyDocument struct {
	Version   string
	Statement []Statement
}

// Statement is one policy statement. Action and Resource accept a string or a
// list, as IAM does; NotAction, NotResource and NotPrincipal are read so the
// predicate can refuse them.
type Statement struct {
	Sid          string         `json:",omitempty"`
	Effect       string         `json:",omitempty"`
	Principal    any            `json:",omitempty"`
	NotPrincipal any            `json:",omitempty"`
	Action       StringOrList   `json:",omitempty"`
	NotAction    StringOrList   `json:",omitempty"`
	Resource     StringOrList   `json:",omitempty"`
	NotResource  StringOrList   `json:",omitempty"`
	Condition    map[string]any `json:",omitempty"`
}

// StringOrList is an IAM value that is a string or a list of strings.
type StringOrList []string

// UnmarshalJSON reads a string or a list.
func (s *StringOrList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = StringOrList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("policy value is neither a string nor a list of strings: %s", b)
	}
	*s = many
	return nil
}

// MarshalJSON writes one value as a string, several as a list.
func (s StringOrList) MarshalJSON() ([]byte, error) {
	if len(s) == 1 {
		return json.Marshal(s[0])
	}
	return json.Marshal([]string(s))
}

func endpointPolicies(n names) map[string]string {
	ecrPolicy := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "AuthorizationToken", Effect: "Allow", Principal: "*",
			Action: StringOrList{"ecr:GetAuthorizationToken"}, Resource: StringOrList{"*"}},
		{Sid: "PullFromThisEnvironmentsRepositoryOnly", Effect: "Allow", Principal: "*",
			Action:   StringOrList{"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"},
			Resource: StringOrList{n.repositoryARN}},
	}}
	logsPolicy := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "WriteThisEnvironmentsLogGroupOnly", Effect: "Allow", Principal: "*",
			Action:   StringOrList{"logs:CreateLogStream", "logs:PutLogEvents"},
			Resource: StringOrList{n.logGroupARN, n.logGroupARN + ":*"}},
	}}
	s3Policy := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "ECRImageLayers", Effect: "Allow", Principal: "*",
			Action: StringOrList{"s3:GetObject"}, Resource: StringOrList{n.layerObjectsARN}},
		{Sid: "ThisEnvironmentsBucketOnly", Effect: "Allow", Principal: "*",
			Action:   StringOrList{"s3:GetObject", "s3:ListBucket", "s3:PutObject"},
			Resource: StringOrList{n.bucketARN, n.bucketARN + "/*"}},
	}}
	out := map[string]string{}
	for k, d := range map[string]PolicyDocument{"ecr.api": ecrPolicy, "ecr.dkr": ecrPolicy, "logs": logsPolicy, "s3": s3Policy} {
		b, err := json.Marshal(d)
		if err != nil {
			panic(err) // static shapes
		}
		out[k] = string(b)
	}
	return out
}

func dnsFirewallInputs(n names, net Network, rules []dnsfirewall.Rule) DNSFirewallInputs {
	envTag := []r53types.Tag{{Key: aws.String(tagEnvironment), Value: aws.String(n.app)}}
	out := DNSFirewallInputs{
		RuleGroupRef: RefRuleGroup,
		CreateFirewallRuleGroup: &route53resolver.CreateFirewallRuleGroupInput{
			Name: aws.String(n.prefix), CreatorRequestId: aws.String(requestID(n.prefix, "rule-group")), Tags: envTag,
		},
		AssociateFirewallRuleGroup: &route53resolver.AssociateFirewallRuleGroupInput{
			Name: aws.String(n.prefix), CreatorRequestId: aws.String(requestID(n.prefix, "association", net.VPCID)),
			FirewallRuleGroupId: aws.String(RefRuleGroup), VpcId: aws.String(net.VPCID),
			Priority: aws.Int32(FirewallAssociationPriority), Tags: envTag,
		},
		UpdateFirewallConfig: &route53resolver.UpdateFirewallConfigInput{
			ResourceId: aws.String(net.VPCID), FirewallFailOpen: r53types.FirewallFailOpenStatusDisabled,
		},
	}
	for _, r := range rules {
		ref := refDomainListPrefix + r.Name
		out.DomainLists = append(out.DomainLists, DomainList{
			Ref: ref,
			CreateFirewallDomainList: &route53resolver.CreateFirewallDomainListInput{
				Name: aws.String(shortName(n.prefix + "-" + r.Name)), CreatorRequestId: aws.String(requestID(n.prefix, "domain-list", r.Name)), Tags: envTag,
			},
			UpdateFirewallDomains: &route53resolver.UpdateFirewallDomainsInput{
				FirewallDomainListId: aws.String(ref), Operation: r53types.FirewallDomainUpdateOperationReplace,
				Domains: append([]string(nil), r.Domains...),
			},
		})
		rule := &route53resolver.CreateFirewallRuleInput{
			Name: aws.String(r.Name), Priority: aws.Int32(int32(r.Priority)), Action: r.Action,
			FirewallRuleGroupId: aws.String(RefRuleGroup), FirewallDomainListId: aws.String(ref),
			CreatorRequestId: aws.String(requestID(n.prefix, "rule", r.Name)),
		}
		if r.Action == r53types.ActionBlock {
			rule.BlockResponse = r53types.BlockResponseNxdomain
		} else {
			// A forwarded host must resolve through its CNAME chain, whose
			// targets the catalogue does not name.
			rule.FirewallDomainRedirectionAction = r53types.FirewallDomainRedirectionActionTrustRedirectionDomain
		}
		out.CreateFirewallRule = append(out.CreateFirewallRule, rule)
	}
	return out
}

// requestID is a deterministic CreatorRequestId, so the plan document is
// stable and re-applying it is idempotent.
func requestID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "antifailure-" + hex.EncodeToString(sum[:12])
}

// shortName keeps a Route 53 Resolver name within 64 characters.
func shortName(s string) string {
	if len(s) <= 64 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return s[:55] + "-" + hex.EncodeToString(sum[:4])
}

// EndpointPolicies returns the plan's VPC endpoint policies by short service
// name (ecr.api, ecr.dkr, logs, s3).
func (p *Plan) EndpointPolicies() map[string]string {
	out := map[string]string{}
	for _, e := range p.EC2.VpcEndpoints {
		short := strings.TrimPrefix(aws.ToString(e.CreateVpcEndpoint.ServiceName), "com.amazonaws."+p.Region+".")
		out[short] = aws.ToString(e.CreateVpcEndpoint.PolicyDocument)
	}
	return out
}

// FirewallRules returns the plan's DNS Firewall rules as the check reads
// them, in priority order.
func (p *Plan) FirewallRules() ([]dnsfirewall.Rule, error) {
	domains := map[string][]string{}
	for _, l := range p.Route53Resolver.DomainLists {
		if l.UpdateFirewallDomains != nil {
			domains[aws.ToString(l.UpdateFirewallDomains.FirewallDomainListId)] = l.UpdateFirewallDomains.Domains
		}
	}
	var rules []r53types.FirewallRule
	for _, r := range p.Route53Resolver.CreateFirewallRule {
		if r == nil {
			continue
		}
		rules = append(rules, r53types.FirewallRule{
			Name: r.Name, Priority: r.Priority, Action: r.Action,
			FirewallDomainListId: r.FirewallDomainListId, FirewallRuleGroupId: r.FirewallRuleGroupId,
		})
	}
	out, err := dnsfirewall.FromSDK(rules, domains)
	if err != nil {
		return nil, err
	}
	return dnsfirewall.Ordered(out), nil
}

// catalogue returns the plan's egress catalogue as manifest entries.
func (p *Plan) catalogue() []manifest.EgressRule {
	var out []manifest.EgressRule
	for _, e := range p.EgressCatalogue {
		out = append(out, manifest.EgressRule{Host: e.Host, Mode: e.Mode, Pos: manifest.Position{Line: e.Line, Column: 1}})
	}
	return out
}
