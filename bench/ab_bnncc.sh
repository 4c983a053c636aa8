#!/usr/bin/env bash
# ab_bnncc.sh REV [NAME]: a release bnncc built from git revision REV (a branch, tag or commit),
# copied to .cache/bench/carry/NAME (default bnncc_REV) beside the working tree's, so that one call
# on the GPU machine can compile the same model with both and time them against each other
# (docs/perf.md's "old" / "new" and "prev" / "new" columns). The revision is checked out into a
# temporary git worktree under .cache/ab and built there (Meson, release, the compiler only);
# the worktree goes afterwards. Run from anywhere in the repository, after bench/prepare_carry.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/ab_bnncc.sh REV [NAME]" >&2; exit 2; }
rev=$1
name=${2:-bnncc_$(echo "$rev" | tr -c 'A-Za-z0-9._-\n' '_')}
git rev-parse --verify --quiet "$rev^{commit}" >/dev/null || { echo "ab_bnncc: no revision '$rev'" >&2; exit 1; }
mkdir -p .cache/ab .cache/bench/carry
wt=.cache/ab/$name
git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
git worktree add --detach --quiet "$wt" "$rev"
trap 'git worktree remove --force "$wt" 2>/dev/null || true' EXIT
echo "ab_bnncc: building bnncc at $(git -C "$wt" log -1 --format='%h %s' | cut -c1-70) ..."
meson setup "$wt/build" "$wt" -Dbuildtype=release >/dev/null
ninja -C "$wt/build" compiler/bnncc >/dev/null
cp "$wt/build/compiler/bnncc" ".cache/bench/carry/$name"
echo "ab_bnncc: .cache/bench/carry/$name"
