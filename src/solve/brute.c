/*
 * brute.c — the brute-force method: every placement torchrun can express
 * (node ranks on distinct hosts, ranks on distinct GPUs of their node's
 * host), scored by the model one lexicographic criterion at a time, as the
 * integer program ranks them. Meant for small clusters; the tests use it
 * as the oracle the other methods are compared with.
 */
#include <stdlib.h>
#include <string.h>

#include "solve/solve.h"

/* ---- brute force ---------------------------------------------------------- */

typedef struct brute {
	const tm_problem *pb;
	int ncrit;            /* criteria bounded so far */
	double bound[4];      /* their bounds */
	int crit;             /* criterion minimised in this pass; -1: the
	                         bare iteration time (pass 0) */
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
	/* pass 0 wants the bare iteration time, without move costs */
	v = B->crit < 0 ? ev.iteration_ms : tm_crit_value(&ev, B->crit);
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
	B.crit = -1;
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
