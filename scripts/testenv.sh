#!/usr/bin/env bash
# scripts/testenv.sh - a real etcd + kube-apiserver (+ kube-controller-manager)
# on 127.0.0.1 for the Kubernetes runtime's tests and for reproducing
# terraform apply/plan/destroy by hand. No docker, no kubelet, no root.
#
#   scripts/testenv.sh build   build the binaries if missing (cold: 7-20 min on
#                              2 cores; warm: nothing to do)
#   scripts/testenv.sh start   build if missing, (re)start from a fresh state,
#                              wait for /readyz on both API servers, write a
#                              kubeconfig and an env file, print both paths
#   scripts/testenv.sh stop    stop what start started (recorded PIDs only),
#                              delete the state
#   scripts/testenv.sh env     print the env file of a running testenv
#
# Two isolated clusters: one etcd, one kube-apiserver per cluster with its own
# --etcd-prefix, behind the kubeconfig contexts eu-prod and us-prod (plus
# eu-prod-viewer, a user with no RBAC bindings). kube-controller-manager runs
# per cluster with the namespace, serviceaccount, deployment, replicaset and
# garbagecollector controllers, so that namespace deletion completes and a
# Deployment gets its ReplicaSet and Pods. Nothing schedules or runs pods: the
# kubelet stand-in (go run ./internal/testenv/kubelet) plays that part.
#
# Knobs (environment):
#   TESTENV_ROOT      build cache and binaries (default ~/.cache/antifailure-testenv;
#                     binaries in $TESTENV_ROOT/bin: etcd, kube-apiserver,
#                     kube-controller-manager)
#   TESTENV_RUN       state of one running testenv (default $TESTENV_ROOT/run);
#                     give each concurrent user its own
#   TESTENV_NO_BUILD  1: never build; fail if a binary is missing (tests use this)
#   K8S_VERSION=1.34.3  ETCD_VERSION=3.6.16
#   CLUSTERS=2        1: both contexts point at one API server
#   KCM=1             0: no kube-controller-manager
# Needs: go (with GOPROXY), openssl, curl, ss, base64, flock.
set -euo pipefail

ROOT=${TESTENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/antifailure-testenv}
RUN=${TESTENV_RUN:-$ROOT/run}
K8S_VERSION=${K8S_VERSION:-1.34.3}
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
CLUSTERS=${CLUSTERS:-2}
KCM=${KCM:-1}
NO_BUILD=${TESTENV_NO_BUILD:-0}
BIN=$ROOT/bin

log() { echo "[testenv $(date +%T)] $*" >&2; }
die() { log "$*"; exit 1; }

gobuild() { # gobuild <dir> <log> <cmd...>: run in dir, log output, show tail on failure
  local d=$1 l=$2; shift 2
  (cd "$d" && "$@") >>"$l" 2>&1 || { tail -30 "$l" >&2; die "failed: $* (log: $l)"; }
}

have_bins() {
  [[ -x $BIN/etcd && -x $BIN/kube-apiserver && ($KCM != 1 || -x $BIN/kube-controller-manager) ]]
}

