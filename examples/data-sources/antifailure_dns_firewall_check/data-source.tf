# Check any Route 53 Resolver DNS Firewall rule group, not only a generated one.
# Rules are read by priority from the lowest number up; the first match ends
# evaluation.
#
# By default the check refuses: each finding fails the plan with its AF-DNS
# code, naming the rules. This group is closed, so it passes.
data "antifailure_dns_firewall_check" "egress" {
  rules = [
    { name = "allow-partners", priority = 100, action = "ALLOW", domains = ["api.partner.example"] },
    { name = "block-everything-else", priority = 1000, action = "BLOCK", domains = ["*"] },
  ]
  fail_open = "DISABLED"

  # Optional: with the manifest, a host its egress catalogue answers locally
  # (block, mock, capture, synth) that an earlier ALLOW lets through is a
  # finding too (AF-DNS-015).
  manifest = file("${path.module}/antifailure.yaml")
}

# For a report instead of a refusal: fail_on_findings = false returns the
# findings. This group looks closed and is not: the ALLOW on every domain at
# priority 5 comes first, so the BLOCK at 1000 blocks nothing (AF-DNS-010).
data "antifailure_dns_firewall_check" "report" {
  rules = [
    { name = "allow-everything", priority = 5, action = "ALLOW", domains = ["*"] },
    { name = "block-everything-else", priority = 1000, action = "BLOCK", domains = ["*"] },
  ]
  fail_open        = "DISABLED"
  fail_on_findings = false
}

output "findings" {
  value = data.antifailure_dns_firewall_check.report.findings
}

# A check block turns the report's findings into a warning.
check "dns_firewall" {
  assert {
    condition     = data.antifailure_dns_firewall_check.report.ok
    error_message = join("\n", [for f in data.antifailure_dns_firewall_check.report.findings : "${f.code} ${f.message}"])
  }
}
