#!/bin/sh
# replan-loop.sh — an example of training with thermap between checkpoints
# (docs/replan.md): profile -> plan -> run -> calibrate -> replan. Each
# round: launch the plan's ranks, train to the next checkpoint while
# nvidia-smi logs the GPUs, calibrate the profile on the last window of
# that log (thermap calibrate: each GPU's waiting power, derate and fit
# spread, as the plan that ran measured them; docs/calibrate.md), ask
# thermap replan with the calibrated profile whether another placement is
# worth a restart, and relaunch from the checkpoint with the new env files
# if it wrote one (exit 0); otherwise (exit 3) go on with the same plan.
#
# It runs on one host as written (one env file, one torchrun); on several
# hosts, run the launch step on each host with its env/<host>.env, as
# launch.txt in the plan directory shows.
#
# usage: scripts/replan-loop.sh CLUSTER JOB PLAN_DIR ROUNDS -- TRAIN_COMMAND...
#   CLUSTER   thermap.cluster/1 of the machines (thermap topo)
#   JOB       thermap.job/1 of the training job
#   PLAN_DIR  the plan to start from (thermap plan); replaced when replan
#             writes a better one; PLAN_DIR.history/ keeps each plan
#   ROUNDS    how many checkpoint rounds to run
#   TRAIN_COMMAND...  the training script and its arguments; it must train
#             to the next checkpoint and exit 0 (resuming from the last
#             checkpoint when there is one)
# Environment:
#   THERMAP      the thermap binary (default: thermap)
#   MIN_GAIN     replan's --min-gain (default 1%,2C)
#   POLICY       a policy file for replan (default: the built-in thermal)
#   WINDOW_S     seconds at the end of a round to calibrate on (default 600)
#   BASELINE     the profile the first plan was made with, from a log that
#                idles and loads every GPU (default: PLAN_DIR.baseline.json,
#                made by you with thermap profile); each round calibrates
#                the last round's calibrated profile, starting from it
#   NODE_HOST    this host's name in the cluster (default: hostname)
set -eu

if [ $# -lt 6 ] || [ "$5" != -- ]; then
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
fi
cluster=$1 job=$2 plan=$3 rounds=$4
shift 5
T=${THERMAP:-thermap}
min_gain=${MIN_GAIN:-1%,2C}
window=${WINDOW_S:-600}
baseline=${BASELINE:-$plan.baseline.json}
host=${NODE_HOST:-$(hostname)}
mkdir -p "$plan.history"
profile=$baseline

round=1
while [ "$round" -le "$rounds" ]; do
	log=$plan.history/round-$round.csv
	# telemetry of this round, every 500 ms, in the background
	t0=$(date +%s)
	nvidia-smi --query-gpu=timestamp,index,pci.bus_id,uuid,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_power_cap,temperature.gpu.tlimit \
		--format=csv -lms 500 -f "$log" &
	smi=$!
	# the plan's environment: CUDA_VISIBLE_DEVICES, NODE_RANK, ...
	set -a
	# shellcheck disable=SC1090
	. "$plan/env/$host.env"
	set +a
	echo "round $round: plan $THERMAP_PLAN"
	torchrun --nnodes="$NNODES" --nproc-per-node="$NPROC_PER_NODE" \
		--node-rank="$NODE_RANK" --rdzv-backend=static \
		--master-addr="$MASTER_ADDR" --master-port="$MASTER_PORT" "$@"
	kill "$smi" 2>/dev/null || true
	wait "$smi" 2>/dev/null || true

	# the last window of the round (seconds after the log's first
	# sample): the profile calibrated on what the plan that ran measured
	from=$(( $(date +%s) - t0 - window ))
	[ "$from" -ge 0 ] || from=0
	cal=$plan.history/profile-$round.json
	if "$T" calibrate --cluster "$cluster" --profile "$profile" --job "$job" \
		--plan "$plan" --host "$host" --from "+$from" "$log" -o "$cal" \
		>"$plan.history/calibrate-$round.txt"; then
		profile=$cal
	else
		echo "round $round: thermap calibrate failed; replanning with $profile" >&2
	fi
	rc=0
	"$T" replan --previous "$plan" --cluster "$cluster" --job "$job" \
		--profile "$profile" \
		${POLICY:+--policy "$POLICY"} --min-gain "$min_gain" \
		-o "$plan.next" >"$plan.history/decision-$round.json" || rc=$?
	case $rc in
	0)	# a better placement: keep the old plan, switch to the new one;
		# the next launch resumes from the checkpoint on the new GPUs
		"$T" diff "$plan" "$plan.next" || true
		mv "$plan" "$plan.history/plan-$round"
		mv "$plan.next" "$plan"
		;;
	3)	echo "round $round: keeping the plan ($(cat "$plan.history/decision-$round.json"))"
		;;
	*)	echo "round $round: thermap replan failed (exit $rc); keeping the plan" >&2
		;;
	esac
	round=$((round + 1))
done
