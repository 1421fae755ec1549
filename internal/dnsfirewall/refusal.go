package dnsfirewall

import (
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/route53resolver/types"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Codes for inputs the check cannot read at all: they are refused when the
// configuration is validated, before any rule is judged.
var (
	BadFailOpen = refusal.Register("AF-DNS-020",
		"fail_open is not a FirewallFailOpen value (ENABLED, DISABLED or USE_LOCAL_RESOURCE_SETTING).",
		"Set fail_open to the firewall config's FirewallFailOpen, which must be DISABLED to pass the check.")
)

// FailOpenValues are the values of FirewallFailOpen the API knows.
var FailOpenValues = []string{
	string(types.FirewallFailOpenStatusEnabled),
	string(types.FirewallFailOpenStatusDisabled),
	string(types.FirewallFailOpenStatusUseLocalResourceSetting),
}

// Actions are the rule actions the check reads.
var Actions = []string{string(types.ActionAllow), string(types.ActionAlert), string(types.ActionBlock)}

// ValidFailOpen refuses a fail_open value the API does not have. Only
// DISABLED passes the check; the others are findings (AF-DNS-014), not
// errors of the input.
func ValidFailOpen(v string) error {
	for _, ok := range FailOpenValues {
		if v == ok {
			return nil
		}
	}
	return refusal.New(BadFailOpen, "fail_open is %q, which is not a FirewallFailOpen value", v).
		WithNext("Use one of %s; the check passes only DISABLED.", strings.Join(FailOpenValues, ", "))
}

// ValidAction refuses an action other than ALLOW, ALERT and BLOCK, with the
// same code the check's finding has (AF-DNS-017).
func ValidAction(v string) error {
	for _, ok := range Actions {
		if v == ok {
			return nil
		}
	}
	hint := ""
	if s := closest(v, Actions); s != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", s)
	}
	return refusal.New(BadRule, "The rule action %q is not ALLOW, ALERT or BLOCK%s", v, hint)
}

// closest is the action v most likely misspells: the same letters but one
// missing, extra or changed, ignoring case.
func closest(v string, of []string) string {
	u := strings.ToUpper(v)
	for _, a := range of {
		if editDistanceAtMostOne(u, a) {
			return a
		}
	}
	return ""
}

func editDistanceAtMostOne(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if len(b)-len(a) > 1 {
		return false
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if len(a) == len(b) {
		return a[i+min(1, len(a)-i):] == b[i+min(1, len(b)-i):]
	}
	return a[i:] == b[i+1:]
}

// Refusal is the finding as the check's refusal: the code, the message naming
// the rules, and the catalogue's Next line. The check runs at plan, so nothing
// exists because of it.
func (f Finding) Refusal() *refusal.Refusal {
	return refusal.New(f.Code, "%s", f.Message)
}
