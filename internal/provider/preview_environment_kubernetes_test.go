package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv/standin"
)

// These tests run terraform against the real kube-apiserver pair of
// scripts/testenv.sh (joined through AF_TESTENV, or started for the test),
// with the kubelet stand-in playing the node: it finishes the containment
// probe with the result the test chooses and readies the pods. Without the
// API server binaries they fail; they never skip.

func kubeConfig(kubeconfig, name string) string {
	return kubeProviderBlock(kubeconfig) + environmentBlock("this", name, "", kubeManifest)
}

// afObjects lists these tests' namespaces and what is in them on a cluster.
func afObjects(c k8s.Interface) ([]string, error) {
	const prefix = "af-tfshop-"
	ctx := context.Background()
	nss, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ns := range nss.Items {
		if !strings.HasPrefix(ns.Name, prefix) {
			continue
		}
		out = append(out, "namespace/"+ns.Name)
		deps, _ := c.AppsV1().Deployments(ns.Name).List(ctx, metav1.ListOptions{})
		for _, o := range deps.Items {
			out = append(out, "deployment/"+o.Name)
		}
		svcs, _ := c.CoreV1().Services(ns.Name).List(ctx, metav1.ListOptions{})
		for _, o := range svcs.Items {
			out = append(out, "service/"+o.Name)
		}
		ings, _ := c.NetworkingV1().Ingresses(ns.Name).List(ctx, metav1.ListOptions{})
		for _, o := range ings.Items {
			out = append(out, "ingress/"+o.Name+"="+o.Spec.Rules[0].Host)
		}
		nps, _ := c.NetworkingV1().NetworkPolicies(ns.Name).List(ctx, metav1.ListOptions{})
		for _, o := range nps.Items {
			out = append(out, "networkpolicy/"+o.Name)
		}
		pods, _ := c.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelProbe + "=true"})
		for _, o := range pods.Items {
			out = append(out, "probe-pod/"+o.Name)
		}
	}
	return out, nil
}

