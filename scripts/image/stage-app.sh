#!/bin/bash
# stage-app.sh — the image's app layer as a directory tree, the one recipe both image builds
# use: scripts/image/build.sh (`make image`) tars it as the second layer, Containerfile's build
# stage runs it and copies the tree onto debian:bookworm-slim. Run from the repository root
# after `make build` (the bundle dist/bundle/kube-ipvs.js, and the native addons built by the
# Makefile's cc rule).
#
#   bash scripts/image/stage-app.sh STAGE NODE_BIN [ARCH [NATIVE_DIR [RUN]]]
#
#   STAGE       an empty directory: gets usr/local/bin/{node,kube-ipvs,kube-proxy} and opt/kube-ipvs
#   NODE_BIN    the Node binary to ship (the `node` npm package's, node_modules/.bin/node)
#   ARCH        Node's name for the target: x64 (default) or arm64
#   NATIVE_DIR  the addon built for ARCH (default dist/native)
#   RUN         how to run a target binary here (default: directly; arm64 on x64: an emulator)
set -euo pipefail
STAGE=$1
NODE_BIN=$2
ARCH=${3:-x64}
NATIVE_DIR=${4:-dist/native}
RUN=${5:-}
STRIP=strip
case $ARCH in
  x64) LOADER=/lib64/ld-linux-x86-64.so.2 ;;
  arm64) LOADER=/lib/ld-linux-aarch64.so.1; STRIP=aarch64-linux-gnu-strip ;;
  *) echo "stage-app.sh: unknown ARCH $ARCH (x64 or arm64)" >&2; exit 1 ;;
esac
[ -s dist/bundle/kube-ipvs.js ] || { echo "stage-app.sh: no dist/bundle/kube-ipvs.js: run make build first" >&2; exit 1; }
for addon in netlink_sockopt malloc_trim; do
  [ -s "$NATIVE_DIR/$addon.node" ] || { echo "stage-app.sh: no $NATIVE_DIR/$addon.node (the Makefile builds it)" >&2; exit 1; }
done

# the daemon and CLI are one file (scripts/bundle.ts); what it leaves outside: the netlink package,
# whose native binding node-gyp-build finds from the package's own directory, and our addons
NODE_MODULES=(node_modules/netlink node_modules/node-gyp-build)
for m in "${NODE_MODULES[@]}"; do
  [ -s "$m/package.json" ] || { echo "stage-app.sh: no $m (npm install)" >&2; exit 1; }
done

APP=$STAGE/opt/kube-ipvs
mkdir -p "$STAGE/usr/local/bin" "$APP/dist"
# Node: the `node` npm package's official binary, dynamically linked against glibc and
# libstdc++ only (both in the base layer); symbols stripped (-18 MB; addons link through the
# dynamic symbol table, which strip keeps)
unexpected=$(readelf -d "$NODE_BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
  grep -vE '^(lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so\.[0-9]+|ld-linux-(x86-64|aarch64)\.so\.[0-9])$' || true)
[ -z "$unexpected" ] || { echo "stage-app.sh: node links against libraries the image lacks: $unexpected" >&2; exit 1; }
readelf -l "$NODE_BIN" | grep -qF "[Requesting program interpreter: $LOADER]" ||
  { echo "stage-app.sh: $NODE_BIN is not a linux-$ARCH binary (no $LOADER)" >&2; exit 1; }
"$STRIP" -o "$STAGE/usr/local/bin/node" "$NODE_BIN"
cp package.json "$APP/"
mkdir -p "$APP/dist/bundle" "$APP/dist/native"
cp -a dist/bundle/kube-ipvs.js "$APP/dist/bundle/"
cp -a "$NATIVE_DIR/netlink_sockopt.node" "$APP/dist/native/"
cp -a "$NATIVE_DIR/malloc_trim.node" "$APP/dist/native/"
cp -a --parents "${NODE_MODULES[@]}" "$APP/"
# what never runs: type declarations, sources, maps, docs, other platforms' prebuilt addons
find "$APP/node_modules" \( -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.map' -o -name '*.md' \) -type f -delete
rm -rf "$APP"/node_modules/@types "$APP"/node_modules/*/node_modules/@types "$APP"/node_modules/@*/*/node_modules/@types
find "$APP/node_modules" -path '*/prebuilds/*' -maxdepth 4 -type d ! -name "linux-$ARCH" ! -name prebuilds -prune -exec rm -rf {} +
install -m 755 scripts/image/kube-ipvs.sh "$STAGE/usr/local/bin/kube-ipvs"
# kubeadm's DaemonSet runs /usr/local/bin/kube-proxy: the same entry point under that name, so
# `kubectl set image` alone swaps kube-proxy for kube-ipvs
ln -s kube-ipvs "$STAGE/usr/local/bin/kube-proxy"

# the app must start from the staged tree alone (every runtime module present)
# shellcheck disable=SC2086 # RUN is a command and its arguments
(cd / && $RUN "$STAGE/usr/local/bin/node" "$APP/dist/bundle/kube-ipvs.js" --help >/dev/null) ||
  { echo "stage-app.sh: the staged app does not start" >&2; exit 1; }
# shellcheck disable=SC2086
(cd / && $RUN "$STAGE/usr/local/bin/node" -e "require('$APP/node_modules/netlink'); require('$APP/dist/native/netlink_sockopt.node'); require('$APP/dist/native/malloc_trim.node')") ||
  { echo "stage-app.sh: the staged app lacks a runtime module" >&2; exit 1; }
