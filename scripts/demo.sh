#!/bin/sh
# The main job on real data: profile the raw telemetry recorded on a 4xH200
# host (fixtures/h200x4-a/telemetry.csv), plan a job with pp=2, dp=2, tp=1
# whose last stage carries the LM head and loss, check the plan, and show
# what a launcher gets. Everything is written under demo-plan/.
set -eu
T=${1:-build/thermap}
F=fixtures/h200x4-a
mkdir -p demo-plan
echo "== thermap profile (raw nvidia-smi log: 2361 rows, 4 GPUs, 309 s)"
"$T" profile --host h200x4-a $F/telemetry.csv -o demo-plan/profile.json \
	--json-summary
echo
echo "== thermap plan"
"$T" plan --cluster $F/cluster.json --profile demo-plan/profile.json \
	--job $F/job-pp2-dp2.json -o demo-plan/plan
echo
echo "== demo-plan/plan/env/h200x4-a.env"
cat demo-plan/plan/env/h200x4-a.env
echo
echo "== demo-plan/plan/launch.txt"
cat demo-plan/plan/launch.txt
echo
echo "== thermap check"
"$T" check --cluster $F/cluster.json --job $F/job-pp2-dp2.json \
	--plan demo-plan/plan --profile demo-plan/profile.json