// TestAccPreviewEnvironment_kubernetes_KubeletStandIn is the issue's "done
// when", through terraform: apply of a two-service manifest puts the
// namespace, policies, gateway, Deployments, Service and Ingress on the
// placed cluster only (the probe ran and is gone); the plan right after is
// empty; a Deployment deleted by hand shows in the next plan and apply puts
// it back; import by <kubeconfig_context>/<app>/<env> reads the same
// environment; destroy leaves nothing. Then a probe that escapes refuses the
// apply with AF-RUN-043, says what was created and removed again, and
// leaves nothing either.
func TestAccPreviewEnvironment_kubernetes_KubeletStandIn(t *testing.T) {
	te, stand := kubeTestenv(t)
	eu, us := te.Client(t, testenv.EU), te.Client(t, testenv.US)
	var cnt kubeRequests
	config := kubeConfig(te.Kubeconfig, "pr-1")
	const ns = "af-tfshop-pr-1"

	onlyInEU := func(*terraform.State) error {
		t.Logf("apply: %d Kubernetes API requests", cnt.take())
		got, err := afObjects(eu)
		if err != nil {
			return err
		}
		want := []string{
			"namespace/" + ns, "deployment/af-egress-gateway", "deployment/web", "deployment/worker",
			"service/af-egress-gateway", "service/web", "ingress/web=web-pr-1.eu.preview.example.com",
			"networkpolicy/af-default-deny", "networkpolicy/af-gateway-egress", "networkpolicy/af-gateway-from-services",
			"networkpolicy/af-services-to-gateway", "networkpolicy/af-web-web",
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			return fmt.Errorf("eu-prod holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		if left, _ := afObjects(us); len(left) != 0 {
			return fmt.Errorf("us-prod holds %v", left)
		}
		if stand.Probes() == 0 {
			return fmt.Errorf("no containment probe ran")
		}
		return nil
	}

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: kubernetesTestProviders(&cnt),
		CheckDestroy: func(*terraform.State) error {
			t.Logf("terraform destroy (its refresh included): %d Kubernetes API requests", cnt.take())
			if left, _ := afObjects(eu); len(left) != 0 {
				return fmt.Errorf("left after destroy: %v", left)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "id", "eu-prod/tfshop/pr-1"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "namespace", ns),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "kubeconfig_context", "eu-prod"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "target", "frankfurt"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "urls.%", "1"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "urls.web", "http://web-pr-1.eu.preview.example.com"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "services.%", "2"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "services.worker.running", "true"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "services.web.image", "ghcr.io/acme/shop:1.4.2"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "containment.verdict", "contained"),
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "containment.attempts.#", "18"),
					onlyInEU,
				),
			},
			{
				// A Deployment deleted by hand: the next plan is not empty.
				PreConfig: func() {
					if err := eu.AppsV1().Deployments(ns).Delete(context.Background(), "worker", metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
					cnt.take()
				},
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Apply puts it back; the plan after is empty again.
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("antifailure_preview_environment.this", "services.worker.running", "true"),
					func(*terraform.State) error {
						t.Logf("refresh, plan and update after the drift: %d Kubernetes API requests", cnt.take())
						_, err := eu.AppsV1().Deployments(ns).Get(context.Background(), "worker", metav1.GetOptions{})
						return err
					},
				),
			},
			{
				// Scaled by hand: a diff as well.
				PreConfig: func() {
					d, err := eu.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					three := int32(3)
					d.Spec.Replicas = &three
					if _, err := eu.AppsV1().Deployments(ns).Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				Check:  resource.TestCheckResourceAttr("antifailure_preview_environment.this", "services.web.replicas", "1"),
			},
			{
				// An image override (a pull request's build) is an update in
				// place: same namespace, the Deployment runs the new image.
				Config: strings.Replace(config, "  manifest = <<-EOT", "  images   = { web = \"ghcr.io/acme/shop:pr-7\" }\n  manifest = <<-EOT", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("antifailure_preview_environment.this", plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue("antifailure_preview_environment.this", tfjsonpath.New("services").AtMapKey("web").AtMapKey("image"), knownvalue.StringExact("ghcr.io/acme/shop:pr-7")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("antifailure_preview_environment.this", tfjsonpath.New("services").AtMapKey("web").AtMapKey("image"), knownvalue.StringExact("ghcr.io/acme/shop:pr-7")),
					statecheck.ExpectKnownValue("antifailure_preview_environment.this", tfjsonpath.New("services").AtMapKey("worker").AtMapKey("image"), knownvalue.StringExact("ghcr.io/acme/shop:1.4.2")),
				},
				Check: func(*terraform.State) error {
					d, err := eu.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if img := d.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/acme/shop:pr-7" {
						return fmt.Errorf("web Deployment runs %s, want the override", img)
					}
					return nil
				},
			},
			{
				ResourceName:      "antifailure_preview_environment.this",
				ImportState:       true,
				ImportStateId:     "eu-prod/tfshop/pr-1",
				ImportStateVerify: true,
				ImportStateCheck: func([]*terraform.InstanceState) error {
					t.Logf("scale-drift plan and apply, then import: %d Kubernetes API requests", cnt.take())
					return nil
				},
				// What only the configuration knows.
				ImportStateVerifyIgnore: []string{"manifest", "name", "images", "wait_for_rollout", "timeouts", "target", "placement", "queue_position"},
			},
		},
	})

	// A probe that gets out: AF-RUN-043, and nothing is left.
	stand.SetProbe(standin.Escaped)
	defer stand.SetProbe(standin.Contained)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: kubernetesTestProviders(&cnt),
		Steps: []resource.TestStep{{
			Config:      kubeConfig(te.Kubeconfig, "pr-2"),
			ExpectError: regexp.MustCompile(`(?s)AF-RUN-043 The containment probe got out: 1 of 16 attempts escaped.*1\.1\.1\.1:443\s+escaped.*No application process or image was started\..*Created\s+and\s+removed\s+again:\s+namespace\s+af-tfshop-pr-2\s+on\s+context\s+eu-prod,.*containment\s+probe\s+Pod.*Nothing\s+is\s+left\.`),
		}},
	})
	if left, _ := afObjects(eu); len(left) != 0 {
		t.Errorf("left after the refused apply: %v", left)
	}
	if _, err := eu.CoreV1().Namespaces().Get(context.Background(), "af-tfshop-pr-2", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace af-tfshop-pr-2: %v", err)
	}
}

// TestAccPreviewEnvironment_kubernetes_missingContext: a target context the
// kubeconfig lacks is refused at plan, listing the contexts there are, with
// no request to any cluster.
func TestAccPreviewEnvironment_kubernetes_missingContext(t *testing.T) {
	te, _ := kubeTestenv(t)
	var cnt kubeRequests
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: kubernetesTestProviders(&cnt),
		Steps: []resource.TestStep{{
			Config:             strings.Replace(kubeConfig(te.Kubeconfig, "pr-3"), "kubeconfig_context: eu-prod", "kubeconfig_context: ap-prod", 1),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ExpectError:        regexp.MustCompile(`(?s)AF-K8S-001 kubeconfig context "ap-prod" does not exist.*eu-prod, eu-prod-viewer, us-prod`),
		}},
	})
	if n := cnt.take(); n != 0 {
		t.Errorf("a plan refused for its context sent %d requests", n)
	}
}
