#!/usr/bin/env bash
# Tests of the fork tooling, on a scratch copy of quiche/ (the real tree is never touched):
# a download that does not match the pin is refused; materialising twice gives the same tree;
# an unexported commit or an uncommitted edit makes `check` fail; export is stable.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/quiche"
cp -r "$here/fork.sh" "$here/UPSTREAM" "$here/patches" "$scratch/quiche/"
[ -d "$here/.download" ] && cp -r "$here/.download" "$scratch/quiche/"
fork="$scratch/quiche/fork.sh"
patched="$scratch/quiche/patched"
fail() { echo "test-fork: FAIL: $*" >&2; exit 1; }

# A pin that does not match is refused, with the reason.
cp "$scratch/quiche/UPSTREAM" "$scratch/UPSTREAM.good"
sed -i 's/^UPSTREAM_SHA256=./UPSTREAM_SHA256=0/' "$scratch/quiche/UPSTREAM"
rm -rf "$scratch/quiche/.download"
if out=$("$fork" materialise 2>&1); then fail "a mismatching download was accepted"; fi
grep -q "refusing" <<<"$out" || fail "no clear refusal: $out"
[ ! -d "$patched" ] || fail "a tree was built from a refused download"
cp "$scratch/UPSTREAM.good" "$scratch/quiche/UPSTREAM"

# Materialising from scratch twice gives the same tree and commits.
"$fork" materialise 2>/dev/null
first=$(git -C "$patched" rev-parse HEAD)
rm -rf "$patched"
"$fork" materialise 2>/dev/null
[ "$(git -C "$patched" rev-parse HEAD)" = "$first" ] || fail "rebuilding gave another tree"
"$fork" check || fail "a fresh tree does not pass check"

# Exporting twice without change yields no diff.
"$fork" export 2>/dev/null
diff -r "$here/patches" "$scratch/quiche/patches" >/dev/null || fail "export changed the series"

# Local work that is not exported fails the check.
echo "// local edit" >> "$patched/src/lib.rs"
if "$fork" check 2>/dev/null; then fail "an uncommitted edit passed check"; fi
git -C "$patched" -c user.name=t -c user.email=t@invalid commit -qam "local"
if "$fork" check 2>/dev/null; then fail "an unexported commit passed check"; fi

echo "test-fork: ok"
