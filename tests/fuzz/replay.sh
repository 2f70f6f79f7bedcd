#!/bin/sh
# Replays, through each harness's entry point with the plain driver of
# replay.c (no libFuzzer), every input kept in tests/fuzz/regress/HARNESS/
# and the harness's seed corpus (the fixture files listed in
# tests/fuzz/seeds/HARNESS.list and the files of tests/fuzz/seeds/HARNESS/).
# Usage: sh tests/fuzz/replay.sh BUILD_DIR HARNESS...
set -eu
B=$1
shift
for h in "$@"; do
	set --
	[ -d "tests/fuzz/regress/$h" ] && set -- "$@" "tests/fuzz/regress/$h"
	[ -d "tests/fuzz/seeds/$h" ] && set -- "$@" "tests/fuzz/seeds/$h"
	if [ -f "tests/fuzz/seeds/$h.list" ]; then
		for f in $(grep -v '^#' "tests/fuzz/seeds/$h.list"); do
			set -- "$@" "$f"
		done
	fi
	printf '== fuzz-replay %s: ' "$h"
	if [ $# -eq 0 ]; then
		echo "no inputs"
		continue
	fi
	ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS=print_suppressions=0 \
		"$B/replay-$h" "$@"
done
