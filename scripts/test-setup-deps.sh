#!/usr/bin/env bash
# Tests of scripts/setup-deps.sh's detection, on fake machines: each case builds a root directory
# (SETUP_ROOT) with the libraries a machine would have and a PATH holding only stub commands, so
# nothing on the real system is read or installed. The stub apt-get records what it was asked for.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script="$here/setup-deps.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# new_machine NAME: a fresh root and stub bin directory; prints nothing, sets $root and $bin.
new_machine() {
    root="$scratch/$1/root"
    bin="$scratch/$1/bin"
    mkdir -p "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib/llvm-14/lib" "$bin"
    for tool in basename dirname; do ln -s "$(command -v "$tool")" "$bin/$tool"; done
    stub cmake 'exit 0'
    stub curl 'exit 0'
    stub redis-server 'exit 0'
    stub gtlsclient 'exit 0'
    stub id 'echo 0'
    stub apt-get "echo \"\$*\" >> '$scratch/$1/apt-get.log'"
}

stub() { printf '#!%s\n%s\n' "$BASH" "$2" >"$bin/$1"; chmod +x "$bin/$1"; }
lib() { mkdir -p "$(dirname "$root/$1")"; : >"$root/$1"; }

# run NAME [VAR=value...]: runs the script on the machine (with the mode $mode, when set); sets
# $status, $output, $asked (what apt-get was asked to install, empty when it was not called) and
# $cargo_asked (what `cargo install` was asked for, likewise).
run() {
    local name=$1; shift
    set +e
    output=$(env -i PATH="$bin" SETUP_ROOT="$root" "$@" "$BASH" "$script" ${mode:+"$mode"} 2>&1)
    status=$?
    set -e
    asked=$(grep '^install' "$scratch/$name/apt-get.log" 2>/dev/null | sed 's/.*-qq //' || true)
    cargo_asked=$(cat "$scratch/$name/cargo.log" 2>/dev/null || true)
}

# cargo_with NAME SUBCOMMAND...: a stub cargo on the machine NAME that has the given subcommands
# (e.g. tarpaulin) installed and records what `cargo install` is asked for.
cargo_with() {
    local name=$1; shift
    stub cargo "case \$1 in
        install) shift; echo \"\$*\" >> '$scratch/$name/cargo.log' ;;
        ${*:-none}|+*) exit 0 ;;
        *) exit 101 ;;
    esac"
}

expect() {
    local case=$1 want_status=$2 want_asked=$3
    if [ "$status" = "$want_status" ] && [ "$asked" = "$want_asked" ]; then
        echo "ok   $case"
    else
        echo "FAIL $case: exit $status (want $want_status), apt-get asked for '$asked'" \
            "(want '$want_asked')"
        echo "$output" | sed 's/^/     /'
        failures=$((failures + 1))
    fi
}

# The layout of a new machine of the project's kind: only the C++ interface library.
new_machine cpp-only
lib usr/lib/x86_64-linux-gnu/libclang-cpp.so.14
lib usr/lib/llvm-14/lib/libclang-cpp.so.14
run cpp-only
expect "libclang-cpp.so.14 alone is not libclang: installs libclang-dev" 0 libclang-dev

# What libclang1-14 and libclang-14-dev install on Debian.
new_machine debian-libclang
lib usr/lib/llvm-14/lib/libclang-cpp.so.14
lib usr/lib/llvm-14/lib/libclang.so.1
lib usr/lib/x86_64-linux-gnu/libclang-14.so.1
run debian-libclang
expect "libclang.so.1 in the LLVM directory: asks for nothing" 0 ""

new_machine versioned
lib usr/lib/x86_64-linux-gnu/libclang-14.so.1
run versioned
expect "libclang-14.so.1 in the multiarch directory: asks for nothing" 0 ""

new_machine dangling
lib usr/lib/llvm-14/lib/libclang-cpp.so.14
ln -s libclang.so.1 "$root/usr/lib/llvm-14/lib/libclang.so"
run dangling
expect "a dangling libclang.so link: installs libclang-dev" 0 libclang-dev

new_machine explicit-path
lib opt/llvm/lib/libclang.so
run explicit-path LIBCLANG_PATH="$root/opt/llvm/lib"
expect "LIBCLANG_PATH names the directory: asks for nothing" 0 ""

