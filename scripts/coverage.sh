#!/usr/bin/env bash
# Line coverage of the workspace's own crates, measured over every workspace test (each crate's
# own tests and the cross-crate ones in tests/), with cargo-tarpaulin's LLVM engine
# (-C instrument-coverage; tarpaulin reads the profiles itself, so the llvm-tools rustup component
# is not needed). Branch coverage: tarpaulin does not implement it, so lines only.
#
# Builds in target/coverage (instrumented, so it never touches target/'s cache), writes the HTML
# report to target/coverage/report/tarpaulin-report.html (with JSON and LCOV beside it) and prints
# one row per crate: the libraries first, then the simulator and the programs.
#
#   COVERAGE_JOBS  cargo build jobs (default: cargo's own)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=target/coverage/report
mkdir -p "$out"
# Where tarpaulin points the instrumented build scripts' profiles; it removes the file only after
# a build that succeeds.
trap 'rm -f build_rs_cov.profraw' EXIT

jobs=()
[ -n "${COVERAGE_JOBS:-}" ] && jobs=(--jobs "$COVERAGE_JOBS")

# Some tests run the workspace's example programs (apps/tests/upstream_example.rs runs cr-endpoint's
# http3-server-cr): `cargo test` builds examples, tarpaulin does not. Build them first with
# tarpaulin's own flags, so that its build finds them (and everything else) up to date.
flags=$(cargo tarpaulin --engine llvm --print-rust-flags 2>/dev/null |
    sed -n 's/^RUSTFLAGS="\(.*\)"$/\1/p')
[ -n "$flags" ] || { echo "coverage: cargo tarpaulin --print-rust-flags printed nothing" >&2; exit 1; }
RUSTFLAGS="$flags" LLVM_PROFILE_FILE="$PWD/target/coverage/build_rs_cov.profraw" \
    cargo build --workspace --exclude quiche-cr-benches --examples --target-dir target/coverage \
    "${jobs[@]}" >"$out/examples.log" 2>&1 || { tail -n 30 "$out/examples.log" >&2; exit 1; }

# --timeout: a debug build of the simulator's sessions takes minutes without printing anything.
# --no-fail-fast: the other test binaries still run when one fails (tarpaulin keeps no coverage
# from a binary with a failing test) and the run fails at the end.
status=0
cargo tarpaulin --workspace --exclude quiche-cr-benches --engine llvm --skip-clean \
    --target-dir target/coverage --timeout 1200 --no-fail-fast "${jobs[@]}" \
    --exclude-files 'quiche/*' 'target/*' 'fuzz/*' 'benches/*' 'tests/*' '*/tests/*' \
    --out Html --out Json --out Lcov --output-dir "$out" \
    >"$out/run.log" 2>&1 || status=$?
grep -E '^test result:|FAILED|panicked|^error' "$out/run.log" | grep -v 'test result: ok' >&2 || true

# The table, from the LCOV file: one SF record per source file, LF lines found, LH lines hit.
awk -v root="$PWD/" '
    function crate_of(path,    rel) {
        rel = substr(path, length(root) + 1)
        split(rel, part, "/")
        return part[1]
    }
    /^SF:/ { crate = crate_of(substr($0, 4)) }
    /^LF:/ { found[crate] += substr($0, 4) }
    /^LH:/ { hit[crate] += substr($0, 4) }
    function row(dir, name) {
        if (found[dir] == 0) { printf "| %-26s | %6s | %6s | %7s |\n", name, "-", "-", "-"; return }
        printf "| %-26s | %6d | %6d | %6.1f%% |\n", name, hit[dir], found[dir], 100 * hit[dir] / found[dir]
    }
    END {
        print "| crate (directory)          |    hit |  lines |    line |"
        print "|----------------------------|-------:|-------:|--------:|"
        row("careful-resume", "careful-resume")
        row("ex-token", "ex-token")
        row("qlog-cr", "qlog-cr")
        row("endpoint", "cr-endpoint (endpoint/)")
        row("serve", "cr-serve (serve/)")
        row("guard-redis", "cr-guard-redis (guard-redis/)")
        row("tokio-cr", "tokio-cr")
        n = split("careful-resume ex-token qlog-cr endpoint serve guard-redis tokio-cr", libs, " ")
        for (i = 1; i <= n; i++) { lib_f += found[libs[i]]; lib_h += hit[libs[i]] }
        printf "| %-26s | %6d | %6d | %6.1f%% |\n", "libraries together", lib_h, lib_f, 100 * lib_h / lib_f
        print "|                            |        |        |         |"
        row("sim", "cr-sim (sim/)")
        row("apps", "cr-apps (apps/)")
    }' "$out/lcov.info"
echo "coverage: HTML report in $out/tarpaulin-report.html (full log: $out/run.log)" >&2
[ "$status" = 0 ] || echo "coverage: some tests failed (tarpaulin exit $status); see $out/run.log" >&2
exit "$status"
