package residency

import (
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

func TestEvaluate(t *testing.T) {
	policy := &Policy{AllowedRegions: []string{"eu-west-1", "eu-central-1"}}
	placed := func(tags map[string]string) placement.Decision {
		return placement.Decision{Target: placement.Target{Name: "frankfurt", Tags: tags}}
	}
	cases := []struct {
		name    string
		policy  *Policy
		tags    map[string]string
		verdict string
		code    refusal.Code
		warning bool
	}{
		{"allowed", policy, map[string]string{"region": "eu-west-1"}, Allowed, "", false},
		{"refused", policy, map[string]string{"region": "us-east-1"}, Refused, refusal.ResidencyRefused, false},
		{"no region: not evaluable, a warning", policy, map[string]string{"class": "gpu"}, NotEvaluable, refusal.ResidencyNotEvaluable, true},
		{"no policy", nil, map[string]string{"region": "us-east-1"}, NoPolicy, "", false},
		{"region match is exact", policy, map[string]string{"region": "EU-WEST-1"}, Refused, refusal.ResidencyRefused, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, r := Evaluate(c.policy, placed(c.tags))
			if v.Verdict != c.verdict {
				t.Fatalf("verdict = %q, want %q", v.Verdict, c.verdict)
			}
			if c.code == "" {
				if r != nil {
					t.Fatalf("unexpected refusal %v", r)
				}
				return
			}
			if r == nil || r.Code != c.code || r.Warning != c.warning {
				t.Fatalf("refusal = %+v, want %s warning=%v", r, c.code, c.warning)
			}
			if c.warning && v.Reason == "" {
				t.Error("not_evaluable must say why")
			}
		})
	}
}
