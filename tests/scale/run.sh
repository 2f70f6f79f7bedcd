#!/bin/sh
# The planner past the size of the direct integer program: on a synthetic
# 512-GPU cluster (build/gen_cluster: 64 hosts of 8 GPUs in two network
# groups, tp4 pp8 dp16), 'thermap plan' with the ilp policy takes the host
# decomposition, proves a gap of at most 1 %, finds a time at least as good
# as the greedy and identity plans and keeps its plan within the policy's
# 1 % of it, passes 'thermap check', and writes byte-identical plans on two
# runs. Two 64-GPU jobs (8 hosts) are solved both ways -- the host
# decomposition and, forced by THERMAP_DIRECT_ONLY, the direct program with
# a short limit: neither's proven bound may lie above the other's time, and
# where the decomposition proves its time optimal the direct program finds
# nothing faster.
# THERMAP names the binary (build/thermap by default); GEN the generator.
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble scale
G=${GEN:-build/gen_cluster}
# the fields read from plan.json ("solver", "predicted") are indented four
# spaces: num and str match there only
I='    '
# le A B: A <= B (+1e-9 relative)
le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 1e-9 * (b < 0 ? -b : b)) }'; }

plan() {  # dir policy out [env...]
	d=$1 pol=$2 out=$3
	shift 3
	env "$@" "$T" plan --cluster "$d/cluster.json" --profile "$d/profile.json" \
		--job "$d/job.json" --policy "$pol" -o "$out" --quiet
}

# 512 GPUs
"$G" 64 4 8 16 "$W/512" || { echo "scale: generator failed"; exit 1; }
if plan "$W/512" policies/thermal.json "$W/p1" &&
   plan "$W/512" policies/thermal.json "$W/p2" &&
   plan "$W/512" policies/greedy.json "$W/pg" &&
   plan "$W/512" policies/identity.json "$W/pi"; then
	ok
	j=$W/p1/plan.json
	[ "$(str "$j" status "$I")" = feasible ] && ok || bad "512: status $(str "$j" status "$I")"
	[ "$(str "$j" formulation "$I")" = "host decomposition" ] && ok ||
		bad "512: formulation $(str "$j" formulation "$I")"
	gap=$(num "$j" gap "$I")
	le "$gap" 0.01 && ok || bad "512: gap $gap above 1 %"
	t=$(num "$j" iteration_ms "$I")
	obj=$(num "$j" objective "$I")
	bnd=$(num "$j" bound "$I")
	le "$bnd" "$obj" && ok || bad "512: bound $bnd above objective $obj"
	for o in pg pi; do
		to=$(num "$W/$o/plan.json" iteration_ms "$I")
		le "$obj" "$to" && ok || bad "512: best time $obj ms slower than $o $to ms"
		le "$t" "$(awk -v x="$obj" 'BEGIN { print x * 1.01 }')" && ok ||
			bad "512: plan $t ms beyond 1 % of the best time $obj ms"
	done
	diff -r "$W/p1" "$W/p2" >/dev/null && ok || bad "512: two runs differ"
	"$T" check --cluster "$W/512/cluster.json" --job "$W/512/job.json" \
		--profile "$W/512/profile.json" --plan "$W/p1" >/dev/null 2>&1 &&
		ok || bad "512: thermap check rejects the plan"
else
	bad "512: thermap plan failed"
fi

# 64 GPUs, both ways (the direct program with a short limit)
sed 's/"time_limit_s": *[0-9.]*/"time_limit_s": 3/' policies/thermal.json \
	>"$W/thermal-3.json"
for job in "2 8 4" "1 16 4"; do
	# shellcheck disable=SC2086
	set -- $job
	n=64-tp$1pp$2
	"$G" 8 "$1" "$2" "$3" "$W/$n" || { echo "scale: generator failed"; exit 1; }
	if plan "$W/$n" "$W/thermal-3.json" "$W/$n-h" &&
	   plan "$W/$n" "$W/thermal-3.json" "$W/$n-d" THERMAP_DIRECT_ONLY=1 \
			THERMAP_DIRECT_MAX=1e18; then
		ok
		[ "$(str "$W/$n-h/plan.json" formulation "$I")" = "host decomposition" ] &&
			ok || bad "$n: used $(str "$W/$n-h/plan.json" formulation "$I")"
		[ "$(str "$W/$n-d/plan.json" formulation "$I")" = "integer program" ] &&
			ok || bad "$n: direct run used $(str "$W/$n-d/plan.json" formulation "$I")"
		th=$(num "$W/$n-h/plan.json" objective "$I")
		bh=$(num "$W/$n-h/plan.json" bound "$I")
		td=$(num "$W/$n-d/plan.json" objective "$I")
		bd=$(num "$W/$n-d/plan.json" bound "$I")
		le "$bd" "$th" && ok || bad "$n: direct bound $bd above decomposition time $th"
		le "$bh" "$td" && ok || bad "$n: decomposition bound $bh above direct time $td"
		if [ "$(str "$W/$n-h/plan.json" status "$I")" = optimal ]; then
			le "$th" "$td" && ok || bad "$n: direct time $td below the proven optimum $th"
		fi
		"$T" check --cluster "$W/$n/cluster.json" --job "$W/$n/job.json" \
			--profile "$W/$n/profile.json" --plan "$W/$n-h" >/dev/null 2>&1 &&
			ok || bad "$n: thermap check rejects the plan"
	else
		bad "$n: thermap plan failed"
	fi
done

finish
