#!/bin/bash
# build.sh — builds the real Kubernetes components the lab runs against (kube-apiserver,
# kubectl, kube-proxy at the release pinned in scripts/k8s/go.mod, and the etcd server that
# release requires) into .k8s/bin. The Go module and build caches live outside the clone
# (KUBE_IPVS_GO_CACHE, default /var/cache/kube-ipvs/go), so a fresh clone on the same machine
# (CI's) links from a warm cache instead of compiling Kubernetes again.
# Idempotent: does nothing when .k8s/bin/VERSION already names this go.mod's pin.
# Nothing built here ships; kube-ipvs is TypeScript. Go comes from the machine: /usr/local/go,
# which scripts/install-go.sh fills with go.mod's release when the machine has none as new.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MOD=$ROOT/scripts/k8s
OUT=$ROOT/.k8s/bin
CACHE=${KUBE_IPVS_GO_CACHE:-/var/cache/kube-ipvs/go}
mkdir -p "$CACHE"
export GOMODCACHE=$CACHE/mod GOCACHE=$CACHE/build GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0
GO=$(command -v /usr/local/go/bin/go || command -v go) || { echo "build.sh: no Go toolchain (1.26 or later) on this machine: bash scripts/install-go.sh" >&2; exit 2; }
# the version go.mod requires a module at (a `require` line of its own, or one in a block)
required() { awk -v m="$1" '{ for (i = 1; i < NF; i++) if ($i == m && $(i + 1) ~ /^v[0-9]/) { print $(i + 1); exit } }' "$MOD/go.mod"; }
K8S=$(required k8s.io/kubernetes)
ETCD=$(required go.etcd.io/etcd/server/v3)
[ -n "$K8S" ] && [ -n "$ETCD" ] || { echo "build.sh: $MOD/go.mod requires no k8s.io/kubernetes or etcd server version" >&2; exit 2; }
STAMP="k8s.io/kubernetes $K8S go.etcd.io/etcd/server/v3 $ETCD $(sha256sum "$MOD/go.sum" | cut -c1-16)"
# where the pinned modules' sources are (scripts/k8s/gen-protobuf.ts reads the .proto files there)
mkdir -p "$OUT" && echo "$GOMODCACHE" > "$OUT/GOMODCACHE"
if [ -f "$OUT/VERSION" ] && [ "$(cat "$OUT/VERSION")" = "$STAMP" ] &&
   [ -x "$OUT/kube-apiserver" ] && [ -x "$OUT/kubectl" ] && [ -x "$OUT/kube-proxy" ] && [ -x "$OUT/etcd" ]; then
  exit 0
fi
"$GO" version | K8S=$K8S awk '{ split(substr($3, 3), v, "."); if (v[1] < 1 || (v[1] == 1 && v[2] < 26)) { print "build.sh: " $3 " is older than go1.26, which k8s.io/kubernetes " ENVIRON["K8S"] " needs (bash scripts/install-go.sh installs it)" > "/dev/stderr"; exit 2 } }'
# what hack/lib/version.sh stamps, so `kube-apiserver --version` prints the pinned release
minor=$(echo "$K8S" | cut -d. -f2)
pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ld="-s -w"
for p in "${pkgs[@]}"; do
  ld+=" -X $p.gitVersion=$K8S -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  ld+=" -X $p.buildDate=1970-01-01T00:00:00Z"
done
mkdir -p "$OUT"
cd "$MOD"
t0=$(date +%s)
"$GO" mod download
t1=$(date +%s)
# -p 2: the machine's two cores; one compiler of kube-apiserver's biggest packages peaks near 1.8 GB
"$GO" build -p 2 -trimpath -ldflags "$ld" -o "$OUT/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kube-proxy
"$GO" build -p 2 -trimpath -ldflags "-s -w" -o "$OUT/etcd" go.etcd.io/etcd/server/v3
t2=$(date +%s)
echo "$STAMP" > "$OUT/VERSION"
echo "build.sh: $K8S and etcd $ETCD in $OUT (download $((t1 - t0)) s, build $((t2 - t1)) s)"
"$OUT/kube-apiserver" --version
