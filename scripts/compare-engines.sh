#!/usr/bin/env bash
# compare-engines.sh builds `check` at two commits of this checkout and
# explores the same configurations with each, alternately, PAIRS times
# (bfs, one worker), printing for every run the states, the wall and user
# seconds and the peak resident memory that /usr/bin/time -v reports, then
# the median ratio of states per second (new / old) per configuration.
#
#   scripts/compare-engines.sh                    # 5526e02 against HEAD
#   OLD=5526e02 NEW=HEAD PAIRS=3 scripts/compare-engines.sh 'pvflush/fixed vcpus=4' ...
#   OLDBIN=/path/check NEWBIN=/path/check scripts/compare-engines.sh ...  # binaries built elsewhere
#
# A configuration may name different parameters for the two commits,
# 'OLD CONFIG | NEW CONFIG', where a model gained a parameter whose value 0
# is the old model (cputlb's migration and commit threads).
#
# Run it on an otherwise idle machine: the ratios are of wall-clock rates.
# The user-CPU ratio is printed too: on a loaded machine it is the steadier.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
old=${OLD:-5526e02}
new=${NEW:-HEAD}
pairs=${PAIRS:-3}
if [ $# -eq 0 ]; then
	set -- 'pvflush/fixed vcpus=4' 'exclusive/upstream vcpus=4' 'cputlb/synced cpus=3 accesses=3' 'e500mc/per-lpid cpus=3' 'batchunmap/generation users=2'
fi
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true; git worktree remove --force "$tmp/new" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
for which in old new; do
	rev=$old bin=${OLDBIN:-}
	[ "$which" = new ] && rev=$new bin=${NEWBIN:-}
	if [ -n "$bin" ]; then
		cp "$bin" "$tmp/check-$which"
		continue
	fi
	git worktree add --detach "$tmp/$which" "$rev" >/dev/null 2>&1
	(cd "$tmp/$which" && go build -o "$tmp/check-$which" ./cmd/check)
done

run() { # binary config -> "states wall user rss_kb"
	local out
	out=$(/usr/bin/time -f 'TIME %e %U %M' "$1" explore $2 --workers 1 --progress none 2>&1 >"$tmp/stdout" | grep '^TIME' || true)
	local states
	states=$(grep -o 'states: [0-9]*' "$tmp/stdout" | head -1 | cut -d' ' -f2)
	echo "$states ${out#TIME }"
}

printf '%-34s %-4s %10s %8s %8s %9s %12s\n' config bin states wall_s user_s rss_MB states/s
for cfg in "$@"; do
	ratios=()
	uratios=()
	ocfg=${cfg%%|*}
	ncfg=${cfg##*|}
	for i in $(seq "$pairs"); do
		read -r so wo uo mo <<<"$(run "$tmp/check-old" "$ocfg")"
		read -r sn wn un mn <<<"$(run "$tmp/check-new" "$ncfg")"
		ro=$(awk -v s="$so" -v w="$wo" 'BEGIN{printf "%.0f", s/w}')
		rn=$(awk -v s="$sn" -v w="$wn" 'BEGIN{printf "%.0f", s/w}')
		printf '%-34s %-4s %10s %8s %8s %9.0f %12s\n' "$ocfg" old "$so" "$wo" "$uo" "$(awk -v m="$mo" 'BEGIN{print m/1024}')" "$ro"
		printf '%-34s %-4s %10s %8s %8s %9.0f %12s\n' "$ncfg" new "$sn" "$wn" "$un" "$(awk -v m="$mn" 'BEGIN{print m/1024}')" "$rn"
		ratios+=("$(awk -v a="$rn" -v b="$ro" 'BEGIN{printf "%.2f", a/b}')")
		uratios+=("$(awk -v sn="$sn" -v un="$un" -v so="$so" -v uo="$uo" 'BEGIN{printf "%.2f", (sn/un)/(so/uo)}')")
	done
	median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
	umedian=$(printf '%s\n' "${uratios[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
	echo "$cfg: median ratio of states/s, new/old: $median (pairs: ${ratios[*]}); per user-CPU second: $umedian (pairs: ${uratios[*]})"
done
