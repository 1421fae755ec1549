package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kube "github.com/antifailure/terraform-provider-antifailure/internal/runtime/kubernetes"
	"github.com/antifailure/terraform-provider-antifailure/internal/testenv"
)

// kubeEnvironmentsConfig is one resource per (label, app, env), each with
// kubeManifest under its own app name.
func kubeEnvironmentsConfig(kubeconfig string, envs [][3]string, extra string) string {
	var b strings.Builder
	b.WriteString(kubeProviderBlock(kubeconfig))
	for _, e := range envs {
		b.WriteString(environmentBlock(e[0], e[2], "", strings.Replace(kubeManifest, "name: tfshop\n", "name: "+e[1]+"\n", 1)))
	}
	return b.String() + extra
}

// TestAccPreviewEnvironment_kubernetes_keysAndImport_KubeletStandIn, through
// terraform against the real API servers: app tfshop + env k-1 and app
// tfshop-k + env 1 (one namespace, af-tfshop-k-1, in earlier releases) are
// two environments in two namespaces, each labelled with its pair, both
// namespaces and URLs known at plan; an import block and terraform import
// are each followed by an empty plan; a namespace under a pair's name that
// is labelled for another pair is refused at import and left alone;
// destroying one environment leaves the other.
func TestAccPreviewEnvironment_kubernetes_keysAndImport_KubeletStandIn(t *testing.T) {
	te, _ := kubeTestenv(t)
	eu := te.Client(t, testenv.EU)
	var cnt kubeRequests
	a, b := [3]string{"a", "tfshop", "k-1"}, [3]string{"b", "tfshop-k", "1"}
	both := kubeEnvironmentsConfig(te.Kubeconfig, [][3]string{a, b}, "")
	const addrA, addrB = "antifailure_preview_environment.a", "antifailure_preview_environment.b"
	nsA := "af-tfshop-k-1"
	var nsB string
	labelled := func(ns, app, env string) error {
		obj, err := eu.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if obj.Labels[kube.LabelApp] != app || obj.Labels[kube.LabelEnv] != env {
			return fmt.Errorf("namespace %s is labelled %v, want app %s env %s", ns, obj.Labels, app, env)
		}
		return nil
	}

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: kubernetesTestProviders(&cnt),
		CheckDestroy:             nothingLeftOn(eu),
		Steps: []resource.TestStep{
			{
				Config: both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addrA, tfjsonpath.New("id"), knownvalue.StringExact("eu-prod/tfshop/k-1")),
					plancheck.ExpectKnownValue(addrB, tfjsonpath.New("id"), knownvalue.StringExact("eu-prod/tfshop-k/1")),
					// Known at plan on Kubernetes: namespace and URLs.
					plancheck.ExpectKnownValue(addrA, tfjsonpath.New("namespace"), knownvalue.StringExact(nsA)),
					plancheck.ExpectKnownValue(addrB, tfjsonpath.New("namespace"), knownvalue.StringRegexp(regexp.MustCompile(`^af-tfshop-k-1-[a-z2-7]{10}$`))),
					plancheck.ExpectKnownValue(addrA, tfjsonpath.New("urls"), knownvalue.MapExact(map[string]knownvalue.Check{
						"web": knownvalue.StringExact("http://web-k-1.eu.preview.example.com")})),
					plancheck.ExpectUnknownValue(addrA, tfjsonpath.New("containment")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addrA, "namespace", nsA),
					func(s *terraform.State) error {
						nsB = s.RootModule().Resources[addrB].Primary.Attributes["namespace"]
						if err := labelled(nsA, "tfshop", "k-1"); err != nil {
							return err
						}
						return labelled(nsB, "tfshop-k", "1")
					},
				),
			},
			// An import block: a no-op import.
			importBlockNoopStep(both, addrB, "eu-prod/tfshop-k/1"),
			{ // Forget b without destroying it...
				Config: kubeEnvironmentsConfig(te.Kubeconfig, [][3]string{a}, `
removed {
  from = antifailure_preview_environment.b
  lifecycle {
    destroy = false
  }
}
`),
				Check: func(*terraform.State) error { return labelled(nsB, "tfshop-k", "1") },
			},
			// ...terraform import it back...
			importBackStep(both, addrB, "eu-prod/tfshop-k/1"),
			{ // ...and the plan is empty: no replacement, no update.
				Config:   both,
				PlanOnly: true,
			},
			{ // A namespace under tfshop/k-9's name labelled for another
				// pair: the import is refused and the namespace left alone.
				PreConfig: func() {
					forged := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "af-tfshop-k-9", Labels: map[string]string{
						kube.LabelManagedBy: kube.ManagedBy, kube.LabelApp: "tfshop-k", kube.LabelEnv: "9"}}}
					if _, err := eu.CoreV1().Namespaces().Create(context.Background(), forged, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:        kubeEnvironmentsConfig(te.Kubeconfig, [][3]string{a, b, {"c", "tfshop", "k-9"}}, ""),
				ResourceName:  "antifailure_preview_environment.c",
				ImportState:   true,
				ImportStateId: "eu-prod/tfshop/k-9",
				ExpectError:   regexp.MustCompile(`AF-K8S-010 Namespace af-tfshop-k-9 on context eu-prod belongs to app\s+"tfshop-k" environment "9", not to tfshop/k-9`),
			},
			{ // Destroying tfshop-k/1 leaves tfshop/k-1.
				PreConfig: func() {
					ctx := context.Background()
					got, err := eu.CoreV1().Namespaces().Get(ctx, "af-tfshop-k-9", metav1.GetOptions{})
					if err != nil || got.DeletionTimestamp != nil {
						t.Fatalf("the refused import touched the other pair's namespace: %v", err)
					}
					_ = eu.CoreV1().Namespaces().Delete(ctx, "af-tfshop-k-9", metav1.DeleteOptions{})
					for i := 0; i < 600; i++ {
						if _, err := eu.CoreV1().Namespaces().Get(ctx, "af-tfshop-k-9", metav1.GetOptions{}); err != nil {
							break
						}
						time.Sleep(50 * time.Millisecond)
					}
				},
				Config: kubeEnvironmentsConfig(te.Kubeconfig, [][3]string{a}, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addrB, plancheck.ResourceActionDestroy),
					plancheck.ExpectResourceAction(addrA, plancheck.ResourceActionNoop),
				}},
				Check: func(*terraform.State) error {
					if _, err := eu.CoreV1().Namespaces().Get(context.Background(), nsB, metav1.GetOptions{}); err == nil {
						return fmt.Errorf("namespace %s survived the destroy", nsB)
					}
					if err := labelled(nsA, "tfshop", "k-1"); err != nil {
						return err
					}
					_, err := eu.AppsV1().Deployments(nsA).Get(context.Background(), "web", metav1.GetOptions{})
					return err
				},
			},
		},
	})
}
