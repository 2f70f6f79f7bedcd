#!/bin/sh
# The whole loop on a machine with NVIDIA GPUs, one command:
#
#   sh examples/pipeline/real-run.sh OUTDIR
#
# From the repository root of a copy that carries thermap's program and the
# shared libraries it needs in .dev/ (thermap installed nowhere), writing
# into $OUT/run and packing it (about 7 minutes on 4 GPUs; `timeout` stops
# it, and its recordings, before a 10-minute limit; FOREIGN_GPU=N before
# `timeout` adds the foreign load):
#
#   mkdir -p "$OUT/run"; THERMAP=.dev/thermap THERMAP_LIBS=.dev timeout -s TERM 570 sh examples/pipeline/real-run.sh "$OUT/run"; tar czf "$OUT/run.tgz" -C "$OUT" run
#
# (THERMAP_LIBS puts the folder on LD_LIBRARY_PATH for thermap alone;
# LD_LIBRARY_PATH=.dev for the whole command works too, but then PyTorch,
# Python and nvidia-smi load those copies first.)
#
# Steps (the elapsed time of each goes to run.log and steps.txt):
#
#  0. the machine: machine.txt (date, host, GPUs, driver and CUDA versions,
#     Python, PyTorch, thermap), smi-q.txt, topo-m.txt, gpus.csv, and
#     `thermap topo --local` -> cluster.json (if that fails: from
#     topo-m.txt and gpus.csv);
#  1. the coupling schedule on every GPU (examples/gpu-load.sh --phases:
#     idle, all, every GPU but one in turn, idle; phases.txt), telemetry
#     recorded from a few seconds before to a few after
#     (telemetry-profile.csv); `thermap profile --phases` -> profile.json
#     and profile-summary.json (without --phases if thermap refuses it);
#  2. with FOREIGN_GPU: a foreign matrix load on that GPU from here to the
#     end (gpu-load.sh --gpus; foreign.txt, foreign-load.log);
#  3. the example job with torchrun's placement (plan-identity, made from
#     a provisional job), telemetry recorded from 8 s before torchrun to
#     5 s after it, the GPUs' processes 25 s after the launch; to_job.py ->
#     job.json; `thermap calibrate --processes` (without it if refused) ->
#     profile-calibrated.json, calibrate-identity.txt;
#  4. `thermap plan` with job.json and the calibrated profile -> plan/,
#     plan.txt; `thermap check --profile` -> check.txt; the identity plan
#     of the measured job -> plan-identity-measured/; the coolest-held
#     policy -> plan-coolest/, plan-coolest.txt. The second run launches
#     plan/, or plan-coolest/ (the placement the model predicts coolest)
#     when plan/ kept torchrun's placement (verdict keep or same), so that
#     a prediction is held against a placement other than the calibrated
#     one (second-run.txt);
#  5. the second run as the plan's launch.txt says; to_job.py ->
#     job-second.json; `thermap calibrate` on it with the first
#     calibration's profile -> calibrate-second.txt (its "predicted before"
#     column is the held-out prediction), profile-calibrated-second.json;
#  6. compare.py -> comparison.md; both calibrate tables printed.
#
# Recordings come first; a thermap step that fails is noted (run.log and
# problems.txt, with its exit status) and the script goes on where it can:
# without a calibrated profile it plans with profile.json, without a plan
# for the identity run it launches torchrun's placement without one.
#
# OUTDIR holds: run.log (everything printed), steps.txt, problems.txt,
# machine.txt, smi-q.txt, topo-m.txt, gpus.csv, cluster.json, topo.err
# (and topo-files.err when topo --local failed);
# phases.txt, gpu-load-phases.log, telemetry-profile.csv, profile.json,
# profile-summary.json; foreign.txt, foreign-load.log (FOREIGN_GPU);
# job-provisional.json, plan-identity/, telemetry-identity.csv,
# logs-identity/ (rank<R>.jsonl), logs-identity.out (torchrun's output),
# processes-identity.csv, job.json, profile-calibrated.json,
# calibrate-identity.txt; plan/, plan.txt, check.txt,
# plan-identity-measured/, plan-coolest/, plan-coolest.txt,
# check-coolest.txt (when it runs), second-run.txt; telemetry-second.csv,
# logs-second/, logs-second.out, processes-second.csv, job-second.json,
# profile-calibrated-second.json, calibrate-second.txt; comparison.md.
# A file ending in .err holds what a recorder printed on standard error.
#
# Environment:
#   THERMAP        the thermap program (default build/thermap)
#   THERMAP_LIBS   a folder of thermap's shared libraries, for thermap only
#   PYTHON         the Python that has PyTorch (default python3)
#   TORCHRUN       the launcher (default: torchrun when PYTHON is unset
#                  and torchrun is on PATH, else PYTHON -m
#                  torch.distributed.run)
#   JOB_ARGS       train.py's arguments (default --pp 2 --dp GPUS/2
#                  --layers 8,8 --hidden 4096 --vocab 131072 --seq 2048
#                  --microbatches 8); e.g. --layers 6,10 moves blocks to
#                  the last stage; --pp times --dp must be the GPU count
#   PHASE_IDLE_S, PHASE_ALL_S, PHASE_EACH_S, PHASE_TAIL_S
#                  the coupling schedule (defaults 30, 40, 30, 0; a phase
#                  must last more than 21 s to count in profile --phases)
#   RUN_S          each job run's measured seconds after warm-up (60)
#   FOREIGN_GPU    unset: none; an nvidia-smi index: a foreign matrix load
#                  on that GPU from before the identity run to the end
#
# It changes no GPU setting and keeps NCCL_NVLS_ENABLE=0.
set -u
OUT=${1:?usage: real-run.sh OUTDIR}
mkdir -p "$OUT" || exit 1
OUT=$(cd "$OUT" && pwd) || exit 1

