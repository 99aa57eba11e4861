#!/bin/bash
# install-deps.sh — everything a fresh Debian (bookworm) machine needs, as root:
# the VM tools and the kernel-side user tools we compare against (ipvsadm 1.31,
# ipset, iptables), a C compiler (native/: one Node-API addon), Go and moby/ipvs for make
# bench's peer (kube-proxy's IPVS library, built offline from Debian's source packages),
# openssl (the fake API server's test CA and certificates, testkit/test-pki.ts),
# nftables (`nft`: the real kube-proxy runs it in nftables mode, which the migration tests start from),
# node modules (Node 24 comes from the `node` npm package),
# and the VM image (Debian's stock kernel, downloaded and unpacked, never installed).
set -euo pipefail
cd "$(dirname "$0")/.."
PKGS=(qemu-system-x86 busybox-static kmod ipvsadm ipset iptables iproute2 curl xz-utils file make gcc libc6-dev
  golang-go golang-github-docker-docker-dev openssl socat nftables)
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
if [ ! -x node_modules/.bin/node ] || [ ! -d node_modules/jest ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm install --no-audit --no-fund
fi
# the kernel package is resolved through apt's lists: make sure they exist before the
# first image build even when every package above was already installed
if [ ! -s .vm/kernel/vmlinux ] && ! apt-cache depends linux-image-amd64 2>/dev/null | grep -q 'Depends: linux-image-[0-9]'; then
  apt-get update -q
fi
bash scripts/vm/build-image.sh
# the real Kubernetes components the lab tests run against (scripts/k8s/build.sh: kube-apiserver,
# kubectl, kube-proxy and etcd from Go modules into .k8s/bin; nothing when already built)
bash scripts/k8s/build.sh