build() {
  have_bins && return 0
  if [[ $NO_BUILD == 1 ]]; then
    die "testenv binaries missing in $BIN (need etcd, kube-apiserver$([[ $KCM == 1 ]] && echo ', kube-controller-manager')); run scripts/testenv.sh build first (cold: 7-20 min)"
  fi
  mkdir -p "$BIN" "$ROOT/build"
  # One build at a time, whoever started it: a second build of k8s.io/kubernetes
  # on 2 cores would take both twice as long.
  exec 9>"$ROOT/build.lock"
  if ! flock -n 9; then
    log "another build holds $ROOT/build.lock; waiting for it"
    flock 9
  fi
  have_bins && return 0
  # Builds get their own module and build caches next to the binaries, so that
  # a warm cache survives a clean clone of this repository.
  export GOMODCACHE=${TESTENV_GOMODCACHE:-$ROOT/gomodcache}
  export GOCACHE=${TESTENV_GOCACHE:-$ROOT/gocache}
  export GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOWORK=off
  local t0=$SECONDS
  if [[ ! -x $BIN/etcd ]]; then
    log "building etcd v$ETCD_VERSION"
    local d=$ROOT/build/etcd l=$ROOT/build/etcd.log; rm -rf "$d" "$l"; mkdir -p "$d"
    cat >"$d/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
    gobuild "$d" "$l" go mod init testenv/etcd
    gobuild "$d" "$l" go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
    gobuild "$d" "$l" go mod tidy
    gobuild "$d" "$l" go build -o "$BIN/etcd.tmp" .
    mv "$BIN/etcd.tmp" "$BIN/etcd"
    log "etcd built ($((SECONDS - t0))s)"
  fi
  local d=$ROOT/build/k8s l=$ROOT/build/k8s.log
  local ldflags="-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION
    -X k8s.io/component-base/version.gitMajor=1
    -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION")"
  if [[ ! -f $d/go.sum ]]; then
    log "preparing module for k8s.io/kubernetes v$K8S_VERSION"
    rm -rf "$d" "$l"; mkdir -p "$d"
    # k8s.io/kubernetes replaces each staging module (k8s.io/api, client-go, ...)
    # with ./staging/src/...; replaces in a dependency are ignored, so pin every
    # staging module (required at v0.0.0) to its published tag v0.<minor>.<patch>.
    local kmod staging
    kmod=$(cd "$d" && go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" |
      sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
    [[ -f $kmod ]] || die "could not download k8s.io/kubernetes@v$K8S_VERSION"
    staging=$(awk '$1 ~ /^k8s\.io\/[a-z0-9-]+$/ && $2 == "v0.0.0" {print $1}' "$kmod")
    {
      printf 'module testenv/k8sbins\n\ngo 1.24.0\n\ngodebug default=go1.24\n\n'
      printf 'require k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
      for m in $staging; do printf '\t%s => %s v0.%s\n' "$m" "$m" "${K8S_VERSION#1.}"; done
      printf ')\n'
    } >"$d/go.mod"
    cat >"$d/tools.go" <<'GO'
// Package tools only exists so that go.mod/go.sum cover these commands.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"
)
GO
    gobuild "$d" "$l" go mod tidy
  fi
  if [[ ! -x $BIN/kube-apiserver ]]; then
    log "building kube-apiserver v$K8S_VERSION (cold cache: 7-18 min on 2 cores)"
    t0=$SECONDS
    gobuild "$d" "$l" go build -ldflags "$ldflags" -o "$BIN/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
    mv "$BIN/kube-apiserver.tmp" "$BIN/kube-apiserver"
    log "kube-apiserver built ($((SECONDS - t0))s)"
  fi
  if [[ $KCM == 1 && ! -x $BIN/kube-controller-manager ]]; then
    log "building kube-controller-manager v$K8S_VERSION (~2-4 min after kube-apiserver)"
    t0=$SECONDS
    gobuild "$d" "$l" go build -ldflags "$ldflags" -o "$BIN/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager
    mv "$BIN/kube-controller-manager.tmp" "$BIN/kube-controller-manager"
    log "kube-controller-manager built ($((SECONDS - t0))s)"
  fi
}

USED_PORTS=" "
free_port() { # a random unused TCP port below the ephemeral range
  local p
  while :; do
    p=$(shuf -i 20000-32000 -n 1)
    [[ $USED_PORTS == *" $p "* ]] && continue
    ss -Hltn "sport = :$p" | grep -q . && continue
    USED_PORTS+="$p "; echo "$p"; return
  done
}

wait_for() { # wait_for <seconds> <pid> <cmd...>: until cmd succeeds; fail at once if pid exits
  local end=$((SECONDS + $1)) pid=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    kill -0 "$pid" 2>/dev/null || return 2
    ((SECONDS < end)) || return 1
    sleep 0.2
  done
}

