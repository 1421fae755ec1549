# make demo applies this with the provider built from this repository (a
# dev_overrides CLI configuration: no terraform init, nothing downloaded).
terraform {
  required_providers {
    antifailure = {
      source = "antifailure/antifailure"
    }
  }
}

provider "antifailure" {}

resource "antifailure_preview_environment" "demo" {
  name     = "pr-1"
  manifest = file("${path.module}/antifailure.yaml")
}

output "url" {
  value = antifailure_preview_environment.demo.urls["web"]
}

output "containment" {
  description = "The containment probe's verdict and every attempt it made from inside the namespace."
  value = format("verdict: %s (probe ran %d ms)\n%s",
    antifailure_preview_environment.demo.containment.verdict,
    antifailure_preview_environment.demo.containment.duration_ms,
    join("\n", [
      for a in antifailure_preview_environment.demo.containment.attempts :
      format("  %-11s %-10s %-28s %s (%s)", a.category, a.method, a.target, a.outcome, a.detail)
  ]))
}
