//go:build linux

// Package local is the local runtime (runtime.provider: local): an
// environment runs as local processes, each service's command (argv, no
// shell), inside its own network namespace that holds only loopback.
//
// Layout of one environment, ID "<app>/<env>":
//
//	provider (terraform) ──exec, setsid──▶ supervisor (host; outlives apply)
//	                                         ├─ egress gateway on ns/gw.sock, ns/dns.sock
//	                                         ├─ router on 127.0.0.1:<port>: <svc>-<env>.localhost → ns/svc-<svc>.sock
//	                                         ├─ control.sock (Read, Update, Delete)
//	                                         └─ namespace helper = PID 1 of new user+net+mount+PID namespaces
//	                                              ├─ lo up; 127.0.0.1:<p> → gw.sock; 127.0.0.1:53 → dns.sock
//	                                              ├─ pivot into a private view (sandbox.go): system dirs and
//	                                              │  services' dirs read-only, private /tmp /dev, fresh /proc
//	                                              ├─ containment probe (exec shim, same rules as services)
//	                                              └─ services (exec shim: no capabilities, no_new_privs,
//	                                                 Landlock; nobody when the provider is root),
//	                                                 HTTP_PROXY/HTTPS_PROXY = the gateway
//
// The namespaces are rootless (a user namespace) where the kernel permits;
// as root, where it does not, they are made with root's privilege and the
// services run as an unprivileged user. Where neither is possible, or off
// Linux, Check and Create refuse (AF-RUN-070): never an uncontained
// environment.
//
// State lives in $XDG_STATE_HOME/antifailure/local/apps/<app>/<env> (default
// ~/.local/state/...; StateDir): spec.json, state.json (URLs, pids, containment),
// supervisor.log, helper.log, egress.log, captures.jsonl, logs/<service>.log.
// Delete stops everything and removes the directory; nothing is left.
//
// The provider binary must call MaybeRunHelper first thing in main.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime"
)

// Codes the local runtime refuses with.
var (
	NoNamespace     = refusal.Register("AF-RUN-070", "The local runtime cannot make a network namespace on this machine, so it cannot contain an environment.", "Run on Linux with user namespaces enabled (user.max_user_namespaces above 0; on Ubuntu also kernel.apparmor_restrict_unprivileged_userns=0), or run Terraform as root. Antifailure never starts an uncontained environment.")
	CommandNotFound = refusal.Register("AF-RUN-071", "A service's command cannot be found or is not executable.", "Fix the service's command in the manifest (argv, no shell): a relative path is relative to the service's dir, a bare name must be found in PATH within the system directories, and any other program must be inside dir.")
	StartFailed     = refusal.Register("AF-RUN-072", "The local environment could not be started.", "Read the supervisor and helper logs in the environment's state directory, fix the cause, then apply again.")
	NotReady        = refusal.Register("AF-RUN-073", "A service of the local environment did not become ready.", "Read the service's log named in the message; check its command, port and health path.")
	AlreadyRunning  = refusal.Register("AF-RUN-074", "An environment with this name already runs on this machine.", "Import it (terraform import with its ID <app>/<env>) or destroy it, then apply again.")
	StopFailed      = refusal.Register("AF-RUN-075", "The local environment could not be stopped completely.", "Stop the processes named in the message by hand, remove the state directory, then run the command again.")
)

// DefaultReadyTimeout bounds the wait for services to become ready.
const DefaultReadyTimeout = 60 * time.Second

// Runtime is the local runtime.
type Runtime struct {
	opts Options

	checkOnce sync.Once
	checkErr  error
}

// New makes a local runtime.
func New(opts Options) *Runtime {
	if opts.StateBase == "" {
		opts.StateBase = DefaultStateBase()
	}
	return &Runtime{opts: opts}
}

var _ runtime.Runtime = (*Runtime)(nil)

func (r *Runtime) exe() (string, error) {
	if r.opts.Executable != "" {
		return r.opts.Executable, nil
	}
	return os.Executable()
}

