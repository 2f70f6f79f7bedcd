#!/bin/sh
# The whole loop on a machine with NVIDIA GPUs, one command:
#
#   sh examples/pipeline/real-run.sh OUTDIR
#
#  1. thermap topo --local; telemetry while every GPU runs the same matrix
#     load; thermap profile on it;
#  2. the example job with the default (identity) placement, telemetry
#     recorded; its logs turned into a thermap.job/1 (to_job.py, with what
#     each rank measured); thermap calibrate on that run: the profile
#     fitted to it (waiting power, derates, fit spread), and its table of
#     measured against predicted;
#  3. thermap plan with that job and the calibrated profile, thermap
#     check, and the job launched exactly as the plan's launch.txt says,
#     telemetry recorded; thermap calibrate on that run too: its table's
#     "predicted before" column is what the first calibration predicted
#     for this placement;
#  4. compare.py: step times, per-GPU temperature and power, predictions.
#
# THERMAP names the thermap program (default build/thermap); PYTHON the
# Python that has PyTorch (default python3). It changes no GPU setting and
# keeps NCCL_NVLS_ENABLE=0. Durations: BURN_S (uniform load, default 90),
# RUN_S (each job run after warm-up, default 120).
set -eu
OUT=${1:?usage: real-run.sh OUTDIR}
T=${THERMAP:-build/thermap}
PY=${PYTHON:-python3}
BURN_S=${BURN_S:-90}
RUN_S=${RUN_S:-120}
E=$(cd "$(dirname "$0")" && pwd)
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
HOST=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
# the plan's MASTER_ADDR is the host name: it must resolve here
getent hosts "$HOST" >/dev/null 2>&1 || HOST=localhost
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
FIELDS=timestamp,index,pci.bus_id,uuid,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,temperature.gpu.tlimit
ARGS=${JOB_ARGS:---pp 2 --dp $((NGPU / 2)) --layers 8,8 --hidden 4096 --vocab 131072 --seq 2048 --microbatches 8}

record() {  # FILE: nvidia-smi log every 500 ms in the background
	nvidia-smi --query-gpu=$FIELDS --format=csv -lms 500 >"$1" &
	echo $!
}

echo "== host $HOST, $NGPU GPUs"
nvidia-smi topo -m >"$OUT/topo-m.txt"
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total --format=csv \
	>"$OUT/gpus.csv"
"$T" topo --host "$HOST" --local -o "$OUT/cluster.json" 2>"$OUT/topo.err" ||
	{ cat "$OUT/topo.err"; exit 1; }

echo "== 1. uniform load on every GPU for ${BURN_S} s"
P=$(record "$OUT/telemetry-uniform.csv")
sleep 10
PYTHON="$PY" sh "$(dirname "$0")/../gpu-load.sh" "$BURN_S"
sleep 20
kill "$P"
"$T" profile --host "$HOST" "$OUT/telemetry-uniform.csv" \
	-o "$OUT/profile.json" --json-summary >"$OUT/profile-summary.json"

launch() {  # PLANDIR LOGDIR TELEMETRY: the job as launch.txt says
	P=$(record "$3")
	sleep 5
	(
		set -a; . "$1/env/$HOST.env"; set +a
		torchrun --nnodes="$NNODES" --nproc-per-node="$NPROC_PER_NODE" \
			--node-rank="$NODE_RANK" --rdzv-backend=static \
			--master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" \
			"$E/train.py" --plan "$1" --out-dir "$2" --seconds "$RUN_S" $ARGS
	) >"$2.out" 2>&1 || { kill "$P"; cat "$2.out"; exit 1; }
	sleep 5
	kill "$P"
}

echo "== 2. the job with the identity placement"
# a provisional job to make the identity plan with: the placement of the
# identity policy does not depend on the stage times
DP=$((NGPU / 2))
cat >"$OUT/job-provisional.json" <<JOB
{"format": "thermap.job/1", "name": "provisional: identity placement only",
 "parallel": {"tp": 1, "dp": $DP, "pp": 2, "order": "tp-cp-ep-dp-pp"},
 "nproc_per_node": $NGPU, "schedule": {"kind": "1f1b", "microbatches": 8},
 "stages": [{"fwd_ms": 10, "bwd_ms": 20, "act_mib": 16},
            {"fwd_ms": 10, "bwd_ms": 20, "act_mib": 16}]}
JOB
"$T" plan --cluster "$OUT/cluster.json" --profile "$OUT/profile.json" \
	--job "$OUT/job-provisional.json" --policy "$E/../../policies/identity.json" \
	-o "$OUT/plan-identity" --quiet
launch "$OUT/plan-identity" "$OUT/logs-identity" "$OUT/telemetry-identity.csv"
"$PY" "$E/to_job.py" "$OUT/logs-identity" -o "$OUT/job.json"
# the model fitted to the run that just ended: the plan it ran, its
# telemetry, the job with each rank's measured times
"$T" calibrate --cluster "$OUT/cluster.json" --profile "$OUT/profile.json" \
	--job "$OUT/job.json" --plan "$OUT/plan-identity" --host "$HOST" \
	"$OUT/telemetry-identity.csv" -o "$OUT/profile-calibrated.json" |
	tee "$OUT/calibrate-identity.txt"

echo "== 3. thermap plan with the measured job and the calibrated profile, check, launch"
"$T" plan --cluster "$OUT/cluster.json" --profile "$OUT/profile-calibrated.json" \
	--job "$OUT/job.json" -o "$OUT/plan" | tee "$OUT/plan.txt"
"$T" plan --cluster "$OUT/cluster.json" --profile "$OUT/profile-calibrated.json" \
	--job "$OUT/job.json" --policy "$E/../../policies/identity.json" \
	-o "$OUT/plan-identity-measured" --quiet
"$T" check --cluster "$OUT/cluster.json" --job "$OUT/job.json" \
	--plan "$OUT/plan" --profile "$OUT/profile-calibrated.json" |
	tee "$OUT/check.txt"
launch "$OUT/plan" "$OUT/logs-thermal" "$OUT/telemetry-thermal.csv"
"$PY" "$E/to_job.py" "$OUT/logs-thermal" -o "$OUT/job-thermal.json"
# calibrated again on the run that used the first calibration: "predicted
# before" is what that calibration said of this placement
"$T" calibrate --cluster "$OUT/cluster.json" \
	--profile "$OUT/profile-calibrated.json" --job "$OUT/job-thermal.json" \
	--plan "$OUT/plan" --host "$HOST" "$OUT/telemetry-thermal.csv" \
	-o "$OUT/profile-calibrated-thermal.json" >"$OUT/calibrate-thermal.txt"

echo "== 4. comparison"
"$PY" "$E/compare.py" "$OUT" | tee "$OUT/comparison.md"
echo "== 5. measured against predicted, each run (thermap calibrate)"
echo "-- the identity run (its own calibration):"
cat "$OUT/calibrate-identity.txt"
echo "-- the thermal run (\"predicted before\": the identity run's calibration):"
cat "$OUT/calibrate-thermal.txt"
