#!/bin/bash
# test-all.sh — unit tests on the host, integration tests inside one VM boot; prints one
# summary line "N passed, N failed" over both, and fails if either run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
JEST=(node_modules/.bin/node node_modules/jest/bin/jest.js)
OUT=$(mktemp -d)
"${JEST[@]}" --selectProjects unit --json --outputFile="$OUT/unit.json"
unit_rc=$?
bash scripts/vm/run.sh -t "${VM_TIMEOUT:-2700}" -w "$OUT" -- \
  "${JEST[@]}" --selectProjects vm --runInBand --json --outputFile="$OUT/vm.json"
vm_rc=$?
node_modules/.bin/node -e '
  const fs = require("fs"); let p = 0, f = 0;
  for (const n of ["unit", "vm"]) {
    const file = process.argv[1] + "/" + n + ".json";
    if (!fs.existsSync(file)) { console.log(n + ": no result file (run failed before jest finished)"); f++; continue; }
    const r = JSON.parse(fs.readFileSync(file, "utf8"));
    console.log(`${n}: ${r.numPassedTests} passed, ${r.numFailedTests} failed (${r.numTotalTestSuites} suites)`);
    p += r.numPassedTests; f += r.numFailedTests + r.numRuntimeErrorTestSuites;
  }
  console.log(`${p} passed, ${f} failed`);
' "$OUT"
rm -rf "$OUT"
[ "$unit_rc" = 0 ] && [ "$vm_rc" = 0 ]
