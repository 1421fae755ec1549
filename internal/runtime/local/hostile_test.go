//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostileReport is what the hostile test service answers on /: the outcome
// of each way out it tried ("" = it worked), and what the gateway gave it.
type hostileReport struct {
	Tried      map[string]string `json:"tried"`
	MockStatus int               `json:"mock_status"`
	MockBody   string            `json:"mock_body"`
	UID        int               `json:"uid"`
	ListRoot   string            `json:"list_root"` // listing / : the view allows it, Landlock does not
	FillTmp    string            `json:"fill_tmp"`  // writing past viewTmpSize into /tmp: "" when it all fit
}

// runHostileService is a service that tries, on every request, each way out
// the issue found: a root-only host file and a world-readable one, a host
// Unix socket in /tmp, a neighbour's control socket (status and update),
// its state, signalling the neighbour's supervisor, writing into the
// Terraform working directory. It also does its honest work through the
// gateway, so a sandbox that blocks everything would show.
func runHostileService() {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		rep := hostileReport{Tried: hostileTries(os.Getenv), UID: os.Getuid(), ListRoot: "listed"}
		if _, err := os.ReadDir("/"); err != nil {
			rep.ListRoot = err.Error()
		}
		rep.FillTmp = fillTmp()
		c := &http.Client{Timeout: 5 * time.Second}
		if resp, err := c.Get("http://api.mock.test/quote"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rep.MockStatus, rep.MockBody = resp.StatusCode, string(b)
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
	srv := &http.Server{Addr: "127.0.0.1:" + os.Getenv("PORT"), Handler: mux}
	if err := srv.ListenAndServe(); err != nil {
		fmt.Fprintln(os.Stderr, "hostile service:", err)
		os.Exit(1)
	}
}

// hostileTries makes each attempt, with its targets from getenv, and says
// how each ended ("" = it worked).
func hostileTries(getenv func(string) string) map[string]string {
	tried := map[string]string{}
	try := func(name string, err error) {
		if err != nil {
			tried[name] = err.Error()
		} else {
			tried[name] = ""
		}
	}
	_, err := os.ReadFile(getenv("HOSTILE_SECRET"))
	try("read 0600 host file", err)
	_, err = os.ReadFile(getenv("HOSTILE_PUBLIC"))
	try("read 0644 host file", err)
	try("connect host socket in /tmp", dialOnce(getenv("HOSTILE_SOCKET")))
	ctl := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, getenv("HOSTILE_NEIGHBOUR_SOCKET"))
	}}}
	if resp, err := ctl.Get("http://supervisor/status"); err == nil {
		resp.Body.Close()
		try("neighbour GET /status", nil)
	} else {
		try("neighbour GET /status", err)
	}
	if resp, err := ctl.Post("http://supervisor/update", "application/json", strings.NewReader("not a specification")); err == nil {
		resp.Body.Close()
		try("neighbour POST /update", nil)
	} else {
		try("neighbour POST /update", err)
	}
	_, err = os.ReadFile(getenv("HOSTILE_NEIGHBOUR_SPEC"))
	try("read neighbour spec.json", err)
	pid, _ := strconv.Atoi(getenv("HOSTILE_NEIGHBOUR_PID"))
	err = syscall.Kill(pid, 0)
	if err == nil {
		if st, serr := procStart(pid); serr == nil && strconv.FormatUint(st, 10) != getenv("HOSTILE_NEIGHBOUR_START") {
			err = fmt.Errorf("pid %d here is another process", pid)
		}
	}
	try("signal neighbour supervisor", err)
	target := filepath.Join(getenv("HOSTILE_WORKDIR"), "hostile-was-here")
	try("write into the working directory", os.WriteFile(target, []byte("x"), 0o644))
	return tried
}

func dialOnce(path string) error {
	c, err := dialUnix(context.Background(), path)
	if err == nil {
		c.Close()
	}
	return err
}

// fillTmp writes one MiB more than the view's /tmp may hold, then removes
// it; it returns the write's error ("" when everything fit).
func fillTmp() string {
	f, err := os.Create("/tmp/fill")
	if err != nil {
		return err.Error()
	}
	defer os.Remove(f.Name())
	defer f.Close()
	mib := make([]byte, 1<<20)
	size, _ := strconv.Atoi(strings.TrimSuffix(viewTmpSize, "m"))
	for i := 0; i <= size; i++ {
		if _, err := f.Write(mib); err != nil {
			return err.Error()
		}
	}
	return ""
}
