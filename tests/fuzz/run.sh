#!/bin/sh
# Runs each harness under libFuzzer for FUZZ_SECONDS (default 10) from its
# seed corpus and regression inputs, keeping what it learns in
# BUILD_DIR/corpus/HARNESS, and prints one line per harness: seconds,
# executions, final coverage and features, and whether it crashed (the
# input is then BUILD_DIR/crash/HARNESS-*; keep it in
# tests/fuzz/regress/HARNESS/ once fixed).
# Usage: sh tests/fuzz/run.sh BUILD_DIR HARNESS...
set -eu
B=$1
shift
S=${FUZZ_SECONDS:-10}
fail=0
mkdir -p "$B/corpus" "$B/seed" "$B/crash" "$B/log"
for h in "$@"; do
	mkdir -p "$B/corpus/$h"
	rm -rf "$B/seed/$h"
	mkdir -p "$B/seed/$h"
	# seeds by reference: links to the fixture files
	if [ -f "tests/fuzz/seeds/$h.list" ]; then
		for f in $(grep -v '^#' "tests/fuzz/seeds/$h.list"); do
			ln -s "$PWD/$f" "$B/seed/$h/$(echo "$f" | tr / _)"
		done
	fi
	for d in "tests/fuzz/seeds/$h" "tests/fuzz/regress/$h"; do
		[ -d "$d" ] || continue
		for f in "$d"/*; do
			[ -f "$f" ] && ln -s "$PWD/$f" "$B/seed/$h/$(echo "$f" | tr / _)"
		done
	done
	# hwloc exports (20-140 KB) and nvidia_gpu_exporter captures (130-180
	# KB, the --query-gpu sections late in them) must stay whole to reach
	# thermap's code; logs are cut to 32 KiB; JSON and the rest are small
	case $h in
	topo_hwloc|tele_capture) len=200000 ;;
	tele_csv|tele_prom) len=32768 ;;
	*) len=8192 ;;
	esac
	log="$B/log/$h.txt"
	rc=0
	"$B/fuzz-$h" -max_total_time="$S" -max_len="$len" -timeout=20 \
		-rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$B/crash/$h-" "$B/corpus/$h" "$B/seed/$h" \
		>"$log" 2>&1 || rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
	cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
	ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ]; then
		res="no crash"
	else
		res="CRASH (exit $rc): see $log"
		fail=1
	fi
	printf '%-13s %4ss %10s execs  cov %-6s ft %-6s %s\n' "$h" "$S" \
		"${runs:-?}" "${cov:-?}" "${ft:-?}" "$res"
done
exit $fail
