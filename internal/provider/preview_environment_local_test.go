//go:build linux

package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/antifailure/terraform-provider-antifailure/internal/manifest"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/local"
)

// The local runtime re-executes the binary it runs in (here: this test
// binary) as its supervisor, namespace helper, exec shim and probe; these
// tests also run it as the environment's web service. init runs before
// TestMain, so no other test file has to know.
func init() {
	if local.MaybeRunHelper() {
		return
	}
	if os.Getenv("AF_TEST_LOCAL_SERVICE") == "web" {
		runLocalTestService()
		os.Exit(0)
	}
}

// runLocalTestService answers / with its greeting and what a mock host said
// through the gateway (HTTP_PROXY, set by the runtime).
func runLocalTestService() {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		mock := "unreachable"
		if resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://api.mock.test/quote"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mock = fmt.Sprintf("%d %s", resp.StatusCode, b)
		}
		fmt.Fprintf(w, "greeting=%s mock=%s\n", os.Getenv("GREETING"), mock)
	})
	if err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// localTestProviders serves the provider with a local runtime built for the
// test: state under the test's temporary directory, and a probe pointed only
// at TEST-NET addresses (from a clean namespace, no packet is even sent).
func localTestProviders(rt runtime.Runtime) map[string]func() (tfprotov6.ProviderServer, error) {
	return runtimeTestProviders(func(pd *providerData, kind string) (runtime.Runtime, error) {
		if kind == manifest.ProviderLocal {
			return rt, nil
		}
		return releaseRuntimes(pd, kind)
	})
}

func localTestRuntime(t *testing.T) *local.Runtime {
	return local.New(local.Options{
		StateBase: filepath.Join(t.TempDir(), "state"),
		Probe: local.ProbeOptions{
			Public:      []string{"203.0.113.10:443", "198.51.100.10:80"},
			Resolvers:   []string{"203.0.113.53"},
			ResolvConf:  []string{},
			HostAddrs:   []string{"203.0.113.2"},
			HostPorts:   []int{22},
			Metadata:    []string{"203.0.113.254:80"},
			UnixSockets: []string{},
			PublicName:  "example.com",
		},
		ReadyTimeout: 30 * time.Second,
	})
}

func localEnvironmentConfig(t *testing.T, marker, greeting string) string {
	return `provider "antifailure" {}` + "\n" + environmentBlock("this", "pr-1", "", localServiceManifest(t, "shop", marker, greeting)+`
    egress:
      - host: api.mock.test
        mode: mock
        response: {status: 200, body: mocked-quote}`)
}

// servicePids are the host pids of this test's services (found by the
// marker in their environment).
func servicePids(marker string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains(string(b), "\x00AF_TEST_MARKER="+marker+"\x00") {
			if st, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil && !strings.Contains(string(st), ") Z ") {
				out = append(out, pid)
			}
		}
	}
	return out
}

// fetch gets the environment's URL through the router on 127.0.0.1.
func fetch(rawURL string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", "127.0.0.1:"+port)
		},
	}}
	resp, err := c.Get(rawURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", rawURL, resp.StatusCode, b)
	}
	return string(b), err
}

const envAddr = "antifailure_preview_environment.this"

