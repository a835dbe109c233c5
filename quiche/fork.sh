#!/usr/bin/env bash
# The quiche fork as a patch queue.
#
#   fork.sh materialise   build quiche/patched/ from the pinned release + quiche/patches/ (idempotent)
#   fork.sh export        write quiche/patched/'s commits back to quiche/patches/
#   fork.sh check         fail when quiche/patched/ holds work that is not exported
#   fork.sh test          run upstream quiche's own test suite on the patched tree
#
# The project never contains upstream source: only the pin (quiche/UPSTREAM) and our patches.
# quiche/patched/ is a git repository whose first commit is the pristine release and whose further
# commits are the patches, in series order (the sorted file names of quiche/patches/*.patch).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
patched="$here/patched"
patches="$here/patches"
download="$here/.download"

# shellcheck source=UPSTREAM
. "$here/UPSTREAM"
crate_file="$download/$UPSTREAM_NAME-$UPSTREAM_VERSION.crate"

# Commits in quiche/patched/ are made with a fixed identity and dates taken from the patch, so the
# same series always gives the same commit hashes, not just the same trees.
export GIT_AUTHOR_NAME="quiche-cr" GIT_AUTHOR_EMAIL="quiche-cr@invalid"
export GIT_COMMITTER_NAME="quiche-cr" GIT_COMMITTER_EMAIL="quiche-cr@invalid"
pristine_date="2000-01-01T00:00:00Z"

