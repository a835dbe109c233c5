#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time, starting from the committed seeds
# (fuzz/seeds/<target>/) and the local corpus (fuzz/corpus/<target>/, git-ignored, where libFuzzer
# keeps what it finds). Stops at the first crash, timeout or leak; libFuzzer leaves the input in
# fuzz/artifacts/<target>/.
#
#   FUZZ_SECONDS  time per target (default 20)
#   FUZZ_RUNS     executions per target, whichever limit comes first (default: no limit)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../fuzz"
seconds=${FUZZ_SECONDS:-20}
runs=${FUZZ_RUNS:--1}

cargo +nightly fuzz build
for target in $(cargo +nightly fuzz list); do
    mkdir -p "corpus/$target"
    [ -d "seeds/$target" ] || { echo "fuzz: no seeds for $target in fuzz/seeds/" >&2; exit 1; }
    echo "fuzz: $target for ${seconds}s" >&2
    log="corpus/$target.log"
    if ! cargo +nightly fuzz run "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -runs="$runs" -timeout=10 -print_final_stats=1 >"$log" 2>&1; then
        tail -40 "$log" >&2
        echo "fuzz: $target failed (full log in fuzz/$log)" >&2
        exit 1
    fi
    grep -a -E '^#[0-9]+[[:space:]]+DONE|^stat::(number_of_executed_units|peak_rss_mb)' "$log" | sed "s/^/  $target: /" >&2
done
