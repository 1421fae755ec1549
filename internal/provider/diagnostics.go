package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// addRefusals renders err as diagnostics: one per refusal, summary starting
// with the code, attached to the refusal's own attribute or else to at.
func addRefusals(diags *diag.Diagnostics, err error, at path.Path) {
	for _, r := range refusal.All(err) {
		p := at
		if r.Attribute != "" {
			p = path.Root(r.Attribute)
		}
		if r.Warning {
			diags.AddAttributeWarning(p, r.Title(), r.Body())
		} else {
			diags.AddAttributeError(p, r.Title(), r.Body())
		}
	}
}

var notConfigured = refusal.Register("AF-CFG-002",
	"The provider's configuration depends on values not known until apply, so the provider cannot decide anything yet.",
	"Give the provider's license, kubeconfig and kubeconfig_path values known at plan time (literals, variables or data sources).")

// configured extracts the provider data, or reports why there is none.
func configured(data any, diags *diag.Diagnostics) (*providerData, bool) {
	if data == nil {
		// Before Configure ran (e.g. validation), or when Configure left the
		// provider unconfigured because its inputs were unknown.
		return nil, false
	}
	pd, ok := data.(*providerData)
	if !ok {
		diags.AddError(string(refusal.Internal)+" Unexpected provider data", "Please report this issue to the provider developers. Next: upgrade the provider. Nothing was created.")
	}
	return pd, ok
}

// requireConfigured is configured for operations that cannot wait: a read of
// a data source needs the edition now.
func requireConfigured(data any, diags *diag.Diagnostics) (*providerData, bool) {
	pd, ok := configured(data, diags)
	if !ok && data == nil {
		r := refusal.New(notConfigured, "The provider is not configured yet")
		diags.AddError(r.Title(), r.Body())
	}
	return pd, ok
}
