package ecs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

const shopManifest = `name: shop
runtime:
  provider: ecs
services:
  web:
    image: ghcr.io/acme/shop:1.4.2
    port: 8080
    web: true
    env: {LOG_LEVEL: debug}
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

func parse(t testing.TB, content string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(content))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return m
}

// clusterARN is a cluster in account 123456789012: the account the
// endpoint policies are pinned to.
const clusterARN = "arn:aws:ecs:eu-west-1:123456789012:cluster/previews"

// described is a described network whose cluster ARN gives the account.
func described() Network { return describedWith(clusterARN) }

// describedNoAccount names the cluster by name: the account is unknown.
func describedNoAccount() Network { return describedWith("previews") }

func describedWith(cluster string) Network {
	n, err := ResolveNetwork(NetworkSettings{
		Region: "eu-west-1", Cluster: cluster, VPCID: "vpc-0abc1234def567890", VPCCIDR: "10.20.0.0/16",
		SubnetIDs:   []string{"subnet-0aaa1111bbb222333", "subnet-0ccc4444ddd555666"},
		SubnetCIDRs: []string{"10.20.1.0/24", "10.20.2.0/24"},
	}, noEnv)
	if err != nil {
		panic(err)
	}
	return n
}

func noEnv(string) string { return "" }

func planDoc(t testing.TB, net Network) []byte {
	t.Helper()
	p, err := BuildPlan(parse(t, shopManifest), net)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func verdicts(ps []PathVerdict) map[string]PathVerdict {
	out := map[string]PathVerdict{}
	for _, p := range ps {
		out[p.ID] = p
	}
	return out
}

func withAccount(n Network, account string) Network {
	n.Account, n.AccountFrom = account, EnvAccountID
	return n
}

func TestReportSplit(t *testing.T) {
	endpointsUnproven := map[string][2]string{
		PathInterfaceEndpoints: {"unproven", "none"},
		PathS3Gateway:          {"unproven", "none"},
	}
	for _, c := range []struct {
		name    string
		net     Network
		counts  [3]int
		special map[string][2]string
	}{
		{"described, cluster ARN", described(), [3]int{10, 1, 2}, nil},
		{"described, account from AF_ECS_ACCOUNT_ID", withAccount(describedNoAccount(), "123456789012"), [3]int{10, 1, 2}, nil},
		{"described, no account", describedNoAccount(), [3]int{8, 1, 4}, endpointsUnproven},
		{"placeholder, no account", PlaceholderNetwork(), [3]int{8, 1, 4}, endpointsUnproven},
		{"placeholder with an account", withAccount(PlaceholderNetwork(), "123456789012"), [3]int{10, 1, 2}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			net := c.net
			r, err := NewReport(parse(t, shopManifest), net, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Answer != "refused" || len(r.Paths) != 13 {
				t.Fatalf("answer %q, %d paths", r.Answer, len(r.Paths))
			}
			if got := [3]int{r.Closed, r.Open, r.Unproven}; got != c.counts || r.ClosedComputed != c.counts[0] || r.ClosedRecorded != 0 {
				t.Fatalf("counts %s, want %v", r.Counts(), c.counts)
			}
			want := map[string][2]string{
				PathTaskMetadata:     {"open", "documented"},
				PathInstanceMetadata: {"unproven", "none"},
				PathTimeSync:         {"unproven", "none"},
			}
			maps.Copy(want, c.special)
			for i, p := range r.Paths {
				if p.ID != PathIDs()[i] {
					t.Errorf("path %d is %s, want %s", i, p.ID, PathIDs()[i])
				}
				w, special := want[p.ID]
				if !special {
					w = [2]string{"closed", "computed"}
				}
				if string(p.Verdict) != w[0] || string(p.Evidence) != w[1] {
					t.Errorf("%s: %s/%s, want %s/%s (%s)", p.ID, p.Verdict, p.Evidence, w[0], w[1], p.Detail)
				}
				if (p.Verdict == Closed) != (p.ClosedBy != "") {
					t.Errorf("%s: closed_by %q with verdict %s", p.ID, p.ClosedBy, p.Verdict)
				}
				if p.Evidence == Documented {
					if p.Citation == nil || p.Citation.Title == "" || p.Citation.Quote == "" || !strings.Contains(p.Detail, p.Citation.Quote) {
						t.Errorf("%s: documented without a cited statement: %+v", p.ID, p.Citation)
					}
				}
				if p.Detail == "" || p.Description == "" {
					t.Errorf("%s: empty detail or description", p.ID)
				}
			}
			// Each endpoint path cites the AWS pages its statements were checked against.
			v := verdicts(r.Paths)
			for id, pages := range map[string][]Reference{
				PathInterfaceEndpoints: {RefECREndpoints, RefECRActions, RefLogsEndpoint, RefPrincipalArn},
				PathS3Gateway:          {RefECREndpoints, RefS3Gateway, RefResourceAccount},
			} {
				for _, page := range pages {
					if !strings.Contains(v[id].Detail, page.URL) {
						t.Errorf("%s detail does not cite %s: %s", id, page.URL, v[id].Detail)
					}
				}
			}
			for _, id := range []string{PathInstanceMetadata, PathTimeSync} {
				if c := v[id].Citation; c == nil || !strings.Contains(v[id].Detail, c.URL) {
					t.Errorf("%s does not cite what AWS states: %s", id, v[id].Detail)
				}
			}
			if r.NetworkDescribed != net.Described {
				t.Errorf("network_described %v", r.NetworkDescribed)
			}
			if net.Described != (r.PlanJSON != "") || net.Described != (r.VPCEndpointPolicies != nil) {
				t.Errorf("described %v but plan_json %d bytes, %d policies", net.Described, len(r.PlanJSON), len(r.VPCEndpointPolicies))
			}
			if !strings.Contains(r.Summary, fmt.Sprintf("%d closed", c.counts[0])) || !strings.Contains(r.Summary, "1 open (task-metadata)") {
				t.Errorf("summary %q", r.Summary)
			}
			names := strings.Contains(r.Summary, EnvAccountID) && strings.Contains(r.Summary, "interface-endpoints and s3-gateway stay unproven")
			if names != (c.special != nil) {
				t.Errorf("summary names the account variable: %v, want %v: %q", names, c.special != nil, r.Summary)
			}
			if c.special == nil && !strings.Contains(r.Summary, "2 unproven (instance-metadata, time-sync)") {
				t.Errorf("summary %q", r.Summary)
			}
		})
	}
}

func mustEvaluate(t *testing.T, d []byte, attempts []Attempt) map[string]PathVerdict {
	t.Helper()
	v, err := Evaluate(d, attempts)
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 13 {
		t.Fatalf("%d paths", len(v))
	}
	return verdicts(v)
}

// The documented verdicts come from the document too: off Fargate 1.4.0
// nothing the report cites applies, and the paths say so.
func TestDocumentedVerdictsAreEvaluated(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(t *testing.T, d doc)
	}{
		{"platform 1.3.0", func(t *testing.T, d doc) { d.obj(t, "ECS", "CreateService")["platformVersion"] = "1.3.0" }},
		{"EC2 launch type", func(t *testing.T, d doc) {
			d.obj(t, "ECS", "CreateService")["launchType"] = "EC2"
			d.obj(t, "ECS", "RegisterTaskDefinition")["requiresCompatibilities"] = []any{"EC2"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := loadDoc(t, planDoc(t, described()))
			c.mutate(t, d)
			v := mustEvaluate(t, d.bytes(t), nil)
			if p := v[PathTaskMetadata]; p.Verdict != Unproven || p.Evidence != NoEvidence {
				t.Errorf("task-metadata %s/%s: %s", p.Verdict, p.Evidence, p.Detail)
			}
			if p := v[PathTimeSync]; p.Verdict != Unproven {
				t.Errorf("time-sync must never close without a recorded attempt: %s", p.Verdict)
			}
		})
	}
	if v := mustEvaluate(t, planDoc(t, described()), nil); v[PathTaskMetadata].Verdict != Open {
		t.Fatal("baseline")
	}
}

func TestPlatformVersion(t *testing.T) {
	for v, want := range map[string]bool{"": true, "LATEST": true, "1.4.0": true, "1.4": true, "1.10.0": true, "2.0.0": true, "1.3.0": false, "1.0.0": false, "x": false} {
		if got := platformAtLeast140(v); got != want {
			t.Errorf("platformAtLeast140(%q) = %v", v, got)
		}
	}
}

func TestRecordedAttempts(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	base := planDoc(t, described())
	cases := []struct {
		name     string
		attempts []Attempt
		path     string
		verdict  Verdict
		evidence Evidence
		closedBy string
		detail   string
		counts   [3]int
	}{
		{"none: nothing moves on absence of evidence", nil, PathInstanceMetadata, Unproven, NoEvidence, "", "", [3]int{10, 1, 2}},
		{"blocked closes an unproven path, graded recorded",
			[]Attempt{{PathInstanceMetadata, "169.254.169.254:80", Blocked, at}}, PathInstanceMetadata, Closed, Recorded,
			"recorded attempt: blocked 169.254.169.254:80 at 2025-03-01T12:00:00Z", "not by the configuration", [3]int{11, 1, 1}},
		{"reached opens an unproven path",
			[]Attempt{{PathTimeSync, "169.254.169.123:123", Reached, at}}, PathTimeSync, Open, Recorded, "", "Recorded escape", [3]int{10, 2, 1}},
		{"a recorded escape opens a computed closure",
			[]Attempt{{PathPublicIP, "1.1.1.1:443", Reached, at}}, PathPublicIP, Open, Recorded, "", "was closed (computed)", [3]int{9, 2, 2}},
		{"a recorded block beside a computed closure stays apart",
			[]Attempt{{PathNATGateway, "1.1.1.1:443", Blocked, at}}, PathNATGateway, Closed, Computed,
			"route table holds only local + S3 prefix-list routes", "Recorded separately", [3]int{10, 1, 2}},
		{"a recorded block does not close a documented open path",
			[]Attempt{{PathTaskMetadata, "169.254.170.2:80", Blocked, at}}, PathTaskMetadata, Open, Documented, "", "stays open", [3]int{10, 1, 2}},
		{"reached wins over blocked",
			[]Attempt{{PathInstanceMetadata, "169.254.169.254:80", Blocked, at}, {PathInstanceMetadata, "169.254.169.254:80", Reached, at.Add(time.Minute)}},
			PathInstanceMetadata, Open, Recorded, "", "Also recorded: blocked", [3]int{10, 2, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := mustEvaluate(t, base, c.attempts)
			p := v[c.path]
			if p.Verdict != c.verdict || p.Evidence != c.evidence || p.ClosedBy != c.closedBy {
				t.Fatalf("%s: %s/%s closed_by %q; want %s/%s %q\n%s", c.path, p.Verdict, p.Evidence, p.ClosedBy, c.verdict, c.evidence, c.closedBy, p.Detail)
			}
			if !strings.Contains(p.Detail, c.detail) {
				t.Errorf("detail %q does not say %q", p.Detail, c.detail)
			}
			if len(p.Attempts) != len(c.attempts) {
				t.Errorf("attempts %v", p.Attempts)
			}
			r, err := NewReport(parse(t, shopManifest), described(), c.attempts)
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]int{r.Closed, r.Open, r.Unproven}; got != c.counts {
				t.Errorf("counts %v, want %v", got, c.counts)
			}
			if r.ClosedComputed+r.ClosedRecorded != r.Closed || len(r.Recorded) != len(c.attempts) {
				t.Errorf("closures not kept apart: %s", r.Counts())
			}
		})
	}
}

func TestParseAttempts(t *testing.T) {
	good := `[{"path":"instance-metadata","target":"169.254.169.254:80","result":"blocked","time":"2025-03-01T12:00:00Z"}]`
	list, err := ParseAttempts(good)
	if err != nil || len(list) != 1 || list[0].Result != Blocked || list[0].Time.Year() != 2025 {
		t.Fatalf("%v %v", list, err)
	}
	if list, err := ParseAttempts(strings.Replace(good, "blocked", "escaped", 1)); err != nil || list[0].Result != Reached {
		t.Fatalf("escaped: %v %v", list, err)
	}
	if list, err := ParseAttempts("  "); err != nil || list != nil {
		t.Fatalf("empty: %v %v", list, err)
	}
	for raw, want := range map[string]string{
		`{"path":"x"}`: "not a JSON list",
		`[{"path":"instance-metadata","target":"a","result":"blocked","time":"2025-03-01T12:00:00Z","extra":1}]`: "unknown field",
		`[{"path":"imds","target":"a","result":"blocked","time":"2025-03-01T12:00:00Z"}]`:                        `entry 1: path "imds" is not one of public-ip`,
		`[{"path":"time-sync","target":"","result":"open","time":"2025-03-01T12:00:00Z"}]`:                       `target is empty; result "open" is neither`,
		`[{"path":"time-sync","target":"a","result":"reached"}]`:                                                 "time is missing",
		`[{"path":"time-sync","target":"a","result":"reached","time":"yesterday"}]`:                              "not a JSON list",
	} {
		_, err := ParseAttempts(raw)
		list := refusal.All(err)
		if len(list) == 0 || list[0].Code != AttemptsInvalid || list[0].Attribute != "recorded_attempts" || !strings.Contains(list[0].Summary, want) {
			t.Errorf("ParseAttempts(%s) = %v, want %s mentioning %q", raw, err, AttemptsInvalid, want)
		}
	}
}

func TestPlanDocument(t *testing.T) {
	d1, d2 := planDoc(t, described()), planDoc(t, described())
	if !bytes.Equal(d1, d2) {
		t.Fatal("the plan document is not stable")
	}
	again, err := Normalize(d1)
	if err != nil || !bytes.Equal(again, d1) {
		t.Fatal("the plan document is not in normal form")
	}
	s := string(d1)
	for _, want := range []string{
		`"networkMode":"awsvpc"`, `"requiresCompatibilities":["FARGATE"]`, `"assignPublicIp":"DISABLED"`,
		`"logDriver":"awslogs"`, `"awslogs-group":"/antifailure/shop"`, `"FirewallFailOpen":"DISABLED"`,
		`"Priority":101`, `"VpcEndpointType":"Interface"`, `"ServiceName":"com.amazonaws.eu-west-1.ecr.dkr"`,
		`prod-eu-west-1-starport-layer-bucket/*`, `"platformVersion":"1.4.0"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("document lacks %s", want)
		}
	}
	for _, absent := range []string{"taskRoleArn", "enableExecuteCommand", ProbeContainerName, "null", `""`} {
		if strings.Contains(s, absent) {
			t.Errorf("document holds %s", absent)
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, d1); err != nil || !bytes.Equal(compact.Bytes(), d1) {
		t.Error("document is not compact")
	}

	// The network changes the report, not the answer.
	other := planDoc(t, withAccount(PlaceholderNetwork(), "210987654321"))
	if bytes.Equal(other, d1) {
		t.Fatal("the network does not reach the plan")
	}
	a, b := mustEvaluate(t, d1, nil), mustEvaluate(t, other, nil)
	for id := range a {
		if a[id].Verdict != b[id].Verdict {
			t.Errorf("%s: %s on one network, %s on the other", id, a[id].Verdict, b[id].Verdict)
		}
	}
}

func TestProbeContainer(t *testing.T) {
	net := described()
	net.ProbeImage = "ghcr.io/antifailure/probe:1"
	p, err := BuildPlan(parse(t, shopManifest), net)
	if err != nil {
		t.Fatal(err)
	}
	cs := p.ECS.RegisterTaskDefinition.ContainerDefinitions
	if len(cs) != 3 || *cs[0].Name != ProbeContainerName || *cs[0].Image != net.ProbeImage {
		t.Fatalf("containers %v", cs)
	}
	for _, c := range cs[1:] {
		if len(c.DependsOn) != 1 || *c.DependsOn[0].ContainerName != ProbeContainerName || c.DependsOn[0].Condition != "SUCCESS" {
			t.Errorf("%s does not wait for the probe", *c.Name)
		}
	}
	doc, _ := p.JSON()
	v := mustEvaluate(t, doc, nil)
	if !strings.Contains(v[PathInstanceMetadata].Detail, "carries the probe container "+net.ProbeImage) {
		t.Errorf("detail %q", v[PathInstanceMetadata].Detail)
	}
	if v[PathInstanceMetadata].Verdict != Unproven {
		t.Error("a probe container is not evidence")
	}
	base := mustEvaluate(t, planDoc(t, described()), nil)
	if !strings.Contains(base[PathInstanceMetadata].Detail, "AF_ECS_PROBE_IMAGE unset the plan carries no probe container") {
		t.Errorf("detail %q", base[PathInstanceMetadata].Detail)
	}
}

// Done when: with a described network and a cluster ARN in 123456789012,
// every repository, log group and own-bucket statement names 123456789012,
// and no Resource holds a policy variable.
func TestEndpointPolicies(t *testing.T) {
	r, err := NewReport(parse(t, shopManifest), described(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(r.VPCEndpointPolicies)); !reflect.DeepEqual(got, []string{"ecr.api", "ecr.dkr", "logs", "s3"}) {
		t.Fatalf("services %v", got)
	}
	role := "arn:aws:iam::123456789012:role/antifailure-shop-execution"
	want := map[string][]string{
		"ecr.dkr": {"*", "arn:aws:ecr:eu-west-1:123456789012:repository/antifailure/shop"},
		"logs":    {"arn:aws:logs:eu-west-1:123456789012:log-group:/antifailure/shop", "arn:aws:logs:eu-west-1:123456789012:log-group:/antifailure/shop:*"},
		"s3":      {"arn:aws:s3:::prod-eu-west-1-starport-layer-bucket/*", "arn:aws:s3:::antifailure-shop-0abc1234def567890", "arn:aws:s3:::antifailure-shop-0abc1234def567890/*"},
	}
	want["ecr.api"] = want["ecr.dkr"]
	statements := 0
	for svc, resources := range want {
		var pd PolicyDocument
		if err := json.Unmarshal([]byte(r.VPCEndpointPolicies[svc]), &pd); err != nil || pd.Version != "2012-10-17" {
			t.Fatalf("%s policy: %v", svc, err)
		}
		var got []string
		for _, st := range pd.Statement {
			statements++
			if len(st.Resource) != 1 {
				t.Errorf("%s %s names %d resources; one statement per resource", svc, st.Sid, len(st.Resource))
			}
			r := st.Resource[0]
			got = append(got, r)
			if strings.Contains(r, "${") {
				t.Errorf("%s %s: a policy variable in Resource %s", svc, st.Sid, r)
			}
			pin, _ := conditionValues(st, KeyPrincipalArn, "ArnEquals")
			owner, _ := conditionValues(st, KeyResourceAccount, "StringEquals")
			switch {
			case svc != "s3":
				if !reflect.DeepEqual(pin, []string{role}) {
					t.Errorf("%s %s: caller pinned to %v, want the execution role", svc, st.Sid, pin)
				}
			case strings.Contains(r, "starport-layer-bucket"):
				if st.Condition != nil || !reflect.DeepEqual([]string(st.Action), []string{"s3:GetObject"}) {
					t.Errorf("layer bucket statement is not AWS's minimal one: %+v", st)
				}
			default:
				if !reflect.DeepEqual(owner, []string{"123456789012"}) {
					t.Errorf("%s %s: bucket owner %v", svc, st.Sid, owner)
				}
			}
			if r == "*" && !reflect.DeepEqual([]string(st.Action), []string{actionToken}) {
				t.Errorf("%s: \"*\" for %v", svc, st.Action)
			}
		}
		if !reflect.DeepEqual(got, resources) {
			t.Errorf("%s resources %v, want %v", svc, got, resources)
		}
	}
	if statements != 9 {
		t.Errorf("%d statements", statements)
	}

	// The plan creates what the policies name, before them.
	p, err := BuildPlan(parse(t, shopManifest), described())
	if err != nil {
		t.Fatal(err)
	}
	if *p.IAM.CreateRole.RoleName != "antifailure-shop-execution" || *p.ECS.RegisterTaskDefinition.ExecutionRoleArn != role {
		t.Errorf("role %s, task definition names %s", *p.IAM.CreateRole.RoleName, *p.ECS.RegisterTaskDefinition.ExecutionRoleArn)
	}
	if *p.S3.CreateBucket.Bucket != p.S3.Bucket || *p.S3.PutPublicAccessBlock.ExpectedBucketOwner != "123456789012" ||
		string(p.S3.CreateBucket.CreateBucketConfiguration.LocationConstraint) != "eu-west-1" {
		t.Errorf("bucket %+v", p.S3)
	}
	if ec2 := slices.Index(p.ApplyOrder, StepEC2); slices.Index(p.ApplyOrder, StepIAM) > ec2 || slices.Index(p.ApplyOrder, StepS3) > ec2 {
		t.Errorf("apply order %v", p.ApplyOrder)
	}
	if doc, _ := p.JSON(); strings.Contains(string(doc), "${aws:") || strings.Contains(string(doc), AccountPlaceholder) {
		t.Errorf("the document holds a policy variable or the placeholder")
	}
	// No account: the placeholder, never a policy variable.
	p, _ = BuildPlan(parse(t, shopManifest), describedNoAccount())
	if doc, _ := p.JSON(); strings.Contains(string(doc), "${aws:") || !strings.Contains(string(doc), "arn:aws:iam::ACCOUNT_ID:role/") {
		t.Errorf("without an account: %s", doc)
	}
}

func TestOwnFirewallGroupIsClean(t *testing.T) {
	r, err := NewReport(parse(t, shopManifest), described(), nil)
	if err != nil {
		t.Fatal(err)
	}
	rules := r.DNSFirewallRules
	last := rules[len(rules)-1]
	if last.Name != dnsfirewall.TerminalRuleName || last.Action != "BLOCK" || last.Domains[0] != "*" {
		t.Fatalf("last rule %+v", last)
	}
	if f := dnsfirewall.Check(dnsfirewall.Input{Rules: rules, FailOpen: "DISABLED", Catalogue: parse(t, shopManifest).Egress}); len(f) != 0 {
		t.Fatal(f)
	}
	var names []string
	for _, rl := range rules {
		names = append(names, fmt.Sprintf("%s:%s", rl.Action, rl.Domains[0]))
	}
	got := strings.Join(names, " ")
	for _, want := range []string{"BLOCK:hooks.slack.com", "BLOCK:raw.githubusercontent.com", "ALLOW:api.stripe.com",
		"ALLOW:*.githubusercontent.com", "ALLOW:api.ecr.eu-west-1.amazonaws.com", "ALLOW:*.dkr.ecr.eu-west-1.amazonaws.com"} {
		if !strings.Contains(got, want) {
			t.Errorf("rules %s lack %s", got, want)
		}
	}
	if strings.Index(got, "BLOCK:raw.githubusercontent.com") > strings.Index(got, "ALLOW:*.githubusercontent.com") {
		t.Errorf("the mock host is not blocked ahead of the wildcard: %s", got)
	}
}

func TestRefusal(t *testing.T) {
	m := parse(t, shopManifest)
	r := Refusal(m, described(), nil)
	if r.Code != RuntimeRefused || r.Attribute != "manifest" || r.Line != 3 {
		t.Fatalf("%+v", r)
	}
	for _, want := range []string{"10 are closed", "1 open (task-metadata)", "2 unproven (instance-metadata, time-sync)"} {
		if !strings.Contains(r.Summary, want) {
			t.Errorf("summary %q lacks %q", r.Summary, want)
		}
	}
	body := r.Body()
	for _, want := range []string{
		"Use runtime.provider: kubernetes against an EKS cluster, where the probe runs.",
		"antifailure_ecs_egress_report",
		"Setting them changes the report, not the answer",
		"task-metadata          open     documented",
		"instance-metadata      unproven none",
		"vpc-0abc1234def567890", "Account 123456789012",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if !strings.HasSuffix(body, "Nothing was created.") || !strings.HasPrefix(r.Title(), "AF-ECS-001 ") {
		t.Errorf("title %q body %q", r.Title(), body)
	}
	p := Refusal(m, PlaceholderNetwork(), nil)
	if !strings.Contains(p.Body(), "placeholder") || !strings.Contains(p.Summary, "8 are closed") ||
		!strings.Contains(p.Body(), "interface-endpoints and s3-gateway stay unproven until the account is known: set AF_ECS_ACCOUNT_ID") {
		t.Errorf("placeholder network: %s", p.Error())
	}
}

// tableRows counts the path lines of a refusal's table.
func tableRows(body string) int {
	n := 0
	for _, id := range PathIDs() {
		if strings.Contains(body, "\n  "+id+" ") {
			n++
		}
	}
	return n
}

// Every ecs refusal carries the report: a bad variable is named, and the
// thirteen paths are listed with what could be judged without it.
func TestRefusalWithABadNetworkCarriesTheReport(t *testing.T) {
	_, netErr := ResolveNetwork(NetworkSettings{}, func(k string) string {
		return map[string]string{EnvRegion: "eu-west-1", EnvCluster: "previews", EnvVPCID: "vpc-0abc1234def567890", EnvVPCCIDR: "10.20.0.0/33",
			EnvSubnetIDs: "subnet-0aaa1111bbb222333", EnvSubnetCIDRs: "10.20.1.0/24"}[k]
	})
	if netErr == nil {
		t.Fatal("the bad CIDR was accepted")
	}
	r := Refusal(parse(t, shopManifest), Network{}, netErr)
	if r.Code != RuntimeRefused || !strings.Contains(r.Summary, "AF-ECS-011 AF_ECS_VPC_CIDR (from the environment) \"10.20.0.0/33\" is not a CIDR block") {
		t.Fatalf("%s", r.Error())
	}
	body := r.Body()
	if n := tableRows(body); n != 13 {
		t.Errorf("%d of 13 paths listed:\n%s", n, body)
	}
	for _, want := range []string{"2 closed", "1 open (task-metadata)", "10 unproven", "public-ip              unproven none",
		"ecs-exec               closed   computed", "Next: Correct the variable", "Nothing was created."} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "until the account is known") {
		t.Errorf("a path not judged for the network is blamed on the account:\n%s", body)
	}
}

func TestRefusalNamesUnrepresentableHost(t *testing.T) {
	m := parse(t, "name: shop\nruntime:\n  provider: ecs\negress:\n  - host: _dmarc.example.com\n    mode: mock\n")
	r := Refusal(m, described(), nil)
	if r.Code != RuntimeRefused || !strings.Contains(r.Summary, `"_dmarc.example.com"`) || !strings.Contains(r.Summary, "AF-DNS-001") {
		t.Fatalf("%s", r.Error())
	}
	if body := r.Body(); tableRows(body) != 13 || !strings.Contains(body, "amazon-dns             unproven none") ||
		!strings.Contains(body, "9 closed") || !strings.Contains(body, "public-ip              closed   computed") {
		t.Errorf("%s", body)
	}
	_, err := NewReport(m, PlaceholderNetwork(), nil)
	if list := refusal.All(err); len(list) != 1 || list[0].Code != dnsfirewall.HostUnrepresentable || list[0].Line != 5 {
		t.Fatalf("%v", err)
	}
}

func BenchmarkNewReport(b *testing.B) {
	m := parse(b, shopManifest)
	net := described()
	for i := 0; i < b.N; i++ {
		if _, err := NewReport(m, net, nil); err != nil {
			b.Fatal(err)
		}
	}
}
