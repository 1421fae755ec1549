package manifest

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// Runtime providers the manifest may name. Whether this build runs them is the
// edition's decision (package placement), not the reader's.
const (
	ProviderLocal      = "local"
	ProviderKubernetes = "kubernetes"
	ProviderECS        = "ecs"
)

// Parse reads a manifest. It returns every refusal it finds (a refusal.List),
// not only the first, each with its line and column.
func Parse(content []byte) (*Manifest, error) {
	doc, err := decodeOne(content)
	if err != nil {
		return nil, err
	}
	r := &reader{}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		r.fail(refusal.New(refusal.ManifestMissing, "The manifest is empty").At(1, 1).
			WithNext("Write at least name and runtime.provider; see the manifest reference."))
		return nil, r.errs
	}
	m := r.manifest(doc.Content[0])
	if r.failed() {
		return nil, r.report()
	}
	return m, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

func syntaxRefusal(err error) *refusal.Refusal {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	return refusal.New(refusal.ManifestSyntax, "The manifest is not valid YAML: %s", msg).At(line, 1)
}

func pos(n *yaml.Node) Position { return Position{n.Line, n.Column} }

// field is one allowed key of a mapping and what to do with its value.
type field struct {
	name     string
	required bool
	read     func(key, value *yaml.Node)
}

// fields walks a mapping, refusing unknown and duplicate keys and reporting
// missing required ones against the mapping's own position.
func (r *reader) fields(n *yaml.Node, where string, fs ...field) {
	if !r.isMapping(n, where) {
		return
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if prev, dup := seen[k.Value]; dup {
			r.failAt(k, refusal.ManifestDuplicate, "%s %q is declared twice (first at line %d)", where, k.Value, prev.Line)
			continue
		}
		seen[k.Value] = k
		f, ok := findField(fs, k.Value)
		if !ok {
			r.fail(refusal.New(refusal.ManifestUnknownKey, "Unknown key %q in %s", k.Value, where).At(k.Line, k.Column).
				WithNext("Remove the key or correct its spelling. Keys allowed in %s: %s.", where, fieldNames(fs)))
			continue
		}
		f.read(k, v)
	}
	for _, f := range fs {
		if f.required && seen[f.name] == nil {
			r.failAt(n, refusal.ManifestMissing, "%s has no %q", where, f.name)
		}
	}
}

func findField(fs []field, name string) (field, bool) {
	for _, f := range fs {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func fieldNames(fs []field) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "null"
	}
	return fmt.Sprintf("the scalar %q", n.Value)
}

func (r *reader) isMapping(n *yaml.Node, where string) bool {
	if n.Kind != yaml.MappingNode {
		r.failAt(n, refusal.ManifestWrongType, "%s must be a mapping, found %s", where, kindName(n))
		return false
	}
	return true
}

// str reads a scalar as the string written: YAML's number and boolean
// resolution is ignored, so 1.10 stays "1.10" and on stays "on". Only
// non-scalars and null are refused.
func (r *reader) str(n *yaml.Node, where string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		r.failAt(n, refusal.ManifestWrongType, "%s must be a string, found %s", where, kindName(n))
		return ""
	}
	return n.Value
}

func (r *reader) integer(n *yaml.Node, where string) int {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		r.failAt(n, refusal.ManifestWrongType, "%s must be an integer, found %s", where, kindName(n))
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		r.failAt(n, refusal.ManifestWrongType, "%s must be an integer, found %q", where, n.Value)
	}
	return v
}

func (r *reader) boolean(n *yaml.Node, where string) bool {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		r.failAt(n, refusal.ManifestWrongType, "%s must be true or false, found %s", where, kindName(n))
		return false
	}
	return n.Value == "true"
}

