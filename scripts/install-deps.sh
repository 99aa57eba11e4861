#!/bin/bash
# install-deps.sh — what a fresh Debian (bookworm) machine needs, as root, in three nested
# profiles; each installs only what is missing (idempotent):
#
#   build  a C compiler (native/: the Node-API addons) and the node modules (Node 24 comes
#          from the `node` npm package): `make build`
#   demo   build + the VM tools and the user tools the demo's daemon runs or is compared with
#          (ipvsadm 1.31, ipset, iptables, curl) and the VM image (Debian's stock kernel,
#          downloaded and unpacked, never installed): `make demo`, in minutes
#   all    demo + what only the tests and the bench use: Debian's Go and moby/ipvs for make
#          bench's peer (kube-proxy's IPVS library, built offline from Debian's source packages),
#          openssl (the fake API server's test CA and certificates, testkit/test-pki.ts),
#          socat (the VM's forwarding to the lab), nftables (`nft`: the real kube-proxy runs it
#          in nftables mode, which the migration tests start from), the Go release that
#          scripts/k8s/go.mod needs at /usr/local/go (scripts/install-go.sh: bookworm's own Go is
#          1.19, too old; it fetches the exact toolchain through the Go module proxy), and the
#          real Kubernetes components the lab runs (scripts/k8s/build.sh: a Go build of
#          kube-apiserver, kubectl, kube-proxy and etcd, ~8 min on a quiet 2-core machine):
#          `make test`, CI
#
#   bash scripts/install-deps.sh [--print] [build|demo|all]    (default: all)
#   --print  names the packages and steps of the profile and installs nothing
set -euo pipefail
cd "$(dirname "$0")/.."
PRINT=
[ "${1:-}" = --print ] && { PRINT=1; shift; }
PROFILE=${1:-all}
BUILD_PKGS=(make gcc libc6-dev)
DEMO_PKGS=(qemu-system-x86 busybox-static kmod ipvsadm ipset iptables iproute2 curl xz-utils file)
ALL_PKGS=(golang-go golang-github-docker-docker-dev openssl socat nftables)
case $PROFILE in
  build) PKGS=("${BUILD_PKGS[@]}"); STEPS=(node-modules) ;;
  demo) PKGS=("${BUILD_PKGS[@]}" "${DEMO_PKGS[@]}"); STEPS=(node-modules vm-image) ;;
  all) PKGS=("${BUILD_PKGS[@]}" "${DEMO_PKGS[@]}" "${ALL_PKGS[@]}"); STEPS=(node-modules vm-image go k8s) ;;
  *) echo "install-deps.sh: unknown profile '$PROFILE' (build, demo or all)" >&2; exit 2 ;;
esac
if [ -n "$PRINT" ]; then
  echo "packages: ${PKGS[*]}"
  echo "steps: ${STEPS[*]}"
  exit 0
fi
step() { [[ " ${STEPS[*]} " == *" $1 "* ]]; }

missing=()
for p in "${PKGS[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
# `npm install` (versions from package-lock.json) rather than `npm ci`: npm 11 here refuses
# `npm ci` because the lock lacks other platforms' optional bindings of unrs-resolver (a jest
# dependency) that this registry's metadata never yields, even for a lock generated afresh.
if step node-modules && { [ ! -x node_modules/.bin/node ] || [ ! -d node_modules/jest ] || [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  npm install --no-audit --no-fund
fi
if step vm-image; then
  # the kernel package is resolved through apt's lists: make sure they exist before the
  # first image build even when every package above was already installed
  if [ ! -s .vm/kernel/vmlinux ] && ! apt-cache depends linux-image-amd64 2>/dev/null | grep -q 'Depends: linux-image-[0-9]'; then
    apt-get update -q
  fi
  bash scripts/vm/build-image.sh
fi
# nothing when /usr/local/go (or the go on PATH) is already go.mod's release or newer
if step go; then bash scripts/install-go.sh; fi
# nothing when already built
if step k8s; then bash scripts/k8s/build.sh; fi
