#!/bin/sh
# Replays the real run recorded on a 4xH200 host (fixtures/real/h200x4-vm)
# through thermap, so that the real data keeps guarding the code:
#  - topo: the host's topo -m and GPU list give the cluster its live
#    `thermap topo --local` wrote;
#  - profile: the uniform-load telemetry gives the profile used there;
#  - plan: that cluster, profile and the measured job give the same
#    placement and predictions as the plan that was launched;
#  - check: the new plan passes;
#  - the launch: every rank's logged GPU is the one its plan named, in
#    both runs (identity and thermap).
# THERMAP names the binary (default build/thermap).
set -u
T=${THERMAP:-build/thermap}
R=fixtures/real/h200x4-vm
W=$(mktemp -d "${TMPDIR:-/tmp}/thermap-real.XXXXXX")
trap 'rm -rf "$W"' EXIT
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; }

# "rank uuid" lines of a plan.json (one rank object per line)
ranks() {
	sed -n 's/.*{"rank": \([0-9]*\),.*"uuid": "\([^"]*\)".*/\1 \2/p' "$1"
}
# "rank uuid" lines of a run's logs
logged() {
	for f in "$1"/rank*.jsonl; do
		head -1 "$f" | sed -n 's/.*"rank": \([0-9]*\),.*"gpu_uuid": "\([^"]*\)".*/\1 \2/p'
	done | sort -n
}

"$T" topo --host vm --smi-topo $R/topo-m.txt --gpus $R/gpus.csv >"$W/c.json" 2>/dev/null
if cmp -s "$W/c.json" $R/cluster.json; then ok; else bad "topo: cluster differs from the live one"; fi

"$T" profile --host vm $R/telemetry-uniform.csv -o "$W/p.json" --quiet
if cmp -s "$W/p.json" $R/profile.json; then ok; else bad "profile differs from the one used"; fi

"$T" plan --cluster $R/cluster.json --profile $R/profile.json --job $R/job.json -o "$W/plan" --quiet
if [ "$(ranks "$W/plan/plan.json")" = "$(ranks $R/plan/plan.json)" ] &&
   [ "$(ranks $R/plan/plan.json | wc -l)" = 4 ]; then ok
else bad "plan: placement differs from the launched one"; fi
for k in iteration_ms peak_temp_c; do
	a=$(grep -m1 "\"$k\"" "$W/plan/plan.json")
	b=$(grep -m1 "\"$k\"" $R/plan/plan.json)
	if [ "$a" = "$b" ]; then ok; else bad "plan: $k $a, launched plan $b"; fi
done
if "$T" check --cluster $R/cluster.json --job $R/job.json --plan "$W/plan" \
	--profile $R/profile.json >/dev/null; then ok; else bad "check failed on the replayed plan"; fi

for run in identity:plan-identity thermal:plan; do
	logs=${run%%:*} plan=${run#*:}
	if [ "$(logged $R/logs-$logs)" = "$(ranks $R/$plan/plan.json)" ] &&
	   [ "$(logged $R/logs-$logs | wc -l)" = 4 ]; then ok
	else bad "$logs run: a rank ran on another GPU than its plan named"; fi
done

echo "real run replay: $pass passed, $fail failed"
[ "$fail" = 0 ]
