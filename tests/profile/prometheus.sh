#!/bin/sh
# tests/profile/prometheus.sh: `thermap profile --prometheus` (docs/profile.md,
# "Prometheus") against a real Prometheus server (Debian's prometheus,
# with promtool), started on a free loopback port over a TSDB backfilled
# here from recorded dcgm-exporter series:
#  - the public Tesla T4 scrape (fixtures/telemetry/dcgm-exporter-...prom,
#    two hosts), stamped with one time;
#  - the real 4xH200 recording (fixtures/h200x4-a/telemetry.csv) as
#    dcgm-exporter series of three hosts, 590 points 15 s apart
#    (scripts/dcgm-series.sh).
# The comparison: the profile from the API is byte for byte the profile
# `thermap profile` makes of the very text that was backfilled (Prometheus
# text with timestamps, read as a file). That is the strongest claim to
# hold: not only that the API path and the query_range file reader agree
# (they share the parser), but that nothing is lost, added or moved between
# the recording and the profile on the way through a TSDB, the HTTP API,
# chunks of time and batches of hosts. The series are on the query's step
# grid and end together, so that Prometheus's 5-minute lookback adds no
# point of its own. THERMAP_PROM_POINTS=400 cuts the same window into 12
# chunks and 3 batches: the same bytes again.
# Failures, each one line naming the URL, exit 4 and no file written:
# nothing listening, a wrong path (404), a selector that matches nothing,
# a window without data, a host --hosts names that has no samples, a
# server that accepts and never answers (the server stopped with SIGSTOP:
# the kernel still accepts connections) with --timeout 1, a selector the
# server refuses (400). A metric the server lacks is a warning, and the
# profile is still the file's. Every process started here is stopped by
# the EXIT trap; everything is in the preamble's temporary directory.
# What a real server does not do on demand is played first by a scripted
# one (tests/fake_prom.c, built as build/fakeprom; FAKEPROM names it):
# answers of 503 and 502 then 200 are tried again into the profile the
# answers' own files give; four 429s, an answer over 64 MiB, one that is
# not JSON, a Hostname that is no host name, a value out of range, and
# an HTTP error with Prometheus's error JSON are each one line, exit 4.
# THERMAP names the binary (build/thermap by default).
. tests/lib.sh
preamble "profile prometheus" "$@"

PID=""
stop() {
	if [ -n "$PID" ]; then
		kill -CONT "$PID" 2>/dev/null
		kill "$PID" 2>/dev/null
		wait "$PID" 2>/dev/null
		PID=""
	fi
}
trap 'stop; rm -rf "$W"' EXIT
trap 'exit 1' INT TERM

