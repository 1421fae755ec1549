# Provider functions need Terraform 1.8 or later (OpenTofu 1.7 or later).
terraform {
  required_version = ">= 1.8"
  required_providers {
    antifailure = { source = "antifailure/antifailure" }
  }
}

locals {
  rules = [
    { name = "allow-everything", priority = 5, action = "ALLOW", domains = ["*"] },
    { name = "block-everything-else", priority = 1000, action = "BLOCK", domains = ["*"] },
  ]
  # A list of { code, message, rules }; empty when the group is closed.
  findings = provider::antifailure::dns_firewall_findings(local.rules, "DISABLED")
}

output "dns_firewall_findings" {
  value = [for f in local.findings : "${f.code}: ${join(", ", f.rules)}"]
}
