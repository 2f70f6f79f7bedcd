#!/bin/sh
# thermap compare and the policies that change layers, from the command
# line:
#  - the acceptance table: the 8-GPU nanoGPT recording (GPUs up to ~20 °C
#    apart under equal load), a cluster from the same host kind and a pp8
#    job with a heavy last stage: 'thermal' at least as fast as identity
#    with a lower peak, 'alternating' and the others as they come; the
#    tables (text, markdown, CSV, JSON) are pinned byte for byte in
#    tests/compare/expected, and the same run twice gives the same bytes;
#  - --svg writes a picture with a panel per policy;
#  - --replay over the real H200 recording, pinned;
#  - plans of the layer-changing policies pass 'thermap check', and a plan
#    whose layers were tampered with does not;
#  - usage errors exit 2, bad inputs 4, a file it cannot write 1, each
#    with one line; a policy that cannot run gets a row saying why.
# With --update the expected files are rewritten (review the diff).
# THERMAP names the binary (build/thermap by default).
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble compare "$@"
N=fixtures/nanogpt-h100x8
H=fixtures/h200x4-a
E=tests/compare/expected

POL="policies/identity.json policies/alternating.json policies/greedy-coolest.json policies/greedy.json policies/thermal.json policies/coolest-peak.json policies/rebalance.json"
NG="--cluster $N/cluster.json --profile $N/profile.json --job $N/job-pp8.json"

for f in text markdown csv json; do
	# shellcheck disable=SC2086
	if "$T" compare $NG $POL --format $f >"$W/nanogpt.$f" 2>"$W/err"; then
		ok
	else
		bad "compare --format $f exits $?: $(cat "$W/err")"
	fi
	pinned "nanogpt.$f"
done
# shellcheck disable=SC2086
"$T" compare $NG $POL --format csv >"$W/again.csv" 2>/dev/null
if cmp -s "$W/nanogpt.csv" "$W/again.csv"; then ok; else bad "two runs differ"; fi

# acceptance, from the CSV: field 6 iteration_ms, 9 peak_temp_c
field() { awk -F, -v p="$1" -v k="$2" '$1 == p { print $k }' "$W/nanogpt.csv"; }
it_id=$(field identity 6); pk_id=$(field identity 9)
it_th=$(field thermal 6); pk_th=$(field thermal 9)
if awk -v a="$it_th" -v b="$it_id" 'BEGIN { exit !(a != "" && a <= b) }'; then ok
else bad "thermal $it_th ms is slower than identity $it_id ms"; fi
# never hotter than torchrun's placement; cooler, or torchrun's kept with
# the reason (the best gain here is inside the model's uncertainty)
if awk -v a="$pk_th" -v b="$pk_id" 'BEGIN { exit !(a != "" && a <= b) }'; then ok
else bad "thermal peak $pk_th °C is above identity's $pk_id °C"; fi
if awk -v a="$pk_th" -v b="$pk_id" 'BEGIN { exit !(a < b) }' ||
   { [ "$(field thermal 14)" = keep ] &&
     grep -q "^thermal: kept torchrun's placement: " "$W/nanogpt.text"; }; then ok
else bad "thermal neither cooler than identity nor kept with its reason"; fi
if [ -n "$(field alternating 6)" ]; then ok; else bad "no alternating row"; fi

# the picture
# shellcheck disable=SC2086
"$T" compare $NG $POL --svg "$W/p.svg" >/dev/null 2>&1
if head -1 "$W/p.svg" | grep -q '^<?xml' && tail -1 "$W/p.svg" | grep -q '</svg>' &&
   [ "$(grep -c '<title>vp-h100 GPU' "$W/p.svg")" = 56 ]; then ok
else bad "--svg: not 7 panels of 8 GPUs"; fi

# replay over the real recording: plan on a window, score on the next
"$T" compare --cluster $H/cluster.json --job $H/job-pp2-dp2.json \
	--replay $H/telemetry.csv --host h200x4-a --window 60 \
	policies/identity.json policies/alternating.json policies/thermal.json \
	policies/rebalance.json >"$W/replay.text" 2>"$W/err"
rc=$?
if [ $rc = 0 ]; then ok; else bad "replay exits $rc: $(cat "$W/err")"; fi
pinned replay.text
"$T" compare --cluster $H/cluster.json --job $H/job-pp2-dp2.json \
	--replay $H/telemetry.csv --host h200x4-a --window 60 --format json \
	policies/thermal.json >"$W/replay.json" 2>/dev/null
pinned replay.json

# plans of the policies that change layers pass check; tampering fails
for p in alternating rebalance; do
	"$T" plan $NG --policy policies/$p.json -o "$W/$p" --quiet
	if "$T" check --cluster $N/cluster.json --job $N/job-pp8.json \
		--profile $N/profile.json --plan "$W/$p" >/dev/null 2>"$W/err"; then ok
	else bad "check of the $p plan: $(cat "$W/err")"; fi
	if grep -q '"pipeline_model_parallel_layout"' "$W/$p/plan.json"; then ok
	else bad "$p plan has no layout string"; fi
done
sed 's/"chunks": \[\([0-9]*\),/"chunks": [9\1,/' "$W/rebalance/plan.json" >"$W/t.json"
cp "$W/t.json" "$W/rebalance/plan.json"
"$T" check --cluster $N/cluster.json --job $N/job-pp8.json \
	--plan "$W/rebalance" >/dev/null 2>"$W/err"
rc=$?
if [ $rc = 4 ] && grep -q 'layers.chunks' "$W/err" && [ "$(wc -l <"$W/err")" = 1 ]; then ok
else bad "tampered layers: exit $rc, $(cat "$W/err")"; fi

# exits CODE ARGS...: thermap ARGS exits with CODE and says why on stderr
exits() {
	want=$1
	shift
	"$T" "$@" >/dev/null 2>"$W/err"
	rc=$?
	if [ $rc = "$want" ] && [ -s "$W/err" ]; then ok
	else bad "$* exits $rc, expected $want: $(cat "$W/err")"; fi
}
exits 2 compare $NG
exits 2 compare $NG policies/thermal.json --format html
exits 2 compare $NG policies/thermal.json --window 0
exits 2 compare $NG --replay $H/telemetry.csv policies/thermal.json
exits 2 compare --cluster $N/cluster.json --job $N/job-pp8.json --replay $H/telemetry.csv --svg "$W/x.svg" policies/thermal.json
exits 4 compare $NG "$W/missing.json"
printf '{"format": "thermap.policy/1", "name": "x", "method": "ilp", "constraints": {"rebalance_layers": 1}}' >"$W/badpol.json"
exits 4 compare $NG "$W/badpol.json"
exits 4 compare --cluster $H/cluster.json --job $H/job-pp2-dp2.json --replay $H/telemetry.csv --host h200x4-a policies/thermal.json
exits 1 compare $NG policies/thermal.json --svg "$W/no/such/dir/p.svg"
# a policy that changes layers on a job of measured stages: a row says why
"$T" compare --cluster $H/cluster.json --profile $H/profile.json \
	--job tests/cli/data/job-a10-tp2.json policies/identity.json \
	policies/rebalance.json >"$W/m.txt" 2>"$W/err"
rc=$?
if [ $rc = 0 ] && grep -q '^rebalance  *error' "$W/m.txt" &&
   grep -q 'given by layers' "$W/m.txt"; then ok
else bad "measured job: exit $rc, $(cat "$W/m.txt" "$W/err")"; fi

finish