# a tee that outlives a TERM, INT or HUP, so that what the script prints
# while it stops still reaches the terminal and the log
tee_keep() {
	(
		trap '' TERM INT HUP
		exec tee "$1"
	)
}
# everything printed, here and by the commands, goes to OUTDIR/run.log too;
# on a signal, this shell waits until the script has stopped what it runs
if [ -z "${REAL_RUN_LOGGED:-}" ]; then
	rm -f "$OUT/.exit"
	trap 'echo "real-run.sh: stopping" >&2' TERM INT HUP
	{
		REAL_RUN_LOGGED=1 sh "$0" "$OUT" 2>&1
		echo $? >"$OUT/.exit"
	} | tee_keep "$OUT/run.log"
	rc=$(cat "$OUT/.exit" 2>/dev/null) || rc=1
	rm -f "$OUT/.exit"
	exit "${rc:-1}"
fi

E=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$E/../.." && pwd)
abs() {  # a relative path with a slash, made absolute
	case $1 in
	/* | '') echo "$1" ;;
	*/*) echo "$(pwd)/$1" ;;
	*) echo "$1" ;;
	esac
}
T=$(abs "${THERMAP:-build/thermap}")
LIBS=${THERMAP_LIBS:-}
case $LIBS in '' | /*) ;; *) LIBS=$(pwd)/$LIBS ;; esac
PY=${PYTHON:-python3}
# torchrun, or the same launcher of the Python that PYTHON names
TORCHRUN=${TORCHRUN:-}
if [ -z "$TORCHRUN" ] && [ -z "${PYTHON:-}" ] && command -v torchrun >/dev/null 2>&1; then
	TORCHRUN=torchrun
fi
PHASE_IDLE_S=${PHASE_IDLE_S:-30}
PHASE_ALL_S=${PHASE_ALL_S:-40}
PHASE_EACH_S=${PHASE_EACH_S:-30}
PHASE_TAIL_S=${PHASE_TAIL_S:-0}
RUN_S=${RUN_S:-60}
FOREIGN_GPU=${FOREIGN_GPU:-}
FIELDS=timestamp,index,pci.bus_id,uuid,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,temperature.gpu.tlimit
export NCCL_NVLS_ENABLE=0
# shellcheck disable=SC3045  # (dash and bash have it)
ulimit -c 0 2>/dev/null  # no core dumps in OUTDIR
CVD_BEFORE=${CUDA_VISIBLE_DEVICES-unset}
unset CUDA_VISIBLE_DEVICES  # the plans' env files set it; torchrun's placement is every GPU
export CUDA_DEVICE_ORDER=PCI_BUS_ID  # CUDA's GPU i is nvidia-smi's GPU i

: >"$OUT/problems.txt"
: >"$OUT/steps.txt"
T0=$(date +%s)
STEP=
STEP_T=$T0
step() {  # TITLE: ends the step before, starts this one
	now=$(date +%s)
	if [ -n "$STEP" ]; then
		echo "   ($STEP: $((now - STEP_T)) s)"
		echo "$((now - STEP_T)) s  $STEP" >>"$OUT/steps.txt"
	fi
	STEP=$1
	STEP_T=$now
	[ -z "$1" ] || echo "== $1  [$(date -u +%H:%M:%S) UTC, +$((now - T0)) s]"
}
note() {  # a failure or a fallback: run.log and problems.txt
	echo "!! $*"
	echo "$*" >>"$OUT/problems.txt"
}
thermap() {
	if [ -n "$LIBS" ]; then
		LD_LIBRARY_PATH=$LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$T" "$@"
	else
		"$T" "$@"
	fi
}
# NAME FILE CMD...: CMD with its standard output in FILE (and printed); a
# failure is noted with its exit status, which is returned
run_to() {
	rt_name=$1 rt_file=$2
	shift 2
	"$@" >"$rt_file"
	rt_rc=$?
	cat "$rt_file"
	[ $rt_rc -eq 0 ] || note "$rt_name failed (exit status $rt_rc)"
	return $rt_rc
}
running() {  # PID: the process exists and has not ended
	if [ -r "/proc/$1/stat" ]; then
		st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)
		[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
	else
		kill -0 "$1" 2>/dev/null
	fi
}

REC=
REC_FILE=
record() {  # FILE: nvidia-smi every 500 ms in the background, times in UTC
	TZ=UTC nvidia-smi --query-gpu="$FIELDS" --format=csv -lms 500 \
		>"$1" 2>"$1.err" &
	REC=$!
	REC_FILE=$1
}
stop_record() {
	if [ -n "$REC" ]; then
		kill "$REC" 2>/dev/null
		wait "$REC" 2>/dev/null
		echo "   telemetry: $(($(wc -l <"$REC_FILE") - 1)) rows in $(basename "$REC_FILE")"
		[ -s "$REC_FILE.err" ] || rm -f "$REC_FILE.err"
	fi
	REC=
}

JOB_PID=
FOREIGN_PID=
# shellcheck disable=SC2317  # (called by the traps)
cleanup() {  # whatever runs in the background is stopped
	[ -z "$JOB_PID" ] || kill "$JOB_PID" 2>/dev/null
	[ -z "$REC" ] || kill "$REC" 2>/dev/null
	[ -z "$FOREIGN_PID" ] || kill "$FOREIGN_PID" 2>/dev/null
	JOB_PID='' REC='' FOREIGN_PID=''
}
# shellcheck disable=SC2317  # (called by the traps)
on_signal() {
	trap - TERM INT HUP
	trap '' PIPE  # run.log's tee may be gone: printing must not stop this
	cleanup
	note "stopped by signal $1 during: $STEP"
	exit $((128 + $1))
}
trap 'on_signal 15' TERM
trap 'on_signal 2' INT
trap 'on_signal 1' HUP
trap cleanup EXIT

HOST=$(hostname | tr -c 'A-Za-z0-9._\n-' '-')
# the plan's MASTER_ADDR is the host name: it must resolve here
getent hosts "$HOST" >/dev/null 2>&1 || HOST=localhost
NGPU=$(nvidia-smi -L | grep -c '^GPU ')
if [ "$NGPU" -lt 1 ]; then
	echo "real-run.sh: nvidia-smi lists no GPU" >&2
	exit 1
fi
ARGS=${JOB_ARGS:---pp 2 --dp $((NGPU / 2)) --layers 8,8 --hidden 4096 --vocab 131072 --seq 2048 --microbatches 8}
# the job's pipeline stages, replicas and microbatches, for the
# provisional job (train.py's defaults where JOB_ARGS leaves them out)
PP=2 DP='' MB=8 prev=''
for w in $ARGS; do
	case $prev in
	--pp) PP=$w ;;
	--dp) DP=$w ;;
	--microbatches) MB=$w ;;
	esac
	case $w in
	--pp=*) PP=${w#--pp=} ;;
	--dp=*) DP=${w#--dp=} ;;
	--microbatches=*) MB=${w#--microbatches=} ;;
	esac
	prev=$w
done
case $PP$DP$MB in *[!0-9]*) echo "real-run.sh: JOB_ARGS: --pp, --dp and --microbatches must be whole numbers" >&2; exit 2 ;; esac
[ -n "$DP" ] || DP=2
if [ $((PP * DP)) -ne "$NGPU" ]; then
	echo "real-run.sh: --pp $PP x --dp $DP is not the $NGPU GPUs of this machine (JOB_ARGS)" >&2
	exit 2
fi
if [ -n "$FOREIGN_GPU" ]; then
	case $FOREIGN_GPU in
	*[!0-9]*) FOREIGN_OK=no ;;
	*) [ "$FOREIGN_GPU" -lt "$NGPU" ] && FOREIGN_OK=yes || FOREIGN_OK=no ;;
	esac
	if [ "$FOREIGN_OK" = no ]; then
		echo "real-run.sh: FOREIGN_GPU=$FOREIGN_GPU: expected an nvidia-smi index below $NGPU" >&2
		exit 2
	fi
fi

# ---------------------------------------------------------------------
step "0. the machine: host $HOST, $NGPU GPU(s)"
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ) (local: $(date), TZ=${TZ:-unset})"
	echo "hostname: $(hostname) (thermap host name: $HOST)"
	echo "kernel: $(uname -srm)"
	echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)"
	echo "settings: PHASE_IDLE_S=$PHASE_IDLE_S PHASE_ALL_S=$PHASE_ALL_S PHASE_EACH_S=$PHASE_EACH_S PHASE_TAIL_S=$PHASE_TAIL_S RUN_S=$RUN_S FOREIGN_GPU=${FOREIGN_GPU:-none}"
	echo "job arguments: $ARGS"
	echo "CUDA_VISIBLE_DEVICES before the run: $CVD_BEFORE (unset for the run)"
	echo "torchrun: ${TORCHRUN:-$PY -m torch.distributed.run}"
	echo "thermap: $T${LIBS:+ (libraries from $LIBS)}"
	echo "--- nvidia-smi -L"
	nvidia-smi -L
	echo "--- nvidia-smi -q (versions, product names)"
	nvidia-smi -q 2>&1 | tee "$OUT/smi-q.txt" |
		grep -E '^(Driver Version|CUDA Version|Attached GPUs)|Product Name' |
		sed 's/  */ /g'
	echo "--- Python and PyTorch"
	"$PY" - <<'PYEOF'
