#!/usr/bin/env bash
# screenshot.sh PAGE.html OUT.png [WIDTHxHEIGHT]
#
# Takes a PNG screenshot of a page written by traces.RenderHTML (for the
# README, or to look at a counterexample on a machine without a display)
# with headless chromium. The network is disabled the same way the
# browser test does it (every request goes to a proxy that does not
# exist), so the picture also proves the page needs nothing from outside.
# A fragment selects a step: screenshot.sh 'page.html#step=3' out.png
set -euo pipefail

usage() { echo "usage: $0 PAGE.html[#step=N] OUT.png [WIDTHxHEIGHT]" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
page=$1 out=$2 size=${3:-1400x900}
[[ $size =~ ^[0-9]+x[0-9]+$ ]] || usage

frag=""
if [[ $page == *#* ]]; then frag="#${page#*#}"; page=${page%%#*}; fi
[ -f "$page" ] || { echo "$0: $page: no such file" >&2; exit 2; }

bin=""
for b in chromium chromium-browser google-chrome; do
	if command -v "$b" >/dev/null 2>&1; then bin=$(command -v "$b"); break; fi
done
[ -n "$bin" ] || { echo "$0: no chromium on PATH (apt-get install chromium)" >&2; exit 2; }

abs=$(cd "$(dirname "$page")" && pwd)/$(basename "$page")
case $out in /*) absout=$out ;; *) absout=$PWD/$out ;; esac
rm -f "$absout"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

# chromium writes progress and harmless warnings (dbus, GPU) on stderr;
# keep them for when no screenshot appears.
if ! "$bin" --headless --disable-gpu --no-sandbox --no-first-run \
	--disable-extensions --disable-dev-shm-usage --hide-scrollbars \
	--proxy-server=127.0.0.1:9 --proxy-bypass-list='<-loopback>' \
	--user-data-dir="$profile" --window-size="${size/x/,}" \
	--screenshot="$absout" "file://$abs$frag" >"$profile/log" 2>&1 || [ ! -s "$absout" ]; then
	cat "$profile/log" >&2
	echo "$0: chromium did not write $out" >&2
	exit 1
fi
echo "$out"
