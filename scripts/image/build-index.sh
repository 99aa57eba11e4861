#!/bin/bash
# build-index.sh — the multi-arch archive (`make image-multiarch`): the amd64 and arm64 OCI
# archives `make image` and `make image-arm64` wrote, assembled into one OCI layout whose
# index.json names one image index listing both manifests by platform
# (scripts/image/write-oci-index.ts), tarred as build.sh tars its own.
#
#   in:  dist/image/kube-ipvs.oci.tar dist/image-arm64/kube-ipvs.oci.tar (or AMD64_ARCHIVE, ARM64_ARCHIVE)
#   out: dist/image-multiarch/kube-ipvs.oci.tar (or INDEX_OUT/kube-ipvs.oci.tar)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH=$PWD/node_modules/.bin:$PATH
AMD64=${AMD64_ARCHIVE:-dist/image/kube-ipvs.oci.tar}
ARM64=${ARM64_ARCHIVE:-dist/image-arm64/kube-ipvs.oci.tar}
OUT_DIR=${INDEX_OUT:-dist/image-multiarch}
for a in "$AMD64" "$ARM64"; do
  [ -s "$a" ] || { echo "build-index.sh: no $a (make image, make image-arm64)" >&2; exit 1; }
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/amd64" "$WORK/arm64" "$WORK/oci"
tar -C "$WORK/amd64" -xf "$AMD64"
tar -C "$WORK/arm64" -xf "$ARM64"
node dist/scripts/image/write-oci-index.js --out "$WORK/oci" --layout "$WORK/amd64" --layout "$WORK/arm64"
EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
mkdir -p "$OUT_DIR"
tar -C "$WORK/oci" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" -cf "$OUT_DIR/kube-ipvs.oci.tar.tmp" \
  oci-layout index.json manifest.json blobs
mv "$OUT_DIR/kube-ipvs.oci.tar.tmp" "$OUT_DIR/kube-ipvs.oci.tar"
echo ">> $OUT_DIR/kube-ipvs.oci.tar: amd64 + arm64, $(( $(stat -c %s "$OUT_DIR/kube-ipvs.oci.tar") / 1000000 )) MB"
