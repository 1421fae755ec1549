package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestKubernetesSettingsAttributeWinsOverEnvironment(t *testing.T) {
	env := map[string]string{envK8sGatewayImage: "env/gateway:1", envK8sProbeImage: "env/probe:1", envK8sIngressClass: "nginx"}
	getenv := func(k string) string { return env[k] }
	o := (&kubernetesProviderModel{GatewayImage: types.StringValue("mirror/gateway:2"), ProbeImage: types.StringNull(), IngressClassName: types.StringNull()}).options(getenv)
	if o.GatewayImage != "mirror/gateway:2" || o.ProbeImage != "env/probe:1" || o.IngressClassName != "nginx" {
		t.Fatalf("options = %+v", o)
	}
	if none := (*kubernetesProviderModel)(nil).options(func(string) string { return "" }); none.GatewayImage != "" || none.ProbeImage != "" {
		t.Fatalf("unset block must leave the runtime's defaults: %+v", none)
	}
}

func TestKubeconfigSourceFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, f := range []string{a, b} {
		if err := os.WriteFile(f, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	list := a + string(os.PathListSeparator) + b
	env := func(vals map[string]string) func(string) string { return func(k string) string { return vals[k] } }
	none := providerModel{KubeconfigPath: types.StringNull(), Kubeconfig: types.StringNull()}

	src, err := readKubeconfigSource(none, env(map[string]string{envKubeconfigPath: list}))
	if err != nil || src.Path != list {
		t.Fatalf("KUBECONFIG list: %+v, %v", src, err)
	}
	if _, err := readKubeconfigSource(none, env(map[string]string{envKubeconfigPath: a + string(os.PathListSeparator) + filepath.Join(dir, "missing")})); err == nil || !strings.Contains(err.Error(), "AF-CFG-001") {
		t.Fatalf("a missing file in the list must be refused, got %v", err)
	}
	src, err = readKubeconfigSource(none, env(map[string]string{envKubeconfig: "raw"}))
	if err != nil || src.Content != "raw" || src.Path != "" {
		t.Fatalf("AF_KUBECONFIG content: %+v, %v", src, err)
	}
	both := providerModel{KubeconfigPath: types.StringValue(a), Kubeconfig: types.StringValue("raw")}
	if _, err := readKubeconfigSource(both, env(nil)); err == nil {
		t.Fatal("kubeconfig and kubeconfig_path together must be refused")
	}
}

func TestKubernetesTerminationGrace(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == envK8sGrace {
				return v
			}
			return ""
		}
	}
	if d, err := (*kubernetesProviderModel)(nil).terminationGrace(env("")); d != nil || err != nil {
		t.Fatalf("unset: %v, %v (want the runtime's default)", d, err)
	}
	if d, err := (*kubernetesProviderModel)(nil).terminationGrace(env("0")); err != nil || d == nil || *d != 0 {
		t.Fatalf("AF_K8S_TERMINATION_GRACE=0: %v, %v", d, err)
	}
	m := &kubernetesProviderModel{TerminationGrace: types.Int64Value(7)}
	if d, err := m.terminationGrace(env("3")); err != nil || d == nil || d.Seconds() != 7 {
		t.Fatalf("attribute must win over the environment: %v, %v", d, err)
	}
	for _, bad := range []string{"-1", "601", "2s"} {
		if _, err := (*kubernetesProviderModel)(nil).terminationGrace(env(bad)); err == nil || !strings.Contains(err.Error(), "AF-K8S-020") {
			t.Errorf("AF_K8S_TERMINATION_GRACE=%s: %v", bad, err)
		}
	}
}