# ---- a scripted server ---------------------------------------------------------
FP=${FAKEPROM:-build/fakeprom}
case $FP in /*) ;; *) FP=$PWD/$FP ;; esac
[ -x "$FP" ] ||
	{ echo "profile prometheus: $FP is not built (make check builds it)"; exit 1; }
F=$W/fake
mkdir "$F"
printf '{"status":"success","data":["DCGM_FI_DEV_GPU_TEMP","DCGM_FI_DEV_POWER_USAGE","up"]}' >"$F/names.json"
printf '{"status":"success","data":["f1"]}' >"$F/hosts.json"
printf '{"status":"success","data":["f1","bad host"]}' >"$F/badhosts.json"
printf '{"status":"success","data":[]}' >"$F/none.json"
series() {  # metric v1 v2 v3
	printf '{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"%s","gpu":"0","UUID":"GPU-0000000f-0000-4000-8000-000000000000","Hostname":"f1"},"values":[[1795263328,"%s"],[1795263343,"%s"],[1795263358,"%s"]]}]}}' "$@"
}
series DCGM_FI_DEV_GPU_TEMP 40 41 42 >"$F/temp.json"
series DCGM_FI_DEV_POWER_USAGE 300 310 320 >"$F/power.json"
series DCGM_FI_DEV_GPU_TEMP 40 999 42 >"$F/hot.json"
printf '<html>busy</html>' >"$F/html.txt"
printf '{"status":"error","errorType":"execution","error":"query timed out in expression evaluation"}' >"$F/err.json"
fake() {  # name exit args... (the script on standard input)
	name=$1 code=$2
	shift 2
	cat >"$F/script"
	rm -f "$F/port" "$W/f.json"
	(cd "$F" && exec "$FP" port script) &
	PID=$!
	i=0
	while [ $i -lt 100 ] && [ ! -s "$F/port" ]; do sleep 0.05; i=$((i + 1)); done
	FU=http://127.0.0.1:$(cat "$F/port")
	expect "$code" "$name" "$T" profile --prometheus "$FU" \
		--from 2026-11-21T12:15:28Z --to 2026-11-21T12:15:58Z "$@" -o "$W/f.json"
	stop
}
# 503 and 502 are tried again, and the answers make the profile their
# files make
fake retried 0 <<END
label/__name__ 503 @0
label/__name__ 503 @0
label/__name__ 200 names.json
label/Hostname 200 hosts.json
label/instance 200 none.json
query=DCGM_FI_DEV_GPU_TEMP%7B 502 @0
query=DCGM_FI_DEV_GPU_TEMP%7B 200 temp.json
query=DCGM_FI_DEV_POWER_USAGE%7B 200 power.json
END
"$T" profile "$F/temp.json" "$F/power.json" -o "$W/fake.json" >/dev/null 2>&1
if cmp -s "$W/f.json" "$W/fake.json"; then ok
else bad "retried: the profile differs from the answers' own: $(cat "$W/retried.err")"; fi
has retried "$W/retried.err" "thermap: warning: $FU: no series of DCGM_FI_DEV_POWER_MGMT_LIMIT, DCGM_FI_DEV_SM_CLOCK, DCGM_FI_DEV_MAX_SM_CLOCK, DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_CLOCKS_EVENT_REASONS from"
# a server that repeats a name asks for no more than one query of it
awk 'BEGIN { printf "{\"status\":\"success\",\"data\":["
	for (i = 0; i < 40; i++) printf "\"DCGM_FI_DEV_GPU_TEMP\","
	printf "\"DCGM_FI_DEV_POWER_USAGE\"]}" }' >"$F/repeats.json"
fake repeats 0 <<END
label/__name__ 200 repeats.json
label/Hostname 200 hosts.json
label/instance 200 none.json
query=DCGM_FI_DEV_GPU_TEMP%7B 200 temp.json
query=DCGM_FI_DEV_POWER_USAGE%7B 200 power.json
END
if cmp -s "$W/f.json" "$W/fake.json"; then ok
else bad "repeats: the profile differs from the answers' own: $(cat "$W/repeats.err")"; fi
has repeats "$W/repeats.err" "thermap: --prometheus: 5 queries in "
fakefails() {  # name text args... (the script on standard input)
	name=$1 text=$2
	shift 2
	fake "$name" 4 "$@"
	one_line "$name" "$(printf '%s' "$text" | sed "s|URL|$FU|")"
	if [ -e "$W/f.json" ]; then bad "$name: a file was written"; else ok; fi
}
fakefails exhausted "thermap: error: URL/api/v1/label/__name__/values: HTTP status 429; expected 200 (tried 4 times)" <<END
label/__name__ 429 @0
label/__name__ 429 @0
label/__name__ 429 @0
label/__name__ 429 @0
label/__name__ 200 names.json
END
fakefails huge "thermap: error: URL/api/v1/label/__name__/values: the answer is over 64 MiB; expected less" <<END
label/__name__ 200 @70000000
END
fakefails not-json "thermap: error: URL/api/v1/label/__name__/values: not JSON (" <<END
label/__name__ 200 html.txt
END
fakefails bad-host "thermap: error: URL/api/v1/label/Hostname/values: data[1]: \"bad host\" is not a usable host name" <<END
label/__name__ 200 names.json
label/Hostname 200 badhosts.json
END
fakefails out-of-range "thermap: error: URL/api/v1/query_range query 4 of 5 (DCGM_FI_DEV_GPU_TEMP, host f1, 2026-11-21T12:15:28.000Z to 2026-11-21T12:15:58.000Z): data.result[0].values[1][1]: temperature 999 °C is out of range; expected -50 to 200 °C" <<END
label/__name__ 200 names.json
label/Hostname 200 hosts.json
label/instance 200 none.json
query=DCGM_FI_DEV_GPU_TEMP%7B 200 hot.json
query=DCGM_FI_DEV_POWER_USAGE%7B 200 power.json
END
fakefails server-error "thermap: error: URL/api/v1/query_range query 4 of 5 (DCGM_FI_DEV_GPU_TEMP, host f1, 2026-11-21T12:15:28.000Z to 2026-11-21T12:15:58.000Z): HTTP status 422 (execution: query timed out in expression evaluation)" <<END
label/__name__ 200 names.json
label/Hostname 200 hosts.json
label/instance 200 none.json
query=DCGM_FI_DEV_GPU_TEMP%7B 422 err.json
END

# ---- a real Prometheus ----------------------------------------------------------
for tool in prometheus promtool; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		skipped "prometheus" prometheus "$tool is not installed" \
			"apt-get install prometheus"
		finish
		exit
	fi
done

# ---- the series ------------------------------------------------------------
T0=1795263328000        # 2026-11-21T12:15:28Z, the recording's own start
T4=1795132800000        # 2026-11-20T00:00:00Z
sh scripts/dcgm-series.sh h200 fixtures/h200x4-a/telemetry.csv $T0 15000 3 \
	>"$W/h200.prom"
sh scripts/dcgm-series.sh stamp $T4 \
	<fixtures/telemetry/dcgm-exporter-metrics_tesla-t4_datadog-integrations-core.prom \
	>"$W/t4.prom"
# a GPU with two samples 90 minutes apart: known to the index between
# them, but no point of a query there (more than 5 minutes from either)
G='DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-00000009-0000-4000-8000-000000000000",Hostname="gap"}'
printf '%s 30 %s\n%s 31 %s\n' "$G" $((T4 - 14400000)) "$G" $((T4 - 9000000)) >"$W/gap.prom"
# one T4 GPU again as a target without a Hostname label: Prometheus's
# instance label names its host
grep 'Hostname="551bdf382151"' "$W/t4.prom" |
	sed 's/Hostname="551bdf382151"/instance="inst7:9400"/; s/GPU-[0-9a-f-]*/GPU-0000000a-0000-4000-8000-000000000000/' \
	>"$W/inst.prom"