// Check refuses what can be told without starting anything: not Linux, no
// way to make a namespace here, a service command that does not exist.
func (r *Runtime) Check(env runtime.Environment) error {
	if env.Manifest == nil {
		return refusal.New(refusal.Internal, "local runtime: no manifest")
	}
	if err := r.canIsolate(); err != nil {
		return err
	}
	dir, err := r.workDir()
	if err != nil {
		return refusal.New(StartFailed, "The local runtime cannot tell its working directory: %v", err)
	}
	var errs refusal.List
	if len(env.Images) > 0 {
		names := slices.Sorted(maps.Keys(env.Images))
		rf := refusal.New(NoImages, "images sets %s, but the local runtime runs commands, not images", strings.Join(names, ", "))
		rf.Attribute = "images"
		errs = append(errs, rf)
	}
	for _, s := range env.Manifest.Services {
		if len(s.Command) == 0 {
			errs = append(errs, refusal.New(CommandNotFound, "Service %s has no command for the local runtime", s.Name).At(s.Pos.Line, s.Pos.Column))
			continue
		}
		if err := r.checkDir(s.Dir, dir); err != nil {
			errs = append(errs, refusal.New(BadDir, "Service %s: dir %q %v", s.Name, s.Dir, err).At(s.Pos.Line, s.Pos.Column))
			continue
		}
		spec := serviceSpec{Name: s.Name, Command: s.Command, Dir: appDir(s.Dir, dir)}
		if err := commandVisible(spec); err != nil {
			errs = append(errs, refusal.New(CommandNotFound, "Service %s: command %q %v", s.Name, s.Command[0], err).At(s.Pos.Line, s.Pos.Column).
				WithDetail("Commands run without a shell, inside the service's private view: the system directories (%s) and its dir at %s/%s; a relative command is relative to dir. PATH=%s.",
					strings.Join(systemDirs, " "), appRoot, s.Name, os.Getenv("PATH")))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

func (r *Runtime) workDir() (string, error) {
	if r.opts.WorkDir != "" {
		return filepath.Abs(r.opts.WorkDir)
	}
	return os.Getwd()
}

// canIsolate makes (once per process) a throwaway namespace the way Create
// will, to refuse at plan time where that is impossible.
func (r *Runtime) canIsolate() error {
	r.checkOnce.Do(func() {
		if goruntime.GOOS != "linux" {
			r.checkErr = refusal.New(NoNamespace, "The local runtime needs Linux network namespaces; this is %s", goruntime.GOOS)
			return
		}
		if _, err := os.Stat("/proc/self/ns/net"); err != nil {
			r.checkErr = refusal.New(NoNamespace, "This kernel has no network namespaces (%v)", err)
			return
		}
		exe, err := r.exe()
		if err != nil {
			r.checkErr = refusal.New(NoNamespace, "The local runtime cannot find its own executable to start a namespace helper: %v", err)
			return
		}
		var why []string
		for _, m := range isolationModes(r.opts.Isolation) {
			cmd := exec.Command(exe)
			cmd.Env = append(minimalEnv(), helperEnv+"="+modeCheck)
			cmd.SysProcAttr = cloneAttr(m, "")
			cmd.SysProcAttr.Pdeathsig = 0
			err := cmd.Run()
			if err == nil {
				return
			}
			why = append(why, fmt.Sprintf("%s: %v", describeIsolation(m), err))
		}
		if os.Geteuid() != 0 {
			why = append(why, "root: not running as root")
		}
		r.checkErr = refusal.New(NoNamespace, "The local runtime cannot make a network namespace here, so it will not start the environment").
			WithDetail("Tried:\n  %s", strings.Join(why, "\n  "))
	})
	return r.checkErr
}

func describeIsolation(m string) string {
	if m == IsolationRoot {
		return "network namespace as root"
	}
	return "user + network namespace (rootless)"
}

// spec turns an environment into what the supervisor runs.
func (r *Runtime) spec(env runtime.Environment, routerPort int) (envSpec, error) {
	dir, err := r.workDir()
	if err != nil {
		return envSpec{}, err
	}
	ready := r.opts.ReadyTimeout
	if ready <= 0 {
		ready = DefaultReadyTimeout
	}
	sp := envSpec{
		Key: runtime.KeyOf(env).LocalID(), App: env.Manifest.Name, Env: env.Name, Dir: dir, Manifest: env.Source,
		BaseEnv: minimalEnv(), Egress: egress.FromManifest(env.Manifest),
		Probe:     ProbeRequest{Checks: r.opts.Probe.Checks(), Timeout: r.opts.Probe.timeout()},
		Isolation: r.opts.Isolation, RouterPort: routerPort, ReadyTimeout: ready,
		Prepare: r.opts.PrepareNamespace, StateBase: r.opts.StateBase, Weaken: r.opts.WeakenForTest,
	}
	for _, s := range env.Manifest.Services {
		sp.Services = append(sp.Services, serviceSpec{Name: s.Name, Command: s.Command, Port: s.Port, Web: s.Web, Env: s.Env, Health: s.Health,
			Dir: appDir(s.Dir, dir)})
	}
	return sp, nil
}

// Create brings the environment up. It refuses, and leaves nothing behind,
// when the namespace cannot be made, the probe finds a way out or cannot
// reach the gateway, or a service does not become ready.
func (r *Runtime) Create(ctx context.Context, env runtime.Environment) (runtime.State, error) {
	if err := r.Check(env); err != nil {
		return runtime.State{}, err
	}
	sp, err := r.spec(env, 0)
	if err != nil {
		return runtime.State{}, err
	}
	return r.create(ctx, sp)
}

func (r *Runtime) create(ctx context.Context, sp envSpec) (runtime.State, error) {
	k := runtime.Key{App: sp.App, Env: sp.Env}
	dir := r.StateDir(k)
	if legacy := r.legacyStateDir(k); dir != legacy {
		if got, ok := owner(legacy); ok && got == k {
			return runtime.State{}, refusal.New(AlreadyRunning, "Environment %s already exists on this machine, in %s (where earlier releases kept it)", k, legacy).
				WithDetail("It was left as it is.")
		}
	}
	if _, err := os.Stat(dir); err == nil {
		if got, ok := owner(dir); ok && got != k {
			return runtime.State{}, refusal.New(OtherPair, "The state directory %s belongs to %s, not to %s", dir, got, k).
				WithDetail("It was left as it is.")
		}
		var sup procID
		if readJSON(filepath.Join(dir, fileSupervisor), &sup) == nil && sup.Alive() {
			return runtime.State{}, refusal.New(AlreadyRunning, "Environment %s already runs on this machine (supervisor pid %d)", sp.Key, sup.Pid).
				WithDetail("Its state is in %s.", dir)
		}
		// What is left of an environment whose supervisor is gone.
		if err := r.teardown(ctx, dir); err != nil {
			return runtime.State{}, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return runtime.State{}, refusal.New(StartFailed, "Creating the state directory %s: %v", dir, err)
	}
	res, err := r.startSupervisor(ctx, dir, sp)
	if err == nil && res.Refusal == nil && res.State != nil {
		return r.toState(*res.State, nil, sp.Manifest), nil
	}
	// Nothing may stay behind a refused start.
	terr := r.teardown(context.Background(), dir)
	var ref *refusal.Refusal
	switch {
	case err != nil:
		ref = refusal.New(StartFailed, "The local supervisor for %s did not start: %v", sp.Key, err)
	case res.Refusal != nil:
		ref = res.Refusal
	default:
		ref = refusal.New(StartFailed, "The local supervisor for %s reported nothing", sp.Key)
	}
	if terr != nil {
		ref.Created = "Stopping what was started failed too: " + terr.Error()
	} else {
		ref.Created = "What was started (namespace, gateway, router, state directory) was removed; nothing is left."
	}
	return runtime.State{}, ref
}

// startSupervisor starts the detached supervisor and waits for its report.
func (r *Runtime) startSupervisor(ctx context.Context, dir string, sp envSpec) (result, error) {
	exe, err := r.exe()
	if err != nil {
		return result{}, err
	}
	if err := writeJSON(filepath.Join(dir, fileSpec), sp); err != nil {
		return result{}, err
	}
	logF, err := os.OpenFile(filepath.Join(dir, fileSupLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return result{}, err
	}
	defer logF.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return result{}, err
	}
	defer pr.Close()
	cmd := exec.Command(exe)
	cmd.Dir = dir
	cmd.Env = append(minimalEnv(), helperEnv+"="+modeSupervisor, "AF_LOCAL_STATE="+dir)
	cmd.Stdout, cmd.Stderr = logF, logF
	cmd.ExtraFiles = []*os.File{pw}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return result{}, err
	}
	go func() { _ = cmd.Wait() }() // reap it if it ends while we still run
	if err := writeJSON(filepath.Join(dir, fileSupervisor), idOf(cmd.Process.Pid)); err != nil {
		_ = cmd.Process.Kill() // teardown could not find it without the file
		return result{}, err
	}
	got := make(chan error, 1)
	var res result
	go func() { got <- json.NewDecoder(pr).Decode(&res) }()
	select {
	case err := <-got:
		if err != nil {
			b, _ := os.ReadFile(filepath.Join(dir, fileSupLog))
			return result{}, fmt.Errorf("no report (%w); its log:\n%s", err, strings.TrimSpace(string(b)))
		}
		return res, nil
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
}

// control is a client for an environment's supervisor.
func control(dir string, timeout time.Duration) *http.Client {
	sock := filepath.Join(dir, fileControl)
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialUnix(ctx, sock)
		},
	}}
}

// dialUnix dials a socket whose path may be longer than sockaddr_un allows,
// through /proc/self/fd of its directory.
func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	if len(path) < 100 {
		return d.DialContext(ctx, "unix", path)
	}
	dirF, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer dirF.Close()
	return d.DialContext(ctx, "unix", fmt.Sprintf("/proc/self/fd/%d/%s", dirF.Fd(), filepath.Base(path)))
}

