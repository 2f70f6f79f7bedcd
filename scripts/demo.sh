#!/bin/sh
# Plans the real 4xH200 host recorded in fixtures/h200x4-a for a job with
# pp=2, dp=2, tp=1 whose last stage carries the LM head and loss, then
# checks the plan and shows what a launcher gets.
set -eu
T=${1:-build/thermap}
F=fixtures/h200x4-a
echo "== thermap plan (real 4xH200 recording, job pp=2 dp=2 tp=1)"
"$T" plan --cluster $F/cluster.json --profile $F/profile.json \
	--job $F/job-pp2-dp2.json -o demo-plan
echo
echo "== demo-plan/env/h200x4-a.env"
cat demo-plan/env/h200x4-a.env
echo
echo "== demo-plan/launch.txt"
cat demo-plan/launch.txt
echo
echo "== thermap check"
"$T" check --cluster $F/cluster.json --job $F/job-pp2-dp2.json \
	--plan demo-plan --profile $F/profile.json
