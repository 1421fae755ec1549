//go:build linux

package local

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"time"
)

// statusReply is GET /status.
type statusReply struct {
	State       stateFile            `json:"state"`
	HelperAlive bool                 `json:"helper_alive"`
	Services    map[string]svcStatus `json:"services"`
}

// startControl listens on control.sock, admitting only the supervisor's own
// peers (peerListener), and serves the provider's Read, Update and Delete.
func (s *supervisor) startControl() error {
	_ = os.Remove(fileControl)
	raw, err := net.Listen("unix", fileControl)
	if err != nil {
		return err
	}
	ln := &peerListener{Listener: raw, log: s.log, uidOnly: s.spec.Weaken == WeakenPeer}
	mux := http.NewServeMux()
	// ping takes no lock: the probe's peer attempt asks it while up runs.
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("pong\n")) })
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		rep := statusReply{State: s.state, HelperAlive: s.ns != nil && s.ns.Alive(), Services: map[string]svcStatus{}}
		if rep.HelperAlive {
			resp, err := s.ns.call(r.Context(), nsRequest{Op: "status"})
			if err == nil {
				pids := hostPids(s.ns.Pid)
				for name, st := range resp.Services {
					st.HostPid = pids[st.Pid]
					rep.Services[name] = st
				}
			}
		}
		_ = json.NewEncoder(w).Encode(rep)
	})
	mux.HandleFunc("POST /update", func(w http.ResponseWriter, r *http.Request) {
		var spec envSpec
		if err := json.NewDecoder(r.Body).Decode(&spec); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(s.update(r.Context(), spec))
	})
	mux.HandleFunc("POST /stop", func(w http.ResponseWriter, r *http.Request) {
		s.down()
		_ = json.NewEncoder(w).Encode(map[string]bool{"stopped": true})
	})
	s.ctl = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.ctl.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Printf("control: %v", err)
			s.down()
		}
	}()
	return nil
}

// serveControl returns once the environment is stopped.
func (s *supervisor) serveControl() {
	<-s.stopped
	// Shutdown lets the stop request's answer reach the provider.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = s.ctl.Shutdown(ctx)
}
