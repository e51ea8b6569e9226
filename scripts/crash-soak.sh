#!/usr/bin/env bash
# Long crash soak: SIGKILL the real server mid-load under appendfsync always, restart,
# check every acknowledged write (the test in crates/strata/tests/durability.rs), for
# CYCLES cycles per round, ROUNDS rounds (default 500 x 10).
#   scripts/crash-soak.sh            CYCLES=2000 ROUNDS=1 scripts/crash-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
CYCLES=${CYCLES:-500}
ROUNDS=${ROUNDS:-10}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r/$ROUNDS: $CYCLES kill/restart cycles"
  CRASH_CYCLES=$CYCLES cargo test --release -p strata --test durability \
    sigkill_under_load_loses_no_acknowledged_write -- --nocapture
done
echo "crash soak passed: $((CYCLES * ROUNDS)) cycles"
