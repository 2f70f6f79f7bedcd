#!/bin/sh
# Replays the three real runs of the whole loop (fixtures/real/
# h200x4-loop-*: two 4xH200 hosts, one run with another process on GPU 2)
# through thermap, and holds every claim the default plan makes against
# what the runs measured:
#  - profile: phases.txt gives the recorded profile (its 20-s idle phase
#    counted for nothing, so no coupling); load-phases.txt gives every
#    GPU a coupling, and the pairs that heat each other are the ones the
#    recording shows;
#  - the loop as it ran (the recorded profile and jobs): calibrate on the
#    identity run and plan: the placement and verdict that were launched;
#  - the loop as it stands (the coupled profile, the jobs as to_job.py
#    now writes them): calibrate, plan; the placement the recording ran
#    (or, with the foreign process, one that takes the heavy stage off
#    its GPU), and the prediction of the run the plan did not calibrate
#    on, per GPU, within HELD_C of what it measured (the table is pinned:
#    tests/real/expected/loop-*.txt; --update rewrites it);
#  - the claims: on every committed real recording with two measured
#    placements (these three and fixtures/real/h200x4-vm), the default
#    plan's claimed peak drop is within two of its standard uncertainties
#    of the drop the runs measured, and a plan that moved without trading
#    is measured neither hotter at its peak (beyond a whole degree) nor
#    slower (beyond the 0.5 % run-to-run floor) than torchrun's placement;
#    a trade is measured faster, as it claimed.
# THERMAP names the binary (default build/thermap); jq reads the JSON.
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble "real loop replay" "$@"
E=tests/real/expected
HELD_C=1.5
command -v jq >/dev/null 2>&1 || { skipped loop jq "jq reads plan.json"; finish; exit; }

# "rank gpu measured predicted-before error" of a calibrate table
table() {
	awk '/^rank stage/ { on = 1; next } on && /^ *[0-9]/ {
	     split($3, g, ":"); print $1, g[2], $5, $8, $9 } /^mean/ { on = 0 }' "$1"
}
# the hottest measured GPU of a calibrate table
hottest() { table "$1" | awk 'NR == 1 || $3 > m { m = $3 } END { print m }'; }
ranks() { jq -c '[.ranks[].gpu_index]' "$1"; }
# x ≤ y
le() { awk -v x="$1" -v y="$2" 'BEGIN { exit !(x <= y) }'; }

# CLAIM NAME PLAN ID_TABLE SECOND_TABLE ID_MS SECOND_MS: the plan's claims
# against the two measured runs
claim() {
	n=$1 pj=$2
	v=$(jq -r '.decision.verdict' "$pj")
	pc=$(jq -r '.decision.gain.peak_c' "$pj")
	ps=$(jq -r '.decision.gain.peak_sd_c' "$pj")
	tp=$(jq -r '.decision.gain.time_pct' "$pj")
	ts=$(jq -r '.decision.gain.time_sd_pct' "$pj")
	trade=$(jq -r '.decision.reason | test("trading")' "$pj")
	a=$(hottest "$3") b=$(hottest "$4")
	md=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", a - b }')
	mt=$(awk -v a="$5" -v b="$6" 'BEGIN { printf "%.2f", (a - b) / a * 100 }')
	printf '%-34s %-4s claimed peak %6.2f ± %.2f °C, measured %6.2f; time %6.2f ± %.2f %%, measured %6.2f\n' \
		"$n" "$v" "$pc" "$ps" "$md" "$tp" "$ts" "$mt" >>"$W/claims.txt"
	if awk -v c="$pc" -v s="$ps" -v m="$md" \
	   'BEGIN { d = c - m; if (d < 0) d = -d; exit !(d <= 2 * s) }'; then ok
	else bad "$n: claimed a peak $pc ± $ps °C cooler, measured $md"; fi
	[ "$v" = move ] || return 0
	if [ "$trade" = true ]; then
		le 0 "$mt" && ok || bad "$n: a trade for time, measured $mt % slower"
	else
		le "$b" "$(awk -v a="$a" 'BEGIN { print a + 1 }')" && ok ||
			bad "$n: moved, and measured hotter at its peak: $a → $b °C"
		le -0.5 "$mt" && ok ||
			bad "$n: moved, and measured $mt % faster (slower beyond 0.5 %)"
	fi
}
: >"$W/claims.txt"

