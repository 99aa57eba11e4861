#!/bin/bash
# build.sh — builds the parts of a real Kubernetes node the e2e lab runs (make e2e), from Go
# modules, into .k8s/node/bin:
#   from k8s.io/kubernetes (scripts/node/go/go.mod, the release scripts/k8s/go.mod pins):
#     kubelet, kube-controller-manager, kube-scheduler, agnhost, e2e.test (and the ginkgo CLI it links)
#   containerd, containerd-shim-runc-v2, ctr  github.com/containerd/containerd/v2   (CONTAINERD)
#   runc (static, seccomp)                    github.com/opencontainers/runc        (RUNC)
#   bridge, host-local, loopback, portmap     github.com/containernetworking/plugins (CNI)
#   crictl                                    sigs.k8s.io/cri-tools                 (CRICTL)
#   coredns                                   github.com/coredns/coredns            (COREDNS)
#   pause (static C)                          build/pause/linux/pause.c of k8s.io/kubernetes
# Nothing built here ships: kube-ipvs is TypeScript. The Go caches are the lab's, outside the
# clone (KUBE_IPVS_GO_CACHE), so a fresh clone on the same machine links instead of compiling.
# Idempotent: each part is skipped while its stamp names the same version.
#   usage: scripts/node/build.sh [PART...]   (default: all, in the order a node needs them)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
MOD=$ROOT/scripts/node/go
OUT=$ROOT/.k8s/node/bin
CACHE=${KUBE_IPVS_GO_CACHE:-/var/cache/kube-ipvs/go}
mkdir -p "$CACHE" "$OUT"
export GOMODCACHE=$CACHE/mod GOCACHE=$CACHE/build GOTOOLCHAIN=local GOFLAGS=-buildvcs=false CGO_ENABLED=0 GOBIN=$OUT
GO=$(command -v /usr/local/go/bin/go || command -v go) || { echo "node/build.sh: no Go toolchain" >&2; exit 2; }
export GO
CONTAINERD=v2.4.2 # containerd's RELEASES.md lists Kubernetes 1.37 with 2.3 and 2.4 only
RUNC=v1.5.3       # the newest v1.5 (containerd 2.4.2's CI pins v1.5.2)
CNI=v1.10.0
CRICTL=v1.37.0 # cri-tools follows the Kubernetes minor
COREDNS=v1.15.0
K8S=$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "$MOD/go.mod")
minor=$(echo "$K8S" | cut -d. -f2)
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$K8S -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
done

# done PART VERSION: true when PART's stamp names VERSION (and the go.sum it was built from)
stamp_of() { echo "$2 $(sha256sum "$MOD/go.sum" | cut -c1-12)"; }
done_() { [ "$(cat "$OUT/.stamp-$1" 2>/dev/null)" = "$(stamp_of "$1" "$2")" ]; }
mark() { stamp_of "$1" "$2" > "$OUT/.stamp-$1"; }
timed() { # PART VERSION command...
  local part=$1 ver=$2 t0; shift 2
  if done_ "$part" "$ver"; then return 0; fi
  t0=$(date +%s)
  "$@"
  mark "$part" "$ver"
  echo "node/build.sh: $part $ver in $(($(date +%s) - t0)) s"
}
k8s_build() { (cd "$MOD" && "$GO" build -p 2 -trimpath -ldflags "$ld" -o "$OUT/" "$@"); }

build_part() {
  case $1 in
    kubelet) timed kubelet "$K8S" k8s_build k8s.io/kubernetes/cmd/kubelet ;;
    containerd)
      timed containerd "$CONTAINERD" bash -c '
        # CGO_ENABLED=0: the btrfs snapshotter needs cgo and drops out; overlayfs stays
        "$GO" install -trimpath -ldflags "-s -w" github.com/containerd/containerd/v2/cmd/containerd@'"$CONTAINERD"' \
          github.com/containerd/containerd/v2/cmd/ctr@'"$CONTAINERD"'
        "$GO" install -trimpath -tags no_grpc -ldflags "-s -w" github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@'"$CONTAINERD"'' ;;
    runc)
      dpkg-query -W -f='${Status}' libseccomp-dev 2>/dev/null | grep -q 'install ok installed' || {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libseccomp-dev pkg-config; }
      # static with Debian's libseccomp.a; without runc's default libpathrs tag (a Rust library)
      timed runc "$RUNC" env CGO_ENABLED=1 "$GO" install -trimpath -tags "seccomp urfave_cli_no_docs netgo osusergo" \
        -ldflags "-s -w -extldflags -static" "github.com/opencontainers/runc@$RUNC" ;;
    cni)
      local p=github.com/containernetworking/plugins/plugins
      timed cni "$CNI" "$GO" install -trimpath -ldflags "-s -w" "$p/main/bridge@$CNI" "$p/main/loopback@$CNI" \
        "$p/ipam/host-local@$CNI" "$p/meta/portmap@$CNI" ;;
    crictl) timed crictl "$CRICTL" "$GO" install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRICTL" ;;
    pause)
      local src=$GOMODCACHE/k8s.io/kubernetes@$K8S/build/pause/linux/pause.c
      [ -f "$src" ] || (cd "$MOD" && "$GO" mod download k8s.io/kubernetes)
      timed pause 3.10.2 bash -c "gcc -Os -Wall -Werror -static -DVERSION=v3.10.2 -o '$OUT/pause' '$src' && strip '$OUT/pause'" ;;
    controllers) timed controllers "$K8S" k8s_build k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler ;;
    coredns) timed coredns "$COREDNS" "$GO" install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS" ;;
    agnhost) timed agnhost "$(cat "$GOMODCACHE/k8s.io/kubernetes@$K8S/test/images/agnhost/VERSION" 2>/dev/null || echo "$K8S")" \
      k8s_build k8s.io/kubernetes/test/images/agnhost ;;
    e2e) timed e2e "$K8S" bash -c "cd '$MOD' && '$GO' test -c -p 2 -trimpath -ldflags '$ld' -o '$OUT/e2e.test' k8s.io/kubernetes/test/e2e" ;;
    # the ginkgo CLI at the version e2e.test links (it runs the suite in parallel processes)
    ginkgo) timed ginkgo "$(awk '$1 == "github.com/onsi/ginkgo/v2" { print $2 }' "$MOD/go.mod")" k8s_build github.com/onsi/ginkgo/v2/ginkgo ;;
    *) echo "node/build.sh: no part $1" >&2; exit 2 ;;
  esac
}
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(kubelet containerd runc cni crictl pause controllers coredns agnhost e2e ginkgo)
for part in "${parts[@]}"; do build_part "$part"; done
