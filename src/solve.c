/*
 * solve.c — one interface, several methods: identity (torchrun's default),
 * greedy (heaviest work on the fastest, coolest GPUs, then pairwise swaps),
 * brute force (every placement torchrun can express; the test oracle) and
 * the ILP of solve_ilp.c. All of them end in the same evaluation, so their
 * numbers are comparable.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

tm_placement *tm_placement_new(int nranks)
{
	tm_placement *pl = xcalloc(1, sizeof *pl);
	pl->nranks = nranks;
	pl->host = xcalloc((size_t)nranks, sizeof(int));
	pl->gpu = xcalloc((size_t)nranks, sizeof(int));
	return pl;
}

void tm_placement_free(tm_placement *pl)
{
	if (!pl)
		return;
	free(pl->host);
	free(pl->gpu);
	free(pl);
}

void tm_flat_to_placement(const tm_problem *pb, const int *flat,
                          tm_placement *pl)
{
	for (int r = 0; r < pb->nranks; r++) {
		pl->host[r] = pb->gpu_host[flat[r]];
		pl->gpu[r] = pb->gpu_pos[flat[r]];
	}
}

void tm_placement_to_flat(const tm_problem *pb, const tm_placement *pl,
                          int *flat)
{
	for (int r = 0; r < pb->nranks; r++)
		flat[r] = pb->host_first[pl->host[r]] + pl->gpu[r];
}

void tm_solution_clear(tm_solution *sol)
{
	tm_placement_free(sol->pl);
	memset(sol, 0, sizeof *sol);
}

/* ---- greedy -------------------------------------------------------------- */

static const tm_problem *sort_pb;
static const double *sort_key;

