# Kubernetes runtime: <kubeconfig_context>/<app>/<name>, where <app> is the
# manifest's name. The context may itself hold slashes (an EKS ARN).
terraform import antifailure_preview_environment.pr eu-prod/shop/pr-42

# Local runtime: <app>/<name>
terraform import antifailure_preview_environment.pr shop/pr-42

# With a configuration that matches the environment, the plan after either
# import is empty; where it differs, an update in place, never a replacement.
