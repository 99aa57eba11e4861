#!/bin/bash
# install-go.sh — a Go that can build the Kubernetes release pinned in scripts/k8s/go.mod, at
# /usr/local/go (where scripts/k8s/build.sh, scripts/node/build.sh and scripts/node/images.sh
# look first), from what the machine reaches: Debian's archive and the Go module proxy.
#
# The toolchain is the one go.mod's `toolchain` line names, else its `go` line's (`go 1.26.0`:
# go1.26.0). Nothing is done when /usr/local/go or the `go` on PATH is already that version or
# newer (this machine's go1.26.8, say). Otherwise:
#   1. a bootstrap Go of 1.21 or later, the first that can fetch a toolchain (GOTOOLCHAIN):
#      bookworm's golang-go is 1.19, so Debian's newest golang-1.2x-go, from
#      bookworm-backports on bookworm (a backports source with the system's own mirror is
#      added when there is none);
#   2. `GOTOOLCHAIN=go1.X.Y go version` with it: the go command downloads that exact release
#      as the module golang.org/toolchain through the Go module proxy, checked against the
#      checksum database (GOSUMDB, also through the proxy), into the lab's module cache
#      (KUBE_IPVS_GO_CACHE, default /var/cache/kube-ipvs/go, as scripts/k8s/build.sh);
#   3. that release's tree is copied to /usr/local/go. An older Go already at /usr/local/go is
#      never overwritten: the script says so and exits 2.
#
#   bash scripts/install-go.sh            (as root; scripts/install-deps.sh all runs it)
#   bash scripts/install-go.sh --print    prints the toolchain it wants and installs nothing
#   bash scripts/install-go.sh --mirror CODENAME    prints the system's Debian mirror for CODENAME
# scripts/check-bookworm-go.sh runs it in a fresh bookworm chroot.
set -euo pipefail
MOD=$(cd "$(dirname "$0")" && pwd)/k8s/go.mod
CACHE=${KUBE_IPVS_GO_CACHE:-/var/cache/kube-ipvs/go}
DEST=/usr/local/go

# go.mod's `toolchain goX.Y.Z`, else `go X.Y.Z` as the toolchain goX.Y.Z
WANT=$(awk '$1 == "toolchain" { print $2; exit }' "$MOD")
[ -n "$WANT" ] || WANT=go$(awk '$1 == "go" { print $2; exit }' "$MOD")
[[ $WANT =~ ^go[0-9]+\.[0-9]+ ]] || { echo "install-go.sh: no go or toolchain line in $MOD" >&2; exit 2; }
# the system's own Debian mirror: the URI of the source that carries the release's main suite
mirror() {
  local codename=$1 uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk -v c="$codename" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i !~ /^\[/ && $(i + 1) == c) { print $i; exit } }' || true)
  [ -n "$uri" ] || uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v c="$codename" 'BEGIN { RS = ""; FS = "\n" } {
      uri = ""; hit = 0
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^URIs:/) { split($i, u, /[ \t]+/); uri = u[2] }
        if ($i ~ /^Suites:/) { n = split($i, s, /[ \t]+/); for (j = 2; j <= n; j++) if (s[j] == c) hit = 1 }
      }
      if (hit && uri != "") { print uri; exit }
    }' || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

[ "${1:-}" = --print ] && { echo "$WANT"; exit 0; }
[ "${1:-}" = --mirror ] && { mirror "${2:?--mirror CODENAME}"; exit 0; }

# version_ge goA goB: A is B or newer (go1.26.8 >= go1.26.0; go1.26rc1 counts as go1.26)
version_ge() { [ "$(printf '%s\n%s\n' "${1#go}" "${2#go}" | sed 's/rc.*//' | sort -V | head -n1)" = "$(echo "${2#go}" | sed 's/rc.*//')" ]; }
# the version a go binary reports: go1.26.8
go_version() { GOTOOLCHAIN=local "$1" env GOVERSION 2>/dev/null || "$1" version 2>/dev/null | awk '{ print $3 }'; }

for g in "$DEST/bin/go" "$(command -v go || true)"; do
  if [ -n "$g" ] && [ -x "$g" ] && v=$(go_version "$g") && version_ge "$v" "$WANT"; then
    echo "install-go.sh: $g is $v ($WANT or newer wanted): nothing to do"
    exit 0
  fi
done
if [ -e "$DEST" ]; then
  echo "install-go.sh: $DEST holds $(go_version "$DEST/bin/go" || echo 'no Go'), older than the $WANT that $MOD needs; move it away and run this again" >&2
  exit 2
fi

# 1. a bootstrap Go of 1.21 or later
export DEBIAN_FRONTEND=noninteractive
boot=
for g in "$(command -v go || true)" /usr/lib/go-1.*/bin/go; do
  if [ -n "$g" ] && [ -x "$g" ] && v=$(go_version "$g") && version_ge "$v" go1.21; then boot=$g; fi
done
if [ -z "$boot" ]; then
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  target=()
  if [ "$codename" = bookworm ]; then
    if ! grep -rqsE '^[^#]*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
      uri=$(mirror bookworm)
      echo "install-go.sh: bookworm's golang-go is 1.19; adding bookworm-backports from $uri"
      printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
        "$uri" > /etc/apt/sources.list.d/kube-ipvs-bookworm-backports.sources
    fi
    target=(-t bookworm-backports)
  fi
  apt-get update -q
  # the newest golang-1.N-go with N >= 21 that apt offers
  pkg=$(apt-cache pkgnames golang-1. | grep -E '^golang-1\.[0-9]+-go$' | sed 's/^golang-1\.\([0-9]*\)-go$/\1/' |
    awk '$1 >= 21' | sort -n | tail -n1)
  [ -n "$pkg" ] || { echo "install-go.sh: apt offers no golang-1.21-go or later to fetch $WANT with" >&2; exit 2; }
  apt-get install -y -q --no-install-recommends "${target[@]}" "golang-1.$pkg-go" ca-certificates
  boot=/usr/lib/go-1.$pkg/bin/go
fi

# 2. the exact toolchain, through the Go module proxy
arch=$("$boot" env GOARCH)
mkdir -p "$CACHE"
echo "install-go.sh: $("$boot" version | awk '{ print $3 }') fetches $WANT (golang.org/toolchain) into $CACHE/mod"
(cd / && GOMODCACHE=$CACHE/mod GOTOOLCHAIN=$WANT GOPROXY=https://proxy.golang.org GOSUMDB=sum.golang.org "$boot" version)
src=$CACHE/mod/golang.org/toolchain@v0.0.1-$WANT.linux-$arch
[ -x "$src/bin/go" ] || { echo "install-go.sh: $src/bin/go is missing after the download" >&2; exit 2; }

# 3. its tree at /usr/local/go (the module cache's copy is read-only)
cp -a "$src" "$DEST.tmp.$$"
chmod -R u+w "$DEST.tmp.$$"
mv "$DEST.tmp.$$" "$DEST"
echo "install-go.sh: $DEST is $(GOTOOLCHAIN=local "$DEST/bin/go" version | awk '{ print $3 }')"
