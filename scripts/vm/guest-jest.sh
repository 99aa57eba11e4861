#!/bin/bash
# guest-jest.sh OUTDIR [jest path filters...] — runs inside the VM. Each VM test file runs
# in a network namespace of its own (unshare --net): IPVS tables, ipsets, iptables rules,
# links and vs/* sysctls are per namespace, so no file can see what another left behind.
# Writes OUTDIR/vm-N.json per file; exits non-zero if any file failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=$1
shift
JEST=(node_modules/.bin/node --experimental-vm-modules --disable-warning=ExperimentalWarning node_modules/jest/bin/jest.js --selectProjects vm --runInBand)
# (no process substitution: the guest's /dev has no /dev/fd)
LIST=$("${JEST[@]}" --listTests "$@" 2>/dev/null | grep "\.vm\.test\.js$" | sort)
FILES=()
[ -n "$LIST" ] && mapfile -t FILES <<< "$LIST"
if [ ${#FILES[@]} -eq 0 ]; then
  echo "guest-jest: no VM test files match: $*" >&2
  exit 1
fi
rc=0
i=0
for f in "${FILES[@]}"; do
  i=$((i + 1))
  unshare --net -- bash -c 'ip link set lo up && exec "$@"' _ \
    "${JEST[@]}" --json --outputFile="$OUT/vm-$i.json" "$f" || rc=1
done
exit $rc
