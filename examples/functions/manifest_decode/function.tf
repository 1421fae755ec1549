# Provider functions need Terraform 1.8 or later (OpenTofu 1.7 or later).
terraform {
  required_version = ">= 1.8"
  required_providers {
    antifailure = { source = "antifailure/antifailure" }
  }
}

locals {
  # Refused with every AF-MAN message when the reader refuses the manifest.
  manifest = provider::antifailure::manifest_decode(file("${path.module}/antifailure.yaml"))
}

output "web_services" {
  value = [for name, s in local.manifest.services : name if s.web]
}

output "locally_answered_hosts" {
  value = [for e in local.manifest.egress : e.host if !contains(["allow", "sandbox"], e.mode)]
}
