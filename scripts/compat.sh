#!/usr/bin/env bash
# scripts/compat.sh - the Terraform/OpenTofu compatibility matrix.
#
#   scripts/compat.sh build [tofu|terraform-floor|all]
#        build the CLI binaries once from the Go module proxy into the tools
#        cache (never downloaded as binaries). Cold: OpenTofu ~4-8 min,
#        Terraform 1.8 ~3-6 min on 2 cores; warm: nothing to do.
#   scripts/compat.sh path tofu|terraform-floor
#        print the cached binary's path (builds it if missing)
#   scripts/compat.sh test tofu|terraform-floor
#        run the fast acceptance subset against that CLI through
#        TF_ACC_TERRAFORM_PATH
#
# Knobs: TOOLS_DIR (default ~/.cache/antifailure-tools), TOFU_VERSION,
# TERRAFORM_FLOOR_VERSION, COMPAT_NO_BUILD=1 (fail instead of building).
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/antifailure-tools}
TOFU_VERSION=${TOFU_VERSION:-1.12.6}
TERRAFORM_FLOOR_VERSION=${TERRAFORM_FLOOR_VERSION:-1.8.5}
# The subset: placement, the DNS check, the provider functions (why 1.8 is
# the floor; while the provider has none, none run) and the local resource.
# Each group must have run and passed: a regexp that matched nothing would
# otherwise pass.
COMPAT_RUN=${COMPAT_RUN:-'^TestAcc(Placement_|DNSFirewallCheck|PreviewEnvironment_local$|[A-Za-z]*Function)'}
COMPAT_REQUIRED=(TestAccPlacement_ TestAccDNSFirewallCheck TestAccPreviewEnvironment_local)

log() { echo "[compat $(date +%T)] $*" >&2; }
die() { log "$*"; exit 1; }

module_of() { # module_of tofu|terraform-floor -> "module version cmdpkg binary"
  case $1 in
    tofu) echo "github.com/opentofu/opentofu v$TOFU_VERSION ./cmd/tofu $TOOLS_DIR/tofu-$TOFU_VERSION" ;;
    terraform-floor) echo "github.com/hashicorp/terraform v$TERRAFORM_FLOOR_VERSION . $TOOLS_DIR/terraform-$TERRAFORM_FLOOR_VERSION" ;;
    *) die "unknown CLI '$1' (tofu|terraform-floor)" ;;
  esac
}

build_one() {
  local mod ver pkg bin
  read -r mod ver pkg bin <<<"$(module_of "$1")"
  [[ -x $bin ]] && return 0
  [[ ${COMPAT_NO_BUILD:-0} == 1 ]] && die "$bin missing; run scripts/compat.sh build $1"
  mkdir -p "$TOOLS_DIR/build"
  # One build at a time on this machine: two CLI builds on 2 cores take
  # both twice as long.
  exec 8>"$TOOLS_DIR/build.lock"
  flock -n 8 || { log "another build holds $TOOLS_DIR/build.lock; waiting"; flock 8; }
  [[ -x $bin ]] && return 0
  local t0=$SECONDS l=$TOOLS_DIR/build/$(basename "$bin").log src
  log "building $mod@$ver (log: $l)"
  # The downloaded module is built as the main module: its go.mod's
  # replace and exclude directives apply only then.
  src=$(GOFLAGS=-mod=mod GOWORK=off go mod download -json "$mod@$ver" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -d $src ]] || die "go mod download $mod@$ver gave no directory"
  local work=$TOOLS_DIR/build/$(basename "$bin")
  rm -rf "$work" && cp -r "$src" "$work" && chmod -R u+w "$work"
  (cd "$work" && GOWORK=off GOFLAGS=-buildvcs=false CGO_ENABLED=0 \
     go build -trimpath -ldflags "-s -w -X $mod/version.dev=no" -o "$bin.tmp" "$pkg") >"$l" 2>&1 \
    || { tail -30 "$l" >&2; die "build of $mod@$ver failed (log: $l)"; }
  mv "$bin.tmp" "$bin"
  rm -rf "$work"
  log "built $bin in $((SECONDS - t0)) s"
  exec 8>&-
}

cmd=${1:-}
case $cmd in
  build)
    case ${2:-all} in
      all) build_one tofu; build_one terraform-floor ;;
      *) build_one "$2" ;;
    esac ;;
  path)
    build_one "${2:?tofu|terraform-floor}"; read -r _ _ _ bin <<<"$(module_of "$2")"; echo "$bin" ;;
  test)
    build_one "${2:?tofu|terraform-floor}"; read -r _ _ _ bin <<<"$(module_of "$2")"
    required=("${COMPAT_REQUIRED[@]}")
    # Provider functions (one file each, *function*.go), once there are
    # any, must run too.
    if ls internal/provider/*function*.go 2>/dev/null | grep -qv _test.go; then required+=(Function); fi
    # A CLI config that does not exist makes both CLIs print a warning
    # before their version, which terraform-plugin-testing cannot parse.
    if [[ -n ${TF_CLI_CONFIG_FILE:-} && ! -f $TF_CLI_CONFIG_FILE ]]; then
      TF_CLI_CONFIG_FILE=$(mktemp) && export TF_CLI_CONFIG_FILE
    fi
    # The tests' configurations name no provider source, so each CLI looks
    # for hashicorp/antifailure on its own default registry; the in-process
    # provider must be attached under that address (and only that one:
    # OpenTofu refuses terraform-plugin-testing's legacy "-" namespace).
    export TF_ACC_PROVIDER_NAMESPACE=hashicorp
    [[ $2 == tofu ]] && export TF_ACC_PROVIDER_HOST=registry.opentofu.org
    log "acceptance subset $COMPAT_RUN against $bin"
    out=$(mktemp)
    rc=0
    TF_ACC=1 TF_ACC_TERRAFORM_PATH=$bin go test ./internal/provider -count=1 -timeout 20m -run "$COMPAT_RUN" -v >"$out" 2>&1 || rc=$?
    grep -E '^(=== RUN|\s*--- |PASS|FAIL|ok|panic)' "$out" || true
    if ((rc != 0)); then tail -60 "$out" >&2; rm -f "$out"; die "acceptance subset failed against $bin"; fi
    for r in "${required[@]}"; do
      grep -qE "^--- PASS: [A-Za-z_]*$r" "$out" || { rm -f "$out"; die "no passing test matched $r against $bin"; }
    done
    log "$(grep -c '^--- PASS' "$out") tests passed against $("$bin" version | head -1)"
    rm -f "$out" ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
