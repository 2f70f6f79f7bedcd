#!/bin/sh
# tests/launch/run.sh: the launcher files of a plan directory
# (docs/launching.md), against the real launchers where they run here.
#  - entry.sh, fed each host's variables of a two-host plan as Slurm and
#    Open MPI set them: every task gets the rank, local rank, world size
#    and GPU that plan.json gives it, whatever rank the launcher numbered
#    it; every mismatch (a host not in the plan, a local rank past the
#    plan's, a task count that is not the world size, an env file of
#    another plan, a GPU that is not here) stops the task before its
#    command with one line and exit 78;
#  - the GPU check reads nvidia-smi's listing; there are no GPUs here, so
#    a stand-in prints a listing (this checks the script's reading of it;
#    the real nvidia-smi ran on a GPU machine, docs/launching.md);
#  - thermap check of the launcher files, and of each one tampered with;
#  - Open MPI's mpirun (Debian's openmpi-bin) with the plan's rankfile,
#    and Slurm (Debian's slurmctld, slurmd and munge, started privately
#    by tests/launch/slurm-up.sh) with srun per node and per task, on a
#    plan for this host, and on a plan of two hosts with one slurmd per
#    host on this machine (slurmd -N): every line the tasks print is
#    compared with plan.json. Where the sandbox refuses a daemon the check fails with
#    what was refused, unless THERMAP_SKIP names it (slurm, mpirun).
# THERMAP names the binary (build/thermap by default).
. tests/lib.sh
preamble launch "$@"
D=tests/cli/data
command -v jq >/dev/null 2>&1 || { echo "launch: needs jq"; exit 1; }

# the training command: what a process would use, one line
cat >"$W/train.sh" <<'EOF'
#!/bin/sh
i=0 g=
for x in $(echo "$CUDA_VISIBLE_DEVICES" | tr , ' '); do
	[ "$i" = "$LOCAL_RANK" ] && g=$x
	i=$((i + 1))
done
echo "$RANK ${SLURMD_NODENAME:-${THERMAP_HOST:-$(hostname)}} $LOCAL_RANK $g $WORLD_SIZE"
EOF
# what plan.json gives every rank: "rank host local_rank gpu world"
want() {
	jq -r '(.ranks | length) as $w | .ranks[] |
	       "\(.rank) \(.host) \(.local_rank) \(.uuid // .gpu_index) \($w)"' \
		"$1/plan.json" | sort -n
}
same() {  # name file-of-lines plan-dir
	sort -n "$2" >"$2.sorted"
	want "$3" >"$W/want"
	if cmp -s "$2.sorted" "$W/want"; then ok
	else bad "$1: the tasks differ from plan.json:"; diff "$W/want" "$2.sorted" | head -8; fi
}

# ---- entry.sh on a two-host plan ---------------------------------------------
GC="--cluster $D/groups-cluster.json"
GJ="--job $D/job-ep2-a2a.json"
# shellcheck disable=SC2086
"$T" plan $GC --profile $D/groups-profile.json $GJ -o "$W/p2" --quiet ||
	{ echo "launch: plan failed"; exit 1; }
P=$W/p2
if [ -x "$P/entry.sh" ]; then ok; else bad "entry.sh is not executable"; fi
# per task, as Slurm numbers them in its own node order (b1 first): the
# ranks are still the plan's
: >"$W/tasks"
pr=0
for h in b1 b0; do
	for l in 0 1; do
		THERMAP_HOST=$h SLURM_LOCALID=$l SLURM_PROCID=$pr SLURM_NTASKS=4 \
		THERMAP_SKIP_GPU_CHECK=1 sh "$P/entry.sh" --per-task sh "$W/train.sh" \
			>>"$W/tasks" 2>"$W/err" || bad "entry $h/$l: $(cat "$W/err")"
		pr=$((pr + 1))
	done
done
same per-task-slurm "$W/tasks" "$P"
# the same with Open MPI's names
: >"$W/tasks"
for h in b0 b1; do
	for l in 0 1; do
		THERMAP_HOST=$h OMPI_COMM_WORLD_LOCAL_RANK=$l OMPI_COMM_WORLD_SIZE=4 \
		THERMAP_SKIP_GPU_CHECK=1 sh "$P/entry.sh" --per-task sh "$W/train.sh" \
			>>"$W/tasks" 2>/dev/null
	done
