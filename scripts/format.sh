#!/bin/bash
# The formatter over the source tree (prettier, .prettierrc.json): `make format` rewrites,
# `scripts/format.sh --check` (test-all.sh) lists what differs and fails.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=--write
[ "${1:-}" = --check ] && mode=--check
exec node_modules/.bin/prettier "$mode" --log-level warn "{lib,spec,testkit,scripts}/**/*.ts" "*.js"
