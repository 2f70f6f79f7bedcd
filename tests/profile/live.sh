#!/bin/sh
# tests/profile/live.sh: `thermap profile --live` (docs/profile.md,
# "Live") against a stand-in NVML (tests/fake_nvml.c, built as
# build/fakenvml/libnvidia-ml.so.1; FAKENVML names its folder): there is
# no GPU here. The real NVML ran on a GPU machine (fixtures/real/).
#  - the samples are written in nvidia-smi's --query-gpu CSV layout, one
#    row per GPU every interval, with the values NVML gave;
#  - the profile is the one the same samples give as a file;
#  - --phases is read when the sampling ends;
#  - NVML missing, not starting, or finding no GPU: one line, exit 4,
#    nothing written; --live with files, or its options without it: 2.
# THERMAP names the binary (build/thermap by default).
. tests/lib.sh
preamble "profile live" "$@"
L=${FAKENVML:-build/fakenvml}
[ -f "$L/libnvidia-ml.so.1" ] ||
	{ echo "profile live: $L/libnvidia-ml.so.1 is not built (make check builds it)"; exit 1; }

LD_LIBRARY_PATH=$L "$T" profile --live 2 --interval 200 --host fake \
	-o "$W/p.json" >"$W/out" 2>"$W/err"
rc=$?
if [ $rc = 0 ]; then ok; else bad "live: exit $rc: $(cat "$W/err")"; fi
if [ "$(cat "$W/out")" = "wrote $W/p.json (and the samples, $W/p.json.samples.csv)" ]
then ok; else bad "live: stdout '$(cat "$W/out")'"; fi
if grep -q '^thermap: --live: 0 of 2 s, 2 GPU(s), 1 samples each$' "$W/err"
then ok; else bad "live: no progress line: $(cat "$W/err")"; fi
S=$W/p.json.samples.csv
if [ "$(head -1 "$S")" = "timestamp, index, pci.bus_id, uuid, temperature.gpu, power.draw [W], power.limit [W], clocks.current.sm [MHz], clocks.max.sm [MHz], utilization.gpu [%], clocks_event_reasons.active, temperature.gpu.tlimit" ]
then ok; else bad "live: header $(head -1 "$S")"; fi
n=$(grep -c ', GPU-f0000000-0000-4000-8000-000000000001, 41.00, 101.00 W, 700.00 W, 1980.00 MHz, 1980.00 MHz, 0.00 %, 0x0000000000000001, 46.00$' "$S")
n0=$(grep -c ', 0, 00000000:00:06.0, GPU-f0000000-0000-4000-8000-000000000000, 40.00, 100.00 W,' "$S")
# 2 s every 200 ms: about ten rows per GPU, as many of each
if [ "$n" -ge 8 ] && [ "$n" -le 12 ] && [ "$n" = "$n0" ] &&
   [ "$(wc -l <"$S")" = $((2 * n + 1)) ]; then ok
else bad "live: $n and $n0 rows of GPU 1 and 0, $(wc -l <"$S") lines"; fi
if grep -q '^20[0-9][0-9]/[01][0-9]/[0-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-9][0-9]\.[0-9][0-9][0-9], ' "$S"
then ok; else bad "live: timestamps not as nvidia-smi writes them: $(sed -n 2p "$S")"; fi
# the same samples as a file: the same profile, byte for byte
"$T" profile --host fake "$S" -o "$W/q.json" >/dev/null 2>&1
if cmp -s "$W/p.json" "$W/q.json"; then ok; else bad "live: the profile differs from the samples' own"; fi
if grep -q '"uuid": "GPU-f0000000-0000-4000-8000-000000000001"' "$W/p.json" &&
   grep -q '"power_limit_w": 700' "$W/p.json" && grep -q '"host": "fake"' "$W/p.json"
then ok; else bad "live: the profile lacks the GPUs: $(head -20 "$W/p.json")"; fi

