package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/antifailure/terraform-provider-antifailure/internal/egress"
	"github.com/antifailure/terraform-provider-antifailure/internal/provider"
	"github.com/antifailure/terraform-provider-antifailure/internal/runtime/local"
)

// version is set by the release build: goreleaser's ldflags
// -X main.version={{.Version}}. "dev" (a plain go build) has no default
// gateway image, because no image is tagged for it.
var version = "dev"

func main() {
	// The local runtime re-executes this binary as its supervisor, its
	// in-namespace helper and its probe; those never serve Terraform.
	if local.MaybeRunHelper() {
		return
	}
	var debug bool
	if len(os.Args) == 2 && os.Args[1] == "version" {
		// The release checks ask the binary itself, in the zip and in the
		// gateway image, which version it is.
		fmt.Println("terraform-provider-antifailure", version)
		if img := provider.DefaultGatewayImage(version); img != "" {
			fmt.Println("default gateway_image", img)
		} else {
			fmt.Println("default gateway_image none (a dev build: set kubernetes.gateway_image)")
		}
		return
	}
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
