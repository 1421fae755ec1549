//go:build linux

package local

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// Files in an environment's state directory.
const (
	fileSpec       = "spec.json"       // what the provider asked for
	fileState      = "state.json"      // what the supervisor runs
	fileSupervisor = "supervisor.json" // the supervisor's pid, written by the provider
	fileHelper     = "helper.json"     // the namespace helper's pid, written by the supervisor
	fileControl    = "control.sock"    // the supervisor's API
	fileCaptures   = "captures.jsonl"  // captured egress calls
	fileEgressLog  = "egress.log"      // every gateway decision
	fileSupLog     = "supervisor.log"
	fileHelperLog  = "helper.log"
	dirShare       = "ns"   // shared with the namespace: gw.sock, dns.sock, resolv.conf, svc-*.sock
	dirLogs        = "logs" // one log per service
)

// envSpec is everything the supervisor needs to run one environment.
type envSpec struct {
	Key          string        `json:"key"`
	App          string        `json:"app"`
	Env          string        `json:"env"`
	Dir          string        `json:"dir"`        // the Terraform working directory, which no service sees
	StateBase    string        `json:"state_base"` // every environment's state directory is below it
	BaseEnv      []string      `json:"base_env"`
	Services     []serviceSpec `json:"services"`
	Egress       egress.Config `json:"egress"`
	Probe        ProbeRequest  `json:"probe"` // a control check with an empty target means this environment's gateway
	Isolation    string        `json:"isolation,omitempty"`
	Weaken       string        `json:"weaken,omitempty"`      // test-only, see WeakenUID
	RouterPort   int           `json:"router_port,omitempty"` // preferred
	ReadyTimeout time.Duration `json:"ready_timeout"`
	Prepare      []string      `json:"prepare,omitempty"`
	// Manifest is the manifest text the environment runs, for an import to
	// record (runtime.State.Source); the supervisor does not read it.
	Manifest string `json:"manifest,omitempty"`
}

// serviceSpec is one service as the local runtime runs it.
type serviceSpec struct {
	Name    string            `json:"name"`
	Command []string          `json:"command"`
	Port    int               `json:"port,omitempty"`
	Web     bool              `json:"web,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Health  string            `json:"health,omitempty"`
	Dir     string            `json:"dir,omitempty"` // the application directory on the host, bound read-only
}

// stateFile is state.json: what runs, where, and the containment proof.
type stateFile struct {
	Key         string            `json:"key"`
	App         string            `json:"app"`
	Env         string            `json:"env"`
	Isolation   string            `json:"isolation"`
	Supervisor  procID            `json:"supervisor"`
	Helper      procID            `json:"helper"`
	NetNS       string            `json:"netns"`
	RouterAddr  string            `json:"router_addr"`
	URLs        map[string]string `json:"urls"`
	Services    []serviceSpec     `json:"services"`
	Containment probe.Result      `json:"containment"`
	Notes       []string          `json:"notes,omitempty"`
	Updated     time.Time         `json:"updated"`
}

// result is what the supervisor reports for a start or an update.
type result struct {
	State   *stateFile       `json:"state,omitempty"`
	Refusal *refusal.Refusal `json:"refusal,omitempty"`
	// Recreate: the namespace is gone, so an update must start afresh.
	Recreate bool `json:"recreate,omitempty"`
}

// procID names a process so that a recycled pid is never mistaken for it.
type procID struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"` // /proc/<pid>/stat starttime
	NetNS string `json:"netns,omitempty"`
}

func idOf(pid int) procID {
	start, _ := procStart(pid)
	return procID{Pid: pid, Start: start}
}

// Alive reports whether the process still runs (a zombie does not).
func (p procID) Alive() bool {
	if p.Pid <= 0 {
		return false
	}
	start, state, err := procStat(p.Pid)
	return err == nil && start == p.Start && state != 'Z' && state != 'X'
}

func procStart(pid int) (uint64, error) {
	start, _, err := procStat(pid)
	return start, err
}

func procStat(pid int) (uint64, byte, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("unreadable /proc/%d/stat", pid)
	}
	start, err := strconv.ParseUint(f[19], 10, 64) // field 22 overall
	return start, f[0][0], err
}

