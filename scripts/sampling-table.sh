#!/usr/bin/env bash
# sampling-table.sh prints, for every buggy variant at a size above its
# protocol's default, the number of seeded walks (seed 1, at most RUNS)
# each sampling strategy needed to find the bug, as a Markdown table.
# The counts are deterministic: they do not depend on the machine or its
# load.
#
#   scripts/sampling-table.sh            # every protocol, RUNS=20000
#   RUNS=5000 scripts/sampling-table.sh pvflush
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
runs=${RUNS:-20000}
bin=$(mktemp -d)/check
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/check

size() {
	case $1 in
	pvflush) echo "vcpus=5 preemptions=4" ;;
	exclusive) echo "vcpus=4 safe-work=2 tbs=2" ;;
	cputlb) echo "cpus=3" ;;
	e500mc) echo "cpus=3 loads=4 ops=4" ;;
	batchunmap) echo "users=2" ;;
	esac
}

protocols=("$@")
[ ${#protocols[@]} -eq 0 ] && protocols=(pvflush exclusive cputlb e500mc batchunmap)
echo "| variant and size | random | random-threads | pct (depth 3) |"
echo "|---|---|---|---|"
for p in "${protocols[@]}"; do
	for v in $("$bin" list --json | python3 -c '
import json, sys
for p in json.load(sys.stdin):
    if p["name"] == sys.argv[1]:
        for v in p["variants"]:
            if v["expect"] != "ok":
                print(v["name"])' "$p"); do
		row="| \`$p/$v $(size "$p")\` |"
		for s in random random-threads pct; do
			# shellcheck disable=SC2046
			out=$("$bin" explore "$p/$v" $(size "$p") --strategy "$s" --seed 1 --runs "$runs" --json --progress none 2>/dev/null || true)
			cell=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if d["verdict"] == "violation":
    print("{:,} ({})".format(d["executions"], d["violation"]["property"]).replace(",", " "))
else:
    print("not in " + "{:,}".format(int(sys.argv[1])).replace(",", " "))' "$runs" || echo "error")
			row="$row $cell |"
		done
		echo "$row"
	done
done