done
same per-task-mpi "$W/tasks" "$P"
# per host (torchrun): the host's env file, PET_* names included
for h in b0 b1; do
	n=$(jq -r ".nodes[] | select(.host == \"$h\") | .node_rank" "$P/plan.json")
	got=$(THERMAP_HOST=$h THERMAP_SKIP_GPU_CHECK=1 sh "$P/entry.sh" sh -c \
		'echo $NODE_RANK $PET_NODE_RANK $NNODES $PET_NNODES $PET_RDZV_BACKEND $MASTER_ADDR' 2>/dev/null)
	if [ "$got" = "$n $n 2 2 static b0" ]; then ok
	else bad "per-host $h: '$got'"; fi
done
# mismatches: one line, exit 78, the command never runs
stop() {  # name message env-assignments...
	name=$1 msg=$2
	shift 2
	env "$@" THERMAP_SKIP_GPU_CHECK=1 sh "$P/entry.sh" --per-task \
		sh -c 'echo ran' >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 78 ] && [ ! -s "$W/out" ] &&
	   [ "$(grep -vc 'GPU check skipped' "$W/err")" = 1 ] &&
	   grep -qF -- "$msg" "$W/err"; then ok
	else bad "$name: exit $rc, out '$(cat "$W/out")', err '$(cat "$W/err")'"; fi
}
stop unknown-host "thermap entry: host c9 has no env file in $P/env: it is not a host of plan" THERMAP_HOST=c9 SLURM_LOCALID=0
stop local-rank "thermap entry: b0: local rank 2 is outside the plan's 2 per host" THERMAP_HOST=b0 SLURM_LOCALID=2
stop no-local-rank "thermap entry: b0: --per-task needs the launcher's local rank" THERMAP_HOST=b0
stop task-count "thermap entry: b0: the launcher started 6 tasks; the plan has 4 ranks" THERMAP_HOST=b0 SLURM_LOCALID=0 SLURM_NTASKS=6
cp -r "$P" "$W/other"
sed -i 's/^THERMAP_PLAN=.*/THERMAP_PLAN=0000000000000000/' "$W/other/env/b0.env"
P0=$P
P=$W/other
stop other-plan "/env/b0.env: THERMAP_PLAN is '0000000000000000', not" THERMAP_HOST=b0 SLURM_LOCALID=0
P=$P0
# the GPU check, on nvidia-smi's listing (a stand-in prints one)
mkdir -p "$W/bin"
printf '#!/bin/sh\necho "0, GPU-0000"\necho "1, GPU-1111"\n' >"$W/bin/nvidia-smi"
chmod +x "$W/bin/nvidia-smi"
if PATH=$W/bin:$PATH THERMAP_HOST=b0 sh "$P/entry.sh" true 2>"$W/err"; then ok
else bad "gpu-check with GPUs 0 and 1: $(cat "$W/err")"; fi
printf '#!/bin/sh\necho "0, GPU-0000"\n' >"$W/bin/nvidia-smi"
if PATH=$W/bin:$PATH THERMAP_HOST=b0 sh "$P/entry.sh" true 2>"$W/err"; then
	bad "gpu-check: GPU 1 missing, yet it ran"
elif grep -qF "thermap entry: b0: GPU 1 of the plan is not here" "$W/err"; then ok
else bad "gpu-check: $(cat "$W/err")"; fi
printf '#!/bin/sh\necho "NVIDIA-SMI has failed" >&2\nexit 9\n' >"$W/bin/nvidia-smi"
if PATH=$W/bin:$PATH THERMAP_HOST=b0 sh "$P/entry.sh" true 2>"$W/err"; then
	bad "gpu-check: nvidia-smi failed, yet it ran"
elif grep -qF "thermap entry: b0: cannot list the GPUs with nvidia-smi: NVIDIA-SMI has failed" "$W/err"; then ok
else bad "gpu-check-fail: $(cat "$W/err")"; fi

