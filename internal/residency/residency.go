// Package residency compares an organization's region policy with where an
// environment was placed.
//
// The placed target's region tag is what the policy reads. A target without one
// cannot be judged, and the verdict says so rather than passing in silence. A
// refusal never moves the environment elsewhere: placement has already decided.
package residency

import (
	"fmt"
	"slices"
	"strings"

	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// RegionTag is the target tag the policy compares.
const RegionTag = "region"

// Policy is the organization policy. A nil *Policy means no policy is set.
type Policy struct {
	AllowedRegions []string
}

// The verdicts.
const (
	Allowed      = "allowed"
	Refused      = "refused"
	NotEvaluable = "not_evaluable"
	NoPolicy     = "no_policy"
)

// Verdict is the policy's answer for one placement.
type Verdict struct {
	Verdict string
	Region  string // the placed target's region tag, "" when it has none
	Reason  string
}

// Evaluate judges a placement. The refusal is an error for Refused and a
// warning (Warning set) for NotEvaluable; nil otherwise.
func Evaluate(p *Policy, d placement.Decision) (Verdict, *refusal.Refusal) {
	region := d.Target.Tags[RegionTag]
	if p == nil {
		return Verdict{NoPolicy, region, "no residency policy is configured"}, nil
	}
	allowed := strings.Join(p.AllowedRegions, ", ")
	if region == "" {
		v := Verdict{NotEvaluable, "", fmt.Sprintf("target %q carries no %s tag, so the policy (allowed_regions: %s) cannot be evaluated", d.Target.Name, RegionTag, allowed)}
		r := refusal.New(refusal.ResidencyNotEvaluable, "Residency policy cannot be evaluated for target %q: it carries no region tag", d.Target.Name).
			WithDetail("The policy allows %s, but nothing in the manifest says where target %q runs. The environment is not refused, and not approved either.", allowed, d.Target.Name).
			WithNext("Add tags: {region: <region>} to target %q so the policy can be evaluated.", d.Target.Name)
		r.Warning = true
		return v, r
	}
	if slices.Contains(p.AllowedRegions, region) {
		return Verdict{Allowed, region, fmt.Sprintf("region %s is in allowed_regions (%s)", region, allowed)}, nil
	}
	v := Verdict{Refused, region, fmt.Sprintf("region %s is not in allowed_regions (%s)", region, allowed)}
	return v, refusal.New(refusal.ResidencyRefused, "Residency policy refuses region %s for target %q", region, d.Target.Name).
		WithDetail("The organization policy allows %s. The environment is refused rather than placed elsewhere: placement is decided by the manifest alone.", allowed).
		WithNext("Point runtime.requires at a target in an allowed region, or add %s to policy.allowed_regions.", region)
}
