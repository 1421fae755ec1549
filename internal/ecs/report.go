package ecs

import (
	"fmt"
	"slices"
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
	// PlanJSON is the normalized plan document the paths were judged on;
	// empty when the network is not described, so nothing computed for the
	// placeholder network can be applied by accident.
	PlanJSON string
	// DNSFirewallRules are the plan's rules in priority order, ready for
	// aws_route53_resolver_firewall_rule (one domain list per rule).
	DNSFirewallRules []dnsfirewall.Rule
	// VPCEndpointPolicies maps a short service name (ecr.api, ecr.dkr, logs,
	// s3) to its endpoint policy JSON; nil when the network is not
	// described.
	VPCEndpointPolicies map[string]string
	NetworkDescribed    bool
	// AccountKnown is whether the endpoint policies name the environment's
	// account rather than the placeholder.
	AccountKnown bool
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
		Answer:           Answer,
		Paths:            verdicts,
		Recorded:         attempts,
		DNSFirewallRules: rules,
		NetworkDescribed: net.Described,
		AccountKnown:     net.Account != "",
	}
	if net.Described {
		r.PlanJSON, r.VPCEndpointPolicies = string(doc), plan.EndpointPolicies()
	}
	r.count()
	return r, nil
}

// count sets the counts and the summary from the paths.
func (r *Report) count() {
	r.Closed, r.Open, r.Unproven, r.ClosedComputed, r.ClosedRecorded = 0, 0, 0, 0, 0
	for _, p := range r.Paths {
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
	settle := ""
	if r.AccountSettles() {
		settle = " " + PathInterfaceEndpoints + " and " + PathS3Gateway + " stay unproven until the account is known: " + AccountSettles + "."
	}
	return fmt.Sprintf("runtime.provider ecs is refused. Of %d egress paths out of a Fargate task (platform version 1.4.0 or later): %s.%s %s",
		len(r.Paths), r.Counts(), settle, KubernetesSentence)
}

// AccountSettles is whether an endpoint path is unproven for want of the
// account.
func (r *Report) AccountSettles() bool {
	if r.AccountKnown {
		return false
	}
	for _, p := range r.Paths {
		if (p.ID == PathInterfaceEndpoints || p.ID == PathS3Gateway) && p.Verdict == Unproven && p.Evidence == NoEvidence {
			return true
		}
	}
	return false
}

// Table is the paths, one line each, for the refusal's detail.
func (r *Report) Table() string {
	var b strings.Builder
	for _, p := range r.Paths {
		fmt.Fprintf(&b, "  %-22s %-8s %-10s %s\n", p.ID, p.Verdict, p.Evidence, p.Description)
	}
	return strings.TrimRight(b.String(), "\n")
}

// networkPaths are the paths whose verdict depends on the network values;
// with a network that cannot be read they are listed as not judged.
var networkPaths = []string{PathPublicIP, PathNATGateway, PathIPv6Egress, PathPrivateRoutes, PathVPCLateral, PathInterfaceEndpoints, PathS3Gateway, PathAmazonDNS}

// notJudged marks paths unproven, evidence none, saying why.
func (r *Report) notJudged(ids []string, why string) {
	for i := range r.Paths {
		if slices.Contains(ids, r.Paths[i].ID) {
			p := &r.Paths[i]
			p.Verdict, p.Evidence, p.ClosedBy, p.Citation, p.Attempts = Unproven, NoEvidence, "", nil, nil
			p.Detail = "Not judged: " + why
		}
	}
	r.count()
}

// Refusal is the refusal runtime.provider ecs gives (enterprise edition),
// every time with the report: the summary (counts, which path is open,
// which are unproven), the paths, the network sentence, the advice to use
// kubernetes on EKS and a pointer to the data source. The refusal package
// appends "Nothing was created." It is located at runtime.provider in the
// manifest.
//
// netErr is the network's own refusal when the AF_ECS_* settings cannot be
// read: the refusal names it, and the report is computed for the placeholder
// network with the paths the network decides listed as not judged. A
// catalogue host DNS Firewall cannot express is named the same way, with
// amazon-dns not judged.
func Refusal(m *manifest.Manifest, net Network, netErr error) *refusal.Refusal {
	pos := m.Runtime.ProviderPos
	next := KubernetesSentence + " The full report, with the generated configuration, its VPC endpoint policies and DNS Firewall rules, is the data source " + DataSourceName + "."
	problems := refusal.All(netErr)
	if netErr != nil {
		net = PlaceholderNetwork()
	}
	r, err := NewReport(m, net, nil)
	hostProblems := refusal.All(err)
	if err != nil {
		// Judge what does not depend on the catalogue.
		bare := *m
		bare.Egress = nil
		if r, err = NewReport(&bare, net, nil); err != nil {
			return refusal.New(refusal.Internal, "the ECS report cannot be produced: %v", err).At(pos.Line, pos.Column).OnAttribute("manifest")
		}
		r.notJudged([]string{PathAmazonDNS}, "the DNS Firewall rule group cannot be generated from the egress catalogue ("+titles(hostProblems, "; ")+").")
	}
	if netErr != nil {
		r.notJudged(networkPaths, "the ECS network settings cannot be read ("+titles(problems, "; ")+"), so there is no network to judge it on.")
	}
	problems = append(problems, hostProblems...)
	summary := fmt.Sprintf("runtime.provider ecs is refused: of %d egress paths out of a Fargate task, %d are closed, %d open (%s) and %d unproven (%s)",
		len(r.Paths), r.Closed, r.Open, listOrNone(r.IDs(Open)), r.Unproven, listOrNone(r.IDs(Unproven)))
	detail := "An environment is started only where it can be proven to have no way out. On ECS Fargate the image pull, the ECR login and the log push run over the task's own network interface, and whether AWS enforces a route table cannot be observed without an account, so the ecs runtime refuses and reports instead."
	sentence := net.Sentence()
	if len(problems) > 0 {
		summary = "runtime.provider ecs is refused, and " + problems[0].Title()
		if len(problems) > 1 {
			summary += fmt.Sprintf(" (and %d more)", len(problems)-1)
		}
		detail = "The report cannot be computed for the settings given:\n  " + titles(problems, "\n  ") + "\n\nWhat could be judged without them:"
		next = problems[0].Next + " " + next
		if netErr != nil {
			sentence = "The paths the network decides are not judged: there is no network to judge them on."
		}
	}
	if netErr == nil && r.AccountSettles() {
		sentence += " " + PathInterfaceEndpoints + " and " + PathS3Gateway + " stay unproven until the account is known: " + AccountSettles + "."
	}
	return refusal.New(RuntimeRefused, "%s", summary).
		At(pos.Line, pos.Column).OnAttribute("manifest").
		WithDetail("%s\n\n%s\n\n%s\n\n%s", detail, r.Counts()+".", r.Table(), sentence).
		WithNext("%s", next)
}

func titles(l refusal.List, sep string) string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Title()
	}
	return strings.Join(parts, sep)
}
