# One preview environment per pull request, placed where the manifest says.
variable "pull_request" {
  type = number
}

resource "antifailure_preview_environment" "pr" {
  name     = "pr-${var.pull_request}"
  manifest = file("${path.module}/antifailure.yaml")

  # On kubernetes, the image this pull request's CI built, by service name:
  # images = { web = "ghcr.io/acme/shop:pr-${var.pull_request}" }

  timeouts = {
    create = "15m"
  }
}

output "urls" {
  value = antifailure_preview_environment.pr.urls
}

output "containment" {
  value = antifailure_preview_environment.pr.containment.verdict
}
