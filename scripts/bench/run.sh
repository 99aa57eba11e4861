#!/bin/bash
# make bench: 10,000 services x 10 real servers loaded from an empty table, then dumped;
# the daemon scenarios at 1,000 x 10, 10,000 x 10 and 50,000 x 2 (BENCH_DAEMON_SIZES);
# ipvsadm -R / -Sn vs our client vs our CLI, each side in a FRESH VM boot (the kernel's
# dest trash after a flush would otherwise slow every later add; the cli side times its
# peers in its own boot: moby/ipvs's load in a namespace of its own, then ipvsadm's
# listings of the CLI's table). Prints a table; then the
# node-networking benchmark (ipset/iptables execs and times for 10,000 services).
set -euo pipefail
cd "$(dirname "$0")/../.."
SERVICES=${BENCH_SERVICES:-10000}
DESTS=${BENCH_DESTS:-10}
SIDES=${BENCH_SIDES-ipvsadm ours cli}
# moby/ipvs's cold load (Go, kube-proxy's library; built here offline from Debian's packages):
# the peer of the cli side's -R and of the daemon's cold start
PEER=dist/scripts/bench/peer/moby-ipvs-load
if command -v go >/dev/null && [ -d /usr/share/gocode/src/github.com/moby/ipvs ]; then
  mkdir -p "$(dirname "$PEER")"
  GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS= GOCACHE="${GOCACHE:-${TMPDIR:-/tmp}/kube-ipvs-gocache}" \
    go build -o "$PEER" scripts/bench/peer/moby-ipvs-load.go
else
  echo ">> moby/ipvs peer not built: apt-get install golang-go golang-github-docker-docker-dev" >&2
fi
OUT=$(mktemp -d)
for side in $SIDES; do
  echo ">> $side: fresh VM boot" >&2
  BENCH_OUT=$OUT/results.jsonl bash scripts/vm/run.sh -t 1800 -w "$OUT" -- \
    env BENCH_OUT="$OUT/results.jsonl" node_modules/.bin/node dist/scripts/bench/ipvs-bench.js "$side" "$SERVICES" "$DESTS" >&2
done
# (BENCH_SIDES= runs none: the daemon scenarios alone)
if [ -s "$OUT/results.jsonl" ]; then node_modules/.bin/node dist/scripts/bench/report.js "$OUT/results.jsonl"; fi
rm -rf "$OUT"
# the daemon scenarios per size (BENCH_DAEMON_SIZES), each size in a fresh boot:
# cold start, adopt, full check, single changes, rolling update, churn (one segment of
# BENCH_CHURN_SECONDS per offered rate in BENCH_CHURN_RATES, default "100 300 1000"/s;
# BENCH_CHURN_RATE=R runs one rate), memory; peers: moby/ipvs's cold load (built above),
# kube-proxy's per-sync netlink pattern, and kube-proxy's sync loop under the same churn
# segments in a netns of its own (scripts/bench/peer-churn.ts; BENCH_PEER_CHURN=0 skips it);
# sizes as SERVICESxENDPOINTS (a bare number means x10); 50000x2 is the issue's largest table
DAEMON_SIZES=${BENCH_DAEMON_SIZES-1000x10 10000x10 50000x2}
if [ -n "$DAEMON_SIZES" ]; then
  OUT=$(mktemp -d)
  for size in $DAEMON_SIZES; do
    n=${size%%x*}; e=10; [ "$size" != "$n" ] && e=${size#*x}
    echo ">> daemon, $n services x $e endpoints: fresh VM boot" >&2
    # the guest needs more than the default 2 GiB (API server, daemon, peer): 4 GiB, 6 GiB from
    # 50,000 Services (BENCH_VM_MEM sets one size for all)
    mem=4G; [ "$n" -ge 50000 ] && mem=6G
    bash scripts/vm/run.sh -t 5400 -m "${BENCH_VM_MEM:-$mem}" -w "$OUT" -- \
      env BENCH_OUT="$OUT/daemon.jsonl" BENCH_CHURN_SECONDS="${BENCH_CHURN_SECONDS:-30}" BENCH_CHURN_RATES="${BENCH_CHURN_RATES:-${BENCH_CHURN_RATE:-100 300 1000}}" \
      BENCH_PEER_CHURN="${BENCH_PEER_CHURN:-1}" \
      BENCH_PEER_GETS="${BENCH_PEER_GETS:-0}" BENCH_PEER_RUNS="${BENCH_PEER_RUNS:-5}" BENCH_CHECKS="${BENCH_CHECKS:-3}" BENCH_ONLY="${BENCH_ONLY:-}" BENCH_SETTLE_SECONDS="${BENCH_SETTLE_SECONDS:-30}" \
      node_modules/.bin/node dist/scripts/bench/daemon-latency.js "$n" "$e" "${BENCH_DAEMON_CHANGES:-1000}" >&2
  done
  node_modules/.bin/node dist/scripts/bench/report-daemon.js "$OUT/daemon.jsonl"
  rm -rf "$OUT"
fi
# node networking (ipsets + iptables) for a 10,000-service desired state, fresh boot
if [ "${BENCH_NODE_NETWORKING:-1}" = 1 ]; then
  echo ">> node networking: fresh VM boot" >&2
  bash scripts/vm/run.sh -t 1800 -- node_modules/.bin/node dist/scripts/bench/node-networking.js
fi
# the kernel's side of churn: NEW_DEST against a growing dest trash (deleted real servers),
# fresh boot (BENCH_DEST_TRASH=0 skips)
if [ "${BENCH_DEST_TRASH:-1}" = 1 ]; then
  echo ">> dest trash: fresh VM boot" >&2
  bash scripts/vm/run.sh -t 900 -- node_modules/.bin/node dist/scripts/bench/dest-trash.js
fi
# intake cost per EndpointSlice watch event (list/watch over loopback HTTP -> informer -> tracker,
# and its stages against JSON.parse of the same lines): on the host (BENCH_INTAKE=0 skips), then
# in a fresh boot (BENCH_INTAKE_GUEST=0 skips); BENCH_INTAKE_ARGS: SERVICES ENDPOINTS EVENTS ROUNDS
if [ "${BENCH_INTAKE:-1}" = 1 ]; then
  node_modules/.bin/node --max-semi-space-size=16 dist/scripts/bench/intake.js ${BENCH_INTAKE_ARGS:-10000 10 20000 3}
fi
if [ "${BENCH_INTAKE_GUEST:-1}" = 1 ]; then
  echo ">> intake: fresh VM boot" >&2
  bash scripts/vm/run.sh -t 900 -- env BENCH_WHERE=guest node_modules/.bin/node --max-semi-space-size=16 dist/scripts/bench/intake.js ${BENCH_INTAKE_GUEST_ARGS:-10000 10 5000 3}
fi
# retained JS heap over endpoint churn, on the host over the fakes (forced GC; BENCH_RETAINED=0
# skips): whether kube-ipvs's own state grows, apart from garbage and client-node's cache
if [ "${BENCH_RETAINED:-1}" = 1 ]; then
  node_modules/.bin/node --expose-gc dist/scripts/bench/retained-heap.js "${BENCH_RETAINED_SERVICES:-10000}" "${BENCH_RETAINED_UPDATES:-30000}"
fi
