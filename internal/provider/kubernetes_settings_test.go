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
	o, err := (&kubernetesProviderModel{GatewayImage: types.StringValue("mirror/gateway:2"), ProbeImage: types.StringNull(), IngressClassName: types.StringNull()}).options(getenv)
	if err != nil || o.GatewayImage != "mirror/gateway:2" || o.ProbeImage != "env/probe:1" || o.IngressClassName != "nginx" {
		t.Fatalf("options = %+v", o)
	}
	if none, _ := (*kubernetesProviderModel)(nil).options(func(string) string { return "" }); none.GatewayImage != "" || none.ProbeImage != "" {
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
