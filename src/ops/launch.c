/*
 * launch.c — the launcher files of a plan directory (docs/launching.md):
 * entry.sh, the entry point every launcher runs (it finds this host's env
 * file, checks the GPUs it names, exports it and, per task, the rank, and
 * runs the command); slurm.hostfile (the host of every rank, in rank
 * order, for srun --distribution=arbitrary); mpi.rankfile (Open MPI);
 * deepspeed.hostfile; megatron.args (Megatron-LM's parallel arguments);
 * and launch.txt, the lines to start each. plan.c
 * writes them; check.c reads them back with its own code.
 */
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

const char *const tm_launch_files[TM_NLAUNCH] = { "entry.sh",
	"slurm.hostfile", "mpi.rankfile", "deepspeed.hostfile", "megatron.args",
	"launch.txt" };

static const char *host_of_node(const tm_problem *pb, const int *flat, int n)
{
	return pb->c->nodes[pb->gpu_host[flat[n * pb->nproc]]].host;
}

/* The entry point. Plain POSIX sh; the plan's id is its only variable
 * part, so check can write it again and compare. Exit 78 (EX_CONFIG)
 * when this task does not match the plan. */
void tm_launch_entry(const char *id, strbuf *b)
{
	sb_addf(b,
"#!/bin/sh\n"
"# thermap plan %s: the entry point for every launcher (docs/launching.md)\n"
"#   sh entry.sh COMMAND [ARGS...]             one process per host (torchrun)\n"
"#   sh entry.sh --per-task COMMAND [ARGS...]  one process per rank (srun, mpirun)\n"
"# It finds this host's env file (by THERMAP_HOST, else SLURMD_NODENAME, else\n"
"# the host name, full or short), checks with nvidia-smi that every GPU it\n"
"# names is here, exports it and runs COMMAND. Per task it also exports\n"
"# RANK = NODE_RANK * NPROC_PER_NODE + the launcher's local rank\n"
"# (SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK or LOCAL_RANK), LOCAL_RANK,\n"
"# WORLD_SIZE and LOCAL_WORLD_SIZE: the plan's ranks whatever order the\n"
"# launcher gives its nodes, and, where the env file gives THERMAP_NUMA, runs\n"
"# the task under numactl on the NUMA node of its GPU. Anything that does\n"
"# not match the plan stops the task before COMMAND with one line and exit\n"
"# status 78.\n"
"# THERMAP_SKIP_GPU_CHECK=1 starts without the GPU check (no nvidia-smi).\n"
"plan=%s\n"
"die() { echo \"thermap entry: $*\" >&2; exit 78; }\n"
"here=$(cd \"$(dirname \"$0\")\" && pwd) || die \"cannot find the plan directory\"\n"
"per_task=0\n"
"if [ \"${1:-}\" = --per-task ]; then per_task=1; shift; fi\n"
"[ $# -ge 1 ] || die \"usage: entry.sh [--per-task] COMMAND [ARGS...]\"\n"
"host=${THERMAP_HOST:-${SLURMD_NODENAME:-$(hostname)}}\n"
"env=$here/env/$host.env\n"
"[ -f \"$env\" ] || env=$here/env/${host%%%%.*}.env\n"
"[ -f \"$env\" ] || die \"host $host has no env file in $here/env: it is not a host of plan $plan\"\n"
"set -a\n"
". \"$env\" || die \"$env: cannot be read\"\n"
"set +a\n"
"[ \"${THERMAP_PLAN:-}\" = \"$plan\" ] || die \"$env: THERMAP_PLAN is '${THERMAP_PLAN:-}', not $plan\"\n"
"if [ \"${THERMAP_SKIP_GPU_CHECK:-}\" = 1 ]; then\n"
"\techo \"thermap entry: $host: GPU check skipped (THERMAP_SKIP_GPU_CHECK=1)\" >&2\n"
"else\n"
"\tgpus=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>&1) ||\n"
"\t\tdie \"$host: cannot list the GPUs with nvidia-smi: $gpus\"\n"
"\tlist=$CUDA_VISIBLE_DEVICES\n"
"\twhile [ -n \"$list\" ]; do\n"
"\t\tg=${list%%%%,*}\n"
"\t\tcase $list in *,*) list=${list#*,} ;; *) list= ;; esac\n"
"\t\tcase $g in\n"
"\t\tGPU-*) echo \"$gpus\" | grep -q \", $g\\$\" ;;\n"
"\t\t*) echo \"$gpus\" | grep -q \"^$g,\" ;;\n"
"\t\tesac || die \"$host: GPU $g of the plan is not here\"\n"
"\tdone\n"
"fi\n"
"if [ $per_task = 1 ]; then\n"
"\tlocal_rank=${SLURM_LOCALID:-${OMPI_COMM_WORLD_LOCAL_RANK:-${LOCAL_RANK:-}}}\n"
"\ttasks=${SLURM_NTASKS:-${OMPI_COMM_WORLD_SIZE:-}}\n"
"\tcase $local_rank in\n"
"\t''|*[!0-9]*) die \"$host: --per-task needs the launcher's local rank (SLURM_LOCALID or OMPI_COMM_WORLD_LOCAL_RANK)\" ;;\n"
"\tesac\n"
"\t[ \"$local_rank\" -lt \"$NPROC_PER_NODE\" ] ||\n"
"\t\tdie \"$host: local rank $local_rank is outside the plan's $NPROC_PER_NODE per host\"\n"
"\tWORLD_SIZE=$((NNODES * NPROC_PER_NODE))\n"
"\t[ -z \"$tasks\" ] || [ \"$tasks\" = \"$WORLD_SIZE\" ] ||\n"
"\t\tdie \"$host: the launcher started $tasks tasks; the plan has $WORLD_SIZE ranks\"\n"
"\tRANK=$((NODE_RANK * NPROC_PER_NODE + local_rank))\n"
"\tLOCAL_RANK=$local_rank\n"
"\tLOCAL_WORLD_SIZE=$NPROC_PER_NODE\n"
"\texport RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE\n"
"\tif [ -n \"${THERMAP_NUMA:-}\" ]; then\n"
"\t\tnuma=$(echo \"$THERMAP_NUMA\" | cut -d, -f$((local_rank + 1)))\n"
"\t\tcase $numa in\n"
"\t\t''|*[!0-9]*) die \"$env: THERMAP_NUMA names no NUMA node for local rank $local_rank\" ;;\n"
"\t\tesac\n"
"\t\tif command -v numactl >/dev/null 2>&1; then\n"
"\t\t\texec numactl --cpunodebind=\"$numa\" --preferred=\"$numa\" \"$@\"\n"
"\t\tfi\n"
"\t\techo \"thermap entry: $host: no numactl: rank $RANK runs unbound (its GPU is on NUMA node $numa)\" >&2\n"
"\tfi\n"
"fi\n"
"exec \"$@\"\n", id, id);
}

