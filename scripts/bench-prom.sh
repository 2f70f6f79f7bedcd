#!/bin/sh
# scripts/bench-prom.sh [THERMAP [HOSTS...]] — `thermap profile --prometheus`
# on a synthetic fleet (make bench-prom; docs/bench.md): hosts of 8 GPUs,
# one hour at 15 s (241 points a series) of GPU_TEMP, POWER_USAGE, SM_CLOCK
# and GPU_UTIL (scripts/dcgm-series.sh synth), backfilled into a TSDB
# with promtool in pieces of 1024 hosts (the OpenMetrics text of one piece
# is about 1 GB and is deleted once promtool has read it), served by a
# real Prometheus on a loopback port. For each size (default 1024 4096
# 16384 hosts; the largest is backfilled, the smaller ones are the
# first hosts of it, named by --hosts; the largest is read without
# --hosts, finding its hosts itself) it prints the queries thermap sent,
# their wall time, and the peak RSS of thermap (build/runstat), and checks
# that the profile has every GPU. 16384 hosts (131072 GPUs) is the most
# one run profiles (docs/profile.md, "GPUs per run").
# Everything lives in a temporary directory under $TMPDIR (or /tmp), removed
# at the end; it needs about 2 GB free there (one piece and the TSDB).
set -eu
T=${1:-build/thermap}
[ $# -gt 0 ] && shift
SIZES=${*:-1024 4096 16384}
MAX=0
for n in $SIZES; do [ "$n" -gt "$MAX" ] && MAX=$n; done
for tool in prometheus promtool; do
	command -v $tool >/dev/null 2>&1 ||
		{ echo "bench-prom: $tool is not installed (apt-get install prometheus)"; exit 1; }
done
make --no-print-directory build/runstat >/dev/null

D=$(mktemp -d "${TMPDIR:-/tmp}/thermap-bench-prom.XXXXXX")
PID=""
cleanup() {
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null || true; fi
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
avail=$(df -Pk "$D" | awk 'NR == 2 { print int($4 / 1048576) }')
echo "bench-prom: $avail GiB free under $D"
[ "$avail" -ge 3 ] || { echo "bench-prom: fewer than 3 GiB free"; exit 1; }

T0=1795263328000   # 2026-11-21T12:15:28Z
FROM=2026-11-21T12:15:28Z
TO=2026-11-21T13:15:28Z
s0=$(date +%s)
first=1
while [ $first -le "$MAX" ]; do
	last=$((first + 1023))
	[ $last -gt "$MAX" ] && last=$MAX
	sh scripts/dcgm-series.sh synth $first $last $T0 15000 241 |
		sh scripts/dcgm-series.sh openmetrics >"$D/piece.om"
	promtool tsdb create-blocks-from openmetrics "$D/piece.om" "$D/data" >/dev/null
	rm -f "$D/piece.om"
	first=$((last + 1))
done
echo "bench-prom: backfilled $MAX hosts ($((MAX * 8)) GPUs, $((MAX * 8 * 4 * 241)) samples) in $(($(date +%s) - s0)) s, $(du -sh "$D/data" | cut -f1) of TSDB"

printf 'global:\n  scrape_interval: 1h\n' >"$D/prom.yml"
port=$((20000 + $$ % 20000))
prometheus --storage.tsdb.path="$D/data" --storage.tsdb.retention.time=100y \
	--web.listen-address="127.0.0.1:$port" --config.file="$D/prom.yml" \
	>"$D/prom.log" 2>&1 &
PID=$!
i=0
while [ $i -lt 600 ] && ! grep -q 'Server is ready' "$D/prom.log"; do
	kill -0 "$PID" 2>/dev/null || { tail -3 "$D/prom.log"; exit 1; }
	sleep 0.1
	i=$((i + 1))
done

echo
echo "| hosts | GPUs | queries | batches × chunks | wall s | peak RSS MiB | KiB per GPU above the smallest |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
base_rss=""
base_gpus=""
for n in $SIZES; do
	if [ "$n" = "$MAX" ]; then
		set -- --prometheus "http://127.0.0.1:$port" --from $FROM --to $TO
	else
		set -- --prometheus "http://127.0.0.1:$port" --from $FROM --to $TO \
			--hosts "$(awk -v n="$n" 'BEGIN { for (h = 1; h <= n; h++) printf "%shost-%06d", (h > 1 ? "," : ""), h }')"
	fi
	./build/runstat "$T" profile "$@" -o "$D/p.json" 2>"$D/err" >/dev/null ||
		{ echo "bench-prom: $n hosts: $(head -3 "$D/err")"; exit 1; }
	stat=$(tail -1 "$D/err")
	q=$(sed -n 's/^thermap: --prometheus: \([0-9]*\) queries in.*/\1/p' "$D/err")
	bc=$(sed -n 's/.* \([0-9]*\) chunk(s) of time, \([0-9]*\) batch(es).*/\2 × \1/p' "$D/err")
	g=$(grep -c '"host": ' "$D/p.json")
	[ "$g" = $((n * 8)) ] || { echo "bench-prom: $n hosts: $g GPUs in the profile"; exit 1; }
	wall=${stat% *}
	rss=$(( ${stat#* } / 1024 ))
	if [ -z "$base_rss" ]; then
		base_rss=${stat#* }
		base_gpus=$g
		per="—"
	else
		per=$(( (${stat#* } - base_rss) / (g - base_gpus) ))
	fi
	echo "| $n | $g | $q | $bc | $wall | $rss | $per |"
done