func TestAccPreviewEnvironment_local(t *testing.T) {
	localAttempts := 16
	if os.Geteuid() == 0 {
		localAttempts = 17
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	marker := hex.EncodeToString(rnd[:])
	rt := localTestRuntime(t)
	stateDir := rt.StateDir(runtime.Key{App: "shop", Env: "pr-1"})
	var url, netns string

	serves := func(greeting string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			u := s.RootModule().Resources[envAddr].Primary.Attributes["urls.web"]
			if url != "" && u != url {
				return fmt.Errorf("the URL changed from %s to %s", url, u)
			}
			url = u
			body, err := fetch(u + "/")
			if err != nil {
				return err
			}
			if want := "greeting=" + greeting + " mock=200 mocked-quote"; !strings.Contains(body, want) {
				return fmt.Errorf("the service answered %q, want %q", body, want)
			}
			return nil
		}
	}
	recordNetns := func(*terraform.State) error {
		b, err := os.ReadFile(filepath.Join(stateDir, "helper.json"))
		if err != nil {
			return err
		}
		m := regexp.MustCompile(`"netns": "([^"]+)"`).FindSubmatch(b)
		if m == nil {
			return fmt.Errorf("no netns in helper.json: %s", b)
		}
		netns = string(m[1])
		return nil
	}

	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: localTestProviders(rt),
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
				return fmt.Errorf("state directory %s still exists (%w)", stateDir, err)
			}
			if pids := servicePids(marker); len(pids) > 0 {
				return fmt.Errorf("services still run: %v", pids)
			}
			if netns == "" {
				return fmt.Errorf("the network namespace was never recorded")
			}
			ents, _ := os.ReadDir("/proc")
			for _, e := range ents {
				if l, err := os.Readlink("/proc/" + e.Name() + "/ns/net"); err == nil && l == netns {
					return fmt.Errorf("process %s is still in the environment's network namespace %s", e.Name(), netns)
				}
			}
			if url != "" {
				if _, err := fetch(url + "/"); err == nil {
					return fmt.Errorf("the router still answers on %s", url)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{ // Create; the framework then checks that a second plan is empty.
				Config: localEnvironmentConfig(t, marker, "hello"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(envAddr, plancheck.ResourceActionCreate),
					// Known at plan: the ID, the placement, the services the
					// plan proposes; known only after the probe: containment.
					plancheck.ExpectKnownValue(envAddr, tfjsonpath.New("id"), knownvalue.StringExact("shop/pr-1")),
					plancheck.ExpectKnownValue(envAddr, tfjsonpath.New("target"), knownvalue.StringExact("local")),
					plancheck.ExpectKnownValue(envAddr, tfjsonpath.New("services").AtMapKey("web").AtMapKey("running"), knownvalue.Bool(true)),
					plancheck.ExpectUnknownValue(envAddr, tfjsonpath.New("containment")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(envAddr, "queue_position", "1"),
					resource.TestCheckResourceAttr(envAddr, "id", "shop/pr-1"),
					resource.TestCheckResourceAttr(envAddr, "runtime", "local"),
					resource.TestCheckResourceAttr(envAddr, "namespace", "shop/pr-1"),
					resource.TestMatchResourceAttr(envAddr, "urls.web", regexp.MustCompile(`^http://web-pr-1\.localhost:\d+$`)),
					resource.TestCheckResourceAttr(envAddr, "services.web.running", "true"),
					resource.TestCheckResourceAttr(envAddr, "containment.verdict", "contained"),
					// 8 network attempts, then the sandbox's own (one more, the
					// root-only canary, when the provider runs as root), the control last.
					resource.TestCheckResourceAttr(envAddr, "containment.attempts.#", strconv.Itoa(localAttempts)),
					resource.TestCheckResourceAttr(envAddr, "containment.attempts."+strconv.Itoa(localAttempts-1)+".category", "control"),
					resource.TestCheckResourceAttr(envAddr, "containment.attempts."+strconv.Itoa(localAttempts-1)+".outcome", "reached"),
					resource.TestCheckResourceAttr(envAddr, "containment.attempts.8.category", "unix"),
					serves("hello"),
					recordNetns,
				),
			},
			{ // Nothing changed: an empty plan.
				Config:   localEnvironmentConfig(t, marker, "hello"),
				PlanOnly: true,
			},
			{ // A service killed by hand is drift the plan shows...
				PreConfig: func() {
					pids := servicePids(marker)
					if len(pids) != 1 {
						t.Fatalf("want one service process, found %v", pids)
					}
					if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					for i := 0; i < 100 && len(servicePids(marker)) > 0; i++ {
						time.Sleep(20 * time.Millisecond)
					}
				},
				Config:             localEnvironmentConfig(t, marker, "hello"),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{ // ...and apply restarts it, in place.
				Config: localEnvironmentConfig(t, marker, "hello"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(envAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(envAddr, "services.web.running", "true"),
					serves("hello"),
				),
			},
			{ // A changed env is an update in place: same namespace, same URL.
				Config: localEnvironmentConfig(t, marker, "bonjour"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(envAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(envAddr, "services.web.running", "true"),
					serves("bonjour"),
					func(*terraform.State) error {
						before := netns
						if err := recordNetns(nil); err != nil {
							return err
						}
						if netns != before {
							return fmt.Errorf("the update replaced the namespace (%s → %s)", before, netns)
						}
						return nil
					},
				),
			},
			{ // Import by the environment key.
				Config:        localEnvironmentConfig(t, marker, "bonjour"),
				ResourceName:  envAddr,
				ImportState:   true,
				ImportStateId: "shop/pr-1",
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 {
						return fmt.Errorf("imported %d states", len(states))
					}
					a := states[0].Attributes
					for k, want := range map[string]string{
						"id": "shop/pr-1", "runtime": "local", "namespace": "shop/pr-1", "urls.web": url, "name": "pr-1",
						"services.web.running": "true", "containment.verdict": "contained",
					} {
						if a[k] != want {
							return fmt.Errorf("imported %s = %q, want %q", k, a[k], want)
						}
					}
					return nil
				},
			},
		},
	})
}

// TestAccPreviewEnvironment_local_imagesRefusedAtPlan: images means nothing
// to the local runtime (it runs commands), so setting it is refused at plan
// on the images attribute rather than silently ignored; nothing is created.
func TestAccPreviewEnvironment_local_imagesRefusedAtPlan(t *testing.T) {
	rt := localTestRuntime(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: localTestProviders(rt),
		Steps: []resource.TestStep{{
			Config: `provider "antifailure" {}` + "\n" + environmentBlock("this", "pr-1", `  images   = { web = "ghcr.io/acme/shop:pr-7" }`+"\n",
				localServiceManifest(t, "shop", "images-refused", "hello")),
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ExpectError:        regexp.MustCompile(`(?s)AF-RUN-082 images sets web, but the local runtime runs commands.*\d+:\s+images\s+=.*Next: Remove images.*Nothing was created`),
		}},
	})
}
