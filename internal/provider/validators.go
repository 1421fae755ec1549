package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
)

// refusingStringValidator runs a check that answers with refusals, so that
// `terraform validate` reports the same AF- code a later step would, attached
// to the attribute. Null and unknown values are left to plan.
type refusingStringValidator struct {
	desc  string
	check func(string) error
}

// refusingString is a validator.String for check; desc says what a valid
// value is.
func refusingString(desc string, check func(string) error) validator.String {
	return refusingStringValidator{desc: desc, check: check}
}

func (v refusingStringValidator) Description(context.Context) string         { return v.desc }
func (v refusingStringValidator) MarkdownDescription(context.Context) string { return v.desc }

func (v refusingStringValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		addRefusals(&resp.Diagnostics, err, req.Path)
	}
}

// manifestValidator reads the manifest at validate: everything the reader
// refuses is decidable without a cluster or a license (what the edition
// allows is decided at plan).
func manifestValidator() validator.String {
	return refusingString("a manifest the reader accepts", func(content string) error {
		_, err := manifest.Parse([]byte(content))
		return err
	})
}

// optionalManifestValidator is manifestValidator where an empty string means
// "no manifest".
func optionalManifestValidator() validator.String {
	return refusingString("a manifest the reader accepts, or empty", func(content string) error {
		if content == "" {
			return nil
		}
		_, err := manifest.Parse([]byte(content))
		return err
	})
}

// refusingStringsValidator is refusingString for every element of a list of
// strings, each refusal attached to its element.
type refusingStringsValidator struct{ check func(string) error }

func refusingStrings(check func(string) error) validator.List {
	return refusingStringsValidator{check: check}
}

func (v refusingStringsValidator) Description(context.Context) string {
	return "every element valid"
}

func (v refusingStringsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v refusingStringsValidator) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if err := v.check(s.ValueString()); err != nil {
			addRefusals(&resp.Diagnostics, err, req.Path.AtListIndex(i))
		}
	}
}
