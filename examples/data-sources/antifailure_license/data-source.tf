data "antifailure_license" "current" {}

output "edition" {
  value = data.antifailure_license.current.edition
}
