package ecs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Reference is an AWS page a computed verdict was checked against, with
// what the check takes from it.
type Reference struct {
	Title, URL, Point string
}

func (r Reference) String() string { return fmt.Sprintf("AWS, %q (%s): %s", r.Title, r.URL, r.Point) }

// The pages the endpoint policies are checked against.
var (
	RefECREndpoints = Reference{
		Title: "Amazon ECR interface VPC endpoints (AWS PrivateLink)",
		URL:   "https://docs.aws.amazon.com/AmazonECR/latest/userguide/vpc-endpoints.html",
		Point: "Fargate pulls over the com.amazonaws.<region>.ecr.api and ecr.dkr endpoints and fetches image layers from Amazon S3 through the S3 gateway endpoint; the minimal S3 endpoint policy AWS gives for ECR allows s3:GetObject on arn:aws:s3:::prod-<region>-starport-layer-bucket/* only",
	}
	RefECRActions = Reference{
		Title: "Actions, resources, and condition keys for Amazon Elastic Container Registry",
		URL:   "https://docs.aws.amazon.com/service-authorization/latest/reference/list_amazonelasticcontainerregistry.html",
		Point: "ecr:GetAuthorizationToken names no resource type (Resource \"*\"); BatchGetImage, BatchCheckLayerAvailability and GetDownloadUrlForLayer take the repository ARN arn:${Partition}:ecr:${Region}:${Account}:repository/${RepositoryName}",
	}
	RefLogsEndpoint = Reference{
		Title: "Using CloudWatch Logs with interface VPC endpoints",
		URL:   "https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/cloudwatch-logs-and-interface-VPC.html",
		Point: "the logs endpoint takes an endpoint policy that limits which principals may call which actions on which log groups",
	}
	RefPrincipalArn = Reference{
		Title: "AWS global condition context keys",
		URL:   "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_condition-keys.html",
		Point: "aws:PrincipalArn is the ARN of the principal that made the request; for a role session it is the role's ARN, so the condition admits the execution role's sessions and no other credentials brought into the task",
	}
	RefS3Gateway = Reference{
		Title: "Gateway endpoints for Amazon S3",
		URL:   "https://docs.aws.amazon.com/vpc/latest/privatelink/vpc-endpoints-s3.html",
		Point: "a gateway endpoint's policy controls which buckets are reached through it; without one it allows every bucket of every account",
	}
	RefResourceAccount = Reference{
		Title: "Amazon S3 condition key s3:ResourceAccount",
		URL:   "https://docs.aws.amazon.com/AmazonS3/latest/userguide/amazon-s3-policy-keys.html",
		Point: "s3:ResourceAccount is the account that owns the bucket; in a VPC endpoint policy it restricts access to buckets owned by that account, whoever holds the name",
	}
)

func refs(rs ...Reference) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return "Checked against " + strings.Join(parts, "; ") + "."
}

// expect is what the endpoint policies may name for the plan's own
// environment.
type expect struct {
	short, name                     string
	partition, region, account      string
	accountKnown                    bool
	repositoryARN, logGroupARN      string
	bucket, bucketARN, layerObjects string
	role                            string // the execution role the plan creates; "" none
	roleCreated, bucketCreated      bool
	createdBeforeEndpoints          map[string]bool
}

func (v *view) expect() expect {
	p := v.p
	x := expect{partition: p.Partition, region: p.Region, account: p.Account, accountKnown: accountPattern.MatchString(p.Account),
		bucket: p.S3.Bucket, createdBeforeEndpoints: map[string]bool{}}
	if x.partition == "" {
		x.partition = "aws"
	}
	if r := p.ECR.CreateRepository; r != nil {
		x.repositoryARN = fmt.Sprintf("arn:%s:ecr:%s:%s:repository/%s", x.partition, x.region, x.account, aws.ToString(r.RepositoryName))
	}
	if l := p.Logs.CreateLogGroup; l != nil {
		x.logGroupARN = fmt.Sprintf("arn:%s:logs:%s:%s:log-group:%s", x.partition, x.region, x.account, aws.ToString(l.LogGroupName))
	}
	x.layerObjects = "arn:" + x.partition + ":s3:::prod-" + x.region + "-starport-layer-bucket/*"
	if x.bucket != "" {
		x.bucketARN = "arn:" + x.partition + ":s3:::" + x.bucket
	}
	if r := p.IAM.CreateRole; r != nil && aws.ToString(r.RoleName) != "" {
		x.role = roleARN(x.partition, x.account, aws.ToString(r.RoleName))
		x.roleCreated = true
	}
	if b := p.S3.CreateBucket; b != nil && x.bucket != "" && aws.ToString(b.Bucket) == x.bucket {
		x.bucketCreated = true
	}
	ec2At := slices.Index(p.ApplyOrder, StepEC2)
	for _, step := range []string{StepIAM, StepS3} {
		at := slices.Index(p.ApplyOrder, step)
		x.createdBeforeEndpoints[step] = at >= 0 && ec2At >= 0 && at < ec2At
	}
	return x
}

