package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
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

// ingress_namespace and cluster_cidrs reach the runtime's options, from the
// attribute or else the environment; a bad environment value is refused in
// Configure (validate never sees it), and the default namespace is explicit.
func TestKubernetesIngressNamespaceAndClusterCIDRs(t *testing.T) {
	env := func(vals map[string]string) func(string) string { return func(k string) string { return vals[k] } }
	o, err := (*kubernetesProviderModel)(nil).options(env(nil))
	if err != nil || o.IngressNamespaceSelector["kubernetes.io/metadata.name"] != "ingress-nginx" || len(o.ClusterCIDRs) != 0 {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	o, err = (*kubernetesProviderModel)(nil).options(env(map[string]string{envK8sIngressNamespace: "traefik", envK8sClusterCIDRs: "10.244.0.0/16, 100.64.0.0/10"}))
	if err != nil || o.IngressNamespaceSelector["kubernetes.io/metadata.name"] != "traefik" || strings.Join(o.ClusterCIDRs, " ") != "10.244.0.0/16 100.64.0.0/10" {
		t.Fatalf("from the environment: %+v, %v", o, err)
	}
	set := &kubernetesProviderModel{IngressNamespace: types.StringValue("nginx-system"),
		ClusterCIDRs: types.ListValueMust(types.StringType, []attr.Value{types.StringValue("203.0.113.0/24")})}
	o, err = set.options(env(map[string]string{envK8sIngressNamespace: "traefik", envK8sClusterCIDRs: "10.244.0.0/16"}))
	if err != nil || o.IngressNamespaceSelector["kubernetes.io/metadata.name"] != "nginx-system" || strings.Join(o.ClusterCIDRs, " ") != "203.0.113.0/24" {
		t.Fatalf("the attribute must win: %+v, %v", o, err)
	}
	for name, vals := range map[string]map[string]string{
		"AF-K8S-031": {envK8sClusterCIDRs: "10.244.0.0/16,10.96.0.0"},
		"AF-K8S-032": {envK8sIngressNamespace: "Ingress_Nginx"},
	} {
		if _, err := (*kubernetesProviderModel)(nil).options(env(vals)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: want %s, got %v", vals, name, err)
		}
	}
	if c := (*kubernetesProviderModel)(nil).kubeContext(env(map[string]string{envK8sContext: "eu-prod"})); c != "eu-prod" {
		t.Errorf("AF_K8S_CONTEXT: %q", c)
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
