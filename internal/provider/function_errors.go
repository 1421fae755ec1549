package provider

import (
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// refusalFuncError is err as the one error a function may return: every
// refusal's title and body, joined, so no AF- code is lost. argument is the
// zero-based position of the argument the refusals concern.
func refusalFuncError(argument int64, err error) *function.FuncError {
	list := refusal.All(err)
	parts := make([]string, len(list))
	for i, r := range list {
		parts[i] = r.Error()
	}
	// Terraform ends the message with a full stop of its own.
	return function.NewArgumentFuncError(argument, strings.TrimSuffix(strings.Join(parts, "\n\n"), "."))
}
