#!/bin/bash
# images.sh — the container images a real kubelet + containerd node of the e2e lab runs, built
# without a container runtime or registry (nothing is ever pulled: the node imports these with
# `ctr -n k8s.io images import`), each an OCI layout in one tar as scripts/image/build.sh
# writes them (write-oci-layout.js), into .k8s/node/images/NAME.oci.tar:
#
#   pause       registry.k8s.io/pause:3.10.2                      /pause (build.sh pause, static C)
#   agnhost     registry.k8s.io/e2e-test-images/agnhost:VERSION   the test base below + /agnhost
#   coredns     registry.k8s.io/coredns/coredns:v1.15.0           /coredns alone
#   kube-proxy  registry.k8s.io/kube-proxy:K8S                    the test base + .k8s/bin/kube-proxy
#   distroless-iptables  registry.k8s.io/build-image/distroless-iptables:v0.9.9
#               the test base alone ([sig-network] KubeProxy's CLOSE_WAIT test execs conntrack in it)
#   busybox     registry.k8s.io/e2e-test-images/busybox:1.37.0-2  Debian's busybox-static, applets in /bin
#   regression-issue-74839  registry.k8s.io/e2e-test-images/regression-issue-74839:1.5
#               k8s.io/kubernetes/test/images/regression-issue-74839 ([sig-network] Conntrack)
#
# The test base is one Debian bookworm root filesystem (mmdebstrap, as scripts/image/build.sh
# makes its own) with what e2e tests exec in agnhost pods (curl, nc from netcat-openbsd, dig and
# nslookup, ip and ss, ping, ps, iperf, socat, bash) and what kube-proxy execs (iptables, ipset,
# conntrack, modprobe): agnhost, kube-proxy and distroless-iptables share that layer, so the
# node unpacks it once (containerd keys snapshots by the layer chain). iptables is Debian's
# default, the nft backend (upstream's images pick legacy or nft per host with iptables-wrapper).
#
# VERSION is test/images/agnhost/VERSION of the k8s.io/kubernetes module scripts/node/go/go.mod
# requires (in the lab's Go module cache), 2.66.1 without it; K8S is .k8s/bin/VERSION's.
# Inputs: .k8s/node/bin/{pause,agnhost,coredns} (scripts/node/build.sh pause agnhost coredns),
# .k8s/bin/kube-proxy (scripts/k8s/build.sh), `make build` (dist/scripts/image), root (mmdebstrap
# --mode=root) and the Debian archive; regression-issue-74839 is compiled here (Go, the lab's cache).
#
# Idempotent: an archive is rebuilt only when its stamp (its inputs' digests, this script,
# write-oci-layout.js) changed; the test base is cached in .k8s/node/images/.cache by a stamp of
# its recipe. Layer tars are deterministic (sorted, numeric owners, mtimes clamped to EPOCH) and
# gzip -1 (the TCG guest inflates at about 1 MB/s). Each new archive is read back as a runtime
# would (unpack-oci.js: digests, diff ids) and its tools are run once in a chroot of it.
#
#   usage: scripts/node/images.sh [NAME...]   (default: all; then a table of sizes)
# Env: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR (as scripts/image/build.sh), KUBE_IPVS_GO_CACHE,
#      NODE_IMAGES_OUT (default .k8s/node/images: where the archives and their cache go),
#      SOURCE_DATE_EPOCH (the layers' and images' time; default 2026-01-01T00:00:00Z).
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
OUT=${NODE_IMAGES_OUT:-$REPO/.k8s/node/images}
CACHE=$OUT/.cache
BIN=$REPO/.k8s/node/bin
export PATH=$REPO/node_modules/.bin:$PATH
GO_CACHE=${KUBE_IPVS_GO_CACHE:-/var/cache/kube-ipvs/go}
K8S_MOD=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' scripts/node/go/go.mod)
KDIR=$GO_CACHE/mod/k8s.io/kubernetes@$K8S_MOD
AGNHOST_VERSION=$(cat "$KDIR/test/images/agnhost/VERSION" 2>/dev/null || echo 2.66.1)
KUBE_PROXY_VERSION=$(awk '$1 == "k8s.io/kubernetes" { print $2 }' .k8s/bin/VERSION 2>/dev/null || true)
KUBE_PROXY_VERSION=${KUBE_PROXY_VERSION:-$K8S_MOD}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
EPOCH=${SOURCE_DATE_EPOCH:-1767225600}
# agnhost's Dockerfile: bind-tools curl netcat-openbsd iproute2 iperf bash util-linux-misc socat, on
# Alpine, whose busybox gives wget (service.go runs `wget -qO- -T`)
# (bash and util-linux's ipcs are Essential here); e2e execs ping and ps in it too; kube-proxy:
# iptables ipset conntrack kmod (distroless-iptables has those)
BASE_PACKAGES=ca-certificates,curl,wget,netcat-openbsd,bind9-dnsutils,iproute2,iputils-ping,procps,iperf,socat,iptables,ipset,conntrack,kmod
ALL=(pause agnhost coredns kube-proxy distroless-iptables busybox regression-issue-74839)
umask 022

