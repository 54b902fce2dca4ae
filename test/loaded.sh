#!/usr/bin/env bash
# Runs `npm test` beside two CPU-bound processes, as on a busy 2-core CI machine: the suite must
# pass so, with no assertion that depends on the machine's speed. Run it once per change to the
# suite (`npm run test:loaded`). The busy loops end with the script, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
node -e 'for (;;) {}' &
busy1=$!
node -e 'for (;;) {}' &
busy2=$!
trap 'kill "$busy1" "$busy2" 2>/dev/null || true' EXIT
npm test
