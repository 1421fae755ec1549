//go:build linux

package local

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/probe"
	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

// supervisor holds one environment: the egress gateway and the router on the
// host, and the namespace helper with the services inside. It is started
// detached (its own session) so it outlives terraform apply, and it serves
// the provider's later Read, Update and Delete on control.sock.
type supervisor struct {
	dir string // absolute; also the working directory
	exe string
	log *log.Logger

	mu       sync.Mutex // serialises up, update, status and down
	spec     envSpec
	state    stateFile
	gw       *egress.Gateway
	gwStop   context.CancelFunc
	gwDone   chan error
	router   *router
	routerLn net.Listener
	routerS  *http.Server
	ns       *nsHandle
	ctl      *http.Server
	stopped  chan struct{}
	stopOnce sync.Once
}

func runSupervisor() int {
	dir := os.Getenv("AF_LOCAL_STATE")
	logger := log.New(os.Stderr, "", log.LstdFlags|log.Lmicroseconds)
	if err := os.Chdir(dir); err != nil {
		logger.Printf("state directory: %v", err)
		return 1
	}
	resultF := os.NewFile(3, "result")
	exe, _ := os.Executable()
	s := &supervisor{dir: dir, exe: exe, log: logger, router: &router{}, stopped: make(chan struct{})}
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	var spec envSpec
	err := readJSON(fileSpec, &spec)
	var res result
	if err != nil {
		res.Refusal = refusal.New(StartFailed, "The local supervisor could not read its specification: %v", err)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), spec.ReadyTimeout+60*time.Second)
		st, ref := s.safeUp(ctx, spec)
		cancel()
		res = result{State: st, Refusal: ref}
	}
	if res.Refusal != nil {
		logger.Printf("refused: %s", res.Refusal.Error())
		s.down()
	}
	_ = json.NewEncoder(resultF).Encode(res)
	resultF.Close()
	if res.Refusal != nil {
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		logger.Printf("signalled: stopping")
		s.down()
	}()
	s.serveControl()
	logger.Printf("stopped")
	return 0
}

// safeUp is up, with a panic turned into a refusal: bad input must end in
// an error the provider can show, never in a supervisor that vanished.
func (s *supervisor) safeUp(ctx context.Context, spec envSpec) (st *stateFile, ref *refusal.Refusal) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Printf("panic: %v", p)
			st, ref = nil, startFailed("The local supervisor failed: %v", p)
		}
	}()
	return s.up(ctx, spec)
}

