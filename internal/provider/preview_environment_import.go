package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

var badImportID = refusal.Register("AF-RUN-093",
	"The import ID is neither <app>/<env> (local) nor <kubeconfig_context>/<app>/<env> (kubernetes).",
	"Import with the ID the environment's id attribute shows: for example shop/pr-42 (local) or eu-prod/shop/pr-42 (kubernetes).")

// ImportState records what the ID says: the runtime (by its shape: one slash
// is local, more is kubernetes), the kubeconfig context and the name. The
// name must be there before the first plan, because changing it replaces
// the environment; Read then records the manifest the environment runs and
// the placement, so that the plan after an import is empty when the
// configuration matches, or an update in place, never a replacement.
func (r *previewEnvironmentResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	kind, kctx, k, err := parseImportID(req.ID)
	if err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("id"))
		return
	}
	id := k.LocalID()
	if kind == manifest.ProviderKubernetes {
		id = k.KubernetesID(kctx)
	}
	for attr, v := range map[string]string{"id": id, "name": k.Env, "runtime": kind, "kubeconfig_context": kctx} {
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root(attr), types.StringValue(v))...)
	}
}

func parseImportID(id string) (kind, kctx string, k runtime.Key, err error) {
	if strings.Count(id, "/") == 1 {
		k, err = runtime.ParseLocalID(id)
		kind = manifest.ProviderLocal
	} else {
		kctx, k, err = runtime.ParseKubernetesID(id)
		kind = manifest.ProviderKubernetes
	}
	if err != nil {
		return "", "", runtime.Key{}, refusal.New(badImportID, "%v", err).
			WithDetail("Earlier releases used <app>-<env> and <kubeconfig_context>/af-<app>-<env>, which two pairs could share; those IDs are no longer accepted.")
	}
	return kind, kctx, k, nil
}

// completeImported fills in, after an import, what only the configuration
// had recorded before: the manifest the environment runs (when the runtime
// keeps it), the image overrides it runs with, wait_for_rollout's default,
// and the placement the manifest implies. Quiet when the placement cannot be
// decided (a license problem, say): the next plan then shows and refuses it,
// and refresh is never blocked.
func (r *previewEnvironmentResource) completeImported(pd *providerData, m *previewEnvironmentModel, st runtime.State) {
	// manifest is required, so it is null only right after an import.
	if m.Manifest.IsNull() && st.Source != "" {
		m.Manifest = types.StringValue(st.Source)
		var quiet diag.Diagnostics
		if images := importedImages(st); len(images) > 0 {
			m.Images = stringMap(images, &quiet)
		}
	}
	if m.WaitForRollout.IsNull() {
		m.WaitForRollout = types.BoolValue(true)
	}
	if !m.Target.IsNull() || m.Manifest.IsNull() {
		return
	}
	var quiet diag.Diagnostics
	dec, ok := pd.decide(m.Manifest.ValueString(), path.Root("manifest"), &quiet)
	if !ok {
		return
	}
	m.Target = types.StringValue(dec.placement.Target.Name)
	m.Placement = r.placementValue(pd, dec, &quiet)
	if dec.placement.Runtime != m.Runtime.ValueString() || quiet.HasError() {
		// The manifest the runtime kept places elsewhere now: leave the
		// placement for the plan to show.
		m.Target = types.StringNull()
		m.Placement = types.ObjectNull(envPlacementAttrTypes)
	}
}

// importedImages is the images attribute an environment runs with, read back
// from the runtime: every service whose observed image is not the one its
// manifest names was given an override. A service not observed, or observed
// with no image (local runs commands), has none. An override equal to the
// manifest's own image cannot be told apart from no override; the plan then
// adds it in place, with nothing to change on the environment.
func importedImages(st runtime.State) map[string]string {
	m, err := manifest.Parse([]byte(st.Source))
	if err != nil {
		return nil
	}
	images := map[string]string{}
	for _, s := range m.Services {
		if got := st.Services[s.Name].Image; got != "" && got != s.Image {
			images[s.Name] = got
		}
	}
	return images
}
