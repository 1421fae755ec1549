# Kubernetes runtime: <kubeconfig_context>/<namespace>
terraform import antifailure_preview_environment.pr eu-prod/af-shop-pr-42

# Local runtime: <app>-<name>
terraform import antifailure_preview_environment.pr shop-pr-42