func (r *reader) strings(n *yaml.Node, where string) []string {
	if n.Kind != yaml.SequenceNode {
		r.failAt(n, refusal.ManifestWrongType, "%s must be a list of strings, found %s", where, kindName(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, item := range n.Content {
		out = append(out, r.str(item, fmt.Sprintf("%s[%d]", where, i)))
	}
	return out
}

// stringMap reads a mapping of scalars; scalar values of any YAML type are kept
// as written (an env value of 8080 is the string "8080").
func (r *reader) stringMap(n *yaml.Node, where string) (map[string]string, []Requirement) {
	if !r.isMapping(n, where) {
		return nil, nil
	}
	out := map[string]string{}
	var ordered []Requirement
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := r.str(k, where+" key")
		if _, dup := out[key]; dup {
			r.failAt(k, refusal.ManifestDuplicate, "%s %q is declared twice", where, key)
			continue
		}
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
			r.failAt(v, refusal.ManifestWrongType, "%s.%s must be a scalar, found %s", where, key, kindName(v))
			continue
		}
		out[key] = v.Value
		ordered = append(ordered, Requirement{Key: key, Value: v.Value})
	}
	return out, ordered
}

func (r *reader) manifest(root *yaml.Node) *Manifest {
	m := &Manifest{}
	r.fields(root, "the manifest",
		field{"name", true, func(_, v *yaml.Node) {
			m.Name = r.str(v, "name")
			r.label(v, m.Name, "name")
		}},
		field{"runtime", true, func(_, v *yaml.Node) { m.Runtime = r.runtime(v) }},
		field{"services", false, func(_, v *yaml.Node) { m.Services = r.services(v) }},
		field{"egress", false, func(_, v *yaml.Node) { m.Egress = r.egress(v) }},
		field{"capture", false, func(k, v *yaml.Node) { m.Capture = r.capture(k, v) }},
	)
	if len(r.errs) == 0 {
		r.servicesFitRuntime(m)
	}
	return m
}

func (r *reader) runtime(n *yaml.Node) Runtime {
	var rt Runtime
	r.fields(n, "runtime",
		field{"provider", true, func(_, v *yaml.Node) {
			rt.Provider = r.str(v, "runtime.provider")
			rt.ProviderPos = pos(v)
		}},
		field{"domain", false, func(_, v *yaml.Node) { rt.Domain = r.domain(v, "runtime.domain") }},
		field{"requires", false, func(k, v *yaml.Node) {
			_, rt.Requires = r.stringMap(v, "runtime.requires")
			rt.RequiresPos = pos(k)
		}},
		field{"targets", false, func(k, v *yaml.Node) {
			rt.Targets = r.targets(v)
			rt.TargetsPos = pos(k)
		}},
	)
	return rt
}

func (r *reader) targets(n *yaml.Node) []Target {
	if n.Kind != yaml.SequenceNode {
		r.failAt(n, refusal.ManifestWrongType, "runtime.targets must be a list, found %s", kindName(n))
		return nil
	}
	var out []Target
	seen := map[string]int{}
	for i, item := range n.Content {
		where := fmt.Sprintf("runtime.targets[%d]", i)
		t := Target{Pos: pos(item)}
		r.fields(item, where,
			field{"name", true, func(_, v *yaml.Node) {
				t.Name = r.str(v, where+".name")
				r.label(v, t.Name, where+".name")
				if first, dup := seen[t.Name]; dup && t.Name != "" {
					r.failAt(v, refusal.ManifestDuplicate, "Target name %q is used twice (first at line %d)", t.Name, first)
				}
				seen[t.Name] = v.Line
			}},
			field{"kubeconfig_context", false, func(_, v *yaml.Node) { t.KubeconfigContext = r.str(v, where+".kubeconfig_context") }},
			field{"domain", false, func(_, v *yaml.Node) { t.Domain = r.domain(v, where+".domain") }},
			field{"tags", false, func(_, v *yaml.Node) { t.Tags, _ = r.stringMap(v, where+".tags") }},
		)
		out = append(out, t)
	}
	return out
}

func (r *reader) services(n *yaml.Node) []Service {
	if !r.isMapping(n, "services") {
		return nil
	}
	var out []Service
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		s := Service{Name: r.str(k, "service name"), Pos: pos(k)}
		where := "services." + s.Name
		r.label(k, s.Name, "service name")
		if first, dup := seen[s.Name]; dup {
			r.failAt(k, refusal.ManifestDuplicate, "Service %q is declared twice (first at line %d)", s.Name, first)
			continue
		}
		seen[s.Name] = k.Line
		var portNode *yaml.Node
		r.fields(v, where,
			field{"image", false, func(_, v *yaml.Node) { s.Image = r.str(v, where+".image") }},
			field{"command", false, func(_, v *yaml.Node) {
				s.Command = r.strings(v, where+".command")
				if len(s.Command) == 0 && v.Kind == yaml.SequenceNode {
					r.failAt(v, refusal.ManifestBadValue, "%s.command is empty", where)
				}
				for i, a := range s.Command {
					if strings.ContainsRune(a, 0) {
						r.failAt(v.Content[i], refusal.ManifestBadValue, "%s.command[%d] contains a NUL character, which no program argument can hold", where, i)
					}
				}
			}},
			field{"port", false, func(_, v *yaml.Node) {
				portNode = v
				s.Port = r.integer(v, where+".port")
				if s.Port < 1 || s.Port > 65535 {
					r.failAt(v, refusal.ManifestBadValue, "%s.port %s is not a TCP port (1-65535)", where, v.Value)
				}
			}},
			field{"web", false, func(_, v *yaml.Node) { s.Web = r.boolean(v, where+".web") }},
			field{"env", false, func(_, v *yaml.Node) {
				env, ordered := r.stringMap(v, where+".env")
				s.Env = env
				for i, e := range ordered {
					if !envName.MatchString(e.Key) {
						r.failAt(v.Content[2*i], refusal.ManifestBadValue, "%s.env key %q is not an environment variable name", where, e.Key)
					}
					if strings.ContainsRune(e.Value, 0) {
						r.failAt(v.Content[2*i+1], refusal.ManifestBadValue, "%s.env.%s contains a NUL character, which no environment variable can hold", where, e.Key)
					}
				}
			}},
			field{"health", false, func(_, v *yaml.Node) {
				s.Health = r.str(v, where+".health")
				switch {
				case !strings.HasPrefix(s.Health, "/"):
					r.failAt(v, refusal.ManifestBadValue, "%s.health %q must be an HTTP path starting with /", where, s.Health)
				case strings.IndexFunc(s.Health, unicode.IsControl) >= 0:
					r.failAt(v, refusal.ManifestBadValue, "%s.health %q contains a control character, which no HTTP path can hold", where, s.Health)
				default:
					if _, err := url.ParseRequestURI(s.Health); err != nil {
						r.failAt(v, refusal.ManifestBadValue, "%s.health %q is not an HTTP path: %v", where, s.Health, err)
					}
				}
			}},
			field{"dir", false, func(_, v *yaml.Node) {
				s.Dir = r.str(v, where+".dir")
				if s.Dir == "" || strings.IndexFunc(s.Dir, unicode.IsControl) >= 0 {
					r.failAt(v, refusal.ManifestBadValue, "%s.dir %q must be a directory path without control characters", where, s.Dir)
				}
			}},
		)
		if s.Web && portNode == nil && v.Kind == yaml.MappingNode {
			r.fail(refusal.New(refusal.ManifestWebNoPort, "Service %q is web but has no port", s.Name).At(k.Line, k.Column))
		}
		if s.Health != "" && portNode == nil && v.Kind == yaml.MappingNode {
			r.fail(refusal.New(refusal.ManifestWebNoPort, "Service %q has a health path but no port to ask it on", s.Name).At(k.Line, k.Column).
				WithNext("Add the port the service listens on, or remove health."))
		}
		out = append(out, s)
	}
	return out
}

