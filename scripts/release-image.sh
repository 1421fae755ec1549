#!/usr/bin/env bash
# scripts/release-image.sh VERSION PLATFORMS - the egress gateway image of a
# release, into dist-image/ (goreleaser's before hook; dist/ is goreleaser's
# and must be empty when it starts). The linux binaries are built here with
# goreleaser's exact flags, so they are the zips' binaries byte for byte
# (scripts/release-check.sh compares them).
#
#   scripts/release-image.sh 0.1.0 linux/amd64,linux/arm64
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:?version} platforms=${2:?platforms, e.g. linux/amd64,linux/arm64}
rm -rf dist-image && mkdir -p dist-image/bin
args=()
for p in ${platforms//,/ }; do
  os=${p%/*} arch=${p#*/}
  [[ $os == linux ]] || { echo "release-image: $p: the gateway image is linux only" >&2; exit 1; }
  bin=dist-image/bin/${os}_${arch}/terraform-provider-antifailure
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X main.version=$ver" -o "$bin" .
  args+=(-binary "$p=$bin")
done
go run ./tools/gatewayrelease build -version "$ver" -out dist-image "${args[@]}"