new_machine llvm-config
lib opt/llvm-17/lib/libclang-17.so
stub llvm-config "echo '$root/opt/llvm-17/lib'"
run llvm-config
expect "llvm-config --libdir holds libclang-17.so: asks for nothing" 0 ""

new_machine not-root
lib usr/lib/llvm-14/lib/libclang-cpp.so.14
stub id 'echo 1000'
run not-root
expect "not root: exits and installs nothing" 1 ""
if ! grep -q 'missing system packages: libclang-dev' <<<"$output"; then
    echo "FAIL not root: the message does not name libclang-dev: $output"
    failures=$((failures + 1))
fi

new_machine no-cmake
lib usr/lib/llvm-14/lib/libclang.so.1
rm "$bin/cmake"
run no-cmake
expect "cmake missing: installs cmake only" 0 cmake

new_machine no-redis
lib usr/lib/llvm-14/lib/libclang.so.1
rm "$bin/redis-server"
run no-redis
expect "redis-server missing: installs redis-server only" 0 redis-server

new_machine no-ngtcp2
lib usr/lib/llvm-14/lib/libclang.so.1
rm "$bin/gtlsclient"
run no-ngtcp2
expect "gtlsclient missing: installs ngtcp2-client only" 0 ngtcp2-client

new_machine no-redis-not-root
lib usr/lib/llvm-14/lib/libclang.so.1
rm "$bin/redis-server"
stub id 'echo 1000'
run no-redis-not-root
expect "redis-server missing, not root: exits and installs nothing" 1 ""
if ! grep -q 'missing system packages: redis-server' <<<"$output"; then
    echo "FAIL redis-server missing, not root: the message does not name redis-server: $output"
    failures=$((failures + 1))
fi

new_machine nothing
rm "$bin/cmake" "$bin/curl" "$bin/redis-server" "$bin/gtlsclient"
run nothing
expect "a bare machine: installs all five" 0 "cmake libclang-dev curl redis-server ngtcp2-client"

# expect_cargo CASE STATUS WANT: the exit status and what `cargo install` was asked for.
expect_cargo() {
    local case=$1 want_status=$2 want=$3
    if [ "$status" = "$want_status" ] && [ "$cargo_asked" = "$want" ]; then
        echo "ok   $case"
    else
        echo "FAIL $case: exit $status (want $want_status), cargo install asked for" \
            "'$cargo_asked' (want '$want')"
        echo "$output" | sed 's/^/     /'
        failures=$((failures + 1))
    fi
}

tarpaulin_pinned=$(sed -n 's/^cargo_tarpaulin_version=//p' "$script")
mutants_pinned=$(sed -n 's/^cargo_mutants_version=//p' "$script")

new_machine coverage-missing
lib usr/lib/llvm-14/lib/libclang.so.1
cargo_with coverage-missing
mode=coverage run coverage-missing
expect_cargo "coverage, no cargo-tarpaulin: installs the pinned one" 0 \
    "--locked --no-default-features --version $tarpaulin_pinned cargo-tarpaulin"

new_machine coverage-present
lib usr/lib/llvm-14/lib/libclang.so.1
cargo_with coverage-present tarpaulin
mode=coverage run coverage-present
expect_cargo "coverage, cargo-tarpaulin installed: installs nothing" 0 ""

new_machine coverage-no-redis
rm "$bin/redis-server"
lib usr/lib/llvm-14/lib/libclang.so.1
cargo_with coverage-no-redis tarpaulin
mode=coverage run coverage-no-redis
expect "coverage, redis-server missing: installs it too (the guard's tests run)" 0 redis-server

new_machine mutants-missing
lib usr/lib/llvm-14/lib/libclang.so.1
cargo_with mutants-missing tarpaulin
mode=mutants run mutants-missing
expect_cargo "mutants, no cargo-mutants: installs the pinned one" 0 \
    "--locked --version $mutants_pinned cargo-mutants"

new_machine mutants-present
lib usr/lib/llvm-14/lib/libclang.so.1
cargo_with mutants-present mutants
mode=mutants run mutants-present
expect_cargo "mutants, cargo-mutants installed: installs nothing" 0 ""

new_machine unknown-mode
lib usr/lib/llvm-14/lib/libclang.so.1
cargo_with unknown-mode
mode=coverge run unknown-mode
expect_cargo "an unknown mode: exits 2, installs nothing" 2 ""

[ "$failures" = 0 ] || { echo "setup-deps: $failures case(s) failed" >&2; exit 1; }
echo "setup-deps: all cases passed"