import sys
print("python", sys.version.split()[0], sys.executable)
try:
    import torch
    print("torch", torch.__version__, "CUDA", torch.version.cuda)
    try:
        print("NCCL", torch.cuda.nccl.version())
    except Exception as e:
        print("NCCL: unknown (%s)" % e)
except Exception as e:
    print("torch: cannot import: %s" % e)
PYEOF
} >"$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
if ! thermap --help >/dev/null 2>&1 && ! thermap topo --help >/dev/null 2>&1; then
	note "thermap ($T) does not run here: every thermap step will fail; the recordings go on"
	ldd "$T" 2>&1 | grep -i 'not found' | sed 's/^/   /'
fi
# the telemetry fields this nvidia-smi knows (an older driver names the
# clock reasons clocks_throttle_reasons and lacks temperature.gpu.tlimit)
fields_ok() {
	fo_out=$(nvidia-smi --query-gpu="$1" --format=csv 2>&1) &&
		case $fo_out in timestamp*) true ;; *) false ;; esac
}
if ! fields_ok "$FIELDS"; then
	F=$(echo "$FIELDS" | sed 's/clocks_event_reasons/clocks_throttle_reasons/; s/,temperature\.gpu\.tlimit//')
	fields_ok "$F" ||
		F=timestamp,index,pci.bus_id,uuid,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu
	note "nvidia-smi refused the telemetry fields $FIELDS; recording $F"
	FIELDS=$F
