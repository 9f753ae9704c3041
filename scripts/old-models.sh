#!/usr/bin/env bash
# old-models.sh builds `check` with this checkout's engine (explorer,
# model, cli, cmd, internal at HEAD) over 5526e02's models, so that
# scripts/compare-engines.sh can set the engines side by side on exactly
# the same state spaces (the models gained concurrency since 5526e02):
#
#   scripts/old-models.sh /tmp/oldmodels        # builds /tmp/oldmodels/check
#   git worktree add /tmp/old 5526e02 && (cd /tmp/old && go build -o check ./cmd/check)
#   OLDBIN=/tmp/old/check NEWBIN=/tmp/oldmodels/check PAIRS=5 scripts/compare-engines.sh
#
# The models are those of 4fda756 (pvflush, cputlb and batchunmap as
# 5526e02 had them, on the current step contract), with exclusive from
# ffbe2b4 and e500mc from b8c0424 (5526e02's models on that contract),
# plus scripts/old-models.patch, which changes how those two encode and
# copy a state and nothing of what they explore: broadcast returns a
# model.Cond, the states implement model.Copier as today's do, and
# exclusive encodes its mutexes and condition variables from their values.
# Both binaries explore the same states and transitions; compare-engines
# prints both counts.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
dir=${1:?usage: scripts/old-models.sh DIR}
git worktree add --detach "$dir" 4fda756 >/dev/null
git -C "$dir" rm -rq protocols/exclusive protocols/e500mc
git -C "$dir" checkout ffbe2b4 -- protocols/exclusive
git -C "$dir" checkout b8c0424 -- protocols/e500mc
git -C "$dir" apply "$PWD/scripts/old-models.patch"
(cd "$dir" && rm -rf explorer model cli cmd internal traces)
git archive HEAD explorer model cli cmd internal traces | tar -x -C "$dir"
(cd "$dir" && go build -o check ./cmd/check)
echo "$dir/check"
