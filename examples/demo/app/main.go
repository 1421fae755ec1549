// Command demo-app is the small web service `make demo` runs in a local
// preview environment. On every request to / it calls three hosts through
// the environment's egress gateway (HTTP_PROXY, set by the runtime):
//
//   - rates.payments.example, a mock host: the gateway answers with the
//     response the manifest configures;
//   - hooks.chat.example, a capture host: the gateway records the request
//     (without its Authorization header) in captures.jsonl and answers 202;
//   - www.example.org, which the catalogue does not name: the gateway
//     refuses it.
//
// None of these calls leaves the machine.
package main

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	client := &http.Client{Timeout: 5 * time.Second} // proxies from the environment
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "%s (environment %s, service %s)\n\n", os.Getenv("GREETING"), os.Getenv("AF_ENVIRONMENT"), os.Getenv("AF_SERVICE"))
		call(w, client, "mock   ", "GET", "http://rates.payments.example/v1/quote?sku=demo", "", "")
		call(w, client, "capture", "POST", "http://hooks.chat.example/notify", `{"text":"order 42 shipped"}`, "Bearer demo-secret-token")
		call(w, client, "refused", "GET", "http://www.example.org/", "", "")
	})
	log.Printf("demo-app listening on 127.0.0.1:%s", port)
	log.Fatal(http.ListenAndServe("127.0.0.1:"+port, mux))
}

func call(w io.Writer, c *http.Client, label, method, url, body, auth string) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		fmt.Fprintf(w, "%s %s %s -> %v\n", label, method, url, err)
		return
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintf(w, "%s %-4s %s -> %v\n", label, method, url, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
	fmt.Fprintf(w, "%s %-4s %s -> %d %s\n", label, method, url, resp.StatusCode, strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
}
