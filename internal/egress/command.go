package egress

import (
	"context"
	"errors"
	"flag"
	"strings"
)

// Command runs the gateway as a process, the way the Kubernetes runtime's
// gateway container runs it:
//
//	terraform-provider-antifailure gateway --config=/etc/antifailure/egress/config.json --http=:3128 --dns=:5353
//
// --http and --dns may repeat and take "host:port" or "unix:/path". It serves
// until ctx ends.
func Command(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	config := fs.String("config", "", "path of the gateway configuration (JSON, as the runtime writes it)")
	var addrs Addrs
	fs.Func("http", "proxy listen address (repeatable)", func(s string) error { addrs.HTTP = append(addrs.HTTP, s); return nil })
	fs.Func("dns", "DNS listen address (repeatable)", func(s string) error { addrs.DNS = append(addrs.DNS, s); return nil })
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
	l, err := Listen(addrs)
	if err != nil {
		return err
	}
	return Serve(ctx, cfg, l)
}
