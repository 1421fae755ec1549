// Package placement decides where an environment goes.
//
// Placement is a pure function of the manifest and the edition: no capacity, no
// health, no cluster calls. It has to be, because af up, af status, af logs and
// af down (and terraform plan, apply and destroy) each decide independently; a
// placement that varied with a cluster's health would have the next command ask
// the wrong cluster. It never falls over: an unreachable placed target is an
// error for the runtime to report, not a reason to place somewhere else.
package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Decision is where an environment goes, and why.
type Decision struct {
	Runtime string // the runtime provider, e.g. "kubernetes"
	Target  Target
	// Domain is the effective domain: the target's, else runtime.domain.
	Domain     string
	Candidates []Candidate
}

// Target is the placed target. With no targets in the manifest it is the
// runtime itself: Name is the runtime provider and Domain is runtime.domain.
type Target struct {
	Name              string
	KubeconfigContext string
	Domain            string
	Tags              map[string]string
}

// Candidate explains one target's part in the decision.
type Candidate struct {
	Name    string
	Matched bool     // the target met every requirement
	Placed  bool     // the target was chosen
	Reasons []string // one line per requirement met or missed, then the outcome
}

// ECSRefuser builds the refusal that runtime.provider: ecs answers with. The
// report behind it lives in its own package; placement only knows that ecs is
// registered to refuse.
type ECSRefuser func(*manifest.Manifest) *refusal.Refusal

// Rules is what placement depends on besides the manifest.
type Rules struct {
	Edition   license.Edition
	RefuseECS ECSRefuser
}

// Runtimes lists the runtime providers an edition registers, in the order
// messages name them.
func Runtimes(ed license.Edition) []string {
	if ed.Name == license.Enterprise {
		return []string{manifest.ProviderLocal, manifest.ProviderKubernetes, manifest.ProviderECS}
	}
	return []string{manifest.ProviderLocal, manifest.ProviderKubernetes}
}

// Decide places an environment of m, or refuses.
func Decide(m *manifest.Manifest, rules Rules) (Decision, error) {
	rt := m.Runtime
	if err := checkRuntime(m, rules); err != nil {
		return Decision{}, err
	}
	if len(rt.Targets) > 1 && !rules.Edition.Has(license.FeatureMultiRuntime) {
		return Decision{}, refusal.New(refusal.LicenseFeatureMissing,
			"%d placement targets need an enterprise license with the %s feature", len(rt.Targets), license.FeatureMultiRuntime).
			At(rt.TargetsPos.Line, rt.TargetsPos.Column).
			WithDetail("The %s edition places on zero or one target; choosing between several is the %s feature. One target needs no license.",
				editionLabel(rules.Edition), license.FeatureMultiRuntime).
			WithNext("Set the provider's license (or AF_LICENSE) to a license with %s, or keep a single target.", license.FeatureMultiRuntime)
	}
	if len(rt.Targets) == 0 {
		if len(rt.Requires) > 0 {
			return Decision{}, noSurvivor(m, nil)
		}
		return Decision{
			Runtime: rt.Provider,
			Target:  Target{Name: rt.Provider, Domain: rt.Domain, Tags: map[string]string{}},
			Domain:  rt.Domain,
		}, nil
	}
	d := Decision{Runtime: rt.Provider}
	winner := -1
	for i, t := range rt.Targets {
		c := Candidate{Name: t.Name, Matched: true}
		for _, req := range rt.Requires {
			got, has := t.Tags[req.Key]
			switch {
			case !has:
				c.Matched = false
				c.Reasons = append(c.Reasons, fmt.Sprintf("missed %s: the target has no %s tag", req, req.Key))
			case got != req.Value:
				c.Matched = false
				c.Reasons = append(c.Reasons, fmt.Sprintf("missed %s: the target has %s=%s", req, req.Key, got))
			default:
				c.Reasons = append(c.Reasons, "met "+req.String())
			}
		}
		switch {
		case !c.Matched:
		case winner < 0:
			winner = i
			c.Placed = true
			if len(rt.Requires) == 0 {
				c.Reasons = append(c.Reasons, "no requirements: any target will do")
			}
			c.Reasons = append(c.Reasons, "placed here: the first listed target that meets every requirement")
		default:
			c.Reasons = append(c.Reasons, fmt.Sprintf("not placed: %s is listed earlier and wins", rt.Targets[winner].Name))
		}
		d.Candidates = append(d.Candidates, c)
	}
	if winner < 0 {
		return Decision{}, noSurvivor(m, d.Candidates)
	}
	t := rt.Targets[winner]
	d.Target = Target{Name: t.Name, KubeconfigContext: t.KubeconfigContext, Domain: t.Domain, Tags: t.Tags}
	if d.Target.Tags == nil {
		d.Target.Tags = map[string]string{}
	}
	d.Domain = t.Domain
	if d.Domain == "" {
		d.Domain = rt.Domain
	}
	return d, nil
}

func checkRuntime(m *manifest.Manifest, rules Rules) error {
	rt := m.Runtime
	available := Runtimes(rules.Edition)
	if !slices.Contains(available, rt.Provider) {
		r := refusal.New(refusal.RuntimeUnknown, "runtime.provider %q is not a runtime this build has", rt.Provider).
			At(rt.ProviderPos.Line, rt.ProviderPos.Column).
			WithDetail("The %s edition has: %s. Antifailure never substitutes another runtime for the one the manifest names.",
				editionLabel(rules.Edition), strings.Join(available, ", ")).
			WithNext("Set runtime.provider to one of: %s.", strings.Join(available, ", "))
		if rt.Provider == manifest.ProviderECS {
			r.Detail += " The ecs runtime is registered only in the enterprise edition, where it refuses with the Fargate egress report; the report itself is the antifailure_ecs_egress_report data source, in every edition."
		}
		return r
	}
	if rt.Provider == manifest.ProviderECS {
		if rules.RefuseECS == nil {
			return refusal.New(refusal.Internal, "runtime.provider ecs has no refusal wired in this build")
		}
		r := rules.RefuseECS(m)
		r.Line, r.Column = rt.ProviderPos.Line, rt.ProviderPos.Column
		return r
	}
	return nil
}

func editionLabel(ed license.Edition) string {
	if ed.Name == "" {
		return license.Community
	}
	return ed.Name
}

// noSurvivor is the seed's AF-SCH-001, word for word.
func noSurvivor(m *manifest.Manifest, candidates []Candidate) *refusal.Refusal {
	reqs := make([]string, len(m.Runtime.Requires))
	for i, r := range m.Runtime.Requires {
		reqs[i] = r.String()
	}
	what := "requirement " + reqs[0]
	if len(reqs) > 1 {
		what = "requirements " + strings.Join(reqs, ", ")
	}
	r := refusal.New(refusal.NoRuntimeSatisfies, "No runtime satisfies the placement %s.", what).
		At(m.Runtime.RequiresPos.Line, m.Runtime.RequiresPos.Column)
	if len(candidates) == 0 {
		r.Detail = "runtime.requires is set, but the manifest declares no runtime.targets, so nothing carries a tag to meet it."
	} else {
		lines := make([]string, len(candidates))
		for i, c := range candidates {
			lines[i] = fmt.Sprintf("%s: %s", c.Name, strings.Join(c.Reasons, "; "))
		}
		r.Detail = "Each target:\n" + strings.Join(lines, "\n")
	}
	if len(reqs) == 1 {
		r.Next = "Declare a target under runtime.targets carrying that tag, or relax runtime.requires."
	} else {
		r.Next = "Declare a target under runtime.targets carrying those tags, or relax runtime.requires."
	}
	return r
}