// accountOf is the account field of an ARN, or "" when it is not one.
func accountOf(resource string) string {
	a, err := arn.Parse(resource)
	if err != nil {
		return ""
	}
	return a.AccountID
}

// statementProblems judges one Allow statement of the endpoint's policy.
func (x expect) statementProblems(s Statement, label string) []string {
	at := fmt.Sprintf("endpoint %s's policy %s", x.name, label)
	if len(s.NotResource) > 0 || len(s.NotAction) > 0 || s.NotPrincipal != nil {
		return []string{at + " allows with NotResource/NotAction/NotPrincipal, which names what is excluded, not what is reached"}
	}
	if len(s.Resource) == 0 {
		return []string{at + " allows without naming a resource"}
	}
	var problems []string
	needsPin, needsOwner := false, false
	for _, r := range s.Resource {
		on := fmt.Sprintf("%s allows %s on %s", at, strings.Join(s.Action, ", "), r)
		switch {
		case strings.Contains(r, "${"):
			problems = append(problems, on+": a policy variable in a Resource is resolved per request from whoever signs it, so it names their account's resource, not this environment's")
		case r == "*" && (x.short == "ecr.api" || x.short == "ecr.dkr") && len(s.Action) > 0 && allEqual(s.Action, actionToken):
			needsPin = true // the token action has no resource-level permission
		case r == "*":
			problems = append(problems, on+", which is every resource; only "+actionToken+" takes \"*\"")
		case x.short == "s3" && r == x.layerObjects:
			if len(s.Action) == 0 || !allEqual(s.Action, "s3:GetObject") {
				problems = append(problems, on+": AWS's minimal policy for the ECR layer bucket is s3:GetObject only")
			}
		case x.short == "s3" && x.bucketARN != "" && (r == x.bucketARN || r == x.bucketARN+"/*"):
			needsOwner = true
		case x.owns(r):
			needsPin = true
		default:
			if a := accountOf(r); a != "" && a != x.account && accountPattern.MatchString(a) {
				on += fmt.Sprintf(", in account %s, not the environment's %s", a, x.account)
			}
			problems = append(problems, on+", which is not this environment's own")
		}
	}
	if needsPin {
		problems = append(problems, x.pinProblems(at, s)...)
	}
	if needsOwner {
		problems = append(problems, x.ownerProblems(at, s)...)
	}
	return problems
}

// owns reports whether r is the environment's repository, log group or its
// log streams, with the literal account.
func (x expect) owns(r string) bool {
	switch x.short {
	case "ecr.api", "ecr.dkr":
		return x.repositoryARN != "" && r == x.repositoryARN
	case "logs":
		return x.logGroupARN != "" && (r == x.logGroupARN || r == x.logGroupARN+":*" || r == x.logGroupARN+":log-stream:*")
	}
	return false
}

// conditionValues are the values a statement compares key with under one of
// the exact-match operators.
func conditionValues(s Statement, key string, operators ...string) (values []string, found bool) {
	for op, keys := range s.Condition {
		if !slices.ContainsFunc(operators, func(o string) bool { return strings.EqualFold(o, op) }) {
			continue
		}
		for k, vs := range keys {
			if strings.EqualFold(k, key) {
				values, found = append(values, vs...), true
			}
		}
	}
	return values, found
}

func (x expect) pinProblems(at string, s Statement) []string {
	if !x.roleCreated {
		return []string{at + " admits a caller by role, but the document creates no execution role (IAM CreateRole)"}
	}
	var problems []string
	if !x.createdBeforeEndpoints[StepIAM] {
		problems = append(problems, "the execution role is not created before the endpoints whose policies name it (ApplyOrder)")
	}
	values, found := conditionValues(s, KeyPrincipalArn, "ArnEquals", "StringEquals")
	switch {
	case !found:
		problems = append(problems, fmt.Sprintf("%s does not pin the caller: no ArnEquals %s condition naming the execution role %s, so any credentials brought into the task may use it", at, KeyPrincipalArn, x.role))
	case len(values) != 1 || values[0] != x.role:
		problems = append(problems, fmt.Sprintf("%s pins %s to %s, not only the execution role %s", at, KeyPrincipalArn, strings.Join(values, ", "), x.role))
	}
	return problems
}

