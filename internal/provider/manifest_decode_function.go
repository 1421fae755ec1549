package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

func newManifestDecodeFunction() function.Function { return manifestDecodeFunction{} }

// manifestDecodeFunction is the manifest reader as a function. It cannot see
// the provider's configuration, so it says nothing about the edition:
// whether the manifest may be placed is antifailure_placement's answer.
type manifestDecodeFunction struct{}

var (
	strList  = types.ListType{ElemType: types.StringType}
	strMap   = types.MapType{ElemType: types.StringType}
	mTargetT = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "kubeconfig_context": types.StringType, "domain": types.StringType, "tags": strMap,
	}}
	mServiceT = types.ObjectType{AttrTypes: map[string]attr.Type{
		"name": types.StringType, "image": types.StringType, "command": strList, "port": types.Int64Type,
		"web": types.BoolType, "env": strMap, "health": types.StringType,
	}}
	mResponseT = types.ObjectType{AttrTypes: map[string]attr.Type{"status": types.Int64Type, "headers": strMap, "body": types.StringType}}
	mEgressT   = types.ObjectType{AttrTypes: map[string]attr.Type{"host": types.StringType, "mode": types.StringType, "response": mResponseT}}
	mRuntimeT  = types.ObjectType{AttrTypes: map[string]attr.Type{
		"provider": types.StringType, "domain": types.StringType, "requires": strMap, "targets": types.ListType{ElemType: mTargetT},
	}}
	manifestAttrTypes = map[string]attr.Type{
		"name": types.StringType, "runtime": mRuntimeT,
		"services": types.MapType{ElemType: mServiceT}, "egress": types.ListType{ElemType: mEgressT},
	}
)

// functionDescription ends a provider function's description (this one's
// and dns_firewall_findings') with the Terraform version functions need, so
// the floor is stated, and changed, once.
func functionDescription(markdown string) string {
	return markdown + "\n\nProvider functions need Terraform 1.8 or later (OpenTofu 1.7 or later)."
}

func (manifestDecodeFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "manifest_decode"
}

func (manifestDecodeFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Reads and validates a manifest, returning it as an object",
		MarkdownDescription: functionDescription("Reads `antifailure.yaml` with the same strict reader the resource uses and returns it as an object: " +
			"`name`, `runtime` (`provider`, `domain`, `requires` as a map, `targets` with `name`, `kubeconfig_context`, `domain`, `tags`), " +
			"`services` by name (`name`, `image`, `command`, `port`, `web`, `env`, `health`) and `egress` (`host`, `mode`, and `response` " +
			"for `mock` hosts, else null). Absent optional values are null.\n\n" +
			"A manifest the reader refuses is the function's error. A function returns one error, so every `AF-MAN-…` refusal is in it, joined, " +
			"each with its line and column. The function cannot see the provider's configuration: it does not say whether this edition may place " +
			"the manifest (use `antifailure_placement` for that)."),
		Parameters: []function.Parameter{
			function.StringParameter{Name: "content", MarkdownDescription: "The manifest's content, e.g. `file(\"${path.module}/antifailure.yaml\")`."},
		},
		Return: function.ObjectReturn{AttributeTypes: manifestAttrTypes},
	}
}

func (manifestDecodeFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var content string
	resp.Error = req.Arguments.Get(ctx, &content)
	if resp.Error != nil {
		return
	}
	m, err := manifest.Parse([]byte(content))
	if err != nil {
		resp.Error = refusalFuncError(0, err)
		return
	}
	resp.Error = resp.Result.Set(ctx, manifestObject(m))
}

// The Terraform shape of a manifest; pointers and nil maps become null.
type (
	manifestObj struct {
		Name     string                `tfsdk:"name"`
		Runtime  runtimeObj            `tfsdk:"runtime"`
		Services map[string]serviceObj `tfsdk:"services"`
		Egress   []egressObj           `tfsdk:"egress"`
	}
	runtimeObj struct {
		Provider string            `tfsdk:"provider"`
		Domain   *string           `tfsdk:"domain"`
		Requires map[string]string `tfsdk:"requires"`
		Targets  []targetObj       `tfsdk:"targets"`
	}
	targetObj struct {
		Name              string            `tfsdk:"name"`
		KubeconfigContext *string           `tfsdk:"kubeconfig_context"`
		Domain            *string           `tfsdk:"domain"`
		Tags              map[string]string `tfsdk:"tags"`
	}
	serviceObj struct {
		Name    string            `tfsdk:"name"`
		Image   *string           `tfsdk:"image"`
		Command []string          `tfsdk:"command"`
		Port    *int64            `tfsdk:"port"`
		Web     bool              `tfsdk:"web"`
		Env     map[string]string `tfsdk:"env"`
		Health  *string           `tfsdk:"health"`
	}
	egressObj struct {
		Host     string       `tfsdk:"host"`
		Mode     string       `tfsdk:"mode"`
		Response *responseObj `tfsdk:"response"`
	}
	responseObj struct {
		Status  int64             `tfsdk:"status"`
		Headers map[string]string `tfsdk:"headers"`
		Body    string            `tfsdk:"body"`
	}
)

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func manifestObject(m *manifest.Manifest) manifestObj {
	o := manifestObj{Name: m.Name, Services: map[string]serviceObj{}, Egress: []egressObj{}}
	o.Runtime = runtimeObj{Provider: m.Runtime.Provider, Domain: optional(m.Runtime.Domain), Targets: []targetObj{}}
	if len(m.Runtime.Requires) > 0 {
		o.Runtime.Requires = map[string]string{}
		for _, r := range m.Runtime.Requires {
			o.Runtime.Requires[r.Key] = r.Value
		}
	}
	for _, t := range m.Runtime.Targets {
		o.Runtime.Targets = append(o.Runtime.Targets, targetObj{Name: t.Name, KubeconfigContext: optional(t.KubeconfigContext), Domain: optional(t.Domain), Tags: t.Tags})
	}
	for _, s := range m.Services {
		so := serviceObj{Name: s.Name, Image: optional(s.Image), Command: s.Command, Web: s.Web, Env: s.Env, Health: optional(s.Health)}
		if s.Port != 0 {
			p := int64(s.Port)
			so.Port = &p
		}
		o.Services[s.Name] = so
	}
	for _, e := range m.Egress {
		eo := egressObj{Host: e.Host, Mode: string(e.Mode)}
		if e.Response != nil {
			eo.Response = &responseObj{Status: int64(e.Response.Status), Headers: e.Response.Headers, Body: e.Response.Body}
		}
		o.Egress = append(o.Egress, eo)
	}
	return o
}
