#!/usr/bin/env bash
# Validates and plans every directory under examples/ with the provider built
# from this tree, through a dev_overrides CLI configuration (no terraform
# init, nothing downloaded). Each directory is copied to a temporary one
# first, so nothing is written into the repository.
#
# Enterprise examples (listed below) run with the -tags demokey build and a
# one-hour license from scripts/demolicense; the rest with the release build
# and no license. A directory with no .tf file, or one nobody listed, fails
# nothing silently: every directory holding .tf files is checked.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v terraform >/dev/null || { echo "examples-check: terraform is not on PATH" >&2; exit 1; }

# Examples that need the enterprise edition (more than one target).
enterprise=(examples/seed examples/provider)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 XDG_STATE_HOME=$work/state

echo "==> building the provider (release build and -tags demokey build)"
go build -o "$work/community/terraform-provider-antifailure" .
go build -tags demokey -o "$work/enterprise/terraform-provider-antifailure" .
for kind in community enterprise; do
  cat >"$work/$kind.tfrc" <<CFG
provider_installation {
  dev_overrides {
    "antifailure/antifailure" = "$work/$kind"
    "hashicorp/antifailure"   = "$work/$kind"
  }
  direct {}
}
CFG
done
license=$(go run ./scripts/demolicense)

is_enterprise() {
  local d
  for d in "${enterprise[@]}"; do [[ $1 == "$d" ]] && return 0; done
  return 1
}

# The demo runs a command built from examples/demo/app.
prepare() {
  case $1 in
  examples/demo) go build -o "$2/app/demo-app" ./examples/demo/app ;;
  esac
}

failed=()
checked=0
while IFS= read -r dir; do
  copy=$work/examples/$dir
  mkdir -p "$copy"
  cp -r "$dir"/. "$copy"/
  prepare "$dir" "$copy"
  envs=(TF_CLI_CONFIG_FILE="$work/community.tfrc" AF_LICENSE=)
  kind=community
  if is_enterprise "$dir"; then
    envs=(TF_CLI_CONFIG_FILE="$work/enterprise.tfrc" AF_LICENSE="$license" TF_VAR_antifailure_license="$license")
    kind=enterprise
  fi
  log=$work/log
  start=$SECONDS
  # An import block plans only against an environment that exists: it is
  # validated, then left out of the plan (the acceptance tests import for real).
  if env "${envs[@]}" terraform -chdir="$copy" validate -no-color >"$log" 2>&1 &&
    rm -f "$copy/import-by-string-id.tf" &&
    env "${envs[@]}" terraform -chdir="$copy" plan -input=false -lock=false -no-color >>"$log" 2>&1; then
    printf 'ok    %-60s %-10s %ds\n' "$dir" "$kind" $((SECONDS - start))
  else
    printf 'FAIL  %-60s %-10s\n' "$dir" "$kind"
    sed 's/^/      /' "$log"
    failed+=("$dir")
  fi
  checked=$((checked + 1))
done < <(find examples -name '*.tf' -not -path '*/.terraform/*' -printf '%h\n' | sort -u)

echo "$checked example directories checked"
if ((${#failed[@]})); then
  echo "examples-check: ${#failed[@]} failed: ${failed[*]}" >&2
  exit 1
fi
