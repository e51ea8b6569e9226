#!/usr/bin/env bash
# strata-engine in-process against Erlang's ETS (../shared/peers/etsb.escript) and dashmap,
# interleaved: ETS, then per pass strata + dashmap (and the same with --huge-pages), then ETS
# again, so every strata figure has an ETS figure from just before and just after it.
#
# usage: scripts/bench-embedded-vs-ets.sh          (needs escript: Debian's erlang-nox)
# Environment:
#   ROWS=1000000   rows (etsb's n)          PASSES=2   strata passes
#   UPDATES=0,100  updates per 1000         HUGE=1     also run --huge-pages (0: don't)
#   NO_BUILD=1     do not run cargo build --release first
# Prints each tool's fill line and best rounds; docs/benchmarks.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${ROWS:-1000000}
PASSES=${PASSES:-2}
UPDATES=${UPDATES:-0,100}
HUGE=${HUGE:-1}
ETSB=${ETSB:-../shared/peers/etsb.escript}
command -v escript >/dev/null || { echo "escript not found (apt-get install -y erlang-nox)" >&2; exit 2; }
[ -f "$ETSB" ] || { echo "$ETSB not found" >&2; exit 2; }
[ -n "${NO_BUILD:-}" ] || cargo build --release -p strata >&2

ets() {
    echo "=== ETS"
    escript "$ETSB" n="$ROWS" p=2 l=1000000 updates="$UPDATES" rounds=3 | grep -E "fill|updates"
}
strata() {
    echo "=== strata + dashmap $*"
    target/release/strata bench embedded --rows "$ROWS" --threads 2 --writes-per-1000 "$UPDATES" \
        --loops 1000000 --rounds 3 --map both "$@" | grep -E "fill|best|strata best"
}

ets
for _ in $(seq "$PASSES"); do
    strata
    [ "$HUGE" = 0 ] || strata --huge-pages
    ets
done
