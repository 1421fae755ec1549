package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
)

// terraformValidate runs the real `terraform validate` on config against the
// provider served in-process (TF_REATTACH_PROVIDERS), so a test shows what a
// user's validate says, not what a plan would. It returns the combined output
// and whether validate passed.
func terraformValidate(t *testing.T, config string) (string, bool) {
	t.Helper()
	return terraformValidateWith(t, config, nil)
}

// terraformValidateWith is terraformValidate with more files beside main.tf.
func terraformValidateWith(t *testing.T, config string, files map[string][]byte) (string, bool) {
	t.Helper()
	tf := os.Getenv("TF_ACC_TERRAFORM_PATH")
	if tf == "" {
		t.Fatal("TF_ACC_TERRAFORM_PATH is not set: this test runs the real terraform validate")
	}
	ctx, cancel := context.WithCancel(context.Background())
	reattach := make(chan *plugin.ReattachConfig, 1)
	closed := make(chan struct{})
	d := deps{verifier: testVerifier(), now: func() time.Time { return testNow }, getenv: func(string) string { return "" }, runtimes: releaseRuntimes}
	go func() {
		err := tf6server.Serve("registry.terraform.io/antifailure/antifailure", providerserver.NewProtocol6(newWith("test", d)()),
			tf6server.WithDebug(ctx, reattach, closed), tf6server.WithLoggingSink(t), tf6server.WithGoPluginLogger(hclog.NewNullLogger()))
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-closed })
	var rc *plugin.ReattachConfig
	select {
	case rc = <-reattach:
	case <-time.After(30 * time.Second):
		t.Fatal("the provider server did not start")
	}
	info, err := json.Marshal(map[string]any{"registry.terraform.io/antifailure/antifailure": map[string]any{
		"Protocol": string(rc.Protocol), "ProtocolVersion": rc.ProtocolVersion, "Pid": rc.Pid, "Test": true,
		"Addr": map[string]string{"Network": rc.Addr.Network(), "String": rc.Addr.String()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config = `terraform {
  required_providers {
    antifailure = { source = "antifailure/antifailure" }
  }
}
` + config
	files = maps.Clone(files)
	if files == nil {
		files = map[string][]byte{}
	}
	files["main.tf"] = []byte(config)
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, bool) {
		cmd := exec.Command(tf, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TF_REATTACH_PROVIDERS="+string(info), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	if out, ok := run("init", "-backend=false", "-input=false", "-no-color"); !ok {
		t.Fatalf("terraform init: %s", out)
	}
	return run("validate", "-no-color")
}

// usesProvider keeps terraform from pruning a provider block nothing uses
// (it then validates nothing of it).
const usesProvider = "\ndata \"antifailure_license\" \"x\" {}\n"

// Each invalid input is refused by terraform validate, with its code and the
// attribute it concerns; the valid neighbour of each passes (the control).
func TestAccValidateRefuses(t *testing.T) {
	const goodManifest = `"name: shop\nruntime:\n  provider: local\n"`
	cases := []struct {
		name, config string
		want         *regexp.Regexp // nil: validate passes
	}{
		{"manifest unknown key", `resource "antifailure_preview_environment" "x" {
  name     = "pr-1"
  manifest = "name: shop\nruntime:\n  provider: local\nfoo: 1\n"
}`, regexp.MustCompile(`(?s)AF-MAN-002 Unknown key "foo" in the manifest at line 4:1.*manifest = "name: shop`)},
		{"manifest valid", `resource "antifailure_preview_environment" "x" {
  name     = "pr-1"
  manifest = ` + goodManifest + `
}`, nil},
		{"placement manifest", `data "antifailure_placement" "x" { manifest = "name: shop\n" }`, regexp.MustCompile(`AF-MAN-004`)},
		{"name not a DNS label", `resource "antifailure_preview_environment" "x" {
  name     = "PR_42"
  manifest = ` + goodManifest + `
}`, regexp.MustCompile(`(?s)AF-CFG-005 name "PR_42" is not a DNS label.*name\s+= "PR_42"`)},
		{"kubeconfig and kubeconfig_path", `provider "antifailure" {
  kubeconfig      = "apiVersion: v1"
  kubeconfig_path = "/nonexistent"
}` + usesProvider, regexp.MustCompile(`(?s)AF-CFG-003 Both kubeconfig and kubeconfig_path are set.*kubeconfig_path = "/nonexistent"`)},
		{"kubeconfig_path alone", `provider "antifailure" {
  kubeconfig_path = "~/.kube/config"
}` + usesProvider, nil},
		{"empty allowed_regions", `provider "antifailure" {
  policy = { allowed_regions = [] }
}` + usesProvider, regexp.MustCompile(`(?s)AF-CFG-004 policy.allowed_regions is empty.*provider "antifailure"`)},
		{"allowed_regions from a variable", `variable "regions" { type = list(string) }
provider "antifailure" {
  policy = { allowed_regions = var.regions }
}` + usesProvider, nil},
		{"DNS action ALOW", `data "antifailure_dns_firewall_check" "x" {
  rules     = [{ name = "a", priority = 1, action = "ALOW", domains = ["*"] }]
  fail_open = "DISABLED"
}`, regexp.MustCompile(`(?s)AF-DNS-017 The rule action "ALOW" is not ALLOW, ALERT or BLOCK \(did you\s+mean ALLOW\?\).*data "antifailure_dns_firewall_check" "x"`)},
		{"fail_open maybe", `data "antifailure_dns_firewall_check" "x" {
  rules     = [{ name = "a", priority = 1, action = "BLOCK", domains = ["*"] }]
  fail_open = "maybe"
}`, regexp.MustCompile(`(?s)AF-DNS-020 fail_open is "maybe".*fail_open = "maybe"`)},
		{"cluster_cidrs", `provider "antifailure" {
  kubernetes = { cluster_cidrs = ["10.244.0.0/16", "10.96.0.0"] }
}` + usesProvider, regexp.MustCompile(`(?s)AF-K8S-031 kubernetes.cluster_cidrs holds "10.96.0.0"`)},
		{"ingress_namespace", `provider "antifailure" {
  kubernetes = { ingress_namespace = "Ingress_Nginx" }
}` + usesProvider, regexp.MustCompile(`AF-K8S-032`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, ok := terraformValidate(t, c.config)
			switch {
			case c.want == nil && !ok:
				t.Fatalf("validate refused a valid configuration:\n%s", out)
			case c.want != nil && ok:
				t.Fatalf("validate passed; want %s:\n%s", c.want, out)
			case c.want != nil && !c.want.MatchString(out):
				t.Fatalf("validate output does not match %s:\n%s", c.want, out)
			}
		})
	}
}

// A generated manifest with 20,000 bad services (40,000 problems) used to
// print 40,000 diagnostics: validate now shows 20 and one counting the rest.
func TestAccValidate_20000BadServicesCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: shop\nruntime:\n  provider: kubernetes\nservices:\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "  Svc_%d:\n    image: nginx\n    web: true\n", i)
	}
	out, ok := terraformValidateWith(t, `data "antifailure_placement" "x" { manifest = file("${path.module}/antifailure.yaml") }`,
		map[string][]byte{"antifailure.yaml": []byte(b.String())})
	if ok {
		t.Fatal("validate passed a manifest with 40,000 problems")
	}
	errors := regexp.MustCompile(`(?m)^Error: AF-`).FindAllString(out, -1)
	if len(errors) != 21 || !strings.Contains(out, "AF-MAN-015 and 39980 more problems in the manifest") {
		t.Fatalf("%d errors, want 20 and one counting the rest:\n%.3000s", len(errors), out)
	}
	t.Logf("validate output: %d bytes, %d errors", len(out), len(errors))
}