fi
nvidia-smi topo -m >"$OUT/topo-m.txt" 2>&1
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total --format=csv \
	>"$OUT/gpus.csv" 2>&1
thermap topo --host "$HOST" --local -o "$OUT/cluster.json" 2>"$OUT/topo.err"
rc=$?
cat "$OUT/topo.err"
if [ $rc -ne 0 ]; then
	note "thermap topo --local failed (exit status $rc); the cluster from topo-m.txt and gpus.csv instead"
	thermap topo --host "$HOST" --smi-topo "$OUT/topo-m.txt" --gpus "$OUT/gpus.csv" \
		-o "$OUT/cluster.json" 2>"$OUT/topo-files.err"
	rc=$?
	cat "$OUT/topo-files.err"
	[ $rc -eq 0 ] || note "thermap topo from topo-m.txt and gpus.csv failed too (exit status $rc): no cluster, no plans"
fi

# ---------------------------------------------------------------------
step "1. coupling schedule on every GPU: idle ${PHASE_IDLE_S} s, all ${PHASE_ALL_S} s, each GPU left out ${PHASE_EACH_S} s, idle ${PHASE_TAIL_S} s"
record "$OUT/telemetry-profile.csv"
sleep 3
{
	PYTHON="$PY" sh "$E/../gpu-load.sh" --phases "$OUT/phases.txt" \
		--idle "$PHASE_IDLE_S" --all "$PHASE_ALL_S" --each "$PHASE_EACH_S" \
		--tail "$PHASE_TAIL_S" 2>&1
	echo $? >"$OUT/.gpu-load-rc"
} | tee_keep "$OUT/gpu-load-phases.log"
rc=$(cat "$OUT/.gpu-load-rc" 2>/dev/null) || rc=1
rm -f "$OUT/.gpu-load-rc"
sleep 3
stop_record
[ "$rc" -eq 0 ] || note "gpu-load.sh --phases exited with status $rc (phases.txt has the phases that ran)"
echo "-- phases.txt"
cat "$OUT/phases.txt" 2>/dev/null
profile_plain() {
	run_to "thermap profile" "$OUT/profile-summary.json" \
		thermap profile --host "$HOST" "$OUT/telemetry-profile.csv" \
		-o "$OUT/profile.json" --json-summary
}
if grep -q '^[0-9]' "$OUT/phases.txt" 2>/dev/null; then
	thermap profile --host "$HOST" "$OUT/telemetry-profile.csv" \
		--phases "$OUT/phases.txt" -o "$OUT/profile.json" --json-summary \
		>"$OUT/profile-summary.json"
	rc=$?
	cat "$OUT/profile-summary.json"
	if [ $rc -ne 0 ]; then
		note "thermap profile --phases failed (exit status $rc); profiled without the phases (one profile of the whole recording)"
		profile_plain
	fi