stop() { # SIGTERM only the PIDs recorded in $RUN/*.pid (etcd last), then delete the state
  local f pid pids=()
  for f in "$RUN"/kcm-*.pid "$RUN"/apiserver-*.pid "$RUN"/etcd.pid; do
    [[ -e $f ]] || continue
    pid=$(cat "$f"); rm -f "$f"
    kill -0 "$pid" 2>/dev/null || continue
    [[ $f == */etcd.pid ]] && wait_gone "${pids[@]}" # let the API servers finish first
    kill -TERM "$pid"; pids+=("$pid")
  done
  wait_gone "${pids[@]}"
  rm -rf "$RUN"
}

wait_gone() { # wait up to 15s for PIDs to exit, then SIGKILL the rest
  local pid end=$((SECONDS + 15))
  for pid in "$@"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
  done
  return 0
}

gen_certs() {
  local c=$RUN/pki; mkdir -p "$c"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$c/ca.key" -out "$c/ca.crt" -days 3650 -subj /CN=testenv-ca 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$c/apiserver.key" -out "$c/apiserver.csr" -subj /CN=kube-apiserver 2>/dev/null
  printf '%s\n' 'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes.default.svc' \
    'extendedKeyUsage=serverAuth' 'keyUsage=critical,digitalSignature' >"$c/ext"
  openssl x509 -req -in "$c/apiserver.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial \
    -out "$c/apiserver.crt" -days 3650 -extfile "$c/ext" 2>/dev/null
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
  # token,user,uid,"groups": admin is in system:masters (full access under RBAC);
  # viewer has no bindings, so RBAC denies it until a test binds a role.
  printf '%s\n' 'admin-token,admin,uid-admin,"system:masters"' 'viewer-token,viewer,uid-viewer' >"$RUN/tokens.csv"
}

start_etcd() { # ports are picked at random; another process may take one first, so retry
  local try peer pid rc
  for try in 1 2 3 4 5; do
    ETCD_PORT=$(free_port); peer=$(free_port)
    "$BIN/etcd" --name=testenv --data-dir="$RUN/etcd-data" \
      --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls="http://127.0.0.1:$peer" --initial-advertise-peer-urls="http://127.0.0.1:$peer" \
      --initial-cluster="testenv=http://127.0.0.1:$peer" \
      --unsafe-no-fsync --log-level=warn >"$RUN/etcd.log" 2>&1 &
    pid=$!; echo "$pid" >"$RUN/etcd.pid"
    rc=0; wait_for 30 "$pid" curl -fsS "http://127.0.0.1:$ETCD_PORT/health" || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 2)) && grep -q 'address already in use' "$RUN/etcd.log"; then
      log "etcd: a port was taken meanwhile; retrying ($try)"; rm -rf "$RUN/etcd-data"; continue
    fi
    break
  done
  tail -20 "$RUN/etcd.log" >&2; die "etcd not healthy"
}

start_apiserver() { # start_apiserver <name>; sets PORT_<name> and PID_<name>
  local name=$1 port; port=$(free_port)
  "$BIN/kube-apiserver" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$port" \
    --tls-cert-file="$RUN/pki/apiserver.crt" --tls-private-key-file="$RUN/pki/apiserver.key" \
    --cert-dir="$RUN/pki/$name" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" --etcd-prefix="/registry-$name" \
    --token-auth-file="$RUN/tokens.csv" \
    --authorization-mode=RBAC \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$RUN/pki/sa.pub" \
    --service-account-signing-key-file="$RUN/pki/sa.key" \
    --service-cluster-ip-range=10.0.0.0/16 \
    --disable-admission-plugins=ServiceAccount \
    --enable-priority-and-fairness=false \
    >"$RUN/apiserver-$name.log" 2>&1 &
  echo $! >"$RUN/apiserver-$name.pid"
  printf -v "PORT_$name" '%s' "$port"
  printf -v "PID_$name" '%s' "$!"
}

