#!/bin/bash
# check-bookworm-go.sh — proves, in a fresh Debian bookworm chroot rather than on a machine
# that already has Go, that scripts/install-go.sh (the Go step of `scripts/install-deps.sh all`)
# gives a Go that builds what scripts/k8s/go.mod asks for:
#   before  bookworm's own golang-go (1.19), which install-deps.sh's package list installs:
#           scripts/k8s/build.sh stops at its version check (nothing is downloaded or built);
#   after   install-go.sh: `/usr/local/go/bin/go version` names go.mod's toolchain, and it
#           builds and runs a trivial module whose go line is go.mod's.
# Kubernetes itself is not built (30+ minutes on 2 cores). Not part of `make test`.
# As root; the chroot's apt sources are the host's own mirrors (install-go.sh --mirror).
#
#   bash scripts/check-bookworm-go.sh [DIR]     (DIR: the chroot, default a new /tmp/bookworm-go.*;
#                                                removed at the end unless KEEP=1)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${1:-$(mktemp -d /tmp/bookworm-go.XXXXXX)}
command -v mmdebstrap >/dev/null || { apt-get update -q && apt-get install -y -q --no-install-recommends mmdebstrap; }
want=$(bash "$ROOT/scripts/install-go.sh" --print)
godirective=$(awk '$1 == "go" { print $2; exit }' "$ROOT/scripts/k8s/go.mod")
main=$(bash "$ROOT/scripts/install-go.sh" --mirror bookworm)
security=$(bash "$ROOT/scripts/install-go.sh" --mirror bookworm-security)
t0=$(date +%s)
phase() { echo "== $(($(date +%s) - t0)) s: $*"; }

[ -z "$(ls -A "$DIR")" ] || { echo "check-bookworm-go.sh: $DIR is not empty" >&2; exit 2; }
phase "mmdebstrap bookworm into $DIR from $main and $security"
nice -n 10 mmdebstrap --quiet --variant=apt --include=ca-certificates bookworm "$DIR" \
  "deb $main bookworm main" "deb $security bookworm-security main"
mkdir -p "$DIR/src/scripts/k8s"
cp "$ROOT/scripts/install-go.sh" "$DIR/src/scripts/"
cp "$ROOT/scripts/k8s/build.sh" "$ROOT/scripts/k8s/go.mod" "$ROOT/scripts/k8s/go.sum" "$DIR/src/scripts/k8s/"
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
# the host's own local CAs (/usr/local/share/ca-certificates: on a network whose HTTPS goes
# through an intercepting proxy, its CA is there), as a fresh machine on the same network has
# them; Debian's CA list alone fails the Go module proxy's TLS there
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$DIR/usr/local/share/ca-certificates/"
  chroot "$DIR" update-ca-certificates >/dev/null 2>&1
fi

# everything inside runs in a mount namespace of its own: /proc and /dev leave with it
unshare --mount --propagation private bash -s -- "$DIR" "$want" "$godirective" "$t0" <<'INSIDE'
set -euo pipefail
DIR=$1 want=$2 godirective=$3 t0=$4
phase() { echo "== $(($(date +%s) - t0)) s: $*"; }
mount -t proc proc "$DIR/proc"
mount --rbind /dev "$DIR/dev"
inroot() { nice -n 10 chroot "$DIR" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$@"; }

phase "before: bookworm's golang-go, as install-deps.sh's package list installs it"
inroot bash -c 'apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go >/dev/null'
inroot go version
if inroot bash /src/scripts/k8s/build.sh; then echo "check-bookworm-go.sh: build.sh went on with bookworm's Go" >&2; exit 1; fi

phase "after: scripts/install-go.sh"
inroot bash /src/scripts/install-go.sh
phase "installed"
got=$(inroot /usr/local/go/bin/go version)
echo "$got"
[ "$(echo "$got" | awk '{ print $3 }')" = "$want" ] || { echo "check-bookworm-go.sh: wanted $want" >&2; exit 1; }
inroot mkdir -p /tmp/m
printf 'module example.local/m\n\ngo %s\n' "$godirective" > "$DIR/tmp/m/go.mod"
printf 'package main\n\nimport (\n\t"fmt"\n\t"runtime"\n)\n\nfunc main() { fmt.Println("built by", runtime.Version()) }\n' > "$DIR/tmp/m/main.go"
cat "$DIR/tmp/m/go.mod"
# GOTOOLCHAIN=local: the installed Go itself builds it, nothing else is fetched
inroot bash -c 'cd /tmp/m && GOTOOLCHAIN=local GOPROXY=off GOCACHE=/tmp/gocache /usr/local/go/bin/go build -o hello . && ./hello'
phase "done"
INSIDE
echo "check-bookworm-go.sh: ok, $want in a fresh bookworm in $(($(date +%s) - t0)) s"
[ -n "${KEEP:-}" ] || rm -rf "$DIR"
