package provider

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// environmentSchemaVersion 1: IDs are built from the key's two parts
// (<app>/<env>, <kubeconfig_context>/<app>/<env>). Version 0 joined them with
// a hyphen (<app>-<env>, <kubeconfig_context>/af-<app>-<env>).
const environmentSchemaVersion = 1

var stateNotUpgradable = refusal.Register("AF-RUN-092",
	"A preview environment in the state, recorded by an earlier release, does not say which application and environment it is.",
	"Remove it from the state (terraform state rm <address>) and import it again with its ID: <app>/<env> (local) or <kubeconfig_context>/<app>/<env> (kubernetes).")

func (r *previewEnvironmentResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	// No PriorSchema: version 0 had the same attributes, and the upgrade
	// rewrites two strings in the raw JSON, so it holds whatever attributes
	// later versions add (they start out null).
	return map[int64]resource.StateUpgrader{0: {StateUpgrader: upgradeEnvironmentV0}}
}

func upgradeEnvironmentV0(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	var raw map[string]any
	if req.RawState == nil || json.Unmarshal(req.RawState.JSON, &raw) != nil {
		resp.Diagnostics.AddError(string(refusal.Internal)+" Unreadable state", "The prior state of antifailure_preview_environment is not JSON. Next: report this at the provider's issue tracker. Nothing was changed.")
		return
	}
	if err := upgradeIDV0(raw); err != nil {
		addRefusals(&resp.Diagnostics, err, path.Root("id"))
		return
	}
	b, err := json.Marshal(raw)
	if err != nil {
		resp.Diagnostics.AddError(string(refusal.Internal)+" Unwritable state", err.Error()+" Next: report this at the provider's issue tracker. Nothing was changed.")
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: b}
}

// upgradeIDV0 rewrites a version 0 state's id (and, on local, namespace) in
// place. The key comes from what the state recorded separately: the
// manifest's name and the name attribute. A state imported by version 0 has
// neither; then the old ID is split only where it can be split one way (one
// hyphen between app and env), never guessed.
func upgradeIDV0(raw map[string]any) error {
	str := func(k string) string { s, _ := raw[k].(string); return s }
	id, rt := str("id"), str("runtime")
	if rt == "" {
		rt = manifest.ProviderLocal
		if strings.Contains(id, "/") {
			rt = manifest.ProviderKubernetes
		}
	}
	kctx, old := "", id
	if rt == manifest.ProviderKubernetes {
		i := strings.LastIndexByte(id, '/')
		if i < 0 {
			return refusal.New(stateNotUpgradable, "The state's id %q is not <kubeconfig_context>/<namespace>", id)
		}
		kctx, old = id[:i], strings.TrimPrefix(id[i+1:], "af-")
	}
	var k runtime.Key
	if m, err := manifest.Parse([]byte(str("manifest"))); err == nil && str("name") != "" {
		k = runtime.Key{App: m.Name, Env: str("name")}
	} else if app, env, ok := strings.Cut(old, "-"); ok && !strings.Contains(env, "-") {
		k = runtime.Key{App: app, Env: env}
	}
	if !k.Valid() {
		return refusal.New(stateNotUpgradable, "The state's id %q can belong to more than one application/environment pair, and the state records neither its manifest nor its name", id).
			WithDetail("Version 0 of the provider joined application and environment with a hyphen; this release keeps them apart and does not guess.")
	}
	if str("name") == "" {
		raw["name"] = k.Env // after an import, nothing else recorded it
	}
	if rt == manifest.ProviderKubernetes {
		raw["id"] = k.KubernetesID(kctx)
		// The namespace stays what it is: the environment still lives there.
	} else {
		raw["id"] = k.LocalID()
		raw["namespace"] = k.LocalID()
	}
	return nil
}
