/*
 * plan.c — turns a solution into the plan directory of the contract:
 * plan.json (placement, predictions, the solver's status and a "why" per
 * stage), env/<host>.env for torchrun, and the launcher files of launch.c
 * (entry.sh, slurm.hostfile, mpi.rankfile, deepspeed.hostfile,
 * megatron.args, launch.txt).
 * The directory is
 * built under a temporary name beside the target and renamed into place,
 * so a launcher never sees half a plan. Identical inputs give identical
 * bytes: nothing here depends on the clock or the machine.
 *
 * plan.json is written one section per function (write_json lists them);
 * the words of each stage's "why" and of plan's summary are explain.c's.
 * A target is replaced only when it is a plan (or empty), and what else
 * is in it stays.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "ops/ops.h"

static void write_layers(jw *w, const tm_job *j);

#define MASTER_PORT 29500  /* torchrun's default */



/* Whether a node's GPUs can all be named by UUID. */
static bool node_has_uuids(const tm_problem *pb, const int *flat, int n)
{
	for (int i = 0; i < pb->nproc; i++)
		if (!tm_gpu_of(pb, flat[n * pb->nproc + i])->uuid)
			return false;
	return true;
}

static void visible_devices(const tm_problem *pb, const int *flat, int n,
                            strbuf *b)
{
	bool uuids = node_has_uuids(pb, flat, n);
	for (int i = 0; i < pb->nproc; i++) {
		const tm_gpu *g = tm_gpu_of(pb, flat[n * pb->nproc + i]);
		if (i)
			sb_add(b, ",");
		if (uuids)
			sb_add(b, g->uuid);
		else
			sb_addf(b, "%d", g->index);
	}
}

void tm_plan_id(const tm_problem *pb, const int *flat, char id[17])
{
	tm_sha256 c;
	unsigned char d[32];
	tm_sha256_init(&c);
	tm_sha256_update(&c, pb->c->sha256, strlen(pb->c->sha256));
	tm_sha256_update(&c, pb->profile_sha256, strlen(pb->profile_sha256));
	tm_sha256_update(&c, pb->job->sha256, strlen(pb->job->sha256));
	tm_sha256_update(&c, pb->pol->sha256, strlen(pb->pol->sha256));
	for (int r = 0; r < pb->nranks; r++) {
		char buf[32];
		snprintf(buf, sizeof buf, "%d:%d;", r, flat[r]);
		tm_sha256_update(&c, buf, strlen(buf));
	}
	tm_sha256_final(&c, d);
	for (int i = 0; i < 8; i++)
		snprintf(id + 2 * i, 3, "%02x", d[i]);
}

/* ---- plan.json ----------------------------------------------------------- */

static const char *const verdicts[] = {
	[TM_VERDICT_NONE] = "none", [TM_VERDICT_SAME] = "same",
	[TM_VERDICT_MOVE] = "move", [TM_VERDICT_KEEP] = "keep",
};

static void write_gain(jw *w, const char *key, const tm_gain *g)
{
	jw_obj(w, key, true);
	jw_num(w, "time_pct", g->time_pct, 3);
	jw_num(w, "time_sd_pct", g->time_sd, 3);
	jw_num(w, "peak_c", g->peak_c, 2);
	jw_num(w, "peak_sd_c", g->peak_sd, 2);
	jw_int(w, "hot_rank", g->hot_rank);
	jw_num(w, "hot_c", g->hot_c, 2);
	jw_num(w, "hot_sd_c", g->hot_sd, 2);
	jw_end_obj(w);
}

