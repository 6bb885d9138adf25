#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubectl, kube-scheduler and kubelet 1.20.2 offline from Debian's
# `kubernetes` source package with Debian's Go (static, CGO_ENABLED=0, as debian/rules builds), compiles the pod
# sandbox's `pause` from the same source (build/pause/linux/pause.c, static), and installs etcd from Debian's
# `etcd-server` package. The Kubernetes controller's tests (src/controller/k8s/*.test.ts, test/k8s-*.test.ts) start
# these binaries as a real API server, and the pod tests (test/k8s-pods.test.ts) as a real node with containerd.
#
# Binaries are cached in ${ARCLIGHT_K8S_BIN:-$HOME/.cache/arclight/k8s-1.20.2}; a run with all of them present
# only checks etcd and exits, and a cache missing some builds only those (the Go build cache in the source tree
# keeps what they share). Needs root (apt-get). Takes 12+ minutes of CPU on 2 cores for the control plane, and
# more for kubelet and kube-scheduler (docs/kubernetes.md, Measured).
set -euo pipefail

K8S_VERSION=1.20.2
BIN_DIR="${ARCLIGHT_K8S_BIN:-$HOME/.cache/arclight/k8s-$K8S_VERSION}"
WORK_DIR="${ARCLIGHT_K8S_SRC:-$HOME/.cache/arclight/k8s-src}"
BINARIES=(kube-apiserver kube-controller-manager kubectl kube-scheduler kubelet)
export DEBIAN_FRONTEND=noninteractive

log() { echo "[build-k8s $(date -u +%H:%M:%S)] $*"; }

# The binaries (and pause) not yet in the cache, one a line.
missing_binaries() {
  local b
  for b in "${BINARIES[@]}" pause; do [ -x "$BIN_DIR/$b" ] || echo "$b"; done
}

# apt knows a candidate for package $1 (a fresh image may have no package lists)
apt_knows() { apt-cache policy "$1" 2>/dev/null | grep -q 'Candidate: [0-9]'; }

install_etcd() {
  if command -v etcd >/dev/null 2>&1; then return; fi
  apt_knows etcd-server || apt-get update -qq
  # The package's init scripts may try to start a system etcd; there is no init system here, so that is a no-op.
  apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
}

# A deb-src entry for every Debian source already configured for binaries (same mirror, suites, components).
add_deb_src() {
  if grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then return; fi
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    grep -q 'debian' "$f" || continue
    sed -e 's/^Types: deb$/Types: deb-src/' "$f" >"/etc/apt/sources.list.d/arclight-src-$(basename "$f")"
  done
  if [ -f /etc/apt/sources.list ] && grep -qE '^deb .*debian' /etc/apt/sources.list; then
    grep -E '^deb .*debian' /etc/apt/sources.list | sed -e 's/^deb /deb-src /' >/etc/apt/sources.list.d/arclight-src.list
  fi
  apt-get update -qq
}

fetch_source() {
  mkdir -p "$WORK_DIR"
  cd "$WORK_DIR"
  if ! ls -d kubernetes-*/ >/dev/null 2>&1; then
    apt_knows dpkg-dev || apt-get update -qq
    apt-get install -y -qq --no-install-recommends dpkg-dev golang-go >/dev/null
    log "apt-get source kubernetes"
    apt-get source -qq kubernetes
  fi
  SRC_DIR="$(ls -d "$WORK_DIR"/kubernetes-*/ | head -1)"
  log "source in $SRC_DIR ($(head -1 "$SRC_DIR/debian/changelog"))"
}

build() {
  apt_knows jq || apt-get update -qq
  apt-get install -y -qq --no-install-recommends golang-go jq rsync make >/dev/null
  log "$(go version)"
  cd "$SRC_DIR"
  # As debian/rules does: a GOPATH with k8s.io/kubernetes pointing at the source (GOPATH mode, vendor/ shipped
  # in the source, so nothing is downloaded), then the upstream Makefile. The archive carries its version (v1.20.2).
  export GOPATH="$SRC_DIR/.go" CGO_ENABLED=0 GOPROXY=off GOFLAGS=
  mkdir -p .go/src/k8s.io
  [ -L .go/src/k8s.io/kubernetes ] || ln -s ../../.. .go/src/k8s.io/kubernetes
  local -a wanted=()
  local b
  for b in $(missing_binaries); do [ "$b" = pause ] || wanted+=("$b"); done
  if [ "${#wanted[@]}" -gt 0 ]; then
    log "make WHAT=${wanted[*]}"
    # kubelet is not in Kubernetes' list of static binaries: KUBE_STATIC_OVERRIDES builds it without cgo as well.
    HOME="$WORK_DIR/home" KUBE_STATIC_OVERRIDES=kubelet nice -n 15 make WHAT="${wanted[*]/#/cmd/}" GOLDFLAGS="-s -w"
  fi
  mkdir -p "$BIN_DIR"
  # Each binary lands under its own name only when complete, so an interrupted run leaves no half-written file.
  for b in "${wanted[@]}"; do
    cp "_output/bin/$b" "$BIN_DIR/$b.partial"
    mv "$BIN_DIR/$b.partial" "$BIN_DIR/$b"
  done
  if [ ! -x "$BIN_DIR/pause" ]; then
    apt_knows libc6-dev || apt-get update -qq
    apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
    # As build/pause/Makefile does: a static binary, its version string set at compile time.
    gcc -Os -Wall -Werror -static -DVERSION=v3.4-arclight -o "$BIN_DIR/pause.partial" build/pause/linux/pause.c
    mv "$BIN_DIR/pause.partial" "$BIN_DIR/pause"
  fi
}

install_etcd
log "etcd: $(etcd --version 2>/dev/null | head -1)"
if [ -z "$(missing_binaries)" ]; then
  log "cached: $BIN_DIR"
  exit 0
fi
log "to build: $(missing_binaries | tr '\n' ' ')"
add_deb_src
fetch_source
build
"$BIN_DIR/kube-apiserver" --version
log "built into $BIN_DIR"