static int cmp_key_desc(const void *a, const void *b)
{
	double x = sort_key[*(const int *)a], y = sort_key[*(const int *)b];
	if (x != y)
		return x < y ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

/* Better GPUs first: faster, then cooler under full load. */
static int cmp_gpu(const void *a, const void *b)
{
	int g = *(const int *)a, h = *(const int *)b;
	const tm_problem *pb = sort_pb;
	double x = pb->t_idle[g] + pb->t_slope[g];
	double y = pb->t_idle[h] + pb->t_slope[h];
	if (pb->derate[g] != pb->derate[h])
		return pb->derate[g] < pb->derate[h] ? -1 : 1;
	if (x != y)
		return x < y ? -1 : 1;
	return g - h;
}

/* Places node n on host h: tensor-parallel groups (or single ranks) in
 * decreasing work, each on the best free GPUs that satisfy tp_nvlink. */
static bool greedy_node(const tm_problem *pb, int n, int h, int *flat)
{
	const tm_node *node = &pb->c->nodes[h];
	int first = pb->host_first[h], ng = node->ngpus;
	int tp = pb->pol->tp_nvlink ? pb->job->size[TM_TP] : 1;
	int *gpus = xmalloc(sizeof(int) * (size_t)ng);
	int *slots = xmalloc(sizeof(int) * (size_t)pb->nproc);
	double *key = xmalloc(sizeof(double) * (size_t)pb->nranks);
	unsigned char *taken = xcalloc((size_t)ng, 1), *done;
	bool ok = true;

	done = xcalloc((size_t)pb->nproc, 1);
	for (int i = 0; i < ng; i++)
		gpus[i] = first + i;
	sort_pb = pb;
	qsort(gpus, (size_t)ng, sizeof(int), cmp_gpu);
	for (int i = 0; i < pb->nproc; i++) {
		int r = n * pb->nproc + i;
		slots[i] = r;
		key[r] = pb->work[pb->rank_stage[r]];
	}
	sort_key = key;
	qsort(slots, (size_t)pb->nproc, sizeof(int), cmp_key_desc);
	for (int i = 0; i < pb->nproc && ok; i++) {
		int r = slots[i], grp[64], ngrp = 0, chosen[64];
		if (done[r - n * pb->nproc])
			continue;
		/* the rank's tensor-parallel group, when it must be on NVLink */
		if (tp > 1 && tp <= 64) {
			int base = (pb->rank_rep[r] * pb->npp + pb->rank_stage[r]) *
			           pb->nmember + pb->rank_member[r] / tp * tp;
			for (int k = 0; k < tp; k++)
				grp[ngrp++] = pb->inst_rank[base + k];
		} else {
			grp[ngrp++] = r;
		}
		ok = false;
		for (int s = 0; s < ng && !ok; s++) {
			int nc = 0;
			for (int k = s; k < ng && nc < ngrp; k++) {
				int g = gpus[k], fit = !taken[g - first] &&
				        tm_fits(pb, grp[nc], g);
				for (int q = 0; q < nc && fit && tp > 1; q++)
					fit = tm_nvlink(pb, chosen[q], g);
				if (fit)
					chosen[nc++] = g;
			}
			if (nc == ngrp)
				ok = true;
		}
		for (int k = 0; ok && k < ngrp; k++) {
			int rr = grp[k];
			if (rr / pb->nproc != n) {
				ok = false;
				break;
			}
			flat[rr] = chosen[k];
			taken[chosen[k] - first] = 1;
			done[rr - n * pb->nproc] = 1;
		}
	}
	free(gpus);
	free(slots);
	free(key);
	free(taken);
	free(done);
	return ok;
}

/* Pairwise swaps (and moves to idle GPUs) inside each host while they
 * improve the lexicographic objective. */
static void local_search(const tm_problem *pb, int *flat)
{
	int *owner = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	tm_eval cur, ev;
	char why[256];
	bool improved = true;

	tm_eval_flat(pb, flat, 0, &cur);
	for (int pass = 0; improved && pass < 50; pass++) {
		improved = false;
		for (int g = 0; g < pb->ngpu; g++)
			owner[g] = -1;
		for (int r = 0; r < pb->nranks; r++)
			owner[flat[r]] = r;
		for (int r = 0; r < pb->nranks; r++) {
			int h = pb->gpu_host[flat[r]], first = pb->host_first[h];
			for (int g = first; g < first + pb->c->nodes[h].ngpus; g++) {
				int o = owner[g], old = flat[r];
				if (g == old || (o >= 0 && o < r))
					continue;
				flat[r] = g;
				if (o >= 0)
					flat[o] = old;
				tm_eval_flat(pb, flat, 0, &ev);
				if (tm_eval_better(pb, &ev, &cur) &&
				    tm_constraints_ok(pb, flat, ev.iteration_ms, why,
				                      sizeof why)) {
					cur = ev;
					owner[g] = r;
					owner[old] = o;
					improved = true;
					continue;
				}
				flat[r] = old;
				if (o >= 0)
					flat[o] = g;
			}
		}
	}
	free(owner);
}

int tm_solve_greedy(const tm_problem *pb, int *flat)
{
	double *key = xmalloc(sizeof(double) * (size_t)pb->nranks);
	int *nodes = xmalloc(sizeof(int) * (size_t)pb->nnodes);
	int *hosts = xmalloc(sizeof(int) * (size_t)pb->nusable);
	double *hkey = xcalloc((size_t)pb->nhost, sizeof(double));
	bool ok = true;

	/* heavier node ranks on hosts whose best GPUs are faster and cooler */
	for (int n = 0; n < pb->nnodes; n++) {
		key[n] = 0;
		for (int i = 0; i < pb->nproc; i++)
			key[n] += pb->work[pb->rank_stage[n * pb->nproc + i]];
		nodes[n] = n;
	}
	sort_key = key;
	qsort(nodes, (size_t)pb->nnodes, sizeof(int), cmp_key_desc);
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], first = pb->host_first[h];
		for (int g = first; g < first + pb->c->nodes[h].ngpus; g++)
			hkey[h] -= pb->derate[g] * 1000 + pb->t_idle[g] + pb->t_slope[g];
		hkey[h] /= pb->c->nodes[h].ngpus;
		hosts[u] = h;
	}
	sort_key = hkey;
	qsort(hosts, (size_t)pb->nusable, sizeof(int), cmp_key_desc);
	for (int i = 0; i < pb->nnodes && ok; i++)
		ok = greedy_node(pb, nodes[i], hosts[i], flat);
	free(key);
	free(nodes);
	free(hosts);
	free(hkey);
	if (!ok)
		return TM_EINFEASIBLE;
	if (pb->nranks <= 1024)
		local_search(pb, flat);
	return 0;
}