else
	note "no phase ran (phases.txt); profiled without the phases"
	profile_plain
fi

# ---------------------------------------------------------------------
if [ -n "$FOREIGN_GPU" ]; then
	step "2. a foreign matrix load on GPU $FOREIGN_GPU, from now to the end"
	PYTHON="$PY" sh "$E/../gpu-load.sh" --gpus "$FOREIGN_GPU" 86400 \
		>"$OUT/foreign-load.log" 2>&1 &
	FOREIGN_PID=$!
	t_foreign=$(date +%s)
	sleep 10
	if running "$FOREIGN_PID"; then
		wpid=$(sed -n 's/^gpu-load.sh: GPU [0-9]*: pid \([0-9]*\)$/\1/p' \
			"$OUT/foreign-load.log" | head -n 1)
		{
			echo "foreign load: gpu-load.sh --gpus $FOREIGN_GPU (the same bf16 matrix products as the profile's load), beside both job runs"
			echo "gpu: $FOREIGN_GPU"
			echo "uuid: $(sed -n "s/^$FOREIGN_GPU, \(GPU-[^,]*\),.*/\1/p" "$OUT/gpus.csv")"
			echo "pid: ${wpid:-unknown} (the Python process on the GPU; gpu-load.sh's shell: $FOREIGN_PID)"
			echo "started_unix_s: $t_foreign"
		} >"$OUT/foreign.txt"
		cat "$OUT/foreign.txt"
	else
		cat "$OUT/foreign-load.log"
		note "the foreign load on GPU $FOREIGN_GPU ended within 10 s; the runs go on without it"
		echo "foreign load on GPU $FOREIGN_GPU: failed to start (foreign-load.log)" >"$OUT/foreign.txt"
		FOREIGN_PID=
	fi
fi

