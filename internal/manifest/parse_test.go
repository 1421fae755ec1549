package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/testfixture"
)

// valid is the shared seed manifest with what the reader must also handle:
// a number as an env value, and a mock with a response.
var valid = strings.Replace(testfixture.Shop("shop", 2), "env: {LOG_LEVEL: debug}", "env: {LOG_LEVEL: debug, PORT: 8080}", 1) + `  - host: api.example.com
    mode: mock
    response: {status: 201, headers: {Content-Type: application/json}, body: '{"ok":true}'}
`

func TestParseValid(t *testing.T) {
	m, err := Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "shop" || m.Runtime.Provider != "kubernetes" || len(m.Runtime.Targets) != 2 {
		t.Fatalf("manifest = %+v", m)
	}
	if got := m.Runtime.Requires; len(got) != 1 || got[0].String() != "region=eu-west-1" {
		t.Fatalf("requires = %v", got)
	}
	if m.Runtime.RequiresPos != (Position{5, 3}) {
		t.Errorf("requires position = %v", m.Runtime.RequiresPos)
	}
	if m.Services[0].Name != "web" || m.Services[1].Name != "worker" {
		t.Errorf("services out of file order: %v", m.Services)
	}
	web := m.Services[0]
	if web.Port != 8080 || !web.Web || web.Env["PORT"] != "8080" || web.Health != "/healthz" || len(web.Command) != 2 {
		t.Errorf("web = %+v", web)
	}
	mock := m.Egress[3]
	if mock.Mode != ModeMock || mock.Response.Status != 201 || mock.Response.Body != `{"ok":true}` {
		t.Errorf("mock = %+v", mock)
	}
	if !m.Egress[0].Mode.Forwarded() || m.Egress[2].Mode.Forwarded() {
		t.Error("Forwarded wrong")
	}
}

