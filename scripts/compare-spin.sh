#!/usr/bin/env bash
# compare-spin.sh measures protocheck's engine against SPIN per core, on
# the same protocol: KVM's paravirtual remote TLB flush (seed 003), as
# protocheck's pvflush/fixed and as scripts/spin/pvflush.pml, an
# independent Promela model written from the seed alone. Both run pinned
# to one core (taskset -c $CORE), alternately, PAIRS times, each under
# /usr/bin/time -v; the script prints every run (states, transitions, CPU
# seconds, peak RSS) and the medians of states and transitions per CPU
# second, and their ratio protocheck / SPIN. The models differ in
# granularity (protocheck's has explicit TLB fills and accesses), so
# compare rates and bytes per state, not state counts.
#
#   scripts/compare-spin.sh                       # the pair of the performance page
#   PAIRS=5 CORE=1 scripts/compare-spin.sh
#   CHECK='pvflush/fixed vcpus=3' SPIN_N=4 PAIRS=1 scripts/compare-spin.sh
#                                                 # that the script runs: runs of
#                                                 # a few hundredths of a second,
#                                                 # whose ratios are noise
#
# Needs SPIN 6.5.2 and gcc (Debian: apt-get install -y spin) and an
# otherwise idle machine: the rates are of CPU seconds, which a loaded
# machine inflates less than wall time, but not by nothing.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
pairs=${PAIRS:-3}
core=${CORE:-0}
check_cfg=${CHECK:-pvflush/fixed vcpus=4 preemptions=3}
spin_n=${SPIN_N:-5}
for tool in spin gcc taskset /usr/bin/time; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "compare-spin.sh: $tool not found (Debian: apt-get install -y spin gcc util-linux time)" >&2
		exit 2
	fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

go build -o "$tmp/check" ./cmd/check
cp scripts/spin/pvflush.pml "$tmp/"
(
	cd "$tmp"
	# VARIANT=0 is the fixed protocol; SPIN's partial-order reduction is on
	# (its default), as protocheck's bfs has none: the comparison favours SPIN.
	spin -DN="$spin_n" -DVARIANT=0 -DNFLUSH=2 -DNPREEMPT=2 -a pvflush.pml >/dev/null
	gcc -O2 -w -DSAFETY -DMEMLIM=16384 -o pan pan.c
)

# timed CMD... -> "cpu_s rss_kb" of the command, its stdout in $tmp/out.
timed() {
	taskset -c "$core" /usr/bin/time -v "$@" >"$tmp/out" 2>"$tmp/time" || true
	awk -F': ' '/User time/{u=$2} /System time/{s=$2} /Maximum resident/{m=$2} END{printf "%.2f %d\n", u+s, m}' "$tmp/time"
}

run_check() { # -> "states transitions cpu_s rss_kb"
	read -r cpu rss <<<"$(timed "$tmp/check" explore $check_cfg --workers 1 --no-progress --progress none)"
	local st tr
	st=$(grep -o 'states: [0-9]*' "$tmp/out" | head -1 | cut -d' ' -f2)
	tr=$(grep -o 'transitions: [0-9]*' "$tmp/out" | head -1 | cut -d' ' -f2)
	echo "$st $tr $cpu $rss"
}

run_pan() { # -> "states transitions cpu_s rss_kb"
	read -r cpu rss <<<"$(cd "$tmp" && timed ./pan -m10000 -w24)"
	local st tr
	st=$(awk '/states, stored/{print $1; exit}' "$tmp/out")
	tr=$(awk '/transitions \(= stored\+matched\)/{print $1; exit}' "$tmp/out")
	echo "$st $tr $cpu $rss"
}

echo "commit $(git rev-parse --short HEAD), $(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m), load $(cut -d' ' -f1-3 /proc/loadavg), core $core"
echo "protocheck: check explore $check_cfg --workers 1 --no-progress --progress none"
echo "SPIN $(spin -V | awk '{print $3}'): spin -DN=$spin_n -DVARIANT=0 -DNFLUSH=2 -DNPREEMPT=2 -a; gcc -O2 -DSAFETY; ./pan -m10000 -w24"
printf '%-10s %10s %11s %7s %8s %11s %11s %7s\n' tool states transitions cpu_s rss_MB states/s trans/s B/state
rates=()
trates=()
row() { # tool states transitions cpu rss
	printf '%-10s %10s %11s %7s %8.1f %11.0f %11.0f %7.1f\n' "$1" "$2" "$3" "$4" "$(awk -v m="$5" 'BEGIN{print m/1024}')" \
		"$(awk -v s="$2" -v c="$4" 'BEGIN{print s/c}')" "$(awk -v t="$3" -v c="$4" 'BEGIN{print t/c}')" \
		"$(awk -v m="$5" -v s="$2" 'BEGIN{print m*1024/s}')"
}
for i in $(seq "$pairs"); do
	read -r cs ct cc cm <<<"$(run_check)"
	read -r ps pt pc pm <<<"$(run_pan)"
	if [ -z "$cs" ] || [ -z "$ps" ]; then
		echo "compare-spin.sh: a run printed no state count; its output and /usr/bin/time's:" >&2
		cat "$tmp/out" "$tmp/time" >&2
		exit 1
	fi
	row protocheck "$cs" "$ct" "$cc" "$cm"
	row spin "$ps" "$pt" "$pc" "$pm"
	rates+=("$(awk -v a="$cs" -v b="$cc" -v c="$ps" -v d="$pc" 'BEGIN{printf "%.2f", (a/b)/(c/d)}')")
	trates+=("$(awk -v a="$ct" -v b="$cc" -v c="$pt" -v d="$pc" 'BEGIN{printf "%.2f", (a/b)/(c/d)}')")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
echo "protocheck / SPIN per CPU second: states $(median "${rates[@]}") (pairs: ${rates[*]}), transitions $(median "${trates[@]}") (pairs: ${trates[*]})"
