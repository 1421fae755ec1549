# Check any Route 53 Resolver DNS Firewall rule group, not only a generated one.
# Rules are read by priority from the lowest number up; the first match ends
# evaluation. This group looks closed and is not: the ALLOW on every domain at
# priority 5 comes first, so the BLOCK at 1000 blocks nothing (AF-DNS-010).
data "antifailure_dns_firewall_check" "egress" {
  rules = [
    { name = "allow-everything", priority = 5, action = "ALLOW", domains = ["*"] },
    { name = "allow-partners", priority = 100, action = "ALLOW", domains = ["*.example.com"] },
    { name = "block-everything-else", priority = 1000, action = "BLOCK", domains = ["*"] },
  ]
  fail_open = "DISABLED"

  # Optional: with the manifest, a host its egress catalogue answers locally
  # (block, mock, capture, synth) that an earlier ALLOW lets through is a
  # finding too (AF-DNS-015).
  manifest = file("${path.module}/antifailure.yaml")
}

output "findings" {
  value = data.antifailure_dns_firewall_check.egress.findings
}

# Findings are outputs, not errors: fail the run on them with a check block
# (a warning) or a postcondition (an error).
check "dns_firewall" {
  assert {
    condition     = data.antifailure_dns_firewall_check.egress.ok
    error_message = join("\n", [for f in data.antifailure_dns_firewall_check.egress.findings : "${f.code} ${f.message}"])
  }
}