func TestParseRefusals(t *testing.T) {
	cases := []struct {
		name     string
		manifest string
		code     refusal.Code
		line     int
		col      int
		contains string
	}{
		{"syntax", "name: [", refusal.ManifestSyntax, 1, 1, "not valid YAML"},
		{"empty", "", refusal.ManifestMissing, 1, 1, "empty"},
		{"not a mapping", "- a\n- b\n", refusal.ManifestWrongType, 1, 1, "must be a mapping"},
		{"misspelled top-level key", "name: shop\nrutnime:\n  provider: local\n", refusal.ManifestUnknownKey, 2, 1, `"rutnime"`},
		{"misspelled nested key", "name: shop\nruntime:\n  provider: local\n  domian: x.example.com\n", refusal.ManifestUnknownKey, 4, 3, `"domian" in runtime`},
		{"missing name", "runtime:\n  provider: local\n", refusal.ManifestMissing, 1, 1, `no "name"`},
		{"missing provider", "name: shop\nruntime:\n  domain: a.example.com\n", refusal.ManifestMissing, 3, 3, `no "provider"`},
		{"name not a label", "name: Shop_1\nruntime: {provider: local}\n", refusal.ManifestBadLabel, 1, 7, "not a DNS label"},
		{"wrong type", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [\"x\"]\n    port: eighty\n", refusal.ManifestWrongType, 6, 11, "must be an integer"},
		{"port range", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [\"x\"]\n    port: 70000\n", refusal.ManifestBadValue, 6, 11, "not a TCP port"},
		{"web without port", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [\"x\"]\n    web: true\n", refusal.ManifestWebNoPort, 4, 3, "web but has no port"},
		{"duplicate service", "name: shop\nruntime: {provider: local}\nservices:\n  web: {command: [x]}\n  web: {command: [y]}\n", refusal.ManifestDuplicate, 5, 3, "declared twice"},
		{"duplicate key", "name: shop\nname: shop\nruntime: {provider: local}\n", refusal.ManifestDuplicate, 2, 1, "declared twice"},
		{"duplicate target", "name: shop\nruntime:\n  provider: local\n  targets:\n    - name: a\n    - name: a\n", refusal.ManifestDuplicate, 6, 13, "used twice"},
		{"duplicate egress host", "name: shop\nruntime: {provider: local}\negress:\n  - {host: a.example.com, mode: allow}\n  - {host: A.example.com, mode: block}\n", refusal.ManifestDuplicate, 5, 12, "listed twice"},
		{"host with scheme", "name: shop\nruntime: {provider: local}\negress:\n  - {host: https://api.stripe.com, mode: allow}\n", refusal.ManifestBadHost, 4, 12, "URL scheme"},
		{"host with path", "name: shop\nruntime: {provider: local}\negress:\n  - {host: api.stripe.com/v1, mode: allow}\n", refusal.ManifestBadHost, 4, 12, "path"},
		{"host with port", "name: shop\nruntime: {provider: local}\negress:\n  - {host: \"api.stripe.com:443\", mode: allow}\n", refusal.ManifestBadHost, 4, 12, "port"},
		{"host is an IP", "name: shop\nruntime: {provider: local}\negress:\n  - {host: 198.51.100.7, mode: allow}\n", refusal.ManifestBadHost, 4, 12, "IP address"},
		{"host is an IPv6", "name: shop\nruntime: {provider: local}\negress:\n  - {host: \"::1\", mode: allow}\n", refusal.ManifestBadHost, 4, 12, "IP address"},
		{"inner wildcard", "name: shop\nruntime: {provider: local}\negress:\n  - {host: \"api.*.example.com\", mode: allow}\n", refusal.ManifestBadHost, 4, 12, "wildcard"},
		{"single label", "name: shop\nruntime: {provider: local}\negress:\n  - {host: localhost, mode: allow}\n", refusal.ManifestBadHost, 4, 12, "single label"},
		{"unknown mode", "name: shop\nruntime: {provider: local}\negress:\n  - {host: a.example.com, mode: proxy}\n", refusal.ManifestUnknownMode, 4, 33, `"proxy"`},
		{"response without mock", "name: shop\nruntime: {provider: local}\negress:\n  - {host: a.example.com, mode: allow, response: {status: 200}}\n", refusal.ManifestBadValue, 4, 50, "only for mode mock"},
		{"kubernetes service without image", "name: shop\nruntime: {provider: kubernetes}\nservices:\n  web: {command: [x]}\n", refusal.ManifestMissing, 4, 3, "no image"},
		{"local service without command", "name: shop\nruntime: {provider: local}\nservices:\n  web: {image: x}\n", refusal.ManifestMissing, 4, 3, "no command"},
		{"bad domain", "name: shop\nruntime: {provider: local, domain: \"pre view.example.com\"}\n", refusal.ManifestBadDomain, 2, 36, "not a DNS name"},
		{"bad env name", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x]\n    env: {1BAD: x}\n", refusal.ManifestBadValue, 6, 11, "environment variable"},
		{"health without slash", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x]\n    port: 80\n    health: healthz\n", refusal.ManifestBadValue, 7, 13, "starting with /"},
		{"health with a control character", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x]\n    port: 80\n    health: \"/health\\r\\nX: y\"\n", refusal.ManifestBadValue, 7, 13, "control character"},
		{"health with a NUL", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x]\n    port: 80\n    health: \"/a\\0b\"\n", refusal.ManifestBadValue, 7, 13, "control character"},
		{"NUL in a command", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x, \"a\\0b\"]\n", refusal.ManifestBadValue, 5, 18, "command[1] contains a NUL"},
		{"NUL in an env value", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x]\n    env: {A: \"x\\0y\"}\n", refusal.ManifestBadValue, 6, 14, "env.A contains a NUL"},
		{"empty dir", "name: shop\nruntime: {provider: local}\nservices:\n  web:\n    command: [x]\n    dir: \"\"\n", refusal.ManifestBadValue, 6, 10, "dir"},
		{"tags not a map", "name: shop\nruntime:\n  provider: local\n  targets:\n    - {name: a, tags: [x]}\n", refusal.ManifestWrongType, 5, 23, "must be a mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.manifest))
			var list refusal.List
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("err = %v, want a refusal list", err)
			}
			r := list[0]
			if r.Code != c.code || r.Line != c.line || r.Column != c.col || !strings.Contains(r.Summary, c.contains) {
				t.Fatalf("got %s at %d:%d %q; want %s at %d:%d containing %q", r.Code, r.Line, r.Column, r.Summary, c.code, c.line, c.col, c.contains)
			}
			if !strings.HasPrefix(r.Title(), string(c.code)+" ") || !strings.Contains(r.Body(), "Next: ") || !strings.HasSuffix(r.Body(), "Nothing was created.") {
				t.Fatalf("refusal not rendered with code, Next and created: %q / %q", r.Title(), r.Body())
			}
		})
	}
}

func TestParseReportsEveryRefusal(t *testing.T) {
	_, err := Parse([]byte("name: Bad_Name\nruntime:\n  provider: local\n  colour: red\negress:\n  - {host: \"http://x.example.com\", mode: nope}\n"))
	got := refusal.All(err)
	var codes []string
	for _, r := range got {
		codes = append(codes, string(r.Code))
	}
	want := "AF-MAN-005 AF-MAN-002 AF-MAN-008 AF-MAN-009"
	if strings.Join(codes, " ") != want {
		t.Fatalf("codes = %v, want %s", codes, want)
	}
}

func TestUnknownKeyListsAllowedKeys(t *testing.T) {
	_, err := Parse([]byte("name: shop\nruntime:\n  provider: local\n  requries: {region: x}\n"))
	r := refusal.All(err)[0]
	if !strings.Contains(r.Next, "provider, domain, requires, targets") {
		t.Fatalf("Next = %q", r.Next)
	}
}