cat "$W/gap.prom" "$W/t4.prom" "$W/h200.prom" "$W/inst.prom" |
	sh scripts/dcgm-series.sh openmetrics >"$W/all.om"
if promtool tsdb create-blocks-from openmetrics "$W/all.om" "$W/data" >"$W/promtool.out" 2>&1
then ok; else bad "promtool: $(tail -3 "$W/promtool.out")"; finish; exit; fi

# ---- the server --------------------------------------------------------------
printf 'global:\n  scrape_interval: 1h\n' >"$W/prom.yml"
port=$((20000 + $$ % 20000))
for try in 1 2 3 4 5 6 7 8; do
	prometheus --storage.tsdb.path="$W/data" --storage.tsdb.retention.time=100y \
		--web.listen-address="127.0.0.1:$port" --config.file="$W/prom.yml" \
		>"$W/prom.log" 2>&1 &
	PID=$!
	i=0
	while [ $i -lt 300 ] && kill -0 "$PID" 2>/dev/null &&
	      ! grep -q 'Server is ready to receive web requests' "$W/prom.log"; do
		sleep 0.1
		i=$((i + 1))
	done
	grep -q 'Server is ready to receive web requests' "$W/prom.log" && break
	stop
	grep -q 'address already in use' "$W/prom.log" || break
	port=$((port + 1 + try))
done
if [ -z "$PID" ]; then
	bad "prometheus did not start: $(tail -3 "$W/prom.log")"
	finish
	exit
fi
U=http://127.0.0.1:$port
WIN="--from 2026-11-21T12:15:28Z --to 2026-11-21T14:42:43Z"

# ---- the profile of the API is the profile of the recording -----------------
"$T" profile "$W/h200.prom" -o "$W/file.json" >/dev/null 2>"$W/file.err" ||
	bad "h200 as a file: $(cat "$W/file.err")"
# shellcheck disable=SC2086 # WIN is two options
expect 0 h200 "$T" profile --prometheus "$U" $WIN -o "$W/api.json"
if cmp -s "$W/api.json" "$W/file.json"; then ok
else bad "h200: the API's profile differs from the file's: $(diff "$W/file.json" "$W/api.json" | head -5)"; fi
has h200 "$W/h200.out" "wrote $W/api.json"
if [ "$(grep -c '"host": "h200-0[123]"' "$W/api.json")" = 12 ]; then ok
else bad "h200: not 12 GPUs of 3 hosts in the profile"; fi
has h200 "$W/h200.err" "thermap: --prometheus: 11 queries in "
has h200 "$W/h200.err" "(step 15 s, 590 point(s) a series, 1 chunk(s) of time, 1 batch(es) of hosts)"