func (r *Runtime) status(ctx context.Context, dir string) (*statusReply, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://supervisor/status", nil)
	resp, err := control(dir, 5*time.Second).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var rep statusReply
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// Read observes the environment: ErrNotFound when its state is gone; each
// service Running only while its process runs (a killed service is drift).
func (r *Runtime) Read(ctx context.Context, ref runtime.Ref) (runtime.State, error) {
	dir, err := r.locate(ref)
	if err != nil {
		return runtime.State{}, err
	}
	var st stateFile
	var sp envSpec
	_ = readJSON(filepath.Join(dir, fileSpec), &sp) // only the manifest text, which an earlier release did not keep
	if err := readJSON(filepath.Join(dir, fileState), &st); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return runtime.State{}, runtime.ErrNotFound
		}
		return runtime.State{}, fmt.Errorf("reading %s: %w", filepath.Join(dir, fileState), err)
	}
	rep, err := r.status(ctx, dir)
	if err != nil {
		// The supervisor is gone: the environment exists on disk only, and
		// nothing in it runs. That is drift, for the next apply to repair.
		return r.toState(st, map[string]svcStatus{}, sp.Manifest), nil
	}
	return r.toState(rep.State, rep.Services, sp.Manifest), nil
}

// toState converts; live is nil when every service is known to run (just
// started), else the observed status; manifestText is the manifest the
// environment runs (spec.json).
func (r *Runtime) toState(st stateFile, live map[string]svcStatus, manifestText string) runtime.State {
	k := runtime.Key{App: st.App, Env: st.Env}
	out := runtime.State{
		Ref: runtime.Ref{ID: k.LocalID()}, Namespace: k.LocalID(), URLs: map[string]string{}, Source: manifestText,
		Services: map[string]runtime.ServiceState{}, Containment: st.Containment,
	}
	for k, v := range st.URLs {
		out.URLs[k] = v
	}
	for _, s := range st.Services {
		running := true
		if live != nil {
			running = live[s.Name].Running
		}
		env := map[string]string{}
		for k, v := range s.Env {
			env[k] = v
		}
		out.Services[s.Name] = runtime.ServiceState{Command: append([]string(nil), s.Command...), Env: env, Replicas: 1, Running: running}
	}
	return out
}

