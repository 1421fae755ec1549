#!/usr/bin/env bash
# scripts/realnode.sh - a real one-node Kubernetes cluster on this machine, for
# the RealNode acceptance tests (make test-realnode): the testenv's etcd +
# kube-apiserver, kube-controller-manager with the controllers a node needs,
# kube-scheduler, containerd + runc (CRI), the bridge CNI, kubelet, kube-proxy
# (iptables) and, with --enforce, kube-router as a NetworkPolicy-only firewall.
# Images (probe busybox, pause, egress gateway) come from go run ./tools/ociimage
# and are imported with ctr: no Docker, no registry. Needs root.
#
#   scripts/realnode.sh build            apt packages; kubelet, kube-proxy and
#                                        kube-scheduler from testenv's k8s module;
#                                        kube-router (idempotent, cached in $NODE_ROOT)
#   scripts/realnode.sh images           build the OCI tarballs (gateway from this tree)
#   scripts/realnode.sh start [--enforce]  stop whatever runs, build images, bring
#                                        the node up Ready and schedulable
#   scripts/realnode.sh enforce-on|enforce-off   start / stop+clean kube-router only
#   scripts/realnode.sh stop             end what start started, restore the host
#   scripts/realnode.sh leftovers        list anything start left behind; rc 1 if so
#   scripts/realnode.sh test             build, start --enforce, the RealNode tests, stop,
#                                        leftovers (make test-realnode; REALNODE_RUN narrows -run)
# After start: source $NODE_ROOT/run/env (KUBECONFIG, image references, node name).
#
# Learned from ../shared/recipes/kube-node.sh (see its report for why each
# setting is what it is); what differs: images are built by the repo's own
# tool (OCI archives, the gateway from the provider binary), pause is busybox's
# sleep, kube-router builds in parallel with the k8s binaries, and
# enforcement can be toggled while environments exist (the tests need both
# states on one node).
#
# SAFETY (before any pod exists, in the mangle table, which is traversed before
# the filter table where kube-proxy and kube-router put their ACCEPTs): nothing
# is forwarded between cni0 and any other interface, pods cannot open
# connections to the host, and nothing but the host reaches the pod network's
# host address. ipMasq is off, pods get no nameserver, only cni0 forwards.
# One node per machine: cni0, 10.88.0.0/16 and ports 10248-10256 are fixed.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
NODE_ROOT=${NODE_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/antifailure-realnode}
TESTENV_ROOT=${TESTENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/antifailure-testenv}
TESTENV_SH=$REPO/scripts/testenv.sh
K8S_VERSION=${K8S_VERSION:-1.34.3}
# v2.1.0: the Go proxy reports security flaws for it; acceptable for a local
# harness whose pods reach nothing but each other, never for a product image.
KUBE_ROUTER_VERSION=${KUBE_ROUTER_VERSION:-2.1.0}

BIN=$NODE_ROOT/bin B=$NODE_ROOT/build R=$NODE_ROOT/run IMG=$NODE_ROOT/images
TIMES=$NODE_ROOT/times.txt
POD_CIDR=10.88.0.0/16 NODE_IP=10.88.0.1 SVC_CIDR=10.0.0.0/16 BRIDGE=cni0
# Named by its IP: the API server reaches the kubelet (exec, logs) through the
# node name first, and testenv's API server cannot be told otherwise.
NODE_NAME=$NODE_IP
BUSYBOX_IMAGE=local.test/busybox:1.35 PAUSE_IMAGE=local.test/pause:1 GATEWAY_IMAGE=local.test/egress-gateway:dev
TAG=antifailure-realnode # iptables comment on every rule this script adds
KC=$R/testenv/kubeconfig CTR_SOCK=$R/containerd/containerd.sock
# fixed paths kubelet, libcni and containerd 1.6 write to whatever the flags say
PREEXIST_PATHS=(/var/log/containers /var/lib/kubelet /var/lib/cni /run/containerd /usr/libexec/kubernetes)
# sysctls we, kubelet or the bridge plugin change; saved by start, restored by stop
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables vm.overcommit_memory vm.panic_on_oom
  kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

