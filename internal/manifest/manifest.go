// Package manifest reads antifailure.yaml, strictly.
//
// Every command that has to find an environment works it out from this file, so
// the reader refuses anything it does not understand instead of guessing: an
// unknown key, a value of the wrong type, a duplicate, a name that is not a DNS
// label, a web service without a port, an egress host that is not a host name,
// an unknown mode. Each refusal carries an AF-MAN code and its line:column.
package manifest

// Manifest is one application's antifailure.yaml.
type Manifest struct {
	Name     string
	Runtime  Runtime
	Services []Service // in file order
	Egress   []EgressRule
	Capture  *Capture // nil: the gateway's defaults
}

// Position is a 1-based line and column in the manifest.
type Position struct{ Line, Column int }

// Runtime is where environments of this application run.
type Runtime struct {
	Provider    string
	ProviderPos Position
	Domain      string
	// Requires is ordered as written, so messages name requirements in the
	// user's order.
	Requires    []Requirement
	RequiresPos Position
	Targets     []Target
	TargetsPos  Position
}

// Requirement is one runtime.requires entry: the placed target must carry a tag
// with this key and exactly this value.
type Requirement struct{ Key, Value string }

// String renders the requirement as key=value.
func (r Requirement) String() string { return r.Key + "=" + r.Value }

// Target is one runtime.targets entry.
type Target struct {
	Name              string
	KubeconfigContext string
	Domain            string
	Tags              map[string]string
	Pos               Position
}

// Service is one entry under services.
type Service struct {
	Name    string
	Image   string
	Command []string
	Port    int
	Web     bool
	Env     map[string]string
	Health  string
	// Dir is the application's own directory (local runtime): bound
	// read-only into the service's private view and its working directory.
	// Relative to the Terraform working directory.
	Dir string
	Pos Position
}

// Mode is what the egress gateway does with calls to a catalogue host.
type Mode string

// The egress modes.
const (
	ModeAllow   Mode = "allow"   // forwarded for real
	ModeSandbox Mode = "sandbox" // forwarded for real, to the provider's sandbox
	ModeBlock   Mode = "block"   // refused
	ModeMock    Mode = "mock"    // answered locally with the configured response
	ModeCapture Mode = "capture" // answered locally, the request recorded
	ModeSynth   Mode = "synth"   // answered locally with a generated response
)

// Modes lists every mode in documentation order.
var Modes = []Mode{ModeAllow, ModeSandbox, ModeBlock, ModeMock, ModeCapture, ModeSynth}

// Forwarded reports whether calls to hosts in this mode leave the environment
// for real, and so whether the host must resolve publicly.
func (m Mode) Forwarded() bool { return m == ModeAllow || m == ModeSandbox }

// EgressRule is one entry of the egress catalogue.
type EgressRule struct {
	// Host is a host name, lower-cased, optionally starting with "*." to cover
	// every subdomain.
	Host     string
	Mode     Mode
	Response *MockResponse // mode mock only
	Pos      Position
}

// MockResponse is the answer a mock host gives.
type MockResponse struct {
	Status  int
	Headers map[string]string
	Body    string
}

// Service returns the named service.
func (m *Manifest) Service(name string) (Service, bool) {
	for _, s := range m.Services {
		if s.Name == name {
			return s, true
		}
	}
	return Service{}, false
}
