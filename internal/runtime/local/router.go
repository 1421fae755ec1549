//go:build linux

package local

import (
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httputil"
	"sort"
	"strings"
	"sync"
	"time"
)

// router is the environment's front door on the host: it maps
// <service>-<env>.localhost to the web service's Unix socket, which the
// namespace helper bridges to the service's port inside.
type router struct {
	mu     sync.RWMutex
	routes map[string]*httputil.ReverseProxy // host (no port) → proxy
	hosts  []string
}

// routeFor is the host name a web service answers on.
func routeFor(service, env string) string { return service + "-" + env + ".localhost" }

// unixTransport dials one Unix socket whatever the request's address.
func unixTransport(sock string) *http.Transport {
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		MaxIdleConns:    16,
		IdleConnTimeout: 30 * time.Second,
	}
}

// set replaces the routes: host → socket path.
func (r *router) set(routes map[string]string) {
	m := map[string]*httputil.ReverseProxy{}
	var hosts []string
	for host, sock := range routes {
		m[host] = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = "http", pr.In.Host
				pr.Out.Host = pr.In.Host
				pr.SetXForwarded()
			},
			Transport: unixTransport(sock),
			ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
				http.Error(w, fmt.Sprintf("antifailure router: %s is not answering: %v", host, err), http.StatusBadGateway)
			},
		}
		hosts = append(hosts, host)
	}
	sort.Strings(hosts)
	r.mu.Lock()
	r.routes, r.hosts = m, hosts
	r.mu.Unlock()
}

func (r *router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	host := strings.ToLower(req.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	r.mu.RLock()
	p, hosts := r.routes[host], r.hosts
	r.mu.RUnlock()
	if p != nil {
		p.ServeHTTP(w, req)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, "<p>antifailure router: no web service answers on %s. This environment's services:</p><ul>", html.EscapeString(host))
	port := ""
	if _, p, err := net.SplitHostPort(req.Host); err == nil {
		port = ":" + p
	}
	for _, h := range hosts {
		fmt.Fprintf(w, `<li><a href="http://%s%s/">%s</a></li>`, h, port, h)
	}
	fmt.Fprint(w, "</ul>\n")
}
