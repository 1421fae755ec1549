package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Listeners are the sockets a gateway serves on. Any may be a Unix socket.
type Listeners struct {
	HTTP      []net.Listener   // the proxy
	DNSPacket []net.PacketConn // DNS over UDP
	DNSStream []net.Listener   // DNS over TCP (or a Unix stream socket, same framing)
}

// Addrs names listeners to open: "host:port" for TCP (and, under DNS, UDP as
// well), or "unix:/path" for a Unix stream socket.
type Addrs struct {
	HTTP []string `json:"http,omitempty"`
	DNS  []string `json:"dns,omitempty"`
}

// Listen opens the listeners a names. On error it closes what it opened.
func Listen(a Addrs) (Listeners, error) {
	var l Listeners
	fail := func(err error) (Listeners, error) { l.Close(); return Listeners{}, err }
	for _, s := range a.HTTP {
		ln, err := listenStream(s)
		if err != nil {
			return fail(err)
		}
		l.HTTP = append(l.HTTP, ln)
	}
	for _, s := range a.DNS {
		ln, err := listenStream(s)
		if err != nil {
			return fail(err)
		}
		l.DNSStream = append(l.DNSStream, ln)
		if !strings.HasPrefix(s, "unix:") {
			pc, err := net.ListenPacket("udp", s)
			if err != nil {
				return fail(err)
			}
			l.DNSPacket = append(l.DNSPacket, pc)
		}
	}
	return l, nil
}

func listenStream(s string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		return net.Listen("unix", path)
	}
	return net.Listen("tcp", s)
}

// Close closes every listener.
func (l Listeners) Close() {
	for _, x := range l.HTTP {
		x.Close()
	}
	for _, x := range l.DNSPacket {
		x.Close()
	}
	for _, x := range l.DNSStream {
		x.Close()
	}
}

// Serve runs a gateway for cfg on l until ctx is done: the entry point for a
// gateway process or container (read cfg with LoadConfig, open l with Listen).
func Serve(ctx context.Context, cfg Config, l Listeners) error {
	g, err := New(cfg)
	if err != nil {
		l.Close()
		return err
	}
	return g.Serve(ctx, l)
}

// Serve runs the gateway on l until ctx is done (then it returns nil) or a
// listener fails. It closes l before returning.
func (g *Gateway) Serve(ctx context.Context, l Listeners) error {
	if len(l.HTTP)+len(l.DNSPacket)+len(l.DNSStream) == 0 {
		return errors.New("egress: no listeners")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		if err != nil && ctx.Err() == nil {
			errOnce.Do(func() { firstErr = err })
		}
		cancel()
	}
	hs := &http.Server{Handler: g, ReadHeaderTimeout: 15 * time.Second}
	for _, ln := range l.HTTP {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				fail(fmt.Errorf("egress proxy on %s: %w", ln.Addr(), err))
			}
		}()
	}
	var servers []*dns.Server
	for _, pc := range l.DNSPacket {
		servers = append(servers, &dns.Server{PacketConn: pc, Handler: g})
	}
	for _, ln := range l.DNSStream {
		servers = append(servers, &dns.Server{Listener: ln, Handler: g})
	}
	for _, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.ActivateAndServe(); err != nil {
				fail(fmt.Errorf("egress DNS: %w", err))
			}
		}()
	}
	<-ctx.Done()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	// Closing the sockets ends every DNS server, started or not yet.
	l.Close()
	wg.Wait()
	g.Close()
	return firstErr
}

func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
}
