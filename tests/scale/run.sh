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
# Then check, replan and diff at 8,192 GPUs (1,025 hosts, one spare; tp2
# pp4 dp1024 with each node one tensor- and pipeline-parallel block):
# check confirms a plan whose policy asks for tp_nvlink and pp_nvlink, and
# names the first pair a host without NVLink breaks, the same pair the
# pairwise search named; with a host gone, replan takes the repair (past
# the exact program's size), moves only that host's node to the spare, and
# its plan passes check --previous and diff.
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

# 1,024 GPUs on 129 hosts, past the host decomposition: greedy+bound, a
# proven gap per criterion, and the peak lowered after the time (a spare
# host to leave the hottest for)
"$G" 129 8 16 8 "$W/129" || { echo "scale: generator failed"; exit 1; }
if plan "$W/129" policies/thermal.json "$W/q1"; then
	ok
	j=$W/q1/plan.json
	[ "$(str "$j" formulation "$I")" = greedy+bound ] && ok ||
		bad "129 hosts: formulation $(str "$j" formulation "$I")"
	gaps=$(sed -n 's/^    "gaps": \(.*\),$/\1/p' "$j")
	gt=$(echo "$gaps" | sed -n 's/.*"time": \([0-9.e-]*\).*/\1/p')
	gp=$(echo "$gaps" | sed -n 's/.*"peak_temp": \([0-9.e-]*\).*/\1/p')
	[ "$gt" = "$(num "$j" gap "$I")" ] && ok ||
		bad "129 hosts: gaps.time '$gt' is not the gap $(num "$j" gap "$I")"
	[ -n "$gp" ] && le 0 "$gp" && le "$gp" 0.1 && ok ||
		bad "129 hosts: no proven peak gap in [0, 10 %]: $gaps"
	gw=$(echo "$gaps" | sed -n 's/.*"wear": \([0-9.e-]*\).*/\1/p')
	[ -n "$gw" ] && le 0 "$gw" && le "$gw" 0.1 && ok ||
		bad "129 hosts: no proven wear gap in [0, 10 %]: $gaps"
	# moves: a proven gap (the bound of docs/model.md, 11), in [0, 1]
	gm=$(echo "$gaps" | sed -n 's/.*"moves": \([0-9.e-]*\).*/\1/p')
	[ -n "$gm" ] && le 0 "$gm" && le "$gm" 1 && ok ||
		bad "129 hosts: no proven moves gap in [0, 1]: $gaps"
	pk=$(num "$j" peak_temp_c "$I")
	le "$pk" 73 && ok || bad "129 hosts: peak $pk °C; the cooling pass reaches 72.4"
else
	bad "129 hosts: plan failed"
fi

# 8,192 GPUs: check, replan with a host gone, diff
S=$W/8k
"$G" 1025 2 4 1024 "$S" || { echo "scale: generator failed"; exit 1; }
sed 's/"order": "tp-cp-ep-dp-pp"/"order": "tp-pp-cp-ep-dp"/' "$S/job.json" >"$S/job-node.json"
sed 's/"tp_nvlink": false, "pp_nvlink": false/"tp_nvlink": true, "pp_nvlink": true/' \
	policies/identity.json >"$S/nvlink.json"
grep -q '"order": "tp-pp-cp-ep-dp"' "$S/job-node.json" &&
	grep -q '"tp_nvlink": true, "pp_nvlink": true' "$S/nvlink.json" ||
	{ echo "scale: the generated job or policies/identity.json changed form"; exit 1; }
SJ="--job $S/job-node.json --profile $S/profile.json"
# shellcheck disable=SC2086
expect 0 8k-plan "$T" plan --cluster "$S/cluster.json" $SJ --policy "$S/nvlink.json" \
	-o "$S/p" --quiet
