package kubernetes_test

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
)

// TestUpdate_KubeletStandIn_ContainmentDrift: containment objects changed
// by hand (a policy deleted, a policy added, the catalogue widened) are
// named by Read; Update restores them, rolls the gateway so that it runs the
// restored catalogue (it reads it only at start), and probes again; an
// Update with nothing changed neither probes nor rolls. The stand-in plays
// the kubelet: it answers the probe, so what is checked is which objects
// the runtime writes, not what a packet can reach (the RealNode tests).
func TestUpdate_KubeletStandIn_ContainmentDrift(t *testing.T) {
	ctx := context.Background()
	eu := te.Client(t, testenv.EU)
	r := newRuntime(t, nil, kube.Options{})
	env := environment(t, shopManifest(2), "cdrift")
	st, err := r.Create(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Delete(context.Background(), st.Ref) })
	ns := st.Namespace
	gatewayVersion := func() string {
		t.Helper()
		d, err := eu.AppsV1().Deployments(ns).Get(ctx, kube.GatewayName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Spec.Template.Annotations[kube.AnnotationConfigVersion]
	}
	probeRecord := func() string {
		t.Helper()
		o, err := eu.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return o.Annotations[kube.AnnotationContainment]
	}
	v0, rec0 := gatewayVersion(), probeRecord()
	if v0 == "" {
		t.Fatalf("the gateway's pod template has no %s", kube.AnnotationConfigVersion)
	}

	// Nothing changed: no probe, no roll.
	if _, err := r.Update(ctx, env, st.Ref); err != nil {
		t.Fatal(err)
	}
	if v := gatewayVersion(); v != v0 {
		t.Errorf("an Update with nothing changed rolled the gateway (%s -> %s)", v0, v)
	}
	if probeRecord() != rec0 {
		t.Error("an Update with nothing changed probed again")
	}

	if err := eu.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "af-services-to-gateway", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	allowAll := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "by-hand"},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
		},
	}
	if _, err := eu.NetworkingV1().NetworkPolicies(ns).Create(ctx, allowAll, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm, err := eu.CoreV1().ConfigMaps(ns).Get(ctx, kube.GatewayConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restored := cm.Data["config.json"]
	cfg, err := egress.ParseConfig([]byte(restored))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Catalogue = append([]egress.Rule{{Host: "*.widened.test", Mode: manifest.ModeAllow}}, cfg.Catalogue...)
	cm.Data["config.json"] = string(cfg.JSON())
	if _, err := eu.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	got, err := r.Read(ctx, st.Ref)
	if err != nil {
		t.Fatal(err)
	}
	v := string(got.Containment.Verdict)
	for _, want := range []string{kube.DriftedPrefix, "NetworkPolicy af-services-to-gateway deleted", "NetworkPolicy by-hand added", "ConfigMap " + kube.GatewayConfigMap + " changed"} {
		if !strings.Contains(v, want) {
			t.Errorf("Read's verdict %q does not name %q", v, want)
		}
	}

	got, err = r.Update(ctx, env, st.Ref)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got.Containment.Verdict != probe.Contained {
		t.Errorf("after the repair the verdict is %q", got.Containment.Verdict)
	}
	if probeRecord() == rec0 {
		t.Error("the repair did not probe again")
	}
	if _, err := eu.NetworkingV1().NetworkPolicies(ns).Get(ctx, "af-services-to-gateway", metav1.GetOptions{}); err != nil {
		t.Errorf("the deleted policy was not restored: %v", err)
	}
	if _, err := eu.NetworkingV1().NetworkPolicies(ns).Get(ctx, "by-hand", metav1.GetOptions{}); err == nil {
		t.Error("the policy added by hand is still there")
	}
	if cm, err := eu.CoreV1().ConfigMaps(ns).Get(ctx, kube.GatewayConfigMap, metav1.GetOptions{}); err != nil || cm.Data["config.json"] != restored {
		t.Errorf("the catalogue was not restored: %v %v", err, cm.Data)
	}
	if v := gatewayVersion(); v == v0 {
		t.Error("the gateway was not rolled onto the restored catalogue: it reads it only at start")
	}

	// The next repair's probe gets out: the refusal stops every service
	// (the gateway keeps running), the refresh reports the verdict, and the
	// repair after that probes again although the objects are as restored,
	// then starts the services.
	if err := eu.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "af-services-to-gateway", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	withProbe(standin.Escaped, func() {
		_, err = r.Update(ctx, env, st.Ref)
	})
	if code(err) != probe.Escaped {
		t.Fatalf("Update with an escaping probe = %v, want %s", err, probe.Escaped)
	}
	if !strings.Contains(err.Error(), "services were stopped") {
		t.Errorf("the refusal does not say the services were stopped: %v", err)
	}
	got, err = r.Read(ctx, st.Ref)
	if err != nil {
		t.Fatal(err)
	}
	if got.Containment.Verdict == probe.Contained {
		t.Error("after a refused re-probe a refresh still reads contained")
	}
	for name, s := range got.Services {
		if s.Running || s.Replicas != 0 {
			t.Errorf("service %s after a refused re-probe: %+v, want stopped", name, s)
		}
	}
	if d, err := eu.AppsV1().Deployments(ns).Get(ctx, kube.GatewayName, metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("the gateway should keep running: %v", err)
	}
	rec1 := probeRecord()
	got, err = r.Update(ctx, env, st.Ref)
	if err != nil {
		t.Fatalf("Update after the isolation was fixed: %v", err)
	}
	if probeRecord() == rec1 || got.Containment.Verdict != probe.Contained {
		t.Errorf("the Update after a refused re-probe did not probe again: %q", got.Containment.Verdict)
	}
	for name, s := range got.Services {
		if !s.Running || s.Replicas != 1 {
			t.Errorf("service %s after the fixed repair: %+v, want running", name, s)
		}
	}

	// A re-probe that gives no verdict at all (silent) is no proof either:
	// the services stop, and the next Update probes again.
	if err := eu.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "af-default-deny", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	withProbe(standin.Silent, func() {
		_, err = r.Update(ctx, env, st.Ref)
	})
	if code(err) != probe.NoAttempts || !strings.Contains(err.Error(), "services were stopped") {
		t.Fatalf("Update with a silent probe = %v, want %s saying the services were stopped", err, probe.NoAttempts)
	}
	if got, err = r.Read(ctx, st.Ref); err != nil || got.Services["web"].Running {
		t.Fatalf("after a silent re-probe: %v %+v", err, got.Services)
	}
	rec2 := probeRecord()
	got, err = r.Update(ctx, env, st.Ref)
	if err != nil || got.Containment.Verdict != probe.Contained || probeRecord() == rec2 || !got.Services["web"].Running {
		t.Errorf("the Update after a silent re-probe: %v, verdict %q, probed again %v, web %+v", err, got.Containment.Verdict, probeRecord() != rec2, got.Services["web"])
	}
}