// kill ends the process if it is still the one named, waiting up to grace
// after SIGTERM before SIGKILL.
func (p procID) kill(grace time.Duration) {
	if !p.Alive() {
		return
	}
	_ = syscall.Kill(p.Pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for p.Alive() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if p.Alive() {
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
		for i := 0; i < 100 && p.Alive(); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// netnsInUse reports whether any process is still in the network namespace
// ns ("net:[inode]").
func netnsInUse(ns string) bool {
	if ns == "" {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/net"); err == nil && l == ns {
			return true
		}
	}
	return false
}

// hostPids maps pids inside the PID namespace of helper to host pids.
func hostPids(helper int) map[int]int {
	out := map[int]int{}
	pidns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", helper))
	if err != nil {
		return out
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/" + e.Name() + "/ns/pid"); err != nil || l != pidns {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
				f := strings.Fields(rest)
				if len(f) >= 2 {
					host, _ := strconv.Atoi(f[0])
					inner, _ := strconv.Atoi(f[len(f)-1])
					out[inner] = host
				}
			}
		}
	}
	return out
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// DefaultStateBase is $XDG_STATE_HOME/antifailure/local, or
// ~/.local/state/antifailure/local.
func DefaultStateBase() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "antifailure", "local")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "antifailure", "local")
}

// OtherPair refuses a state directory that belongs to another
// application/environment pair: the runtime never adopts, imports or deletes
// it.
var OtherPair = refusal.Register("AF-RUN-090",
	"The local state directory belongs to another application/environment pair.",
	"Leave it alone: it is another environment's. Check the ID's <app>/<env>; the directory's state.json names its owner.")

// dirApps holds the state directories, one per application, one below it
// per environment: <StateBase>/apps/<app>/<env>. The level "apps" keeps them
// apart from the flat <StateBase>/<app>-<env> directories of earlier
// releases (those names always hold a hyphen, "apps" none), so that no
// environment's directory can sit inside an old one's.
const dirApps = "apps"

// StateDir is where the environment with key k keeps its state.
func (r *Runtime) StateDir(k runtime.Key) string {
	return filepath.Join(r.opts.StateBase, dirApps, k.App, k.Env)
}

// legacyStateDir is where an earlier release kept the environment:
// <StateBase>/<app>-<env>, a name two pairs can share. It is this pair's
// only when its own files say so.
func (r *Runtime) legacyStateDir(k runtime.Key) string {
	return filepath.Join(r.opts.StateBase, k.App+"-"+k.Env)
}

// Planned is the environment's ID (<app>/<env>) and namespace (the same
// key); its URLs carry the router's port, chosen at apply.
func (r *Runtime) Planned(env runtime.Environment) runtime.State {
	k := runtime.KeyOf(env)
	return runtime.State{Ref: runtime.Ref{ID: k.LocalID()}, Namespace: k.LocalID()}
}

// owner is the pair a state directory's own files name (state.json, or
// spec.json when the environment never finished starting); ok is false when
// neither is readable.
func owner(dir string) (k runtime.Key, ok bool) {
	for _, f := range []string{fileState, fileSpec} {
		var names struct{ App, Env string }
		if readJSON(filepath.Join(dir, f), &names) == nil && names.App != "" {
			return runtime.Key{App: names.App, Env: names.Env}, true
		}
	}
	return runtime.Key{}, false
}

// locate is the state directory of the environment an ID names: its own
// directory, or the legacy one when that is this pair's. ErrNotFound when
// there is neither; OtherPair when its own directory names another pair.
func (r *Runtime) locate(ref runtime.Ref) (string, error) {
	k, err := runtime.ParseLocalID(ref.ID)
	if err != nil {
		return "", refusal.New(BadID, "%v", err).OnAttribute("id")
	}
	dir := r.StateDir(k)
	if _, err := os.Stat(dir); err == nil {
		if got, ok := owner(dir); ok && got != k {
			return "", refusal.New(OtherPair, "The state directory %s belongs to %s, not to %s", dir, got, k).
				WithDetail("The local runtime never adopts, imports or deletes another pair's environment; it was left as it is.").
				OnAttribute("id")
		}
		return dir, nil
	}
	legacy := r.legacyStateDir(k)
	if got, ok := owner(legacy); ok && got == k {
		return legacy, nil
	}
	return "", runtime.ErrNotFound
}

// BadID refuses an ID that is not <app>/<env>.
var BadID = refusal.Register("AF-RUN-091",
	"The local environment ID is not <app>/<env>.",
	"Import with an ID such as shop/pr-42: the manifest's name and the environment's name.")
