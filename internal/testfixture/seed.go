// Package testfixture is the seed manifest the tests of every package share:
// the source text's shop, a web service and a worker placed on one of two
// Kubernetes targets (frankfurt on context eu-prod, virginia on us-prod) by
// a region requirement, with an egress catalogue of each kind the gateway
// answers differently. One copy, so that a change to the manifest format is
// made once. Only tests import it; it imports nothing of the provider.
package testfixture

import (
	"fmt"
	"strings"
)

// Shop is the seed manifest named name with n services: web (a web service
// with a health path), worker when n >= 2, then svc-3 … svc-n.
func Shop(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `name: %s
runtime:
  provider: kubernetes
  domain: preview.example.com
  requires:
    region: eu-west-1
  targets:
    - name: frankfurt
      kubeconfig_context: eu-prod
      domain: eu.preview.example.com
      tags: {region: eu-west-1}
    - name: virginia
      kubeconfig_context: us-prod
      domain: us.preview.example.com
      tags: {region: us-east-1}
services:
  web:
    image: ghcr.io/acme/shop:1.4.2
    command: ["./shop", "serve"]
    port: 8080
    web: true
    env: {LOG_LEVEL: debug}
    health: /healthz
`, name)
	if n >= 2 {
		b.WriteString("  worker:\n    image: ghcr.io/acme/shop:1.4.2\n    command: [\"./shop\", \"work\"]\n")
	}
	for i := 3; i <= n; i++ {
		fmt.Fprintf(&b, "  svc-%d:\n    image: ghcr.io/acme/shop:1.4.2\n", i)
	}
	b.WriteString(`egress:
  - host: api.stripe.com
    mode: sandbox
  - host: "*.githubusercontent.com"
    mode: allow
  - host: hooks.slack.com
    mode: capture
`)
	return b.String()
}

// Indent puts prefix before every non-empty line of s, as a manifest in an
// indented heredoc (<<-EOT) needs.
func Indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
