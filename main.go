package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

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
