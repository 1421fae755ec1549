package ecs

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The condition keys the endpoint policies pin with.
const (
	// KeyPrincipalArn is the ARN of the principal that signs the request;
	// for a role session it is the role's ARN.
	KeyPrincipalArn = "aws:PrincipalArn"
	// KeyResourceAccount is the account that owns the S3 bucket.
	KeyResourceAccount = "s3:ResourceAccount"
	actionToken        = "ecr:GetAuthorizationToken"
)

// PolicyDocument is an IAM policy document as endpoint policies use it.
type PolicyDocument struct {
	Version   string
	Statement []Statement
}

// Statement is one policy statement. Action and Resource accept a string or a
// list, as IAM does; NotAction, NotResource and NotPrincipal are read so the
// predicate can refuse them.
type Statement struct {
	Sid          string                             `json:",omitempty"`
	Effect       string                             `json:",omitempty"`
	Principal    any                                `json:",omitempty"`
	NotPrincipal any                                `json:",omitempty"`
	Action       StringOrList                       `json:",omitempty"`
	NotAction    StringOrList                       `json:",omitempty"`
	Resource     StringOrList                       `json:",omitempty"`
	NotResource  StringOrList                       `json:",omitempty"`
	Condition    map[string]map[string]StringOrList `json:",omitempty"`
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

func roleARN(partition, account, name string) string {
	return fmt.Sprintf("arn:%s:iam::%s:role/%s", partition, account, name)
}

// pinnedTo is the condition that admits only the execution role's sessions.
func pinnedTo(role string) map[string]map[string]StringOrList {
	return map[string]map[string]StringOrList{"ArnEquals": {KeyPrincipalArn: {role}}}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // static shapes
	}
	return string(b)
}

// endpointPolicies are the VPC endpoint policies, one statement per resource
// (IAM evaluates each resource of a statement alike, so one statement per
// resource keeps each pin next to the one thing it admits). Every ECR and
// Logs statement admits only the execution role (aws:PrincipalArn) and
// names the literal account: a policy variable in a Resource resolves per
// request, from whoever signs it. ecr:GetAuthorizationToken has no
// resource-level permission and takes "*". On S3 the region's ECR layer
// bucket is AWS's own, reached through URLs ECR presigns: AWS's minimal
// policy names its objects for s3:GetObject and nothing else; the
// environment's own bucket is admitted only while the account owns it
// (s3:ResourceAccount).
func endpointPolicies(n names) map[string]string {
	pin := pinnedTo(n.executionRole)
	ecrPolicy := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "AuthorizationTokenForTheExecutionRole", Effect: "Allow", Principal: "*",
			Action: StringOrList{actionToken}, Resource: StringOrList{"*"}, Condition: pin},
		{Sid: "PullFromThisEnvironmentsRepository", Effect: "Allow", Principal: "*",
			Action:   StringOrList{"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"},
			Resource: StringOrList{n.repositoryARN}, Condition: pin},
	}}
	logsPolicy := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "ThisEnvironmentsLogGroup", Effect: "Allow", Principal: "*",
			Action: StringOrList{"logs:CreateLogStream"}, Resource: StringOrList{n.logGroupARN}, Condition: pin},
		{Sid: "ThisEnvironmentsLogStreams", Effect: "Allow", Principal: "*",
			Action: StringOrList{"logs:CreateLogStream", "logs:PutLogEvents"}, Resource: StringOrList{n.logGroupARN + ":*"}, Condition: pin},
	}}
	owned := map[string]map[string]StringOrList{"StringEquals": {KeyResourceAccount: {n.account}}}
	s3Policy := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "ECRImageLayers", Effect: "Allow", Principal: "*",
			Action: StringOrList{"s3:GetObject"}, Resource: StringOrList{n.layerObjectsARN}},
		{Sid: "ThisEnvironmentsBucket", Effect: "Allow", Principal: "*",
			Action: StringOrList{"s3:ListBucket"}, Resource: StringOrList{n.bucketARN}, Condition: owned},
		{Sid: "ThisEnvironmentsObjects", Effect: "Allow", Principal: "*",
			Action: StringOrList{"s3:GetObject", "s3:PutObject"}, Resource: StringOrList{n.bucketARN + "/*"}, Condition: owned},
	}}
	return map[string]string{"ecr.api": mustJSON(ecrPolicy), "ecr.dkr": mustJSON(ecrPolicy), "logs": mustJSON(logsPolicy), "s3": mustJSON(s3Policy)}
}

// iamInputs are the execution role: assumable by ECS tasks only, allowed
// the token, the pull from the environment's repository and the log push
// to its log group, nothing else.
func iamInputs(app string, n names) IAMInputs {
	trust := PolicyDocument{Version: "2012-10-17", Statement: []Statement{{
		Effect: "Allow", Principal: map[string]any{"Service": "ecs-tasks.amazonaws.com"}, Action: StringOrList{"sts:AssumeRole"},
	}}}
	perms := PolicyDocument{Version: "2012-10-17", Statement: []Statement{
		{Sid: "AuthorizationToken", Effect: "Allow", Action: StringOrList{actionToken}, Resource: StringOrList{"*"}},
		{Sid: "PullFromThisEnvironmentsRepository", Effect: "Allow",
			Action:   StringOrList{"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"},
			Resource: StringOrList{n.repositoryARN}},
		{Sid: "WriteThisEnvironmentsLogGroup", Effect: "Allow", Action: StringOrList{"logs:CreateLogStream", "logs:PutLogEvents"},
			Resource: StringOrList{n.logGroupARN + ":*"}},
	}}
	return IAMInputs{
		CreateRole: &CreateRoleInput{
			RoleName: aws.String(n.roleName), Path: aws.String("/"),
			Description:              aws.String("Antifailure " + app + ": the Fargate agent pulls the environment's images and pushes its logs; not given to the containers"),
			AssumeRolePolicyDocument: aws.String(mustJSON(trust)),
			Tags:                     []iamtypes.Tag{{Key: aws.String(tagEnvironment), Value: aws.String(app)}},
		},
		PutRolePolicy: &PutRolePolicyInput{RoleName: aws.String(n.roleName), PolicyName: aws.String(n.prefix + "-pull-and-log"), PolicyDocument: aws.String(mustJSON(perms))},
	}
}

// s3Inputs create the environment's bucket, private, in the region.
func s3Inputs(net Network, n names) S3Inputs {
	out := S3Inputs{Bucket: n.bucket, LayerBucket: n.layerBucket,
		CreateBucket: &CreateBucketInput{Bucket: aws.String(n.bucket)},
		PutPublicAccessBlock: &PutPublicAccessBlockInput{Bucket: aws.String(n.bucket), ExpectedBucketOwner: aws.String(n.account),
			PublicAccessBlockConfiguration: &s3types.PublicAccessBlockConfiguration{
				BlockPublicAcls: aws.Bool(true), BlockPublicPolicy: aws.Bool(true), IgnorePublicAcls: aws.Bool(true), RestrictPublicBuckets: aws.Bool(true),
			}},
	}
	if net.Region != "us-east-1" { // us-east-1 takes no location constraint
		out.CreateBucket.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(net.Region)}
	}
	return out
}