func (x expect) ownerProblems(at string, s Statement) []string {
	var problems []string
	switch {
	case !x.bucketCreated:
		problems = append(problems, fmt.Sprintf("%s names bucket %s, which the document does not create (S3 CreateBucket); bucket names are global, and whoever owns it owns the path", at, x.bucket))
	case !x.createdBeforeEndpoints[StepS3]:
		problems = append(problems, "the bucket is not created before the endpoint whose policy names it (ApplyOrder)")
	}
	values, found := conditionValues(s, KeyResourceAccount, "StringEquals")
	switch {
	case !found:
		problems = append(problems, fmt.Sprintf("%s names the bucket without a StringEquals %s condition, so a bucket of that name in another account is reached", at, KeyResourceAccount))
	case len(values) != 1 || values[0] != x.account:
		problems = append(problems, fmt.Sprintf("%s pins %s to %s, not the environment's %s", at, KeyResourceAccount, strings.Join(values, ", "), x.account))
	}
	return problems
}

// policyProblems judges one endpoint's policy: every Allow must name only
// the environment's own resources for that service, pinned as the plan
// writes them.
func (v *view) policyProblems(e VpcEndpoint) []string {
	x := v.expect()
	x.name = aws.ToString(e.CreateVpcEndpoint.ServiceName)
	x.short = strings.TrimPrefix(x.name, "com.amazonaws."+v.p.Region+".")
	doc := aws.ToString(e.CreateVpcEndpoint.PolicyDocument)
	if doc == "" {
		return []string{"endpoint " + x.name + " has no policy, and an endpoint's default policy allows every action on every resource"}
	}
	var pd PolicyDocument
	if err := json.Unmarshal([]byte(doc), &pd); err != nil {
		return []string{"endpoint " + x.name + "'s policy cannot be read: " + err.Error()}
	}
	var problems []string
	for i, s := range pd.Statement {
		if !strings.EqualFold(s.Effect, "Allow") {
			continue
		}
		label := s.Sid
		if label == "" {
			label = "statement " + strconv.Itoa(i+1)
		}
		problems = append(problems, x.statementProblems(s, label)...)
	}
	return problems
}

func allEqual(xs []string, want string) bool {
	for _, x := range xs {
		if x != want {
			return false
		}
	}
	return true
}

// endpointsOfType names the plan's VPC endpoints of one type and what their
// policies allow beyond this environment's own resources.
func (v *view) endpointsOfType(t types.VpcEndpointType) (names, problems []string) {
	for _, e := range v.p.EC2.VpcEndpoints {
		if endpointType(e) != t {
			continue
		}
		names = append(names, aws.ToString(e.CreateVpcEndpoint.ServiceName))
		problems = append(problems, v.policyProblems(e)...)
	}
	return names, problems
}

// accountUnknown is the verdict of an endpoint path whose policies are
// pinned to the placeholder: nothing in the document is wrong, and nothing
// names the account the pins need.
func accountUnknown(what string, cited string) result {
	return result{Unproven, NoEvidence, fmt.Sprintf("%s The account is unknown, so the policies name %s where the account goes, and no pin can be checked against the account the environment runs in: %s to settle the path. %s",
		what, AccountPlaceholder, AccountSettles, cited), nil}
}

func evalInterfaceEndpoints(v *view) result {
	names, problems := v.endpointsOfType(types.VpcEndpointTypeInterface)
	if len(problems) > 0 {
		return openComputed(problems)
	}
	x := v.expect()
	cited := refs(RefECREndpoints, RefECRActions, RefLogsEndpoint, RefPrincipalArn)
	what := fmt.Sprintf("The policies of the %d interface endpoint(s) (%s) allow, one statement per resource, only %s on \"*\", the repository %s and the log group %s, each for the execution role %s alone (%s).",
		len(names), strings.Join(names, ", "), actionToken, x.repositoryARN, x.logGroupARN, x.role, KeyPrincipalArn)
	if !x.accountKnown {
		return accountUnknown(what, cited)
	}
	return closedComputed(what + " Every ARN names the account " + x.account + "; no Resource holds a policy variable. " + cited)
}

func evalS3Gateway(v *view) result {
	names, problems := v.endpointsOfType(types.VpcEndpointTypeGateway)
	if len(problems) > 0 {
		return openComputed(problems)
	}
	x := v.expect()
	cited := refs(RefECREndpoints, RefS3Gateway, RefResourceAccount)
	what := fmt.Sprintf("The gateway endpoint policy (%s) allows s3:GetObject on the objects of the region's AWS-owned ECR layer bucket (%s), as AWS's minimal policy does, and the environment's bucket %s, which the document creates before the endpoint, only while %s is the account.",
		strings.Join(names, ", "), x.layerObjects, x.bucket, KeyResourceAccount)
	if !x.accountKnown {
		return accountUnknown(what, cited)
	}
	return closedComputed(what + " The account is " + x.account + ". " + cited)
}
