#!/usr/bin/env bash
# Upstream quiche's examples with Careful Resume added. The project never holds upstream's source,
# only its own changes: endpoint/examples/<name>.diff is our diff against the pinned release's
# examples/<upstream name>.rs, and endpoint/examples/<name>.rs (git-ignored) is generated from the
# two.
#
#   upstream-examples.sh materialise   write each example (`make quiche` runs this)
#   upstream-examples.sh export        rewrite each diff from its edited example
#
# Needs quiche/patched/ (`make quiche`): its first commit is the pristine release.
set -euo pipefail

cd "$(dirname "$0")/.."
examples=endpoint/examples
# <our example>:<upstream example it changes>
pairs=(http3-server-cr:http3-server)

pristine() {
    local root
    root=$(git -C quiche/patched rev-list --max-parents=0 HEAD)
    git -C quiche/patched show "$root:examples/$1.rs"
}

mode=${1:-materialise}
for pair in "${pairs[@]}"; do
    ours=${pair%%:*}
    upstream=${pair#*:}
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/a/examples" "$work/b/examples"
    pristine "$upstream" > "$work/a/examples/$ours.rs"
    case $mode in
        materialise)
            cp "$work/a/examples/$ours.rs" "$work/b/examples/$ours.rs"
            (cd "$work/b" && git apply "$OLDPWD/$examples/$ours.diff")
            if ! cmp -s "$work/b/examples/$ours.rs" "$examples/$ours.rs"; then
                cp "$work/b/examples/$ours.rs" "$examples/$ours.rs"
                echo "upstream examples: wrote $examples/$ours.rs"
            fi
            ;;
        export)
            cp "$examples/$ours.rs" "$work/b/examples/$ours.rs"
            # git diff --no-index exits with 1 when the files differ.
            (cd "$work" && git diff --no-index --no-prefix "a/examples/$ours.rs" \
                "b/examples/$ours.rs" > diff) || [ $? = 1 ]
            sed -e '/^index /d' "$work/diff" > "$examples/$ours.diff"
            echo "upstream examples: exported $examples/$ours.diff"
            ;;
        *)
            echo "usage: $0 [materialise|export]" >&2
            exit 2
            ;;
    esac
    rm -rf "$work"
    trap - EXIT
done
