#!/usr/bin/env bash
# scripts/release-check.sh - verifies a release in dist/ as a user and the
# Terraform Registry would: the signature over the sums (RSA key, binary
# detached), the sums over every file, the registry's file names, the
# manifest, each binary's build (static and stripped on linux, its version
# in it), the linux/amd64 binary run by terraform through a dev override,
# and the gateway image (same binaries, same version, digests published).
#
#   scripts/release-check.sh              the six targets of .goreleaser.yml
#   RELEASE_TARGETS=linux_amd64 scripts/release-check.sh   the CI variant
#
# Knobs: DIST (default dist), RELEASE_SIGNING_KEY (armored public key;
# default $DIST/snapshot-signing-key.asc), TERRAFORM (default: on PATH).
set -euo pipefail
cd "$(dirname "$0")/.."

DIST=${DIST:-dist}
KEY=${RELEASE_SIGNING_KEY:-$DIST/snapshot-signing-key.asc}
TARGETS=${RELEASE_TARGETS:-linux_amd64 linux_arm64 darwin_amd64 darwin_arm64 windows_amd64 windows_arm64}
TERRAFORM=${TERRAFORM:-$(command -v terraform || true)}
NAME=terraform-provider-antifailure
log() { echo "[release-check] $*" >&2; }
fail() { echo "[release-check] FAIL: $*" >&2; exit 1; }
ok() { echo "[release-check] ok: $*" >&2; }

# The CI config is the release config with fewer targets: nothing else may
# drift between them.
strip_variant() { sed -e '/^#/d' -e '/# targets:begin/,/# targets:end/d' -e 's|release-image.sh {{ .Version }} .*|release-image.sh {{ .Version }} PLATFORMS|' "$1"; }
diff <(strip_variant .goreleaser.yml) <(strip_variant .goreleaser.ci.yml) >&2 \
  || fail ".goreleaser.ci.yml differs from .goreleaser.yml beyond the targets"
ok ".goreleaser.ci.yml is .goreleaser.yml with fewer targets"

