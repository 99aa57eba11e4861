#!/bin/bash
# kube-proxy-slim.sh — the closest buildable equivalent of kube-proxy's upstream image, for size
# comparisons only (scripts/bench/README.md): upstream's is distroless-iptables (Debian's
# iptables, ipset, conntrack and kmod over distroless's minimal base, with iptables-wrapper) plus
# the binary; distroless's build (Bazel, rules_distroless) is not available here. This is a
# Debian bookworm root filesystem made exactly as scripts/image/build.sh makes kube-ipvs's base
# (mmdebstrap essential, no docs/man/locales) with iptables, ipset, conntrack, kmod and
# ca-certificates, and .k8s/bin/kube-proxy in a second layer, as one OCI archive:
#
#   out: dist/kube-proxy-slim/kube-proxy-slim.oci.tar   (root; make build done)
#
# Measure it beside the others with dist/scripts/image/image-size.js.
set -euo pipefail
umask 022
cd "$(dirname "$0")/../.."
REPO=$PWD
OUT=$REPO/dist/kube-proxy-slim
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
PACKAGES=iptables,ipset,conntrack,kmod,ca-certificates
EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' .k8s/bin/VERSION)
export PATH=$REPO/node_modules/.bin:$PATH
. scripts/image/tar-layer.sh
[ "$(id -u)" = 0 ] || { echo "kube-proxy-slim.sh: needs root (mmdebstrap --mode=root)" >&2; exit 1; }
[ -x .k8s/bin/kube-proxy ] || { echo "kube-proxy-slim.sh: no .k8s/bin/kube-proxy (bash scripts/k8s/build.sh)" >&2; exit 1; }
if grep -q " $OUT/" /proc/mounts; then echo "kube-proxy-slim.sh: something is mounted under $OUT" >&2; exit 1; fi
rm -rf "$OUT" && mkdir -p "$OUT"
mmdebstrap --mode=root --variant=essential --arch=amd64 --include="$PACKAGES" \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/log/* "$1"/var/lib/apt/lists/*' \
  "$SUITE" "$OUT/rootfs" \
  "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main"
tar_layer "$OUT/rootfs" "$OUT/base.tar"
BASE_DIFFID=$(sha "$OUT/base.tar")
gzip -n -6 < "$OUT/base.tar" > "$OUT/base.tar.gz"
mkdir -p "$OUT/stage/usr/local/bin"
install -m 755 .k8s/bin/kube-proxy "$OUT/stage/usr/local/bin/kube-proxy"
tar_layer "$OUT/stage" "$OUT/app.tar" --owner=0 --group=0 --mtime="@$EPOCH"
APP_DIFFID=$(sha "$OUT/app.tar")
gzip -n -6 < "$OUT/app.tar" > "$OUT/app.tar.gz"
node dist/scripts/image/write-oci-layout.js --out "$OUT/oci" --name "localhost/kube-proxy-slim:$VERSION" --created "$EPOCH" \
  --arch amd64 --layer "$OUT/base.tar.gz:$BASE_DIFFID:debian $SUITE ($PACKAGES)" \
  --layer "$OUT/app.tar.gz:$APP_DIFFID:kube-proxy $VERSION"
tar -C "$OUT/oci" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" -cf "$OUT/kube-proxy-slim.oci.tar" \
  oci-layout index.json manifest.json blobs
rm -rf "$OUT/rootfs" "$OUT/stage" "$OUT/oci" "$OUT/base.tar" "$OUT/base.tar.gz" "$OUT/app.tar" "$OUT/app.tar.gz"
echo ">> $OUT/kube-proxy-slim.oci.tar"