// Update restarts the services with the new commands and environments (and
// reloads the egress catalogue) in the running namespace. When the
// supervisor or the namespace is gone it starts the environment afresh,
// probe first.
func (r *Runtime) Update(ctx context.Context, env runtime.Environment, ref runtime.Ref) (runtime.State, error) {
	if err := r.Check(env); err != nil {
		return runtime.State{}, err
	}
	dir, err := r.locate(ref)
	if errors.Is(err, runtime.ErrNotFound) {
		dir, err = r.StateDir(runtime.KeyOf(env)), nil
	}
	if err != nil {
		return runtime.State{}, err
	}
	var old stateFile
	_ = readJSON(filepath.Join(dir, fileState), &old)
	port := 0
	if ap, err := netip.ParseAddrPort(old.RouterAddr); err == nil {
		port = int(ap.Port())
	}
	sp, err := r.spec(env, port)
	if err != nil {
		return runtime.State{}, err
	}
	body, _ := json.Marshal(sp)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://supervisor/update", strings.NewReader(string(body)))
	resp, err := control(dir, sp.ReadyTimeout+45*time.Second).Do(req)
	if err == nil {
		var res result
		derr := json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		switch {
		case derr != nil:
			return runtime.State{}, refusal.New(StartFailed, "The local supervisor for %s gave an unreadable answer: %v", ref.ID, derr)
		case res.Refusal != nil:
			return runtime.State{}, res.Refusal
		case res.State != nil:
			return r.toState(*res.State, nil, sp.Manifest), nil
		}
	}
	// No supervisor, or no namespace: start afresh.
	if err := r.teardown(ctx, dir); err != nil {
		return runtime.State{}, err
	}
	return r.create(ctx, sp)
}

