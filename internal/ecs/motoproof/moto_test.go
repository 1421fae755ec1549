// Package motoproof proves the ECS plan against a real AWS API: moto, run
// locally. It creates the VPC and subnets the network variables describe,
// applies the plan's IAM, S3, EC2, ECS, ECR and CloudWatch Logs inputs in the
// plan's ApplyOrder — read back from
// the plan's JSON document — with aws-sdk-go-v2 clients, reads everything back
// and compares it to the plan. moto has no Route 53 Resolver DNS Firewall, so
// that part is checked through the SDK's types and the DNS Firewall check.
//
// This package is test-only: it is the one place the EC2 client package (slow
// to build, large in a binary) is linked.
//
// It needs python3 with moto's server (pip install 'moto[server]'). Without
// it the test fails, loudly, everywhere: a proof that quietly skips is no
// proof.
package motoproof

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	ecssdk "github.com/aws/aws-sdk-go-v2/service/ecs"
	ecstypes "github.com/aws/aws-sdk-go-v2/service/ecs/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	r53types "github.com/aws/aws-sdk-go-v2/service/route53resolver/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
	"github.com/antifailure/terraform-provider-antifailure/internal/ecs"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

const region = "eu-west-1"

// account is moto's default account: the cluster ARN names it, so the
// plan's pinned ARNs are the ones moto assigns.
const account = "123456789012"

const shopManifest = `name: shop
runtime:
  provider: ecs
services:
  web:
    image: ghcr.io/acme/shop:1.4.2
    port: 8080
    web: true
    env: {LOG_LEVEL: debug, REGION: eu}
  worker:
    image: ghcr.io/acme/shop:1.4.2
egress:
  - host: api.stripe.com
    mode: sandbox
  - host: "*.githubusercontent.com"
    mode: allow
  - host: hooks.slack.com
    mode: capture
  - host: raw.githubusercontent.com
    mode: mock
`

// moto is one moto server for the package's tests.
type moto struct {
	endpoint string
	cmd      *exec.Cmd
}

var (
	motoOnce   sync.Once
	motoServer *moto
	motoErr    error
)

var runningOn = regexp.MustCompile(`Running on (http://127\.0\.0\.1:\d+)`)

// startMoto starts `python3 -m moto.server -H 127.0.0.1 -p 0` and reads the
// port it chose from its stderr.
func startMoto() (*moto, error) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("python3 is not installed, so moto cannot run: %w", err)
	}
	cmd := exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start moto: %w", err)
	}
	found := make(chan string, 1)
	var log strings.Builder
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := runningOn.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		close(found)
	}()
	select {
	case ep, ok := <-found:
		if ok {
			return &moto{endpoint: ep, cmd: cmd}, nil
		}
		_ = cmd.Wait()
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	mu.Lock()
	defer mu.Unlock()
	return nil, fmt.Errorf("moto did not start (is it installed? pip install 'moto[server]'); its output:\n%s", log.String())
}

// server returns the running moto, reset to an empty state.
func server(t *testing.T) *moto {
	t.Helper()
	motoOnce.Do(func() { motoServer, motoErr = startMoto() })
	if motoErr != nil {
		t.Fatalf("the moto proof cannot run, and it is not skipped: %v", motoErr)
	}
	resp, err := http.Post(motoServer.endpoint+"/moto-api/reset", "application/json", nil)
	if err != nil {
		t.Fatalf("reset moto: %v", err)
	}
	resp.Body.Close()
	return motoServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if motoServer != nil {
		_ = motoServer.cmd.Process.Kill()
		_ = motoServer.cmd.Wait()
	}
	os.Exit(code)
}

func (m *moto) config() aws.Config {
	return aws.Config{
		Region:       region,
		Credentials:  credentials.NewStaticCredentialsProvider("moto", "moto", ""),
		BaseEndpoint: aws.String(m.endpoint),
	}
}

