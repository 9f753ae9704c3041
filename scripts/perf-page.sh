#!/usr/bin/env bash
# perf-page.sh measures what docs/performance.md reports and rewrites the
# generated part of that page (between its BEGIN and END markers), so that
# a re-measurement is a rerun, not a rewrite. Each table is followed by the
# command that produced it, the commit, the date and the machine (CPUs, CPU
# model, memory, Go version, load average when the section started).
#
#   scripts/perf-page.sh                       # every section, PAIRS=3
#   PAIRS=5 scripts/perf-page.sh workers       # one section again; the others are kept
#   OUT=/tmp/perf.md scripts/perf-page.sh      # write the generated part elsewhere
#
# Sections (run in this order):
#   engines  the engine of 5526e02 against this one, on 5526e02's models
#            (scripts/old-models.sh, scripts/compare-engines.sh; bfs, one worker)
#   workers  two bfs workers against one (scripts/compare-workers.sh)
#   large    large spaces exhausted (bfs, two workers, fingerprints, levels spilled)
#   verify   check verify: every protocol's matrix and claims
#   tests    go test ./... and go test -race ./... of the working tree (not run
#            unless named: minutes)
#   spin     protocheck against SPIN 6.5.2 per core on the pvflush pair
#            (scripts/compare-spin.sh; not run unless named: needs spin)
#
# Run it on an otherwise idle machine when you can: every number but the
# state counts is a wall-clock or memory measurement of this machine and
# its load at that moment, which is why each table says both.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
page=docs/performance.md
out=${OUT:-$page}
pairs=${PAIRS:-3}
sections=("$@")
[ ${#sections[@]} -eq 0 ] && sections=(engines workers large verify)

tmp=$(mktemp -d)
cleanup() {
	git worktree remove --force "$tmp/old" >/dev/null 2>&1 || true
	git worktree remove --force "$tmp/oldmodels" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
# The check measured is HEAD's, whatever the working tree holds.
mkdir -p "$tmp/src"
git archive HEAD | tar -x -C "$tmp/src"
(cd "$tmp/src" && go build -o "$tmp/check" ./cmd/check)
commit=$(git rev-parse --short HEAD)

machine() { # one line: the machine, the Go version and the load now
	local cpu mem
	cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || echo unknown)
	mem=$(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null || echo unknown)
	echo "$(go env GOOS)/$(go env GOARCH), $(nproc) CPUs ($cpu), $mem, $(go env GOVERSION), load average $(cut -d' ' -f1-3 /proc/loadavg) at the start"
}
stamp() { # the caption line under a table: command, commit, date, machine
	echo ""
	echo "<sub>Produced by \`$1\` at commit $commit, $(date -u '+%Y-%m-%d %H:%M UTC'), on $(machine).</sub>"
}

median() { sort -n | awk '{ x[NR] = $1 } END { if (NR) print x[int((NR + 1) / 2)] }'; }

engines() {
	git worktree add --detach "$tmp/old" 5526e02 >/dev/null 2>&1
	(cd "$tmp/old" && go build -o "$tmp/check-5526e02" ./cmd/check)
	scripts/old-models.sh "$tmp/oldmodels" >/dev/null
	local st
	st=$(stamp "scripts/perf-page.sh engines (PAIRS=$pairs scripts/compare-engines.sh over scripts/old-models.sh)")
	OLDBIN=$tmp/check-5526e02 NEWBIN=$tmp/oldmodels/check PAIRS=$pairs scripts/compare-engines.sh >"$tmp/engines.txt"
	echo "### The engine against 5526e02's, on 5526e02's models"
	echo ""
	echo "bfs, one worker, $pairs pairs run alternately; wall time and peak RSS are medians over the pairs."
	echo ""
	echo "| configuration (5526e02's models) | states | 5526e02: time, peak RSS | now: time, peak RSS | states/s, new/old: median (pairs); per user-CPU second | peak RSS per state, old → new |"
	echo "|---|---|---|---|---|---|"
	grep 'median ratio' "$tmp/engines.txt" | while IFS= read -r line; do
		local cfg rest ratio pairsr uratio
		cfg=${line%%: median ratio*}
		rest=${line#*new/old: }
		ratio=${rest%% *}
		pairsr=$(sed 's/.*(pairs: \([^)]*\)); per user.*/\1/' <<<"$line")
		uratio=$(sed 's/.*per user-CPU second: \([0-9.]*\).*/\1/' <<<"$line")
		# per-run lines: config bin states wall user rss states/s (config may hold spaces)
		local ow orss nw nrss states
		ow=$(awk -v c="$cfg" '{ n = NF; bin = $(n-5); cf = $0; sub(/ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ *$/, "", cf) } cf == c && bin == "old" { print $(n-3) }' "$tmp/engines.txt" | median)
		orss=$(awk -v c="$cfg" '{ n = NF; bin = $(n-5); cf = $0; sub(/ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ *$/, "", cf) } cf == c && bin == "old" { print $(n-1) }' "$tmp/engines.txt" | median)
		nw=$(awk -v c="$cfg" '{ n = NF; bin = $(n-5); cf = $0; sub(/ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ *$/, "", cf) } cf == c && bin == "new" { print $(n-3) }' "$tmp/engines.txt" | median)
		nrss=$(awk -v c="$cfg" '{ n = NF; bin = $(n-5); cf = $0; sub(/ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ *$/, "", cf) } cf == c && bin == "new" { print $(n-1) }' "$tmp/engines.txt" | median)
		states=$(awk -v c="$cfg" '{ n = NF; bin = $(n-5); cf = $0; sub(/ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ +[^ ]+ *$/, "", cf) } cf == c && bin == "new" { print $(n-4); exit }' "$tmp/engines.txt")
		local bo bn
		bo=$(awk -v m="$orss" -v s="$states" 'BEGIN { printf "%.0f", m * 1048576 / s }')
		bn=$(awk -v m="$nrss" -v s="$states" 'BEGIN { printf "%.0f", m * 1048576 / s }')
		echo "| \`$cfg\` | $states | $ow s, $orss MiB | $nw s, $nrss MiB | **${ratio}×** ($pairsr); ${uratio}× | $bo → $bn B |"
	done
	echo "$st"
}

workers() {
	local st
	st=$(stamp "scripts/perf-page.sh workers (CHECK=check PAIRS=$pairs scripts/compare-workers.sh)")
	CHECK=$tmp/check PAIRS=$pairs scripts/compare-workers.sh >"$tmp/workers.txt"
	echo "### Two workers against one"
	echo ""
	echo "\`check bench CONFIG --config bfs\` and \`--config 'bfs workers=2'\` alternately, each in a process of its own, $pairs pairs: the explorer's states per second (bfs and the progress check on the finished graph)."
	echo ""
	echo "| configuration | two workers / one, median (pairs) | best / best |"
	echo "|---|---|---|"
	while IFS= read -r line; do
		local cfg med prs best
		cfg=${line%%: two workers*}
		med=$(sed 's/.*median \([0-9.]*\) .*/\1/' <<<"$line")
		prs=$(sed 's/.*(pairs: \([^)]*\)).*/\1/' <<<"$line")
		best=$(sed 's/.*best \/ best \([0-9.]*\).*/\1/' <<<"$line")
		echo "| \`$cfg\` | **${med}×** ($prs) | ${best}× |"
	done <"$tmp/workers.txt"
	echo "$st"
}

large() {
	local st
	st=$(stamp "scripts/perf-page.sh large (check explore CONFIG --workers 2 --progress none, under /usr/bin/time)")
	echo "### Large spaces, exhausted"
	echo ""
	echo "bfs, two workers; with \`--fingerprint\` each level is spilled to the temporary directory and the collision estimates are printed with the result."
	echo ""
	echo "| configuration | verdict | states | wall time (CPU) | peak RSS |"
	echo "|---|---|---|---|---|"
	local cfg
	for cfg in 'pvflush/fixed vcpus=5 --fingerprint --no-progress' 'pvflush/fixed vcpus=5 --fingerprint' \
		'exclusive/upstream vcpus=4 safe-work=2 --fingerprint' 'cputlb/synced cpus=4 migration=0 commit=0 --fingerprint' \
		'cputlb/synced-fixed'; do
		# shellcheck disable=SC2086
		/usr/bin/time -f 'TIME %e %U %S %M' "$tmp/check" explore $cfg --workers 2 --progress none >"$tmp/large.out" 2>"$tmp/large.err" || true
		local v s t
		v=$(sed -n 's/^verdict: \([^ ]*\).*/\1/p' "$tmp/large.out" | head -1)
		s=$(sed -n 's/^states: \([0-9]*\).*/\1/p' "$tmp/large.out" | head -1)
		t=$(grep '^TIME' "$tmp/large.err" | tail -1)
		read -r _ wall user sys rss <<<"$t"
		echo "| \`$cfg\` | $v | $s | $wall s ($(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }') s) | $(awk -v m="$rss" -v n="$s" 'BEGIN { printf "%.0f MiB, %.0f B/state", m / 1024, m * 1024 / n }') |"
	done
	echo "$st"
}

verify() {
	local st
	st=$(stamp "scripts/perf-page.sh verify (check verify --progress none, under /usr/bin/time)")
	/usr/bin/time -f 'TIME %e %U %S %M' "$tmp/check" verify --progress none >"$tmp/verify.out" 2>"$tmp/verify.err" || true
	local t rows claims
	t=$(grep '^TIME' "$tmp/verify.err" | tail -1)
	read -r _ wall user sys rss <<<"$t"
	rows=$(grep 'variant configurations match' "$tmp/verify.out" || grep -i 'variant configurations' "$tmp/verify.out" | tail -1)
	claims=$(grep 'claims hold' "$tmp/verify.out" || grep -i 'claims' "$tmp/verify.out" | tail -1)
	echo "### The whole verification matrix"
	echo ""
	echo "| command | result | wall time | CPU | peak RSS |"
	echo "|---|---|---|---|---|"
	echo "| \`check verify\` | $rows; $claims | $wall s | $(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", u + s }') s | $(awk -v m="$rss" 'BEGIN { printf "%.2f GiB", m / 1048576 }') |"
	echo "$st"
}

tests() {
	local st
	st=$(stamp "scripts/perf-page.sh tests (go test -count=1 ./... and go test -count=1 -race ./..., under /usr/bin/time, build cache warm)")
	go test -count=1 -run '^$' ./... >/dev/null 2>&1 || true
	go test -race -count=1 -run '^$' ./... >/dev/null 2>&1 || true
	/usr/bin/time -f '%e %U %S' -o "$tmp/t1.time" go test -count=1 ./... >/dev/null 2>&1 || true
	/usr/bin/time -f '%e %U %S' -o "$tmp/t2.time" go test -race -count=1 ./... >/dev/null 2>&1 || true
	echo "### The test suite"
	echo ""
	echo "| command | wall time | CPU |"
	echo "|---|---|---|"
	read -r w u s <"$tmp/t1.time"
	echo "| \`go test -count=1 ./...\` | $w s | $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u + s }') s |"
	read -r w u s <"$tmp/t2.time"
	echo "| \`go test -race -count=1 ./...\` | $w s | $(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.0f", u + s }') s |"
	echo "$st"
}

spin() {
	local st
	st=$(stamp "scripts/perf-page.sh spin (scripts/compare-spin.sh, PAIRS=$pairs)")
	echo "### protocheck against SPIN, per core"
	echo ""
	echo "The same protocol (seed 003's fixed PV flush) as \`pvflush/fixed\` and as"
	echo "the independent Promela model \`scripts/spin/pvflush.pml\`, both pinned to one"
	echo "core, alternately; rates are per CPU second (user + system)."
	echo ""
	echo '```'
	PAIRS=$pairs scripts/compare-spin.sh
	echo '```'
	echo "$st"
}

# Each section's text goes to its own file; the generated part of the page
# is the sections in a fixed order, those not run this time kept as they were.
mkdir -p "$tmp/sec"
failed=0
begin='<!-- BEGIN generated by scripts/perf-page.sh: do not edit by hand -->'
end='<!-- END generated by scripts/perf-page.sh -->'
for s in engines workers large verify tests spin; do
	if [ -f "$page" ]; then
		awk -v b="<!-- section $s -->" -v e="<!-- end section $s -->" '$0 == b { on = 1 } on { print } $0 == e { on = 0 }' "$page" >"$tmp/sec/$s"
	fi
done
for s in "${sections[@]}"; do
	case $s in
	engines | workers | large | verify | tests | spin) ;;
	*)
		echo "unknown section $s" >&2
		exit 2
		;;
	esac
	echo "== $s" >&2
	if ("$s") >"$tmp/sec/$s.body" 2>"$tmp/$s.log"; then
		{
			echo "<!-- section $s -->"
			cat "$tmp/sec/$s.body"
			echo "<!-- end section $s -->"
		} >"$tmp/sec/$s"
	else
		echo "section $s failed; the page keeps what it had. Its errors:" >&2
		tail -20 "$tmp/$s.log" >&2
		failed=1
	fi
done
{
	echo "$begin"
	for s in engines workers large verify tests spin; do
		if [ -s "$tmp/sec/$s" ]; then
			echo ""
			cat "$tmp/sec/$s"
		fi
	done
	echo ""
	echo "$end"
} >"$tmp/generated"
if [ "$out" = "$page" ] && [ -f "$page" ] && grep -qF "$begin" "$page"; then
	awk -v b="$begin" -v e="$end" -v g="$tmp/generated" '
		$0 == b { while ((getline l < g) > 0) print l; skip = 1; next }
		$0 == e { skip = 0; next }
		!skip { print }' "$page" >"$tmp/page"
	cp "$tmp/page" "$page"
else
	cp "$tmp/generated" "$out"
fi
echo "wrote $out" >&2
exit "$failed"
