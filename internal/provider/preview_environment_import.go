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
// keeps it), wait_for_rollout's default, and the placement it implies. Quiet
// when the placement cannot be decided (a license problem, say): the next
// plan then shows and refuses it, and refresh is never blocked.
func (r *previewEnvironmentResource) completeImported(pd *providerData, m *previewEnvironmentModel, st runtime.State) {
	if m.Manifest.IsNull() && st.Source != "" {
		m.Manifest = types.StringValue(st.Source)
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
