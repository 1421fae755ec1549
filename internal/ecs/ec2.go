package ecs

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

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
