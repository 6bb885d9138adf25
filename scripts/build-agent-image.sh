#!/usr/bin/env bash
# Builds the agent image's base layer offline: a Debian bookworm root file system made by `debootstrap` from the apt
# mirror this machine is configured with (python3, pytest for the SWE tasks' tests, bash, git), packed as one
# uncompressed layer tar. The Kubernetes pod tests (test/k8s-pods.test.ts) add a second layer holding the current
# sdk/python (package arclight_agent) and import both into containerd as a docker-archive
# (src/controller/k8s/testing/agent-image.ts), so the SDK in the pod is always the one of the checkout.
#
# Cached in ${ARCLIGHT_AGENT_IMAGE_DIR:-$HOME/.cache/arclight/agent-image-bookworm-2} (the number changes with the
# package list): a run with rootfs.tar present exits at once. Needs root (debootstrap, apt-get). 7.7 minutes at load
# 22 on the shared 2-core machine (docs/kubernetes.md, Measured).
set -euo pipefail

IMAGE_DIR="${ARCLIGHT_AGENT_IMAGE_DIR:-$HOME/.cache/arclight/agent-image-bookworm-2}"
SUITE=bookworm
PACKAGES=python3,python3-pytest,git
export DEBIAN_FRONTEND=noninteractive

log() { echo "[build-agent-image $(date -u +%H:%M:%S)] $*"; }

if [ -s "$IMAGE_DIR/rootfs.tar" ]; then
  log "cached: $IMAGE_DIR/rootfs.tar"
  exit 0
fi

# The Debian mirror apt uses for binaries here (deb822 .sources first, then sources.list).
mirror() {
  local uri
  uri="$(grep -hsE '^URIs:.*/debian/?$' /etc/apt/sources.list.d/*.sources | head -1 | awk '{print $2}')"
  if [ -z "$uri" ]; then
    uri="$(grep -hsE '^deb .*/debian/? ' /etc/apt/sources.list | head -1 | awk '{print $2}')"
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

if ! command -v debootstrap >/dev/null 2>&1; then
  apt-cache policy debootstrap 2>/dev/null | grep -q 'Candidate: [0-9]' || apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

MIRROR="$(mirror)"
work="$(mktemp -d "${TMPDIR:-/tmp}/arclight-agent-image.XXXXXX")"
# debootstrap mounts /proc (and /sys) in the new root; a failed run may leave them: unmount before removing.
cleanup() {
  grep -o " $work/[^ ]*" /proc/self/mounts | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT
root="$work/rootfs"
log "debootstrap --variant=minbase --include=$PACKAGES $SUITE from $MIRROR"
nice -n 10 debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$root" "$MIRROR" \
  >"$work/debootstrap.log" 2>&1 ||
  {
    tail -20 "$work/debootstrap.log"
    exit 1
  }
# Nothing of the build host stays in the image: package caches, lists, logs, the host's resolver and hostname.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/* "$root"/tmp/*
: >"$root/etc/resolv.conf"
echo arclight-agent >"$root/etc/hostname"
mkdir -p "$root/work"
log "python: $(chroot "$root" python3 --version)"

mkdir -p "$IMAGE_DIR"
# Numeric owners, sorted names: the same tree gives the same tar bytes, so the layer's digest names its content.
tar --numeric-owner --sort=name --xattrs --one-file-system -C "$root" -cf "$IMAGE_DIR/rootfs.tar.partial" .
mv "$IMAGE_DIR/rootfs.tar.partial" "$IMAGE_DIR/rootfs.tar"
log "built $IMAGE_DIR/rootfs.tar ($(du -h "$IMAGE_DIR/rootfs.tar" | cut -f1))"