// Delete stops everything and removes the state directory. It returns only
// when no process of the environment runs and its network namespace is gone.
func (r *Runtime) Delete(ctx context.Context, ref runtime.Ref) error {
	dir, err := r.locate(ref)
	if errors.Is(err, runtime.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	return r.teardown(ctx, dir)
}

func (r *Runtime) teardown(ctx context.Context, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var sup, helper procID
	_ = readJSON(filepath.Join(dir, fileSupervisor), &sup)
	_ = readJSON(filepath.Join(dir, fileHelper), &helper)
	if sup.Alive() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		req, _ := http.NewRequestWithContext(sctx, http.MethodPost, "http://supervisor/stop", nil)
		if resp, err := control(dir, 20*time.Second).Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cancel()
		sup.kill(5 * time.Second)
	}
	// The helper is PID 1 of the environment's PID namespace: when it ends,
	// the kernel ends every service with it.
	helper.kill(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for netnsInUse(helper.NetNS) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	var left []string
	if sup.Alive() {
		left = append(left, fmt.Sprintf("supervisor pid %d", sup.Pid))
	}
	if helper.Alive() {
		left = append(left, fmt.Sprintf("namespace helper pid %d", helper.Pid))
	}
	if netnsInUse(helper.NetNS) {
		left = append(left, "processes in network namespace "+helper.NetNS)
	}
	if len(left) > 0 {
		return refusal.New(StopFailed, "The local environment in %s did not stop completely: %s still run", dir, strings.Join(left, ", "))
	}
	if err := os.RemoveAll(dir); err != nil {
		return refusal.New(StopFailed, "Removing %s: %v", dir, err)
	}
	return nil
}
