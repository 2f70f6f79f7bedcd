#!/bin/sh
# thermap profile --live on a machine with NVIDIA GPUs, held against
# nvidia-smi over the same minutes, one command:
#
#   sh examples/live/real-live.sh OUTDIR
#
# For LIVE_S seconds (default 110) thermap samples every GPU through NVML
# while nvidia-smi logs the same GPUs; the GPUs idle for 35 s, then run a
# matrix load for LOAD_S seconds (default 60), then idle again. Both logs
# are profiled; compare.txt puts the two profiles' numbers side by side.
# THERMAP names the thermap program (default build/thermap); PYTHON the
# Python with PyTorch (default python3). Changes no GPU setting.
set -eu
OUT=${1:?usage: real-live.sh OUTDIR}
T=${THERMAP:-build/thermap}
PY=${PYTHON:-python3}
LIVE_S=${LIVE_S:-110}
LOAD_S=${LOAD_S:-60}
mkdir -p "$OUT"
HOST=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
FIELDS=timestamp,index,pci.bus_id,uuid,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,temperature.gpu.tlimit
{ date -u; hostname; nvidia-smi -L; } >"$OUT/machine.txt"

nvidia-smi --query-gpu=$FIELDS --format=csv -lms 500 >"$OUT/nvidia-smi.csv" &
SMI=$!
"$T" profile --live "$LIVE_S" --interval 500 --host "$HOST" \
	-o "$OUT/profile-live.json" --samples "$OUT/live.csv" \
	>"$OUT/live.out" 2>"$OUT/live.err" &
LIVE=$!
sleep 35
PYTHON="$PY" sh "$(dirname "$0")/../gpu-load.sh" "$LOAD_S"
wait "$LIVE" || { cat "$OUT/live.err"; kill "$SMI"; exit 1; }
kill "$SMI"
"$T" profile --host "$HOST" "$OUT/nvidia-smi.csv" -o "$OUT/profile-smi.json"
"$PY" - "$OUT/profile-live.json" "$OUT/profile-smi.json" >"$OUT/compare.txt" <<'PY'
import json, sys
a, b = (json.load(open(f))["gpus"] for f in sys.argv[1:3])
keys = ["samples", "load_samples", "temp_idle_c", "temp_load_c", "power_idle_w",
        "power_load_w", "power_limit_w", "sm_clock_load_mhz", "sm_clock_max_mhz",
        "headroom_c", "ambient_c", "r_c_per_w", "derate"]
for x, y in zip(a, b):
    print("GPU", x["index"], x["uuid"] == y["uuid"] and "same UUID" or "UUIDs differ")
    for k in keys:
        print("  %-18s NVML %-10s nvidia-smi %s" % (k, x.get(k), y.get(k)))
PY
cat "$OUT/compare.txt"
