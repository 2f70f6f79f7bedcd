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
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "real run replay" "$@"
R=fixtures/real/h200x4-vm
E=tests/real/expected

# "rank uuid" lines of a run's logs
logged() {
	for f in "$1"/rank*.jsonl; do
		head -1 "$f" | sed -n 's/.*"rank": \([0-9]*\),.*"gpu_uuid": "\([^"]*\)".*/\1 \2/p'
	done | sort -n
}

# (but for numa_node, which the recording predates)
"$T" topo --host vm --smi-topo $R/topo-m.txt --gpus $R/gpus.csv 2>/dev/null |
	sed 's/, "numa_node": [0-9]*}/}/' >"$W/c.json"
if cmp -s "$W/c.json" $R/cluster.json; then ok; else bad "topo: cluster differs from the live one"; fi

# the recorded profile predates the fields that say how sure each value
# is (temp_fit_sd_c, derate_sd, derate_basis): every field it has must
# come out the same
"$T" profile --host vm $R/telemetry-uniform.csv -o "$W/p.json" --quiet
sed -e '/"temp_fit_sd_c"/d' -e '/"derate_sd"/d' -e '/"derate_basis"/d' \
	-e 's/"derate": \([0-9.]*\),$/"derate": \1/' "$W/p.json" >"$W/p-old.json"
if cmp -s "$W/p-old.json" $R/profile.json; then ok; else bad "profile differs from the one used"; fi

"$T" plan --cluster $R/cluster.json --profile $R/profile.json --job $R/job.json -o "$W/plan" --quiet
if [ "$(ranks "$W/plan/plan.json")" = "$(ranks $R/plan/plan.json)" ] &&
   [ "$(ranks $R/plan/plan.json | wc -l)" = 4 ]; then ok
else bad "plan: placement differs from the launched one"; fi
a=$(grep -m1 '"iteration_ms"' "$W/plan/plan.json")
b=$(grep -m1 '"iteration_ms"' $R/plan/plan.json)
if [ "$a" = "$b" ]; then ok; else bad "plan: iteration_ms $a, launched plan $b"; fi
if "$T" check --cluster $R/cluster.json --job $R/job.json --plan "$W/plan" \
	--profile $R/profile.json >/dev/null; then ok; else bad "check failed on the replayed plan"; fi

for run in identity:plan-identity thermal:plan; do
	logs=${run%%:*} plan=${run#*:}
	if [ "$(logged $R/logs-$logs)" = "$(ranks $R/$plan/plan.json)" ] &&
	   [ "$(logged $R/logs-$logs | wc -l)" = 4 ]; then ok
	else bad "$logs run: a rank ran on another GPU than its plan named"; fi
done

# Predicted beside measured, per GPU, for both runs: the model's steady
# temperature and power of each rank against the means of the run's
# settled samples under load (thermap profile of its telemetry). The table
# is pinned (tests/real/expected/predicted-vs-measured.txt; --update
# rewrites it) and every GPU must be within BOUND_C, the bound
# docs/real-run.md reports.
BOUND_C=2.5
"$T" plan --cluster $R/cluster.json --profile $R/profile.json --job $R/job.json \
	--policy policies/identity.json -o "$W/plan-id" --quiet
# "index temp power" of a profile's entries
measured() {
	awk '/"index":/ { gsub(/[^0-9]/, "", $2); i = $2 }
	     /"temp_load_c":/ { gsub(/[^0-9.]/, "", $2); t = $2 }
	     /"power_load_w":/ { gsub(/[^0-9.]/, "", $2); print i, t, $2 }' "$1"
}
# "gpu temp power stage" of a plan's ranks
predicted() {
	sed -n 's/.*"gpu_index": \([0-9]*\),.*"pp": \([0-9]*\),.*"power_w": \([0-9.]*\), "predicted_temp_c": \([0-9.]*\),.*/\1 \4 \3 \2/p' "$1"
}
{
	echo "run       GPU stage  predicted °C  measured °C  error °C  predicted W  measured W"
	for run in identity:plan-id thermal:plan; do
		logs=${run%%:*} plan=${run#*:}
		"$T" profile --host vm $R/telemetry-$logs.csv -o "$W/m-$logs.json" --quiet
		measured "$W/m-$logs.json" | sort -n >"$W/m"
		predicted "$W/$plan/plan.json" | sort -n >"$W/p"
		join "$W/p" "$W/m" | awk -v run=$logs '{
			e = sprintf("%+.1f", $2 - $5); if (e == "-0.0") e = "+0.0"
			printf "%-9s %3d %5d  %12.1f  %11.1f  %8s  %11.0f  %10.0f\n",
			       run, $1, $4, $2, $5, e, $3, $6 }'
	done
} >"$W/table"
cp "$W/table" "$W/predicted-vs-measured.txt"
pinned predicted-vs-measured.txt
if [ "$(awk 'NR > 1' "$W/table" | wc -l)" = 8 ] &&
   awk -v b=$BOUND_C 'NR > 1 && ($6 > b || $6 < -b) { exit 1 }' "$W/table"; then ok
else bad "a GPU's predicted temperature is more than $BOUND_C °C off:"; cat "$W/table"; fi

finish
