#!/usr/bin/env bash
# Mutation testing (cargo-mutants) of the code that decides when a saved set may be used and how
# far to jump: careful-resume, ex-token (which holds the in-memory guard, ex-token/src/guard.rs)
# and guard-redis (the Redis guard). Each mutant is tested with its own crate's tests.
#
# The three crates need neither quiche nor the rest of the workspace, but cargo cannot load the
# workspace without the materialised fork (quiche/patched, git-ignored, which cargo-mutants does
# not copy). So the run works on a scratch workspace of just these crates, target/mutants/tree:
# their files as they are in the work tree, the root manifest without the other members and the
# [patch] of quiche, and the root Cargo.lock (the same dependency versions).
#
# Mutants known to be equivalent or harmless are excluded by .cargo/mutants.toml (one reason per
# line). Writes target/mutants/mutants.out/ (caught.txt, missed.txt, timeout.txt, ...) and prints
# the counts per group; exits non-zero when a mutant was missed.
#
#   MUTANTS_JOBS  mutants tested in parallel (default 2; each builds in its own copy)
#   MUTANTS_FROM  a git revision (e.g. HEAD): test the crates as committed there rather than as
#                 the work tree has them
#
# Arguments are passed on to cargo-mutants (e.g. `--list`, or `-f careful-resume/src/resume.rs`
# to test one file's mutants); the summary is then left out.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
crates=(careful-resume ex-token guard-redis)
out=target/mutants
tree=$out/tree
rm -rf "$tree"
mkdir -p "$tree"

if [ -n "${MUTANTS_FROM:-}" ]; then
    # The crates as committed in that revision.
    git archive "$MUTANTS_FROM" -- "${crates[@]}" Cargo.toml Cargo.lock | tar -xf - -C "$tree"
    mv "$tree/Cargo.toml" "$tree/Cargo.toml.full"
    manifest=$tree/Cargo.toml.full
else
    # The crates' files, tracked or new, as the work tree has them (none of git's ignored files).
    git ls-files -z --cached --others --exclude-standard -- "${crates[@]}" |
        while IFS= read -r -d '' file; do [ -f "$file" ] && printf '%s\0' "$file"; done |
        tar --null -T - -cf - | tar -xf - -C "$tree"
    cp Cargo.lock "$tree/"
    manifest=Cargo.toml
fi
# The root manifest with only these members, and no [patch] (it names quiche/patched).
awk -v members="$(printf '"%s", ' "${crates[@]}")" '
    /^members = \[/ { print "members = [" members "]"; skip = 1; next }
    skip && /^\]/ { skip = 0; next }
    skip { next }
    /^exclude = / { next }
    /^\[patch\./ { patch = 1; next }
    /^\[/ { patch = 0 }
    !patch { print }
' "$manifest" >"$tree/Cargo.toml"
rm -f "$tree/Cargo.toml.full"

root=$PWD
status=0
(
    cd "$tree"
    cargo mutants --workspace --config "$root/.cargo/mutants.toml" --output "$root/$out" \
        --gitignore false --jobs "${MUTANTS_JOBS:-2}" --minimum-test-timeout 30 --no-times "$@"
) || status=$?
[ $# = 0 ] || exit "$status"

# Counts, from the lists cargo-mutants writes (one "file:line:col: mutation" per line).
results=$out/mutants.out
count() { # count LIST PATTERN: the mutants of LIST whose file matches PATTERN
    if [ -f "$results/$1.txt" ]; then grep -cE "^($2)" "$results/$1.txt" || true; else echo 0; fi
}
row() { # row NAME PATTERN
    local caught missed timeout unviable viable
    caught=$(count caught "$2")
    missed=$(count missed "$2")
    timeout=$(count timeout "$2")
    unviable=$(count unviable "$2")
    viable=$((caught + missed + timeout))
    awk -v n="$1" -v c="$caught" -v m="$missed" -v t="$timeout" -v u="$unviable" -v v="$viable" \
        'BEGIN { printf "| %-44s | %6d | %6d | %7d | %8d | %6.1f%% | %8.1f%% |\n", n, c, m, t, u,
                 v ? 100 * c / v : 0, v ? 100 * (c + t) / v : 0 }'
}
echo "| group                                        | caught | missed | timeout | unviable | caught | detected |"
echo "|----------------------------------------------|-------:|-------:|--------:|---------:|-------:|---------:|"
row "careful-resume" "careful-resume/"
row "ex-token" "ex-token/"
row "guard code (ex-token guard.rs, guard-redis)" "ex-token/src/guard\.rs|guard-redis/"
echo "(of the viable mutants, caught + missed + timeout; detected: caught or timed out, a mutant"
echo " that makes a test hang; the excluded ones, .cargo/mutants.toml, are not generated)"
if [ -s "$results/missed.txt" ]; then
    echo "mutants: missed:" >&2
    sed 's/^/  /' "$results/missed.txt" >&2
fi
echo "mutants: full results in $results/ (outcomes.json, caught.txt, missed.txt, timeout.txt)" >&2
# cargo-mutants exits 3 when the only undetected-by-assertion mutants timed out: each makes a test
# hang (a claim never answered), so it was detected, and the run passes.
[ "$status" = 3 ] && status=0
exit "$status"
