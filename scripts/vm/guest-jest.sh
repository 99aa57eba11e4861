#!/bin/bash
# guest-jest.sh OUTDIR [jest path filters...] — runs inside the VM. Each VM test file runs
# in a network namespace of its own (unshare --net): IPVS tables, ipsets, iptables rules,
# links and vs/* sysctls are per namespace, so no file can see what another left behind.
# Each also gets a mount namespace with its own /run/secrets (the service-account token the
# daemon tests write) and /run/netns (`ip netns add pod1` names a namespace there: two files
# would claim the same name), so files can run side by side.
#
# Lanes (VM_LANES, default 2): the files that use the lab (connectToLab: they stop and start
# its shared API servers) run one after another in lane 1; the files that need only the
# kernel are taken from one queue by every lane (lane 1 once its lab files are done), so
# they run beside the lab's. VM_LANES=1 runs every file in one lane. A file that says
# `guest-jest: alone` runs before the lanes start, with nothing beside it (what it reads
# depends on the kernel across namespaces: IPVS keeps one service hash table for all, and a
# multi-page /proc/net/ip_vs read skipped some while another namespace's table changed).
# A file's output is printed whole when it ends (lanes would interleave it otherwise).
# Writes OUTDIR/vm-N.json (jest) and OUTDIR/vm-N.wall (file, lane, start, end, exit code, CPU
# seconds its processes used) per file, and OUTDIR/vm-cpu.txt (the guest's busy and total
# CPU-seconds over the lanes, from /proc/stat): whether the guest waits or works; exits non-zero
# if any file failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=$1
shift
LANES=${VM_LANES:-2}
JEST=(node_modules/.bin/node --experimental-vm-modules --disable-warning=ExperimentalWarning node_modules/jest/bin/jest.js --selectProjects vm --runInBand)
# (no process substitution: the guest's /dev has no /dev/fd)
LIST=$("${JEST[@]}" --listTests "$@" 2>/dev/null | grep "\.vm\.test\.js$" | sort)
FILES=()
[ -n "$LIST" ] && mapfile -t FILES <<< "$LIST"
if [ ${#FILES[@]} -eq 0 ]; then
  echo "guest-jest: no VM test files match: $*" >&2
  exit 1
fi
mkdir -p /run/secrets /run/netns
# V8's compiled code of every module node loads the usual way (jest's own, the bundled daemon)
# kept for the boot's later processes: in the guest a warm jest start went 5.7 -> 5.0 s and the
# daemon's bundle 1.6 -> 1.0 s (the guest's /tmp is its own tmpfs, gone with the boot)
export NODE_COMPILE_CACHE=/tmp/kube-ipvs-node-compile-cache

# children_cpu FILE: the user+system seconds of the waited-for children in FILE, as this
# shell's `times` wrote it there (a builtin: inside $(...) it would report the subshell's own
# children, none, so only the parse runs in the subshell)
children_cpu() {
  awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] } print s }' "$1"
}

# cpu_stat: the guest's busy and total CPU ticks from /proc/stat's first line (idle and iowait are not busy)
cpu_stat() {
  awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t }' /proc/stat
}

# run_file N FILE LANE: one file in its own network and mount namespaces
run_file() {
  local n=$1 f=$2 lane=$3 t0 t1 rc c0 c1
  times > "$OUT/.cpu-$lane"
  c0=$(children_cpu "$OUT/.cpu-$lane")
  t0=$(date +%s.%N)
  unshare --net --mount --propagation private -- bash -c \
    'mount -t tmpfs -o size=16m secrets /run/secrets && mount -t tmpfs -o size=1m netns /run/netns &&
     ip link set lo up && exec "$@"' _ \
    "${JEST[@]}" --json --outputFile="$OUT/vm-$n.json" "$f" > "$OUT/vm-$n.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  times > "$OUT/.cpu-$lane"
  c1=$(children_cpu "$OUT/.cpu-$lane")
  echo "$f $lane $t0 $t1 $rc $(awk "BEGIN { print $c1 - $c0 }")" > "$OUT/vm-$n.wall"
  cat "$OUT/vm-$n.log"
  rm -f "$OUT/vm-$n.log"
  return $rc
}

# next_shared: the next kernel-only file off the shared queue as N:FILE (empty when none is left);
# the lanes take from it in turn, so a lane that finishes early takes more
next_shared() {
  (
    flock 9
    local k
    k=$(cat "$OUT/.queue-next")
    echo $((k + 1)) > "$OUT/.queue-next"
    sed -n "$((k + 1))p" "$OUT/.queue"
  ) 9> "$OUT/.queue-lock"
}

# run_lane LANE N:FILE...: the given files one after another, then from the shared queue
run_lane() {
  local lane=$1 rc=0 item
  shift
  for item in "$@"; do run_file "${item%%:*}" "${item#*:}" "$lane" || rc=1; done
  while item=$(next_shared) && [ -n "$item" ]; do run_file "${item%%:*}" "${item#*:}" "$lane" || rc=1; done
  return $rc
}

# the lab's files in lane 1; the kernel-only ones in the shared queue; the alone ones first
ALONE_ITEMS=()
LAB_ITEMS=()
: > "$OUT/.queue"
echo 0 > "$OUT/.queue-next"
i=0
for f in "${FILES[@]}"; do
  i=$((i + 1))
  if grep -q 'guest-jest: alone' "$f"; then
    ALONE_ITEMS+=("$i:$f")
  elif grep -q connectToLab "$f"; then
    LAB_ITEMS+=("$i:$f")
  else
    echo "$i:$f" >> "$OUT/.queue"
  fi
done

rc=0
for item in "${ALONE_ITEMS[@]+"${ALONE_ITEMS[@]}"}"; do run_file "${item%%:*}" "${item#*:}" 0 || rc=1; done

read -r busy0 total0 <<< "$(cpu_stat)"
pids=()
run_lane 1 "${LAB_ITEMS[@]+"${LAB_ITEMS[@]}"}" &
pids+=($!)
for ((l = 2; l <= LANES; l++)); do
  run_lane "$l" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rc=1; done
read -r busy1 total1 <<< "$(cpu_stat)"
hz=$(getconf CLK_TCK)
echo "$(((busy1 - busy0) / hz)) $(((total1 - total0) / hz)) $(nproc)" > "$OUT/vm-cpu.txt"
echo "guest-jest: the guest's CPUs were busy $(((busy1 - busy0) / hz)) of $(((total1 - total0) / hz)) CPU-seconds over the lanes ($(nproc) CPUs)"
rm -f "$OUT/.queue" "$OUT/.queue-next" "$OUT/.queue-lock" "$OUT"/.cpu-*
exit $rc