// servicesFitRuntime refuses services the declared runtime could not start:
// the Kubernetes runtime runs images, the local runtime runs commands.
func (r *reader) servicesFitRuntime(m *Manifest) {
	for _, s := range m.Services {
		switch {
		case m.Runtime.Provider == ProviderKubernetes && s.Image == "":
			r.fail(refusal.New(refusal.ManifestMissing, "Service %q has no image, which runtime.provider kubernetes needs", s.Name).
				At(s.Pos.Line, s.Pos.Column).WithNext("Add image: to the service."))
		case m.Runtime.Provider == ProviderLocal && len(s.Command) == 0:
			r.fail(refusal.New(refusal.ManifestMissing, "Service %q has no command, which runtime.provider local needs", s.Name).
				At(s.Pos.Line, s.Pos.Column).WithNext("Add command: [\"program\", \"arg\"] to the service (argv, no shell)."))
		}
	}
}

func (r *reader) egress(n *yaml.Node) []EgressRule {
	if n.Kind != yaml.SequenceNode {
		r.failAt(n, refusal.ManifestWrongType, "egress must be a list, found %s", kindName(n))
		return nil
	}
	var out []EgressRule
	seen := map[string]int{}
	for i, item := range n.Content {
		where := fmt.Sprintf("egress[%d]", i)
		e := EgressRule{Pos: pos(item)}
		var responseNode *yaml.Node
		r.fields(item, where,
			field{"host", true, func(_, v *yaml.Node) {
				e.Host = strings.ToLower(r.str(v, where+".host"))
				if e.Host == "" {
					return
				}
				if err := checkHost(e.Host); err != nil {
					r.fail(refusal.New(refusal.ManifestBadHost, "Egress host %q is not a host name: %s", v.Value, err).At(v.Line, v.Column))
				}
				if first, dup := seen[e.Host]; dup {
					r.failAt(v, refusal.ManifestDuplicate, "Egress host %q is listed twice (first at line %d)", e.Host, first)
				}
				seen[e.Host] = v.Line
			}},
			field{"mode", true, func(_, v *yaml.Node) {
				e.Mode = Mode(r.str(v, where+".mode"))
				if e.Mode != "" && !knownMode(e.Mode) {
					r.fail(refusal.New(refusal.ManifestUnknownMode, "Egress mode %q is not a mode", e.Mode).At(v.Line, v.Column))
				}
			}},
			field{"response", false, func(_, v *yaml.Node) {
				responseNode = v
				e.Response = r.response(v, where+".response")
			}},
		)
		if responseNode != nil && e.Mode != "" && e.Mode != ModeMock {
			r.failAt(responseNode, refusal.ManifestBadValue, "%s.response is only for mode mock, not %s", where, e.Mode)
		}
		out = append(out, e)
	}
	return out
}

