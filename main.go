package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/provider"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/local"
)

// version is set by the release build (goreleaser ldflags).
var version = "dev"

func main() {
	// The local runtime re-executes this binary as its supervisor, its
	// in-namespace helper and its probe; those never serve Terraform.
	if local.MaybeRunHelper() {
		return
	}
	var debug bool
	if len(os.Args) > 1 && os.Args[1] == "gateway" {
		// The egress gateway image runs this binary: one build, one catalogue
		// reader, the same gateway the local runtime runs in-process.
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := egress.Command(ctx, os.Args[2:])
		stop()
		if err != nil {
			log.Fatal(err)
		}
		return
	}

	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/antifailure/antifailure",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
