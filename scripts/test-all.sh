#!/bin/bash
# test-all.sh — unit tests on the host, integration tests inside one VM boot (each VM test
# file in its own network namespace); prints one summary line "N passed, N failed" over
# both, and fails if either run failed.
set -uo pipefail
cd "$(dirname "$0")/.."
JEST=(node_modules/.bin/node --experimental-vm-modules --disable-warning=ExperimentalWarning node_modules/jest/bin/jest.js)
OUT=$(mktemp -d)
"${JEST[@]}" --selectProjects unit --json --outputFile="$OUT/unit.json"
unit_rc=$?
bash scripts/vm/run.sh -t "${VM_TIMEOUT:-3000}" -w "$OUT" -- bash scripts/vm/guest-jest.sh "$OUT"
vm_rc=$?
node_modules/.bin/node -e '
  const fs = require("fs"); const dir = process.argv[1]; let p = 0, f = 0;
  const files = fs.readdirSync(dir).filter((n) => n.endsWith(".json")).sort();
  if (!files.includes("unit.json")) { console.log("unit: no result file"); f++; }
  if (!files.some((n) => n.startsWith("vm-"))) { console.log("vm: no result file (the VM run failed before jest)"); f++; }
  for (const n of files) {
    const r = JSON.parse(fs.readFileSync(dir + "/" + n, "utf8"));
    const name = n === "unit.json" ? "unit" : r.testResults.map((t) => t.name.replace(/.*dist\//, "")).join(" ");
    console.log(`${name}: ${r.numPassedTests} passed, ${r.numFailedTests} failed`);
    p += r.numPassedTests; f += r.numFailedTests + r.numRuntimeErrorTestSuites;
  }
  console.log(`${p} passed, ${f} failed`);
' "$OUT"
rm -rf "$OUT"
[ "$unit_rc" = 0 ] && [ "$vm_rc" = 0 ]
