# Where does an environment of this application go, and why?
data "antifailure_placement" "shop" {
  manifest = file("${path.module}/antifailure.yaml")
}

output "placed_on" {
  value = "${data.antifailure_placement.shop.target.name} (${data.antifailure_placement.shop.target.kubeconfig_context})"
}

output "why" {
  value = data.antifailure_placement.shop.candidates
}

output "residency" {
  value = data.antifailure_placement.shop.residency.verdict
}
