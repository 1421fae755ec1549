# One preview environment per pull request, placed where the manifest says.
variable "pull_request" {
  type = number
}

variable "image" {
  type        = string
  description = "The image this pull request's CI built."
}

resource "antifailure_preview_environment" "pr" {
  name     = "pr-${var.pull_request}"
  manifest = file("${path.module}/antifailure.yaml")

  images = {
    web = var.image
  }

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