# shellcheck disable=SC2086
expect 0 8k-check "$T" check --cluster "$S/cluster.json" $SJ --plan "$S/p"
has 8k-check "$W/8k-check.out" "8192 ranks on 1024 node(s)"
has 8k-check "$W/8k-check.out" "tp_nvlink holds; pp_nvlink holds; predictions reproduced"
# host gpu-0700 (node 700: ranks 5600-5607, tp fastest, then pp) without
# NVLink: the plan as made, with plan.json asking for each constraint
awk '/"host": "gpu-0700"/ { on = 1 } /"link_gb_per_s"/ { on = 0 }
	on && /^ *\[/ { gsub(/NV18/, "PIX") } { print }' "$S/cluster.json" >"$S/pix.json"
# shellcheck disable=SC2086
expect 0 8k-pix-plan "$T" plan --cluster "$S/pix.json" $SJ --policy policies/identity.json \
	-o "$S/x" --quiet
for c in tp pp; do
	cp -r "$S/x" "$S/x-$c"
	sed "s/\"${c}_nvlink\": false/\"${c}_nvlink\": true/" "$S/x/plan.json" >"$S/x-$c/plan.json"
	expect 4 "8k-pix-$c" "$T" check --cluster "$S/pix.json" --job "$S/job-node.json" \
		--plan "$S/x-$c"
done
one_line 8k-pix-tp "$S/x-tp: tp_nvlink: ranks 5600 (gpu-0700 GPU 0) and 5601 (gpu-0700 GPU 1) are not joined by NVLink"
one_line 8k-pix-pp "$S/x-pp: pp_nvlink: ranks 5600 (gpu-0700 GPU 0) and 5602 (gpu-0700 GPU 2) are not joined by NVLink"
# host gpu-1023 (node 1023) gone; gpu-1024 is free
awk '/^    [{]$/ { held = $0; next }
	held != "" { if ($0 ~ /"host": "gpu-1023"/) skip = 1; else print held; held = "" }
	skip { if ($0 ~ /^    [}],?$/) skip = 0; next }
	{ print }' "$S/cluster.json" >"$S/lost.json"
if grep -q '"gpu-1023"' "$S/lost.json" || ! grep -q '"gpu-1024"' "$S/lost.json"; then
	echo "scale: the generated cluster changed form"; exit 1
fi
# shellcheck disable=SC2086
expect 0 8k-replan "$T" replan --previous "$S/p" --cluster "$S/lost.json" $SJ \
	--policy "$S/nvlink.json" -o "$S/r" --quiet
has 8k-replan "$W/8k-replan.out" '"decision": "repair"'
has 8k-replan "$W/8k-replan.out" '"fewest_moves": 8, "moved_ranks": 8'
[ "$(str "$S/r/plan.json" formulation "$I")" = repair ] && ok ||
	bad "8k: the least change used $(str "$S/r/plan.json" formulation "$I"), not the repair"
# the repair's moves are proven least: the 8 ranks whose GPUs are gone
[ "$(num "$S/r/plan.json" bound "$I")" = 8 ] && [ "$(num "$S/r/plan.json" gap "$I")" = 0 ] &&
	[ "$(str "$S/r/plan.json" status "$I")" = feasible ] && ok ||
	bad "8k: the repair's solver is not feasible with bound 8, gap 0"
grep -q '^    "gaps": {"moves": 0, "time": null, "peak_temp": null, "wear": null},$' "$S/r/plan.json" &&
	ok || bad "8k: the repair's gaps are not moves 0 and none for the rest"
[ "$(grep -cE '"rank": (818[4-9]|819[01]), "from": "gpu-1023:[0-7]", "to": "gpu-1024:[0-7]"' \
	"$S/r/plan.json")" = 8 ] && ok || bad "8k: replan moved other ranks than node 1023's to gpu-1024"
# shellcheck disable=SC2086
expect 0 8k-check-replan "$T" check --cluster "$S/lost.json" $SJ --plan "$S/r" --previous "$S/p"
has 8k-check-replan "$W/8k-check-replan.out" "replan moves match the previous plan"
expect 0 8k-diff "$T" diff "$S/p" "$S/r"
has 8k-diff "$W/8k-diff.out" ": 8 of 8192 ranks move"
[ "$(grep -c 'gpu-1023 GPU [0-7] -> gpu-1024 GPU [0-7]: forced: host gpu-1023 is not in' "$W/8k-diff.out")" = 8 ] &&
	ok || bad "8k: diff does not list node 1023's 8 forced moves"

finish
