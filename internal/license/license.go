// Package license verifies enterprise license tokens and says which edition
// this run of the provider is.
//
// A token is two base64url (unpadded) parts joined by a dot: the JSON claim set
// and an Ed25519 signature over exactly those claim bytes. The verifying public
// keys are embedded in the binary; tests hand their own Verifier to the
// provider in-process, never through a setting a user could flip.
package license

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Features an enterprise license can name.
const (
	FeatureMultiRuntime = "multi_runtime"
)

// Claims is what a license says.
type Claims struct {
	KeyID        string    `json:"kid"`
	Organization string    `json:"org"`
	Features     []string  `json:"features"`
	NotBefore    time.Time `json:"nbf"`
	Expiry       time.Time `json:"exp"`
}

// Edition is the answer to "what can this run of the provider do".
type Edition struct {
	// Name is "community" or "enterprise".
	Name         string
	Organization string
	Features     []string
	Expiry       time.Time // zero for community
}

// Edition names.
const (
	Community  = "community"
	Enterprise = "enterprise"
)

// CommunityEdition is what the provider is without a license.
var CommunityEdition = Edition{Name: Community}

// Has reports whether the edition includes a feature.
func (e Edition) Has(feature string) bool { return slices.Contains(e.Features, feature) }

// Verifier checks tokens against a set of public keys.
type Verifier struct {
	Keys map[string]ed25519.PublicKey // by key ID
	Now  func() time.Time
}

// Verify returns the edition a token grants. An empty token is the community
// edition. Every failure is an AF-LIC refusal on the "license" attribute that
// says which check failed.
func (v Verifier) Verify(token string) (Edition, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return CommunityEdition, nil
	}
	claims, err := v.claims(token)
	if err != nil {
		return Edition{}, err.OnAttribute("license")
	}
	return Edition{
		Name:         Enterprise,
		Organization: claims.Organization,
		Features:     slices.Sorted(slices.Values(claims.Features)),
		Expiry:       claims.Expiry,
	}, nil
}

func (v Verifier) claims(token string) (Claims, *refusal.Refusal) {
	var c Claims
	payloadPart, sigPart, ok := strings.Cut(token, ".")
	if !ok || strings.Contains(sigPart, ".") {
		return c, refusal.New(refusal.LicenseMalformed, "The license is not a license token: it must be two dot-separated parts")
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(payloadPart)
	sig, err2 := base64.RawURLEncoding.DecodeString(sigPart)
	if err1 != nil || err2 != nil {
		return c, refusal.New(refusal.LicenseMalformed, "The license is not a license token: its parts are not base64url")
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return c, refusal.New(refusal.LicenseMalformed, "The license is not a license token: its claims are not JSON")
	}
	key, known := v.Keys[c.KeyID]
	if !known {
		return c, refusal.New(refusal.LicenseUnknownKey, "The license was signed with key %q, which this build does not know", c.KeyID)
	}
	if len(sig) != ed25519.SignatureSize || !ed25519.Verify(key, payload, sig) {
		return c, refusal.New(refusal.LicenseTampered, "The license signature does not verify: the token was altered after it was issued")
	}
	now := v.now()
	if now.Before(c.NotBefore) {
		return c, refusal.New(refusal.LicenseNotYetValid, "The license for %s is not valid until %s", c.Organization, c.NotBefore.UTC().Format(time.RFC3339))
	}
	if !now.Before(c.Expiry) {
		return c, refusal.New(refusal.LicenseExpired, "The license for %s expired at %s", c.Organization, c.Expiry.UTC().Format(time.RFC3339))
	}
	return c, nil
}

func (v Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Sign issues a token. The provider never calls it; it exists for the issuing
// side and for tests, which sign with keys they generate.
func Sign(key ed25519.PrivateKey, c Claims) string {
	payload, err := json.Marshal(c)
	if err != nil {
		panic(err) // Claims always marshals
	}
	sig := ed25519.Sign(key, payload)
	return base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig)
}
