package provider

import (
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
