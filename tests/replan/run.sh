#!/bin/sh
# thermap replan and thermap diff from the command line:
#  - the real H200 recording replayed in windows of its phases: the first
#    full-load window plans; the next full-load window (the same thermal
#    picture) exits 3 and writes nothing; the window after the load
#    pattern changed (the asymmetric phase) decides and says why; the
#    decision lines are pinned in tests/replan/expected;
#  - a GPU gone from the nanoGPT host forces its rank off it: with a
#    minimum gain nothing can reach, only that rank moves; with the
#    default the written plan moves more only because it gains enough,
#    and says so; a host gone moves its node whole; a move price and
#    max_moves hold the written plan to the least change;
#  - every written plan passes 'thermap check --previous', the same
#    inputs give the same bytes, 'thermap diff' lists the moves and why;
#  - a replan killed at every step of writing its plan leaves the target
#    directory as it was (the previous plan, complete) or the new plan,
#    never half written; the next run completes it and removes the
#    killed writer's temporary directory;
#  - usage errors exit 2, bad inputs 4, each with one line.
# With --update the expected files are rewritten (review the diff).
# THERMAP names the binary (build/thermap by default).
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble replan "$@"
H=fixtures/h200x4-a
N=fixtures/nanogpt-h100x8
D=tests/replan/data
E=tests/replan/expected

# one JSON line on stdout with this text in it
line_has() {
	if [ "$(wc -l <"$W/$1.out")" = 1 ] && grep -q "$2" "$W/$1.out"; then ok
	else bad "$1: stdout is not one line with $2: $(head -c 300 "$W/$1.out")"; fi
}

