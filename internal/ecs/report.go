package ecs

import (
	"fmt"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/dnsfirewall"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// RuntimeRefused is the refusal runtime.provider ecs always gives.
var RuntimeRefused = refusal.Register("AF-ECS-001",
	"runtime.provider ecs refuses, every time, with the egress report: an environment on ECS Fargate cannot be proven to have no way out (the image pull runs inside the boundary, and enforcement cannot be observed without an AWS account).",
	"Use runtime.provider: kubernetes against an EKS cluster, where the probe runs. The full report is the data source antifailure_ecs_egress_report.")

// KubernetesSentence is the report's advice.
const KubernetesSentence = "Use runtime.provider: kubernetes against an EKS cluster, where the probe runs."

// DataSourceName is the data source that carries the full report.
const DataSourceName = "antifailure_ecs_egress_report"

// Answer is the report's answer: always refused.
const Answer = "refused"

// Report is the ECS/Fargate egress report for one environment.
type Report struct {
	Answer  string
	Summary string
	Paths   []PathVerdict
	// Counts by verdict; ClosedComputed and ClosedRecorded split Closed.
	Closed, Open, Unproven         int
	ClosedComputed, ClosedRecorded int
	// Recorded are all recorded attempts, reported apart from the computed
	// closures.
	Recorded []Attempt
	// PlanJSON is the normalized plan document the paths were judged on.
	PlanJSON string
	// DNSFirewallRules are the plan's rules in priority order, ready for
	// aws_route53_resolver_firewall_rule (one domain list per rule).
	DNSFirewallRules []dnsfirewall.Rule
	// VPCEndpointPolicies maps a short service name (ecr.api, ecr.dkr, logs,
	// s3) to its endpoint policy JSON.
	VPCEndpointPolicies map[string]string
	NetworkDescribed    bool
}

// NewReport builds the plan for the environment, judges the thirteen paths
// on its JSON document (with the recorded attempts), and checks the plan's
// own DNS Firewall rule group, which must be clean. It fails when the DNS
// Firewall rules cannot be generated from the egress catalogue (a host DNS
// Firewall cannot express is refused by name).
func NewReport(m *manifest.Manifest, net Network, attempts []Attempt) (*Report, error) {
	plan, err := BuildPlan(m, net)
	if err != nil {
		return nil, err
	}
	doc, err := plan.JSON()
	if err != nil {
		return nil, refusal.New(refusal.Internal, "the ECS plan cannot be written as JSON: %v", err)
	}
	verdicts, err := Evaluate(doc, attempts)
	if err != nil {
		return nil, refusal.New(refusal.Internal, "the ECS plan document cannot be judged: %v", err)
	}
	rules, err := plan.FirewallRules()
	if err != nil {
		return nil, refusal.New(refusal.Internal, "the ECS plan's DNS Firewall rules cannot be read: %v", err)
	}
	if f := dnsfirewall.Check(dnsfirewall.Input{Rules: rules, FailOpen: plan.Route53Resolver.UpdateFirewallConfig.FirewallFailOpen, Catalogue: m.Egress}); len(f) > 0 {
		return nil, refusal.New(refusal.Internal, "the generated DNS Firewall rule group fails its own check: %v", f)
	}
	r := &Report{
		Answer:              Answer,
		Paths:               verdicts,
		Recorded:            attempts,
		PlanJSON:            string(doc),
		DNSFirewallRules:    rules,
		VPCEndpointPolicies: plan.EndpointPolicies(),
		NetworkDescribed:    net.Described,
	}
	for _, p := range verdicts {
		switch p.Verdict {
		case Closed:
			r.Closed++
			if p.Evidence == Recorded {
				r.ClosedRecorded++
			} else {
				r.ClosedComputed++
			}
		case Open:
			r.Open++
		case Unproven:
			r.Unproven++
		}
	}
	r.Summary = r.summary()
	return r, nil
}

// IDs returns the ids of the paths with the verdict.
func (r *Report) IDs(v Verdict) []string {
	var out []string
	for _, p := range r.Paths {
		if p.Verdict == v {
			out = append(out, p.ID)
		}
	}
	return out
}

func listOrNone(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// Counts is the counts by verdict, with the ids of the open and unproven
// paths: "10 closed (10 computed from the generated configuration, 0 recorded
// inside a running task), 1 open (task-metadata), 2 unproven (…)".
func (r *Report) Counts() string {
	return fmt.Sprintf("%d closed (%d computed from the generated configuration, %d recorded inside a running task), %d open (%s), %d unproven (%s)",
		r.Closed, r.ClosedComputed, r.ClosedRecorded, r.Open, listOrNone(r.IDs(Open)), r.Unproven, listOrNone(r.IDs(Unproven)))
}

func (r *Report) summary() string {
	return fmt.Sprintf("runtime.provider ecs is refused. Of %d egress paths out of a Fargate task (platform version 1.4.0 or later): %s. %s",
		len(r.Paths), r.Counts(), KubernetesSentence)
}

// Table is the paths, one line each, for the refusal's detail.
func (r *Report) Table() string {
	var b strings.Builder
	for _, p := range r.Paths {
		fmt.Fprintf(&b, "  %-22s %-8s %-10s %s\n", p.ID, p.Verdict, p.Evidence, p.Description)
	}
	return strings.TrimRight(b.String(), "\n")
}

// Refusal is the refusal runtime.provider ecs gives (enterprise edition): the
// report's summary (counts, which path is open, which are unproven), the
// paths, the network sentence, the advice to use kubernetes on EKS and a
// pointer to the data source. The refusal package appends "Nothing was
// created." It is located at runtime.provider in the manifest.
func Refusal(m *manifest.Manifest, net Network) *refusal.Refusal {
	pos := m.Runtime.ProviderPos
	next := KubernetesSentence + " The full report, with the generated configuration, its VPC endpoint policies and DNS Firewall rules, is the data source " + DataSourceName + "."
	r, err := NewReport(m, net, nil)
	if err != nil {
		var lines []string
		for _, e := range refusal.All(err) {
			lines = append(lines, "  "+e.Title())
		}
		return refusal.New(RuntimeRefused, "runtime.provider ecs is refused, and its egress report cannot be produced for this manifest").
			At(pos.Line, pos.Column).OnAttribute("manifest").
			WithDetail("The DNS Firewall rule group cannot be generated from the egress catalogue:\n%s\n\n%s", strings.Join(lines, "\n"), net.Sentence()).
			WithNext("%s", next)
	}
	return refusal.New(RuntimeRefused, "runtime.provider ecs is refused: of %d egress paths out of a Fargate task, %d are closed, %d open (%s) and %d unproven (%s)",
		len(r.Paths), r.Closed, r.Open, listOrNone(r.IDs(Open)), r.Unproven, listOrNone(r.IDs(Unproven))).
		At(pos.Line, pos.Column).OnAttribute("manifest").
		WithDetail("An environment is started only where it can be proven to have no way out. On ECS Fargate the image pull, the ECR login and the log push run over the task's own network interface, and whether AWS enforces a route table cannot be observed without an account, so the ecs runtime refuses and reports instead.\n\n%s\n\n%s\n\n%s",
			r.Counts()+".", r.Table(), net.Sentence()).
		WithNext("%s", next)
}