# PLANDIR LOGDIR TELEMETRY PROCESSES: the job as the plan's launch.txt says
# (PLANDIR -: torchrun's own placement, without a plan); telemetry from 8 s
# before torchrun to 5 s after it; the GPUs' processes 25 s after the
# launch (again 10 and 20 s later while fewer than the ranks show)
launch() {
	l_plan=$1 l_logs=$2 l_tel=$3 l_procs=$4
	rm -rf "$l_logs"
	record "$l_tel"
	sleep 8
	if [ "$l_plan" = - ]; then
		(
			if [ -n "$TORCHRUN" ]; then set -- "$TORCHRUN"; else set -- "$PY" -m torch.distributed.run; fi
					# shellcheck disable=SC2086  # (JOB_ARGS: words)
			exec "$@" --standalone --nproc-per-node="$NGPU" \
				"$E/train.py" --out-dir "$l_logs" --seconds "$RUN_S" $ARGS
		) >"$l_logs.out" 2>&1 &
	else
		(
			set -a
			# shellcheck disable=SC1090  # (the plan's env file)
			. "$l_plan/env/$HOST.env" || exit 1
			set +a
			if [ -n "$TORCHRUN" ]; then set -- "$TORCHRUN"; else set -- "$PY" -m torch.distributed.run; fi
					# shellcheck disable=SC2086  # (JOB_ARGS: words)
			exec "$@" --nnodes="$NNODES" --nproc-per-node="$NPROC_PER_NODE" \
				--node-rank="$NODE_RANK" --rdzv-backend=static \
				--master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" \
				"$E/train.py" --plan "$l_plan" --out-dir "$l_logs" \
				--seconds "$RUN_S" $ARGS
		) >"$l_logs.out" 2>&1 &
	fi
	JOB_PID=$!
	echo "   launched $(basename "$l_plan") (torchrun pid $JOB_PID) at $(date -u +%H:%M:%S) UTC"
	l_t0=$(date +%s)
	l_snap=25
	l_deadline=$((l_t0 + RUN_S + 240))
	while running "$JOB_PID"; do
		l_now=$(date +%s)
		if [ $l_snap -gt 0 ] && [ $((l_now - l_t0)) -ge $l_snap ]; then
			nvidia-smi --query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory \
				--format=csv >"$l_procs" 2>&1
			l_n=$(($(grep -c . "$l_procs") - 1))
			echo "   $l_n process(es) on the GPUs $((l_now - l_t0)) s after the launch ($(basename "$l_procs"))"
			if [ "$l_n" -ge "$NGPU" ] || [ $l_snap -ge 45 ]; then
				l_snap=0
			else
				l_snap=$((l_snap + 10))
			fi
		fi
		if [ "$l_now" -ge "$l_deadline" ]; then
			note "$(basename "$l_logs"): the job ran $((l_now - l_t0)) s, beyond RUN_S + 240 s; stopping it"
			kill "$JOB_PID" 2>/dev/null
			sleep 15
			kill -9 "$JOB_PID" 2>/dev/null
			break
		fi
		sleep 1
	done
	wait "$JOB_PID"
	l_rc=$?
	JOB_PID=
	[ $l_snap -eq 0 ] || note "$(basename "$l_procs"): not taken (the job ended within $l_snap s)"
	echo "   the job ended after $(($(date +%s) - l_t0)) s with status $l_rc"
	sleep 5
	stop_record
	tail -n 15 "$l_logs.out"
	[ $l_rc -eq 0 ] || note "$(basename "$l_logs"): the job exited with status $l_rc (its output: $(basename "$l_logs").out)"
	return $l_rc
}

# NAME PROCESSES OUTPUT TABLE ARGS...: thermap calibrate ARGS -o OUTPUT
# with --processes PROCESSES, or without it when that fails
calibrate() {
	c_name=$1 c_procs=$2 c_out=$3 c_table=$4
	shift 4
	if [ -s "$c_procs" ]; then
		thermap calibrate "$@" --processes "$c_procs" -o "$c_out" >"$c_table"
		c_rc=$?
		[ $c_rc -ne 0 ] || return 0
		note "$c_name: thermap calibrate --processes failed (exit status $c_rc); again without --processes"
	fi
	thermap calibrate "$@" -o "$c_out" >"$c_table"
	c_rc=$?
	[ $c_rc -eq 0 ] || note "$c_name failed (exit status $c_rc)"
	return $c_rc
}

