// Command errorsdoc writes the error reference page from the AF- catalogue, so
// that the page and the codes the provider emits cannot drift apart.
package main

import (
	"fmt"
	"strings"

	// The provider imports every package that registers codes of its own.
	_ "github.com/antifailure/terraform-provider-antifailure/internal/provider"

	"github.com/antifailure/terraform-provider-antifailure/internal/refusal"
)

func main() {
	fmt.Print(`---
page_title: "Error reference"
subcategory: ""
description: |-
  Every AF- code the provider refuses with, what it means and what to do next.
---

# Error reference

Every error is a Terraform diagnostic whose summary starts with its code. Its detail ends with a
` + "`Next:`" + ` line and says whether anything was created. Refusals the manifest decides (` + "`AF-MAN`, `AF-SCH`, `AF-LIC`, `AF-POL`" + `, and the
` + "`ecs`" + ` runtime's refusal) happen at ` + "`terraform plan`" + `, before anything exists.

| Code | Meaning | Next |
|---|---|---|
`)
	for _, c := range refusal.Codes() {
		fmt.Printf("| `%s` | %s | %s |\n", c, escape(c.Title()), escape(c.Next()))
	}
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
