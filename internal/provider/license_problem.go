package provider

import (
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// A license problem (expired, tampered, unknown key, not yet valid) does not
// fail the provider's configuration: that would stop refresh and destroy of
// environments that already exist, and leave them running because a
// license ran out. The provider runs as the community edition and keeps the
// problem (providerData.licenseErr); it refuses with it what a license
// gates: creating an environment, and a placement that needs an enterprise
// feature. Reading, updating within the community edition and destroying go
// on.

// addLicenseRefusal reports the license problem. Its refusals name the
// provider's license attribute, which is not an attribute of the resource or
// data source at hand, so they are rendered without one.
func addLicenseRefusal(diags *diag.Diagnostics, err error) {
	const note = "The license is the provider's license attribute (or AF_LICENSE). Refresh and destroy of existing environments still work."
	for _, r := range refusal.All(err) {
		rr := *r
		rr.Detail = strings.TrimSpace(rr.Detail + "\n\n" + note)
		diags.AddError(rr.Title(), rr.Body())
	}
}

// licenseGated reports whether a refusal is one a working license might have
// avoided (an enterprise feature or runtime the edition lacks).
func licenseGated(err error) bool {
	for _, r := range refusal.All(err) {
		if r.Code == refusal.LicenseFeatureMissing || r.Code == refusal.RuntimeUnknown {
			return true
		}
	}
	return false
}
