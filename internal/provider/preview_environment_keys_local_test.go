//go:build linux

package provider

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// localEnv is one preview environment of a local test configuration:
// resource label, app (the manifest's name), env and the greeting its web
// service answers with.
type localEnv struct{ label, app, env, greeting string }

func localEnvironmentsConfig(t *testing.T, providerBlock, marker string, envs []localEnv, extra string) string {
	var b strings.Builder
	b.WriteString(providerBlock + "\n")
	for _, e := range envs {
		b.WriteString(environmentBlock(e.label, e.env, "", localServiceManifest(t, e.app, marker, e.greeting)))
	}
	return b.String() + extra
}

func testMarker() string {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// servesGreeting checks, through the router, that the environment at addr
// answers with its own greeting.
func servesGreeting(addr, greeting string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s is not in the state", addr)
		}
		body, err := fetch(rs.Primary.Attributes["urls.web"] + "/")
		if err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		if !strings.Contains(body, "greeting="+greeting+" ") {
			return fmt.Errorf("%s answered %q, want greeting %s", addr, body, greeting)
		}
		return nil
	}
}

// killEnvironment kills the processes of an environment whose pid files
// are named (supervisor.json, helper.json) with SIGKILL, as a crash or an
// OOM kill would, and waits until they are gone.
func killEnvironment(t *testing.T, dir string, pidFiles ...string) {
	t.Helper()
	for _, f := range pidFiles {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`"pid": (\d+)`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("no pid in %s: %s", f, b)
		}
		pid, err := strconv.Atoi(string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s pid %d: %v", f, pid, err)
		}
		for i := 0; i < 250; i++ {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || strings.Contains(string(st), ") Z ") {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestAccPreviewEnvironment_local_keysImportAndCrash, through terraform with
// real namespaces: app shop + env pr-1 and app shop-pr + env 1 (one key,
// "shop-pr-1", in earlier releases) are two environments with their own IDs
// and state directories; an import block and terraform import of one are
// each followed by an empty plan; killing its supervisor and helper is
// drift that apply repairs (exit 0, containment re-proven, the next plan
// empty), and so is killing the helper alone; destroying the other leaves it serving; and a directory under a
// pair's name that another pair's files claim is refused at import.
func TestAccPreviewEnvironment_local_keysImportAndCrash(t *testing.T) {
	marker := testMarker()
	rt := localTestRuntime(t)
	a := localEnv{"a", "shop", "pr-1", "from-shop"}
	b := localEnv{"b", "shop-pr", "1", "from-shop-pr"}
	both := localEnvironmentsConfig(t, `provider "antifailure" {}`, marker, []localEnv{a, b}, "")
	dirA, dirB := rt.StateDir(runtime.Key{App: "shop", Env: "pr-1"}), rt.StateDir(runtime.Key{App: "shop-pr", Env: "1"})
	const addrA, addrB = "antifailure_preview_environment.a", "antifailure_preview_environment.b"
	var pidsBefore string
	exists := func(dir string, want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			_, err := os.Stat(filepath.Join(dir, "state.json"))
			if (err == nil) != want {
				return fmt.Errorf("state of %s: want present=%v: %w", dir, want, err)
			}
			return nil
		}
	}

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: localTestProviders(rt),
		CheckDestroy: func(*terraform.State) error {
			for _, d := range []string{dirA, dirB} {
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					return fmt.Errorf("state directory %s still exists (%w)", d, err)
				}
			}
			if pids := servicePids(marker); len(pids) > 0 {
				return fmt.Errorf("services still run: %v", pids)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				Config: both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addrA, tfjsonpath.New("id"), knownvalue.StringExact("shop/pr-1")),
					plancheck.ExpectKnownValue(addrB, tfjsonpath.New("id"), knownvalue.StringExact("shop-pr/1")),
					plancheck.ExpectKnownValue(addrB, tfjsonpath.New("namespace"), knownvalue.StringExact("shop-pr/1")),
					// The local router's port is chosen at apply.
					plancheck.ExpectUnknownValue(addrA, tfjsonpath.New("urls")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addrA, "id", "shop/pr-1"),
					resource.TestCheckResourceAttr(addrB, "id", "shop-pr/1"),
					exists(dirA, true), exists(dirB, true),
					servesGreeting(addrA, a.greeting), servesGreeting(addrB, b.greeting),
				),
			},
			// An import block: a no-op import, nothing to change.
			importBlockNoopStep(both, addrA, "shop/pr-1"),
			{ // Forget a without destroying it...
				Config: localEnvironmentsConfig(t, `provider "antifailure" {}`, marker, []localEnv{b}, `
removed {
  from = antifailure_preview_environment.a
  lifecycle {
    destroy = false
  }
}
`),
				Check: resource.ComposeAggregateTestCheckFunc(exists(dirA, true), func(*terraform.State) error {
					_, err := fetch(readURL(t, dirA) + "/")
					return err
				}),
			},
			// ...terraform import it back...
			importBackStep(both, addrA, "shop/pr-1"),
			{ // ...and the plan is empty: no replacement, no update.
				Config:   both,
				PlanOnly: true,
			},
			{ // A change only Terraform sees (timeouts) is an update that
				// leaves the environment alone: the same processes serve.
				PreConfig: func() { pidsBefore = fmt.Sprint(servicePids(marker)) },
				Config:    strings.Replace(both, "  name     = \"pr-1\"\n", "  name     = \"pr-1\"\n  timeouts = { update = \"9m\" }\n", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addrA, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addrA, tfjsonpath.New("containment").AtMapKey("verdict"), knownvalue.StringExact("contained")),
				}},
				Check: func(*terraform.State) error {
					if after := fmt.Sprint(servicePids(marker)); after != pidsBefore {
						return fmt.Errorf("the services were restarted: %s, then %s", pidsBefore, after)
					}
					return nil
				},
			},
			{ // The supervisor and its helper die: drift...
				PreConfig:          func() { killEnvironment(t, dirA, "supervisor.json", "helper.json") },
				Config:             both,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{ // ...that apply repairs; what a new probe decides is unknown
				// in the plan, so the result is consistent, and the plan
				// after is empty (the framework checks).
				Config: both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addrA, plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction(addrB, plancheck.ResourceActionNoop),
					plancheck.ExpectUnknownValue(addrA, tfjsonpath.New("containment")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addrA, "services.web.running", "true"),
					resource.TestCheckResourceAttr(addrA, "containment.verdict", "contained"),
					servesGreeting(addrA, a.greeting), servesGreeting(addrB, b.greeting),
				),
			},
			{ // The helper alone dies (the supervisor lives on): the same.
				PreConfig:          func() { killEnvironment(t, dirA, "helper.json") },
				Config:             both,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: both,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addrA, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addrA, tfjsonpath.New("containment")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addrA, "containment.verdict", "contained"),
					servesGreeting(addrA, a.greeting),
				),
			},
			{ // Destroying shop-pr/1 leaves shop/pr-1 running.
				Config: localEnvironmentsConfig(t, `provider "antifailure" {}`, marker, []localEnv{a}, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addrB, plancheck.ResourceActionDestroy),
					plancheck.ExpectResourceAction(addrA, plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(exists(dirB, false), exists(dirA, true), servesGreeting(addrA, a.greeting)),
			},
			{ // A directory under shop/pr-9's name that shop-pr/9's files
				// claim: the import is refused, the files stay.
				PreConfig: func() {
					forged := rt.StateDir(runtime.Key{App: "shop", Env: "pr-9"})
					if err := os.MkdirAll(forged, 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(forged, "state.json"), []byte(`{"key":"shop-pr-9","app":"shop-pr","env":"9"}`), 0o600); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = os.RemoveAll(forged) })
				},
				Config:        localEnvironmentsConfig(t, `provider "antifailure" {}`, marker, []localEnv{a, {"c", "shop", "pr-9", "x"}}, ""),
				ResourceName:  "antifailure_preview_environment.c",
				ImportState:   true,
				ImportStateId: "shop/pr-9",
				ExpectError:   regexp.MustCompile(`AF-RUN-090 The state directory .* belongs to shop-pr/9, not to\s+shop/pr-9`),
			},
			{ // An ID of earlier releases is refused, naming the forms.
				Config:        localEnvironmentsConfig(t, `provider "antifailure" {}`, marker, []localEnv{a, {"c", "shop", "pr-9", "x"}}, ""),
				ResourceName:  "antifailure_preview_environment.c",
				ImportState:   true,
				ImportStateId: "shop-pr-9",
				ExpectError:   regexp.MustCompile(`AF-RUN-093 .*<app>/<env>`),
			},
		},
	})
	if _, err := os.Stat(dirA); !os.IsNotExist(err) {
		t.Errorf("%s left: %v", dirA, err)
	}
}

// readURL is the web URL an environment's state.json records.
func readURL(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"web": "([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no web URL in %s", b)
	}
	return string(m[1])
}
