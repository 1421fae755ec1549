# Community edition: no license. Everything can also come from environment
# variables (AF_LICENSE, AF_POLICY_ALLOWED_REGIONS, KUBECONFIG, AF_KUBECONFIG,
# AF_K8S_*), which is how CI and Terraform Cloud runs configure it.
provider "antifailure" {}

# Enterprise edition with a residency policy, on Kubernetes. The license comes
# from the variable, else AF_LICENSE; without either this is the community
# edition, which refuses more than one target at plan.
provider "antifailure" {
  alias   = "enterprise"
  license = var.antifailure_license # sensitive

  policy = {
    allowed_regions = ["eu-west-1", "eu-central-1"]
  }

  # A leading ~/ is the home directory. Unset: KUBECONFIG, else AF_KUBECONFIG
  # (the content). Only read when an environment is placed on Kubernetes.
  kubeconfig_path = var.kubeconfig_path

  kubernetes = {
    # The context for manifests that declare no targets. Without it such a
    # manifest is refused at plan (AF-K8S-030); the kubeconfig's
    # current-context is never used.
    context           = "eu-prod"
    ingress_namespace = "ingress-nginx"
    # Mirror the images into your registry when the cluster cannot pull them.
    # gateway_image = "registry.example.com/antifailure/egress-gateway:1"
    # probe_image   = "registry.example.com/mirror/busybox:1.36.1"
  }
}

variable "antifailure_license" {
  type      = string
  sensitive = true
  default   = null
}

variable "kubeconfig_path" {
  type    = string
  default = null
}

data "antifailure_license" "community" {}

data "antifailure_license" "enterprise" {
  provider = antifailure.enterprise
}

output "editions" {
  value = {
    default    = data.antifailure_license.community.edition
    enterprise = data.antifailure_license.enterprise.edition
  }
}
