#!/bin/sh
# CLI cases: each runs the thermap program on real fixtures or small data
# files and compares exit code and the exact stderr line (or a stdout
# fragment). Hand-broken plans must fail 'thermap check' with the right
# message. THERMAP names the binary (build/thermap by default).
# shellcheck source=tests/lib.sh
. tests/lib.sh
preamble cli
F=fixtures/h200x4-a
D=tests/cli/data

# t NAME RC STDERR -- ARGS...   (STDERR '-' means: not checked)
t() {
	name=$1 rc=$2 err=$3
	shift 4
	"$T" "$@" >"$W/out" 2>"$W/err"
	got=$?
	if [ "$got" != "$rc" ]; then
		bad "$name: exit $got, expected $rc; stderr: $(cat "$W/err")"
		return
	fi
	if [ "$err" != "-" ] && [ "$(cat "$W/err")" != "$err" ]; then
		bad "$name: stderr was: $(cat "$W/err")
        expected: $err"
		return
	fi
	ok
}

plan() { "$T" plan --cluster $F/cluster.json --profile $F/profile.json \
	--job $F/job-pp2-dp2.json "$@"; }

# ---- usage ---------------------------------------------------------------
t help 0 "" -- --help
has help-text "$W/out" "usage: thermap COMMAND"
t plan-help 0 "" -- plan --help
has plan-help-text "$W/out" "--allow-unprofiled"
t check-help 0 "" -- check --help
t version 0 "" -- --version
has version-text "$W/out" "thermap 0."
t no-command 2 "thermap: no command given
Try 'thermap --help'." --
t bad-command 2 "thermap: unknown command 'plot'
Try 'thermap --help'." -- plot
t bad-option 2 "thermap: unknown option '--clusters'
Try 'thermap plan --help'." -- plan --clusters x
t missing-profile 2 "thermap: plan needs --profile
Try 'thermap plan --help'." -- plan --cluster x --job y -o z
t missing-value 2 "thermap: option '--job' needs a value
Try 'thermap plan --help'." -- plan --job

# the man page's OPTIONS against each command's rows, row by row, and the
# grammar on every row: tests/cli/options.sh

# ---- the real 4xH200 demo --------------------------------------------------
plan -o "$W/p1" >"$W/out" 2>"$W/err"
if [ $? = 0 ] && [ ! -s "$W/err" ]; then ok; else bad "demo plan: $(cat "$W/err")"; fi
has demo-heavy "$W/p1/plan.json" '"gpus": ["h200x4-a:0", "h200x4-a:3"]'
has demo-light "$W/p1/plan.json" '"gpus": ["h200x4-a:2", "h200x4-a:1"]'
has demo-status "$W/p1/plan.json" '"status": "optimal"'
has demo-uuids "$W/p1/env/h200x4-a.env" "CUDA_VISIBLE_DEVICES=GPU-a0000002-0000-4000-8000-000000000002,GPU-a0000001-0000-4000-8000-000000000001,GPU-a0000000-0000-4000-8000-000000000000,GPU-a0000003-0000-4000-8000-000000000003"
has demo-launch "$W/p1/launch.txt" "--rdzv-backend=static"
has demo-why "$W/out" "heaviest stage"
drop=$(sed -n 's/.*"peak_temp_drop_c": \([0-9.-]*\).*/\1/p' "$W/p1/plan.json")
if awk "BEGIN { exit !($drop > 3) }"; then ok; else bad "demo: peak drop $drop"; fi
# identical inputs, identical bytes; a second run replaces a plan in place
plan -o "$W/p2" --quiet
if diff -r "$W/p1" "$W/p2" >/dev/null; then ok; else bad "plans differ"; fi
plan -o "$W/p2" --quiet
if diff -r "$W/p1" "$W/p2" >/dev/null; then ok; else bad "replaced plan differs"; fi
if [ -z "$(ls -a "$W" | grep tmp-)" ]; then ok; else bad "temporary left: $(ls "$W")"; fi
t check-ok 0 "" -- check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$W/p1" --profile $F/profile.json
has check-ok-text "$W/out" "ok: plan"
for pol in identity greedy thermal; do
	plan --policy policies/$pol.json -o "$W/pol-$pol" --quiet
	t "check-$pol" 0 "" -- check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$W/pol-$pol" --profile $F/profile.json
done
has identity-plan "$W/pol-identity/plan.json" '"moved_ranks": 0'