func (r *reader) response(n *yaml.Node, where string) *MockResponse {
	resp := &MockResponse{Status: 200}
	r.fields(n, where,
		field{"status", false, func(_, v *yaml.Node) {
			resp.Status = r.integer(v, where+".status")
			if resp.Status < 100 || resp.Status > 599 {
				r.failAt(v, refusal.ManifestBadValue, "%s.status %s is not an HTTP status (100-599)", where, v.Value)
			}
		}},
		field{"headers", false, func(_, v *yaml.Node) { resp.Headers, _ = r.stringMap(v, where+".headers") }},
		field{"body", false, func(_, v *yaml.Node) { resp.Body = r.str(v, where+".body") }},
	)
	return resp
}

func knownMode(m Mode) bool {
	for _, known := range Modes {
		if m == known {
			return true
		}
	}
	return false
}

var (
	// DNSLabel is an RFC 1123 label: what names of applications, targets,
	// services and environments must be, since they become namespaces and
	// host names.
	DNSLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

func (r *reader) label(n *yaml.Node, value, where string) {
	if value != "" && !DNSLabel.MatchString(value) {
		r.failAt(n, refusal.ManifestBadLabel, "%s %q is not a DNS label", where, value)
	}
}

func (r *reader) domain(n *yaml.Node, where string) string {
	d := r.str(n, where)
	if d == "" {
		return d
	}
	if len(d) > 253 {
		r.failAt(n, refusal.ManifestBadDomain, "%s is longer than 253 characters", where)
		return d
	}
	for _, l := range strings.Split(d, ".") {
		if !DNSLabel.MatchString(l) {
			r.failAt(n, refusal.ManifestBadDomain, "%s %q is not a DNS name (label %q)", where, d, l)
			break
		}
	}
	return d
}

// hostLabel admits underscores, which real host names carry (e.g.
// _dmarc.example.com), so that the DNS Firewall generator can name such a host
// in its own refusal rather than the reader hiding it.
var hostLabel = regexp.MustCompile(`^[\p{L}\p{N}_]([\p{L}\p{N}_-]{0,61}[\p{L}\p{N}_])?$`)

// checkHost says why host is not a host name, or returns nil. A leading "*."
// covers every subdomain; a star anywhere else is refused.
func checkHost(host string) error {
	switch {
	case strings.Contains(host, "://"):
		return errors.New("it has a URL scheme; write the host alone")
	case strings.ContainsAny(host, "/?#"):
		return errors.New("it has a path; write the host alone")
	case strings.ContainsAny(host, " \t"):
		return errors.New("it contains white space")
	}
	if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return errors.New("it is an IP address; the catalogue names hosts")
	}
	if strings.Contains(host, ":") {
		return errors.New("it has a port; write the host alone")
	}
	name := strings.TrimPrefix(host, "*.")
	if strings.Contains(name, "*") {
		return errors.New("a wildcard may only be a leading \"*.\"")
	}
	if len(name) > 253 {
		return errors.New("it is longer than 253 characters")
	}
	labels := strings.Split(name, ".")
	if len(labels) < 2 && !strings.HasPrefix(host, "*.") {
		// A single label would be resolved against a search domain, which is not
		// the host the user meant.
		return errors.New("it is a single label; write the fully qualified name")
	}
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return fmt.Errorf("label %q is not a DNS label", l)
		}
	}
	return nil
}