# shellcheck disable=SC2086
expect 0 chunks env THERMAP_PROM_POINTS=400 "$T" profile --prometheus "$U/" $WIN \
	-o "$W/api2.json"
if cmp -s "$W/api2.json" "$W/file.json"; then ok
else bad "chunks: the profile in 12 chunks and 3 batches differs from the file's"; fi
has chunks "$W/chunks.err" "thermap: --prometheus: 291 queries in "
has chunks "$W/chunks.err" "12 chunk(s) of time, 3 batch(es) of hosts)"

# by name: hosts, job and a selector pick the same series; --quiet is silent
# shellcheck disable=SC2086
expect 0 select "$T" profile --prometheus "$U" $WIN --hosts h200-02,h200-01,h200-03 \
	--job dcgm --selector '{modelName="NVIDIA H200"}' --quiet -o "$W/api3.json"
if cmp -s "$W/api3.json" "$W/file.json" && [ ! -s "$W/select.out" ] &&
   [ ! -s "$W/select.err" ]; then ok
else bad "select: differs from the file's, or not quiet: $(cat "$W/select.err")"; fi
# shellcheck disable=SC2086
expect 0 one-host "$T" profile --prometheus "$U" $WIN --hosts h200-02 -o "$W/api4.json"
if [ "$(grep -c '"host": ' "$W/api4.json")" = 4 ] &&
   [ "$(grep -c '"host": "h200-02"' "$W/api4.json")" = 4 ]; then ok
else bad "one-host: not the 4 GPUs of h200-02"; fi

# the real T4 scrape: one point in time, and metrics it lacks are named
"$T" profile "$W/t4.prom" -o "$W/t4file.json" >/dev/null 2>&1 || bad "t4 as a file"
expect 0 t4 "$T" profile --prometheus "$U" --from 2026-11-20T00:00:00Z \
	--to 2026-11-20T00:00:00Z -o "$W/t4api.json"
if cmp -s "$W/t4api.json" "$W/t4file.json"; then ok
else bad "t4: the API's profile differs from the file's: $(diff "$W/t4file.json" "$W/t4api.json" | head -5)"; fi
has t4 "$W/t4.err" "thermap: warning: $U: no series of DCGM_FI_DEV_MAX_SM_CLOCK from 2026-11-20T00:00:00.000Z to 2026-11-20T00:00:00.000Z: the profile goes without what they give"
if [ "$(grep -c '"host": "424773df46e0"\|"host": "551bdf382151"' "$W/t4api.json")" = 2 ]
then ok; else bad "t4: not the two hosts' GPUs"; fi
# beside hosts with a Hostname label, the target without one is named, not
# read; alone, it is read with its instance's host, as from the file
has t4 "$W/t4.err" "thermap: warning: $U: 1 instance(s) (inst7:9400) have series without a Hostname label beside hosts that have one: they are not read; select them alone with --selector '{Hostname=\"\"}'"
"$T" profile "$W/inst.prom" -o "$W/instfile.json" >/dev/null 2>&1 || bad "instance as a file"
expect 0 instance "$T" profile --prometheus "$U" --from 2026-11-20T00:00:00Z \
	--to 2026-11-20T00:00:00Z --selector '{Hostname=""}' -o "$W/instapi.json"
if cmp -s "$W/instapi.json" "$W/instfile.json" &&
   [ "$(grep -c '"host": "inst7"' "$W/instapi.json")" = 1 ]; then ok
else bad "instance: not the one GPU of host inst7, as from the file: $(diff "$W/instfile.json" "$W/instapi.json" | head -5)"; fi

# ---- failures: one line naming the URL, exit 4, nothing written --------------
fails() {  # name text args...
	name=$1 text=$2
	shift 2
	rm -f "$W/f.json"
	expect 4 "$name" "$T" profile "$@" -o "$W/f.json"
	one_line "$name" "$text"
	if [ -e "$W/f.json" ] || ls "$W" | grep -q '^\.\?f\.json\.'; then
		bad "$name: a file was written"
	else ok; fi
}
# shellcheck disable=SC2086
fails not-found "thermap: error: $U/nothere/api/v1/label/__name__/values: HTTP status 404 (not found); expected the base URL of a Prometheus server" \
	--prometheus "$U/nothere" $WIN
