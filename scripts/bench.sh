#!/bin/sh
# make bench: speed and memory figures (a report, not a test).
#  1. the solver benchmark (build/bench);
#  2. thermap profile on a large nvidia-smi log made by replaying the real
#     H200 recording with shifted timestamps: throughput against
#     `awk -F,` computing only per-GPU mean temperatures over the same file
#     (measured in the same run), and peak memory.
# BENCH_PROFILE_MB sets the log size (default 2048); BENCH_DIR where it is
# written (default a temporary directory, removed afterwards).
set -eu
T=${1:-build/thermap}
make --no-print-directory build/bench build/gen_telemetry build/runstat \
	>/dev/null
./build/bench

MB=${BENCH_PROFILE_MB:-2048}
D=${BENCH_DIR:-$(mktemp -d)}
trap '[ -z "${BENCH_DIR:-}" ] && rm -rf "$D"' EXIT
LOG=$D/replay.csv
echo
echo "== thermap profile: ${MB} MB nvidia-smi log (replayed real H200 recording)"
./build/gen_telemetry fixtures/h200x4-a/telemetry.csv $((MB * 1048576)) >"$LOG"
bytes=$(wc -c <"$LOG")
rows=$(($(wc -l <"$LOG") - 1))
cat "$LOG" >/dev/null   # into the page cache, for every contender alike

stat() {  # label, command...: prints "label wall rss" via runstat
	label=$1; shift
	./build/runstat -o "$D/out" "$@" 2>"$D/stat" || {
		echo "bench: $label failed"; cat "$D/stat"; exit 1; }
	set -- $(tail -1 "$D/stat")
	echo "$label $1 $2"
}
# Rounds alternate the contenders, so that a slow spell of a shared machine
# hits both alike; the report uses each one's median.
ROUNDS=${BENCH_ROUNDS:-3}
: >"$D/runs"
r=0
while [ $r -lt "$ROUNDS" ]; do
	stat awk awk -F, 'NR>1{s[$2]+=$4;n[$2]++} END{for(k in s) print k, s[k]/n[k]}' "$LOG" >>"$D/runs"
	stat thermap "$T" profile --host h200x4-a "$LOG" -o "$D/p.json" --quiet >>"$D/runs"
	r=$((r + 1))
done
THERMAP_THREADS=1 stat thermap1 "$T" profile --host h200x4-a "$LOG" -o "$D/p1.json" --quiet >>"$D/runs"
cmp -s "$D/p.json" "$D/p1.json" || { echo "bench: threaded and single-threaded profiles differ"; exit 1; }
sort -k1,1 -k2,2n "$D/runs" | awk -v bytes="$bytes" -v rows="$rows" -v rounds="$ROUNDS" '
	{ n[$1]++; w[$1, n[$1]] = $2; if ($3 > rss[$1]) rss[$1] = $3 }
	END {
		for (k in n) wall[k] = w[k, int((n[k] + 1) / 2)]   # median
		mbps = bytes / 1048576
		printf "log: %.0f MiB, %d rows, 4 GPUs; page cache warm; medians of %d alternating rounds\n", mbps, rows, rounds
		printf "%-44s %8s %10s %8s %10s\n", "", "wall s", "MiB/s", "vs awk", "peak RSS"
		printf "%-44s %8.3f %10.0f %8s %7.1f MiB\n", "awk -F, per-GPU mean temperature (baseline)", wall["awk"], mbps / wall["awk"], "1.00x", rss["awk"] / 1024
		printf "%-44s %8.3f %10.0f %7.2fx %7.1f MiB\n", "thermap profile (threads)", wall["thermap"], mbps / wall["thermap"], wall["awk"] / wall["thermap"], rss["thermap"] / 1024
		printf "%-44s %8.3f %10.0f %7.2fx %7.1f MiB\n", "thermap profile (THERMAP_THREADS=1, once)", wall["thermap1"], mbps / wall["thermap1"], wall["awk"] / wall["thermap1"], rss["thermap1"] / 1024
		printf "targets: >= 4x awk throughput: %s; peak RSS < 64 MiB: %s\n", (wall["awk"] / wall["thermap"] >= 4 ? "met" : "NOT met"), (rss["thermap"] < 65536 && rss["thermap1"] < 65536 ? "met" : "NOT met")
	}'