[ "$(id -u)" = 0 ] || { echo "images.sh: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 1; }
[ -s dist/scripts/image/write-oci-layout.js ] || { echo "images.sh: no dist/scripts/image: run make build first" >&2; exit 1; }
missing=()
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v strip >/dev/null || missing+=(binutils)
if [ ${#missing[@]} -gt 0 ]; then
  echo ">> apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
mkdir -p "$OUT" "$CACHE"

. "$REPO/scripts/image/tar-layer.sh" # tar_layer, sha: as the project image's layers
# gz_layer DIR NAME [tar options...]: $CACHE/NAME.tar.gz and NAME.diffid
gz_layer() {
  local dir=$1 name=$2; shift 2
  tar_layer "$dir" "$CACHE/$name.tar" --mtime="@$EPOCH" --clamp-mtime "$@"
  sha "$CACHE/$name.tar" > "$CACHE/$name.diffid"
  gzip -n -1 < "$CACHE/$name.tar" > "$CACHE/$name.tar.gz.tmp"
  mv "$CACHE/$name.tar.gz.tmp" "$CACHE/$name.tar.gz"
  rm -f "$CACHE/$name.tar"
}
layer_arg() { echo "$CACHE/$1.tar.gz:$(cat "$CACHE/$1.diffid"):$2"; } # NAME DESCRIPTION
no_mounts_under() {
  if grep -q " $1/" /proc/mounts; then
    echo "images.sh: something is still mounted under $1 (an interrupted build?): umount it first" >&2; exit 1
  fi
}
need() { for f in "$@"; do [ -s "$f" ] || { echo "images.sh: no $f (${HINT:-})" >&2; exit 1; }; done; }

# ---------------------------------------------------------------- test base ----
# no docs, man pages or locales (copyright files stay), nor glibc's gconv modules (iconv beyond
# UTF-8, ASCII and Latin-1: 9 MB); merged /usr; no device nodes (the runtime mounts /dev) nor the
# build host's /etc/hostname and /etc/resolv.conf (mmdebstrap copies them in; kubelet mounts its
# own); agnhost's users (an e2e SupplementalGroups test expects them).
# libicudata.so.72 (31 MB, ICU's locale and collation data) is swapped for an empty one, as
# ICU's own stubdata library is: only libxml2 links ICU here (bind9-libs needs libxml2, for
# named's statistics), and dig, nslookup and curl never ask ICU for data.
icu_stub() { # OUT.so
  local c; c=$(mktemp --suffix=.c)
  cat > "$c" <<'EOF'
#include <stdint.h>
/* ICU_Data_Header with an empty table of contents (icu4c/source/stubdata/stubdata.cpp) */
__attribute__((visibility("default"))) const struct {
  uint16_t headerSize;
  uint8_t magic1, magic2;
  struct { uint16_t size, reservedWord; uint8_t isBigEndian, charsetFamily, sizeofUChar, reservedByte;
           uint8_t dataFormat[4], formatVersion[4], dataVersion[4]; } info;
  char padding[8];
  uint32_t count, reserved;
  struct { uint32_t nameOffset, dataOffset; } toc[1];
} icudt72_dat = { 32, 0xda, 0x27, { 20, 0, 0, 0, 2, 0, { 0x54, 0x6f, 0x43, 0x50 }, { 1, 0, 0, 0 }, { 0, 0, 0, 0 } },
                  { 0 }, 0, 0, { { 0, 0 } } };
EOF
  gcc -shared -fPIC -Os -Wall -Werror -Wl,-soname,libicudata.so.72 -o "$1" "$c"
  strip "$1"
  rm -f "$c"
}
base_recipe() {
  icu_stub "$CACHE/libicudata-stub.so"
  SOURCE_DATE_EPOCH=$EPOCH mmdebstrap --mode=root --variant=essential --include="$BASE_PACKAGES" \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*' \
    --customize-hook="install -m 644 '$CACHE/libicudata-stub.so' \"\$1/usr/lib/x86_64-linux-gnu/libicudata.so.72.1\"" \
    --customize-hook='printf "%s\n" "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh" >> "$1/etc/passwd"' \
    --customize-hook='printf "%s\n" "user-defined-in-image:x:1000:" "group-defined-in-image:x:50000:user-defined-in-image" >> "$1/etc/group"' \
    --customize-hook='printf "%s\n" "user-defined-in-image:!:20454:0:99999:7:::" >> "$1/etc/shadow"' \
    --customize-hook='printf "%s\n" "user-defined-in-image:!::" "group-defined-in-image:!::user-defined-in-image" >> "$1/etc/gshadow"' \
    --customize-hook='install -d -o 1000 -g 1000 "$1/home/user-defined-in-image"' \
    --customize-hook='ln -s ../../bin/iperf "$1/usr/local/bin/iperf"' \
    --customize-hook='rm -rf "$1"/var/cache/* "$1"/var/log/* "$1"/var/lib/apt/lists/* "$1"/etc/machine-id "$1"/etc/hostname "$1"/etc/resolv.conf' \
    "$SUITE" "$1" \
    "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main"
}
BASE_DESC="debian $SUITE ($BASE_PACKAGES)"
build_base() {
  local key; key=$( (printf '%s\n' "$SUITE" "$MIRROR" "$SECURITY_MIRROR" "$BASE_PACKAGES" "$EPOCH"; declare -f icu_stub base_recipe tar_layer gz_layer) | sha256sum | cut -d' ' -f1)
  if [ -s "$CACHE/base.tar.gz" ] && [ "$(cat "$CACHE/base.stamp" 2>/dev/null)" = "$key" ]; then return 0; fi
  echo ">> mmdebstrap $SUITE ($BASE_PACKAGES)"
  local t0; t0=$(date +%s)
  no_mounts_under "$CACHE/base-rootfs"
  rm -rf "$CACHE/base-rootfs" "$CACHE/base.stamp"
  base_recipe "$CACHE/base-rootfs"
  no_mounts_under "$CACHE/base-rootfs"
  find "$CACHE/base-rootfs/dev" -mindepth 1 -delete
  gz_layer "$CACHE/base-rootfs" base
  rm -rf "$CACHE/base-rootfs" "$CACHE/libicudata-stub.so"
  echo "$key" > "$CACHE/base.stamp"
  echo "$(( $(date +%s) - t0 ))" > "$CACHE/base.seconds"
}

# busybox-static's /bin/busybox (extracted, not installed), every applet a symlink in /bin as
# in the busybox image, root and nobody, /tmp
build_busybox_layer() {
  local root=$CACHE/busybox-root x=$CACHE/busybox-extract
  no_mounts_under "$x"
  rm -rf "$root" "$x"
  mmdebstrap --mode=root --variant=extract --include=busybox-static "$SUITE" "$x" \
    "deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" "deb $SECURITY_MIRROR $SUITE-security main"
  mkdir -p "$root/bin" "$root/etc" "$root/root" "$root/home" "$root/var" "$root/dev" "$root/proc" "$root/sys"
  install -d -m 1777 "$root/tmp"
  install -m 755 "$x/bin/busybox" "$root/bin/busybox"
  mkdir -p "$root/usr/share/doc/busybox-static"
  cp "$x/usr/share/doc/busybox-static/copyright" "$root/usr/share/doc/busybox-static/"
  local a
  for a in $("$root/bin/busybox" --list); do [ "$a" = busybox ] || ln -s busybox "$root/bin/$a"; done
  printf '%s\n' 'root:x:0:0:root:/root:/bin/sh' 'nobody:x:65534:65534:nobody:/home:/bin/false' > "$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' > "$root/etc/group"
  "$root/bin/busybox" | sed -n '1s/ multi-call binary.*//p' > "$CACHE/busybox.version" # BusyBox v1.35.0 (Debian ...)
  rm -rf "$x"
}

build_regression_binary() { # the Go program of test/images/regression-issue-74839, static
  local GO; GO=$(command -v /usr/local/go/bin/go || command -v go) || { echo "images.sh: no Go toolchain" >&2; exit 2; }
  mkdir -p "$CACHE/bin"
  (cd scripts/node/go && GOMODCACHE=$GO_CACHE/mod GOCACHE=$GO_CACHE/build GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
    CGO_ENABLED=0 "$GO" build -p 2 -trimpath -ldflags "-s -w" -o "$CACHE/bin/regression-issue-74839" \
    k8s.io/kubernetes/test/images/regression-issue-74839)
}

# ---------------------------------------------------------------- images ----
# stage NAME: an empty staging directory for NAME's own layer
stage() { rm -rf "$CACHE/stage-$1"; mkdir -p "$CACHE/stage-$1"; echo "$CACHE/stage-$1"; }
# write_image NAME REF TITLE ENTRYPOINT_JSON CMD_JSON|- LAYER_ARG...
write_image() {
  local name=$1 ref=$2 title=$3 entry=$4 cmd=$5; shift 5
  local layout=$CACHE/layout-$name args=()
  [ "$cmd" = - ] || args+=(--cmd "$cmd")
  for l in "$@"; do args+=(--layer "$l"); done
  rm -rf "$layout"
  node dist/scripts/image/write-oci-layout.js --out "$layout" --name "$ref" --created "$EPOCH" --arch amd64 \
    --title "$title" --entrypoint "$entry" "${args[@]}"
  tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$EPOCH" -cf "$OUT/$name.oci.tar.tmp" \
    oci-layout index.json manifest.json blobs
  mv "$OUT/$name.oci.tar.tmp" "$OUT/$name.oci.tar"
  rm -rf "$layout"
}

# check NAME: reads the archive back as a runtime would, unpacks it and runs its tools there
check() {
  local name=$1 root=$CACHE/check-$1 id_out
  no_mounts_under "$root"
  node dist/scripts/image/unpack-oci.js "$OUT/$name.oci.tar" "$root" >/dev/null
  du -sb --apparent-size "$root" | cut -f1 > "$CACHE/$name.unpacked"
  local sh=(chroot "$root" /bin/sh -ec)
  case $name in
    pause) "$root/pause" -v ;;
    coredns) "$root/coredns" -version | sed -n 1p ;;
    regression-issue-74839) [ -x "$root/regression-issue-74839" ] ;;
    busybox) chroot "$root" /bin/sh -ec 'for c in sh nc wget sleep dd; do command -v $c; done; ls /bin | wc -l' ;;
    agnhost | kube-proxy | distroless-iptables)
      "${sh[@]}" 'for c in sh bash curl nc dig nslookup ip ss ping ps iperf socat ipcs iptables ipset conntrack modprobe update-ca-certificates; do
          command -v $c >/dev/null || { echo "no $c" >&2; exit 1; }; done
        curl --version | sed -n 1p; dig -v 2>&1; ip -V; iptables --version; ipset --version; conntrack --version'
      # the e2e Services jig: echo hostName | nc -v -t -w 2 HOST PORT (chroot: the host network)
      local port=$((20000 + RANDOM % 20000))
      chroot "$root" nc -l 127.0.0.1 "$port" > "$CACHE/nc.out" &
      local pid=$!
      sleep 0.5
      echo hostName | chroot "$root" nc -v -t -w 2 127.0.0.1 "$port"
      wait "$pid" || true
      [ "$(cat "$CACHE/nc.out")" = hostName ] || { echo "images.sh: nc in $name did not carry the line" >&2; exit 1; }
      case $name in
        agnhost) chroot "$root" /agnhost --help | sed -n 1p; id_out=$(chroot "$root" id user-defined-in-image); echo "$id_out"
          [[ $id_out == *"50000(group-defined-in-image)"* ]] ;;
        kube-proxy) chroot "$root" /usr/local/bin/kube-proxy --version ;;
      esac ;;
  esac
  rm -rf "$root" "$root.digest" "$CACHE/nc.out"
}