/* ---- brute force ---------------------------------------------------------- */

typedef struct brute {
	const tm_problem *pb;
	int ncrit;            /* criteria bounded so far */
	double bound[4];      /* their bounds */
	int crit;             /* criterion minimised in this pass */
	double t_ref;         /* reference time; 0 in the first pass */
	double best;          /* best value found */
	int *best_flat;       /* its placement */
	int *flat;            /* placement under construction */
	unsigned char *used;  /* GPUs taken */
	unsigned char *hused; /* hosts taken */
	long long leaves;     /* placements visited */
} brute;

static void brute_leaf(brute *B)
{
	const tm_problem *pb = B->pb;
	tm_eval ev;
	char why[256];
	double v;

	B->leaves++;
	tm_eval_flat(pb, B->flat, B->t_ref, &ev);
	for (int k = 0; k < B->ncrit; k++)
		if (tm_crit_value(&ev, pb->crit[k]) > B->bound[k])
			return;
	v = tm_crit_value(&ev, B->crit);
	if (!(v < B->best))
		return;
	if (!tm_constraints_ok(pb, B->flat, B->t_ref, why, sizeof why))
		return;
	B->best = v;
	memcpy(B->best_flat, B->flat, sizeof(int) * (size_t)pb->nranks);
}

static void brute_rank(brute *B, int r)
{
	const tm_problem *pb = B->pb;
	int h0, h1;

	if (r == pb->nranks) {
		brute_leaf(B);
		return;
	}
	if (r % pb->nproc == 0) {
		h0 = 0;
		h1 = pb->nusable;
	} else {
		h0 = -1;
		h1 = 0;
	}
	for (int u = h0; u < h1; u++) {
		int h = u < 0 ? pb->gpu_host[B->flat[r - 1]] : pb->usable[u];
		int first = pb->host_first[h];
		if (u >= 0) {
			if (B->hused[h])
				continue;
			B->hused[h] = 1;
		}
		for (int g = first; g < first + pb->c->nodes[h].ngpus; g++) {
			if (B->used[g] || !tm_fits(pb, r, g))
				continue;
			B->used[g] = 1;
			B->flat[r] = g;
			brute_rank(B, r + 1);
			B->used[g] = 0;
		}
		if (u >= 0)
			B->hused[h] = 0;
	}
}

int tm_solve_brute(const tm_problem *pb, int *flat, double *t_ref,
                   double *best, tm_error *err)
{
	brute B;
	double count = 1;
	int rc = 0;

	/* placements: host choices × GPU choices within each host */
	for (int n = 0; n < pb->nnodes; n++) {
		int most = 0;
		for (int u = 0; u < pb->nusable; u++)
			if (pb->c->nodes[pb->usable[u]].ngpus > most)
				most = pb->c->nodes[pb->usable[u]].ngpus;
		count *= pb->nusable - n;
		for (int i = 0; i < pb->nproc; i++)
			count *= most - i;
	}
	if (count > 2e7)
		return tm_fail(err, TM_EUSAGE, "brute force: about %.3g placements "
		               "to try; it is meant for small clusters (use ilp)",
		               count);
	memset(&B, 0, sizeof B);
	B.pb = pb;
	B.flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	B.best_flat = flat;
	B.used = xcalloc((size_t)pb->ngpu, 1);
	B.hused = xcalloc((size_t)pb->nhost, 1);
	/* pass 0: the reference time, without the temperature cap */
	B.crit = TM_CRIT_TIME;
	B.best = INFINITY;
	brute_rank(&B, 0);
	if (!isfinite(B.best)) {
		rc = tm_explain_infeasible(pb, err);
		goto out;
	}
	B.t_ref = *t_ref = B.best;
	for (int k = 0; k < pb->ncrit; k++) {
		B.crit = pb->crit[k];
		B.best = INFINITY;
		brute_rank(&B, 0);
		if (!isfinite(B.best)) {
			rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: no placement "
			             "keeps every GPU at or below max_temp_c %.1f °C",
			             pb->pol->max_temp_c);
			goto out;
		}
		best[k] = B.best;
		B.bound[k] = tm_crit_bound(pb, B.crit, B.best);
		B.ncrit = k + 1;
	}
