#!/usr/bin/env bash
# compare-workers.sh runs `check bench CONFIG --config bfs` and
# `--config 'bfs workers=2'` alternately, PAIRS times per configuration,
# each in a process of its own, and prints the ratio of the states per
# second the explorer reports (bfs and the progress check on the finished
# graph, as check bench times them) for every pair, their median (the
# lower middle one for an even PAIRS), and the
# ratio of the best rates, which estimates what an idle machine gives when
# the host's load varies from run to run.
#
#   scripts/compare-workers.sh                      # the five bench configurations, 7 pairs
#   CHECK=/path/check PAIRS=9 scripts/compare-workers.sh 'pvflush/fixed vcpus=4'
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
pairs=${PAIRS:-7}
if [ $# -eq 0 ]; then
	set -- 'pvflush/fixed vcpus=4' 'exclusive/upstream vcpus=4' 'e500mc/per-lpid cpus=3' 'batchunmap/generation users=2' 'cputlb/synced-fixed'
fi
check=${CHECK:-}
if [ -z "$check" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	check=$tmp/check
	go build -o "$check" ./cmd/check
fi
rate() { # config workers-config -> states/s
	# The whole output first: a pipe closed early (head -1) would make
	# check exit 2 (a result it could not write) and, under pipefail,
	# end the script.
	local out
	# shellcheck disable=SC2086
	out=$("$check" bench --json --config "$2" $1)
	grep -m1 '"states_per_second"' <<<"$out" | tr -dc '0-9.\n'
}
for cfg in "$@"; do
	ratios=() best1=0 best2=0
	for _ in $(seq "$pairs"); do
		a=$(rate "$cfg" bfs)
		b=$(rate "$cfg" 'bfs workers=2')
		ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')")
		best1=$(awk -v x="$a" -v y="$best1" 'BEGIN { print (x > y) ? x : y }')
		best2=$(awk -v x="$b" -v y="$best2" 'BEGIN { print (x > y) ? x : y }')
	done
	median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ x[NR] = $1 } END { print x[int((NR + 1) / 2)] }')
	printf '%s: two workers / one, states/s: median %s (pairs: %s); best / best %s\n' \
		"$cfg" "$median" "${ratios[*]}" "$(awk -v a="$best1" -v b="$best2" 'BEGIN { printf "%.2f", b / a }')"
done