# --phases: read when the sampling ends, then as for the samples' file;
# phases long past count for nothing, so the profile is the same
printf '1000 2000 idle\n2000 3000 all\n' >"$W/ph.txt"
LD_LIBRARY_PATH=$L "$T" profile --live 1 --interval 200 --host fake \
	--samples "$W/s2.csv" --phases "$W/ph.txt" -o "$W/p2.json" --quiet 2>"$W/err"
rc=$?
"$T" profile --host fake "$W/s2.csv" -o "$W/q2.json" --quiet 2>/dev/null
if [ $rc = 0 ] && cmp -s "$W/p2.json" "$W/q2.json" &&
   grep -q "^thermap: warning: $W/ph.txt: 2 GPUs on 1 host get no coupling and keep their own fit: too few phases count" "$W/err"
then ok; else bad "live --phases: exit $rc: $(cat "$W/err")"; fi
# a broken phases file: exit 4, no profile; the samples are kept
printf '1000 x idle\n' >"$W/ph-bad.txt"
LD_LIBRARY_PATH=$L "$T" profile --live 1 --interval 200 --host fake \
	--samples "$W/s3.csv" --phases "$W/ph-bad.txt" -o "$W/p3.json" --quiet 2>"$W/err"
rc=$?
if [ $rc = 4 ] && [ ! -e "$W/p3.json" ] && [ -s "$W/s3.csv" ] &&
   [ "$(cat "$W/err")" = "thermap: error: $W/ph-bad.txt:1: END 'x': expected a time: seconds since 1970 (1795796994.08), or ISO 8601 without blanks (2026-11-27T16:29:54.08Z)" ]
then ok; else bad "live --phases broken: exit $rc: $(cat "$W/err")"; fi

# failures: one line, exit 4, nothing written
fails() {  # name message env...
	name=$1 msg=$2
	shift 2
	rm -f "$W/f.json" "$W/f.json.samples.csv"
	env "$@" "$T" profile --live 1 -o "$W/f.json" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 4 ] && [ "$(cat "$W/err")" = "$msg" ] && [ ! -e "$W/f.json" ] &&
	   [ ! -e "$W/f.json.samples.csv" ]; then ok
	else bad "$name: exit $rc: $(cat "$W/err")"; fi
}
mkdir -p "$W/empty"
fails no-nvml "thermap: error: --live: cannot load NVML (libnvidia-ml.so.1): libnvidia-ml.so.1: cannot open shared object file: No such file or directory" LD_LIBRARY_PATH="$W/empty"
fails no-gpu "thermap: error: --live: NVML finds no GPU" LD_LIBRARY_PATH="$L" FAKE_NVML=nogpu
fails no-start "thermap: error: --live: NVML does not start: Driver Not Loaded" LD_LIBRARY_PATH="$L" FAKE_NVML=fail
# usage: 2
use() {  # name message args...
	name=$1 msg=$2
	shift 2
	LD_LIBRARY_PATH=$L "$T" profile "$@" >/dev/null 2>"$W/err"
	rc=$?
	if [ $rc = 2 ] && grep -qF -- "$msg" "$W/err"; then ok
	else bad "$name: exit $rc: $(cat "$W/err")"; fi
}
use with-file "--live samples this machine; it takes no telemetry FILE" --live 1 fixtures/h200x4-a/telemetry.csv
use samples-alone "--samples goes with --live" --samples x.csv fixtures/h200x4-a/telemetry.csv
# without --live, --interval is that of dcgmi dmon logs
use bad-file-interval "--interval 0: expected milliseconds from 1 to 3600000" --interval 0 fixtures/h200x4-a/telemetry.csv
use bad-seconds "--live abc: expected seconds from 1 to 86400" --live abc
use bad-interval "--interval 5: expected milliseconds from 10 to 60000" --live 1 --interval 5
use nothing "profile needs at least one telemetry FILE, or --live SECONDS"
finish
