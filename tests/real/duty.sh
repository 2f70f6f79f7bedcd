#!/bin/sh
# Replays the real duty-cycle recording of one H100 (fixtures/real/h100x1-duty,
# examples/pipeline/duty-run.sh) through the model, per phase, predicted
# beside measured:
#  - thermap profile of the idle lead-in and the uniform burn gives the
#    idle and full-load levels and the fit T = ambient + r·P;
#  - every later phase (busy 70 % and 40 % of each second with the GPU
#    idle between, 40 % with a kernel spinning between, the rests) is an
#    operating point the profile never saw: its temperature predicted from
#    its measured power by the fit, and its power predicted by the model's
#    waiting share (docs/model.md, section 5), against the means of its
#    last 30 s (the last 15 s of a rest);
#  - the training job run on the same GPU: its clock at the job's
#    operating point beside the burn's, which ran into thermal slowdown.
# The table is pinned (tests/real/expected/duty.txt; --update rewrites
# it); the fit must hold every loaded phase within BOUND_C. The waiting
# share it implies is reported, not bounded (docs/real-run.md).
# THERMAP names the binary (default build/thermap).
set -u
T=${THERMAP:-build/thermap}
R=fixtures/real/h100x1-duty
W=$(mktemp -d "${TMPDIR:-/tmp}/thermap-duty.XXXXXX")
trap 'rm -rf "$W"' EXIT
BOUND_C=2.5
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL: %s\n' "$*"; }
num() { sed -n "s/^ *\"$2\": \\([-0-9.eE+]*\\).*/\\1/p" "$1" | head -1; }
str() { sed -n "s/^ *\"$2\": \"\\([^\"]*\\)\".*/\\1/p" "$1" | head -1; }

# the burn ends 94 s after the first sample (phases-0.jsonl)
"$T" profile --host vm --to +94 $R/telemetry.csv -o "$W/burn.json" --quiet
"$T" profile --host vm $R/telemetry-train.csv -o "$W/train.json" --quiet
amb=$(num "$W/burn.json" ambient_c)
r=$(num "$W/burn.json" r_c_per_w)
pi=$(num "$W/burn.json" power_idle_w)
pl=$(num "$W/burn.json" power_load_w)
if [ -n "$amb" ] && [ -n "$r" ] && [ -n "$pi" ] && [ -n "$pl" ]; then ok
else bad "the burn's profile has no fit"; fi

{
	printf 'profile of idle + burn: idle %s W, full load %s W, T = %s + %s·P; burn clock %s MHz (%s, thermal slowdown %s of load)\n' \
		"$pi" "$pl" "$amb" "$r" "$(num "$W/burn.json" sm_clock_load_mhz)" \
		"$(str "$W/burn.json" derate_basis)" \
		"$(num "$W/burn.json" thermal_slowdown_frac)"
	printf 'training job on the same GPU: %s MHz at %s W and %s °C (%s, thermal slowdown %s)\n' \
		"$(num "$W/train.json" sm_clock_load_mhz)" \
		"$(num "$W/train.json" power_load_w)" \
		"$(num "$W/train.json" temp_load_c)" \
		"$(str "$W/train.json" derate_basis)" \
		"$(num "$W/train.json" thermal_slowdown_frac)"
	# seconds of the day of each telemetry row; phase times are UTC epoch
	awk -F', ' -v pi="$pi" -v pl="$pl" -v amb="$amb" -v r="$r" '
	FNR == NR { # phases-0.jsonl
		match($0, /"phase": "[^"]*"/); ph = substr($0, RSTART + 10, RLENGTH - 11)
		match($0, /"start": [0-9.]*/); st = substr($0, RSTART + 9, RLENGTH - 9)
		match($0, /"end": [0-9.]*/); en = substr($0, RSTART + 7, RLENGTH - 7)
		match($0, /"busy_share": [0-9.]*/); bs = substr($0, RSTART + 14, RLENGTH - 14)
		n++; name[n] = ph; busy[n] = bs
		e = en % 86400; w = (en - st > 45) ? 30 : 15
		lo[n] = e - w; hi[n] = e - 0.5
		next }
	FNR > 1 {
		split($1, dt, " "); split(dt[2], hms, ":")
		t = hms[1] * 3600 + hms[2] * 60 + hms[3]
		for (k = 1; k <= n; k++)
			if (t >= lo[k] && t <= hi[k]) {
				sp[k] += $7 + 0; st2[k] += $5; c[k]++ }
	}
	END {
		for (k = 1; k <= n; k++) {
			if (name[k] != "rest") continue
			p = sp[k] / c[k]
			rmin = (rmin == "" || p < rmin) ? p : rmin
			rmax = (rmax == "" || p > rmax) ? p : rmax
		}
		printf "rests between phases (a process alive, no work, not yet cool): %.0f to %.0f W, against %.0f W idle before any process\n", rmin, rmax, pi
		print "phase    busy  measured W  model W  measured °C  fit °C  error °C  waiting share"
		for (k = 1; k <= n; k++) {
			if (name[k] == "burn" || name[k] == "rest") continue
			p = sp[k] / c[k]; tm = st2[k] / c[k]
			# the model: waiting at idle + 0.45 of the span, busy at load
			pw = pi + 0.45 * (pl - pi)
			pm = pw + busy[k] * (pl - pw)
			tf = amb + r * p
			share = busy[k] < 1 ? ((p - pi) / (pl - pi) - busy[k]) / (1 - busy[k]) : 0
			e = sprintf("%+.1f", tf - tm); if (e == "-0.0") e = "+0.0"
			printf "%-8s %4.2f  %10.0f  %7.0f  %11.1f  %6.1f  %8s  %13.2f\n",
			       name[k], busy[k], p, pm, tm, tf, e, share
		}
	}' $R/phases-0.jsonl $R/telemetry.csv
} >"$W/table"
if [ "${1:-}" = --update ]; then
	mkdir -p tests/real/expected
	cp "$W/table" tests/real/expected/duty.txt
fi
if cmp -s "$W/table" tests/real/expected/duty.txt; then ok
else bad "duty table changed:"; diff tests/real/expected/duty.txt "$W/table"; fi
# the fit holds every phase that loads the GPU
if awk -v b=$BOUND_C 'NR > 4 && ($7 > b || $7 < -b) { exit 1 }
	NR > 4 { n++ } END { exit n != 3 }' "$W/table"; then ok
else bad "a loaded phase's temperature is more than $BOUND_C °C from the fit:"; cat "$W/table"; fi
# the burn ran into thermal slowdown, the job did not, at its own clock
if [ "$(str "$W/burn.json" derate_basis)" = thermal ] &&
   [ "$(str "$W/train.json" derate_basis)" != thermal ] &&
   [ "$(num "$W/train.json" sm_clock_load_mhz)" -gt "$(num "$W/burn.json" sm_clock_load_mhz)" ]; then ok
else bad "the burn's and the job's clocks are not what the recording shows"; fi

echo "duty replay: $pass passed, $fail failed"
[ "$fail" = 0 ]