start_kcm() { # start_kcm <name> <port>
  "$BIN/kube-controller-manager" --kubeconfig="$RUN/kubeconfig" --master="https://127.0.0.1:$2" \
    --leader-elect=false --secure-port=0 \
    --controllers=namespace,serviceaccount,deployment,replicaset,garbagecollector \
    --concurrent-namespace-syncs=5 \
    --service-account-private-key-file="$RUN/pki/sa.key" --root-ca-file="$RUN/pki/ca.crt" \
    >"$RUN/kcm-$1.log" 2>&1 &
  echo $! >"$RUN/kcm-$1.pid"
}

ready() { curl -fsS --cacert "$RUN/pki/ca.crt" -H "Authorization: Bearer admin-token" "https://127.0.0.1:$1/readyz"; }

wait_ready() { # wait_ready <name>: until /readyz answers; restart on a port taken meanwhile
  local name=$1 try rc port pid
  for try in 1 2 3 4 5; do
    port=PORT_$name pid=PID_$name
    rc=0; wait_for 120 "${!pid}" ready "${!port}" || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 2)) && grep -q 'address already in use' "$RUN/apiserver-$name.log"; then
      log "apiserver $name: its port was taken meanwhile; retrying ($try)"; start_apiserver "$name"; continue
    fi
    break
  done
  tail -30 "$RUN/apiserver-$name.log" >&2; die "apiserver $name not ready"
}

write_kubeconfig() { # write_kubeconfig <eu-port> <us-port>
  local ca; ca=$(base64 -w0 <"$RUN/pki/ca.crt")
  cat >"$RUN/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: eu-prod
  cluster: {server: "https://127.0.0.1:$1", certificate-authority-data: "$ca"}
- name: us-prod
  cluster: {server: "https://127.0.0.1:$2", certificate-authority-data: "$ca"}
users:
- name: admin
  user: {token: admin-token}
- name: viewer
  user: {token: viewer-token}
contexts:
- name: eu-prod
  context: {cluster: eu-prod, user: admin}
- name: us-prod
  context: {cluster: us-prod, user: admin}
- name: eu-prod-viewer
  context: {cluster: eu-prod, user: viewer}
current-context: eu-prod
KC
  chmod 600 "$RUN/kubeconfig"
}

start() {
  build
  stop
  mkdir -p "$RUN"
  local t0=$SECONDS
  gen_certs
  start_etcd
  start_apiserver eu
  if [[ $CLUSTERS == 2 ]]; then start_apiserver us; else PORT_us=$PORT_eu; fi
  wait_ready eu
  if [[ $CLUSTERS == 2 ]]; then wait_ready us; fi
  write_kubeconfig "$PORT_eu" "$PORT_us"
  if [[ $KCM == 1 ]]; then
    start_kcm eu "$PORT_eu"
    if [[ $CLUSTERS == 2 ]]; then start_kcm us "$PORT_us"; fi
  fi
  cat >"$RUN/env" <<ENV
export KUBECONFIG=$RUN/kubeconfig
export TESTENV_RUN=$RUN
export TESTENV_KUBECONFIG=$RUN/kubeconfig
export TESTENV_EU_URL=https://127.0.0.1:$PORT_eu
export TESTENV_US_URL=https://127.0.0.1:$PORT_us
export TESTENV_TOKEN=admin-token
export TESTENV_CA=$RUN/pki/ca.crt
export TESTENV_KCM=$KCM
ENV
  log "ready in $((SECONDS - t0))s (etcd :$ETCD_PORT, eu-prod :$PORT_eu, us-prod :$PORT_us, kcm=$KCM); source $RUN/env"
  echo "KUBECONFIG=$RUN/kubeconfig"
  echo "ENV=$RUN/env"
}

case ${1:-start} in
  start) start ;;
  stop) stop; log stopped ;;
  build) build ;;
  env) [[ -f $RUN/env ]] || die "no testenv running under $RUN"; cat "$RUN/env" ;;
  *) echo "usage: $0 [build|start|stop|env]" >&2; exit 2 ;;
esac