/* The evidence rule's verdict (docs/model.md, section 16). */
static void write_decision(jw *w, const tm_problem *pb,
                           const tm_solution *sol)
{
	const tm_ruling *R = &sol->rule;
	const tm_policy *pol = pb->pol;
	jw_obj(w, "decision", false);
	jw_str(w, "verdict", verdicts[R->verdict]);
	if (R->verdict == TM_VERDICT_NONE) {
		jw_str(w, "reason", tm_why_no_verdict(pb));
		jw_end_obj(w);
		return;
	}
	jw_str(w, "reason", R->reason);
	jw_bool(w, "reference_breaks_policy", R->ref_breaks);
	if (R->decided_by < 0)
		jw_null(w, "decided_by");
	else
		jw_str(w, "decided_by", tm_crit_name(R->decided_by));
	jw_arr(w, "ties", false);
	for (int k = 0; k < R->nties; k++) {
		const tm_tie *t = &R->ties[k];
		jw_obj(w, NULL, false);
		jw_str(w, "criterion", tm_crit_name(t->crit));
		jw_bool(w, "best_is_reference", t->same);
		jw_num(w, "best_iteration_ms", t->best.iteration_ms, 4);
		jw_num(w, "best_peak_temp_c", t->best.peak_temp_c, 2);
		jw_int(w, "best_moved_ranks", t->best.moves);
		write_gain(w, "best_gain", &t->gain);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	write_gain(w, "gain", &R->gain);
	if (R->verdict == TM_VERDICT_KEEP || R->resolved) {
		jw_obj(w, "policy_best", true);
		jw_num(w, "iteration_ms", R->best.iteration_ms, 4);
		jw_num(w, "peak_temp_c", R->best.peak_temp_c, 2);
		jw_int(w, "moved_ranks", R->best.moves);
		jw_end_obj(w);
		write_gain(w, "policy_best_gain", &R->best_gain);
	}
	jw_obj(w, "min_gain", true);
	jw_num(w, "time_pct", pol->min_gain.time_pct, 3);
	jw_num(w, "peak_c", pol->min_gain.peak_c, 2);
	jw_end_obj(w);
	jw_num(w, "exchange_c_per_pct", pol->exchange_c_per_pct, 3);
	jw_end_obj(w);
}

/* "format", "id", "policy", "method": what the plan is. */
static void write_head(jw *w, const tm_problem *pb, const char *id)
{
	jw_str(w, "format", "thermap.plan/1");
	jw_str(w, "id", id);
	jw_str(w, "policy", pb->pol->name);
	jw_str(w, "method", tm_method_name(pb->pol->method));
}

/* "inputs": the hashes of the four documents it was made from. */
static void write_inputs(jw *w, const tm_problem *pb)
{
	jw_obj(w, "inputs", false);
	jw_str(w, "cluster", pb->c->sha256);
	jw_str(w, "profile", pb->profile_sha256);
	jw_str(w, "job", pb->job->sha256);
	jw_str(w, "policy", pb->pol->sha256);
	jw_end_obj(w);
}

/* "solver": how the placement was found and how good it is proven. */
static void write_solver(jw *w, const tm_problem *pb, const tm_solution *sol)
{
	jw_obj(w, "solver", false);
	jw_str(w, "status", sol->status);
	if (sol->formulation[0])
		jw_str(w, "formulation", sol->formulation);
	jw_num(w, "objective", sol->objective, 4);
	jw_num(w, "bound", sol->bound, 4);
	jw_num(w, "gap", sol->gap, 6);
	jw_obj(w, "gaps", true);
	for (int k = 0; k < pb->ncrit; k++)
		jw_num(w, tm_crit_name(pb->crit[k]), sol->gaps[k], 6);
	jw_end_obj(w);
	jw_null(w, "time_ms");
	jw_arr(w, "criteria", true);
	for (int k = 0; k < pb->ncrit; k++)
		jw_str(w, NULL, tm_crit_name(pb->crit[k]));
	jw_end_arr(w);
	jw_num(w, "tolerance", pb->pol->tolerance, 6);
	jw_num(w, "reference_iteration_ms", sol->t_ref_ms, 4);
	jw_end_obj(w);
}

/* "predicted": the model's numbers for the placement and for identity. */
static void write_predicted(jw *w, const tm_problem *pb,
                            const tm_solution *sol, const int *flat)
{
	double t = sol->ev.iteration_ms, ar = tm_allreduce_ms(pb, flat);
	double xa = tm_alltoall_max_ms(pb, flat);
	jw_obj(w, "predicted", false);
	jw_num(w, "iteration_ms", t, 4);
	if (ar > 0)  /* only jobs with gradients and dp > 1 have one */
		jw_num(w, "allreduce_ms", ar, 4);
	if (xa > 0)  /* only jobs with a2a_mib and ep > 1 have one */
		jw_num(w, "alltoall_ms", xa, 4);
	jw_num(w, "peak_temp_c", sol->ev.peak_temp_c, 2);
	jw_int(w, "moved_ranks", sol->ev.moves);
	jw_num(w, "gain_pct", (sol->baseline.iteration_ms - t) /
	       sol->baseline.iteration_ms * 100, 3);
	jw_num(w, "peak_temp_drop_c", sol->baseline.peak_temp_c -
	       sol->ev.peak_temp_c, 2);
	jw_num(w, "wear", sol->ev.wear, 4);
	jw_obj(w, "baseline", true);
	jw_str(w, "policy", "identity");
	jw_num(w, "iteration_ms", sol->baseline.iteration_ms, 4);
	jw_num(w, "peak_temp_c", sol->baseline.peak_temp_c, 2);
	jw_num(w, "wear", sol->baseline.wear, 4);
	jw_end_obj(w);
	jw_end_obj(w);
}

/* "constraints": the policy's, as check verifies them. */
static void write_constraints(jw *w, const tm_policy *pol)
{
	jw_obj(w, "constraints", true);
	jw_bool(w, "tp_nvlink", pol->tp_nvlink);
	jw_bool(w, "pp_nvlink", pol->pp_nvlink);
	jw_num(w, "max_temp_c", pol->max_temp_c, 2);
	if (pol->max_moves >= 0)
		jw_int(w, "max_moves", pol->max_moves);
	else
		jw_null(w, "max_moves");
	jw_end_obj(w);
}

/* "job": the parallel layout the plan is for. */
static void write_job(jw *w, const tm_problem *pb)
{
	const tm_job *j = pb->job;
	jw_obj(w, "job", true);
	jw_int(w, "world", pb->nranks);
	jw_int(w, "nnodes", pb->nnodes);
	jw_int(w, "nproc_per_node", pb->nproc);
	jw_int(w, "tp", j->size[TM_TP]);
	jw_int(w, "cp", j->size[TM_CP]);
	jw_int(w, "ep", j->size[TM_EP]);
	jw_int(w, "dp", j->size[TM_DP]);
	jw_int(w, "pp", j->size[TM_PP]);
	jw_int(w, "vpp", j->vpp);
	jw_int(w, "microbatches", j->microbatches);
	jw_end_obj(w);
}

/* "nodes": each node rank's host and CUDA_VISIBLE_DEVICES. */
static void write_nodes(jw *w, const tm_problem *pb, const int *flat)
{
	strbuf tmp;
	sb_init(&tmp);
	jw_arr(w, "nodes", false);
	for (int n = 0; n < pb->nnodes; n++) {
		int h = pb->gpu_host[flat[n * pb->nproc]];
		tmp.len = 0;
		tmp.s[0] = '\0';
		visible_devices(pb, flat, n, &tmp);
		jw_obj(w, NULL, true);
		jw_str(w, "host", pb->c->nodes[h].host);
		jw_int(w, "node_rank", n);
		jw_str(w, "cuda_visible_devices", tmp.s);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	sb_free(&tmp);
}

/* "ranks": every rank's GPU, coordinates and predictions at time t. */
static void write_ranks(jw *w, const tm_problem *pb, const int *flat,
                        double t)
{
	jw_arr(w, "ranks", false);
	for (int r = 0; r < pb->nranks; r++) {
		int g = flat[r];
		const tm_gpu *gpu = tm_gpu_of(pb, g);
		jw_obj(w, NULL, true);
		jw_int(w, "rank", r);
		jw_str(w, "host", pb->c->nodes[pb->gpu_host[g]].host);
		jw_int(w, "node_rank", r / pb->nproc);
		jw_int(w, "local_rank", r % pb->nproc);
		jw_int(w, "gpu_index", gpu->index);
		jw_str(w, "uuid", gpu->uuid);
		jw_int(w, "tp", pb->coord[r][TM_TP]);
		jw_int(w, "cp", pb->coord[r][TM_CP]);
		jw_int(w, "ep", pb->coord[r][TM_EP]);
		jw_int(w, "dp", pb->coord[r][TM_DP]);
		jw_int(w, "pp", pb->coord[r][TM_PP]);
		jw_num(w, "busy", tm_rank_busy(pb, r, g, t), 3);
		jw_num(w, "power_w", tm_rank_power(pb, r, g, t), 1);
		jw_num(w, "predicted_temp_c", tm_rank_temp_in(pb, flat, r, t), 2);
		jw_num(w, "temp_sd_c", tm_rank_temp_sd_in(pb, flat, r, t), 2);
		jw_end_obj(w);
	}
	jw_end_arr(w);
}

/* "stages": per pipeline rank its layers, time, GPUs, temperature and
 * why (tm_why_stage), against the identity placement base. The ranks of
 * each stage, in rank order, are gathered once (tm_stage_ranks) rather
 * than found by a pass over every rank for each stage. */
static void write_stages(jw *w, const tm_problem *pb, const int *flat,
                         const int *base, double t)
{
	const tm_job *j = pb->job;
	int *at, *by = tm_stage_ranks(pb, &at);
	strbuf tmp;
	sb_init(&tmp);
	jw_arr(w, "stages", false);
	for (int s = 0; s < pb->npp; s++) {
		int layers = 0;
		double time = 0, temp = -INFINITY;
		for (int c = s; c < j->nstages; c += pb->npp)
			layers = layers < 0 || j->stages[c].layers < 0 ? -1 :
			         layers + j->stages[c].layers;
		for (int d = 0; d < pb->nrep; d++)
			time = fmax(time, tm_inst_ms(pb, flat, d, s));
		jw_obj(w, NULL, false);
		jw_int(w, "stage", s);
		if (layers >= 0)
			jw_int(w, "layers", layers);
		else
			jw_null(w, "layers");
		jw_num(w, "time_ms", time, 4);
		jw_arr(w, "uuids", true);
		for (int k = at[s]; k < at[s + 1]; k++)
			jw_str(w, NULL, tm_gpu_of(pb, flat[by[k]])->uuid);
		jw_end_arr(w);
		jw_arr(w, "gpus", true);
		for (int k = at[s]; k < at[s + 1]; k++) {
			int r = by[k];
			char buf[300];
			snprintf(buf, sizeof buf, "%s:%d",
			         pb->c->nodes[pb->gpu_host[flat[r]]].host,
			         tm_gpu_of(pb, flat[r])->index);
			jw_str(w, NULL, buf);
			temp = fmax(temp, tm_rank_temp_in(pb, flat, r, t));
		}
		jw_end_arr(w);
		jw_num(w, "predicted_temp_c", temp, 2);
		tmp.len = 0;
		tmp.s[0] = '\0';
		tm_why_stage(pb, flat, base, t, s, &by[at[s]], at[s + 1] - at[s],
		             &tmp);
		jw_str(w, "why", tmp.s);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	sb_free(&tmp);
	free(at);
	free(by);
}

/* "notes": what the problem's builder assumed. */
static void write_notes(jw *w, const tm_problem *pb)
{
	jw_arr(w, "notes", false);
	for (int i = 0; i < pb->nnotes; i++)
		jw_str(w, NULL, pb->notes[i]);
	jw_end_arr(w);
}

/* plan.json, one writer per section, in the order the file has them;
 * extra (may be NULL) adds members after "decision". A new field goes
 * into its section's writer (and check's and planread's readers, which
 * read plan.json on their own). */
static void write_json(const tm_problem *pb, const tm_solution *sol,
                       const int *flat, const int *base, const char *id,
                       tm_plan_extra extra, void *ud, strbuf *out)
{
	double t = sol->ev.iteration_ms;
	jw w;

	jw_init(&w, out);
	jw_obj(&w, NULL, false);
	write_head(&w, pb, id);
	write_inputs(&w, pb);
	write_solver(&w, pb, sol);
	write_predicted(&w, pb, sol, flat);
	write_decision(&w, pb, sol);
	if (extra)
		extra(&w, ud);
	write_constraints(&w, pb->pol);
	write_job(&w, pb);
	if (pb->job->relayered)
		write_layers(&w, pb->job);
	write_nodes(&w, pb, flat);
	write_ranks(&w, pb, flat, t);
	write_stages(&w, pb, flat, base, t);
	write_notes(&w, pb);
	jw_end_obj(&w);
}

static void write_env(const tm_problem *pb, const int *flat, int n,
                      const char *id, strbuf *b)
{
	int h = pb->gpu_host[flat[n * pb->nproc]];
	int h0 = pb->gpu_host[flat[0]];
	/* the policy's name is anyone's text: shown, it stays in its comment
	 * (a line break in it would start a command of the sourced file) */
	sb_addf(b, "# thermap plan %s: node rank %d of %d on host %s "
	        "(policy ", id, n, pb->nnodes, pb->c->nodes[h].host);
	sb_add_text(b, pb->pol->name);
	sb_add(b, ")\n");
	sb_add(b, "# local rank i runs on the i-th entry of "
	       "CUDA_VISIBLE_DEVICES\n");
	sb_add(b, "CUDA_VISIBLE_DEVICES=");
	visible_devices(pb, flat, n, b);
	sb_add(b, "\nCUDA_DEVICE_ORDER=PCI_BUS_ID\n");
	sb_addf(b, "NODE_RANK=%d\nNNODES=%d\nNPROC_PER_NODE=%d\n", n,
	        pb->nnodes, pb->nproc);
	sb_addf(b, "MASTER_ADDR=%s\nMASTER_PORT=%d\nTHERMAP_PLAN=%s\n",
	        pb->c->nodes[h0].host, MASTER_PORT, id);
	/* torchrun reads these when its flags are not given (as launchers
	 * that only set the environment, the Kubeflow operator's, do) */
	sb_addf(b, "PET_NNODES=%d\nPET_NPROC_PER_NODE=%d\nPET_NODE_RANK=%d\n"
	        "PET_MASTER_ADDR=%s\nPET_MASTER_PORT=%d\n"
	        "PET_RDZV_BACKEND=static\n", pb->nnodes, pb->nproc, n,
	        pb->c->nodes[h0].host, MASTER_PORT);
	/* the NUMA node of each local rank's GPU, where the cluster knows
	 * them all: entry.sh binds each task there (docs/launching.md) */
	for (int i = 0; i < pb->nproc; i++)
		if (!tm_gpu_of(pb, flat[n * pb->nproc + i])->has_numa)
			return;
	sb_add(b, "THERMAP_NUMA=");
	for (int i = 0; i < pb->nproc; i++)
		sb_addf(b, "%s%d", i ? "," : "",
		        tm_gpu_of(pb, flat[n * pb->nproc + i])->numa_node);
	sb_add(b, "\n");
}

/* The content of launcher file f (tm_launch_files[f]). */
static void launch_file(const tm_problem *pb, const int *flat,
                        const char *id, int f, strbuf *b)
{
	switch (f) {
	case 0: tm_launch_entry(id, b); break;
	case 1: tm_launch_slurm_hostfile(pb, flat, b); break;
	case 2: tm_launch_rankfile(pb, flat, id, b); break;
	case 3: tm_launch_ds_hostfile(pb, flat, id, b); break;
	case 4: tm_launch_megatron(pb, b); break;
	default: tm_launch_text(pb, flat, id, b); break;
	}
}

static bool is_launch_file(const char *name)
{
	for (int f = 0; f < TM_NLAUNCH; f++)
		if (!strcmp(name, tm_launch_files[f]))
			return true;
	return false;
}

/* ---- atomic directory ---------------------------------------------------- */

/* THERMAP_TEST_STOP_AT=k stops the process (SIGSTOP) at the k-th step of
 * writing a plan (1: the temporary directory made, then after plan.json,
 * after each env file, after the launcher files,
 * then after the rename into place, last after the previous plan is
 * removed), so that a test can kill it there or change the target under
 * it and show that no half-written plan is ever visible and nothing but
 * a plan is replaced (tests/replan/run.sh, tests/cli/writes.sh). */
static void step(int *k)
{
	const char *v = tm_knob(TM_KNOB_TEST_STOP_AT);
	if (v && atoi(v) == ++*k)
		raise(SIGSTOP);
}

/* Writes one file of the plan, new, in the directory open as dfd; shown
 * is its path for messages. Not synced here: sync_tree syncs them all
 * once every file is written. */
static int write_file_at(int dfd, const char *name, const char *shown,
                         const strbuf *b, tm_error *err)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	                O_CLOEXEC, 0644);
	size_t off = 0;
	if (fd < 0)
		return tm_fail(err, TM_EINTERNAL, "%s: cannot create: %s", shown,
		               strerror(errno));
	if (fchmod(fd, 0644) != 0) {
		int e = errno;
		close(fd);
		return tm_fail(err, TM_EINTERNAL, "%s: cannot create: %s", shown,
		               strerror(e));
	}
	while (off < b->len) {
		ssize_t n = write(fd, b->s + off, b->len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = n < 0 ? errno : ENOSPC;
			close(fd);
			return tm_fail(err, TM_EINTERNAL, "%s: write failed: %s", shown,
			               strerror(e));
		}
		off += (size_t)n;
	}
	if (close(fd) != 0)
		return tm_fail(err, TM_EINTERNAL, "%s: write failed: %s", shown,
		               strerror(errno));
	return 0;
}

/* fsync of the file name in the directory open as dfd (written by
 * write_file_at, so ours and regular); shown is its path for messages. */
static int sync_file_at(int dfd, const char *name, const char *shown,
                        tm_error *err)
{
	int e, fd = openat(dfd, name, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		e = errno;
		if (fd >= 0)
			close(fd);
		return tm_fail(err, TM_EINTERNAL, "%s: write failed: %s", shown,
		               strerror(e));
	}
	if (close(fd) != 0)
		return tm_fail(err, TM_EINTERNAL, "%s: write failed: %s", shown,
		               strerror(errno));
	return 0;
}

/* Makes every file of the finished temporary plan (open as tfd, its env/
 * as efd, shown as tshown) durable, once for all: one syncfs(2) of the
 * file system that holds it, where the system has it (Linux), instead of
 * an fsync per file, which cost one device flush per host's env file.
 * syncfs reports (since Linux 5.8) a write-back error of that file system
 * since tfd was opened, which is before the first file was written; close
 * has reported what the file system knew at once. Elsewhere, or where
 * the kernel lacks it (ENOSYS), each file is synced by name. The
 * directories are synced after this by the caller. */
static int sync_tree(const tm_problem *pb, const int *flat, int tfd, int efd,
                     const char *tshown, tm_error *err)
{
	char file[300], path[3800];
	int rc;
#ifdef __linux__
	if (syncfs(tfd) == 0)
		return 0;
	if (errno != ENOSYS)
		return tm_fail(err, TM_EINTERNAL, "%s: cannot sync: %s", tshown,
		               strerror(errno));
#endif
	snprintf(path, sizeof path, "%s/plan.json", tshown);
	if ((rc = sync_file_at(tfd, "plan.json", path, err)))
		return rc;
	for (int n = 0; n < pb->nnodes; n++) {
		snprintf(file, sizeof file, "%s.env",
		         pb->c->nodes[pb->gpu_host[flat[n * pb->nproc]]].host);
		snprintf(path, sizeof path, "%s/env/%s", tshown, file);
		if ((rc = sync_file_at(efd, file, path, err)))
			return rc;
	}
	for (int f = 0; f < TM_NLAUNCH; f++) {
		snprintf(path, sizeof path, "%s/%s", tshown, tm_launch_files[f]);
		if ((rc = sync_file_at(tfd, tm_launch_files[f], path, err)))
			return rc;
	}
	return 0;
}

static bool same_at(int dfd, const char *name, int fd)
{
	struct stat a, b;
	return fstat(fd, &a) == 0 &&
	       fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in the directory open as fd, sorted; NULL when it cannot be
 * read. */
static char **list_at(int fd, int *n)
{
	int d2 = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
	struct dirent *e;
	char **v = NULL;
	size_t cap = 16;
	*n = 0;
	if (!d) {
		if (d2 >= 0)
			close(d2);
		return NULL;
	}
	v = xmalloc(sizeof(char *) * cap);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			if ((size_t)*n == cap)   /* doubled: a plan has an env
			                          * file per host */
				v = xrealloc(v, sizeof(char *) * (cap *= 2));
			v[(*n)++] = xstrdup(e->d_name);
		}
	closedir(d);
	qsort(v, (size_t)*n, sizeof(char *), cmp_name);
	return v;
}

static void free_list(char **v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static bool is_env_name(const char *s)
{
	size_t n = strlen(s);
	return n > 4 && !strcmp(s + n - 4, ".env");
}

/* Whether plan.json in the directory open as fd is a thermap plan: a
 * regular file whose "format" is thermap.plan/N. */
static bool holds_plan_json(int fd)
{
	struct stat st;
	char *b;
	size_t n = 0;
	bool ok;
	int pf = openat(fd, "plan.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	                O_CLOEXEC);
	if (pf < 0)
		return false;
	if (fstat(pf, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (unsigned long long)st.st_size > TM_MAX_INPUT_BYTES) {
		close(pf);
		return false;
	}
	b = xmalloc((size_t)st.st_size + 1);
	while (n < (size_t)st.st_size) {
		ssize_t r = read(pf, b + n, (size_t)st.st_size - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(pf);
	ok = tm_plan_text_is_plan(b, n);
	free(b);
	return ok;
}

/* What a plan directory may be replaced with the new plan: an empty
 * directory, or a thermap plan that holds nothing but a plan's names
 * (plan.json, the launcher files, env/ with HOST.env files); anything else is
 * refused with TM_EUSAGE, naming what is not a plan's. fd: the directory,
 * shown: the target's name for messages. */
static int replaceable_fd(int fd, const char *shown, tm_error *err)
{
	char **v, **ev = NULL;
	int n, ne = 0, nforeign = 0;
	bool plan = false;
	strbuf f;

	if (!(v = list_at(fd, &n)))
		return tm_fail(err, TM_EUSAGE, "%s: cannot be read: %s", shown,
		               strerror(errno));
	if (n == 0) {
		free_list(v, n);
		return 0;
	}
	sb_init(&f);
	for (int i = 0; i < n; i++) {
		struct stat st;
		bool mine = false;
		if (fstatat(fd, v[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;  /* gone meanwhile */
		if (!strcmp(v[i], "plan.json") && S_ISREG(st.st_mode))
			plan = mine = true;
		else if (is_launch_file(v[i]) && S_ISREG(st.st_mode))
			mine = true;
		else if (!strcmp(v[i], "env") && S_ISDIR(st.st_mode)) {
			int efd = openat(fd, "env", O_RDONLY | O_DIRECTORY |
			                 O_NOFOLLOW | O_CLOEXEC);
			mine = efd >= 0 && (ev = list_at(efd, &ne)) != NULL;
			for (int k = 0; mine && k < ne; k++) {
				struct stat es;
				if (fstatat(efd, ev[k], &es, AT_SYMLINK_NOFOLLOW) != 0)
					continue;
				if (is_env_name(ev[k]) && S_ISREG(es.st_mode))
					continue;
				if (nforeign++ < 4)
					sb_addf(&f, "%senv/%s%s", f.len ? ", " : "", ev[k],
					        S_ISDIR(es.st_mode) ? "/" : "");
			}
			if (ev)
				free_list(ev, ne);
			ev = NULL;
			if (efd >= 0)
				close(efd);
		}
		if (!mine && nforeign++ < 4)
			sb_addf(&f, "%s%s%s", f.len ? ", " : "", v[i],
			        S_ISDIR(st.st_mode) ? "/" : "");
	}
	free_list(v, n);
	if (!plan || !holds_plan_json(fd)) {
		sb_free(&f);
		return tm_fail(err, TM_EUSAGE, "%s: exists and is not a thermap "
		               "plan directory; refusing to replace it", shown);
	}
	if (nforeign) {
		int rc;
		if (nforeign > 4)
			sb_addf(&f, " and %d more", nforeign - 4);
		rc = tm_fail(err, TM_EUSAGE, "%s: holds other files than a plan's "
		             "(%s); refusing to replace it and delete them",
		             shown, f.s);
		sb_free(&f);
		return rc;
	}
	sb_free(&f);
	return 0;
}

/* The target name in dfd: absent (0), or a directory replaceable_fd
 * accepts. */
static int target_ok(int dfd, const char *name, const char *shown,
                     tm_error *err)
{
	struct stat st;
	int rc, fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                    O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ENOENT)
			return 0;
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode))
			return tm_fail(err, TM_EUSAGE, "%s: exists and is %s, not a "
			               "directory; refusing to replace it", shown,
			               tm_file_kind(st.st_mode));
		return tm_fail(err, TM_EUSAGE, "%s: cannot be inspected: %s",
		               shown, strerror(e));
	}
	rc = replaceable_fd(fd, shown, err);
	close(fd);
	return rc;
}

/* Removes what a plan holds (plan.json, the launcher files, env/ and its HOST.env
 * files) from the directory open as fd, every name relative to a
 * descriptor and none followed, then the directory, name in dfd, if it is
 * still that directory. Anything else in it stays, and with it the
 * directory: false then. */
static bool remove_plan_at(int dfd, const char *name, int fd)
{
	int efd = openat(fd, "env", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                 O_CLOEXEC);
	unlinkat(fd, "plan.json", 0);
	for (int f = 0; f < TM_NLAUNCH; f++)
		unlinkat(fd, tm_launch_files[f], 0);
	if (efd >= 0) {
		int n;
		char **v = list_at(efd, &n);
		for (int i = 0; v && i < n; i++) {
			struct stat st;
			if (is_env_name(v[i]) &&
			    fstatat(efd, v[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISREG(st.st_mode))
				unlinkat(efd, v[i], 0);
		}
		if (v)
			free_list(v, n);
		close(efd);
		unlinkat(fd, "env", AT_REMOVEDIR);
	}
	/* gone already (another writer removed it as stale) is removed */
	if (!same_at(dfd, name, fd))
		return errno == ENOENT;
	return unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT;
}

int tm_plan_check_target(const char *dir, tm_error *err)
{
	int dfd, rc;
	char *base, *parent;
	if ((rc = tm_open_parent(dir, true, "cannot create a temporary "
	                         "directory beside it", &dfd, &base, &parent,
	                         err)))
		return rc;
	rc = target_ok(dfd, base, dir, err);
	close(dfd);
	free(base);
	free(parent);
	return rc;
}

#if defined(RENAME_NOREPLACE) && defined(RENAME_EXCHANGE)
/* The swapped-out target, now under the temporary name tmp: removed when
 * it is what may be replaced, else put back and refused. */
static int take_out_old(int dfd, char *tmp, const char *base,
                        const char *shown, const char *tshown, int *k,
                        tm_error *err)
{
	struct stat st;
	tm_error why = { 0, "" };
	int ofd = openat(dfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	                 O_CLOEXEC);
	int rc = 0;

	if (ofd < 0) {
		if (fstatat(dfd, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0)
			tm_fail(&why, TM_EUSAGE, "%s: exists and is %s, not a "
			        "directory; refusing to replace it", shown,
			        tm_file_kind(st.st_mode));
		else
			tm_fail(&why, TM_EUSAGE, "%s: changed while the plan was "
			        "written; refusing to replace it", shown);
	} else {
		replaceable_fd(ofd, shown, &why);
	}
	if (why.code) {
		/* it changed since it was checked: put it back */
		if (ofd >= 0)
			close(ofd);
		if (renameat2(dfd, tmp, dfd, base, RENAME_EXCHANGE) != 0) {
			rc = tm_fail(err, TM_EINTERNAL, "%s: changed while the plan "
			             "was written and cannot be put back: the new "
			             "plan is in %s, what was there is now %s: %s",
			             shown, shown, tshown, strerror(errno));
			tmp[0] = '\0';  /* not ours any more */
			return rc;
		}
		return tm_fail(err, why.code, "%s", why.msg);
	}
	step(k);
	if (!remove_plan_at(dfd, tmp, ofd))
		tm_warn("%s: the previous plan, moved to %s, also holds files "
		        "that are not a plan's; they are left there", shown,
		        tshown);
	close(ofd);
	tmp[0] = '\0';
	return 0;
}
#endif

/* Puts the finished temporary directory tmp in place of base: a rename
 * when nothing is there (or an empty directory: rename(2) replaces only
 * that), else an exchange, after which what came out is looked at again
 * and removed, or put back. tmp becomes "" once it is not ours to
 * remove. */
static int publish(int dfd, char *tmp, const char *base, const char *shown,
                   const char *tshown, int *k, tm_error *err)
{
	char old[256];
	int ofd, e, rc;
	tm_error why = { 0, "" };

#if defined(RENAME_NOREPLACE) && defined(RENAME_EXCHANGE)
	if (renameat2(dfd, tmp, dfd, base, RENAME_NOREPLACE) == 0) {
		tmp[0] = '\0';
		step(k);
		step(k);
		return 0;
	}
	if (errno == EEXIST) {
		if (renameat2(dfd, tmp, dfd, base, RENAME_EXCHANGE) == 0) {
			if ((rc = take_out_old(dfd, tmp, base, shown, tshown, k, err)))
				return rc;
			step(k);
			return 0;
		}
		if (errno != EINVAL && errno != ENOSYS)
			return tm_fail(err, TM_EINTERNAL, "%s: cannot replace: %s",
			               shown, strerror(errno));
	} else if (errno != EINVAL && errno != ENOSYS) {
		return tm_fail(err, TM_EINTERNAL, "%s: cannot rename into place: "
		               "%s", shown, strerror(errno));
	}
#endif
	/* Without renameat2: a plain rename puts it in place of nothing or
	 * of an empty directory, and fails on anything else; a plan there is
	 * first moved aside under a temporary name of its own, looked at
	 * again, and removed after the new one is in place. Between the two
	 * renames the target is briefly absent. */
	(void)tshown;
	if (renameat(dfd, tmp, dfd, base) == 0) {
		tmp[0] = '\0';
		step(k);
		step(k);
		return 0;
	}
	e = errno;
	if (e != ENOTEMPTY && e != EEXIST) {
		if ((rc = target_ok(dfd, base, shown, err)))
			return rc;
		return tm_fail(err, TM_EINTERNAL, "%s: cannot rename into place: "
		               "%s", shown, strerror(e));
	}
	if ((e = tm_temp_at(dfd, base, true, old, sizeof old, &ofd)))
		return tm_fail(err, TM_EINTERNAL, "%s: cannot replace: %s", shown,
		               strerror(e));
	close(ofd);
	/* onto our empty directory: only a directory can go there */
	if (renameat(dfd, base, dfd, old) != 0) {
		e = errno;
		unlinkat(dfd, old, AT_REMOVEDIR);
		if ((rc = target_ok(dfd, base, shown, err)))
			return rc;
		return tm_fail(err, TM_EINTERNAL, "%s: cannot replace: %s", shown,
		               strerror(e));
	}
	ofd = openat(dfd, old, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ofd < 0 || replaceable_fd(ofd, shown, &why) ||
	    renameat(dfd, tmp, dfd, base) != 0) {
		e = errno;
		if (ofd >= 0)
			close(ofd);
		if (renameat(dfd, old, dfd, base) != 0)
			return tm_fail(err, TM_EINTERNAL, "%s: cannot be put back "
			               "after a failed replace; it is now %.*s%s: %s",
			               shown, (int)(strlen(shown) - strlen(base)),
			               shown, old, strerror(errno));
		if (why.code)
			return tm_fail(err, why.code, "%s", why.msg);
		return tm_fail(err, TM_EINTERNAL, "%s: cannot rename into place: "
		               "%s", shown, strerror(e));
	}
	tmp[0] = '\0';
	step(k);
	if (!remove_plan_at(dfd, old, ofd))
		tm_warn("%s: the previous plan, moved to %.*s%s, also holds files "
		        "that are not a plan's; they are left there", shown,
		        (int)(strlen(shown) - strlen(base)), shown, old);
	close(ofd);
	step(k);
	return 0;
}

int tm_plan_write(const tm_problem *pb, const tm_solution *sol,
                  const char *dir, tm_error *err)
{
	return tm_plan_write_ex(pb, sol, NULL, NULL, dir, NULL, err);
}

int tm_plan_write_ex(const tm_problem *pb, const tm_solution *sol,
                     tm_plan_extra extra, void *ud, const char *dir,
                     char id_out[17], tm_error *err)
{
	int *flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *base = xmalloc(sizeof(int) * (size_t)pb->nranks);
	char id[17], tmp[256], shown[3100], tshown[3400], path[3800];
	char *name = NULL, *parent = NULL;
	strbuf b;
	size_t dl = strlen(dir);
	int rc = 0, k = 0, dfd = -1, tfd = -1, efd = -1, e;

	while (dl > 1 && dir[dl - 1] == '/')
		dl--;
	if (dl == 0 || dl > 3000) {
		free(flat);
		free(base);
		return tm_fail(err, TM_EUSAGE, "plan directory name is empty or "
		               "too long");
	}
	snprintf(shown, sizeof shown, "%.*s", (int)dl, dir);
	tmp[0] = '\0';
	tm_placement_to_flat(pb, sol->pl, flat);
	tm_identity(pb, base);
	tm_plan_id(pb, flat, id);
	if ((rc = tm_open_parent(shown, true, "cannot create a temporary "
	                         "directory beside it", &dfd, &name, &parent,
	                         err)) ||
	    (rc = target_ok(dfd, name, shown, err)))
		goto out;
	/* a killed writer's temporary that no process holds any more */
	tm_clean_stale(dfd, name, true, remove_plan_at);
	if ((e = tm_temp_at(dfd, name, true, tmp, sizeof tmp, &tfd))) {
		tmp[0] = '\0';
		rc = tm_fail(err, TM_EINTERNAL, "%s: cannot create a temporary "
		             "directory beside it: %s", shown, strerror(e));
		goto out;
	}
	snprintf(tshown, sizeof tshown, "%s%s", shown, tmp + strlen(name));
	step(&k);
	sb_init(&b);
	write_json(pb, sol, flat, base, id, extra, ud, &b);
	snprintf(path, sizeof path, "%s/plan.json", tshown);
	rc = write_file_at(tfd, "plan.json", path, &b, err);
	step(&k);
	snprintf(path, sizeof path, "%s/env", tshown);
	if (!rc && (mkdirat(tfd, "env", 0755) != 0 ||
	            (efd = openat(tfd, "env", O_RDONLY | O_DIRECTORY |
	                          O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	            fchmod(efd, 0755) != 0))
		rc = tm_fail(err, TM_EINTERNAL, "%s: %s", path, strerror(errno));
	for (int n = 0; !rc && n < pb->nnodes; n++) {
		char file[300];
		b.len = 0;
		b.s[0] = '\0';
		write_env(pb, flat, n, id, &b);
		snprintf(file, sizeof file, "%s.env",
		         pb->c->nodes[pb->gpu_host[flat[n * pb->nproc]]].host);
		snprintf(path, sizeof path, "%s/env/%s", tshown, file);
		rc = write_file_at(efd, file, path, &b, err);
		step(&k);
	}
	for (int f = 0; !rc && f < TM_NLAUNCH; f++) {
		b.len = 0;
		b.s[0] = '\0';
		launch_file(pb, flat, id, f, &b);
		snprintf(path, sizeof path, "%s/%s", tshown, tm_launch_files[f]);
		rc = write_file_at(tfd, tm_launch_files[f], path, &b, err);
		if (!rc && f == 0 && fchmodat(tfd, tm_launch_files[f], 0755, 0) != 0)
			rc = tm_fail(err, TM_EINTERNAL, "%s: %s", path,
			             strerror(errno));
	}
	if (!rc)
		step(&k);    /* one step for the launcher files */
	sb_free(&b);
	/* the files, all at once; then their names, with their directories;
	 * the rename with the directory that holds the plan */
	if (!rc)
		rc = sync_tree(pb, flat, tfd, efd, tshown, err);
	if (!rc && ((e = tm_sync_dir(efd)) || fchmod(tfd, 0755) != 0 ||
	            (e = tm_sync_dir(tfd))))
		rc = tm_fail(err, TM_EINTERNAL, "%s: cannot sync: %s", tshown,
		             strerror(e ? e : errno));
	if (!rc)
		rc = publish(dfd, tmp, name, shown, tshown, &k, err);
	if (!rc && (e = tm_sync_dir(dfd)))
		rc = tm_fail(err, TM_EINTERNAL, "%s: written, but its directory "
		             "cannot be synced: %s", shown, strerror(e));
	if (!rc && id_out)
		memcpy(id_out, id, 17);
out:
	if (efd >= 0)
		close(efd);
	if (tfd >= 0) {
		if (tmp[0])
			remove_plan_at(dfd, tmp, tfd);
		close(tfd);
	}
	if (dfd >= 0)
		close(dfd);
	free(name);
	free(parent);
	free(flat);
	free(base);
	return rc;
}

/* ---- layers a policy chose ---------------------------------------------- */

char *tm_megatron_layers(const tm_job *j, int *first, int *last)
{
	int *n = xmalloc(sizeof(int) * (size_t)j->nstages);
	tm_layout l;
	char *s = NULL;
	for (int c = 0; c < j->nstages; c++)
		n[c] = j->stages[c].layers;
	if (tm_layout_from_layers(j->size[TM_PP], j->vpp, n, false, &l) == 0) {
		s = tm_layout_format(&l);
		tm_layout_clear(&l);
	}
	if (!tm_layout_uneven_flags(j->size[TM_PP], j->vpp, n, first, last))
		*first = *last = -2;
	free(n);
	return s;
}

static void write_layers(jw *w, const tm_job *j)
{
	int first, last;
	char *lay = tm_megatron_layers(j, &first, &last);
	jw_obj(w, "layers", false);
	jw_arr(w, "chunks", true);
	for (int c = 0; c < j->nstages; c++)
		jw_int(w, NULL, j->stages[c].layers);
	jw_end_arr(w);
	if (lay)
		jw_str(w, "pipeline_model_parallel_layout", lay);
	else
		jw_null(w, "pipeline_model_parallel_layout");
	jw_obj(w, "uneven_flags", true);
	jw_bool(w, "expressible", first != -2);
	if (first >= 0)
		jw_int(w, "decoder_first_pipeline_num_layers", first);
	else
		jw_null(w, "decoder_first_pipeline_num_layers");
	if (last >= 0)
		jw_int(w, "decoder_last_pipeline_num_layers", last);
	else
		jw_null(w, "decoder_last_pipeline_num_layers");
	jw_end_obj(w);
	jw_end_obj(w);
	free(lay);
}
