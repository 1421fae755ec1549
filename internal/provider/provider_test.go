package provider

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/antifailure/terraform-provider-antifailure/internal/license"
)

// testNow is the clock every acceptance test runs at.
var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testLicenseKey signs licenses for tests. Its public half is handed to the
// provider in-process (testProviders); the release build never knows it.
var testLicenseKey = func() ed25519.PrivateKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	return priv
}()

func testVerifier() license.Verifier {
	return license.Verifier{Keys: map[string]ed25519.PublicKey{"test": testLicenseKey.Public().(ed25519.PublicKey)}}
}

// testLicense issues a license valid at testNow with the given features.
func testLicense(features ...string) string {
	return license.Sign(testLicenseKey, license.Claims{
		KeyID: "test", Organization: "acme", Features: features,
		NotBefore: testNow.Add(-24 * time.Hour), Expiry: testNow.Add(30 * 24 * time.Hour),
	})
}

// testProviders serves the provider built with the test verifier and clock,
// and an environment that holds only env (the process environment does not
// leak into tests).
func testProviders(env map[string]string) map[string]func() (tfprotov6.ProviderServer, error) {
	d := deps{
		verifier: testVerifier(),
		now:      func() time.Time { return testNow },
		getenv:   func(k string) string { return env[k] },
		runtimes: releaseRuntimes,
	}
	return map[string]func() (tfprotov6.ProviderServer, error){
		"antifailure": providerserver.NewProtocol6WithError(newWith("test", d)()),
	}
}

// TestMain refuses to run acceptance tests without terraform: a skipped
// acceptance test must never pass for a green one.
func TestMain(m *testing.M) {
	if os.Getenv("TF_ACC") != "" && os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		println("TF_ACC is set but TF_ACC_TERRAFORM_PATH is not: set it to the local terraform binary (make testacc does)")
		os.Exit(1)
	}
	os.Exit(m.Run())
}