# ---- hand-broken plans ---------------------------------------------------
broken() { rm -rf "$W/b"; cp -r "$W/p1" "$W/b"; }
chk() { t "$1" 4 "$2" -- check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$W/b"; }
E="$W/b/env/h200x4-a.env"
broken
sed -i 's/^CUDA_VISIBLE_DEVICES=\([^,]*\),\([^,]*\),/CUDA_VISIBLE_DEVICES=\2,\1,/' "$E"
chk swapped-gpus "thermap: error: $W/b/plan.json: ranks[0].gpu_index: plan says 2, the env files give GPU 1"
broken
sed -i 's/^NODE_RANK=0/NODE_RANK=1/' "$E"
chk node-rank "thermap: error: $E: NODE_RANK=1 is out of range or repeats another env file"
broken
sed -i '/^THERMAP_PLAN=/d' "$E"
chk no-plan-id "thermap: error: $E: THERMAP_PLAN is not set"
broken
sed -i 's/^\(CUDA_VISIBLE_DEVICES=\)\([^,]*\),[^,]*,/\1\2,\2,/' "$E"
chk twice "thermap: error: $E: CUDA_VISIBLE_DEVICES names GPU GPU-a0000002-0000-4000-8000-000000000002 twice"
broken
sed -i 's/^CUDA_VISIBLE_DEVICES=.*/CUDA_VISIBLE_DEVICES=0,1,2/' "$E"
chk short "thermap: error: $E: CUDA_VISIBLE_DEVICES lists 3 GPUs; NPROC_PER_NODE is 4"
broken
sed -i 's/^CUDA_VISIBLE_DEVICES=GPU-a0000002/CUDA_VISIBLE_DEVICES=GPU-b0000002/' "$E"
chk foreign-gpu "thermap: error: $E: CUDA_VISIBLE_DEVICES entry 0 (GPU-b0000002-0000-4000-8000-000000000002) is not a GPU of host h200x4-a"
broken
sed -i 's/^MASTER_ADDR=.*/MASTER_ADDR=elsewhere/' "$E"
chk master "thermap: error: $E: MASTER_ADDR=elsewhere; node rank 0 is h200x4-a"
broken
sed -i 's/"rank": 0, \(.*\)"pp": 0/"rank": 0, \1"pp": 1/' "$W/b/plan.json"
chk tampered-json "thermap: error: $W/b/plan.json: ranks[0].pp: plan says 1, the job's order gives 0"
broken
sed -i 's/"max_moves": null/"max_moves": 1/' "$W/b/plan.json"
chk max-moves "thermap: error: $W/b: max_moves 1: 2 ranks are off the default placement"
broken
mv "$E" "$W/b/env/other.env"
chk unknown-host "thermap: error: $W/b/env/other.env: host other is not in $F/cluster.json"
broken
t other-job 4 "thermap: error: $W/b/plan.json: inputs.job: the plan was made for another job file than $D/job-a10-tp2.json" -- check --cluster $F/cluster.json --job $D/job-a10-tp2.json --plan "$W/b"
broken
sed -i 's/"iteration_ms": 621.0807,/"iteration_ms": 600,/' "$W/b/plan.json"
t prediction 4 "thermap: error: $W/b/plan.json: predicted.iteration_ms is 600.0000; the model gives 621.0807 for this placement" -- check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$W/b" --profile $F/profile.json

# ---- public topologies -----------------------------------------------------
P=fixtures/public
t dgx1-tp2 0 "" -- plan --cluster $P/dgx1-v100/cluster.json --profile $D/dgx1-profile.json --job $D/job-tp2pp4.json -o "$W/dgx1"
t dgx1-check 0 "" -- check --cluster $P/dgx1-v100/cluster.json --job $D/job-tp2pp4.json --plan "$W/dgx1"
has dgx1-nvlink "$W/out" "tp_nvlink holds"
t a10-infeasible 5 "thermap: error: infeasible: tp_nvlink: tensor-parallel group (ranks 0,1) needs 2 GPUs joined by NVLink; host a10 has no such set; missing links: GPU0-GPU1 SYS, GPU0-GPU2 SYS, GPU0-GPU3 SYS, GPU1-GPU2 SYS, GPU1-GPU3 SYS, GPU2-GPU3 SYS" -- plan --cluster $P/a10-allsys/cluster.json --profile $D/a10-profile.json --job $D/job-a10-tp2.json -o "$W/a10"
if [ ! -e "$W/a10" ]; then ok; else bad "infeasible plan left a directory"; fi
t a10-identity 0 "" -- plan --cluster $P/a10-allsys/cluster.json --profile $D/a10-profile.json --job $D/job-a10-tp2.json --policy policies/identity.json -o "$W/a10"

# ---- network groups and the gradient all-reduce ------------------------------
# four hosts of two H200, alternating between two leaf switches (50 GB/s
# inside a group, 12.5 across); the job runs pp=2 inside each node rank and
# dp=2 across them, 1000 MiB of gradients on pipeline rank 1. The two
# fastest hosts (a0, b0) are in different groups, as torchrun's default
# is; both methods keep the two replicas in one group instead, and the
# all-reduce is 2·(1/2)·1000·2^20 / (50·10^6) = 20.97152 ms (12.5 GB/s
# across groups: 83.88608 ms)
GC="--cluster $D/groups-cluster.json"
GJ="--job $D/job-dp2-grad.json"
for pol in identity greedy thermal; do
	t "groups-$pol" 0 "" -- plan $GC --profile $D/groups-profile.json $GJ --policy policies/$pol.json -o "$W/gr-$pol"
	[ $pol = identity ] || has "groups-$pol-summary" "$W/out" "iteration 687.85 ms (all-reduce 20.97 ms; identity 744.17 ms, +7.57 %)"
	t "groups-$pol-check" 0 "" -- check $GC $GJ --plan "$W/gr-$pol" --profile $D/groups-profile.json
done
has groups-identity-ar "$W/gr-identity/plan.json" '"allreduce_ms": 83.8861,'
has groups-identity-hosts "$W/gr-identity/plan.json" '{"host": "b0", "node_rank": 1,'
for pol in greedy thermal; do
	has "groups-$pol-ar" "$W/gr-$pol/plan.json" '"allreduce_ms": 20.9715,'
	has "groups-$pol-node0" "$W/gr-$pol/plan.json" '{"host": "b0", "node_rank": 0,'
	has "groups-$pol-node1" "$W/gr-$pol/plan.json" '{"host": "b1", "node_rank": 1,'
done
# without gradients there is no all-reduce, and plan.json has no such field
sed 's/, "grad_mib": [0-9]*//' $D/job-dp2-grad.json >"$W/job-nograd.json"
t groups-nograd 0 "" -- plan $GC --profile $D/groups-profile.json --job "$W/job-nograd.json" -o "$W/gr-nograd" --quiet
if grep -q allreduce "$W/gr-nograd/plan.json"; then bad "groups-nograd: allreduce_ms written"; else ok; fi
# check recomputes the all-reduce on its own
rm -rf "$W/b"; cp -r "$W/gr-thermal" "$W/b"
sed -i 's/"allreduce_ms": 20.9715,/"allreduce_ms": 83.8861,/' "$W/b/plan.json"
t groups-tampered 4 "thermap: error: $W/b/plan.json: predicted.allreduce_ms is 83.8861; the data-parallel rings give 20.9715 for this placement" -- check $GC $GJ --plan "$W/b" --profile $D/groups-profile.json
# the expert-parallel all-to-all: ep=2 replicas, one per node rank, that
# exchange 200 MiB per microbatch at both stages: 100 MiB each way at 12.5
# GB/s across groups (8.388608 ms) for torchrun's a0 and b0, at 50 GB/s
# (2.097152 ms) once the planner puts both node ranks in one group
GE="--job $D/job-ep2-a2a.json"
for pol in identity thermal; do
	t "ep-$pol" 0 "" -- plan $GC --profile $D/groups-profile.json $GE --policy policies/$pol.json -o "$W/ep-$pol"
	t "ep-$pol-check" 0 "" -- check $GC $GE --plan "$W/ep-$pol" --profile $D/groups-profile.json
done
has ep-identity-a2a "$W/ep-identity/plan.json" '"alltoall_ms": 8.3886,'
has ep-thermal-a2a "$W/ep-thermal/plan.json" '"alltoall_ms": 2.0972,'
t ep-thermal-summary 0 "" -- plan $GC --profile $D/groups-profile.json $GE -o "$W/ep-thermal"
has ep-thermal-line "$W/out" "(all-to-all up to 2.10 ms per microbatch; identity 735.78 ms, +6.80 %)"
if grep -q alltoall "$W/gr-thermal/plan.json"; then bad "groups: alltoall_ms written without ep"; else ok; fi
# check recomputes the all-to-all on its own
rm -rf "$W/b"; cp -r "$W/ep-thermal" "$W/b"
sed -i 's/"alltoall_ms": 2.0972,/"alltoall_ms": 8.3886,/' "$W/b/plan.json"
t ep-tampered 4 "thermap: error: $W/b/plan.json: predicted.alltoall_ms is 8.3886; the expert-parallel groups give 2.0972 for this placement" -- check $GC $GE --plan "$W/b" --profile $D/groups-profile.json
sed 's/"a2a_mib": 200}$/"a2a_mib": null}/' $D/job-ep2-a2a.json >"$W/job-anull.json"
t a2a-null 4 "thermap: error: $W/job-anull.json: stages[1].a2a_mib: is null; expected a number from 0 to 1e+07" -- plan $GC --profile $D/groups-profile.json --job "$W/job-anull.json" -o "$W/x"
# grad_mib: a number of MiB, not null
sed 's/"grad_mib": 800/"grad_mib": null/' $D/job-dp2-grad.json >"$W/job-gnull.json"
t grad-null 4 "thermap: error: $W/job-gnull.json: stages[0].grad_mib: is null; expected a number from 0 to 1e+07" -- plan $GC --profile $D/groups-profile.json --job "$W/job-gnull.json" -o "$W/x"
sed 's/"grad_mib": 800/"grad_mib": -1/' $D/job-dp2-grad.json >"$W/job-gneg.json"
t grad-negative 4 "thermap: error: $W/job-gneg.json: stages[0].grad_mib: -1 is out of range; expected a number from 0 to 1e+07" -- plan $GC --profile $D/groups-profile.json --job "$W/job-gneg.json" -o "$W/x"

# ---- profile join ----------------------------------------------------------
U=$D/h200x4-a-profile-no-gpu3.json
t unprofiled 4 "thermap: error: $U: no entry for host h200x4-a GPU 3 (GPU-a0000003-0000-4000-8000-000000000003); profile every GPU or pass --allow-unprofiled" -- plan --cluster $F/cluster.json --profile $U --job $F/job-pp2-dp2.json -o "$W/u"
t allow-unprofiled 0 "" -- plan --cluster $F/cluster.json --profile $U --job $F/job-pp2-dp2.json -o "$W/u" --allow-unprofiled
has unprofiled-note "$W/u/plan.json" "host h200x4-a GPU 3 has no profile entry; treated as the worst profiled GPU"

# ---- GPU counts per host -----------------------------------------------------
# a host of 4 GPUs and one of 8: a job of two node ranks is an input error;
# a job of one node rank still plans, on one host
t mixed-topo 0 - -- topo --host h200x4-a --smi-topo $F/topo-m.txt --gpus $F/smi-q.txt --host gpu-b02 --smi-topo $P/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt -o "$W/mixed.json"
sed 's/"nproc_per_node": 4/"nproc_per_node": 2/' $F/job-pp2-dp2.json >"$W/job-2x2.json"
t mixed-gpu-counts 4 "thermap: error: $W/mixed.json: nodes[1] (host \"gpu-b02\") has 8 GPUs but nodes[0] (host \"h200x4-a\") has 4: a multi-node job needs the same GPU count on every host (torchrun starts nproc_per_node processes on each)" -- plan --cluster "$W/mixed.json" --profile $F/profile.json --job "$W/job-2x2.json" -o "$W/mx"
if [ ! -e "$W/mx" ]; then ok; else bad "mixed GPU counts left a plan directory"; fi
t mixed-one-node 0 "" -- plan --cluster "$W/mixed.json" --profile $F/profile.json --job $F/job-pp2-dp2.json --allow-unprofiled -o "$W/m1" --quiet
if [ "$(ls "$W/m1/env" | wc -l)" = 1 ]; then ok; else bad "mixed, one node rank: env files $(ls "$W/m1/env")"; fi

# ---- profile -----------------------------------------------------------------
R=$F/telemetry.csv
t profile-help 0 "" -- profile --help
has profile-help-text "$W/out" "--json-summary"
t profile-no-file 2 "thermap: profile needs at least one telemetry FILE, or --live SECONDS, or --prometheus URL
Try 'thermap profile --help'." -- profile
t profile-summary-needs-o 2 "thermap: --json-summary prints on stdout, so the profile needs -o FILE
Try 'thermap profile --help'." -- profile $R --json-summary
t profile-bad-from 2 "thermap: --from 'yesterday': expected a time (2026/11/21 12:15:28, 2026-11-21T12:15:28Z, seconds since 1970) or +SECONDS
Try 'thermap profile --help'." -- profile --from yesterday $R
t profile-bad-host 2 "thermap: --host 'a b': expected a host name
Try 'thermap profile --help'." -- profile --host 'a b' $R
t profile-window-order 2 "thermap: --to is before --from
Try 'thermap profile --help'." -- profile --from +50 --to +10 $R
t profile-missing 4 "thermap: error: $W/nope.csv: cannot open: No such file or directory" -- profile "$W/nope.csv"
# stdout by default; the same bytes through -o; no temporary file left
# the recording logged no UUID: thermap says what that leaves unproven
NOUUID_R="thermap: warning: $R: no GPU UUID: its GPUs are known by host and PCI bus id only, so a profile of another machine with the same bus ids would match them too, while a profile belongs to a physical GPU; log uuid as well (nvidia-smi --query-gpu=uuid,...)"
t profile-stdout 0 "$NOUUID_R" -- profile --host h200x4-a $R
cp "$W/out" "$W/p-stdout.json"
t profile-out 0 "$NOUUID_R" -- profile --host h200x4-a $R -o "$W/p.json" --quiet
if cmp -s "$W/p.json" "$W/p-stdout.json"; then ok; else bad "profile: -o and stdout differ"; fi
if [ -z "$(ls "$W" | grep '\.tmp\.')" ]; then ok; else bad "profile left a temporary file"; fi
# stdin
"$T" profile --host h200x4-a - <"$R" >"$W/p-stdin.json" 2>"$W/err"
if cmp -s "$W/p-stdin.json" "$W/p-stdout.json"; then ok; else bad "profile: stdin differs: $(cat "$W/err")"; fi
# a failed run leaves an existing output alone
echo keep >"$W/keep.json"
t profile-keep 4 - -- profile "$W/nope.csv" -o "$W/keep.json"
has profile-kept "$W/keep.json" "keep"
# the planner takes the profile as written, joining by PCI bus id
t profile-then-plan 0 "thermap: warning: $W/p.json: 4 entries name no GPU UUID and are joined by host and PCI bus id only (first: host h200x4-a GPU 0): nothing shows they were measured on these physical GPUs, and a profile of another machine with the same bus ids would join the same way; log uuid with the telemetry" -- plan --cluster $F/cluster.json --profile "$W/p.json" --job $F/job-pp2-dp2.json -o "$W/pp" --quiet
# no header: --fields names the columns; two hosts (from --host and from the
# file name) go into one profile
tail -n +2 $R | head -400 >"$W/noheader.csv"
t profile-noheader 4 "thermap: error: $W/noheader.csv:1: no header line; name the columns with --fields (the --query-gpu list)" -- profile --host a "$W/noheader.csv"
cp "$W/noheader.csv" "$W/gpu-b7.csv"
t profile-fields 0 "thermap: warning: $W/noheader.csv: no GPU UUID: its GPUs are known by host and PCI bus id only, so a profile of another machine with the same bus ids would match them too, while a profile belongs to a physical GPU; log uuid as well (nvidia-smi --query-gpu=uuid,...)
thermap: warning: $W/gpu-b7.csv: no GPU UUID: its GPUs are known by host and PCI bus id only, so a profile of another machine with the same bus ids would match them too, while a profile belongs to a physical GPU; log uuid as well (nvidia-smi --query-gpu=uuid,...)" -- profile --fields "timestamp,index,pci.bus_id,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.mem,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,temperature.gpu.tlimit" --host node-a "$W/noheader.csv" --host node-b "$W/gpu-b7.csv" -o "$W/two.json" --json-summary
has profile-two-hosts-a "$W/two.json" '"host": "node-a"'
has profile-two-hosts-b "$W/two.json" '"host": "node-b"'
if [ "$(grep -c '"host"' "$W/two.json")" = 8 ]; then ok; else bad "profile: expected 8 GPU entries over two hosts"; fi
# --host applies to the files after it: gpu-b7.csv is node-b here
if grep -q '"host": "gpu-b7"' "$W/two.json"; then bad "profile: --host did not apply to the files after it"; else ok; fi
# the same GPUs read twice go backwards in time: refused
t profile-twice 4 "thermap: warning: $W/noheader.csv: no GPU UUID: its GPUs are known by host and PCI bus id only, so a profile of another machine with the same bus ids would match them too, while a profile belongs to a physical GPU; log uuid as well (nvidia-smi --query-gpu=uuid,...)
thermap: error: $W/gpu-b7.csv:1: time goes backwards for GPU node-b 0000:00:06.0 (51.578 s before its previous sample)" -- profile --fields "timestamp,index,pci.bus_id,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.mem,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,temperature.gpu.tlimit" --host node-b "$W/noheader.csv" "$W/gpu-b7.csv"
t profile-filename-host 0 "thermap: warning: $W/gpu-b7.csv: no --host and no Hostname label: its GPUs are taken to be on host \"gpu-b7\", from the file's name; give the host with --host NAME before the file
thermap: warning: $W/gpu-b7.csv: no GPU UUID: its GPUs are known by host and PCI bus id only, so a profile of another machine with the same bus ids would match them too, while a profile belongs to a physical GPU; log uuid as well (nvidia-smi --query-gpu=uuid,...)" -- profile --fields "timestamp,index,pci.bus_id,temperature.gpu,temperature.memory,power.draw,power.limit,clocks.sm,clocks.mem,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,temperature.gpu.tlimit" "$W/gpu-b7.csv"
has profile-filename-host-out "$W/out" '"host": "gpu-b7"'
# an absolute window in the log's own time format
t profile-window 0 "$NOUUID_R" -- profile --host h200x4-a --from "2026/11/21 12:16:00" --to "2026-11-21T12:18:00Z" $R -o "$W/w.json" --json-summary
has profile-window-skips "$W/out" '"outside_window"'

# ---- profile --phases ----------------------------------------------------------
O=fixtures/real/h200x4-onehot
OP="--host h $O/telemetry.csv"
t phases-twice 2 "thermap: option '--phases' is given more than once; it takes one value
Try 'thermap profile --help'." -- profile $OP --phases a --phases b
t phases-prometheus 2 "thermap: --phases goes with telemetry files or --live, not --prometheus (save the series as query_range files for it)
Try 'thermap profile --help'." -- profile --prometheus http://127.0.0.1:1 --last 1h --phases $O/load-phases.txt
t phases-missing 4 "thermap: error: $W/nope.txt: cannot open: No such file or directory" -- profile $OP --phases "$W/nope.txt"
t phases-device 4 "thermap: error: /dev/null: not a regular file" -- profile $OP --phases /dev/null
: >"$W/ph-empty.txt"
t phases-empty 4 "thermap: error: $W/ph-empty.txt: no phases; expected a line START END LABEL for each (# starts a comment)" -- profile $OP --phases "$W/ph-empty.txt"
printf '# rests\n1795796994 1795797056 only-0\n1795797056 soon idle\n' >"$W/ph-time.txt"
t phases-bad-time 4 "thermap: error: $W/ph-time.txt:3: END 'soon': expected a time: seconds since 1970 (1795796994.08), or ISO 8601 without blanks (2026-11-27T16:29:54.08Z)" -- profile $OP --phases "$W/ph-time.txt"
printf '1795797056 1795796994 only-0\n' >"$W/ph-back.txt"
t phases-backwards 4 "thermap: error: $W/ph-back.txt:1: END '1795796994' is not after START '1795797056'; expected a phase that ends after it starts" -- profile $OP --phases "$W/ph-back.txt"
printf '1795797056 1795797100 idle\n1795796994 1795797060 only-0\n' >"$W/ph-overlap.txt"
t phases-overlap 4 "thermap: error: $W/ph-overlap.txt:1: phase idle starts 4.000 s before phase only-0 of line 2 ends; expected phases that do not overlap" -- profile $OP --phases "$W/ph-overlap.txt"
printf '1795796994 1795797056 only 0\n' >"$W/ph-words.txt"
t phases-words 4 "thermap: error: $W/ph-words.txt:1: 4 words; expected START END LABEL separated by blanks" -- profile $OP --phases "$W/ph-words.txt"
printf '1795796994 1795797056 only-0\n\0\n' >"$W/ph-nul.txt"
t phases-nul 4 "thermap: error: $W/ph-nul.txt:2: NUL byte: binary data; expected text lines START END LABEL" -- profile $OP --phases "$W/ph-nul.txt"
awk 'BEGIN { for (i = 0; i <= 4096; i++) print 2 * i, 2 * i + 1, "p" }' >"$W/ph-many.txt"
t phases-many 4 "thermap: error: $W/ph-many.txt:4097: more than 4096 phases; expected at most 4096" -- profile $OP --phases "$W/ph-many.txt"
# a failed run writes nothing and leaves what was there
echo keep >"$W/keep.json"
t phases-keep 4 - -- profile $OP --phases "$W/ph-overlap.txt" -o "$W/keep.json"
has phases-kept "$W/keep.json" "keep"
# phases that cannot separate the neighbours (a rest and all four
# loaded): the profile without --phases, and one warning for the host
printf '2026-11-27T16:29:29.073Z 1795796994.082936305 idle\n1795797336.862305639 1795797398.294072349 all\n' >"$W/ph-uniform.txt"
"$T" profile $OP -o "$W/plain.json" --quiet 2>/dev/null
t phases-uniform 0 "thermap: warning: $W/ph-uniform.txt: 4 GPUs on 1 host get no coupling and keep their own fit: too few phases count (first: host h GPU 0: 2 of the 2 phases count for its host (every GPU needs 5 samples from 20 s after a phase starts to 1 s before it ends); the fit of 4 GPUs needs 6)" -- profile $OP --phases "$W/ph-uniform.txt" -o "$W/uniform.json" --quiet
if cmp -s "$W/plain.json" "$W/uniform.json"; then ok; else bad "phases-uniform: the profile differs from the one without --phases"; fi
t phases-ok 0 "" -- profile $OP --phases $O/load-phases.txt -o "$W/coupled.json" --json-summary
has phases-ok-summary "$W/out" '"coupled": 4,'
has phases-ok-coupling "$W/coupled.json" '"c_per_w": 0.00743'

# ---- topo --------------------------------------------------------------------
P=fixtures/public
t topo-help 0 "" -- topo --help
has topo-help-text "$W/out" "--prefer SOURCE"
t topo-no-source 2 "thermap: topo needs a source: --smi-topo, --gpus, --hwloc, --nccl or --local
Try 'thermap topo --help'." -- topo --host a
t topo-bad-prefer 2 "thermap: --prefer 'nvml': expected smi-topo, gpus, hwloc, nccl or local
Try 'thermap topo --help'." -- topo --prefer nvml --smi-topo $F/topo-m.txt
t topo-no-host 2 "thermap: name the host of these inputs with --host NAME before them
Try 'thermap topo --help'." -- topo --smi-topo $F/topo-m.txt
t topo-twice 2 "thermap: host a is given twice; give each host's inputs after one --host
Try 'thermap topo --help'." -- topo --host a --smi-topo $F/topo-m.txt --host a --smi-topo $F/topo-m.txt
t topo-gpus-only 4 "thermap: error: host a: no source gives the links between its GPUs (add --smi-topo, --hwloc, --nccl or --local)" -- topo --host a --gpus $F/smi-q.txt
# the recorded host, from its own reports: the plan is the one the
# hand-checked cluster gives
t topo-h200 0 - -- topo --host h200x4-a --smi-topo $F/topo-m.txt --gpus $F/smi-q.txt --hwloc $F/hwloc.xml -o "$W/cl.json"
t topo-h200-plan 0 "" -- plan --cluster "$W/cl.json" --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/tp" --quiet
t topo-h200-plan-ref 0 "" -- plan --cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/tq" --quiet
if [ "$(grep CUDA_VISIBLE "$W/tp/env/h200x4-a.env")" = "$(grep CUDA_VISIBLE "$W/tq/env/h200x4-a.env")" ]; then ok; else bad "topo: plan differs from the hand-checked cluster's"; fi
# two hosts in one file, in the order given
t topo-two 0 - -- topo --host b --smi-topo $F/topo-m.txt --host a --smi-topo $F/topo-m.txt
if [ "$(grep -o '"host": "[ab]"' "$W/out" | tr -d '\n')" = '"host": "b""host": "a"' ]; then ok; else bad "topo: hosts not in the order given"; fi
# clusters written by topo from public topo -m samples: plans respect links
t topo-dgx1 0 - -- topo --host dgx1 --smi-topo $P/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt -o "$W/dgx1-cl.json"
t topo-dgx1-plan 0 "" -- plan --cluster "$W/dgx1-cl.json" --profile $D/dgx1-profile.json --job $D/job-tp2pp4.json -o "$W/dgx1t" --quiet
t topo-dgx1-check 0 "" -- check --cluster "$W/dgx1-cl.json" --job $D/job-tp2pp4.json --plan "$W/dgx1t"
has topo-dgx1-nvlink "$W/out" "tp_nvlink holds"
t topo-a10 0 - -- topo --host a10 --smi-topo $P/a10-allsys/a10-4gpu-allSYS-2nic_xuesongtap.txt -o "$W/a10-cl.json"
t topo-a10-infeasible 5 "thermap: error: infeasible: tp_nvlink: tensor-parallel group (ranks 0,1) needs 2 GPUs joined by NVLink; host a10 has no such set; missing links: GPU0-GPU1 SYS, GPU0-GPU2 SYS, GPU0-GPU3 SYS, GPU1-GPU2 SYS, GPU1-GPU3 SYS, GPU2-GPU3 SYS" -- plan --cluster "$W/a10-cl.json" --profile $D/a10-profile.json --job $D/job-a10-tp2.json -o "$W/a10t"
# --prefer keeps one source's word and warns
t topo-prefer 0 "thermap: warning: host a: smi-topo (fixtures/public/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt) lists 8 GPUs, gpus (fixtures/h200x4-a/smi-q.txt) lists 4; keeping smi-topo's
thermap: warning: host a: fixtures/public/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt: no NUMA Affinity column; NUMA nodes unknown" -- topo --host a --prefer smi-topo --smi-topo fixtures/public/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt --gpus $F/smi-q.txt
has topo-prefer-matrix "$W/out" '["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"]'
# an NVLink that one source has and the other has not
printf '\tGPU0\tGPU1\tGPU2\tGPU3\nGPU0\t X \tSYS\tSYS\tSYS\nGPU1\tSYS\t X \tSYS\tSYS\nGPU2\tSYS\tSYS\t X \tSYS\nGPU3\tSYS\tSYS\tSYS\t X \n' >"$W/sys4.txt"
t topo-nv-disagree 4 "thermap: error: host p8: GPUs 0 and 1: 0 NVLinks in smi-topo ($W/sys4.txt), 2 in hwloc (fixtures/topo/hwloc-xml/power8gpudistances.hwloc2-v2.14.xml); fix the inputs or pass --prefer SOURCE" -- topo --host p8 --smi-topo "$W/sys4.txt" --hwloc fixtures/topo/hwloc-xml/power8gpudistances.hwloc2-v2.14.xml
# disagreeing sources: the DGX-1's matrix with the H200's GPU list
t topo-disagree 4 "thermap: error: host a: gpus (fixtures/h200x4-a/smi-q.txt) lists 4 GPUs, smi-topo (fixtures/public/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt) lists 8; fix the inputs or pass --prefer SOURCE" -- topo --host a --smi-topo fixtures/public/dgx1-v100/dgx1-v100-8gpu-4nic_msccl-tools.txt --gpus $F/smi-q.txt

# ---- hostile inputs ----------------------------------------------------------
head -c 300 $F/cluster.json >"$W/trunc.json"
t truncated 4 "thermap: error: $W/trunc.json:13:4: '}' expected near end of file" -- plan --cluster "$W/trunc.json" --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/x"
t dev-zero 4 "thermap: error: /dev/zero: not a regular file" -- plan --cluster $F/cluster.json --profile /dev/zero --job $F/job-pp2-dp2.json -o "$W/x"
head -c 2000 /dev/urandom >"$W/noise.json"
t noise 4 - -- plan --cluster "$W/noise.json" --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/x"
if [ "$(wc -l <"$W/err")" = 1 ]; then ok; else bad "noise: not one line"; fi
awk 'BEGIN { printf "{\"format\":\"thermap.cluster/1\",\"nodes\":"; for (i = 0; i < 100000; i++) printf "["; }' >"$W/deep.json"
t deep 4 - -- plan --cluster "$W/deep.json" --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/x"
printf '{"format":"thermap.job/1","parallel":{"pp":1e300}}' >"$W/huge.json"
t huge-number 4 "thermap: error: $W/huge.json: parallel.pp: 1e+300 is out of range; expected an integer from 1 to 65536" -- plan --cluster $F/cluster.json --profile $F/profile.json --job "$W/huge.json" -o "$W/x"
mkdir -p "$W/notplan" && echo keep >"$W/notplan/data"
t not-a-plan-dir 2 "thermap: error: $W/notplan: exists and is not a thermap plan directory; refusing to replace it" -- plan --cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/notplan"
has not-a-plan-kept "$W/notplan/data" "keep"
if [ ! -e "$W/x" ]; then ok; else bad "a rejected input left $W/x"; fi

# a stage's reason names the derate that decided it, with its uncertainty:
# GPU 2 measured 5 % slower in the job's own run
awk 'NR == 81 { sub(/1\.0,/, "1.05,") } NR == 83 { sub(/power-cap/, "job") } { print }' \
	$F/profile.json >"$W/slow2.json"
t why-derate 0 "" -- plan --cluster $F/cluster.json --profile "$W/slow2.json" --job $F/job-pp2-dp2.json -o "$W/slow2"
has why-derate-slow "$W/out" "on h200x4-a GPU 2,1, the least headroom (18.4, 21.9 °C), derate 1.050 ± 0.010; predicted"
has why-derate-fast "$W/out" "on h200x4-a GPU 0,3, the most headroom (26.7, 24.0 °C), derate 1.000 ± 0.010; predicted"
# equal speeds: no derate named
t why-no-derate 0 "" -- plan --cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json -o "$W/eq"
if grep -q derate "$W/out"; then bad "why-no-derate: $(cat "$W/out")"; else ok; fi

# ---- compare --svg-scale -------------------------------------------------------
CMPA="--cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json policies/thermal.json"
# shellcheck disable=SC2086
t svg-default 0 - -- compare $CMPA --svg "$W/d.svg"
has svg-default-scale "$W/d.svg" "fixed scale 30.0 to 90.0 °C"
# shellcheck disable=SC2086
t svg-fixed 0 - -- compare $CMPA --svg "$W/f.svg" --svg-scale 40:80
has svg-fixed-scale "$W/f.svg" "fixed scale 40.0 to 80.0 °C"
# auto: the pictured GPUs' range, which on this profile is 58.9 to 61.6 °C
# shellcheck disable=SC2086
t svg-auto 0 - -- compare $CMPA --svg "$W/a.svg" --svg-scale auto
has svg-auto-scale "$W/a.svg" "the pictured GPUs' scale 58.9 to 61.6 °C"
for v in 90:30 30:30 x 30: :90 auto2 -100:50 30:250 30:90:1 nan:90 30:inf; do
	# shellcheck disable=SC2086
	t "svg-scale-$v" 2 "thermap: --svg-scale '$v': expected LO:HI in degrees C, LO below HI, both from -50 to 200, or auto
Try 'thermap compare --help'." -- compare $CMPA --svg "$W/bad.svg" --svg-scale "$v"
done
# shellcheck disable=SC2086
t svg-scale-alone 2 "thermap: --svg-scale sets the colours of --svg FILE; give both
Try 'thermap compare --help'." -- compare $CMPA --svg-scale auto
if [ ! -e "$W/bad.svg" ]; then ok; else bad "a rejected --svg-scale wrote $W/bad.svg"; fi

finish
