//go:build linux

package local

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	goruntime "runtime"
	"strings"
	"testing"
	"time"
)

// The main goroutine keeps the process's first thread. Some tests enter
// another network namespace on a locked thread they then throw away; Go
// cannot end the first thread, so were it chosen it would stay in that
// namespace, and /proc/<pid>/ns/net — what the supervisor's peer check reads
// of this process — would name it: the host-side test client would then be
// refused as a peer inside an environment, at random.
func init() { goruntime.LockOSThread() }

// TestMain lets the test binary be what the provider binary is in
// production: the supervisor, namespace helper, exec shim and probe
// (MaybeRunHelper), and, for these tests, also a small web service.
func TestMain(m *testing.M) {
	if MaybeRunHelper() {
		return
	}
	switch os.Getenv("AF_TEST_SERVICE") {
	case "web":
		runTestService()
		return
	case "hostile":
		runHostileService()
		return
	case "dial":
		runControlDialer()
		return
	}
	os.Exit(m.Run())
}

// serviceReport is what the test web service answers on /: what it got from
// the gateway, and what it can see of its own confinement.
type serviceReport struct {
	Greeting      string   `json:"greeting"`
	MockStatus    int      `json:"mock_status"`
	MockBody      string   `json:"mock_body"`
	CaptureStatus int      `json:"capture_status"`
	RefusedStatus int      `json:"refused_status"`
	RefusedBody   string   `json:"refused_body"`
	Resolved      []string `json:"resolved"`
	ResolveErr    string   `json:"resolve_err,omitempty"`
	UID           int      `json:"uid"`
	CapEff        string   `json:"cap_eff"`
	CapBnd        string   `json:"cap_bnd"`
	NoNewPrivs    string   `json:"no_new_privs"`
	RunEntries    []string `json:"run_entries"`
	Env           []string `json:"env"`
}

func runTestService() {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rep := serviceReport{Greeting: os.Getenv("GREETING"), UID: os.Getuid(), Env: os.Environ()}
		c := &http.Client{Timeout: 5 * time.Second} // HTTP_PROXY from the environment
		if resp, err := c.Get("http://api.mock.test/quote"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rep.MockStatus, rep.MockBody = resp.StatusCode, string(b)
		}
		req, _ := http.NewRequest(http.MethodPost, "http://hooks.capture.test/notify", strings.NewReader(`{"order":42}`))
		req.Header.Set("Authorization", "Bearer service-secret")
		req.Header.Set("Content-Type", "application/json")
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			rep.CaptureStatus = resp.StatusCode
		}
		if resp, err := c.Get("http://not-listed.test/"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rep.RefusedStatus, rep.RefusedBody = resp.StatusCode, string(b)
		}
		rep.Resolved, _ = net.LookupHost("api.mock.test")
		if _, err := net.LookupHost("example.com"); err == nil {
			rep.ResolveErr = "example.com resolved"
		}
		if b, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Fields(line)
				if len(f) == 2 {
					switch f[0] {
					case "CapEff:":
						rep.CapEff = f[1]
					case "CapBnd:":
						rep.CapBnd = f[1]
					case "NoNewPrivs:":
						rep.NoNewPrivs = f[1]
					}
				}
			}
		}
		ents, _ := os.ReadDir("/run")
		for _, e := range ents {
			rep.RunEntries = append(rep.RunEntries, e.Name())
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
	srv := &http.Server{Addr: "127.0.0.1:" + os.Getenv("PORT"), Handler: mux}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "test service:", err)
		os.Exit(1)
	}
}