# ---------------------------------------------------------------------
step "3. the job with torchrun's placement (identity), ${RUN_S} s measured"
# a provisional job to make the identity plan with: the placement of the
# identity policy does not depend on the stage times
{
	echo '{"format": "thermap.job/1", "name": "provisional: identity placement only",'
	echo " \"parallel\": {\"tp\": 1, \"dp\": $DP, \"pp\": $PP, \"order\": \"tp-cp-ep-dp-pp\"},"
	echo " \"nproc_per_node\": $NGPU, \"schedule\": {\"kind\": \"1f1b\", \"microbatches\": $MB},"
	s=1
	sep='['
	while [ $s -le "$PP" ]; do
		echo " $sep{\"fwd_ms\": 10, \"bwd_ms\": 20, \"act_mib\": 16}"
		sep=','
		s=$((s + 1))
	done | sed '1s/^ \[/ "stages": [/'
	echo ' ]}'
} >"$OUT/job-provisional.json"
PLAN_ID=-
if [ -s "$OUT/cluster.json" ] && [ -s "$OUT/profile.json" ]; then
	if thermap plan --cluster "$OUT/cluster.json" --profile "$OUT/profile.json" \
		--job "$OUT/job-provisional.json" --policy "$ROOT/policies/identity.json" \
		-o "$OUT/plan-identity" --quiet; then
		PLAN_ID=$OUT/plan-identity
	else
		note "thermap plan (identity, provisional job) failed; the identity run goes without a plan"
	fi
else
	note "no cluster.json or profile.json; the identity run goes without a plan"
fi
launch "$PLAN_ID" "$OUT/logs-identity" "$OUT/telemetry-identity.csv" \
	"$OUT/processes-identity.csv"
run_to "to_job.py (identity run)" "$OUT/job.json" \
	"$PY" "$E/to_job.py" "$OUT/logs-identity" -o - ||
	rm -f "$OUT/job.json"
PROF=$OUT/profile.json
if [ "$PLAN_ID" != - ] && [ -s "$OUT/job.json" ]; then
	echo "-- thermap calibrate on the identity run"
	# the model fitted to the run that just ended: the plan it ran, its
	# telemetry, the job with each rank's measured times
	if calibrate "thermap calibrate (identity run)" "$OUT/processes-identity.csv" \
		"$OUT/profile-calibrated.json" "$OUT/calibrate-identity.txt" \
		--cluster "$OUT/cluster.json" --profile "$OUT/profile.json" \
		--job "$OUT/job.json" --plan "$PLAN_ID" --host "$HOST" \
		"$OUT/telemetry-identity.csv"; then
		PROF=$OUT/profile-calibrated.json
	else
		note "planning with the uncalibrated profile.json"
	fi
fi

# ---------------------------------------------------------------------
step "4. thermap plan with the measured job and $(basename "$PROF"); check; the coolest placement"
SECOND=
if [ -s "$OUT/job.json" ] && [ -s "$PROF" ] && [ -s "$OUT/cluster.json" ]; then
	run_to "thermap plan" "$OUT/plan.txt" thermap plan --cluster "$OUT/cluster.json" --profile "$PROF" \
		--job "$OUT/job.json" -o "$OUT/plan"
	[ ! -s "$OUT/plan/plan.json" ] ||
		run_to "thermap check (plan)" "$OUT/check.txt" thermap check --cluster "$OUT/cluster.json" \
			--job "$OUT/job.json" --plan "$OUT/plan" --profile "$PROF"
	thermap plan --cluster "$OUT/cluster.json" --profile "$PROF" --job "$OUT/job.json" \
		--policy "$ROOT/policies/identity.json" -o "$OUT/plan-identity-measured" \
		--quiet || note "thermap plan (identity, measured job) failed"
	run_to "thermap plan (coolest-held)" "$OUT/plan-coolest.txt" thermap plan --cluster "$OUT/cluster.json" \
		--profile "$PROF" --job "$OUT/job.json" \
		--policy "$ROOT/policies/coolest-held.json" -o "$OUT/plan-coolest"
	VERDICT=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1])).get("decision") or {}
print(d.get("verdict") or "none")' "$OUT/plan/plan.json" 2>/dev/null) || VERDICT=
	if [ -z "$VERDICT" ]; then
		SECOND=plan-coolest
		echo "plan/plan.json: no verdict to read; the second run launches plan-coolest/"
	elif [ "$VERDICT" = keep ] || [ "$VERDICT" = same ]; then
		SECOND=plan-coolest
		echo "plan/: verdict $VERDICT (torchrun's placement kept); the second run launches plan-coolest/, the placement the model predicts coolest, to check the prediction"
	else
		SECOND=plan
		echo "plan/: verdict $VERDICT; the second run launches plan/"
	fi
	if [ ! -s "$OUT/$SECOND/plan.json" ]; then
		note "$SECOND/ was not written"
		if [ $SECOND = plan ] && [ -s "$OUT/plan-coolest/plan.json" ]; then SECOND=plan-coolest
		elif [ $SECOND = plan-coolest ] && [ -s "$OUT/plan/plan.json" ]; then SECOND=plan
		else SECOND=; fi
		[ -z "$SECOND" ] || note "the second run launches $SECOND/ instead"
	fi
	[ "$SECOND" != plan-coolest ] ||
		run_to "thermap check (plan-coolest)" "$OUT/check-coolest.txt" thermap check --cluster "$OUT/cluster.json" \
			--job "$OUT/job.json" --plan "$OUT/plan-coolest" --profile "$PROF"
	echo "-- placements (rank:nvidia-smi index) and predictions"
	"$PY" -c '
