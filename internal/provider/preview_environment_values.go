package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// The translation between what the runtimes observe and the resource's
// Terraform values.

// record copies what the runtime observed into the model.
func (r *previewEnvironmentResource) record(m *previewEnvironmentModel, st runtime.State, diags *diag.Diagnostics) {
	m.ID = types.StringValue(st.Ref.ID)
	m.Namespace = types.StringValue(st.Namespace)
	m.URLs = stringMap(st.URLs, diags)
	m.Services = servicesValue(st.Services, diags)
	if len(st.Containment.Attempts) > 0 || st.Containment.Verdict != "" {
		m.Containment = containmentValue(st.Containment, diags)
	} else if m.Containment.IsUnknown() {
		m.Containment = types.ObjectNull(containmentAttrTypes)
	}
	if m.QueuePosition.IsUnknown() {
		m.QueuePosition = types.Int64Null()
	}
}

func stringMap(m map[string]string, diags *diag.Diagnostics) types.Map {
	if m == nil {
		m = map[string]string{}
	}
	v, d := types.MapValueFrom(context.Background(), types.StringType, m)
	diags.Append(d...)
	return v
}

func (r *previewEnvironmentResource) placementValue(pd *providerData, d decision, diags *diag.Diagnostics) types.Object {
	return r.placementValueAs(pd.edition.Name, d, diags)
}

func (r *previewEnvironmentResource) placementValueAs(edition string, d decision, diags *diag.Diagnostics) types.Object {
	obj, dd := types.ObjectValue(envPlacementAttrTypes, map[string]attr.Value{
		"edition":   types.StringValue(edition),
		"domain":    types.StringValue(d.placement.Domain),
		"residency": types.StringValue(d.residency.Verdict),
	})
	diags.Append(dd...)
	return obj
}

func servicesValue(services map[string]runtime.ServiceState, diags *diag.Diagnostics) types.Map {
	elems := make(map[string]attr.Value, len(services))
	for name, s := range services {
		obj, d := types.ObjectValue(serviceAttrTypes, map[string]attr.Value{
			"image":    types.StringValue(s.Image),
			"replicas": types.Int64Value(int64(s.Replicas)),
			"running":  types.BoolValue(s.Running),
		})
		diags.Append(d...)
		elems[name] = obj
	}
	m, d := types.MapValue(types.ObjectType{AttrTypes: serviceAttrTypes}, elems)
	diags.Append(d...)
	return m
}

func containmentValue(res probe.Result, diags *diag.Diagnostics) types.Object {
	attempts := make([]attr.Value, 0, len(res.Attempts))
	for _, a := range res.Attempts {
		obj, d := types.ObjectValue(attemptAttrTypes, map[string]attr.Value{
			"category": types.StringValue(string(a.Category)),
			"method":   types.StringValue(a.Method),
			"target":   types.StringValue(a.Target),
			"outcome":  types.StringValue(string(a.Outcome)),
			"detail":   types.StringValue(a.Detail),
		})
		diags.Append(d...)
		attempts = append(attempts, obj)
	}
	list, d := types.ListValue(types.ObjectType{AttrTypes: attemptAttrTypes}, attempts)
	diags.Append(d...)
	obj, d := types.ObjectValue(containmentAttrTypes, map[string]attr.Value{
		"verdict":     types.StringValue(string(res.Verdict)),
		"duration_ms": types.Int64Value(res.Duration.Milliseconds()),
		"attempts":    list,
	})
	diags.Append(d...)
	return obj
}

// containmentUnproven reports a refreshed containment that is not
// `contained`: objects the probe ran under changed by hand ("drifted: …"),
// or a probe during an update that refused the environment (its services
// were stopped). Either way the next apply must probe again.
func containmentUnproven(o types.Object) bool {
	if o.IsNull() || o.IsUnknown() {
		return false
	}
	v, ok := o.Attributes()["verdict"].(types.String)
	return ok && !v.IsNull() && !v.IsUnknown() && v.ValueString() != string(probe.Contained)
}
