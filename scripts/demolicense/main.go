// Command demolicense mints a one-hour enterprise license with the
// multi_runtime feature, signed by the demo key that only `-tags demokey`
// builds accept. make demo uses it; it grants nothing to a release build.
package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
)

// demoSeed is deliberately public: see internal/license/demokey.go.
const demoSeed = "a7cHCq9WzbNvvZxLXtxP/BB5wJqrbx7x7DfZmApdF1U="

func main() {
	seed, err := base64.StdEncoding.DecodeString(demoSeed)
	if err != nil {
		panic(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	fmt.Print(license.Sign(ed25519.NewKeyFromSeed(seed), license.Claims{
		KeyID:        license.DemoKeyID,
		Organization: "demo",
		Features:     []string{license.FeatureMultiRuntime},
		NotBefore:    now.Add(-time.Minute),
		Expiry:       now.Add(time.Hour),
	}))
}
