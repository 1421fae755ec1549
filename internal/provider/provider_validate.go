package provider

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Codes of provider and resource configuration that `terraform validate`
// decides: nothing in them needs a cluster, a license or the environment.
var (
	kubeconfigConflict = refusal.Register("AF-CFG-003",
		"Both kubeconfig and kubeconfig_path are set (or kubeconfig_path and AF_KUBECONFIG): the provider would have to choose one silently.",
		"Set one of kubeconfig (or AF_KUBECONFIG) and kubeconfig_path (or KUBECONFIG).")
	badRegions = refusal.Register("AF-CFG-004",
		"policy.allowed_regions is empty, which would refuse every environment, or holds something that is not a region name.",
		"List region names such as eu-west-1 (in AF_POLICY_ALLOWED_REGIONS: comma separated), or remove the policy.")
	badEnvName = refusal.Register("AF-CFG-005",
		"The environment's name is not a DNS label (lower-case letters, digits and hyphens, 1-63 characters, starting and ending with a letter or digit).",
		"Rename the environment to a DNS label, for example pr-42.")
)

func bothKubeconfigs() *refusal.Refusal {
	return refusal.New(kubeconfigConflict, "Both kubeconfig and kubeconfig_path are set")
}

// checkRegions is the one judgement of a region list, for validate (the
// attribute) and Configure (the environment variable).
func checkRegions(regions []string) error {
	if len(regions) == 0 {
		return refusal.New(badRegions, "policy.allowed_regions is empty, which would refuse every environment").
			WithNext("List at least one region, or remove the policy.")
	}
	for _, r := range regions {
		if r == "" || strings.ContainsAny(r, " \t") {
			return refusal.New(badRegions, "policy.allowed_regions holds %q, which is not a region name", r)
		}
	}
	return nil
}

// checkEnvName is the name attribute's validator.
func checkEnvName(name string) error {
	if !manifest.DNSLabel.MatchString(name) {
		return refusal.New(badEnvName, "name %q is not a DNS label", name)
	}
	return nil
}

// expandHome expands a leading "~/" (or a lone "~") of every file in a
// KUBECONFIG-style list, as a shell would have: Terraform passes the string
// as written. "~user" forms are left alone and fail as a missing file.
func expandHome(list string, getenv func(string) string) string {
	if !strings.Contains(list, "~") {
		return list
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	files := filepath.SplitList(list)
	for i, f := range files {
		if f == "~" {
			files[i] = home
		} else if rest, ok := strings.CutPrefix(f, "~/"); ok && home != "" {
			files[i] = filepath.Join(home, rest)
		}
	}
	return strings.Join(files, string(os.PathListSeparator))
}

// ValidateConfig refuses at `terraform validate` what the configuration
// alone decides; the environment fallbacks are judged in Configure.
func (p *antifailureProvider) ValidateConfig(ctx context.Context, req provider.ValidateConfigRequest, resp *provider.ValidateConfigResponse) {
	// Attribute by attribute: a value that depends on a variable is unknown
	// at validate, and is judged in Configure once known.
	var content, file types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("kubeconfig"), &content)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("kubeconfig_path"), &file)...)
	if content.ValueString() != "" && file.ValueString() != "" {
		addRefusals(&resp.Diagnostics, bothKubeconfigs(), path.Root("kubeconfig_path"))
	}
	var regions types.List
	at := path.Root("policy").AtName("allowed_regions")
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, at, &regions)...)
	if regions.IsNull() || regions.IsUnknown() {
		return
	}
	var names []string
	for _, e := range regions.Elements() {
		r, ok := e.(types.String)
		if !ok || r.IsNull() || r.IsUnknown() {
			return
		}
		names = append(names, r.ValueString())
	}
	if err := checkRegions(names); err != nil {
		addRefusals(&resp.Diagnostics, err, at)
	}
}
