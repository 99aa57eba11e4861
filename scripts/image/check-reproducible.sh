#!/bin/bash
# check-reproducible.sh — make image-reproducible: builds the image twice from this checkout
# (scripts/image/build.sh into two fresh output folders, so the app layer, the config and the
# manifests are made twice; the base layer is the cached one, .image/) and fails unless the two
# archives, and so the image digests, are byte-identical. Prints the digest and the times.
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kube-ipvs-repro.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
digest() { node -e 'const i = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(i.manifests[0].digest)' "$1"; }
for run in a b; do
  t0=$(date +%s)
  IMAGE_OUT=$WORK/$run bash scripts/image/build.sh > "$WORK/$run.log" 2>&1 || { cat "$WORK/$run.log" >&2; exit 1; }
  tar -xOf "$WORK/$run/kube-ipvs.oci.tar" index.json > "$WORK/$run.index.json"
  echo ">> build $run: $(digest "$WORK/$run.index.json") in $(($(date +%s) - t0)) s"
done
if cmp -s "$WORK/a/kube-ipvs.oci.tar" "$WORK/b/kube-ipvs.oci.tar"; then
  echo ">> reproducible: $(sha256sum < "$WORK/a/kube-ipvs.oci.tar" | cut -d' ' -f1) (the archive), $(digest "$WORK/a.index.json") (the image)"
  exit 0
fi
echo "check-reproducible.sh: two builds of one checkout differ" >&2
# the first differing file of the two layouts, for the reader
mkdir -p "$WORK/xa" "$WORK/xb"
tar -C "$WORK/xa" -xf "$WORK/a/kube-ipvs.oci.tar" && tar -C "$WORK/xb" -xf "$WORK/b/kube-ipvs.oci.tar"
diff -r "$WORK/xa" "$WORK/xb" >&2 || true
exit 1