# ---- thermap check of the launcher files ---------------------------------------
chk() {  # name message file-to-tamper sed-expression
	rm -rf "$W/t"
	cp -r "$P" "$W/t"
	sed -i "$4" "$W/t/$3"
	# shellcheck disable=SC2086
	"$T" check $GC $GJ --plan "$W/t" >"$W/out" 2>"$W/err"
	rc=$?
	if [ $rc = 4 ] && grep -qF -- "$2" "$W/err"; then ok
	else bad "check-$1: exit $rc: $(cat "$W/err")"; fi
}
# shellcheck disable=SC2086
if "$T" check $GC $GJ --plan "$P" | grep -q "; the launcher files agree"; then ok
else bad "check: the launcher files are not said to agree"; fi
chk slurm "$W/t/slurm.hostfile:3: b0; rank 2 is on b1" slurm.hostfile '3s/b1/b0/'
chk slurm-short "$W/t/slurm.hostfile: 3 lines; the plan has 4 ranks" slurm.hostfile '$d'
chk rankfile "$W/t/mpi.rankfile:3: rank 1 on b1; the plan puts it on b0" mpi.rankfile 's/rank 1=b0/rank 1=b1/'
chk rankfile-twice "$W/t/mpi.rankfile:3: rank 0 is out of range or repeats another line" mpi.rankfile 's/rank 1=/rank 0=/'
chk rankfile-grammar "$W/t/mpi.rankfile:2: expected rank N=HOST slot=SPEC" mpi.rankfile 's/ slot=0//'
chk deepspeed "$W/t/deepspeed.hostfile:2: b1 slots=2; node rank 0 is b0 slots=2" deepspeed.hostfile '2s/b0/b1/'
chk include "$W/t/launch.txt:" launch.txt 's/--include b0:\([0-9]\),\([0-9]\)/--include b0:\2,\1/'
chk entry "$W/t/entry.sh:" entry.sh 's/exit 78/exit 0/'
chk pet "$W/t/env/b1.env: PET_NODE_RANK=0; NODE_RANK is 1" env/b1.env 's/^PET_NODE_RANK=.*/PET_NODE_RANK=0/'
chk megatron "$W/t/megatron.args:4: 1; the plan's Megatron-LM arguments have 2 there" megatron.args '4s/2/1/'
chk megatron-extra "$W/t/megatron.args:9: --extra; the plan's Megatron-LM arguments end before it" megatron.args '$a --extra'
# the ep job's order (tp-cp-pp-ep-dp) is neither of Megatron-LM's: said
if grep -qF "# Megatron-LM cannot start ranks in this plan's order (tp-cp-pp-ep-dp)" "$P/launch.txt"
then ok; else bad "launch.txt does not say Megatron-LM cannot take the order"; fi
# Megatron-LM's alternative order (tp-pp-dp) takes its flag; a policy's
# layers take the layout, which check compares with plan.json's
F=fixtures/h200x4-a
sed 's/"order": "tp-cp-ep-dp-pp"/"order": "tp-pp-dp"/' $F/job-pp2-dp2.json >"$W/job-tpd.json"
"$T" plan --cluster $F/cluster.json --profile $F/profile.json --job "$W/job-tpd.json" \
	-o "$W/tpd" --quiet
if grep -qx -- "--use-tp-pp-dp-mapping" "$W/tpd/megatron.args" &&
   ! grep -q "cannot start ranks" "$W/tpd/launch.txt"; then ok
else bad "tp-pp-dp: $(tr '\n' ' ' <"$W/tpd/megatron.args")"; fi
if grep -q -- "--use-tp-pp-dp-mapping" "$P/megatron.args"; then
	bad "the mapping flag for another order"; else ok; fi
"$T" plan --cluster $F/cluster.json --profile $F/profile.json --job $F/job-pp2-dp2.json \
	--policy policies/rebalance.json -o "$W/rl" --quiet
lay=$(jq -r '.layers.pipeline_model_parallel_layout' "$W/rl/plan.json")
if [ "$(sed -n '/^--pipeline-model-parallel-layout$/{n;p;}' "$W/rl/megatron.args")" = "$lay" ] &&
   [ -n "$lay" ]; then ok; else bad "megatron.args: no layout $lay"; fi
if "$T" check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$W/rl" >/dev/null; then ok
else bad "check of the relayered plan's megatron.args"; fi
sed -i '$d' "$W/rl/megatron.args"
if "$T" check --cluster $F/cluster.json --job $F/job-pp2-dp2.json --plan "$W/rl" 2>&1 |
   grep -qF "$W/rl/megatron.args: ends at line 9; the plan's Megatron-LM arguments go on with $lay"