// up brings the environment up: gateway, router, namespace, probe, services.
// On a refusal the caller tears down.
func (s *supervisor) up(ctx context.Context, spec envSpec) (*stateFile, *refusal.Refusal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spec = spec
	s.log.Printf("starting %s (%d services)", spec.Key, len(spec.Services))
	for _, d := range []string{dirShare, dirLogs} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, startFailed("creating %s: %v", d, err)
		}
	}
	// The directory shared into the namespace must be reachable by the
	// unprivileged user services run as when isolation is root.
	_ = os.Chmod(dirShare, 0o711)
	if ref := s.startGateway(spec); ref != nil {
		return nil, ref
	}
	if ref := s.startRouter(spec); ref != nil {
		return nil, ref
	}

	ns, err := startNamespace(nsConfig{
		Exe: s.exe, Isolation: spec.Isolation, Share: filepath.Join(s.dir, dirShare),
		View: viewOf(spec), Log: openLog(fileHelperLog),
	})
	if err != nil {
		return nil, refusal.New(NoNamespace, "The local runtime could not make a network namespace for %s", spec.Key).
			WithDetail("%v", err)
	}
	s.ns = ns
	_ = writeJSON(fileHelper, procID{Pid: ns.Pid, Start: idOf(ns.Pid).Start, NetNS: ns.NetNS})
	s.log.Printf("namespace %s (helper pid %d, isolation %s, proxy 127.0.0.1:%d inside)", ns.NetNS, ns.Pid, ns.Isolation, ns.ProxyPort)
	for _, n := range ns.Notes {
		s.log.Printf("note: %s", n)
	}

	if len(spec.Prepare) > 0 {
		cmd := exec.CommandContext(ctx, spec.Prepare[0], spec.Prepare[1:]...)
		cmd.Env = append(os.Environ(), "AF_NS_PID="+strconv.Itoa(ns.Pid))
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, startFailed("preparing the namespace: %v: %s", err, out)
		}
	}

	// The control socket listens before the probe: the probe's last attempt
	// is a peer inside the environment asking it for an answer.
	if err := s.startControl(); err != nil {
		return nil, startFailed("The control socket could not listen: %v", err)
	}
	res, err := s.runProbe(ctx)
	if err != nil {
		return nil, refusal.New(probe.NoAttempts, "The containment probe could not run: %v", err).
			WithDetail("See %s.", filepath.Join(s.dir, fileHelperLog))
	}
	s.log.Printf("containment: %s in %s", res.Verdict, res.Duration.Round(time.Millisecond))
	for _, a := range res.Attempts {
		s.log.Printf("  %s", a)
	}
	if res.Verdict != probe.Contained {
		return nil, res.Refusal("")
	}
	s.state = stateFile{
		Key: spec.Key, App: spec.App, Env: spec.Env, Isolation: ns.Isolation,
		Supervisor: idOf(os.Getpid()), Helper: procID{Pid: ns.Pid, Start: idOf(ns.Pid).Start, NetNS: ns.NetNS},
		NetNS: ns.NetNS, RouterAddr: s.routerLn.Addr().String(), Containment: res, Notes: ns.Notes,
	}
	if ref := s.startServices(ctx, spec); ref != nil {
		return nil, ref
	}
	st := s.state
	return &st, nil
}

func startFailed(format string, args ...any) *refusal.Refusal {
	return refusal.New(StartFailed, format, args...)
}

func openLog(name string) *os.File {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	return f
}

// viewOf is the private view the environment's services get.
func viewOf(spec envSpec) viewConfig {
	v := viewConfig{Apps: map[string]string{}, Canary: os.Getuid() == 0, Weaken: spec.Weaken}
	for _, svc := range spec.Services {
		if svc.Dir != "" {
			v.Apps[svc.Name] = svc.Dir
		}
	}
	return v
}

// runProbe runs the network checks the provider chose and the sandbox checks
// against canaries opened for this run, the control last.
func (s *supervisor) runProbe(ctx context.Context) (probe.Result, error) {
	c, err := s.openCanaries(s.spec)
	if err != nil {
		return probe.Result{}, fmt.Errorf("opening the probe's canaries: %w", err)
	}
	defer c.close()
	req := s.spec.Probe
	req.Checks = nil
	for _, ch := range s.spec.Probe.Checks {
		if ch.Category == probe.Control {
			req.Checks = append(req.Checks, c.checks...)
			if ch.Target == "" {
				ch.Target = fmt.Sprintf("http://127.0.0.1:%d", s.ns.ProxyPort)
			}
		}
		req.Checks = append(req.Checks, ch)
	}
	res, err := s.ns.Probe(ctx, req)
	if err != nil {
		return res, err
	}
	c.judgeWrite(res.Attempts)
	peer, err := s.ns.call(ctx, nsRequest{Op: "peer"})
	if err != nil {
		return res, err
	}
	// Before the control, which the report lists last.
	last := len(res.Attempts) - 1
	attempts := append(append(append([]probe.Attempt(nil), res.Attempts[:last]...), peer.Attempts...), res.Attempts[last])
	return probe.Judge(attempts, res.Duration), nil
}

