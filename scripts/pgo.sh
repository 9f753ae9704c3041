#!/usr/bin/env bash
# pgo.sh regenerates cmd/check/default.pgo, the CPU profile that `go build`
# and `go run` of ./cmd/check use for profile-guided optimization (the Go
# toolchain picks up default.pgo in the main package's directory; tests do
# not use it). The profile is that of every protocol's bench
# configuration, explored by bfs with one worker and with two (go test
# -bench BFS), merged: the hot paths a search takes whatever the model.
# Rerun it when the explorer or a model's hot code changes a lot; a stale
# profile still builds, it only optimizes less.
#
#   scripts/pgo.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for p in pvflush exclusive cputlb e500mc batchunmap; do
	go test -run '^$' -bench 'BFS' -benchtime 1x -cpuprofile "$tmp/$p.prof" "./protocols/$p" >/dev/null
done
go tool pprof -proto "$tmp"/*.prof >cmd/check/default.pgo
ls -l cmd/check/default.pgo
