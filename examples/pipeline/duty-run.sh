#!/bin/sh
# A recording that tests thermap's power and heat model on a machine with
# NVIDIA GPUs, one command:
#
#   sh examples/pipeline/duty-run.sh OUTDIR
#
# Every GPU runs the same phases at once (duty.py): idle, a uniform matrix
# load, then loads busy a known share of each second (idle between, or a
# kernel spinning between, as a pipeline rank waiting in a communication
# kernel does), with rests between them; nvidia-smi logs every 500 ms.
# OUTDIR gets the telemetry (telemetry.csv), the phase times of each GPU
# (phases-<index>.jsonl), nvidia-smi topo -m, the GPU list and
# nvidia-smi -q. `thermap profile` of the whole log gives the idle and
# full-load levels and the fit T = ambient + r·P; the duty phases are
# operating points the profile never saw, to hold its predictions
# against (docs/real-run.md).
#
# PYTHON names the Python that has PyTorch (default python3); PHASES
# overrides the phase list (duty.py's syntax). It changes no GPU setting.
set -eu
OUT=${1:?usage: duty-run.sh OUTDIR}
PY=${PYTHON:-python3}
E=$(cd "$(dirname "$0")" && pwd)
PHASES=${PHASES:-burn:75,rest:25,duty0.7:60,rest:25,duty0.4:60,rest:25,spin0.4:60,rest:15}
FIELDS=timestamp,index,pci.bus_id,uuid,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,temperature.gpu.tlimit
mkdir -p "$OUT"
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
nvidia-smi topo -m >"$OUT/topo-m.txt"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total --format=csv \
	>"$OUT/gpus.csv"
nvidia-smi -q >"$OUT/smi-q.txt"
nvidia-smi --query-gpu=$FIELDS --format=csv -lms 500 >"$OUT/telemetry.csv" &
LOG=$!
echo "== $NGPU GPU(s): idle 20 s, then $PHASES"
sleep 20
i=0
PIDS=
while [ $i -lt "$NGPU" ]; do
	CUDA_VISIBLE_DEVICES=$i "$PY" "$E/duty.py" --phases "$PHASES" \
		-o "$OUT/phases-$i.jsonl" &
	PIDS="$PIDS $!"
	i=$((i + 1))
done
rc=0
for p in $PIDS; do
	wait "$p" || rc=1
done
sleep 5
kill "$LOG"
exit $rc