func (s *supervisor) gatewayConfig(spec envSpec) egress.Config {
	cfg := spec.Egress
	cfg.Environment = spec.Key
	cfg.CaptureFile = filepath.Join(s.dir, fileCaptures)
	cfg.AnswerAddrs = []string{"127.0.0.1"}
	return cfg
}

func (s *supervisor) startGateway(spec envSpec) *refusal.Refusal {
	g, err := egress.New(s.gatewayConfig(spec))
	if err != nil {
		return startFailed("The egress catalogue is not usable: %v", err)
	}
	if f := openLog(fileEgressLog); f != nil {
		g.Log = f
	}
	var l egress.Listeners
	for _, name := range []string{"gw.sock", "dns.sock"} {
		p := filepath.Join(dirShare, name)
		_ = os.Remove(p)
		ln, err := net.Listen("unix", p)
		if err != nil {
			l.Close()
			return startFailed("The egress gateway could not listen on %s: %v", p, err)
		}
		_ = os.Chmod(p, 0o666) // the namespace side may run as another user (isolation root)
		if name == "gw.sock" {
			l.HTTP = append(l.HTTP, ln)
		} else {
			l.DNSStream = append(l.DNSStream, ln)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.gw, s.gwStop, s.gwDone = g, cancel, make(chan error, 1)
	go func() { s.gwDone <- g.Serve(ctx, l) }()
	return nil
}

// preferredPort is a stable port per environment key, so that URLs survive a
// restart of the environment when the port is free.
func preferredPort(key string) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return 20000 + int(h.Sum32()%10000)
}

func (s *supervisor) startRouter(spec envSpec) *refusal.Refusal {
	port := spec.RouterPort
	if port == 0 {
		port = preferredPort(spec.Key)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return startFailed("The router could not listen on 127.0.0.1: %v", err)
	}
	s.routerLn = ln
	s.routerS = &http.Server{Handler: s.router, ReadHeaderTimeout: 15 * time.Second}
	go func() { _ = s.routerS.Serve(ln) }()
	return nil
}

// startServices (re)starts the services and waits until they are ready;
// it fills in s.state's services and URLs.
func (s *supervisor) startServices(ctx context.Context, spec envSpec) *refusal.Refusal {
	routes, urls := map[string]string{}, map[string]string{}
	port := s.routerLn.Addr().(*net.TCPAddr).Port
	for _, svc := range spec.Services {
		if svc.Web {
			host := routeFor(svc.Name, spec.Env)
			routes[host] = filepath.Join(dirShare, serviceSocket(svc.Name)) // relative: paths stay short
			urls[svc.Name] = fmt.Sprintf("http://%s:%d", host, port)
		}
	}
	s.router.set(routes)
	s.state.URLs, s.state.Services, s.state.Updated = urls, spec.Services, time.Now().UTC()
	_, err := s.ns.call(ctx, nsRequest{Op: "start", Start: &startRequest{
		App: spec.App, Env: spec.Env, BaseEnv: spec.BaseEnv,
		LogDir: dirLogs, Services: spec.Services,
	}})
	if err != nil {
		return startFailed("The services could not be started: %v", err)
	}
	if ref := s.waitReady(ctx, spec); ref != nil {
		return ref
	}
	if err := writeJSON(fileState, s.state); err != nil {
		return startFailed("Writing %s: %v", fileState, err)
	}
	s.log.Printf("ready: %v", urls)
	return nil
}

// waitReady waits until every service runs, every service with a port
// accepts connections, and every health path answers 2xx or 3xx.
func (s *supervisor) waitReady(ctx context.Context, spec envSpec) *refusal.Refusal {
	timeout := spec.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	for _, svc := range spec.Services {
		// A health path no request can carry would never answer: say so now.
		if _, err := http.NewRequest(http.MethodGet, "http://"+routeFor(svc.Name, spec.Env)+svc.Health, nil); svc.Health != "" && err != nil {
			return notReady(s.dir, svc.Name, fmt.Sprintf("its health path %q is not an HTTP path: %v", svc.Health, err))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	started := time.Now()
	why := map[string]string{}
	for {
		resp, err := s.ns.call(ctx, nsRequest{Op: "status"})
		if err != nil {
			return startFailed("The namespace helper stopped answering while the services started: %v", err)
		}
		ready := true
		for _, svc := range spec.Services {
			st := resp.Services[svc.Name]
			switch {
			case !st.Running:
				return notReady(s.dir, svc.Name, fmt.Sprintf("it %s", st.Exit))
			case svc.Port > 0 && !st.Listening:
				ready, why[svc.Name] = false, fmt.Sprintf("nothing listens on port %d", svc.Port)
			case svc.Health != "":
				if err := s.healthy(ctx, spec, svc); err != nil {
					ready, why[svc.Name] = false, err.Error()
				} else {
					delete(why, svc.Name)
				}
			default:
				delete(why, svc.Name)
			}
		}
		if ready && time.Since(started) >= 150*time.Millisecond {
			return nil
		}
		select {
		case <-ctx.Done():
			for name, w := range why {
				return notReady(s.dir, name, fmt.Sprintf("after %s, %s", timeout, w))
			}
			return notReady(s.dir, spec.Services[0].Name, "the wait ended: "+ctx.Err().Error())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (s *supervisor) healthy(ctx context.Context, spec envSpec, svc serviceSpec) error {
	c := &http.Client{Transport: unixTransport(filepath.Join(dirShare, serviceSocket(svc.Name))), Timeout: time.Second}
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+routeFor(svc.Name, spec.Env)+svc.Health, nil)
	if err != nil {
		return fmt.Errorf("health path %q: %w", svc.Health, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", svc.Health, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s answered %d", svc.Health, resp.StatusCode)
	}
	return nil
}

func notReady(dir, service, why string) *refusal.Refusal {
	logPath := filepath.Join(dir, dirLogs, service+".log")
	tail := ""
	if b, err := os.ReadFile(logPath); err == nil && len(b) > 0 {
		if len(b) > 1500 {
			b = b[len(b)-1500:]
		}
		tail = "\nEnd of its log:\n  " + strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", "\n  ")
	}
	return refusal.New(NotReady, "Service %s did not become ready: %s", service, why).
		WithDetail("Its log is %s.%s", logPath, tail)
}

// down stops everything the supervisor holds. The state directory is the
// provider's to remove.
func (s *supervisor) down() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.ns != nil {
			s.ns.Stop(context.Background())
		}
		if s.routerS != nil {
			_ = s.routerS.Close()
		}
		if s.gwStop != nil {
			s.gwStop()
			if err := <-s.gwDone; err != nil {
				s.log.Printf("egress gateway: %v", err)
			}
		}
		for _, p := range []string{fileControl, filepath.Join(dirShare, "gw.sock"), filepath.Join(dirShare, "dns.sock")} {
			_ = os.Remove(p)
		}
		close(s.stopped)
	})
}

// update applies a new specification in place: the catalogue reloads, the
// services restart with their new commands and environments.
func (s *supervisor) update(ctx context.Context, spec envSpec) result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ns == nil || !s.ns.Alive() || !maps.Equal(viewOf(spec).Apps, viewOf(s.spec).Apps) {
		// The view is fixed when the namespace is made: new application
		// directories need a new one.
		return result{Recreate: true}
	}
	if err := s.gw.Reload(s.gatewayConfig(spec)); err != nil {
		return result{Refusal: startFailed("The new egress catalogue is not usable: %v", err)}
	}
	s.spec = spec
	_ = writeJSON(fileSpec, spec)
	ctx, cancel := context.WithTimeout(ctx, spec.ReadyTimeout+30*time.Second)
	defer cancel()
	if ref := s.startServices(ctx, spec); ref != nil {
		return result{Refusal: ref}
	}
	s.log.Printf("updated")
	st := s.state
	return result{State: &st}
}
