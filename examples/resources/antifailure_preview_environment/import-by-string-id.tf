# Import an existing preview environment with an import block (Terraform 1.5
# and later), then plan: with a configuration that matches the environment,
# the plan shows the import and no changes, never a replacement.
import {
  to = antifailure_preview_environment.pr
  # local: <app>/<name>; kubernetes: <kubeconfig_context>/<app>/<name>,
  # for example "eu-prod/shop/pr-42".
  id = "shop/pr-42"
}