import json, os, sys
out, second = sys.argv[1], sys.argv[2]
where = {}
for d in ("plan-identity", "plan-identity-measured", "plan", "plan-coolest"):
    try:
        p = json.load(open(os.path.join(out, d, "plan.json")))
    except (OSError, ValueError):
        continue
    pr = p.get("predicted") or {}
    where[d] = " ".join("%s:%s" % (r.get("rank"), r.get("gpu_index"))
                        for r in p.get("ranks") or [])
    print("%-24s %s; peak %s C, iteration %s ms" % (
        d + "/", where[d], pr.get("peak_temp_c"), pr.get("iteration_ms")))
if second and where.get(second) is not None and \
        where.get(second) == where.get("plan-identity"):
    print("note: %s/ puts every rank where torchrun did: the second run "
          "repeats the identity placement (run-to-run repeatability, not "
          "a prediction for another placement)" % second)' "$OUT" "$SECOND"
else
	note "no job.json, profile or cluster: no plan, no second run"
fi
echo "${SECOND:-none}" >"$OUT/second-run.txt"

# ---------------------------------------------------------------------
if [ -n "$SECOND" ]; then
	step "5. the second run: $SECOND/, as its launch.txt says, ${RUN_S} s measured"
	launch "$OUT/$SECOND" "$OUT/logs-second" "$OUT/telemetry-second.csv" \
		"$OUT/processes-second.csv"
	run_to "to_job.py (second run)" "$OUT/job-second.json" \
		"$PY" "$E/to_job.py" "$OUT/logs-second" -o - ||
		rm -f "$OUT/job-second.json"
	if [ -s "$OUT/job-second.json" ]; then
		echo "-- thermap calibrate on the second run, from $(basename "$PROF")"
		# "predicted before" in this table is what the profile the plan was
		# made with predicted for this placement
		calibrate "thermap calibrate (second run)" "$OUT/processes-second.csv" \
			"$OUT/profile-calibrated-second.json" "$OUT/calibrate-second.txt" \
			--cluster "$OUT/cluster.json" --profile "$PROF" \
			--job "$OUT/job-second.json" --plan "$OUT/$SECOND" --host "$HOST" \
			"$OUT/telemetry-second.csv"
	fi
fi

# ---------------------------------------------------------------------
step "6. comparison"
run_to "compare.py" "$OUT/comparison.md" "$PY" "$E/compare.py" "$OUT"
echo "-- measured against predicted, the identity run (its own calibration):"
cat "$OUT/calibrate-identity.txt" 2>/dev/null || echo "(none)"
echo "-- the second run (\"predicted before\": the prediction made before it ran):"
cat "$OUT/calibrate-second.txt" 2>/dev/null || echo "(none)"

# ---------------------------------------------------------------------
step "7. end"
if [ -n "$FOREIGN_PID" ]; then
	kill "$FOREIGN_PID" 2>/dev/null
	wait "$FOREIGN_PID" 2>/dev/null
	FOREIGN_PID=
	echo "stopped_unix_s: $(date +%s)" >>"$OUT/foreign.txt"
	echo "the foreign load on GPU $FOREIGN_GPU stopped"
fi
big=$(find "$OUT" -type f -size +20M 2>/dev/null)
[ -z "$big" ] || note "large files in OUTDIR: $big"
step ""
echo "== done in $(($(date +%s) - T0)) s; steps:"
cat "$OUT/steps.txt"
if [ -s "$OUT/problems.txt" ]; then
	echo "== problems ($(grep -c . "$OUT/problems.txt")):"
	cat "$OUT/problems.txt"
	exit 1
fi
echo "== no problems"
exit 0