// asEC2 converts one of the plan's EC2 inputs to the SDK's input: the plan's
// structs have the EC2 input's member names over the SDK's ec2/types shapes
// (TestMirrorsMatchEC2Inputs), so JSON carries them across unchanged.
func asEC2[T any](t *testing.T, in any) *T {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// TestMirrorsMatchEC2Inputs requires every member of the plan's EC2, IAM and
// S3 input structs to exist in the SDK's input with the same type.
func TestMirrorsMatchEC2Inputs(t *testing.T) {
	for _, c := range []struct{ mirror, sdk any }{
		{ecs.CreateSecurityGroupInput{}, ec2.CreateSecurityGroupInput{}},
		{ecs.SecurityGroupRulesInput{}, ec2.RevokeSecurityGroupEgressInput{}},
		{ecs.SecurityGroupRulesInput{}, ec2.AuthorizeSecurityGroupEgressInput{}},
		{ecs.SecurityGroupRulesInput{}, ec2.AuthorizeSecurityGroupIngressInput{}},
		{ecs.CreateRouteTableInput{}, ec2.CreateRouteTableInput{}},
		{ecs.AssociateRouteTableInput{}, ec2.AssociateRouteTableInput{}},
		{ecs.CreateVpcEndpointInput{}, ec2.CreateVpcEndpointInput{}},
		{ecs.CreateRoleInput{}, iam.CreateRoleInput{}},
		{ecs.PutRolePolicyInput{}, iam.PutRolePolicyInput{}},
		{ecs.CreateBucketInput{}, s3.CreateBucketInput{}},
		{ecs.PutPublicAccessBlockInput{}, s3.PutPublicAccessBlockInput{}},
	} {
		mt, st := reflect.TypeOf(c.mirror), reflect.TypeOf(c.sdk)
		for i := 0; i < mt.NumField(); i++ {
			f := mt.Field(i)
			sf, ok := st.FieldByName(f.Name)
			if !ok || sf.Type != f.Type {
				t.Errorf("%s.%s (%s) has no counterpart of that type in ec2.%s", mt.Name(), f.Name, f.Type, st.Name())
			}
		}
	}
}

// refs maps the plan's references to the identifiers moto returned.
type refs map[string]string

func (r refs) of(s string) string {
	if v, ok := r[s]; ok {
		return v
	}
	return s
}

func (r refs) all(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = r.of(s)
	}
	return out
}

func (r refs) permissions(ps []ec2types.IpPermission) []ec2types.IpPermission {
	b, _ := json.Marshal(ps)
	s := string(b)
	for k, v := range r {
		s = strings.ReplaceAll(s, `"`+k+`"`, `"`+v+`"`)
	}
	var out []ec2types.IpPermission
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// ruleKeys is a security group's rules as sorted canonical lines, one per
// target, as EC2 stores them.
func ruleKeys(ps []ec2types.IpPermission) []string {
	var out []string
	for _, p := range ps {
		head := fmt.Sprintf("%s %d-%d", aws.ToString(p.IpProtocol), aws.ToInt32(p.FromPort), aws.ToInt32(p.ToPort))
		if aws.ToString(p.IpProtocol) == "-1" {
			head = "-1"
		}
		for _, r := range p.IpRanges {
			out = append(out, head+" cidr "+aws.ToString(r.CidrIp))
		}
		for _, r := range p.Ipv6Ranges {
			out = append(out, head+" cidr6 "+aws.ToString(r.CidrIpv6))
		}
		for _, r := range p.PrefixListIds {
			out = append(out, head+" pl "+aws.ToString(r.PrefixListId))
		}
		for _, r := range p.UserIdGroupPairs {
			out = append(out, head+" sg "+aws.ToString(r.GroupId))
		}
	}
	sort.Strings(out)
	return out
}

func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("%s read back from moto differs from the plan:\n got  %s\n want %s", what, gb, wb)
	}
}