# image NAME: builds NAME's archive unless its stamp is unchanged
image() {
  local name=$1 key t0 inputs=() ref own=$1
  local script_sum; script_sum=$(sha "$REPO/scripts/node/images.sh")
  case $name in
    pause) HINT="bash scripts/node/build.sh pause" need "$BIN/pause"; inputs=("$BIN/pause"); ref=registry.k8s.io/pause:3.10.2 ;;
    agnhost)
      inputs=("$BIN/agnhost" "$KDIR/test/images/agnhost/porter/localhost.crt" "$KDIR/test/images/agnhost/porter/localhost.key")
      HINT="bash scripts/node/build.sh agnhost" need "${inputs[@]}"
      ref=registry.k8s.io/e2e-test-images/agnhost:$AGNHOST_VERSION ;;
    coredns) HINT="bash scripts/node/build.sh coredns" need "$BIN/coredns"; inputs=("$BIN/coredns"); ref=registry.k8s.io/coredns/coredns:v1.15.0 ;;
    kube-proxy) HINT="bash scripts/k8s/build.sh" need "$REPO/.k8s/bin/kube-proxy"; inputs=("$REPO/.k8s/bin/kube-proxy")
      ref=registry.k8s.io/kube-proxy:$KUBE_PROXY_VERSION ;;
    distroless-iptables) ref=registry.k8s.io/build-image/distroless-iptables:v0.9.9 ;;
    busybox) ref=registry.k8s.io/e2e-test-images/busybox:1.37.0-2 ;;
    regression-issue-74839) ref=registry.k8s.io/e2e-test-images/regression-issue-74839:1.5 ;;
    *) echo "images.sh: no image $name (${ALL[*]})" >&2; exit 2 ;;
  esac
  case $name in agnhost | kube-proxy | distroless-iptables) build_base ;; esac
  t0=$(date +%s)
  key=$( {
    echo "$name $ref $EPOCH $script_sum"
    sha256sum dist/scripts/image/write-oci-layout.js "${inputs[@]}"
    case $name in agnhost | kube-proxy | distroless-iptables) cat "$CACHE/base.stamp" ;; esac
    case $name in busybox | regression-issue-74839) echo "$SUITE $MIRROR $K8S_MOD $(sha scripts/node/go/go.sum)" ;; esac
  } | sha256sum | cut -d' ' -f1)
  if [ -s "$OUT/$name.oci.tar" ] && [ "$(cat "$OUT/$name.stamp" 2>/dev/null)" = "$key" ]; then
    echo ">> $OUT/$name.oci.tar is up to date ($ref)"
    return 0
  fi
  echo ">> $name: $ref"
  rm -f "$OUT/$name.stamp"
  local s
  case $name in
    pause)
      s=$(stage pause); install -m 755 "$BIN/pause" "$s/pause"
      gz_layer "$s" pause --owner=0 --group=0
      write_image pause "$ref" pause '["/pause"]' - "$(layer_arg pause "pause $(cd "$s" && ./pause -v)")" ;;
    agnhost)
      # upstream's Dockerfile: /agnhost and /agnhost-2 (entrypoint-tester), porter's key pair
      # in /, /uploads (netexec); not /coredns (DNS tests) nor /var/registry (fakeregistryserver)
      s=$(stage agnhost); install -m 755 "$BIN/agnhost" "$s/agnhost"; ln -s agnhost "$s/agnhost-2"
      install -m 644 "$KDIR/test/images/agnhost/porter/localhost.crt" "$KDIR/test/images/agnhost/porter/localhost.key" "$s/"
      install -d -m 755 "$s/uploads"
      gz_layer "$s" agnhost --owner=0 --group=0
      write_image agnhost "$ref" agnhost '["/agnhost"]' '["pause"]' "$(layer_arg base "$BASE_DESC")" \
        "$(layer_arg agnhost "agnhost $AGNHOST_VERSION")" ;;
    coredns)
      s=$(stage coredns); install -m 755 "$BIN/coredns" "$s/coredns"
      gz_layer "$s" coredns --owner=0 --group=0
      write_image coredns "$ref" coredns '["/coredns"]' - "$(layer_arg coredns "coredns v1.15.0")" ;;
    kube-proxy)
      # upstream's entry point is /go-runner (kube-log-runner); kubeadm's DaemonSet gives command
      s=$(stage kube-proxy); install -D -m 755 "$REPO/.k8s/bin/kube-proxy" "$s/usr/local/bin/kube-proxy"
      gz_layer "$s" kube-proxy --owner=0 --group=0
      write_image kube-proxy "$ref" kube-proxy '["/usr/local/bin/kube-proxy"]' - "$(layer_arg base "$BASE_DESC")" \
        "$(layer_arg kube-proxy "kube-proxy $KUBE_PROXY_VERSION")" ;;
    distroless-iptables)
      own=
      # no entry point, as upstream's: the e2e pod gives command [sleep, 600]
      write_image distroless-iptables "$ref" distroless-iptables '[]' - "$(layer_arg base "$BASE_DESC")" ;;
    busybox)
      build_busybox_layer
      gz_layer "$CACHE/busybox-root" busybox --owner=0 --group=0
      rm -rf "$CACHE/busybox-root"
      write_image busybox "$ref" busybox '[]' '["sh"]' "$(layer_arg busybox "$(cat "$CACHE/busybox.version"), applets in /bin")" ;;
    regression-issue-74839)
      build_regression_binary
      own=regression
      s=$(stage regression); install -m 755 "$CACHE/bin/regression-issue-74839" "$s/regression-issue-74839"
      gz_layer "$s" regression --owner=0 --group=0
      write_image regression-issue-74839 "$ref" regression-issue-74839 '["/regression-issue-74839"]' - \
        "$(layer_arg regression "k8s.io/kubernetes/test/images/regression-issue-74839 ($K8S_MOD)")" ;;
  esac
  rm -rf "$CACHE/stage-$name" "$CACHE/stage-regression"
  # the image's own layer is in its archive now (the shared base stays cached)
  [ -z "$own" ] || rm -f "$CACHE/$own.tar.gz" "$CACHE/$own.diffid"
  check "$name"
  echo "$(( $(date +%s) - t0 ))" > "$CACHE/$name.seconds"
  echo "$key" > "$OUT/$name.stamp"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=("${ALL[@]}")
for n in "${names[@]}"; do image "$n"; done

# name, archive MB, its files unpacked MB (as check found them), seconds of its last build (the
# shared base's mmdebstrap counted apart: its row gives the tar's size)
row() { awk -v n="$1" -v c="$2" -v u="$3" -v s="$4" 'BEGIN { printf "%-24s %8.1f %12.1f %8s\n", n, c / 1e6, u / 1e6, s }'; }
printf '\n%-24s %8s %12s %8s\n' image 'tar MB' 'unpacked MB' seconds
for n in "${names[@]}"; do
  row "$n" "$(stat -c %s "$OUT/$n.oci.tar")" "$(cat "$CACHE/$n.unpacked" 2>/dev/null || echo 0)" "$(cat "$CACHE/$n.seconds" 2>/dev/null || echo -)"
done
if [ -s "$CACHE/base.seconds" ]; then
  row '(the shared test base)' "$(stat -c %s "$CACHE/base.tar.gz")" "$(gzip -l "$CACHE/base.tar.gz" | awk 'NR==2{print $2}')" \
    "$(cat "$CACHE/base.seconds")"
fi
