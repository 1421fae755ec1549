package dnsfirewall

import (
	"errors"
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

func TestValidActionAndFailOpen(t *testing.T) {
	for _, c := range []struct {
		err  error
		code refusal.Code
		hint string
	}{
		{ValidAction("ALOW"), BadRule, "did you mean ALLOW?"},
		{ValidAction("block"), BadRule, "did you mean BLOCK?"},
		{ValidAction("DENY"), BadRule, ""},
		{ValidFailOpen("maybe"), BadFailOpen, "ENABLED, DISABLED, USE_LOCAL_RESOURCE_SETTING"},
		{ValidFailOpen(""), BadFailOpen, ""},
	} {
		var r *refusal.Refusal
		if !errors.As(c.err, &r) || r.Code != c.code || !strings.Contains(r.Error(), c.hint) {
			t.Errorf("got %v, want %s with %q", c.err, c.code, c.hint)
		}
		if c.hint == "" && strings.Contains(r.Error(), "did you mean") {
			t.Errorf("%v: a hint where none fits", c.err)
		}
	}
	// Negative controls: every real value passes.
	for _, v := range Actions {
		if err := ValidAction(v); err != nil {
			t.Errorf("ValidAction(%s) = %v", v, err)
		}
	}
	for _, v := range FailOpenValues {
		if err := ValidFailOpen(v); err != nil {
			t.Errorf("ValidFailOpen(%s) = %v", v, err)
		}
	}
}

// Each finding becomes a refusal with its own code and message, and a Next.
func TestFindingRefusal(t *testing.T) {
	fs := Check(Input{Rules: []Rule{
		{Name: "allow-all", Priority: 5, Action: "ALLOW", Domains: []string{"*"}},
		{Name: "block-all", Priority: 1000, Action: "BLOCK", Domains: []string{"*"}},
	}, FailOpen: "DISABLED"})
	if len(fs) != 1 {
		t.Fatalf("findings %v", fs)
	}
	r := fs[0].Refusal()
	if r.Code != AllowAllAhead || !strings.Contains(r.Title(), "allow-all") || !strings.Contains(r.Title(), "block-all") || r.Next == "" {
		t.Errorf("refusal %q / next %q", r.Title(), r.Next)
	}
}
