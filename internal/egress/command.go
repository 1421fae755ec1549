package egress

import (
	"context"
	"errors"
	"flag"
	"net"
	"strings"
	"time"
)

// Command runs the gateway as a process, the way the Kubernetes runtime's
// gateway container runs it:
//
//	terraform-provider-antifailure gateway --config=/etc/antifailure/egress/config.json --http=:3128 --dns=:5353
//
// --http and --dns may repeat and take "host:port" or "unix:/path". --canary
// (optional, host:port) accepts every connection and answers CanaryReply:
// the runtime's policies let no service reach that port, so a connection to
// it that completes is packet-level proof that they are not in force (the
// containment probe's canary, and the wait of every service pod before its
// application starts). It serves until ctx ends.
func Command(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	config := fs.String("config", "", "path of the gateway configuration (JSON, as the runtime writes it)")
	var addrs Addrs
	fs.Func("http", "proxy listen address (repeatable)", func(s string) error { addrs.HTTP = append(addrs.HTTP, s); return nil })
	fs.Func("dns", "DNS listen address (repeatable)", func(s string) error { addrs.DNS = append(addrs.DNS, s); return nil })
	canary := fs.String("canary", "", "listen address of the canary, which accepts every connection (optional)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *config == "" || len(addrs.HTTP) == 0 {
		return errors.New("gateway: --config and at least one --http are required")
	}
	if fs.NArg() > 0 {
		return errors.New("gateway: unexpected arguments: " + strings.Join(fs.Args(), " "))
	}
	cfg, err := LoadConfig(*config)
	if err != nil {
		return err
	}
	if *canary != "" {
		ln, err := net.Listen("tcp", *canary)
		if err != nil {
			return err
		}
		defer ln.Close()
		go serveCanary(ctx, ln)
	}
	l, err := Listen(addrs)
	if err != nil {
		return err
	}
	return Serve(ctx, cfg, l)
}

// CanaryReply is what the canary writes to every connection.
const CanaryReply = "antifailure-canary\n"

func serveCanary(ctx context.Context, ln net.Listener) {
	go func() { <-ctx.Done(); ln.Close() }()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		_ = c.SetDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte(CanaryReply))
		c.Close()
	}
}
