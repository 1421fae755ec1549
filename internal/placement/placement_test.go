package placement

import (
	"errors"
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

var enterprise = license.Edition{Name: license.Enterprise, Features: []string{license.FeatureMultiRuntime}}

func parse(t *testing.T, text string) *manifest.Manifest {
	t.Helper()
	m, err := manifest.Parse([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func targets(requires string, tags ...string) string {
	s := "name: shop\nruntime:\n  provider: kubernetes\n  domain: preview.example.com\n"
	if requires != "" {
		s += "  requires: {" + requires + "}\n"
	}
	if len(tags) > 0 {
		s += "  targets:\n"
	}
	for i, tg := range tags {
		s += "    - name: t" + string(rune('0'+i)) + "\n      kubeconfig_context: ctx" + string(rune('0'+i)) + "\n      tags: {" + tg + "}\n"
	}
	return s
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		edition  license.Edition
		target   string
		domain   string
		code     refusal.Code
		summary  string
	}{
		{"no targets: the runtime itself", targets(""), license.CommunityEdition, "kubernetes", "preview.example.com", "", ""},
		{"first listed survivor wins", targets("region: eu", "region: us", "region: eu", "region: eu"), enterprise, "t1", "preview.example.com", "", ""},
		{"empty requires: first listed", targets("", "region: us", "region: eu"), enterprise, "t0", "preview.example.com", "", ""},
		{"every requirement must hold", targets("region: eu, class: gpu", "region: eu", "class: gpu", "region: eu, class: gpu"), enterprise, "t2", "preview.example.com", "", ""},
		{"one target is community", targets("region: eu", "region: eu"), license.CommunityEdition, "t0", "preview.example.com", "", ""},
		{"no survivor", targets("region: eu-west-2", "region: eu-west-1", "region: us-east-1"), enterprise, "", "", refusal.NoRuntimeSatisfies,
			"No runtime satisfies the placement requirement region=eu-west-2."},
		{"no survivor names every requirement", targets("region: eu, class: gpu", "region: eu"), enterprise, "", "", refusal.NoRuntimeSatisfies,
			"No runtime satisfies the placement requirements region=eu, class=gpu."},
		{"requires without targets is never ignored", targets("region: eu"), enterprise, "", "", refusal.NoRuntimeSatisfies, "region=eu"},
		{"two targets need multi_runtime", targets("", "region: eu", "region: us"), license.CommunityEdition, "", "", refusal.LicenseFeatureMissing, "multi_runtime"},
		{"enterprise without the feature", targets("", "region: eu", "region: us"), license.Edition{Name: license.Enterprise}, "", "", refusal.LicenseFeatureMissing, "multi_runtime"},
		{"tag comparison is exact", targets("region: eu-west-1", "region: EU-WEST-1"), enterprise, "", "", refusal.NoRuntimeSatisfies, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(parse(t, c.manifest), Rules{Edition: c.edition})
			if c.code != "" {
				var r *refusal.Refusal
				if !errors.As(err, &r) || r.Code != c.code || !strings.Contains(r.Summary, c.summary) {
					t.Fatalf("err = %v, want %s containing %q", err, c.code, c.summary)
				}
				if r.Line == 0 {
					t.Error("refusal has no manifest position")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Target.Name != c.target || d.Domain != c.domain {
				t.Fatalf("placed on %q (%q), want %q (%q)", d.Target.Name, d.Domain, c.target, c.domain)
			}
		})
	}
}

func TestSeedTextRefusalWordForWord(t *testing.T) {
	m := parse(t, targets("region: eu-west-2", "region: eu-west-1", "region: us-east-1"))
	_, err := Decide(m, Rules{Edition: enterprise})
	var r *refusal.Refusal
	errors.As(err, &r)
	if r.Title() != "AF-SCH-001 No runtime satisfies the placement requirement region=eu-west-2." {
		t.Errorf("title = %q", r.Title())
	}
	if !strings.HasSuffix(r.Body(), "Next: Declare a target under runtime.targets carrying that tag, or relax runtime.requires. Nothing was created.") {
		t.Errorf("body = %q", r.Body())
	}
	if !strings.Contains(r.Body(), "t0: missed region=eu-west-2: the target has region=eu-west-1") {
		t.Errorf("body does not explain each target: %q", r.Body())
	}
}

func TestCandidatesExplainTheDecision(t *testing.T) {
	d, err := Decide(parse(t, targets("region: eu", "region: us", "class: gpu", "region: eu", "region: eu")), Rules{Edition: enterprise})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"missed region=eu: the target has region=us"},
		{"missed region=eu: the target has no region tag"},
		{"met region=eu", "placed here: the first listed target that meets every requirement"},
		{"met region=eu", "not placed: t2 is listed earlier and wins"},
	}
	for i, c := range d.Candidates {
		if strings.Join(c.Reasons, "|") != strings.Join(want[i], "|") {
			t.Errorf("candidate %s reasons = %q, want %q", c.Name, c.Reasons, want[i])
		}
		if c.Placed != (i == 2) || c.Matched != (i >= 2) {
			t.Errorf("candidate %s placed=%v matched=%v", c.Name, c.Placed, c.Matched)
		}
	}
}

func TestTargetDomainOverridesRuntimeDomain(t *testing.T) {
	m := parse(t, "name: shop\nruntime:\n  provider: local\n  domain: a.example.com\n  targets:\n    - {name: x, domain: b.example.com}\n")
	d, err := Decide(m, Rules{Edition: license.CommunityEdition})
	if err != nil || d.Domain != "b.example.com" {
		t.Fatalf("domain = %q, err = %v", d.Domain, err)
	}
}

func TestRuntimesPerEdition(t *testing.T) {
	cases := []struct {
		provider string
		edition  license.Edition
		want     string // "" placed; else a fragment of the refusal
	}{
		{"local", license.CommunityEdition, ""},
		{"kubernetes", license.CommunityEdition, ""},
		{"nomad", license.CommunityEdition, "community edition has: local, kubernetes."},
		{"ecs", license.CommunityEdition, "community edition has: local, kubernetes."},
		{"nomad", enterprise, "enterprise edition has: local, kubernetes, ecs."},
		{"ecs", enterprise, "ECS REFUSAL"},
	}
	refuseECS := func(*manifest.Manifest) *refusal.Refusal { return refusal.New(refusal.Internal, "ECS REFUSAL") }
	for _, c := range cases {
		t.Run(c.provider+"/"+c.edition.Name, func(t *testing.T) {
			m := parse(t, "name: shop\nruntime:\n  provider: "+c.provider+"\n")
			_, err := Decide(m, Rules{Edition: c.edition, RefuseECS: refuseECS})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			var r *refusal.Refusal
			if errors.As(err, &r) && (r.Line != 3 || r.Column != 13) {
				t.Errorf("refusal at %d:%d, want runtime.provider at 3:13", r.Line, r.Column)
			}
		})
	}
}
