package license

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testKey(t *testing.T) (Verifier, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Verifier{Keys: map[string]ed25519.PublicKey{"test": pub}, Now: func() time.Time { return now }}, priv
}

func claims() Claims {
	return Claims{KeyID: "test", Organization: "acme", Features: []string{FeatureMultiRuntime},
		NotBefore: now.Add(-time.Hour), Expiry: now.Add(24 * time.Hour)}
}

func TestVerify(t *testing.T) {
	v, priv := testKey(t)
	_, otherPriv := testKey(t)
	valid := Sign(priv, claims())
	payload, sig, _ := strings.Cut(valid, ".")
	tamperedClaims := claims()
	tamperedClaims.Organization = "evil"
	tampered := strings.SplitN(Sign(otherPriv, tamperedClaims), ".", 2)[0] + "." + sig
	expired := claims()
	expired.Expiry = now.Add(-time.Minute)
	early := claims()
	early.NotBefore = now.Add(time.Hour)
	unknown := claims()
	unknown.KeyID = "someone-else"

	cases := []struct {
		name, token string
		code        refusal.Code
		edition     string
	}{
		{"no token is community", "", "", Community},
		{"valid", valid, "", Enterprise},
		{"tampered claims", tampered, refusal.LicenseTampered, ""},
		{"signature from another key", payload + "." + strings.SplitN(Sign(otherPriv, claims()), ".", 2)[1], refusal.LicenseTampered, ""},
		{"expired", Sign(priv, expired), refusal.LicenseExpired, ""},
		{"not yet valid", Sign(priv, early), refusal.LicenseNotYetValid, ""},
		{"unknown key", Sign(priv, unknown), refusal.LicenseUnknownKey, ""},
		{"garbage", "hello", refusal.LicenseMalformed, ""},
		{"three parts", valid + ".x", refusal.LicenseMalformed, ""},
		{"not base64", "!!.!!", refusal.LicenseMalformed, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ed, err := v.Verify(c.token)
			if c.code == "" {
				if err != nil {
					t.Fatalf("unexpected refusal: %v", err)
				}
				if ed.Name != c.edition {
					t.Fatalf("edition = %q, want %q", ed.Name, c.edition)
				}
				return
			}
			var r *refusal.Refusal
			if !errors.As(err, &r) || r.Code != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
			if r.Attribute != "license" {
				t.Errorf("refusal attribute = %q, want license", r.Attribute)
			}
			if strings.Contains(r.Error(), c.token) && c.token != "" {
				t.Errorf("refusal leaks the token: %s", r.Error())
			}
		})
	}
}

func TestEditionFeatures(t *testing.T) {
	v, priv := testKey(t)
	ed, err := v.Verify(Sign(priv, claims()))
	if err != nil {
		t.Fatal(err)
	}
	if !ed.Has(FeatureMultiRuntime) || ed.Organization != "acme" || !ed.Expiry.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("edition = %+v", ed)
	}
	if CommunityEdition.Has(FeatureMultiRuntime) {
		t.Fatal("community edition must not have multi_runtime")
	}
}

func TestReleaseVerifierLoadsEmbeddedKeys(t *testing.T) {
	v := ReleaseVerifier()
	if len(v.Keys) == 0 {
		t.Fatal("no embedded keys")
	}
	// A token signed by a test key is refused by the release build.
	_, priv := testKey(t)
	c := claims()
	c.KeyID = "af-2026-1"
	if _, err := v.Verify(Sign(priv, c)); err == nil {
		t.Fatal("release verifier accepted a token signed by a test key")
	}
}

func TestReleaseBuildHasNoDemoKey(t *testing.T) {
	if _, ok := ReleaseVerifier().Keys[DemoKeyID]; ok && !demoBuild {
		t.Fatal("the demo key is in a build without the demokey tag")
	}
}
