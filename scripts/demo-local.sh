#!/usr/bin/env bash
# The local preview environment demo: build the provider and the demo app,
# apply examples/demo through a dev_overrides CLI configuration in a temporary
# directory (no terraform init, nothing downloaded), fetch the app through the
# router, show a mocked and a captured call going through the egress gateway,
# print the containment verdict, destroy, and show that nothing is left.
#
# Nothing here reaches the internet: the environment's only way out is the
# gateway, whose catalogue (examples/demo/antifailure.yaml) answers every host
# locally; terraform's version check is off.
#
# PROVIDER_BIN_DIR: a directory already holding terraform-provider-antifailure
# (scripts/demo.sh passes its build); otherwise this script builds one.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v terraform >/dev/null || { echo "demo: terraform is not on PATH" >&2; exit 1; }
command -v curl >/dev/null || { echo "demo: curl is not on PATH" >&2; exit 1; }

work=$(mktemp -d)
export CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 XDG_STATE_HOME=$work/state
state_dir=$XDG_STATE_HOME/antifailure/local/apps/demo/pr-1
cleanup() {
  # Should the demo stop half way, do not leave an environment running.
  if [ -d "$state_dir" ]; then
    terraform -chdir="$work/demo" destroy -auto-approve -no-color >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

bin=${PROVIDER_BIN_DIR:-$work/bin}
if [ -z "${PROVIDER_BIN_DIR:-}" ]; then
  echo "==> building the provider"
  go build -o "$bin/terraform-provider-antifailure" .
fi
cat >"$work/terraformrc" <<CFG
provider_installation {
  dev_overrides {
    "antifailure/antifailure" = "$bin"
  }
  direct {}
}
CFG
export TF_CLI_CONFIG_FILE=$work/terraformrc

mkdir -p "$work/demo"
cp examples/demo/main.tf examples/demo/antifailure.yaml "$work/demo/"
echo "==> building the demo app (examples/demo/app) into $work/demo/app/demo-app (its dir: the only part of the working directory it sees)"
go build -o "$work/demo/app/demo-app" ./examples/demo/app

echo
echo "==> terraform apply: a namespace holding only loopback, the egress gateway, the containment probe, then the app"
terraform -chdir="$work/demo" apply -auto-approve -no-color >"$work/apply.log" 2>&1 || { cat "$work/apply.log" >&2; exit 1; }
grep -E '^antifailure_preview_environment|^Apply complete' "$work/apply.log" | sed 's/^/    /'
url=$(terraform -chdir="$work/demo" output -raw url)
[ -n "$url" ] || { echo "demo: no URL after apply" >&2; exit 1; }

echo
echo "==> curl $url  (through the router on 127.0.0.1)"
page=$(curl -sS --max-time 10 --resolve "${url#http://}:127.0.0.1" "$url/" 2>/dev/null || curl -sS --max-time 10 "$url/")
printf '%s\n' "$page" | sed 's/^/    /'
grep -q '^mock .* -> 200 ' <<<"$page" || { echo "demo: the mocked call did not answer 200" >&2; exit 1; }
grep -q '^capture .* -> 202 ' <<<"$page" || { echo "demo: the captured call did not answer 202" >&2; exit 1; }

echo
echo "==> the captured call, as the gateway recorded it ($state_dir/captures.jsonl; the Authorization header is left out)"
sed 's/^/    /' "$state_dir/captures.jsonl"
if grep -q demo-secret-token "$state_dir/captures.jsonl"; then echo "demo: a credential reached the capture file" >&2; exit 1; fi

echo
echo "==> the gateway's decisions ($state_dir/egress.log)"
sed 's/^/    /' "$state_dir/egress.log"

echo
echo "==> containment verdict (the probe ran inside the namespace before the app started)"
terraform -chdir="$work/demo" output -raw containment | sed 's/^/    /'
echo
# What runs for the environment: the supervisor (host side: gateway, router)
# and the namespace helper, PID 1 of the environment's PID namespace, whose
# children are the services.
json_field() { sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",]*\).*/\1/p" "$1" | head -n 1; }
sup_pid=$(json_field "$state_dir/supervisor.json" pid)
helper_pid=$(json_field "$state_dir/helper.json" pid)
netns=$(json_field "$state_dir/helper.json" netns)
echo "==> running now: supervisor pid $sup_pid, namespace helper pid $helper_pid (network namespace $netns), the app inside"

echo
echo "==> terraform destroy"
terraform -chdir="$work/demo" destroy -auto-approve -no-color 2>&1 | grep -E '^antifailure_preview_environment|^Destroy complete' | sed 's/^/    /'

echo
echo "==> nothing is left:"
left=0
running() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${st:0:1}" != Z ]; }
if [ -e "$state_dir" ]; then echo "    state directory $state_dir still exists"; left=1; else echo "    state directory: gone ($state_dir)"; fi
for p in $sup_pid $helper_pid; do
  if running "$p"; then echo "    process $p still runs"; left=1; fi
done
[ $left -eq 1 ] || echo "    processes: supervisor $sup_pid and helper $helper_pid have ended (the app ended with the helper, its PID namespace's init)"
if [ -n "$netns" ] && ls -l /proc/[0-9]*/ns/net 2>/dev/null | grep -qF "$netns"; then
  echo "    network namespace $netns is still in use"; left=1
else
  echo "    network namespace: $netns is gone"
fi
if curl -s --max-time 2 --resolve "${url#http://}:127.0.0.1" "$url/" >/dev/null 2>&1; then
  echo "    the router still answers on $url"; left=1
else
  echo "    router: $url no longer answers"
fi
exit $left