/* One line per rank, in rank order: its host (SLURM_HOSTFILE with
 * srun --distribution=arbitrary). */
void tm_launch_slurm_hostfile(const tm_problem *pb, const int *flat,
                              strbuf *b)
{
	for (int r = 0; r < pb->nranks; r++)
		sb_addf(b, "%s\n", pb->c->nodes[pb->gpu_host[flat[r]]].host);
}

/* Open MPI's rankfile: rank r on its host. Every rank names slot 0, which
 * every host has: the mpirun line adds --bind-to none, and the entry
 * point sets each rank's GPU, so the rankfile only maps. */
void tm_launch_rankfile(const tm_problem *pb, const int *flat,
                        const char *id, strbuf *b)
{
	sb_addf(b, "# thermap plan %s: every rank on the plan's host; run with "
	        "--bind-to none (slot 0 maps, it does not pin)\n", id);
	for (int r = 0; r < pb->nranks; r++)
		sb_addf(b, "rank %d=%s slot=0\n", r,
		        pb->c->nodes[pb->gpu_host[flat[r]]].host);
}

/* Megatron-LM's rank order for the job: 0 its default (tp-cp-ep-dp-pp),
 * 1 with --use-tp-pp-dp-mapping (tp-pp-dp, without cp and ep), -1 neither.
 * Orders compare over the dimensions of size > 1 (the others have one
 * coordinate, wherever they stand). */