func TestPlanAppliesToMotoAndReadsBackEqual(t *testing.T) {
	srv := server(t)
	ctx := context.Background()
	cfg := srv.config()
	ec2c := ec2.NewFromConfig(cfg)
	ecsc := ecssdk.NewFromConfig(cfg)
	ecrc := ecr.NewFromConfig(cfg)
	logsc := cloudwatchlogs.NewFromConfig(cfg)
	iamc := iam.NewFromConfig(cfg)
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })

	// The network the variables describe; the cluster ARN gives the account.
	vars := map[string]string{
		ecs.EnvRegion: region, ecs.EnvCluster: "arn:aws:ecs:" + region + ":" + account + ":cluster/previews", ecs.EnvVPCCIDR: "10.20.0.0/16",
		ecs.EnvSubnetCIDRs: "10.20.1.0/24,10.20.2.0/24", ecs.EnvProbeImage: "ghcr.io/antifailure/probe:1",
	}
	vpc, err := ec2c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(vars[ecs.EnvVPCCIDR])})
	if err != nil {
		t.Fatal(err)
	}
	vars[ecs.EnvVPCID] = aws.ToString(vpc.Vpc.VpcId)
	var subnetIDs []string
	for i, cidr := range strings.Split(vars[ecs.EnvSubnetCIDRs], ",") {
		s, err := ec2c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String(cidr),
			AvailabilityZone: aws.String(region + string(rune('a'+i)))})
		if err != nil {
			t.Fatal(err)
		}
		subnetIDs = append(subnetIDs, aws.ToString(s.Subnet.SubnetId))
	}
	vars[ecs.EnvSubnetIDs] = strings.Join(subnetIDs, ",")
	net, err := ecs.ResolveNetwork(ecs.NetworkSettings{}, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Parse([]byte(shopManifest))
	if err != nil {
		t.Fatal(err)
	}
	built, err := ecs.BuildPlan(m, net)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := built.JSON()
	if err != nil {
		t.Fatal(err)
	}
	// Everything applied below is read back from the JSON document.
	plan, err := ecs.ParsePlan(doc)
	if err != nil {
		t.Fatal(err)
	}
	r := refs{}
	if net.Account != account {
		t.Fatalf("account %q from the cluster ARN", net.Account)
	}
	equal(t, "apply order", plan.ApplyOrder, []string{"IAM", "S3", "ECR", "Logs", "EC2", "Route53Resolver", "ECS"})

	// IAM and S3 first: the execution role and the bucket exist before any
	// endpoint policy names them.
	role, err := iamc.CreateRole(ctx, asEC2[iam.CreateRoleInput](t, plan.IAM.CreateRole))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := iamc.PutRolePolicy(ctx, asEC2[iam.PutRolePolicyInput](t, plan.IAM.PutRolePolicy)); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, asEC2[s3.CreateBucketInput](t, plan.S3.CreateBucket)); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.PutPublicAccessBlock(ctx, asEC2[s3.PutPublicAccessBlockInput](t, plan.S3.PutPublicAccessBlock)); err != nil {
		t.Fatal(err)
	}

	// CloudWatch Logs and ECR: the environment's own log group and repository.
	if _, err := logsc.CreateLogGroup(ctx, plan.Logs.CreateLogGroup); err != nil {
		t.Fatal(err)
	}
	if _, err := logsc.PutRetentionPolicy(ctx, plan.Logs.PutRetentionPolicy); err != nil {
		t.Fatal(err)
	}
	repo, err := ecrc.CreateRepository(ctx, plan.ECR.CreateRepository)
	if err != nil {
		t.Fatal(err)
	}

	// EC2: the two security groups, created first so each can name the other.
	for _, sg := range []ecs.SecurityGroup{plan.EC2.TaskSecurityGroup, plan.EC2.EndpointSecurityGroup} {
		out, err := ec2c.CreateSecurityGroup(ctx, asEC2[ec2.CreateSecurityGroupInput](t, sg.CreateSecurityGroup))
		if err != nil {
			t.Fatal(err)
		}
		r[sg.Ref] = aws.ToString(out.GroupId)
	}
	pls, err := ec2c.DescribeManagedPrefixLists(ctx, &ec2.DescribeManagedPrefixListsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.PrefixLists {
		if aws.ToString(pl.PrefixListName) == "com.amazonaws."+region+".s3" {
			r[ecs.RefS3PrefixList] = aws.ToString(pl.PrefixListId)
		}
	}
	if r[ecs.RefS3PrefixList] == "" {
		t.Fatal("moto has no S3 prefix list")
	}
	for _, sg := range []ecs.SecurityGroup{plan.EC2.TaskSecurityGroup, plan.EC2.EndpointSecurityGroup} {
		id := aws.String(r[sg.Ref])
		if in := sg.RevokeSecurityGroupEgress; in != nil {
			if _, err := ec2c.RevokeSecurityGroupEgress(ctx, &ec2.RevokeSecurityGroupEgressInput{GroupId: id, IpPermissions: r.permissions(in.IpPermissions)}); err != nil {
				t.Fatal(err)
			}
		}
		if in := sg.AuthorizeSecurityGroupEgress; in != nil {
			if _, err := ec2c.AuthorizeSecurityGroupEgress(ctx, &ec2.AuthorizeSecurityGroupEgressInput{GroupId: id, IpPermissions: r.permissions(in.IpPermissions)}); err != nil {
				t.Fatal(err)
			}
		}
		if in := sg.AuthorizeSecurityGroupIngress; in != nil {
			if _, err := ec2c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: id, IpPermissions: r.permissions(in.IpPermissions)}); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The route table, associated with every subnet.
	rt, err := ec2c.CreateRouteTable(ctx, asEC2[ec2.CreateRouteTableInput](t, plan.EC2.RouteTable.CreateRouteTable))
	if err != nil {
		t.Fatal(err)
	}
	r[plan.EC2.RouteTable.Ref] = aws.ToString(rt.RouteTable.RouteTableId)
	for _, a := range plan.EC2.RouteTable.AssociateRouteTable {
		in := asEC2[ec2.AssociateRouteTableInput](t, a)
		in.RouteTableId = aws.String(r.of(aws.ToString(in.RouteTableId)))
		if _, err := ec2c.AssociateRouteTable(ctx, in); err != nil {
			t.Fatal(err)
		}
	}

	// The VPC endpoints with their policies.
	for _, e := range plan.EC2.VpcEndpoints {
		in := asEC2[ec2.CreateVpcEndpointInput](t, e.CreateVpcEndpoint)
		in.SecurityGroupIds = r.all(in.SecurityGroupIds)
		in.RouteTableIds = r.all(in.RouteTableIds)
		out, err := ec2c.CreateVpcEndpoint(ctx, in)
		if err != nil {
			t.Fatalf("CreateVpcEndpoint %s: %v", aws.ToString(in.ServiceName), err)
		}
		r[e.Ref] = aws.ToString(out.VpcEndpoint.VpcEndpointId)
	}

	// ECS: the cluster the variables name, the task definition, the service.
	clusterName := plan.Cluster[strings.LastIndex(plan.Cluster, "/")+1:]
	if _, err := ecsc.CreateCluster(ctx, &ecssdk.CreateClusterInput{ClusterName: aws.String(clusterName)}); err != nil {
		t.Fatal(err)
	}
	if _, err := ecsc.RegisterTaskDefinition(ctx, plan.ECS.RegisterTaskDefinition); err != nil {
		t.Fatal(err)
	}
	svcIn := *plan.ECS.CreateService
	awsvpc := *svcIn.NetworkConfiguration.AwsvpcConfiguration
	awsvpc.SecurityGroups = r.all(awsvpc.SecurityGroups)
	svcIn.NetworkConfiguration = &ecstypes.NetworkConfiguration{AwsvpcConfiguration: &awsvpc}
	if _, err := ecsc.CreateService(ctx, &svcIn); err != nil {
		t.Fatal(err)
	}

	// Read everything back.
	t.Run("security groups", func(t *testing.T) {
		for _, sg := range []ecs.SecurityGroup{plan.EC2.TaskSecurityGroup, plan.EC2.EndpointSecurityGroup} {
			out, err := ec2c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{r[sg.Ref]}})
			if err != nil {
				t.Fatal(err)
			}
			got := out.SecurityGroups[0]
			equal(t, sg.Ref+" name", aws.ToString(got.GroupName), aws.ToString(sg.CreateSecurityGroup.GroupName))
			equal(t, sg.Ref+" VPC", aws.ToString(got.VpcId), net.VPCID)
			equal(t, sg.Ref+" egress", ruleKeys(got.IpPermissionsEgress), ruleKeys(r.permissions(ecs.EffectiveEgress(sg))))
			var ingress []ec2types.IpPermission
			if sg.AuthorizeSecurityGroupIngress != nil {
				ingress = r.permissions(sg.AuthorizeSecurityGroupIngress.IpPermissions)
			}
			equal(t, sg.Ref+" ingress", ruleKeys(got.IpPermissions), ruleKeys(ingress))
		}
		out, _ := ec2c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{r[ecs.RefTaskSecurityGroup]}})
		equal(t, "task egress", ruleKeys(out.SecurityGroups[0].IpPermissionsEgress), []string{
			"tcp 443-443 pl " + r[ecs.RefS3PrefixList], "tcp 443-443 sg " + r[ecs.RefEndpointSecurityGroup],
		})
	})
	t.Run("route table", func(t *testing.T) {
		out, err := ec2c.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{RouteTableIds: []string{r[ecs.RefRouteTable]}})
		if err != nil {
			t.Fatal(err)
		}
		got := out.RouteTables[0]
		routeKey := func(rt ec2types.Route) string {
			return fmt.Sprintf("%s%s -> %s", aws.ToString(rt.DestinationCidrBlock), r.of(aws.ToString(rt.DestinationPrefixListId)), r.of(aws.ToString(rt.GatewayId)))
		}
		var gotRoutes, wantRoutes []string
		for _, rt := range got.Routes {
			gotRoutes = append(gotRoutes, routeKey(rt))
		}
		for _, rt := range plan.EC2.RouteTable.Routes {
			wantRoutes = append(wantRoutes, routeKey(rt))
		}
		sort.Strings(gotRoutes)
		sort.Strings(wantRoutes)
		equal(t, "routes", gotRoutes, wantRoutes)
		var assoc []string
		for _, a := range got.Associations {
			assoc = append(assoc, aws.ToString(a.SubnetId))
		}
		sort.Strings(assoc)
		equal(t, "route table associations", assoc, sorted(subnetIDs))
	})
	t.Run("VPC endpoints", func(t *testing.T) {
		for _, e := range plan.EC2.VpcEndpoints {
			out, err := ec2c.DescribeVpcEndpoints(ctx, &ec2.DescribeVpcEndpointsInput{VpcEndpointIds: []string{r[e.Ref]}})
			if err != nil {
				t.Fatal(err)
			}
			got, want := out.VpcEndpoints[0], e.CreateVpcEndpoint
			name := aws.ToString(want.ServiceName)
			equal(t, name+" service", aws.ToString(got.ServiceName), name)
			equal(t, name+" type", got.VpcEndpointType, want.VpcEndpointType)
			equal(t, name+" VPC", aws.ToString(got.VpcId), net.VPCID)
			var gotPolicy, wantPolicy any
			if err := json.Unmarshal([]byte(aws.ToString(got.PolicyDocument)), &gotPolicy); err != nil {
				t.Fatalf("%s policy: %v", name, err)
			}
			_ = json.Unmarshal([]byte(aws.ToString(want.PolicyDocument)), &wantPolicy)
			equal(t, name+" policy", gotPolicy, wantPolicy)
			if want.VpcEndpointType == ec2types.VpcEndpointTypeInterface {
				var groups []string
				for _, g := range got.Groups {
					groups = append(groups, aws.ToString(g.GroupId))
				}
				equal(t, name+" security groups", groups, r.all(want.SecurityGroupIds))
				sub := append([]string(nil), got.SubnetIds...)
				sort.Strings(sub)
				equal(t, name+" subnets", sub, sorted(subnetIDs))
				equal(t, name+" private DNS", aws.ToBool(got.PrivateDnsEnabled), true)
			} else {
				equal(t, name+" route tables", got.RouteTableIds, r.all(want.RouteTableIds))
			}
		}
	})
	t.Run("task definition", func(t *testing.T) {
		out, err := ecsc.DescribeTaskDefinition(ctx, &ecssdk.DescribeTaskDefinitionInput{TaskDefinition: plan.ECS.RegisterTaskDefinition.Family})
		if err != nil {
			t.Fatal(err)
		}
		got, want := out.TaskDefinition, plan.ECS.RegisterTaskDefinition
		equal(t, "network mode", got.NetworkMode, ecstypes.NetworkModeAwsvpc)
		equal(t, "requires compatibilities", got.RequiresCompatibilities, want.RequiresCompatibilities)
		equal(t, "cpu", aws.ToString(got.Cpu), aws.ToString(want.Cpu))
		equal(t, "memory", aws.ToString(got.Memory), aws.ToString(want.Memory))
		equal(t, "execution role", aws.ToString(got.ExecutionRoleArn), aws.ToString(want.ExecutionRoleArn))
		equal(t, "task role", aws.ToString(got.TaskRoleArn), "")
		equal(t, "containers", len(got.ContainerDefinitions), len(want.ContainerDefinitions))
		for i, w := range want.ContainerDefinitions {
			g := got.ContainerDefinitions[i]
			n := aws.ToString(w.Name)
			equal(t, n+" name", aws.ToString(g.Name), n)
			equal(t, n+" image", aws.ToString(g.Image), aws.ToString(w.Image))
			equal(t, n+" essential", aws.ToBool(g.Essential), aws.ToBool(w.Essential))
			equal(t, n+" log driver", g.LogConfiguration.LogDriver, ecstypes.LogDriverAwslogs)
			equal(t, n+" log options", g.LogConfiguration.Options, w.LogConfiguration.Options)
			equal(t, n+" log group", g.LogConfiguration.Options["awslogs-group"], aws.ToString(plan.Logs.CreateLogGroup.LogGroupName))
			equal(t, n+" environment", envMap(g.Environment), envMap(w.Environment))
			equal(t, n+" port mappings", ports(g.PortMappings), ports(w.PortMappings))
			equal(t, n+" depends on", deps(g.DependsOn), deps(w.DependsOn))
		}
		equal(t, "probe container", aws.ToString(got.ContainerDefinitions[0].Name), ecs.ProbeContainerName)
	})
	t.Run("service", func(t *testing.T) {
		out, err := ecsc.DescribeServices(ctx, &ecssdk.DescribeServicesInput{Cluster: aws.String(plan.Cluster), Services: []string{aws.ToString(plan.ECS.CreateService.ServiceName)}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Services) != 1 {
			t.Fatalf("services %v failures %v", out.Services, out.Failures)
		}
		got := out.Services[0]
		equal(t, "launch type", got.LaunchType, ecstypes.LaunchTypeFargate)
		equal(t, "exec", got.EnableExecuteCommand, false)
		equal(t, "assign public IP", got.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp, ecstypes.AssignPublicIpDisabled)
		equal(t, "service subnets", got.NetworkConfiguration.AwsvpcConfiguration.Subnets, subnetIDs)
		equal(t, "service security groups", got.NetworkConfiguration.AwsvpcConfiguration.SecurityGroups, []string{r[ecs.RefTaskSecurityGroup]})
	})
	t.Run("repository and log group", func(t *testing.T) {
		repos, err := ecrc.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{aws.ToString(plan.ECR.CreateRepository.RepositoryName)}})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "repository", aws.ToString(repos.Repositories[0].RepositoryName), aws.ToString(plan.ECR.CreateRepository.RepositoryName))
		equal(t, "repository ARN", aws.ToString(repos.Repositories[0].RepositoryArn), aws.ToString(repo.Repository.RepositoryArn))
		equal(t, "scan on push", repos.Repositories[0].ImageScanningConfiguration.ScanOnPush, true)
		lgs, err := logsc.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: plan.Logs.CreateLogGroup.LogGroupName})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "log group", aws.ToString(lgs.LogGroups[0].LogGroupName), aws.ToString(plan.Logs.CreateLogGroup.LogGroupName))
		equal(t, "retention", aws.ToInt32(lgs.LogGroups[0].RetentionInDays), int32(ecs.LogRetentionDays))
	})
	t.Run("execution role", func(t *testing.T) {
		got, err := iamc.GetRole(ctx, &iam.GetRoleInput{RoleName: plan.IAM.CreateRole.RoleName})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "role ARN", aws.ToString(got.Role.Arn), aws.ToString(plan.ECS.RegisterTaskDefinition.ExecutionRoleArn))
		equal(t, "role ARN from CreateRole", aws.ToString(role.Role.Arn), aws.ToString(got.Role.Arn))
		var gotTrust, wantTrust any
		_ = json.Unmarshal([]byte(unescape(t, aws.ToString(got.Role.AssumeRolePolicyDocument))), &gotTrust)
		_ = json.Unmarshal([]byte(aws.ToString(plan.IAM.CreateRole.AssumeRolePolicyDocument)), &wantTrust)
		equal(t, "trust policy", gotTrust, wantTrust)
		pol, err := iamc.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: plan.IAM.CreateRole.RoleName, PolicyName: plan.IAM.PutRolePolicy.PolicyName})
		if err != nil {
			t.Fatal(err)
		}
		var gotPolicy, wantPolicy any
		_ = json.Unmarshal([]byte(unescape(t, aws.ToString(pol.PolicyDocument))), &gotPolicy)
		_ = json.Unmarshal([]byte(aws.ToString(plan.IAM.PutRolePolicy.PolicyDocument)), &wantPolicy)
		equal(t, "role policy", gotPolicy, wantPolicy)
	})
	t.Run("bucket", func(t *testing.T) {
		loc, err := s3c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(plan.S3.Bucket)})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "bucket region", string(loc.LocationConstraint), region)
		pab, err := s3c.GetPublicAccessBlock(ctx, &s3.GetPublicAccessBlockInput{Bucket: aws.String(plan.S3.Bucket)})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "public access block", *pab.PublicAccessBlockConfiguration, *plan.S3.PutPublicAccessBlock.PublicAccessBlockConfiguration)
	})
	t.Run("the pinned policies name what moto created", func(t *testing.T) {
		// Literal ARNs, as moto assigned them: the repository, the log group,
		// the role every ECR and Logs statement admits, the bucket's owner.
		repoARN := aws.ToString(repo.Repository.RepositoryArn)
		lgs, err := logsc.DescribeLogGroups(ctx, &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: plan.Logs.CreateLogGroup.LogGroupName})
		if err != nil {
			t.Fatal(err)
		}
		logGroupARN := strings.TrimSuffix(aws.ToString(lgs.LogGroups[0].Arn), ":*")
		roleARN := aws.ToString(role.Role.Arn)
		policies := built.EndpointPolicies()
		for short, names := range map[string][]string{
			"ecr.api": {`"` + repoARN + `"`, `"aws:PrincipalArn":"` + roleARN + `"`},
			"ecr.dkr": {`"` + repoARN + `"`, `"aws:PrincipalArn":"` + roleARN + `"`},
			"logs":    {`"` + logGroupARN + `"`, `"` + logGroupARN + `:*"`, `"aws:PrincipalArn":"` + roleARN + `"`},
			"s3":      {`"arn:aws:s3:::` + plan.S3.Bucket + `/*"`, `"s3:ResourceAccount":"` + strings.Split(roleARN, ":")[4] + `"`},
		} {
			for _, n := range names {
				if !strings.Contains(policies[short], n) {
					t.Errorf("%s policy does not name %s: %s", short, n, policies[short])
				}
			}
			if strings.Contains(policies[short], "${") {
				t.Errorf("%s policy holds a policy variable: %s", short, policies[short])
			}
		}
	})
	t.Run("the predicate holds over moto's identifiers", func(t *testing.T) {
		// The same document with every reference replaced by the identifier
		// moto assigned: the verdicts must not depend on the placeholders.
		real := string(doc)
		for k, v := range r {
			real = strings.ReplaceAll(real, `"`+k+`"`, `"`+v+`"`)
		}
		if strings.Contains(real, `"ref:task-security-group"`) {
			t.Fatal("references left")
		}
		verdicts, err := ecs.Evaluate([]byte(real), nil)
		if err != nil {
			t.Fatal(err)
		}
		count := map[ecs.Verdict]int{}
		for _, v := range verdicts {
			count[v.Verdict]++
		}
		equal(t, "split", count, map[ecs.Verdict]int{ecs.Closed: 10, ecs.Open: 1, ecs.Unproven: 2})
	})
	t.Run("DNS Firewall through the SDK's types", func(t *testing.T) {
		// moto has no DNS Firewall: the rule group goes through the SDK's
		// route53resolver types and the check.
		rules, err := plan.FirewallRules()
		if err != nil {
			t.Fatal(err)
		}
		sdk := dnsfirewall.ToSDK(aws.ToString(plan.Route53Resolver.CreateFirewallRuleGroup.Name), rules)
		back, err := dnsfirewall.FromSDK(sdk.Rules, sdk.Domains)
		if err != nil {
			t.Fatal(err)
		}
		if f := dnsfirewall.Check(dnsfirewall.Input{Rules: back, FailOpen: plan.Route53Resolver.UpdateFirewallConfig.FirewallFailOpen, Catalogue: m.Egress}); len(f) != 0 {
			t.Fatalf("findings: %v", f)
		}
		equal(t, "fail open", plan.Route53Resolver.UpdateFirewallConfig.FirewallFailOpen, r53types.FirewallFailOpenStatusDisabled)
		equal(t, "association VPC", aws.ToString(plan.Route53Resolver.AssociateFirewallRuleGroup.VpcId), net.VPCID)
		last := sdk.Rules[len(sdk.Rules)-1]
		equal(t, "last rule", []string{string(last.Action), sdk.Domains[aws.ToString(last.FirewallDomainListId)][0]}, []string{"BLOCK", "*"})
	})
}

// unescape reads a policy document as IAM returns it (URL-encoded, per the
// IAM API) or as moto may return it (plain JSON).
func unescape(t *testing.T, doc string) string {
	t.Helper()
	if strings.HasPrefix(strings.TrimSpace(doc), "{") {
		return doc
	}
	out, err := url.QueryUnescape(doc)
	if err != nil {
		t.Fatalf("policy document %q: %v", doc, err)
	}
	return out
}

func sorted(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

func envMap(kv []ecstypes.KeyValuePair) map[string]string {
	out := map[string]string{}
	for _, e := range kv {
		out[aws.ToString(e.Name)] = aws.ToString(e.Value)
	}
	return out
}

func ports(ps []ecstypes.PortMapping) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d/%s", aws.ToInt32(p.ContainerPort), p.Protocol))
	}
	return out
}

func deps(ds []ecstypes.ContainerDependency) []string {
	var out []string
	for _, d := range ds {
		out = append(out, aws.ToString(d.ContainerName)+"="+string(d.Condition))
	}
	return out
}
