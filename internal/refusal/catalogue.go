package refusal

import (
	"sort"
	"strings"
)

// Code is an AF-… code. Codes are stable: users search for them and scripts match
// them, so a code is never reused for a different refusal.
type Code string

// entry is one line of the catalogue.
type entry struct {
	title string // what the code means, for the error reference page
	next  string // the default Next line
}

// The catalogue. Families: MAN manifest, LIC license and editions, SCH placement,
// POL residency policy, CFG provider configuration, RUN runtimes, ECS the Fargate
// report, DNS the DNS Firewall check, INT internal.
const (
	ManifestSyntax        Code = "AF-MAN-001"
	ManifestUnknownKey    Code = "AF-MAN-002"
	ManifestWrongType     Code = "AF-MAN-003"
	ManifestMissing       Code = "AF-MAN-004"
	ManifestBadLabel      Code = "AF-MAN-005"
	ManifestDuplicate     Code = "AF-MAN-006"
	ManifestWebNoPort     Code = "AF-MAN-007"
	ManifestBadHost       Code = "AF-MAN-008"
	ManifestUnknownMode   Code = "AF-MAN-009"
	ManifestBadValue      Code = "AF-MAN-010"
	ManifestBadDomain     Code = "AF-MAN-011"
	LicenseMalformed      Code = "AF-LIC-001"
	LicenseTampered       Code = "AF-LIC-002"
	LicenseUnknownKey     Code = "AF-LIC-003"
	LicenseExpired        Code = "AF-LIC-004"
	LicenseNotYetValid    Code = "AF-LIC-005"
	LicenseFeatureMissing Code = "AF-LIC-010"
	RuntimeUnknown        Code = "AF-LIC-011"
	NoRuntimeSatisfies    Code = "AF-SCH-001"
	ResidencyRefused      Code = "AF-POL-001"
	ResidencyNotEvaluable Code = "AF-POL-002"
	ConfigInvalid         Code = "AF-CFG-001"
	Internal              Code = "AF-INT-001"
)

var catalogue = map[Code]entry{
	ManifestSyntax:     {"The manifest is not valid YAML.", "Fix the YAML syntax at the position shown."},
	ManifestUnknownKey: {"The manifest holds a key the reader does not know (often a misspelling).", "Remove the key or correct its spelling; the message lists the keys allowed there."},
	ManifestWrongType:  {"A manifest value has the wrong type.", "Give the value the type shown in the message."},
	ManifestMissing:    {"A required manifest field is missing.", "Add the field named in the message."},
	ManifestBadLabel:   {"A name is not a DNS label (lower-case letters, digits and hyphens, 1-63 characters, starting and ending with a letter or digit).", "Rename it to a DNS label, for example \"shop\" or \"eu-west\"."},
	ManifestDuplicate:  {"Two entries share a name or a key.", "Give each entry a distinct name."},
	ManifestWebNoPort:  {"A service marked web has no port, so nothing could route to it.", "Add the port the service listens on, or remove web: true."},
	ManifestBadHost:    {"An egress entry is not a host name (a scheme, path, port or IP address where a name is required).", "Write the bare host name, for example api.stripe.com or *.githubusercontent.com."},
	ManifestUnknownMode: {"An egress entry has an unknown mode.",
		"Use one of allow, sandbox, block, mock, capture, synth."},
	ManifestBadValue:      {"A manifest value is outside its allowed range.", "Correct the value as the message describes."},
	ManifestBadDomain:     {"A domain is not a valid DNS name.", "Write a DNS name such as preview.example.com."},
	LicenseMalformed:      {"The license is not a license token.", "Paste the whole token your Antifailure account issued, or unset license and AF_LICENSE for the community edition."},
	LicenseTampered:       {"The license signature does not match its content: it was altered.", "Use the token exactly as issued; ask your Antifailure contact for a new one if it was edited."},
	LicenseUnknownKey:     {"The license was signed by a key this build does not know.", "Use a token issued for this release, or upgrade the provider."},
	LicenseExpired:        {"The license has expired.", "Renew the license, or unset license and AF_LICENSE for the community edition."},
	LicenseNotYetValid:    {"The license is not valid yet.", "Wait until the license's start date, or check the machine's clock."},
	LicenseFeatureMissing: {"The manifest needs an enterprise feature this edition does not have.", "Use a license that includes the feature, or reduce the manifest to what this edition supports."},
	RuntimeUnknown:        {"runtime.provider names a runtime this build does not have.", "Set runtime.provider to one of the runtimes listed."},
	NoRuntimeSatisfies:    {"No placement target satisfies runtime.requires.", "Declare a target under runtime.targets carrying that tag, or relax runtime.requires."},
	ResidencyRefused:      {"The placed target's region is not in the organization policy's allowed_regions.", "Place the environment on a target whose region the policy allows, or change policy.allowed_regions."},
	ResidencyNotEvaluable: {"The placed target carries no region tag, so the residency policy cannot be evaluated (a warning).", "Add a region tag to the target so the policy can be evaluated."},
	ConfigInvalid:         {"A provider configuration value is invalid.", "Correct the provider attribute or environment variable named in the message."},
	Internal:              {"An unexpected error inside the provider.", "Report this at the provider's issue tracker with the full message."},
}

func (c Code) manifest() bool { return strings.HasPrefix(string(c), "AF-MAN-") }

// Next is the catalogue's default Next line for the code.
func (c Code) Next() string { return catalogue[c].next }

// Title is the catalogue's one-line meaning of the code.
func (c Code) Title() string { return catalogue[c].title }

// Known reports whether the code is in the catalogue.
func (c Code) Known() bool { _, ok := catalogue[c]; return ok }

// Register adds codes owned by another package (the runtimes, the ECS report)
// to the catalogue, so that one reference page lists every code. It panics on a
// duplicate because two meanings for one code is a programming error.
func Register(code Code, title, next string) Code {
	if _, dup := catalogue[code]; dup {
		panic("refusal: code registered twice: " + string(code))
	}
	catalogue[code] = entry{title, next}
	return code
}

// Codes lists every code in the catalogue, sorted.
func Codes() []Code {
	codes := make([]Code, 0, len(catalogue))
	for c := range catalogue {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	return codes
}
