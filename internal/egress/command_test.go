package egress

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCommandServesTheWrittenConfig runs the gateway the way its container
// does: from a config file and listen flags, then proxies a request to a mock
// host over loopback.
func TestCommandServesTheWrittenConfig(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, testConfig(t).JSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Command(ctx, []string{"--config=" + cfgPath, "--http=" + addr}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway returned %v", err)
		}
	})

	proxy, _ := url.Parse("http://" + addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 2 * time.Second}
	var resp *http.Response
	for i := 0; i < 50; i++ { // the listener opens asynchronously
		if resp, err = client.Get("http://mock.test/quote"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated || string(body) != `{"ok":true}` {
		t.Fatalf("mock answered %d %q", resp.StatusCode, body)
	}
}

func TestCommandRefusesMissingFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"--config=/nonexistent"}, {"--http=127.0.0.1:0"}, {"--config=x", "--http=127.0.0.1:0", "extra"}, {"--config=/nonexistent", "--http=127.0.0.1:0"}} {
		if err := Command(context.Background(), args); err == nil {
			t.Errorf("Command(%q) = nil, want an error", args)
		}
	}
}

// TestCommandCanaryAnswersEveryConnection: the canary accepts and answers,
// so that a connection to it that fails can only be a block.
func TestCommandCanaryAnswersEveryConnection(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, testConfig(t).JSON(), 0o600); err != nil {
		t.Fatal(err)
	}
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	httpAddr, canary := free(), free()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Command(ctx, []string{"--config=" + cfgPath, "--http=" + httpAddr, "--canary=" + canary})
	}()
	var got []byte
	var err error
	for i := 0; i < 100; i++ {
		var c net.Conn
		if c, err = net.Dial("tcp", canary); err == nil {
			got, err = io.ReadAll(c)
			c.Close()
			if len(got) > 0 {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if string(got) != CanaryReply {
		t.Fatalf("canary answered %q, %v", got, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", canary); err == nil {
		c.Close()
		t.Fatal("the canary still accepts after the gateway stopped")
	}
}