sums=$(ls "$DIST"/${NAME}_*_SHA256SUMS 2>/dev/null) || fail "no ${NAME}_<version>_SHA256SUMS in $DIST (run make release-snapshot)"
[[ $(wc -l <<<"$sums") == 1 ]] || fail "more than one SHA256SUMS in $DIST: $sums"
ver=${sums#"$DIST/${NAME}_"}; ver=${ver%_SHA256SUMS}
log "release $ver in $DIST"

# --- signature ---------------------------------------------------------------
sig=$sums.sig
[[ -f $sig ]] || fail "$sig missing"
[[ -f $KEY ]] || fail "signing key $KEY missing (RELEASE_SIGNING_KEY names the published key)"
if head -c 5 "$sig" | grep -q -- '-----'; then fail "$sig is ASCII-armored; the registry wants a binary detached signature"; fi
GNUPGHOME=$(mktemp -d) && export GNUPGHOME
work=$(mktemp -d)
trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "$GNUPGHOME" "$work"' EXIT
gpg --batch --quiet --import "$KEY"
# Field 4 of a pub/sub line is the public key algorithm: 1 is RSA; the
# registry rejects ECC (18, 19, 22).
algos=$(gpg --batch --with-colons --list-keys | awk -F: '$1 == "pub" || $1 == "sub" {print $4}' | sort -u)
[[ $algos == 1 ]] || fail "signing key algorithms '$algos', want RSA (1) only"
status=$(gpg --batch --status-fd 1 --verify "$sig" "$sums" 2>/dev/null) || fail "signature $sig does not verify over $sums"
grep -q '^\[GNUPG:\] VALIDSIG ' <<<"$status" || fail "no VALIDSIG from gpg: $status"
grep -Eq '^\[GNUPG:\] VALIDSIG ([^ ]+ ){6}1 ' <<<"$status" || fail "signature is not an RSA signature: $status"
# Negative control: one byte changed in the sums must break the signature.
{ cat "$sums"; echo "tampered"; } > "$work/sums.tampered"
if gpg --batch --verify "$sig" "$work/sums.tampered" 2>/dev/null; then fail "the signature also verifies a tampered sums file"; fi
ok "binary detached RSA signature verifies $(basename "$sums"); a tampered copy does not"

# --- sums and names --------------------------------------------------------------
(cd "$DIST" && sha256sum --strict -c "$(basename "$sums")" >/dev/null) || fail "sha256sum -c $(basename "$sums")"
want=()
for t in $TARGETS; do want+=("${NAME}_${ver}_${t}.zip"); done
want+=("${NAME}_${ver}_manifest.json")
listed=$(awk '{print $2}' "$sums" | sed 's/^\*//' | sort)
for f in "${want[@]}"; do grep -qx "$f" <<<"$listed" || fail "$f is not in the sums"; done
zips=$(cd "$DIST" && ls ${NAME}_"${ver}"_*.zip | sort)
[[ $zips == "$(printf '%s\n' "${want[@]}" | grep '\.zip$' | sort)" ]] || fail "zips in $DIST are [$zips], want ${want[*]}"
# Negative control: a changed zip byte must fail the sums.
cp "$DIST/${want[0]}" "$work/${want[0]}" && printf x >> "$work/${want[0]}"
grep " ${want[0]}\$" "$sums" > "$work/one.sums"
if (cd "$work" && sha256sum --strict -c one.sums >/dev/null 2>&1); then fail "the sums accept a changed ${want[0]}"; fi
ok "$(wc -l <"$sums") files match the sums; $(wc -w <<<"$TARGETS") zips in the registry's names; a changed zip fails"

python3 - "$DIST/${NAME}_${ver}_manifest.json" terraform-registry-manifest.json <<'PY' || fail "manifest"
import json, sys
got, want = (json.load(open(p)) for p in sys.argv[1:])
assert got == want, f"{sys.argv[1]} differs from {sys.argv[2]}"
assert got["metadata"]["protocol_versions"] == ["6.0"], got
PY
ok "manifest.json is terraform-registry-manifest.json (protocol 6.0)"

# --- binaries ----------------------------------------------------------------------
for t in $TARGETS; do
  os=${t%_*} arch=${t#*_}
  d=$work/$t && mkdir -p "$d" && unzip -q "$DIST/${NAME}_${ver}_${t}.zip" -d "$d"
  exe=${NAME}_v${ver}; [[ $os == windows ]] && exe+=.exe
  bin=$d/$exe
  [[ -f $bin ]] || fail "$t: the zip has no $exe ($(ls "$d"))"
  m=$(go version -m "$bin") || fail "$t: go version -m"
  for s in "GOOS=$os" "GOARCH=$arch" "CGO_ENABLED=0" "-trimpath=true"; do
    grep -qF -- "$s" <<<"$m" || fail "$t: go version -m lacks '$s':"$'\n'"$m"
  done
  # -trimpath keeps -ldflags out of the build info: the version set by
  # -X main.version is in the binary as the string itself (the linux/amd64
  # binary is also run below), and a tagged release's build info names it.
  LC_ALL=C grep -qaF -- "$ver" "$bin" || fail "$t: the binary does not hold its version $ver"
  modver=$(awk '$1 == "mod" {print $3}' <<<"$m")
  [[ $ver == *-snapshot || $modver == "(devel)" || $modver == "v$ver" ]] || fail "$t: build info names module version $modver, not v$ver"
  grep -q "/work/\|/root/\|/home/" "$bin" && fail "$t: the binary embeds a local build path"
  if [[ $os == linux ]]; then
    readelf -lW "$bin" | grep -q INTERP && fail "$t: dynamically linked (has an ELF interpreter)"
    readelf -SW "$bin" | grep -qE '\.symtab|\.debug_' && fail "$t: not stripped"
    extra="static, stripped"
  else
    extra="links its system libraries by nature"
  fi
  ok "$t: $exe $(( $(stat -c %s "$bin") / 1024 / 1024 )) MiB ($(stat -c %s "$bin") bytes), zip $(( $(stat -c %s "$DIST/${NAME}_${ver}_${t}.zip") / 1024 / 1024 )) MiB, version $ver, CGO_ENABLED=0, -trimpath, $extra"
done

# --- the linux/amd64 binary run by terraform ---------------------------------------
if [[ " $TARGETS " == *" linux_amd64 "* ]]; then
  [[ -n $TERRAFORM ]] || fail "terraform is not on PATH (TERRAFORM names it)"
  bin=$work/linux_amd64/${NAME}_v${ver}
  want_version="$NAME $ver"$'\n'"default gateway_image ghcr.io/antifailure/egress-gateway:$ver"
  got_version=$("$bin" version) || fail "linux_amd64: $bin version"
  [[ $got_version == "$want_version" ]] || fail "linux_amd64: '$bin version' says '$got_version', want '$want_version'"
  mkdir -p "$work/tf"
  cat > "$work/tf/cli.tfrc" <<CFG
provider_installation {
  dev_overrides { "registry.terraform.io/antifailure/antifailure" = "$work/linux_amd64" }
  direct {}
}
CFG
  cat > "$work/tf/main.tf" <<'TF'
terraform {
  required_providers {
    antifailure = { source = "antifailure/antifailure" }
  }
}
provider "antifailure" {}
TF
  (cd "$work/tf" && TF_CLI_CONFIG_FILE=$work/tf/cli.tfrc "$TERRAFORM" providers schema -json > schema.json 2> schema.err) \
    || { cat "$work/tf/schema.err" >&2; fail "terraform providers schema -json with the release binary"; }
  python3 - "$work/tf/schema.json" "$ver" <<'PY' || fail "provider schema"
import json, sys
s = json.load(open(sys.argv[1]))["provider_schemas"]["registry.terraform.io/antifailure/antifailure"]
assert "antifailure_preview_environment" in s["resource_schemas"], s.keys()
assert "gateway_image" in s["provider"]["block"]["attributes"]["kubernetes"]["nested_type"]["attributes"]
print(f"[release-check] ok: schema: {len(s['resource_schemas'])} resources, {len(s.get('data_source_schemas', {}))} data sources", file=sys.stderr)
PY
  ok "linux_amd64: runs, reports $ver and default gateway image :$ver, served its schema to $(TF_CLI_CONFIG_FILE=$work/tf/cli.tfrc "$TERRAFORM" version 2>/dev/null | head -1)"
fi

# --- the gateway image ----------------------------------------------------------------
# The image's binaries must be the zips' linux binaries, its tag the version,
# its digests the published ones (internal/ociimage's release test).
platforms=$(for t in $TARGETS; do if [[ $t == linux_* ]]; then echo "linux/${t#linux_}"; fi; done | paste -sd,)
AF_RELEASE_DIST=$(realpath "$DIST") AF_RELEASE_VERSION=$ver AF_RELEASE_PLATFORMS=$platforms AF_RELEASE_BINARIES=$work \
  go test ./internal/ociimage -count=1 -run '^TestGatewayImageRoundTrip$' -v 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic|\s+\S+_test.go)' >&2 \
  || fail "gateway image"
ok "gateway image $ver ($platforms) holds the released binaries; digests match $(basename "$DIST/${NAME}_${ver}_gateway_image_digests.txt")"
log "PASS: release $ver"
