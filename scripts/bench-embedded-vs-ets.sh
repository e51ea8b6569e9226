#!/usr/bin/env bash
# strata-engine in-process against Erlang's ETS (scripts/ets-bench.escript) and dashmap,
# interleaved: ETS, then per pass strata + dashmap (and the same with --huge-pages), then ETS
# again, so every strata figure has an ETS figure from just before and just after it.
# Both sides draw the same keys (see the escript's header) from THREADS threads/processes,
# and both fill from THREADS threads/processes.
#
# usage: scripts/bench-embedded-vs-ets.sh          (needs escript: Debian's erlang-base)
# Environment:
#   ROWS=1000000   rows                     PASSES=2   strata passes
#   UPDATES=0,100  updates per 1000         HUGE=1     also run --huge-pages (0: don't)
#   THREADS=2      threads (strata, dashmap) and processes (ETS)
#   LOOPS=1000000  operations per thread per round     ROUNDS=3   rounds per ratio
#   NO_BUILD=1     do not run cargo build --release first
# Prints each tool's fill line and best rounds; docs/benchmarks.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
PASSES=${PASSES:-2}
UPDATES=${UPDATES:-0,100}
HUGE=${HUGE:-1}
THREADS=${THREADS:-2}
LOOPS=${LOOPS:-1000000}
ROUNDS=${ROUNDS:-3}
command -v escript >/dev/null || { echo "escript not found (apt-get install -y erlang-base)" >&2; exit 2; }
[ -n "${NO_BUILD:-}" ] || cargo build --release -p strata >&2

ets() {
    echo "=== ETS"
    escript scripts/ets-bench.escript n="$ROWS" p="$THREADS" fill="$THREADS" l="$LOOPS" \
        updates="$UPDATES" rounds="$ROUNDS" | grep -E "fill:.* in |best="
}
strata() {
    echo "=== strata + dashmap $*"
    target/release/strata bench embedded --rows "$ROWS" --threads "$THREADS" \
        --writes-per-1000 "$UPDATES" --loops "$LOOPS" --rounds "$ROUNDS" --map both "$@" \
        | grep -E "fill:.* in |best"
}

ets
for _ in $(seq "$PASSES"); do
    strata
    [ "$HUGE" = 0 ] || strata --huge-pages
    ets
done
