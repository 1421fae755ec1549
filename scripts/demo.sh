#!/usr/bin/env bash
# make demo: build the provider and run terraform against it through a
# dev_overrides CLI configuration in a temporary directory, so that
# `terraform init` is not needed and nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v terraform >/dev/null || { echo "demo: terraform is not on PATH" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "==> building the provider (demo build: accepts the public demo license key)"
go build -tags demokey -o "$work/bin/terraform-provider-antifailure" .
cat >"$work/terraformrc" <<CFG
provider_installation {
  dev_overrides {
    "antifailure/antifailure" = "$work/bin"
  }
  direct {}
}
CFG
export TF_CLI_CONFIG_FILE=$work/terraformrc TF_IN_AUTOMATION=1
cp -r examples/seed "$work/seed"

echo
echo "==> 1. The seed manifest, community edition (no license): two targets are refused at plan"
if AF_LICENSE='' terraform -chdir="$work/seed" plan -no-color >"$work/plan.log" 2>&1; then
  echo "demo: expected the community edition to refuse two targets" >&2; exit 1
fi
sed -n '/Error:/,$p' "$work/plan.log"

echo
echo "==> 2. The same manifest with an enterprise license (multi_runtime): placed in Frankfurt"
AF_LICENSE=$(go run ./scripts/demolicense) terraform -chdir="$work/seed" apply -auto-approve -no-color 2>&1 |
  sed -n '/^Outputs:/,$p'

echo
echo "==> 3. A real preview environment on this machine: runtime.provider local, contained"
PROVIDER_BIN_DIR="$work/bin" bash scripts/demo-local.sh
