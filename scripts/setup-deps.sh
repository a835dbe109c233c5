#!/usr/bin/env bash
# Makes sure the system packages the project needs are present, and installs the missing ones
# with apt-get when running as root; otherwise names them and stops.
#
#   setup-deps.sh          what building quiche needs: cmake and libclang (for boring-sys's
#                          bindgen), curl (for fetching the pinned release); and redis-server,
#                          which the Redis guard's tests (guard-redis/) start on loopback;
#                          and ngtcp2-client (gtlsclient), a strict QUIC client for the interop tests
#   setup-deps.sh fuzz     the above, plus a nightly toolchain and cargo-fuzz (installed from
#                          crates.io, pinned, when missing)
#   setup-deps.sh coverage the first, plus cargo-tarpaulin (crates.io, pinned, when missing) for
#                          `make coverage`
#   setup-deps.sh mutants  the first, plus cargo-mutants (crates.io, pinned, when missing) for
#                          `make mutants`
#
# Testable without touching the system (scripts/test-setup-deps.sh does): SETUP_ROOT prefixes
# every directory searched for libclang, and every command (apt-get, id, cmake, llvm-config,
# redis-server, gtlsclient, cargo) is taken from PATH.
set -euo pipefail

root=${SETUP_ROOT:-}
cargo_fuzz_version=0.13.1
cargo_tarpaulin_version=0.37.5
cargo_mutants_version=27.1.0

# Whether a file name is one clang-sys would load as libclang: libclang.so, libclang-<N>.so or
# either with a numeric suffix (libclang.so.1, libclang-14.so.1). libclang-cpp.so.<N> is the C++
# interface library, a different thing that bindgen cannot use, and never counts.
is_libclang_name() {
    [[ $1 =~ ^libclang(-[0-9]+(\.[0-9]+)*)?\.so(\.[0-9]+)*$ ]]
}

# The directories clang-sys searches: LIBCLANG_PATH (a directory or the library itself),
# `llvm-config --libdir`, LD_LIBRARY_PATH, and the standard system and LLVM directories.
libclang_dirs() {
    if [ -n "${LIBCLANG_PATH:-}" ]; then
        if [ -d "$LIBCLANG_PATH" ]; then echo "$LIBCLANG_PATH"; else dirname "$LIBCLANG_PATH"; fi
    fi
    if command -v llvm-config >/dev/null; then
        llvm-config --libdir 2>/dev/null || true
    fi
    local IFS=:
    for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && echo "$d"; done
    for d in "$root"/usr/lib/llvm-*/lib "$root"/usr/lib/*-linux-gnu "$root"/usr/lib \
        "$root"/usr/lib64 "$root"/usr/local/lib "$root"/usr/local/llvm/lib; do
        [ -d "$d" ] && echo "$d"
    done
    return 0
}

# The first loadable libclang found, or nothing. `-e` follows symbolic links, so a dangling
# development link (libclang.so -> a removed libclang.so.1) does not count.
find_libclang() {
    local dir file
    while read -r dir; do
        for file in "$dir"/libclang*.so*; do
            [ -e "$file" ] && is_libclang_name "$(basename "$file")" && { echo "$file"; return 0; }
        done
    done < <(libclang_dirs)
    return 1
}

missing=()
command -v cmake >/dev/null || missing+=(cmake)
find_libclang >/dev/null || missing+=(libclang-dev)
command -v curl >/dev/null || missing+=(curl)
# The server itself, not redis-tools: the tests talk to it through the redis crate.
command -v redis-server >/dev/null || missing+=(redis-server)
# ngtcp2's client, the strictest in the interop tests (apps/tests/ngtcp2.rs).
command -v gtlsclient >/dev/null || missing+=(ngtcp2-client)

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "setup: installing ${missing[*]} with apt-get (needed to build BoringSSL under quiche" \
            "and to test the Redis guard and interop)" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "setup: missing system packages: ${missing[*]}" >&2
        echo "setup: install them (e.g. sudo apt-get install ${missing[*]}) and run make again" >&2
        exit 1
    fi
fi

# `setup-deps.sh browser`: the above, plus Debian's chromium and chromium-driver (chromedriver)
# for `make interop-browser`, which drives an unmodified headless Chromium. The binaries are what
# count, not the package names: a Chromium installed otherwise will do.
if [ "${1:-}" = browser ]; then
    browser_missing=()
    command -v chromium >/dev/null || browser_missing+=(chromium)
    command -v chromedriver >/dev/null || browser_missing+=(chromium-driver)
    if [ ${#browser_missing[@]} -gt 0 ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            echo "setup: installing ${browser_missing[*]} with apt-get (for make interop-browser)" >&2
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                "${browser_missing[@]}" >/dev/null
        else
            echo "setup: missing system packages: ${browser_missing[*]}" >&2
            echo "setup: install them (e.g. sudo apt-get install ${browser_missing[*]}) and run" \
                "make interop-browser again" >&2
            exit 1
        fi
    fi
    for binary in chromium chromedriver; do
        command -v "$binary" >/dev/null || { echo "setup: no $binary after installing" >&2; exit 1; }
    done
    exit 0
fi

mode=${1:-}
case "$mode" in
    "") exit 0 ;;
    fuzz) ;;
    coverage)
        # Without default features: they only add uploading to Coveralls (git2, OpenSSL).
        if ! cargo tarpaulin --version >/dev/null 2>&1; then
            echo "setup: installing cargo-tarpaulin $cargo_tarpaulin_version from crates.io" >&2
            cargo install --locked --no-default-features --version "$cargo_tarpaulin_version" \
                cargo-tarpaulin
        fi
        exit 0
        ;;
    mutants)
        if ! cargo mutants --version >/dev/null 2>&1; then
            echo "setup: installing cargo-mutants $cargo_mutants_version from crates.io" >&2
            cargo install --locked --version "$cargo_mutants_version" cargo-mutants
        fi
        exit 0
        ;;
    *)
        echo "setup: unknown mode '$mode' (none, fuzz, coverage or mutants)" >&2
        exit 2
        ;;
esac

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "setup: fuzzing needs a nightly Rust toolchain (cargo-fuzz builds with sanitizers)," >&2
    echo "setup: and none is installed: run 'rustup toolchain install nightly' and make again" >&2
    exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "setup: installing cargo-fuzz $cargo_fuzz_version from crates.io" >&2
    cargo install --locked --version "$cargo_fuzz_version" cargo-fuzz
fi