for rec in m1 m1-foreign m2; do
	R=fixtures/real/h200x4-loop-$rec
	CL="--cluster $R/cluster.json"
	PR="--processes $R/processes-identity.csv"
	PR2="--processes $R/processes-second.csv"
	second=$(cat "$R/second-run.txt")
	jid=$R/job.json jsec=$R/job-second.json
	[ -f "$R/job-replay.json" ] && jid=$R/job-replay.json
	[ -f "$R/job-second-replay.json" ] && jsec=$R/job-second-replay.json

	# the profiles: as recorded, and with the phases that count
	"$T" profile --host vm "$R/telemetry-profile.csv" --phases "$R/phases.txt" \
		-o "$W/p.json" --quiet 2>/dev/null
	cmp -s "$W/p.json" "$R/profile.json" && ok ||
		bad "$rec: profile --phases phases.txt differs from the recorded profile"
	"$T" profile --host vm "$R/telemetry-profile.csv" --phases "$R/load-phases.txt" \
		-o "$W/pc.json" --quiet 2>/dev/null
	[ "$(jq '[.gpus[] | select(.coupling == null)] | length' "$W/pc.json")" = 0 ] && ok ||
		bad "$rec: a GPU got no coupling from load-phases.txt"
	# the pairs that heat each other: the strongest source of each GPU
	pairs=$(jq -r '[.gpus[] | .index as $i | .coupling.from[] |
	        select(.c_per_w > 0.004) | "\(.index)>\($i)"] | join(" ")' "$W/pc.json")
	case $rec in m2) want="1>0 2>3" ;; *) want="0>1 3>2" ;; esac
	[ "$pairs" = "$want" ] && ok || bad "$rec: coupled pairs '$pairs', expected '$want'"
	[ "$(jq '[.gpus[].coupling.from[] | select(.c_per_w > 0.004 and
	        (.c_per_w > 0.011 or .c_per_w < 0.006))] | length' "$W/pc.json")" = 0 ] &&
		ok || bad "$rec: a strong coupling outside 0.006-0.011 °C/W"

	# the loop as it ran: the recorded profile and jobs
	"$T" calibrate $CL --profile "$R/profile.json" --job "$R/job.json" \
		--plan "$R/plan-identity" --host vm "$R/telemetry-identity.csv" $PR \
		-o "$W/cal0.json" >"$W/cal0.txt" 2>/dev/null || bad "$rec: calibrate (as run)"
	"$T" plan $CL --profile "$W/cal0.json" --job "$R/job.json" -o "$W/plan0" \
		--quiet 2>/dev/null || bad "$rec: plan (as run)"
	[ "$(ranks "$W/plan0/plan.json")" = "$(ranks "$R/plan/plan.json")" ] &&
	[ "$(jq -r .decision.verdict "$W/plan0/plan.json")" = \
	  "$(jq -r .decision.verdict "$R/plan/plan.json")" ] && ok ||
		bad "$rec: the plan as run is not the launched one"

	# the loop as it stands: the coupled profile
	"$T" calibrate $CL --profile "$W/pc.json" --job "$jid" \
		--plan "$R/plan-identity" --host vm "$R/telemetry-identity.csv" $PR \
		-o "$W/cal.json" >"$W/cal.txt" 2>/dev/null || bad "$rec: calibrate"
	"$T" plan $CL --profile "$W/cal.json" --job "$jid" -o "$W/plan" --quiet \
		2>/dev/null || bad "$rec: plan"
	if [ "$rec" = m1-foreign ]; then
		# the heavy stage (ranks 2, 3) off the GPU another process uses
		jq -e '[.ranks[] | select(.pp == 1 and .gpu_index == 2)] | length == 0' \
			"$W/plan/plan.json" >/dev/null && ok ||
			bad "$rec: the heavy stage stays on GPU 2"
	else
		[ "$(ranks "$W/plan/plan.json")" = "$(ranks "$R/$second/plan.json")" ] && ok ||
			bad "$rec: plan $(ranks "$W/plan/plan.json"), the run $(ranks "$R/$second/plan.json")"
	fi
	# held out: the second run, predicted from the identity run's
	# calibration ("predicted before")
	"$T" calibrate $CL --profile "$W/cal.json" --job "$jsec" \
		--plan "$R/$second" --host vm "$R/telemetry-second.csv" $PR2 \
		-o "$W/cal2.json" >"$W/cal2.txt" 2>/dev/null || bad "$rec: calibrate (second run)"
	{
		echo "rank GPU measured_C predicted_C error_C"
		table "$W/cal2.txt"
	} >"$W/loop-$rec.txt"
	pinned "loop-$rec.txt"
	if [ "$(table "$W/cal2.txt" | wc -l)" = 4 ] &&
	   table "$W/cal2.txt" | awk -v b=$HELD_C '$5 > b || $5 < -b { exit 1 }'; then ok
	else bad "$rec: a GPU of the held-out run is more than $HELD_C °C off:"; cat "$W/loop-$rec.txt"; fi

	# the claims: the plan as run, and the coupled one where it placed as
	# the run did
	"$T" calibrate $CL --profile "$W/cal0.json" --job "$R/job-second.json" \
		--plan "$R/$second" --host vm "$R/telemetry-second.csv" $PR2 \
		-o "$W/x.json" >"$W/cal02.txt" 2>/dev/null
	ms1=$(jq .measured.iteration_ms "$R/job.json")
	ms2=$(jq .measured.iteration_ms "$R/job-second.json")
	claim "$rec (as run)" "$W/plan0/plan.json" "$W/cal0.txt" "$W/cal02.txt" "$ms1" "$ms2"
	[ "$(ranks "$W/plan/plan.json")" = "$(ranks "$R/$second/plan.json")" ] &&
		claim "$rec (coupled)" "$W/plan/plan.json" "$W/cal.txt" "$W/cal2.txt" "$ms1" "$ms2"
