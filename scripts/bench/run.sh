#!/bin/bash
# make bench. First the headline, kube-ipvs against the real kube-proxy v1.37 in IPVS mode
# (.k8s/bin, scripts/k8s/build.sh) per size in BENCH_PEER_SIZES (default "1000x10 10000x10"), one
# VM boot each, against the lab's real kube-apiserver (its own lab dir, BENCH_LAB_DIR, default
# .lab/bench; stopped at the end): first sync, one endpoint change to the kernel, lag under
# churn, idle CPU, RSS, and what each costs the API server (scripts/bench/kube-proxy-peer.ts;
# BENCH_KUBE_PROXY=0 skips it). Then the component benches, whose peers are kube-proxy's
# library (moby/ipvs) and its sync pattern replayed, not the kube-proxy binary:
# 10,000 services x 10 real servers loaded from an empty table, then dumped;
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
# First, the headline: kube-ipvs against the real kube-proxy --proxy-mode=ipvs
# (scripts/bench/kube-proxy-peer.ts), per
# size in BENCH_PEER_SIZES, one VM boot each, one side after the other in the same boot, against
# the lab's real kube-apiserver: the objects loaded first from the host (lab-load.ts, many POSTs
# in flight); every endpoint change written from the host too (lab-writer.ts, reached from the
# guest at 10.0.2.102); BENCH_PEER_* tune it (see kube-proxy-peer.ts). Prints a table.
if [ "${BENCH_KUBE_PROXY:-1}" = 1 ]; then
  LAB=${BENCH_LAB_DIR:-.lab/bench}
  . scripts/lab/vm-lab.sh
  lab_up "$LAB" >/dev/null
  OUT=$(mktemp -d)
  # BENCH_PEER_BOOTS (default 1) boots per size, each a fresh VM: the report shows their medians
  for size in $(for s in ${BENCH_PEER_SIZES-1000x10 10000x10}; do seq "${BENCH_PEER_BOOTS:-1}" | sed "s/.*/$s/"; done); do
    n=${size%%x*}; e=10; [ "$size" != "$n" ] && e=${size#*x}
    echo ">> kube-ipvs vs kube-proxy, $n services x $e endpoints: loading the lab, then a fresh VM boot" >&2
    node_modules/.bin/node dist/scripts/bench/lab-load.js "$LAB" "$n" "$e" >> "$OUT/kube-proxy.jsonl"
    rm -f "$OUT/writer.json"
    node_modules/.bin/node dist/scripts/bench/lab-writer.js "$LAB" "$OUT/writer.json" & WRITER=$!
    for _ in $(seq 100); do [ -s "$OUT/writer.json" ] && break; sleep 0.1; done
    port=$(node_modules/.bin/node -p "JSON.parse(require('fs').readFileSync('$OUT/writer.json', 'utf8')).port")
    rc=0
    # BENCH_PEER_CPU_PROFILE=DIR (a host directory, shared read-write): kube-ipvs's V8 profiles
    # land there, and the idle window's bounds in the results (scripts/bench/cpu-profile.ts)
    prof=(); [ -n "${BENCH_PEER_CPU_PROFILE:-}" ] && mkdir -p "$BENCH_PEER_CPU_PROFILE" && prof=(-w "$BENCH_PEER_CPU_PROFILE")
    bash scripts/vm/run.sh -t "${BENCH_PEER_VM_TIMEOUT:-21600}" -m "${BENCH_VM_MEM:-4G}" -w "$OUT" "${prof[@]}" "${LAB_VM_ARGS[@]}" \
      -f "10.0.2.102:$port" -e "BENCH_WRITER=10.0.2.102:$port" -- \
      env BENCH_OUT="$OUT/kube-proxy.jsonl" BENCH_PEER_SIDES="${BENCH_PEER_SIDES:-}" BENCH_PEER_STARTS="${BENCH_PEER_STARTS:-}" \
      BENCH_PEER_CHEAP_SECONDS="${BENCH_PEER_CHEAP_SECONDS:-}" BENCH_PEER_CHANGES="${BENCH_PEER_CHANGES:-}" \
      BENCH_PEER_IDLE_SECONDS="${BENCH_PEER_IDLE_SECONDS:-}" BENCH_PEER_SETTLE_SECONDS="${BENCH_PEER_SETTLE_SECONDS:-}" \
      BENCH_PEER_CHURN_SECONDS="${BENCH_PEER_CHURN_SECONDS:-}" BENCH_PEER_CHURN_RATES="${BENCH_PEER_CHURN_RATES:-}" \
      BENCH_PEER_CPU_PROFILE="${BENCH_PEER_CPU_PROFILE:-}" BENCH_PEER_NODE_OPTIONS="${BENCH_PEER_NODE_OPTIONS:-}" \
      BENCH_PEER_VARIANTS="${BENCH_PEER_VARIANTS:-}" \
      BENCH_PEER_RESTART_APISERVER="${BENCH_PEER_RESTART_APISERVER:-}" BENCH_PEER_RESTART_DOWN_SECONDS="${BENCH_PEER_RESTART_DOWN_SECONDS:-}" \
      BENCH_PEER_RESTART_SETTLE_SECONDS="${BENCH_PEER_RESTART_SETTLE_SECONDS:-}" BENCH_PEER_DATAPATH="${BENCH_PEER_DATAPATH:-}" \
      BENCH_PEER_DATAPATH_SECONDS="${BENCH_PEER_DATAPATH_SECONDS:-}" BENCH_PEER_DATAPATH_CONCURRENCY="${BENCH_PEER_DATAPATH_CONCURRENCY:-}" \
      node_modules/.bin/node dist/scripts/bench/kube-proxy-peer.js "$n" "$e" >&2 || rc=$?
    kill "$WRITER"; wait "$WRITER" || true
    [ "$rc" = 0 ] || echo ">> kube-proxy bench at $size failed ($rc)" >&2
  done
  # BENCH_ROLLOUT_NODES proxies of each side started at once against the one API server (issue 28;
  # scripts/bench/rollout-starts.ts), at BENCH_ROLLOUT_SIZE (default 1000x10; "" skips it)
  for size in ${BENCH_ROLLOUT_SIZE-1000x10}; do
    n=${size%%x*}; e=10; [ "$size" != "$n" ] && e=${size#*x}
    echo ">> ${BENCH_ROLLOUT_NODES:-20} starts at once, $n services x $e endpoints: loading the lab, then a fresh VM boot" >&2
    node_modules/.bin/node dist/scripts/bench/lab-load.js "$LAB" "$n" "$e" >> "$OUT/kube-proxy.jsonl"
    bash scripts/vm/run.sh -t "${BENCH_PEER_VM_TIMEOUT:-21600}" -m "${BENCH_VM_MEM:-4G}" -w "$OUT" "${LAB_VM_ARGS[@]}" -- \
      env BENCH_OUT="$OUT/kube-proxy.jsonl" BENCH_ROLLOUT_NODES="${BENCH_ROLLOUT_NODES:-}" BENCH_ROLLOUT_SIDES="${BENCH_ROLLOUT_SIDES:-}" \
      BENCH_ROLLOUT_WATCH_LIST="${BENCH_ROLLOUT_WATCH_LIST:-}" \
      node_modules/.bin/node dist/scripts/bench/rollout-starts.js "$n" "$e" >&2 || echo ">> rollout bench at $size failed" >&2
  done
  # one node of each side started at once and left alone for BENCH_STEADY_SECONDS (default an
  # hour) with the server's default watch timeouts: what each costs the API server per hour of
  # steady state (issue 28; scripts/bench/steady-state.ts), at BENCH_STEADY_SIZE (default
  # 1000x10; "" skips it)
  for size in ${BENCH_STEADY_SIZE-1000x10}; do
    n=${size%%x*}; e=10; [ "$size" != "$n" ] && e=${size#*x}
    echo ">> steady state, $n services x $e endpoints: loading the lab, then a fresh VM boot" >&2
    node_modules/.bin/node dist/scripts/bench/lab-load.js "$LAB" "$n" "$e" >> "$OUT/kube-proxy.jsonl"
    bash scripts/vm/run.sh -t "${BENCH_PEER_VM_TIMEOUT:-21600}" -m "${BENCH_VM_MEM:-4G}" -w "$OUT" "${LAB_VM_ARGS[@]}" -- \
      env BENCH_OUT="$OUT/kube-proxy.jsonl" BENCH_STEADY_SECONDS="${BENCH_STEADY_SECONDS:-}" \
      BENCH_STEADY_SETTLE_SECONDS="${BENCH_STEADY_SETTLE_SECONDS:-}" \
      node_modules/.bin/node dist/scripts/bench/steady-state.js "$n" "$e" >&2 || echo ">> steady-state bench at $size failed" >&2
  done
  [ -s "$OUT/kube-proxy.jsonl" ] && node_modules/.bin/node dist/scripts/bench/report-kube-proxy.js "$OUT/kube-proxy.jsonl"
  [ -s "$OUT/kube-proxy.jsonl" ] && node_modules/.bin/node dist/scripts/bench/report-rollout.js "$OUT/kube-proxy.jsonl"
  [ -s "$OUT/kube-proxy.jsonl" ] && node_modules/.bin/node dist/scripts/bench/report-steady.js "$OUT/kube-proxy.jsonl"
  [ -n "${BENCH_KEEP_RESULTS:-}" ] && cp "$OUT/kube-proxy.jsonl" "$BENCH_KEEP_RESULTS"
  rm -rf "$OUT"
  lab_down "$LAB" >/dev/null
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
# what one periodic full sync allocates with nothing changed, and where, on the host over the
# fakes (V8's sampling heap profiler; BENCH_FULL_SYNC_ALLOC=0 skips): the garbage each
# syncPeriod leaves for the collector
if [ "${BENCH_FULL_SYNC_ALLOC:-1}" = 1 ]; then
  node_modules/.bin/node dist/scripts/bench/full-sync-alloc.js "${BENCH_FULL_SYNC_ALLOC_SERVICES:-10000}" 3
fi