die() { printf 'quiche fork: %s\n' "$*" >&2; exit 1; }
g() { git -C "$patched" -c core.autocrlf=false -c commit.gpgsign=false "$@"; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# The series fingerprint: the pin and every patch, in order.
series_fingerprint() {
    {
        cat "$here/UPSTREAM"
        for p in "$patches"/*.patch; do
            [ -e "$p" ] || continue
            basename "$p"
            cat "$p"
        done
    } | sha256sum | cut -d' ' -f1
}

fetch_release() {
    mkdir -p "$download"
    if [ -f "$crate_file" ] && [ "$(sha256_of "$crate_file")" = "$UPSTREAM_SHA256" ]; then
        return
    fi
    local cached
    cached=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"$UPSTREAM_NAME-$UPSTREAM_VERSION.crate" 2>/dev/null | head -1 || true)
    if [ -n "$cached" ]; then
        cp "$cached" "$crate_file.tmp"
    else
        echo "quiche fork: downloading $UPSTREAM_NAME $UPSTREAM_VERSION from crates.io" >&2
        curl -sSfL --retry 3 -o "$crate_file.tmp" "$UPSTREAM_URL" ||
            die "download of $UPSTREAM_URL failed"
    fi
    local got
    got=$(sha256_of "$crate_file.tmp")
    if [ "$got" != "$UPSTREAM_SHA256" ]; then
        rm -f "$crate_file.tmp"
        die "refusing $UPSTREAM_NAME-$UPSTREAM_VERSION.crate: sha256 is $got, the pin in quiche/UPSTREAM says $UPSTREAM_SHA256"
    fi
    mv "$crate_file.tmp" "$crate_file"
}

# Whether quiche/patched/ has uncommitted changes or commits made after it was materialised.
local_work() {
    [ -n "$(g status --porcelain)" ] && { echo "uncommitted changes"; return; }
    local built
    built=$(cat "$patched/.git/quiche-cr-head" 2>/dev/null || true)
    [ "$(g rev-parse HEAD)" != "$built" ] && { echo "commits not exported"; return; }
    true
}

materialise() {
    local want
    want=$(series_fingerprint)
    if [ -d "$patched/.git" ]; then
        if [ "$(cat "$patched/.git/quiche-cr-series" 2>/dev/null || true)" = "$want" ]; then
            return 0
        fi
        # The series changed. Either it was just exported from this very tree, or it came from
        # elsewhere (a pull); never throw away work that exists only here.
        if exported_matches; then
            record_state "$want"
            return 0
        fi
        local work
        work=$(local_work || true)
        [ -z "$work" ] ||
            die "quiche/patches/ changed but quiche/patched/ has $work; export it (make quiche-export) or remove quiche/patched/"
        rm -rf "$patched"
    fi
    fetch_release
    local tmp="$here/.patched.tmp"
    rm -rf "$tmp"
    mkdir -p "$tmp"
    tar -xzf "$crate_file" -C "$tmp" --strip-components=1
    # The release's own .cargo_vcs_info.json names upstream's commit; keep it, it is part of the release.
    git init -q "$tmp"
    printf '/target/\n' >> "$tmp/.git/info/exclude"
    git -C "$tmp" add -A
    GIT_AUTHOR_DATE=$pristine_date GIT_COMMITTER_DATE=$pristine_date \
        git -C "$tmp" -c commit.gpgsign=false commit -q -m "$UPSTREAM_NAME $UPSTREAM_VERSION (pristine crates.io release)"
    git -C "$tmp" tag pristine
    for p in "$patches"/*.patch; do
        [ -e "$p" ] || continue
        local date
        date=$(sed -n 's/^Date: //p' "$p" | head -1)
        if ! GIT_COMMITTER_DATE="$date" git -C "$tmp" -c commit.gpgsign=false am -q --keep-cr --committer-date-is-author-date "$p" >/dev/null 2>&1; then
            git -C "$tmp" am --abort >/dev/null 2>&1 || true
            rm -rf "$tmp"
            die "patch $(basename "$p") does not apply to $UPSTREAM_NAME $UPSTREAM_VERSION; fix the series (see quiche/README.md)"
        fi
    done
    mv "$tmp" "$patched"
    record_state "$want"
    echo "quiche fork: quiche/patched/ is $UPSTREAM_NAME $UPSTREAM_VERSION + $(g rev-list --count pristine..HEAD) patches" >&2
}

record_state() {
    echo "$1" > "$patched/.git/quiche-cr-series"
    g rev-parse HEAD > "$patched/.git/quiche-cr-head"
}

# Write the commits after `pristine` as patch files into the given directory.
format_patches() {
    g format-patch -q --zero-commit --no-signature --no-stat --full-index --no-renames \
        --subject-prefix=PATCH -N -o "$1" pristine..HEAD >/dev/null
}

# Whether quiche/patches/ is exactly what exporting quiche/patched/ would write.
exported_matches() {
    [ -z "$(g status --porcelain)" ] || return 1
    local tmp
    tmp=$(mktemp -d)
    format_patches "$tmp"
    local same=0
    diff -r -q "$tmp" "$patches" -x .gitkeep >/dev/null 2>&1 || same=1
    rm -rf "$tmp"
    return $same
}

export_series() {
    [ -d "$patched/.git" ] || die "quiche/patched/ does not exist; run make quiche first"
    [ -z "$(g status --porcelain)" ] ||
        die "quiche/patched/ has uncommitted changes; commit them there first (one commit per patch)"
    local tmp
    tmp=$(mktemp -d)
    format_patches "$tmp"
    find "$patches" -name '*.patch' -delete
    mkdir -p "$patches"
    cp "$tmp"/*.patch "$patches"/ 2>/dev/null || true
    rm -rf "$tmp"
    record_state "$(series_fingerprint)"
    echo "quiche fork: exported $(ls "$patches"/*.patch 2>/dev/null | wc -l) patches to quiche/patches/; commit them" >&2
}

# Every reading of the time in quiche goes through `clock::now()`, so that the virtual clock
# governs all of it: a call of `Instant::now()` outside src/clock.rs (a new one from upstream,
# say) would bypass it silently. Test code is exempt: test files, and everything after a file's
# first top-level `#[cfg(test)]` or `#[cfg(all(test, ...))]`; comments too.
check_clock() {
    local hits
    hits=$(cd "$patched" && find src -name '*.rs' ! -name clock.rs ! -name tests.rs \
        ! -name test_utils.rs ! -name '*_tests.rs' ! -name test_sender.rs -print0 |
        xargs -0 awk '
            FNR == 1 { in_tests = 0 }
            /^#\[cfg\((all\()?test/ { in_tests = 1 }
            !in_tests && /Instant::now\(\)/ && $0 !~ /^[[:space:]]*\/\// { print FILENAME ":" FNR ": " $0 }')
    [ -z "$hits" ] ||
        die "Instant::now() outside quiche's clock module (use crate::clock::now()):
$hits"
}

check() {
    materialise
    fetch_release
    check_clock
    if [ -n "$(g status --porcelain)" ]; then
        die "quiche/patched/ has uncommitted changes. Commit them inside quiche/patched/, then run make quiche-export and commit quiche/patches/."
    fi
    if ! exported_matches; then
        die "quiche/patched/ and quiche/patches/ differ: commits in quiche/patched/ are not exported, or quiche/patches/ changed since. Run make quiche-export (to keep quiche/patched/) or remove quiche/patched/ and run make quiche (to take quiche/patches/)."
    fi
    # The series must apply from scratch, not only in this tree.
    local scratch
    scratch=$(mktemp -d)
    (
        cd "$scratch"
        git init -q .
        tar -xzf "$crate_file" --strip-components=1
        git add -A
        git -c commit.gpgsign=false commit -q -m pristine
        for p in "$patches"/*.patch; do
            [ -e "$p" ] || continue
            git -c commit.gpgsign=false am -q --keep-cr "$p" >/dev/null 2>&1 ||
                { echo "quiche fork: patch $(basename "$p") does not apply to the pristine release" >&2; exit 1; }
        done
        [ "$(git rev-parse 'HEAD^{tree}')" = "$(git -C "$patched" rev-parse 'HEAD^{tree}')" ] ||
            { echo "quiche fork: the series applied to the release does not give quiche/patched/'s tree" >&2; exit 1; }
    ) || { rm -rf "$scratch"; die "the series does not reproduce quiche/patched/; see above"; }
    rm -rf "$scratch"
}

upstream_test() {
    materialise
    # Upstream's suite, with the features our patches touch enabled so they are compiled and tested.
    # In a target dir of its own: quiche/patched is a workspace of its own, with its own profiles,
    # and its builds of our path crates (careful-resume) overwrote the workspace's, so the next
    # workspace build found two different careful_resume (and bytes) crates.
    (cd "$patched" && CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}/quiche-test" \
        cargo test --features "qlog internal virtual-clock" -- --test-threads=2)
}

case "${1:-}" in
    materialise) materialise ;;
    export) export_series ;;
    check) check ;;
    test) upstream_test ;;
    *) die "usage: fork.sh materialise|export|check|test" ;;
esac
