#!/bin/sh
# The plan's entry point on a machine with NVIDIA GPUs, one command:
#
#   sh examples/launch/real-entry.sh OUTDIR
#
#  1. thermap topo --local; telemetry while every GPU runs a matrix load
#     for BURN_S seconds (default 60: a sample counts 30 s into its
#     phase), and 35 s idle after it; thermap profile on it;
#  2. thermap plan of a job with one pipeline rank per GPU (pp = GPUs, so
#     the plan may give any rank any GPU), thermap check;
#  3. torchrun started through the entry point with no flag at all
#     (sh entry.sh torchrun ranks.py): torchrun takes its arguments from
#     the env file's PET_* names, the entry point checks the GPUs with the
#     real nvidia-smi; every rank prints RANK, LOCAL_RANK, WORLD_SIZE and
#     the UUID of the GPU PyTorch gives it, compared with plan.json;
#  4. the same with one task per GPU through --per-task (LOCAL_RANK given
#     as a launcher would), compared the same way;
#  5. a copy of the plan whose env file names a GPU that is not here: the
#     entry point stops it (exit 78) before torchrun starts.
# Also writes how this PyTorch reads PET_* names (torch's own source).
#
# THERMAP names the thermap program (default build/thermap); PYTHON the
# Python that has PyTorch (default python3). Changes no GPU setting.
set -eu
OUT=${1:?usage: real-entry.sh OUTDIR}
T=${THERMAP:-build/thermap}
PY=${PYTHON:-python3}
BURN_S=${BURN_S:-60}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
HOST=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
getent hosts "$HOST" >/dev/null 2>&1 || HOST=localhost
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
FIELDS=timestamp,index,pci.bus_id,uuid,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,temperature.gpu.tlimit

echo "== host $HOST, $NGPU GPUs" | tee "$OUT/host.txt"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv >"$OUT/gpus.csv"
"$PY" -c "import inspect, torch, torch.distributed.argparse_util as a
print('torch', torch.__version__)
print(inspect.getsource(a.env))" >"$OUT/torch-pet.txt" 2>&1 || :
"$T" topo --host "$HOST" --local -o "$OUT/cluster.json"

echo "== 1. load on every GPU for ${BURN_S} s"
nvidia-smi --query-gpu=$FIELDS --format=csv -lms 500 >"$OUT/telemetry.csv" &
P=$!
sleep 10
PYTHON="$PY" sh "$(dirname "$0")/../gpu-load.sh" "$BURN_S"
sleep 35
kill "$P"
"$T" profile --host "$HOST" "$OUT/telemetry.csv" -o "$OUT/profile.json"

echo "== 2. plan and check"
STAGES=
i=0
while [ $i -lt "$NGPU" ]; do
	STAGES="$STAGES${STAGES:+, }{\"fwd_ms\": $((10 + 5 * i)), \"bwd_ms\": $((20 + 10 * i)), \"act_mib\": 16}"
	i=$((i + 1))
done
cat >"$OUT/job.json" <<JOB
{"format": "thermap.job/1", "name": "one pipeline rank per GPU",
 "parallel": {"tp": 1, "dp": 1, "pp": $NGPU, "order": "tp-cp-ep-dp-pp"},
 "nproc_per_node": $NGPU, "schedule": {"kind": "1f1b", "microbatches": 8},
 "stages": [$STAGES]}
JOB
"$T" plan --cluster "$OUT/cluster.json" --profile "$OUT/profile.json" \
	--job "$OUT/job.json" -o "$OUT/plan" | tee "$OUT/plan.txt"
"$T" check --cluster "$OUT/cluster.json" --job "$OUT/job.json" \
	--plan "$OUT/plan" | tee "$OUT/check.txt"

cat >"$OUT/ranks.py" <<'PY'
import os, torch
lr = int(os.environ["LOCAL_RANK"])
u = str(torch.cuda.get_device_properties(lr).uuid)
u = u if u.startswith("GPU-") else "GPU-" + u
print(os.environ["RANK"], os.environ.get("THERMAP_HOST_SEEN", "-"), lr, u,
      os.environ["WORLD_SIZE"], flush=True)
PY
want() {
	"$PY" -c "import json, sys
p = json.load(open(sys.argv[1]))
for r in p['ranks']:
    print(r['rank'], '-', r['local_rank'], r['uuid'], len(p['ranks']))" \
		"$1/plan.json" | sort -n
}
want "$OUT/plan" >"$OUT/want.txt"

echo "== 3. torchrun through the entry point, no flags"
(cd "$OUT/plan" && sh entry.sh torchrun "$OUT/ranks.py") \
	>"$OUT/torchrun.out" 2>"$OUT/torchrun.err" || { cat "$OUT/torchrun.err"; exit 1; }
grep -E '^[0-9]+ - ' "$OUT/torchrun.out" | sort -n >"$OUT/torchrun.txt"
if cmp -s "$OUT/torchrun.txt" "$OUT/want.txt"; then
	echo "torchrun: every rank on the plan's GPU" | tee "$OUT/result.txt"
else
	echo "torchrun: DIFFERS from plan.json" | tee "$OUT/result.txt"
	diff "$OUT/want.txt" "$OUT/torchrun.txt" | tee -a "$OUT/result.txt" || :
fi

echo "== 4. one task per GPU through --per-task"
: >"$OUT/pertask.out"
i=0
while [ $i -lt "$NGPU" ]; do
	(cd "$OUT/plan" && SLURM_LOCALID=$i SLURM_NTASKS=$NGPU sh entry.sh \
		--per-task "$PY" "$OUT/ranks.py") >>"$OUT/pertask.out" 2>>"$OUT/pertask.err"
	i=$((i + 1))
done
sort -n "$OUT/pertask.out" >"$OUT/pertask.txt"
if cmp -s "$OUT/pertask.txt" "$OUT/want.txt"; then
	echo "per task: every rank on the plan's GPU" | tee -a "$OUT/result.txt"
else
	echo "per task: DIFFERS from plan.json" | tee -a "$OUT/result.txt"
	diff "$OUT/want.txt" "$OUT/pertask.txt" | tee -a "$OUT/result.txt" || :
fi

echo "== 5. a GPU that is not here"
cp -r "$OUT/plan" "$OUT/plan-foreign"
sed -i 's/^CUDA_VISIBLE_DEVICES=GPU-[0-9a-f]*/CUDA_VISIBLE_DEVICES=GPU-00000000/' \
	"$OUT/plan-foreign/env/$HOST.env"
rc=0
(cd "$OUT/plan-foreign" && sh entry.sh torchrun "$OUT/ranks.py") \
	>"$OUT/foreign.out" 2>"$OUT/foreign.err" || rc=$?
echo "foreign GPU: exit $rc: $(cat "$OUT/foreign.err")" | tee -a "$OUT/result.txt"