then ok; else bad "check: a megatron.args without its layout passes"; fi
rm -rf "$W/t"
cp -r "$P" "$W/t"
chmod -x "$W/t/entry.sh"
# shellcheck disable=SC2086
if "$T" check $GC $GJ --plan "$W/t" 2>&1 | grep -qF "$W/t/entry.sh: is not executable"; then ok
else bad "check: an entry.sh that cannot run passes"; fi
# a plan from before the launcher files: not applicable
rm -f "$W/t/entry.sh" "$W/t/slurm.hostfile" "$W/t/mpi.rankfile" \
	"$W/t/deepspeed.hostfile" "$W/t/megatron.args"
# shellcheck disable=SC2086
"$T" check $GC $GJ --plan "$W/t" --format json >"$W/out" 2>/dev/null
if grep -qF '{"name": "launchers", "result": "not_applicable"}' "$W/out"; then ok
else bad "check: a plan without launcher files: $(grep launchers "$W/out")"; fi

# ---- NUMA: each task on the NUMA node of its GPU ---------------------------------
# GPU i of every host on NUMA node i mod 2: THERMAP_NUMA lists the nodes of
# each host's GPUs in local-rank order, as plan.json puts the ranks
jq '.nodes[].gpus[] |= . + {"numa_node": (.index % 2)}' $D/groups-cluster.json \
	>"$W/numa-cluster.json"
# shellcheck disable=SC2086
"$T" plan --cluster "$W/numa-cluster.json" --profile $D/groups-profile.json $GJ \
	-o "$W/pn" --quiet
for h in b0 b1; do
	want=$(jq -r "[.ranks[] | select(.host == \"$h\") | .gpu_index % 2 | tostring] | join(\",\")" \
		"$W/pn/plan.json")
	if grep -qx "THERMAP_NUMA=$want" "$W/pn/env/$h.env"; then ok
	else bad "numa $h: $(grep THERMAP_NUMA "$W/pn/env/$h.env"), want $want"; fi
done
if "$T" check --cluster "$W/numa-cluster.json" $GJ --plan "$W/pn" >/dev/null; then ok
else bad "check of a plan with THERMAP_NUMA"; fi
rm -rf "$W/t"
cp -r "$W/pn" "$W/t"
sed -i 's/^THERMAP_NUMA=\([01]\),\([01]\)/THERMAP_NUMA=\2,\1/' "$W/t/env/b0.env"
# shellcheck disable=SC2086
if "$T" check --cluster "$W/numa-cluster.json" $GJ --plan "$W/t" 2>&1 |
   grep -qF "$W/t/env/b0.env: THERMAP_NUMA="; then ok
else bad "check: THERMAP_NUMA swapped passes"; fi
# a plan whose cluster gives no NUMA nodes has none
if grep -q THERMAP_NUMA "$P/env/b0.env"; then bad "THERMAP_NUMA without NUMA facts"; else ok; fi

# ---- the real launchers, on a plan for this host ---------------------------------
H=$(hostname -s)
F=fixtures/h200x4-a
# every GPU on NUMA node 0, the one node of a test machine
sed "s/\"h200x4-a\"/\"$H\"/g" $F/cluster.json |
	jq '.nodes[].gpus[] |= . + {"numa_node": 0}' >"$W/cluster.json"
sed "s/\"h200x4-a\"/\"$H\"/g" $F/profile.json >"$W/profile.json"
"$T" plan --cluster "$W/cluster.json" --profile "$W/profile.json" \
	--job $F/job-pp2-dp2.json -o "$W/pl" --quiet ||
	{ echo "launch: plan for this host failed"; exit 1; }
