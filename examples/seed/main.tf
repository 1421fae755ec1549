# Where does the seed manifest place an environment? Run by `make demo`.
terraform {
  required_providers {
    antifailure = { source = "antifailure/antifailure" }
  }
}

provider "antifailure" {
  policy = { allowed_regions = ["eu-west-1", "eu-central-1"] }
}

data "antifailure_placement" "shop" {
  manifest = file("${path.module}/antifailure.yaml")
}

output "placement" {
  value = {
    edition            = data.antifailure_placement.shop.edition
    target             = data.antifailure_placement.shop.target.name
    kubeconfig_context = data.antifailure_placement.shop.target.kubeconfig_context
    domain             = data.antifailure_placement.shop.domain
    residency          = data.antifailure_placement.shop.residency.verdict
    why                = { for c in data.antifailure_placement.shop.candidates : c.name => join("; ", c.reasons) }
  }
}
