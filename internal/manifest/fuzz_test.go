package manifest

import (
	"errors"
	"testing"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// FuzzParse: the reader never panics, and it either returns a manifest or
// refusals that each carry a catalogue code and a position.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		valid,
		"",
		"name: [",
		"name: shop\nruntime: {provider: local}\n",
		"name: shop\nruntime:\n  provider: kubernetes\n  targets:\n    - name: a\n      tags: {region: x}\n",
		"name: shop\nruntime: {provider: local}\nservices:\n  web: {command: [x], port: 80, web: true}\n",
		"name: shop\nruntime: {provider: local}\negress:\n  - {host: \"*.a.example.com\", mode: mock, response: {status: 200, body: hi}}\n",
		"a: &x [*x]\n",
		"name: !!binary aGk=\nruntime: {provider: local}\n",
		"? [a]\n: b\n",
		"name: shop\nruntime: {provider: local}\nservices: {web: null}\n",
		"name: shop\nruntime: {provider: local}\negress: [{host: \"ü.example.com\", mode: allow}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, content []byte) {
		m, err := Parse(content)
		if err == nil {
			if m == nil {
				t.Fatal("nil manifest without error")
			}
			return
		}
		var list refusal.List
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error is not a refusal list: %v", err)
		}
		for _, r := range list {
			if !r.Code.Known() || r.Line < 1 {
				t.Fatalf("refusal without a known code or position: %#v", r)
			}
		}
	})
}