out:
	free(B.flat);
	free(B.used);
	free(B.hused);
	return rc;
}

/* ---- the dispatcher ------------------------------------------------------ */

int tm_solve(const tm_problem *pb, tm_solution *sol, tm_error *err)
{
	int *flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *warm = NULL;
	double t0 = now_ms(), t_ref = 0;
	char why[512];
	int rc = 0;

	memset(sol, 0, sizeof *sol);
	tm_identity(pb, flat);
	tm_eval_flat(pb, flat, 0, &sol->baseline);
	sol->baseline_ok = true;
	snprintf(sol->status, sizeof sol->status, "heuristic");
	switch (pb->pol->method) {
	case TM_METHOD_IDENTITY:
		if (!tm_constraints_ok(pb, flat, sol->baseline.iteration_ms, why,
		                       sizeof why))
			rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: the identity "
			             "placement violates the policy: %s", why);
		break;
	case TM_METHOD_GREEDY:
		if (tm_solve_greedy(pb, flat) ||
		    !tm_constraints_ok(pb, flat, tm_eval_flat(pb, flat, 0,
		                       &sol->ev), why, sizeof why)) {
			tm_identity(pb, flat);
			if (!tm_constraints_ok(pb, flat, sol->baseline.iteration_ms,
			                       why, sizeof why))
				rc = tm_explain_infeasible(pb, err);
		}
		break;
	case TM_METHOD_BRUTE:
		rc = tm_solve_brute(pb, flat, &sol->t_ref_ms, sol->best, err);
		snprintf(sol->status, sizeof sol->status, "optimal");
		break;
	default:
		warm = xmalloc(sizeof(int) * (size_t)pb->nranks);
		if (tm_solve_greedy(pb, warm) ||
		    !tm_constraints_ok(pb, warm, 0, why, sizeof why)) {
			tm_identity(pb, warm);
			if (!tm_constraints_ok(pb, warm, 0, why, sizeof why)) {
				free(warm);
				warm = NULL;
			}
		}
		rc = tm_solve_ilp(pb, warm, flat, sol, err);
		break;
	}
	if (rc)
		goto out;
	/* brute and ilp rank temperatures at the best achievable time */
	t_ref = sol->t_ref_ms;
	tm_eval_flat(pb, flat, t_ref, &sol->ev);
	sol->t_ref_ms = t_ref > 0 ? t_ref : sol->ev.iteration_ms;
	sol->ev.feasible = true;
	if (pb->pol->method == TM_METHOD_BRUTE) {
		/* like the ILP: the optimum of the first criterion's phase */
		sol->objective = sol->bound = sol->best[0];
		sol->gap = 0;
	} else if (pb->pol->method != TM_METHOD_ILP) {
		sol->objective = tm_crit_value(&sol->ev, pb->crit[0]);
		sol->bound = sol->gap = NAN;
	}
	sol->pl = tm_placement_new(pb->nranks);
	tm_flat_to_placement(pb, flat, sol->pl);
out:
	sol->time_ms = now_ms() - t0;
	free(flat);
	free(warm);
	return rc;
}