done

# the recording of 2026-11-21: its uniform burn's profile, calibrated on
# the identity run; the plan places as its thermal run did
R=fixtures/real/h200x4-vm D=tests/calibrate/data
"$T" calibrate --cluster $R/cluster.json --profile $R/profile.json --job $D/job-identity.json \
	--plan $R/plan-identity --host vm $R/telemetry-identity.csv -o "$W/v.json" >"$W/v.txt" 2>/dev/null
"$T" plan --cluster $R/cluster.json --profile "$W/v.json" --job $D/job-identity.json \
	-o "$W/vplan" --quiet 2>/dev/null
if [ "$(ranks "$W/vplan/plan.json")" = "$(ranks $R/plan/plan.json)" ]; then
	ok
	"$T" calibrate --cluster $R/cluster.json --profile "$W/v.json" --job $D/job-thermal.json \
		--plan $R/plan --host vm $R/telemetry-thermal.csv -o "$W/v2.json" >"$W/v2.txt" 2>/dev/null
	claim "h200x4-vm" "$W/vplan/plan.json" "$W/v.txt" "$W/v2.txt" \
		"$(jq .measured.iteration_ms $D/job-identity.json)" \
		"$(jq .measured.iteration_ms $D/job-thermal.json)"
else
	bad "h200x4-vm: the calibrated plan does not place as the thermal run did"
fi
cp "$W/claims.txt" "$W/loop-claims.txt"
pinned loop-claims.txt

finish