int tm_megatron_order(const tm_job *j)
{
	static const int dflt[] = { TM_TP, TM_CP, TM_EP, TM_DP, TM_PP };
	static const int alt[] = { TM_TP, TM_PP, TM_DP };
	int mine[TM_NDIM], n = 0;
	for (int i = 0; i < j->norder; i++)
		if (j->size[j->order[i]] > 1)
			mine[n++] = j->order[i];
	for (int pass = 0; pass < 2; pass++) {
		const int *o = pass ? alt : dflt;
		int no = pass ? 3 : 5, k = 0;
		bool same = true;
		if (pass && (j->size[TM_CP] > 1 || j->size[TM_EP] > 1))
			break;
		for (int i = 0; i < no && same; i++)
			if (j->size[o[i]] > 1)
				same = k < n && mine[k++] == o[i];
		if (same && k == n)
			return pass;
	}
	return -1;
}

/* Megatron-LM's parallel arguments, one word per line (for $(cat …)
 * with globbing off: a layout holds * and |): the sizes, the rank order
 * flag where the plan's order needs it, and the layers per stage when the
 * policy changed them (else the virtual stages, with vpp > 1). */
void tm_launch_megatron(const tm_problem *pb, strbuf *b)
{
	const tm_job *j = pb->job;
	sb_addf(b, "--tensor-model-parallel-size\n%d\n"
	        "--pipeline-model-parallel-size\n%d\n"
	        "--context-parallel-size\n%d\n"
	        "--expert-model-parallel-size\n%d\n", j->size[TM_TP],
	        j->size[TM_PP], j->size[TM_CP], j->size[TM_EP]);
	if (tm_megatron_order(j) == 1)
		sb_add(b, "--use-tp-pp-dp-mapping\n");
	if (j->relayered) {
		int first, last;
		char *lay = tm_megatron_layers(j, &first, &last);
		if (lay)
			sb_addf(b, "--pipeline-model-parallel-layout\n%s\n", lay);
		free(lay);
	} else if (j->vpp > 1) {
		sb_addf(b, "--num-virtual-stages-per-pipeline-rank\n%d\n", j->vpp);
	}
}

/* DeepSpeed's hostfile: the hosts in node-rank order, nproc slots each. */
void tm_launch_ds_hostfile(const tm_problem *pb, const int *flat,
                           const char *id, strbuf *b)
{
	sb_addf(b, "# thermap plan %s: hosts in node-rank order\n", id);
	for (int n = 0; n < pb->nnodes; n++)
		sb_addf(b, "%s slots=%d\n", host_of_node(pb, flat, n), pb->nproc);
}

/* DeepSpeed's --include: host:gpu,gpu,…@host:… in node-rank order, each
 * host's GPU indices in local-rank order. */
static void ds_include(const tm_problem *pb, const int *flat, strbuf *b)
{
	for (int n = 0; n < pb->nnodes; n++) {
		sb_addf(b, "%s%s:", n ? "@" : "", host_of_node(pb, flat, n));
		for (int i = 0; i < pb->nproc; i++) {
			int g = flat[n * pb->nproc + i];
			sb_addf(b, "%s%d", i ? "," : "",
			        tm_gpu_of(pb, g)->index);
		}
	}
}

/* Whether every node's GPUs, by index in local-rank order, are the same
 * list: then one --gpu-bind=map_gpu serves every node. */
static bool one_map(const tm_problem *pb, const int *flat)
{
	for (int n = 1; n < pb->nnodes; n++)
		for (int i = 0; i < pb->nproc; i++) {
			int a = flat[i], c = flat[n * pb->nproc + i];
			if (tm_gpu_of(pb, a)->index != tm_gpu_of(pb, c)->index)
				return false;
		}
	return true;
}

