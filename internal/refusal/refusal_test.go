package refusal

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRendering(t *testing.T) {
	r := New(NoRuntimeSatisfies, "No runtime satisfies the placement requirement region=eu-west-2.").At(5, 3)
	want := "AF-SCH-001 No runtime satisfies the placement requirement region=eu-west-2.\n" +
		"  Manifest line 5:3.\n" +
		"  Next: Declare a target under runtime.targets carrying that tag, or relax runtime.requires. Nothing was created."
	if r.Error() != want {
		t.Fatalf("got\n%s\nwant\n%s", r.Error(), want)
	}
	m := New(ManifestUnknownKey, "Unknown key %q", "nmae").At(2, 1)
	if m.Title() != `AF-MAN-002 Unknown key "nmae" at line 2:1` {
		t.Fatalf("manifest title = %q", m.Title())
	}
	c := New(Internal, "x")
	c.Created = "The namespace af-shop-pr-1 was created and could not be removed."
	if !strings.HasSuffix(c.Body(), c.Created) {
		t.Fatalf("body = %q", c.Body())
	}
}

func TestEveryCodeHasTitleAndNext(t *testing.T) {
	for _, c := range Codes() {
		if c.Title() == "" || c.Next() == "" || !strings.HasPrefix(string(c), "AF-") {
			t.Errorf("code %s lacks a title or Next line", c)
		}
	}
}

func TestAllWrapsForeignErrors(t *testing.T) {
	got := All(fmt.Errorf("context: %w", errors.New("boom")))
	if len(got) != 1 || got[0].Code != Internal {
		t.Fatalf("All = %v", got)
	}
	list := List{New(ManifestSyntax, "a"), New(ManifestMissing, "b")}
	if len(All(fmt.Errorf("wrapped: %w", list))) != 2 {
		t.Fatal("All lost a list")
	}
}

func TestRolledBack(t *testing.T) {
	r := New(Internal, "x")
	if !strings.HasSuffix(r.Body(), "Nothing was created.") {
		t.Fatalf("body %q", r.Body())
	}
	r.Created = RolledBack([]string{"namespace af-shop-pr-1", "5 NetworkPolicies"})
	if want := "Created and removed again: namespace af-shop-pr-1, 5 NetworkPolicies. Nothing is left."; !strings.HasSuffix(r.Body(), want) || strings.Contains(r.Body(), "Nothing was created") {
		t.Fatalf("body %q", r.Body())
	}
	if RolledBack(nil) != "" {
		t.Fatal("nothing made must leave Created empty (Nothing was created.)")
	}
}
