#!/bin/bash
# test-all.sh — unit tests on the host, integration tests inside one VM boot (each VM test
# file in its own network namespace); prints one summary line "N passed, N failed" over
# both, and fails if either run failed. The lab (a real etcd and kube-apiserver, scripts/lab/)
# runs on the host for the whole run, in a folder and on ports of its own.
# The results stay in .test-results/RUN (jest's JSON per run, the guest's wall clock per VM
# file, the phases' wall clocks; .test-results/last links the newest) and the per-file time
# table (scripts/test-times.ts) is printed at the end.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lab/vm-lab.sh
mkdir -p .lab
LAB=$(mktemp -d "$PWD/.lab/test.XXXXXX")
trap 'lab_down "$LAB"; rm -rf "$LAB"' EXIT
lab_up "$LAB" || { echo "the lab did not start (its log: $LAB/lab.log)"; LAB_VM_ARGS=(); }
JEST=(node_modules/.bin/node --experimental-vm-modules --disable-warning=ExperimentalWarning node_modules/jest/bin/jest.js)
mkdir -p .test-results
OUT=$(mktemp -d "$PWD/.test-results/$(date -u +%Y%m%dT%H%M%SZ).XXXX")
ln -sfn "$(basename "$OUT")" .test-results/last
# the five newest runs are kept (a run's JSON is a few MB)
ls -1d .test-results/2*/ 2>/dev/null | sort | head -n -5 | xargs -r rm -rf
# phase NAME CMD...: runs CMD, appends "NAME start end" (epoch seconds) to phases.txt
phase() {
  local name=$1 t0 rc
  shift
  t0=$(date +%s.%N)
  "$@"
  rc=$?
  echo "$name $t0 $(date +%s.%N)" >> "$OUT/phases.txt"
  return $rc
}
# the tree is as the formatter leaves it (`make format` fixes it)
phase format bash scripts/format.sh --check
format_rc=$?
phase unit "${JEST[@]}" --selectProjects unit --json --outputFile="$OUT/unit.json"
unit_rc=$?
# no floating or misused promise, no switch that misses a case (eslint.config.mjs); beside the
# lab's tests, which mostly wait on the API server (its output printed after theirs)
phase lint bash scripts/lint.sh > "$OUT/lint.log" 2>&1 &
lint_pid=$!
# host tests against the real kube-apiserver (the fake's conformance to it)
if [ -n "${KUBE_IPVS_LAB:-}" ]; then
  phase lab "${JEST[@]}" --selectProjects lab --runInBand --json --outputFile="$OUT/lab.json"
  lab_rc=$?
else
  lab_rc=1
fi
wait "$lint_pid"
lint_rc=$?
cat "$OUT/lint.log"
# one VM boot; the lab's files in one lane, the kernel-only files beside them (guest-jest.sh),
# so the guest gets memory for two daemons and their peers at once
phase vm bash scripts/vm/run.sh -t "${VM_TIMEOUT:-4500}" -m "${VM_MEM:-4G}" -w "$OUT" "${LAB_VM_ARGS[@]}" -- bash scripts/vm/guest-jest.sh "$OUT"
vm_rc=$?
node_modules/.bin/node -e '
  const fs = require("fs"); const dir = process.argv[1]; let p = 0, f = 0;
  const files = fs.readdirSync(dir).filter((n) => /^(unit|lab|vm-[0-9]+)\.json$/.test(n)).sort();
  if (!files.includes("unit.json")) { console.log("unit: no result file"); f++; }
  if (!files.includes("lab.json")) { console.log("lab: no result file (the lab did not start)"); f++; }
  if (!files.some((n) => n.startsWith("vm-"))) { console.log("vm: no result file (the VM run failed before jest)"); f++; }
  for (const n of files) {
    const r = JSON.parse(fs.readFileSync(dir + "/" + n, "utf8"));
    const name = n === "unit.json" || n === "lab.json" ? n.slice(0, -5) : r.testResults.map((t) => t.name.replace(/.*dist\//, "")).join(" ");
    console.log(`${name}: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
    p += r.numPassedTests; f += r.numFailedTests + r.numRuntimeErrorTestSuites;
  }
  console.log(`${p} passed, ${f} failed`);
' "$OUT"
node_modules/.bin/node dist/scripts/test-times.js "$OUT"
[ "$format_rc" = 0 ] || echo "format: files differ from prettier's output (make format)"
[ "$lint_rc" = 0 ] || echo "lint: eslint found problems (make lint)"
[ "$format_rc" = 0 ] && [ "$lint_rc" = 0 ] && [ "$unit_rc" = 0 ] && [ "$lab_rc" = 0 ] && [ "$vm_rc" = 0 ]