L=$W/pl
cp "$W/train.sh" "$L/train.sh"
# Open MPI: the rankfile maps every rank to its host; the entry point
# sets the rest; with the rankfile Open MPI's own rank is the plan's too
if command -v mpirun >/dev/null 2>&1; then
	(cd "$L" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	 THERMAP_SKIP_GPU_CHECK=1 timeout 120 mpirun -np 4 --rankfile mpi.rankfile \
	 --bind-to none -x THERMAP_SKIP_GPU_CHECK sh entry.sh --per-task \
	 sh -c 'echo "$OMPI_COMM_WORLD_RANK $RANK" >>ompi-ranks; sh train.sh') \
		>"$W/mpi" 2>"$W/mpi.err"
	rc=$?
	if [ $rc = 0 ]; then ok; else bad "mpirun: exit $rc: $(head -3 "$W/mpi.err")"; fi
	same mpirun "$W/mpi" "$L"
	# each rank ran under numactl on its GPU's node (real numactl)
	(cd "$L" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	 THERMAP_SKIP_GPU_CHECK=1 timeout 120 mpirun -np 4 --rankfile mpi.rankfile \
	 --bind-to none -x THERMAP_SKIP_GPU_CHECK sh entry.sh --per-task \
	 numactl --show) >"$W/numa" 2>"$W/numa.err"
	if [ "$(grep -c '^preferred node: 0$' "$W/numa")" = 4 ] &&
	   [ "$(grep -c '^cpubind: 0 *$' "$W/numa")" = 4 ]; then ok
	else bad "mpirun: ranks not bound to NUMA node 0: $(head -3 "$W/numa") $(head -2 "$W/numa.err")"; fi
	if awk '$1 != $2 { bad = 1 } END { exit bad || NR != 4 }' "$L/ompi-ranks"
	then ok; else bad "mpirun: Open MPI's ranks are not the plan's: $(cat "$L/ompi-ranks")"; fi
else
	skipped mpirun mpirun "no mpirun (Debian's openmpi-bin)"
