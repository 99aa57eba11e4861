#!/bin/bash
# The linter over the source tree (eslint.config.mjs: typescript-eslint, type-aware, a few
# rules that find bugs: floating and misused promises, non-exhaustive switches, awaits on
# non-promises). `make lint` runs it; test-all.sh (`make test`) fails when it finds anything.
# ESLINT=path/to/eslint runs another install of it (the config's imports resolve from here).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${ESLINT:-node_modules/.bin/eslint}" --max-warnings 0 "$@" .
