#!/usr/bin/env bash
# Makes sure the system packages boring-sys (BoringSSL, under quiche) needs at build time are
# present: cmake and libclang. Installs them with apt-get when running as root; otherwise names them.
set -euo pipefail

have_libclang() {
    [ -n "${LIBCLANG_PATH:-}" ] && return 0
    ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' && return 0
    compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null
}

missing=()
command -v cmake >/dev/null || missing+=(cmake)
have_libclang || missing+=(libclang-dev)
command -v curl >/dev/null || missing+=(curl)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing ${missing[*]} (needed to build BoringSSL)" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
    echo "setup: missing system packages: ${missing[*]}" >&2
    echo "setup: install them (e.g. sudo apt-get install ${missing[*]}) and run make again" >&2
    exit 1
fi
