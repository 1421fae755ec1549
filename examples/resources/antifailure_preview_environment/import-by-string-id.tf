# Import an existing preview environment with an import block (Terraform 1.5
# and later), then plan: with a configuration that matches the environment,
# the plan shows the import and no changes.
import {
  to = antifailure_preview_environment.pr
  # kubernetes: <kubeconfig_context>/<app>/<name>; local: <app>/<name>
  id = "eu-prod/shop/pr-42"
}
