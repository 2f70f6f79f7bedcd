#!/bin/sh
# The main job on real data, from what the 4xH200 host reported: the cluster
# from its `nvidia-smi topo -m`, `nvidia-smi -q` and hwloc XML, the profile
# from its raw telemetry log; then plan a job with pp=2, dp=2, tp=1 whose
# last stage carries the LM head and loss, check the plan, and show what a
# launcher gets. Everything is written under demo-plan/.
set -eu
T=${1:-build/thermap}
F=fixtures/h200x4-a
mkdir -p demo-plan
echo "== thermap topo (topo -m, nvidia-smi -q, hwloc XML of the host)"
"$T" topo --host h200x4-a --smi-topo $F/topo-m.txt --gpus $F/smi-q.txt \
	--hwloc $F/hwloc.xml -o demo-plan/cluster.json
cat demo-plan/cluster.json
echo
echo "== thermap profile (raw nvidia-smi log: 2361 rows, 4 GPUs, 309 s)"
"$T" profile --host h200x4-a $F/telemetry.csv -o demo-plan/profile.json \
	--json-summary
echo
echo "== thermap plan"
"$T" plan --cluster demo-plan/cluster.json --profile demo-plan/profile.json \
	--job $F/job-pp2-dp2.json -o demo-plan/plan
echo
echo "== demo-plan/plan/env/h200x4-a.env"
cat demo-plan/plan/env/h200x4-a.env
echo
echo "== demo-plan/plan/launch.txt"
cat demo-plan/plan/launch.txt
echo
echo "== thermap check"
"$T" check --cluster demo-plan/cluster.json --job $F/job-pp2-dp2.json \
	--plan demo-plan/plan --profile demo-plan/profile.json