void tm_launch_text(const tm_problem *pb, const int *flat, const char *id,
                    strbuf *b)
{
	const tm_job *j = pb->job;
	int N = pb->nnodes, P = pb->nproc, W = pb->nranks;

	sb_addf(b, "# thermap plan %s (policy ", id);
	sb_add_text(b, pb->pol->name);
	sb_addf(b, "): %d node(s) × %d processes\n", N, P);
	sb_addf(b, "# The training script must use tp=%d cp=%d ep=%d dp=%d "
	        "pp=%d vpp=%d with rank order ", j->size[TM_TP], j->size[TM_CP],
	        j->size[TM_EP], j->size[TM_DP], j->size[TM_PP], j->vpp);
	for (int i = 0; i < j->norder; i++)
		sb_addf(b, "%s%s", i ? "-" : "", tm_dim_names[j->order[i]]);
	sb_add(b, ".\n# Run from the plan directory; docs/launching.md says "
	       "what each way checks.\n");

	sb_add(b, "\n## torchrun, static rendezvous (c10d would order nodes by "
	       "host name), one line per host\n");
	for (int n = 0; n < N; n++) {
		const char *host = host_of_node(pb, flat, n);
		sb_addf(b, "# on %s (node rank %d):\n", host, n);
		sb_addf(b, "set -a; . env/%s.env; set +a; torchrun "
		        "--nnodes=\"$NNODES\" --nproc-per-node=\"$NPROC_PER_NODE\" "
		        "--node-rank=\"$NODE_RANK\" --rdzv-backend=static "
		        "--master-addr=\"$MASTER_ADDR\" --master-port=\"$MASTER_PORT\" "
		        "TRAINING_SCRIPT.py [ARGS...]\n", host);
	}
	sb_add(b, "# or, on every host (the env files also set torchrun's PET_* "
	       "names):\nsh entry.sh torchrun TRAINING_SCRIPT.py [ARGS...]\n");

	sb_add(b, "\n## Slurm, one torchrun per node (Slurm orders nodes its own "
	       "way; entry.sh finds each host's node rank)\n");
	sb_addf(b, "srun --nodes=%d --ntasks-per-node=1 --nodelist=", N);
	for (int n = 0; n < N; n++)
		sb_addf(b, "%s%s", n ? "," : "", host_of_node(pb, flat, n));
	sb_add(b, " sh entry.sh torchrun TRAINING_SCRIPT.py [ARGS...]\n");

	sb_add(b, "\n## Slurm, one task per GPU (Megatron-LM, NeMo): "
	       "SLURM_PROCID is the plan's rank with the hostfile\n");
	sb_addf(b, "SLURM_HOSTFILE=slurm.hostfile srun --ntasks=%d "
	        "--distribution=arbitrary sh entry.sh --per-task python "
	        "TRAINING_SCRIPT.py [ARGS...]\n", W);
	if (one_map(pb, flat)) {
		sb_add(b, "# every node's GPUs in the same order: Slurm can bind "
		       "them itself, without entry.sh\n");
		sb_addf(b, "# SLURM_HOSTFILE=slurm.hostfile srun --ntasks=%d "
		        "--distribution=arbitrary --gpu-bind=map_gpu:", W);
		for (int i = 0; i < P; i++) {
			int g = flat[i];
			sb_addf(b, "%s%d", i ? "," : "",
			        tm_gpu_of(pb, g)->index);
		}
		sb_add(b, " python TRAINING_SCRIPT.py [ARGS...]\n");
	}

	sb_add(b, "\n## Open MPI, one process per rank, mapped by the "
	       "rankfile\n");
	sb_addf(b, "mpirun -np %d --rankfile mpi.rankfile --bind-to none "
	        "sh entry.sh --per-task python TRAINING_SCRIPT.py "
	        "[ARGS...]\n", W);

	sb_add(b, "\n## Megatron-LM: its parallel arguments for this plan "
	       "(set -f: a layout holds * and |)\n");
	if (tm_megatron_order(j) < 0) {
		sb_add(b, "# Megatron-LM cannot start ranks in this plan's order (");
		for (int i = 0; i < j->norder; i++)
			sb_addf(b, "%s%s", i ? "-" : "", tm_dim_names[j->order[i]]);
		sb_add(b, "): its default is tp-cp-ep-dp-pp, and "
		       "--use-tp-pp-dp-mapping gives tp-pp-dp\n");
	}
	sb_add(b, "set -f; sh entry.sh torchrun pretrain_gpt.py "
	       "$(cat megatron.args) [ARGS...]\n# (or per task under srun or "
	       "mpirun, as above, with the same arguments)\n");

	sb_add(b, "\n## DeepSpeed, hosts and GPUs in the plan's order\n");
	sb_add(b, "deepspeed --hostfile deepspeed.hostfile --include ");
	ds_include(pb, flat, b);
	sb_add(b, " --master_addr ");
	sb_add(b, host_of_node(pb, flat, 0));
	sb_add(b, " TRAINING_SCRIPT.py [ARGS...]\n");
}