# ---- the real recording in windows ----------------------------------------
# 30-90 s and 90-150 s: all four GPUs at full load; 205-290 s: 100/40/40/100 %
for w in 30:90 90:150 205:290; do
	a=${w%:*} b=${w#*:}
	expect 0 "profile-$a" "$T" profile --host h200x4-a $H/telemetry.csv \
		--from +"$a" --to +"$b" --baseline $H/profile.json -o "$W/w$a.json"
done
# the window without idle samples took the idle level from the baseline;
# the asymmetric one also took GPUs 1 and 2's load level
if grep -q '"from_baseline"' "$W/w30.json" && ! grep -q '"temp_idle_c": null' "$W/w30.json"
then ok; else bad "--baseline did not fill the idle level"; fi
if [ "$(grep -c '"temp_load_c": ' "$W/w205.json")" = 4 ] &&
   ! grep -q '"temp_load_c": null' "$W/w205.json"; then ok
else bad "--baseline did not fill the asymmetric window's load levels"; fi

HJ="--cluster $H/cluster.json --job $H/job-pp2-dp2.json"
# shellcheck disable=SC2086
expect 0 plan1 "$T" plan $HJ --profile "$W/w30.json" -o "$W/p1"
cp -r "$W/p1" "$W/p1.orig"
# shellcheck disable=SC2086
expect 3 same "$T" replan --previous "$W/p1" $HJ --profile "$W/w90.json" -o "$W/p2"
line_has same '"decision": "keep", "exit": 3'
if grep -q '"short_by"' "$W/same.out"; then ok; else bad "keep does not say by how much it fell short"; fi
if [ ! -e "$W/p2" ]; then ok; else bad "exit 3 wrote $W/p2"; fi
cp "$W/same.out" "$W/window-same.json"
pinned window-same.json
# shellcheck disable=SC2086
"$T" replan --previous "$W/p1" $HJ --profile "$W/w205.json" -o "$W/p3" >"$W/asym.out" 2>"$W/asym.err"
rc=$?
if [ $rc = 0 ] || [ $rc = 3 ]; then ok; else bad "asymmetric window: exit $rc: $(cat "$W/asym.err")"; fi
line_has asym '"reason": "'
# shellcheck disable=SC2086
if [ $rc = 3 ] || "$T" check $HJ --plan "$W/p3" --previous "$W/p1" >/dev/null 2>&1
then ok; else bad "the asymmetric window's plan fails check"; fi
cp "$W/asym.out" "$W/window-asymmetric.json"
pinned window-asymmetric.json
# the same previous plan replanned into itself: kept, untouched
# shellcheck disable=SC2086
expect 3 self "$T" replan --previous "$W/p1" $HJ --profile "$W/w90.json" -o "$W/p1"
if diff -r "$W/p1" "$W/p1.orig" >/dev/null; then ok; else bad "exit 3 touched the plan"; fi

# ---- a GPU gone --------------------------------------------------------------
NJ="--job $D/job-pp4.json --profile $N/profile.json"
# shellcheck disable=SC2086
expect 0 nplan "$T" plan --cluster $N/cluster.json $NJ -o "$W/n1"
# the heaviest stage runs on GPU 5, which the new cluster lacks
if grep -q '"rank": 3, "host": "vp-h100", "node_rank": 0, "local_rank": 3, "gpu_index": 5' "$W/n1/plan.json"
then ok; else bad "the nanoGPT plan no longer puts rank 3 on GPU 5; pick another GPU"; fi
# shellcheck disable=SC2086
expect 0 forced "$T" replan --previous "$W/n1" --cluster $D/cluster-no-gpu5.json $NJ \
	--min-gain 100%,100C -o "$W/n2"
line_has forced '"decision": "repair"'
line_has forced '"fewest_moves": 1, "moved_ranks": 1'
# shellcheck disable=SC2086
expect 0 check-forced "$T" check --cluster $D/cluster-no-gpu5.json --job $D/job-pp4.json \
	--profile $N/profile.json --plan "$W/n2" --previous "$W/n1"
expect 0 diff-forced "$T" diff "$W/n1" "$W/n2"
if grep -q '1 of 4 ranks move' "$W/diff-forced.out" &&
   grep -q 'rank 3 .*GPU 5 -> .*forced: GPU vp-h100:5 is not in' "$W/diff-forced.out"
then ok; else bad "diff of the forced move: $(cat "$W/diff-forced.out")"; fi
# with the default minimum the policy's best may move more: only when it
# gains enough, and it says how much
# shellcheck disable=SC2086
expect 0 forced-best "$T" replan --previous "$W/n1" --cluster $D/cluster-no-gpu5.json $NJ -o "$W/n3"
cp "$W/forced-best.out" "$W/gpu-gone.json"
pinned gpu-gone.json
if grep -q '"decision": "move"' "$W/forced-best.out"; then
	if grep -q '"fewest_moves": 1' "$W/forced-best.out" &&
	   grep -q 'peak temperature' "$W/forced-best.out"; then ok
	else bad "a move past the least change without its reason"; fi
else
	line_has forced-best '"moved_ranks": 1'
fi
# shellcheck disable=SC2086
expect 0 check-best "$T" check --cluster $D/cluster-no-gpu5.json --job $D/job-pp4.json \
	--profile $N/profile.json --plan "$W/n3" --previous "$W/n1"
# a move price or max_moves holds it to the least change
for p in thermal-move-cost thermal-max-moves-1; do
	# shellcheck disable=SC2086
	expect 0 "$p" "$T" replan --previous "$W/n1" --cluster $D/cluster-no-gpu5.json $NJ \
		--policy $D/$p.json -o "$W/$p"
	line_has "$p" '"moved_ranks": 1'
done
# the same inputs, the same bytes
# shellcheck disable=SC2086
"$T" replan --previous "$W/n1" --cluster $D/cluster-no-gpu5.json $NJ -o "$W/n3b" >/dev/null 2>&1
if diff -r "$W/n3" "$W/n3b" >/dev/null; then ok; else bad "two replans differ"; fi
# a check with the wrong previous plan fails
# shellcheck disable=SC2086
expect 4 check-wrong-prev "$T" check --cluster $D/cluster-no-gpu5.json --job $D/job-pp4.json \
	--plan "$W/n3" --previous "$W/p1"

# ---- a multi-node job: a GPU gone leaves its host short, its node moves ------
# three generated hosts of 8 GPUs (tests/gen_cluster 3 1 4 4), a job of two
# node ranks; host gpu-0000 loses GPU 3, so node rank 0 needs the spare host
GJ="--job $D/gen3-job.json --profile $D/gen3-profile.json --policy policies/greedy.json"
# shellcheck disable=SC2086
expect 0 gplan "$T" plan --cluster $D/gen3-cluster.json $GJ -o "$W/g1"
# shellcheck disable=SC2086
expect 4 gplan-uneven "$T" plan --cluster $D/gen3-cluster-no-gpu3.json $GJ -o "$W/x"
# shellcheck disable=SC2086
expect 0 gone-multi "$T" replan --previous "$W/g1" --cluster $D/gen3-cluster-no-gpu3.json $GJ -o "$W/g2"
line_has gone-multi '"decision": "repair"'
line_has gone-multi '"fewest_moves": 8, "moved_ranks": 8'
if grep -q '"host": "gpu-0002", "node_rank": 0' "$W/g2/plan.json"; then ok
else bad "node rank 0 did not move to the spare host"; fi
# shellcheck disable=SC2086
expect 0 check-multi "$T" check --cluster $D/gen3-cluster-no-gpu3.json --job $D/gen3-job.json \
	--profile $D/gen3-profile.json --plan "$W/g2" --previous "$W/g1"

# ---- a host gone: its node moves whole --------------------------------------
sed 's/"h200x4-a"/"h200x4-b"/' "$W/w90.json" >"$W/w90b.json"
# shellcheck disable=SC2086
expect 0 host-gone "$T" replan --previous "$W/p1" --cluster $D/cluster-renamed.json \
	--job $H/job-pp2-dp2.json --profile "$W/w90b.json" -o "$W/h2"
line_has host-gone '"fewest_moves": 4'
if grep -q 'forced: host h200x4-a is not in' "$W/h2/plan.json"; then ok
else bad "the host-gone plan does not say why its ranks moved"; fi

# ---- killed while writing ---------------------------------------------------
# THERMAP_TEST_STOP_AT=k stops the writer at its k-th step (1: temporary
# directory made; 2: plan.json; 3: env file; 4: launch.txt; 5: renamed
# into place, the previous plan now under the temporary name; 6: the
# previous plan removed). A kill before step 6 leaves the temporary
# directory; the next writer of the target removes it (no process holds
# its lock any more).
for k in 1 2 3 4 5 6; do
	rm -rf "$W/k"
	cp -r "$W/n1" "$W/k"
	# shellcheck disable=SC2086
	THERMAP_TEST_STOP_AT=$k "$T" replan --previous "$W/n1" --cluster \
		$D/cluster-no-gpu5.json $NJ -o "$W/k" >/dev/null 2>&1 &
	pid=$!
	if stopped $pid; then ok
	else bad "step $k: the writer did not stop there"; fi
	kill -KILL $pid 2>/dev/null
	wait $pid 2>/dev/null
	# the target is the previous plan, complete, or (after the rename)
	# the new plan, complete; never anything in between
	if [ $k -lt 5 ]; then
		if diff -r "$W/k" "$W/n1" >/dev/null; then ok
		else bad "killed at step $k: the target changed"; fi
	elif diff -r "$W/k" "$W/n3" >/dev/null; then ok
	else bad "killed at step $k: the target is not the new plan"; fi
	"$T" check --cluster $N/cluster.json --job $D/job-pp4.json --plan "$W/k" >/dev/null 2>&1 ||
	"$T" check --cluster $D/cluster-no-gpu5.json --job $D/job-pp4.json --plan "$W/k" >/dev/null 2>&1 ||
		bad "killed at step $k: the target fails check"
	left=$(ls "$W" | grep -c '^k\.tmp-')
	if { [ $k -lt 6 ] && [ "$left" = 1 ]; } || { [ $k = 6 ] && [ "$left" = 0 ]; }
	then ok; else bad "killed at step $k: $left temporary directories left"; fi
	# a run to the end completes it, and removes the killed writer's
	# temporary directory
	# shellcheck disable=SC2086
	"$T" replan --previous "$W/n1" --cluster $D/cluster-no-gpu5.json $NJ -o "$W/k" >/dev/null 2>&1
	if diff -r "$W/k" "$W/n3" >/dev/null; then ok
	else bad "after the kill at step $k, a full run did not write the plan"; fi
	if [ -z "$(ls "$W" | grep '^k\.tmp-')" ]; then ok
	else bad "after the kill at step $k, a full run left $(ls "$W" | grep '^k\.tmp-')"; fi
done

# ---- the example loop, with stand-ins for torchrun and nvidia-smi ------------
# torchrun "trains" by doing nothing; nvidia-smi -f FILE writes the real
# recording; one round calibrates the profile on it (as the plan that ran
# measured it) and replans with the calibrated profile: the same picture,
# so the plan stays
mkdir -p "$W/bin"
# (torchrun "trains" until the logger has started writing: a real round
# lasts long enough for that)
printf '#!/bin/sh\necho "torchrun $*" >>"%s/torchrun.log"\ni=0\nwhile [ ! -s "%s/loop.history/round-1.csv" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done\n' \
	"$W" "$W" >"$W/bin/torchrun"
# (the stand-in ignores the loop's kill until it has written the log)
printf '#!/bin/sh\ntrap "" TERM\nwhile [ $# -gt 0 ]; do [ "$1" = -f ] && cp %s/telemetry.csv "$2"; shift; done\n' \
	"$PWD/$H" >"$W/bin/nvidia-smi"
chmod +x "$W/bin/torchrun" "$W/bin/nvidia-smi"
# shellcheck disable=SC2086
"$T" plan $HJ --profile $H/profile.json -o "$W/loop" >/dev/null 2>&1
case $T in /*) TA=$T ;; *) TA=$PWD/$T ;; esac
PATH="$W/bin:$PATH" THERMAP=$TA NODE_HOST=h200x4-a BASELINE=$H/profile.json \
	sh scripts/replan-loop.sh $H/cluster.json $H/job-pp2-dp2.json "$W/loop" 1 -- \
	train.py >"$W/loop.out" 2>&1
rc=$?
if [ $rc = 0 ] && grep -q 'round 1: keeping the plan' "$W/loop.out" &&
   grep -q -- '--node-rank=0 --rdzv-backend=static' "$W/torchrun.log" &&
   grep -q '"decision": "keep"' "$W/loop.history/decision-1.json"; then ok
else bad "the example loop (exit $rc): $(tail -5 "$W/loop.out")"; fi
# the round calibrated: its table, and a profile whose fitted fields say
# where they came from
if [ -s "$W/loop.history/calibrate-1.txt" ] &&
   grep -q '"calibrated"' "$W/loop.history/profile-1.json"; then ok
else bad "the example loop did not calibrate: $(cat "$W/loop.history/calibrate-1.txt" 2>&1 | tail -3)"; fi

# ---- errors -------------------------------------------------------------------
# shellcheck disable=SC2086
expect 2 no-prev "$T" replan $HJ --profile "$W/w90.json" -o "$W/x"
# shellcheck disable=SC2086
expect 2 bad-gain "$T" replan --previous "$W/p1" $HJ --profile "$W/w90.json" --min-gain 1x -o "$W/x"
# shellcheck disable=SC2086
expect 2 layers "$T" replan --previous "$W/p1" $HJ --profile "$W/w90.json" \
	--policy policies/rebalance.json -o "$W/x"
# shellcheck disable=SC2086
expect 4 missing "$T" replan --previous "$W/nope" $HJ --profile "$W/w90.json" -o "$W/x"
mkdir -p "$W/garbled"
head -c 200 "$W/p1/plan.json" >"$W/garbled/plan.json"
# shellcheck disable=SC2086
expect 4 garbled "$T" replan --previous "$W/garbled" $HJ --profile "$W/w90.json" -o "$W/x"
if grep -q "garbled/plan.json" "$W/garbled.err" && [ "$(wc -l <"$W/garbled.err")" = 1 ]
then ok; else bad "garbled previous plan: $(cat "$W/garbled.err")"; fi
# shellcheck disable=SC2086
expect 4 layout "$T" replan --previous "$W/n1" $HJ --profile "$W/w90.json" -o "$W/x"
if grep -q 'parallel layout changed' "$W/layout.err"; then ok; else bad "layout: $(cat "$W/layout.err")"; fi
expect 4 world "$T" replan --previous "$W/n1" --cluster $N/cluster.json --job $N/job-pp8.json \
	--profile $N/profile.json -o "$W/x"
if grep -q 'same world size' "$W/world.err"; then ok; else bad "world: $(cat "$W/world.err")"; fi
expect 4 bad-baseline "$T" profile --host h200x4-a $H/telemetry.csv --baseline $H/job-pp2-dp2.json \
	-o "$W/x"
expect 2 diff-one "$T" diff "$W/p1"
expect 4 diff-world "$T" diff "$W/p1" "$W/n1"
if [ ! -e "$W/x" ]; then ok; else bad "an error wrote $W/x"; fi

finish
