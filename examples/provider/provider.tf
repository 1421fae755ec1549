# Community edition: no license. Everything can also come from environment
# variables (AF_LICENSE, AF_POLICY_ALLOWED_REGIONS, KUBECONFIG, AF_KUBECONFIG),
# which is how CI and Terraform Cloud runs configure it.
provider "antifailure" {}

# Enterprise edition with a residency policy.
provider "antifailure" {
  alias   = "enterprise"
  license = var.antifailure_license # sensitive; or set AF_LICENSE

  policy = {
    allowed_regions = ["eu-west-1", "eu-central-1"]
  }

  kubeconfig_path = "~/.kube/config"
}

variable "antifailure_license" {
  type      = string
  sensitive = true
  default   = null
}