# shellcheck disable=SC2086
fails no-series "thermap: error: $U/api/v1/label/__name__/values: no DCGM metric thermap reads matches {__name__=~\"DCGM_FI_DEV_.+\",job=\"nosuch\"} from 2026-11-21T12:15:28.000Z to 2026-11-21T14:42:43.000Z" \
	--prometheus "$U" $WIN --job nosuch
fails no-data "thermap: error: $U/api/v1/label/__name__/values: no DCGM metric thermap reads matches {__name__=~\"DCGM_FI_DEV_.+\"} from 2020-01-01T00:00:00.000Z to 2020-01-01T01:00:00.000Z" \
	--prometheus "$U" --from 2020-01-01T00:00:00Z --to 2020-01-01T01:00:00Z
# the index knows a series, but no point is in the window
fails no-points "thermap: error: $U/api/v1/query_range: no samples of {__name__=~\"DCGM_FI_DEV_.+\"} from 2026-11-19T20:10:00.000Z to 2026-11-19T21:20:00.000Z" \
	--prometheus "$U" --from 2026-11-19T20:10:00Z --to 2026-11-19T21:20:00Z
# shellcheck disable=SC2086
fails missing-host "thermap: error: $U/api/v1/query_range: no samples of host h200-09 from 2026-11-21T12:15:28.000Z to 2026-11-21T14:42:43.000Z; expected every host --hosts names" \
	--prometheus "$U" $WIN --hosts h200-01,h200-09
# a host named again is asked for once, and missed once
# shellcheck disable=SC2086
fails missing-host-again "thermap: error: $U/api/v1/query_range: no samples of host h200-09 from 2026-11-21T12:15:28.000Z to 2026-11-21T14:42:43.000Z; expected every host --hosts names" \
	--prometheus "$U" $WIN --hosts h200-09,h200-01,h200-09,h200-09,h200-01
# shellcheck disable=SC2086
fails refused "thermap: error: $U/api/v1/label/__name__/values: HTTP status 400 (bad_data: " \
	--prometheus "$U" $WIN --selector '{job=~"("}'
# a server that accepts and never answers
kill -STOP "$PID"
# shellcheck disable=SC2086
fails slow "thermap: error: $U/api/v1/label/__name__/values: no answer within 1 s (--timeout)" \
	--prometheus "$U" $WIN --timeout 1
kill -CONT "$PID"
stop
# shellcheck disable=SC2086
fails down "thermap: error: $U/api/v1/label/__name__/values: cannot connect (is a Prometheus server listening there?)" \
	--prometheus "$U" $WIN

# ---- usage: 2 ----------------------------------------------------------------
use() {  # name message args...
	name=$1 msg=$2
	shift 2
	expect 2 "$name" "$T" profile "$@"
	one_line "$name" "$msg"
}
use with-file "--prometheus reads a server; it takes no telemetry FILE" \
	--prometheus "$U" --last 1h "$W/h200.prom"
use with-interval "--prometheus reads a server; it takes no telemetry FILE, --fields, --interval or --live" \
	--prometheus "$U" --last 1h --interval 100
use no-window "--prometheus needs a window: --from T --to T, or --last DURATION" \
	--prometheus "$U"
use relative "--prometheus: --from and --to take times, not +SECONDS" \
	--prometheus "$U" --from +0 --to +60
use scheme "--prometheus ftp://x: expected an http:// or https:// URL" \
	--prometheus ftp://x --last 1h
use bad-last "--last 2x: expected a duration such as 2h, 30m or 900s" \
	--prometheus "$U" --last 2x
use last-and-from "--last is a window of its own; give it or --from and --to" \
	--prometheus "$U" --last 1h --from 2026-11-21T12:15:28Z
use bad-selector "--selector job=\"a\": expected label matchers in braces" \
	--prometheus "$U" --last 1h --selector 'job="a"'
use bad-hosts "--hosts a,b c: 'b c' is not a host name" \
	--prometheus "$U" --last 1h --hosts 'a,b c'
use bad-timeout "--timeout 0: expected seconds from 0.1 to 3600" \
	--prometheus "$U" --last 1h --timeout 0
use alone "--last, --step, --job, --hosts, --selector and --timeout go with --prometheus" \
	--last 1h "$W/h200.prom"
finish