log() { echo "[realnode $(date +%T)] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
record() { mkdir -p "$NODE_ROOT"; echo "$(date -u +%FT%TZ) $*" >>"$TIMES"; log "$*"; }
now_ms() { date +%s%3N; }
k() { kubectl --kubeconfig "$KC" "$@"; }
ctr_() { ctr --address "$CTR_SOCK" --namespace k8s.io "$@"; }
wait_until() { # wait_until <seconds> <what> <cmd...>
  local end=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < end)) || { log "timed out waiting for $what"; return 1; }
    sleep 0.2
  done
}
spawn() { # spawn <name> <cmd...>: own session (a job-control kill of the caller cannot end it), log + pid under $R
  # (the log is appended to: kube-router's earlier runs stay next to the one enforce-on starts)
  local n=$1; shift
  setsid "$@" </dev/null >>"$R/logs/$n.log" 2>&1 &
  echo $! >"$R/pids/$n.pid"
}
alive() { [[ -f $R/pids/$1.pid ]] && kill -0 "$(cat "$R/pids/$1.pid")" 2>/dev/null; }

# ---------------------------------------------------------------- build ----
apt_deps() {
  local p missing=()
  for p in containerd runc containernetworking-plugins iptables ipset conntrack busybox-static; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  # kubectl: any >= 1.32 (Debian's is 1.20); this machine has one on PATH
  command -v kubectl >/dev/null || die "kubectl (>= 1.32) is not on PATH"
  ((${#missing[@]} == 0)) && return 0
  log "apt-get install ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build_k8s() { # in a copy of testenv's wrapper module with testenv's caches: the compile cache is shared
  [[ -x $BIN/kubelet && -x $BIN/kube-proxy && -x $BIN/kube-scheduler ]] && return 0
  [[ -f $TESTENV_ROOT/build/k8s/go.sum && -x $TESTENV_ROOT/bin/kube-controller-manager ]] || "$TESTENV_SH" build
  local d=$B/k8s l=$B/k8s.log c t0 cmds="kubelet kube-proxy kube-scheduler"
  mkdir -p "$d" "$BIN"
  exec 8>"$TESTENV_ROOT/build.lock" # two k8s builds on 2 cores would both crawl
  flock -n 8 || { log "waiting for $TESTENV_ROOT/build.lock"; flock 8; }
  export GOMODCACHE=$TESTENV_ROOT/gomodcache GOCACHE=$TESTENV_ROOT/gocache GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOWORK=off
  if [[ "$(cat "$d/.tidy-ok" 2>/dev/null)" != "v$K8S_VERSION $cmds" ]]; then
    # a copy: tidying for kubelet's packages must not rewrite the module testenv users read
    cp "$TESTENV_ROOT/build/k8s/go.mod" "$TESTENV_ROOT/build/k8s/go.sum" "$d/"
    printf '%s\n' '// Package tools pins the commands this module builds.' 'package tools' '' 'import (' \
      '	_ "k8s.io/kubernetes/cmd/kube-apiserver/app"' '	_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"' \
      '	_ "k8s.io/kubernetes/cmd/kube-proxy/app"' '	_ "k8s.io/kubernetes/cmd/kube-scheduler/app"' \
      '	_ "k8s.io/kubernetes/cmd/kubelet/app"' ')' >"$d/tools.go"
    (cd "$d" && go mod tidy) >>"$l" 2>&1 || { tail -30 "$l"; die "go mod tidy failed (log $l)"; }
    echo "v$K8S_VERSION $cmds" >"$d/.tidy-ok"
  fi
  local ldflags="-X k8s.io/component-base/version.gitVersion=v$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1
    -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$K8S_VERSION")"
  for c in $cmds; do
    [[ -x $BIN/$c ]] && continue
    t0=$SECONDS; log "building $c v$K8S_VERSION"
    (cd "$d" && go build -ldflags "$ldflags" -o "$BIN/$c.tmp" "k8s.io/kubernetes/cmd/$c") >>"$l" 2>&1 ||
      { tail -30 "$l"; die "$c build failed (log $l)"; }
    mv "$BIN/$c.tmp" "$BIN/$c"
    record "build $c: $((SECONDS - t0))s"
  done
  exec 8>&-
}

build_kube_router() { # own caches and lock: it shares nothing with the k8s build and runs beside it
  [[ -x $BIN/kube-router ]] && return 0
  local d=$B/kube-router l=$B/kube-router.log t0=$SECONDS
  mkdir -p "$d" "$BIN"
  exec 7>"$B/kube-router.lock"
  flock -n 7 || { log "waiting for $B/kube-router.lock"; flock 7; }
  [[ -x $BIN/kube-router ]] && return 0
  ( export GOMODCACHE=$B/gomodcache GOCACHE=$B/gocache GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOWORK=off
    cd "$d"
    if [[ ! -f go.sum ]]; then
      printf 'module local/kube-router-build\n\ngo 1.21\n' >go.mod
      printf 'package tools\n\nimport _ "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"\n' >tools.go
      go get "github.com/cloudnativelabs/kube-router/v2@v$KUBE_ROUTER_VERSION" && go mod tidy
    fi
    go build -ldflags "-X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=v$KUBE_ROUTER_VERSION" \
      -o "$BIN/kube-router.tmp" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router
  ) >>"$l" 2>&1 || { tail -30 "$l"; die "kube-router build failed (log $l)"; }
  mv "$BIN/kube-router.tmp" "$BIN/kube-router"
  exec 7>&-
  record "build kube-router v$KUBE_ROUTER_VERSION: $((SECONDS - t0))s"
}

build() {
  local t0=$SECONDS rc=0
  apt_deps
  build_kube_router &
  local rpid=$!
  build_k8s || rc=$?
  wait "$rpid" || rc=$?
  ((rc == 0)) || die "build failed"
  record "build (all, idempotent): $((SECONDS - t0))s"
}

images() { # the probe image (busybox), pause (busybox sleeping) and the gateway built from this tree
  local t0=$SECONDS
  mkdir -p "$IMG"
  (cd "$REPO" && go run ./tools/ociimage -kind busybox -tag "$BUSYBOX_IMAGE" -out "$IMG/busybox.tar" &&
    go run ./tools/ociimage -kind pause -tag "$PAUSE_IMAGE" -out "$IMG/pause.tar" &&
    go run ./tools/ociimage -kind gateway -tag "$GATEWAY_IMAGE" -out "$IMG/gateway.tar") >"$NODE_ROOT/images.log" 2>&1 ||
    { tail -20 "$NODE_ROOT/images.log"; die "image build failed"; }
  record "images: $((SECONDS - t0))s"
}

# ------------------------------------------------------------- runtime ----
need() {
  local f
  for f in "$TESTENV_ROOT/bin/etcd" "$TESTENV_ROOT/bin/kube-apiserver" "$TESTENV_ROOT/bin/kube-controller-manager" \
    "$BIN/kubelet" "$BIN/kube-proxy" "$BIN/kube-scheduler"; do
    [[ -x $f ]] || die "missing $f: run $0 build"
  done
  command -v containerd runc ctr iptables ipset conntrack kubectl >/dev/null || die "missing tools: run $0 build"
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || die "containernetworking-plugins missing"
  [[ $(id -u) == 0 ]] || die "needs root (iptables, sysctls, mounts)"
}

save_host_state() {
  local s p
  for s in "${SYSCTLS[@]}"; do echo "$s=$(sysctl -n "$s")"; done >"$R/sysctl.orig"
  for p in "${PREEXIST_PATHS[@]}"; do [[ -e $p ]] && echo "$p"; done >"$R/preexisting" || true
}

start_net() {
  # cni0 first, so its address can be the node IP (kubelet refuses loopback,
  # this kernel has no dummy links); the bridge plugin reuses it.
  ip link add "$BRIDGE" type bridge
  ip addr add "$NODE_IP/16" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  modprobe br_netfilter 2>/dev/null || true
  sysctl -qw net.bridge.bridge-nf-call-iptables=1 # bridged pod<->pod packets must meet iptables (policy, ClusterIP NAT)
  local t
  for t in mangle filter; do
    iptables -w -t "$t" -I FORWARD 1 -i "$BRIDGE" ! -o "$BRIDGE" -m comment --comment "$TAG: pods may not leave" -j DROP
    iptables -w -t "$t" -I FORWARD 1 ! -i "$BRIDGE" -o "$BRIDGE" -m comment --comment "$TAG: nothing routed into pods" -j DROP
  done
  iptables -w -t mangle -I INPUT 1 -i "$BRIDGE" -m conntrack ! --ctstate ESTABLISHED,RELATED \
    -m comment --comment "$TAG: pods may not open connections to the host" -j DROP
  iptables -w -t mangle -I INPUT 1 -d "$POD_CIDR" ! -i lo -m conntrack ! --ctstate ESTABLISHED,RELATED \
    -m comment --comment "$TAG: the node IP is host-only" -j DROP
  # pod -> ClusterIP -> pod needs forwarding; only cni0 keeps it (stop restores ip_forward)
  if [[ $(sysctl -n net.ipv4.ip_forward) == 0 ]]; then
    sysctl -qw net.ipv4.ip_forward=1
    local dev
    for dev in /proc/sys/net/ipv4/conf/*; do
      dev=${dev##*/}
      [[ $dev == "$BRIDGE" || $dev == all ]] || echo 0 >"/proc/sys/net/ipv4/conf/$dev/forwarding"
    done
  fi
  mkdir -p "$R/cni/net.d" "$R/cni/ipam"
  cat >"$R/cni/net.d/10-realnode.conflist" <<JSON
{"cniVersion": "1.0.0", "name": "realnode", "plugins": [{"type": "bridge", "bridge": "$BRIDGE",
  "isGateway": true, "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "dataDir": "$R/cni/ipam",
    "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$NODE_IP"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
JSON
}

start_containerd() {
  mkdir -p "$R/containerd"
  cat >"$R/containerd/config.toml" <<TOML
version = 2
root = "$R/containerd/root"
state = "$R/containerd/state"
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "$CTR_SOCK"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  enable_unprivileged_ports = false
  # nothing here holds CAP_SYS_RESOURCE: the sandbox's oom_score_adj -998 makes runc fail
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$R/cni/net.d"
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$R/containerd/runc"
TOML
  spawn containerd containerd --config "$R/containerd/config.toml" --log-level warn
  wait_until 30 "containerd" ctr --address "$CTR_SOCK" version || { tail -20 "$R/logs/containerd.log"; die "containerd did not start"; }
  local f
  for f in pause busybox gateway; do ctr_ images import "$IMG/$f.tar" >/dev/null || die "ctr import $IMG/$f.tar failed"; done
  wait_until 20 "CRI to see the local images" bash -c "ctr --address '$CTR_SOCK' -n k8s.io images ls -q | grep -q '$PAUSE_IMAGE'"
}

start_control_plane() {
  # testenv's kcm lacks endpointslice (kube-proxy) and nodelifecycle (removes the not-ready taint): run our own
  TESTENV_RUN=$R/testenv CLUSTERS=1 KCM=0 TESTENV_NO_BUILD=1 TESTENV_ROOT=$TESTENV_ROOT "$TESTENV_SH" start >"$R/logs/testenv-start.log" 2>&1 ||
    { cat "$R/logs/testenv-start.log"; die "testenv start failed"; }
  local server; server=$(sed -n 's/^export TESTENV_EU_URL=//p' "$R/testenv/env")
  spawn kube-controller-manager "$TESTENV_ROOT/bin/kube-controller-manager" --kubeconfig="$KC" --master="$server" \
    --leader-elect=false --secure-port=0 \
    --controllers=namespace,serviceaccount,deployment,replicaset,garbagecollector,endpointslice,endpointslicemirroring,endpoint,podgc,nodelifecycle \
    --service-account-private-key-file="$R/testenv/pki/sa.key" --root-ca-file="$R/testenv/pki/ca.crt"
  spawn kube-scheduler "$BIN/kube-scheduler" --kubeconfig="$KC" --leader-elect=false --secure-port=0
}

start_kubelet() {
  mkdir -p "$R/kubelet/root" "$R/kubelet/pod-logs"
  cat >"$R/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$CTR_SOCK
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
podLogsDir: $R/kubelet/pod-logs
volumePluginDir: $R/kubelet/volume-plugins
resolvConf: ""
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
syncFrequency: 10s
YAML
  spawn kubelet "$BIN/kubelet" --config="$R/kubelet/config.yaml" --kubeconfig="$KC" \
    --root-dir="$R/kubelet/root" --cert-dir="$R/kubelet/pki" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" --v=1
}

start_kube_proxy() {
  cat >"$R/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$KC"}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
  spawn kube-proxy "$BIN/kube-proxy" --config="$R/kube-proxy.yaml" --v=1
}

start_kube_router() {
  [[ -x $BIN/kube-router ]] || die "missing $BIN/kube-router: run $0 build"
  alive kube-router && return 0
  spawn kube-router "$BIN/kube-router" --kubeconfig="$KC" --hostname-override="$NODE_NAME" \
    --run-firewall=true --run-router=false --run-service-proxy=false --run-loadbalancer=false --enable-cni=false \
    --enable-ipv4=true --enable-ipv6=false --service-cluster-ip-range="$SVC_CIDR" --health-port=0 --metrics-port=0 --v=2 # v=2: each sync's trigger (pod, policy) is logged
  wait_until 60 "kube-router's KUBE-ROUTER-FORWARD chain" iptables -w -t filter -S KUBE-ROUTER-FORWARD ||
    { tail -30 "$R/logs/kube-router.log"; die "kube-router did not program iptables"; }
}

node_ready() { [[ $(k get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]; }
node_schedulable() { node_ready && [[ -z $(k get node "$NODE_NAME" -o 'jsonpath={.spec.taints}' 2>/dev/null) ]]; }

start() {
  local enforce=0 a
  for a in "$@"; do case $a in --enforce) enforce=1 ;; *) die "unknown option $a" ;; esac; done
  need
  stop quiet
  [[ ${REALNODE_SKIP_IMAGES:-0} == 1 && -f $IMG/gateway.tar ]] || images
  mkdir -p "$R/logs" "$R/pids"
  local t0 t_ctr t_ready t_end; t0=$(now_ms)
  save_host_state
  start_net # safety rules before containerd, so before any pod
  start_containerd
  t_ctr=$(now_ms)
  start_control_plane
  start_kubelet
  start_kube_proxy
  wait_until 180 "node Ready" node_ready || { tail -40 "$R/logs/kubelet.log"; die "node not Ready"; }
  t_ready=$(now_ms)
  wait_until 120 "node without taints" node_schedulable || die "node keeps a taint"
  wait_until 60 "kube-proxy's KUBE-SERVICES chain" iptables -w -t nat -S KUBE-SERVICES || die "kube-proxy did not program iptables"
  ((enforce)) && start_kube_router
  t_end=$(now_ms)
  record "start$( ((enforce)) && echo ' --enforce'): containerd+images $((t_ctr - t0))ms, nothing -> node Ready $((t_ready - t0))ms, schedulable and programmed $((t_end - t0))ms"
  cat >"$R/env" <<ENV
export KUBECONFIG=$KC
export REALNODE_KUBECONFIG=$KC
export REALNODE_ROOT=$NODE_ROOT
export REALNODE_SCRIPT=$REPO/scripts/realnode.sh
export REALNODE_NODE_NAME=$NODE_NAME
export REALNODE_BUSYBOX_IMAGE=$BUSYBOX_IMAGE
export REALNODE_GATEWAY_IMAGE=$GATEWAY_IMAGE
export CONTAINERD_ADDRESS=$CTR_SOCK
ENV
  echo "ENV=$R/env"
}

enforce_on() { [[ -d $R/pids ]] || die "node not running"; start_kube_router; log "kube-router enforcing"; }
enforce_off() {
  [[ -d $R/pids ]] || die "node not running"
  stop_pid kube-router
  "$BIN/kube-router" --cleanup-config --kubeconfig="$KC" >"$R/logs/kube-router-cleanup.log" 2>&1 || true
  sweep_iptables 'KUBE-ROUTER-|KUBE-POD-FW-|KUBE-NWPLCY-|KUBE-SRC-|KUBE-DST-'
  sweep_ipsets
  conntrack -D -s "$POD_CIDR" >/dev/null 2>&1 || true # no connection admitted before survives the switch
  log "kube-router stopped, its rules and ipsets removed"
}

# ----------------------------------------------------------------- stop ----
stop_pid() { # SIGTERM the recorded PIDs, SIGKILL what is left after 15 s
  local n f pid pids=() end
  for n in "$@"; do
    f=$R/pids/$n.pid
    [[ -f $f ]] || continue
    pid=$(cat "$f"); rm -f "$f"
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  end=$((SECONDS + 15))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  done
  return 0
}

sweep_iptables() { # delete chains matching the regex and every rule jumping to them
  local re=$1 cmd t chains c line
  for cmd in iptables iptables-legacy; do
    command -v "$cmd" >/dev/null || continue
    for t in raw mangle nat filter; do
      chains=$("$cmd-save" -t "$t" 2>/dev/null | sed -n 's/^:\([^ ]*\) .*/\1/p' | grep -E "^($re)" || true)
      [[ -n $chains ]] || continue
      "$cmd-save" -t "$t" 2>/dev/null | grep -E "^-A .* -j ($re)" | grep -vE "^-A ($re)" | while IFS= read -r line; do
        eval "$cmd -w -t $t -D ${line#-A }" 2>/dev/null || true
      done || true
      for c in $chains; do "$cmd" -w -t "$t" -F "$c" 2>/dev/null || true; done
      for c in $chains; do "$cmd" -w -t "$t" -X "$c" 2>/dev/null || true; done
    done
  done
}

sweep_own_rules() {
  local cmd t line
  for cmd in iptables iptables-legacy; do
    command -v "$cmd" >/dev/null || continue
    for t in raw mangle nat filter; do
      "$cmd-save" -t "$t" 2>/dev/null | grep -E "^-A .*--comment \"?$TAG" | while IFS= read -r line; do
        eval "$cmd -w -t $t -D ${line#-A }" 2>/dev/null || true
      done || true
    done
  done
}

sweep_ipsets() {
  local s
  for s in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router)' || true); do ipset destroy "$s" 2>/dev/null || true; done
}

unmount_under() { # every mount at or below dir, deepest first
  local d=$1 m i x
  for i in 1 2 3; do
    mapfile -t m < <(awk -v d="$d" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r | uniq)
    ((${#m[@]})) || return 0
    for x in "${m[@]}"; do umount "$x" 2>/dev/null || umount -l "$x" 2>/dev/null || true; done
  done
}

stop() {
  local quiet=${1:-} t0=$SECONDS pid id cg c l p kv
  if [[ -d $R ]]; then
    [[ $quiet ]] || log "stopping"
    if alive kubelet && [[ -f $KC ]]; then # pods first, while kubelet can still run CNI DEL
      k delete pods --all -A --grace-period=0 --force --wait=false >/dev/null 2>&1 || true
      wait_until 60 "pod sandboxes to stop" bash -c "! ctr --address '$CTR_SOCK' -n k8s.io tasks ls -q | grep -q ." || true
    fi
    stop_pid kube-router kube-proxy kubelet kube-scheduler kube-controller-manager
    if alive containerd; then
      for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
      sleep 0.5
      for id in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$id" >/dev/null 2>&1 || true; done
      for id in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$id" >/dev/null 2>&1 || true; done
    fi
    stop_pid containerd
    for pid in $(pgrep -f -- "-address $CTR_SOCK" 2>/dev/null || true); do # shims of *our* containerd
      [[ $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) == *containerd-shim*"$CTR_SOCK"* ]] && kill -KILL "$pid" 2>/dev/null || true
    done
    for cg in $(find /sys/fs/cgroup/pids/kubepods -name cgroup.procs 2>/dev/null); do # after a crash: pod processes
      for pid in $(cat "$cg" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
    done
    [[ -d $R/testenv ]] && TESTENV_RUN=$R/testenv TESTENV_ROOT=$TESTENV_ROOT "$TESTENV_SH" stop >/dev/null 2>&1 || true
    [[ -x $BIN/kube-proxy ]] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1 || true
  fi
  # kernel state, also after a crash that lost $R
  sweep_iptables 'KUBE-'
  sweep_own_rules
  sweep_ipsets
  conntrack -D -s "$POD_CIDR" >/dev/null 2>&1 || true
  conntrack -D -d "$POD_CIDR" >/dev/null 2>&1 || true
  conntrack -D -d "$SVC_CIDR" >/dev/null 2>&1 || true
  for l in $(ip -o link show master "$BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do ip link del "$l" 2>/dev/null || true; done
  ip link del "$BRIDGE" 2>/dev/null || true
  unmount_under "$R"
  unmount_under /run/containerd
  for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods; do
    [[ -d $c ]] && find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  if [[ -d $R ]]; then
    if [[ -f $R/sysctl.orig ]]; then
      while IFS= read -r kv; do sysctl -qw "$kv" >/dev/null 2>&1 || true; done <"$R/sysctl.orig"
    fi
    for p in "${PREEXIST_PATHS[@]}"; do
      grep -qxF "$p" "$R/preexisting" 2>/dev/null && continue
      [[ -e $p ]] || continue
      [[ $(awk -v d="$p" 'index($5, d) == 1' /proc/self/mountinfo) ]] && { log "not removing $p: mounts below it"; continue; }
      rm -rf "$p"
    done
    awk -v d="$R" 'index($5, d) == 1 {f=1} END {exit !f}' /proc/self/mountinfo && die "mounts remain below $R; not deleting it"
    rm -rf "$R"
    [[ $quiet ]] || record "stop: $((SECONDS - t0))s"
  fi
  return 0
}

leftovers() { # anything a start may have left; rc 1 if so
  local bad=0 x cl
  say() { echo "LEFTOVER $*"; bad=1; }
  for x in $(pgrep -f "$NODE_ROOT/|containerd-shim|$TESTENV_ROOT/bin/" 2>/dev/null || true); do
    [[ $x == "$$" ]] && continue
    cl=$(tr '\0' ' ' <"/proc/$x/cmdline" 2>/dev/null) || continue
    [[ $cl == *realnode.sh* || -z $cl ]] && continue
    [[ $cl == *"$NODE_ROOT/"* || $cl == *containerd-shim*"$NODE_ROOT"* ]] && say "process $x: $cl"
  done
  while read -r x; do say "mount $x"; done < <(awk '$5 ~ "^('"$R"'|/run/containerd|/run/netns/cni-|/var/lib/kubelet)" {print $5}' /proc/self/mountinfo)
  while read -r x; do say "iptables $x"; done < <({ iptables-save 2>/dev/null; iptables-legacy-save 2>/dev/null; } | grep -E "KUBE-|$TAG" | grep -v '^#')
  while read -r x; do say "ipset $x"; done < <(ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router)')
  while read -r x; do say "link $x"; done < <(ip -o link show | awk -F': ' '{print $2}' | grep -E "^($BRIDGE|veth)" || true)
  [[ -d /run/netns ]] && while read -r x; do say "netns $x"; done < <(ls /run/netns | grep '^cni-' || true)
  for x in /sys/fs/cgroup/*/kubepods; do [[ -e $x ]] && say "cgroup $x"; done
  for x in "${PREEXIST_PATHS[@]}"; do [[ -e $x ]] && say "path $x"; done
  [[ -e $R ]] && say "state dir $R"
  ((bad == 0)) && echo "clean: no processes, mounts, iptables rules, ipsets, links, netns, cgroups or files left"
  return $bad
}

run_tests() { # build, start --enforce, the RealNode tests (serially), stop, prove nothing is left
  [[ $(id -u) == 0 ]] || die "the RealNode tests need root (iptables, sysctls, mounts)"
  command -v terraform >/dev/null || die "terraform is not on PATH"
  build
  start --enforce
  local rc=0 t0=$SECONDS
  ( set -a; . "$R/env"; set +a; cd "$REPO"
    TF_ACC=1 TF_ACC_TERRAFORM_PATH=${TF_ACC_TERRAFORM_PATH:-$(command -v terraform)} \
      go test -tags realnode -p 1 -count=1 -timeout 30m -run "${REALNODE_RUN:-RealNode}" -v ./internal/provider ) || rc=$?
  record "RealNode tests: rc=$rc $((SECONDS - t0))s"
  stop
  leftovers || rc=1
  return $rc
}

case ${1:-} in
  build) build ;;
  test) run_tests ;;
  build-router) build_kube_router ;;
  images) images ;;
  start) shift; start "$@" ;;
  stop) stop ;;
  enforce-on) enforce_on ;;
  enforce-off) enforce_off ;;
  leftovers) leftovers ;;
  *) echo "usage: $0 build|images|start [--enforce]|enforce-on|enforce-off|stop|leftovers|test" >&2; exit 2 ;;
esac
