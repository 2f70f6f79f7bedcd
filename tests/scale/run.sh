#!/bin/sh
# The planner past the size of the direct integer program: on a synthetic
# 512-GPU cluster (build/gen_cluster: 64 hosts of 8 GPUs, tp4 pp8 dp16),
# 'thermap plan' with the ilp policy takes the greedy+bound path, proves a
# gap of at most 1 % against the bounds of docs/model.md section 11, is at
# least as fast as the greedy and identity plans, passes 'thermap check',
# and writes byte-identical plans on two runs. A 64-GPU job (8 hosts) is
# solved both ways -- greedy+bound and, forced by THERMAP_DIRECT_MAX, the
# direct program -- and the direct program's proven bound must not lie
# above the greedy+bound placement's time, nor the greedy+bound bound above
# the direct program's placement.
# THERMAP names the binary (build/thermap by default); GEN the generator.
set -u
T=${THERMAP:-build/thermap}
G=${GEN:-build/gen_cluster}
W=$(mktemp -d "${TMPDIR:-/tmp}/thermap-scale.XXXXXX")
trap 'rm -rf "$W"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; }
num() { sed -n "s/^    \"$2\": \\([-0-9.eE+]*\\).*/\\1/p" "$1" | head -1; }
str() { sed -n "s/^    \"$2\": \"\\([^\"]*\\)\".*/\\1/p" "$1" | head -1; }
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
	[ "$(str "$j" status)" = feasible ] && ok || bad "512: status $(str "$j" status)"
	[ "$(str "$j" formulation)" = greedy+bound ] && ok ||
		bad "512: formulation $(str "$j" formulation)"
	gap=$(num "$j" gap)
	le "$gap" 0.01 && ok || bad "512: gap $gap above 1 %"
	t=$(num "$j" iteration_ms)
	obj=$(num "$j" objective)
	bnd=$(num "$j" bound)
	le "$bnd" "$obj" && ok || bad "512: bound $bnd above objective $obj"
	for o in pg pi; do
		to=$(num "$W/$o/plan.json" iteration_ms)
		le "$t" "$to" && ok || bad "512: ilp plan $t ms slower than $o $to ms"
	done
	diff -r "$W/p1" "$W/p2" >/dev/null && ok || bad "512: two runs differ"
	"$T" check --cluster "$W/512/cluster.json" --job "$W/512/job.json" \
		--profile "$W/512/profile.json" --plan "$W/p1" >/dev/null 2>&1 &&
		ok || bad "512: thermap check rejects the plan"
else
	bad "512: thermap plan failed"
fi

# 64 GPUs, both ways (the direct program with a short limit)
"$G" 8 2 8 4 "$W/64" || { echo "scale: generator failed"; exit 1; }
sed 's/"time_limit_s": *[0-9.]*/"time_limit_s": 3/' policies/thermal.json \
	>"$W/thermal-3.json"
if plan "$W/64" "$W/thermal-3.json" "$W/h" &&
   plan "$W/64" "$W/thermal-3.json" "$W/d" THERMAP_DIRECT_MAX=1e18; then
	ok
	[ "$(str "$W/d/plan.json" formulation)" = "integer program" ] && ok ||
		bad "64: direct run used $(str "$W/d/plan.json" formulation)"
	th=$(num "$W/h/plan.json" objective)
	bh=$(num "$W/h/plan.json" bound)
	td=$(num "$W/d/plan.json" objective)
	bd=$(num "$W/d/plan.json" bound)
	le "$bd" "$th" && ok || bad "64: direct bound $bd above greedy+bound time $th"
	le "$bh" "$td" && ok || bad "64: greedy+bound bound $bh above direct time $td"
else
	bad "64: thermap plan failed"
fi

echo "scale: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