fi
# Slurm, started here for this test only
if [ -f tests/launch/slurm-up.sh ]; then
	S=$W/slurm
	mkdir -p "$S"
	out=$(sh tests/launch/slurm-up.sh start "$S" 2>"$W/slurm.err")
	rc=$?
	if [ $rc = 0 ]; then
		eval "$out"
		ok
		# one torchrun per node: the entry point exports the host's env
		(cd "$L" && THERMAP_SKIP_GPU_CHECK=1 timeout 120 srun -N1 -n1 \
		 --ntasks-per-node=1 sh entry.sh sh -c \
		 'echo $NODE_RANK $PET_NODE_RANK $NPROC_PER_NODE $CUDA_VISIBLE_DEVICES') \
			>"$W/srun1" 2>"$W/srun1.err"
		n=$(jq -r '.nodes[0] | "0 0 4 \(.cuda_visible_devices)"' "$L/plan.json")
		if [ "$(cat "$W/srun1")" = "$n" ]; then ok
		else bad "srun per node: '$(cat "$W/srun1")', want '$n': $(head -3 "$W/srun1.err")"; fi
		# one task per GPU, ranks from the hostfile
		(cd "$L" && THERMAP_SKIP_GPU_CHECK=1 SLURM_HOSTFILE=slurm.hostfile \
		 timeout 120 srun --ntasks=4 --distribution=arbitrary sh entry.sh \
		 --per-task sh -c 'echo "$SLURM_PROCID $RANK" >>slurm-ranks; sh train.sh') \
			>"$W/srun4" 2>"$W/srun4.err"
		rc=$?
		if [ $rc = 0 ]; then ok; else bad "srun per task: exit $rc: $(head -3 "$W/srun4.err")"; fi
		same srun-per-task "$W/srun4" "$L"
		if awk '$1 != $2 { bad = 1 } END { exit bad || NR != 4 }' "$L/slurm-ranks"
		then ok; else bad "srun: Slurm's ranks are not the plan's: $(cat "$L/slurm-ranks")"; fi
		# Slurm binding the GPUs itself, as launch.txt's map_gpu line
		# says (without the entry point): task r sees the plan's GPU
		map=$(sed -n 's/.*--gpu-bind=map_gpu:\([0-9,]*\).*/\1/p' "$L/launch.txt")
		if [ -n "$map" ]; then
			(cd "$L" && SLURM_HOSTFILE=slurm.hostfile timeout 120 srun \
			 --ntasks=4 --distribution=arbitrary --gres=gpu:4 \
			 --gpu-bind=map_gpu:"$map" sh -c 'echo "$SLURM_PROCID $CUDA_VISIBLE_DEVICES"') \
				2>"$W/map.err" | sort -n >"$W/map"
			jq -r '.ranks[] | "\(.rank) \(.gpu_index)"' "$L/plan.json" >"$W/map.want"
			if cmp -s "$W/map" "$W/map.want"; then ok
			else bad "srun map_gpu:$map: $(tr '\n' ';' <"$W/map") want $(tr '\n' ';' <"$W/map.want") $(head -2 "$W/map.err")"; fi
		else
			bad "launch.txt has no map_gpu line for a one-host plan"
		fi
		# a wrong task count stops every task before its command
		(cd "$L" && THERMAP_SKIP_GPU_CHECK=1 timeout 120 srun --ntasks=2 sh entry.sh \
		 --per-task sh -c 'echo ran') >"$W/srun2" 2>"$W/srun2.err"
		if [ ! -s "$W/srun2" ] && grep -qF "the launcher started 2 tasks; the plan has 4 ranks" "$W/srun2.err"
		then ok; else bad "srun with 2 tasks: '$(cat "$W/srun2")' $(head -3 "$W/srun2.err")"; fi
		sh tests/launch/slurm-up.sh stop "$S" >/dev/null 2>&1
		# a plan of two hosts under the real Slurm: one slurmd per host of
		# the cluster on this machine (slurmd -N), named as the plan's
		sed 's/"a0"/"n0"/; s/"b0"/"n1"/; s/"a1"/"n2"/; s/"b1"/"n3"/' \
			$D/groups-cluster.json >"$W/n-cluster.json"
		sed 's/"a0"/"n0"/g; s/"b0"/"n1"/g; s/"a1"/"n2"/g; s/"b1"/"n3"/g' \
			$D/groups-profile.json >"$W/n-profile.json"
		# shellcheck disable=SC2086
		"$T" plan --cluster "$W/n-cluster.json" --profile "$W/n-profile.json" \
			$GJ -o "$W/pm" --quiet
		M=$W/pm
		cp "$W/train.sh" "$M/train.sh"
		S2=$W/slurm2
		mkdir -p "$S2"
		if out=$(SLURM_UP_NODES="n0 n1 n2 n3" sh tests/launch/slurm-up.sh start "$S2" 2>"$W/slurm2.err"); then
			eval "$out"
			ok
			# per task, the hostfile's order: every task as plan.json says
			(cd "$M" && THERMAP_SKIP_GPU_CHECK=1 SLURM_HOSTFILE=slurm.hostfile \
			 timeout 120 srun --ntasks=4 --distribution=arbitrary sh entry.sh \
			 --per-task sh train.sh) >"$W/m4" 2>"$W/m4.err"
			same srun-two-hosts-per-task "$W/m4" "$M"
			# per node, the nodelist of launch.txt: each host's env file
			nl=$(sed -n 's/^srun --nodes=2 --ntasks-per-node=1 --nodelist=\([^ ]*\) .*/\1/p' "$M/launch.txt")
			(cd "$M" && THERMAP_SKIP_GPU_CHECK=1 timeout 120 srun --nodes=2 \
			 --ntasks-per-node=1 --nodelist="$nl" sh entry.sh sh -c \
			 'echo $SLURMD_NODENAME $NODE_RANK $PET_NODE_RANK') 2>"$W/m2.err" |
				sort >"$W/m2"
			jq -r '.nodes[] | "\(.host) \(.node_rank) \(.node_rank)"' "$M/plan.json" |
				sort >"$W/m2.want"
			if [ -n "$nl" ] && cmp -s "$W/m2" "$W/m2.want"; then ok
			else bad "srun two hosts per node ($nl): $(cat "$W/m2") $(head -2 "$W/m2.err")"; fi
			sh tests/launch/slurm-up.sh stop "$S2" >/dev/null 2>&1
		else
			bad "slurm, four nodes: could not start: $(head -3 "$W/slurm2.err")"
		fi
	elif [ $rc = 77 ]; then
		skipped slurm slurm "$(head -1 "$W/slurm.err")"
	else
		bad "slurm: could not start: $(head -3 "$W/slurm.err")"
	fi
else
	skipped slurm slurm "tests/launch/slurm-up.sh is missing"
fi
finish
