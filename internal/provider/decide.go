package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/placement"
	"github.com/antifailure/terraform-provider-antifailure/internal/residency"
)

// decision is everything the manifest and the provider configuration decide
// before anything is created: the same answer for every command that asks.
type decision struct {
	manifest  *manifest.Manifest
	placement placement.Decision
	residency residency.Verdict
}

// decide reads the manifest, places the environment and judges residency,
// adding refusals to diags against the manifest attribute. ok is false when
// any of them refused.
func (pd *providerData) decide(content string, manifestPath path.Path, diags *diag.Diagnostics) (decision, bool) {
	var d decision
	m, err := manifest.Parse([]byte(content))
	if err != nil {
		addRefusals(diags, err, manifestPath)
		return d, false
	}
	d.manifest = m
	d.placement, err = placement.Decide(m, pd.placementRules())
	if err == nil {
		err = pd.placeOnContext(m, &d.placement)
	}
	if err != nil {
		if pd.licenseErr != nil && licenseGated(err) {
			addLicenseRefusal(diags, pd.licenseErr)
		}
		addRefusals(diags, err, manifestPath)
		return d, false
	}
	verdict, r := residency.Evaluate(pd.policy, d.placement)
	d.residency = verdict
	if r != nil {
		addRefusals(diags, r, manifestPath)
		if !r.Warning {
			return d, false
		}
	}
	return d, true
}

func (pd *providerData) placementRules() placement.Rules {
	return placement.Rules{Edition: pd.edition, RefuseECS: pd.refuseECS}
}
