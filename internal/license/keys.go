package license

import (
	"crypto/ed25519"
	"encoding/base64"
)

// releaseKeys are the verifying keys of the license issuer, by key ID. The
// matching private keys never enter this repository. A new key is added here
// before tokens signed with it are issued, and an old one stays until every
// token it signed has expired.
var releaseKeys = map[string]string{
	"af-2026-1": "x1TPoe0st1ogzXy02SnQbIUMCrNlp5C9Lotdl/4gpLA=",
}

// ReleaseVerifier verifies tokens against the keys embedded in this build.
func ReleaseVerifier() Verifier {
	keys := make(map[string]ed25519.PublicKey, len(releaseKeys))
	for id, b64 := range releaseKeys {
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			panic("license: embedded key " + id + " is not an Ed25519 public key")
		}
		keys[id] = raw
	}
	return Verifier{Keys: keys}
}
