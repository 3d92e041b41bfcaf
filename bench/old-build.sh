#!/usr/bin/env bash
# bench/old-build.sh REV PACKAGE[:EXAMPLE]... — builds an earlier sonde
# beside this one, for a bench that compares the two in the same run.
#
# REV (a commit, tag or branch of this repository) is checked out in a
# worktree under target/bench-old/ and built in release with its own
# target directory there (kept between runs: a second build of the same
# REV is quick). Each PACKAGE is built (`-p PACKAGE`), or with
# PACKAGE:EXAMPLE its example. Prints the directory the binaries are in
# (its examples/ holds the examples); everything else goes to stderr.
# OLD_TREE=DIR builds in an existing checkout of REV instead (with its
# own target/), e.g. one a bench run before already built.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/old-build.sh REV PACKAGE[:EXAMPLE]..." >&2; exit 2; }
rev=$(git rev-parse --verify --short "$1^{commit}") || { echo "bench/old-build.sh: no commit $1" >&2; exit 2; }
shift
if [ -n "${OLD_TREE:-}" ]; then
    tree=$(cd "$OLD_TREE" && pwd)
    target=$tree/target
    have=$(git -C "$tree" rev-parse --short HEAD)
    [ "$have" = "$rev" ] || { echo "bench/old-build.sh: $OLD_TREE is at $have, not $rev" >&2; exit 2; }
else
    root=$PWD/target/bench-old
    tree=$root/src-$rev
    target=$root/target
    if [ ! -d "$tree" ]; then
        mkdir -p "$root"
        git worktree prune
        git worktree add --detach -f "$tree" "$rev" >&2
    fi
fi
for what in "$@"; do
    case $what in
        *:*) (cd "$tree" && CARGO_TARGET_DIR=$target cargo build --release -q -p "${what%%:*}" --example "${what#*:}") >&2 ;;
        *) (cd "$tree" && CARGO_TARGET_DIR=$target cargo build --release -q -p "$what") >&2 ;;
    esac
done
echo "$target/release"
