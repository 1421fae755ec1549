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
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/aws-sdk-go-v2/service/route53resolver"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53resolver/types"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

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
// and the account is not known (neither a cluster ARN nor AF_ECS_ACCOUNT_ID).
// It is never replaced by a policy variable such as ${aws:PrincipalAccount}:
// that names whoever signs the request, not the environment's account. A
// plan that holds the placeholder leaves the endpoint paths unproven.
const AccountPlaceholder = "ACCOUNT_ID"

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
	// ApplyOrder is the order the inputs are applied in, by the names of
	// their groups: the execution role and the bucket exist before any
	// endpoint policy names them.
	ApplyOrder      []string
	IAM             IAMInputs
	ECS             ECSInputs
	ECR             ECRInputs
	Logs            LogsInputs
	S3              S3Inputs
	EC2             EC2Inputs
	Route53Resolver DNSFirewallInputs
}

// The groups of inputs, as ApplyOrder names them.
const (
	StepIAM             = "IAM"
	StepS3              = "S3"
	StepECR             = "ECR"
	StepLogs            = "Logs"
	StepEC2             = "EC2"
	StepRoute53Resolver = "Route53Resolver"
	StepECS             = "ECS"
)

// applyOrder creates what policies name (role, bucket, repository, log
// group) before the endpoints whose policies name them, and the service last.
var applyOrder = []string{StepIAM, StepS3, StepECR, StepLogs, StepEC2, StepRoute53Resolver, StepECS}

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

// S3Inputs are the buckets the S3 gateway endpoint policy names: the
// environment's own, which the plan creates (bucket names are global: a name
// the plan does not create is whoever's owns it), and the region's ECR layer
// bucket, which AWS owns.
type S3Inputs struct {
	Bucket               string // the environment's own bucket
	LayerBucket          string // the region's ECR layer bucket
	CreateBucket         *CreateBucketInput
	PutPublicAccessBlock *PutPublicAccessBlockInput
}

// CreateBucketInput has the members of s3.CreateBucketInput the plan uses.
type CreateBucketInput struct {
	Bucket                    *string
	CreateBucketConfiguration *s3types.CreateBucketConfiguration
}

// PutPublicAccessBlockInput has the members of s3.PutPublicAccessBlockInput
// the plan uses.
type PutPublicAccessBlockInput struct {
	Bucket                         *string
	ExpectedBucketOwner            *string
	PublicAccessBlockConfiguration *s3types.PublicAccessBlockConfiguration
}

// IAMInputs are the task execution role: created, with an inline policy
// naming only the environment's repository and log group.
type IAMInputs struct {
	CreateRole    *CreateRoleInput
	PutRolePolicy *PutRolePolicyInput
}

// CreateRoleInput has the members of iam.CreateRoleInput the plan uses.
type CreateRoleInput struct {
	RoleName                 *string
	Path                     *string
	Description              *string
	AssumeRolePolicyDocument *string
	Tags                     []iamtypes.Tag
}

// PutRolePolicyInput has the members of iam.PutRolePolicyInput.
type PutRolePolicyInput struct {
	RoleName       *string
	PolicyName     *string
	PolicyDocument *string
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
	app, prefix, partition, dnsSuffix, account string
	repository, logGroup, bucket, layerBucket  string
	repositoryARN, logGroupARN, bucketARN      string
	layerObjectsARN, roleName, executionRole   string
	imageURI                                   string
}

func deriveNames(app string, net Network) names {
	n := names{app: app, prefix: "antifailure-" + app, partition: "aws", dnsSuffix: "amazonaws.com", account: net.Account}
	if n.account == "" {
		n.account = AccountPlaceholder
	}
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
	n.repositoryARN = fmt.Sprintf("arn:%s:ecr:%s:%s:repository/%s", n.partition, net.Region, n.account, n.repository)
	n.logGroupARN = fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s", n.partition, net.Region, n.account, n.logGroup)
	n.bucketARN = fmt.Sprintf("arn:%s:s3:::%s", n.partition, n.bucket)
	n.layerObjectsARN = fmt.Sprintf("arn:%s:s3:::%s/*", n.partition, n.layerBucket)
	n.roleName = n.prefix + "-execution"
	n.executionRole = roleARN(n.partition, n.account, n.roleName)
	n.imageURI = fmt.Sprintf("%s.dkr.ecr.%s.%s/%s", n.account, net.Region, n.dnsSuffix, n.repository)
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
		Account:     n.account,
		Cluster:     net.Cluster,
		ProbeImage:  net.ProbeImage,
		ApplyOrder:  append([]string(nil), applyOrder...),
		IAM:         iamInputs(m.Name, n),
		S3:          s3Inputs(net, n),
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
