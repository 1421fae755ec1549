#!/usr/bin/env bash
# scripts/release-snapshot.sh [config] - a complete release build, offline,
# signed with a throwaway RSA key: what `goreleaser release` would publish,
# in dist/. The key is generated into a temporary GNUPGHOME and deleted on
# exit; only its public half stays, as dist/snapshot-signing-key.asc, for
# scripts/release-check.sh.
#
#   scripts/release-snapshot.sh                       all six targets (.goreleaser.yml)
#   scripts/release-snapshot.sh .goreleaser.ci.yml    linux/amd64 only (CI)
#
# Needs: goreleaser (GORELEASER, default $TOOLS_DIR/goreleaser; make builds
# it), gpg (Debian's gnupg).
set -euo pipefail
cd "$(dirname "$0")/.."

CONFIG=${1:-.goreleaser.yml}
TOOLS_DIR=${TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/antifailure-tools}
GORELEASER=${GORELEASER:-$TOOLS_DIR/goreleaser}
log() { echo "[release-snapshot $(date +%T)] $*" >&2; }
die() { log "$*"; exit 1; }

[[ -x $GORELEASER ]] || die "$GORELEASER missing: make $GORELEASER builds it from the Go module proxy"
command -v gpg >/dev/null || die "gpg missing: apt-get install gnupg"

GNUPGHOME=$(mktemp -d) && export GNUPGHOME
trap 'gpgconf --kill all >/dev/null 2>&1 || true; rm -rf "$GNUPGHOME"' EXIT
# RSA: the Terraform Registry rejects ECC signing keys.
gpg --batch --quiet --gen-key <<KEY
Key-Type: RSA
Key-Length: 4096
Key-Usage: sign
Name-Real: antifailure snapshot (throwaway)
Name-Email: snapshot@antifailure.invalid
Expire-Date: 1d
%no-protection
%commit
KEY
GPG_FINGERPRINT=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "fpr" {print $10; exit}')
[[ -n $GPG_FINGERPRINT ]] || die "no key was generated"
export GPG_FINGERPRINT
log "throwaway RSA key $GPG_FINGERPRINT"

rm -rf dist-image
"$GORELEASER" release --snapshot --clean --config "$CONFIG"

# A snapshot skips the release pipe, which is what copies the manifest and
# the image files next to the zips; do it here so dist/ holds the set the
# release would publish.
ver=$(python3 -c 'import json; print(json.load(open("dist/metadata.json"))["version"])')
cp terraform-registry-manifest.json "dist/terraform-provider-antifailure_${ver}_manifest.json"
cp dist-image/*_gateway_image.tar dist-image/*_gateway_image_digests.txt dist/
gpg --batch --armor --export "$GPG_FINGERPRINT" > dist/snapshot-signing-key.asc
log "dist/ holds release $ver:"
(cd dist && ls -l terraform-provider-antifailure_"$ver"_* >&2)
