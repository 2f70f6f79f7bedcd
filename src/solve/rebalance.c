/*
 * rebalance.c — the policies that change the layers per stage, which
 * tm_run_policy (run.c) runs:
 *
 *  - alternating: the published thermal heuristic, even stages one layer
 *    more and odd stages one less, on torchrun's default placement;
 *  - rebalance_layers: layers per stage chosen with the placement. For a
 *    fixed placement the best layers are an exact integer program (GLPK,
 *    below); placement and layers then alternate, each step optimal for
 *    the other, until the layers repeat (docs/model.md, section 15).
 *
 * The layer program for one placement, chunks c on pipeline ranks p(c),
 * replicas d, instance derates δ[p][d], L = layer_fwd_ms + layer_bwd_ms,
 * E[p] the extras of p's chunks, H[d] the replica's hops, v = vpp, m the
 * microbatches:
 *     minimise  T
 *     T ≥ Σ_p δ[p][d]·(L·n_p + E[p]) / v + H[d] + (m − 1/v)·M[d]   ∀ d
 *     M[d] ≥ δ[p][d]·(L·n_p + E[p])                                ∀ p, d
 *     n_p = Σ_{c on p} n_c,  Σ_c n_c = layers,  n_c ≥ min_layers
 *     memory of p's chunks ≤ the smallest GPU memory p runs on
 * which is exactly the model's iteration time (section 4) less the
 * gradient all-reduce, fixed by the placement. A second phase keeps the
 * time within the policy's tolerance and moves the fewest layers from the
 * job's split, so noise does not move layers.
 */
#include <stdlib.h>
#include <string.h>

#include <glpk.h>

#include "solve/solve.h"

#define MAX_ROUNDS 8

/* ---- alternating --------------------------------------------------------- */

/* Pairs of chunks (0,1), (2,3), …: the even one gains a layer, the odd one
 * gives it, where the odd one keeps at least min_layers. A last unpaired
 * chunk keeps its layers, so the model keeps its depth. */
void tm_alternating_layers(const tm_job *j, int min_layers, int *n)
{
	for (int c = 0; c < j->nstages; c++)
		n[c] = j->stages[c].layers;
	for (int c = 0; c + 1 < j->nstages; c += 2)
		if (n[c + 1] - 1 >= min_layers) {
			n[c]++;
			n[c + 1]--;
		}
}

/* ---- the layer program ----------------------------------------------------- */

typedef struct lprob {
	const tm_problem *pb;
	const int *flat;      /* NULL: every instance at the best derate, hops
	                         at their lower bound (a bound for any placement) */
	const int *orig;      /* the job's counts: none goes below
	                         min(min_layers, its count) */
	const int *want;      /* phase 2 stays near these counts, or NULL */
	int total;            /* layers to share */
	int min_layers;
	double tol;           /* phase 2's relative slack on T */
	double time_limit_s;
} lprob;

static int add_cols(glp_prob *P, int n, const char *name, int kind,
                    double lo, double hi)
{
	int first = glp_add_cols(P, n);
	char buf[48];
	for (int i = 0; i < n; i++) {
		snprintf(buf, sizeof buf, "%s%d", name, i);
		glp_set_col_name(P, first + i, buf);
		glp_set_col_kind(P, first + i, kind);
		glp_set_col_bnds(P, first + i, hi > lo ? GLP_DB : GLP_FX, lo, hi);
	}
	return first;
}

/* Solves; n[c] gets the layers and *t the program's time (without the
 * all-reduce). Returns 0, or -1 when there is no split (memory). */
static int solve_layers(const lprob *L, int *n, double *t)
{
	const tm_problem *pb = L->pb;
	const tm_job *j = pb->job;
	int C = j->nstages, pp = pb->npp, R = pb->nrep, rc = -1;
	double Lms = j->layer_fwd_ms + j->layer_bwd_ms, v = j->vpp;
	double m = j->microbatches, *E = xcalloc((size_t)pp, sizeof *E);
	double *dl = xmalloc(sizeof(double) * (size_t)(pp * R));
	double *H = xmalloc(sizeof(double) * (size_t)R), dmin = INFINITY;
	int *ind = xmalloc(sizeof(int) * (size_t)(C + R + 2));
	double *val = xmalloc(sizeof(double) * (size_t)(C + R + 2));
	glp_prob *P = glp_create_prob();
	glp_iocp ip;
	int cn, cm, ct, cdev = 0, row;

	for (int c = 0; c < C; c++)
		E[c % pp] += j->stages[c].extra_fwd_ms + j->stages[c].extra_bwd_ms;
	for (int g = 0; g < pb->ngpu; g++)
		dmin = fmin(dmin, pb->derate[g]);
	if (L->flat) {
		for (int d = 0; d < R; d++) {
			H[d] = 0;
			for (int k = 0; k < pb->nhops; k++)
				H[d] += tm_hop_inst_ms(pb, L->flat, d, &pb->hops[k]);
			for (int p = 0; p < pp; p++) {  /* the slowest member */
				const int *mb = &pb->inst_rank[(d * pp + p) *
				                               pb->nmember];
				dl[p * R + d] = 0;
				for (int q = 0; q < pb->nmember; q++)
					dl[p * R + d] = fmax(dl[p * R + d],
					                     pb->derate[L->flat[mb[q]]]);
			}
		}
	} else {
		tm_replica_hops_lower(pb, H);
		for (int i = 0; i < pp * R; i++)
			dl[i] = dmin;
	}
	glp_set_obj_dir(P, GLP_MIN);
	cn = add_cols(P, C, "n", GLP_IV, 0, L->total);
	for (int c = 0; c < C; c++) {
		int lo = L->min_layers < L->orig[c] ? L->min_layers : L->orig[c];
		glp_set_col_bnds(P, cn + c, lo < L->total ? GLP_DB : GLP_FX, lo,
		                 L->total);
	}
	cm = add_cols(P, R, "M", GLP_CV, 0, 1e12);
	ct = add_cols(P, 1, "T", GLP_CV, 0, 1e12);
	glp_set_obj_coef(P, ct, 1);
	/* Σ n = total */
	row = glp_add_rows(P, 1);
	for (int c = 0; c < C; c++) {
		ind[c + 1] = cn + c;
		val[c + 1] = 1;
	}
	glp_set_mat_row(P, row, C, ind, val);
	glp_set_row_bnds(P, row, GLP_FX, L->total, L->total);
	for (int d = 0; d < R; d++) {
		int k = 0;
		double rhs = H[d];
		/* T − Σ_c δ L n_c / v − (m − 1/v) M_d ≥ Σ_p δ E_p / v + H_d */
		ind[++k] = ct;
		val[k] = 1;
		for (int c = 0; c < C; c++) {
			ind[++k] = cn + c;
			val[k] = -dl[(c % pp) * R + d] * Lms / v;
		}
		ind[++k] = cm + d;
		val[k] = -(m - 1 / v);
		for (int p = 0; p < pp; p++)
			rhs += dl[p * R + d] * E[p] / v;
		row = glp_add_rows(P, 1);
		glp_set_mat_row(P, row, k, ind, val);
		glp_set_row_bnds(P, row, GLP_LO, rhs, 0);
		/* M_d − Σ_{c on p} δ L n_c ≥ δ E_p */
		for (int p = 0; p < pp; p++) {
			k = 0;
			ind[++k] = cm + d;
			val[k] = 1;
			for (int c = p; c < C; c += pp) {
				ind[++k] = cn + c;
				val[k] = -dl[p * R + d] * Lms;
			}
			row = glp_add_rows(P, 1);
			glp_set_mat_row(P, row, k, ind, val);
			glp_set_row_bnds(P, row, GLP_LO, dl[p * R + d] * E[p], 0);
		}
	}
	/* memory: Σ_{c on p} layer_mem·n_c ≤ cap_p − Σ (mem_c − layers_c·lm) */
	if (L->flat && isfinite(j->layer_mem_gib) && j->layer_mem_gib > 0)
		for (int p = 0; p < pp; p++) {
			double cap = INFINITY, fixed = 0;
			int k = 0;
			for (int r = 0; r < pb->nranks; r++)
				if (pb->rank_stage[r] == p)
					cap = fmin(cap, pb->mem_gib[L->flat[r]]);
			for (int c = p; c < C; c += pp) {
				fixed += j->stages[c].mem_gib -
				         j->stages[c].layers * j->layer_mem_gib;
				ind[++k] = cn + c;
				val[k] = j->layer_mem_gib;
			}
			if (!isfinite(cap) || !isfinite(fixed))
				continue;
			row = glp_add_rows(P, 1);
			glp_set_mat_row(P, row, k, ind, val);
			glp_set_row_bnds(P, row, GLP_UP, 0, cap - fixed);
		}
	glp_init_iocp(&ip);
	ip.msg_lev = GLP_MSG_OFF;
	ip.presolve = GLP_ON;
	ip.tm_lim = (int)fmin(L->time_limit_s * 1e3, 2e9);
	if (glp_intopt(P, &ip) != 0 || glp_mip_status(P) != GLP_OPT)
		goto out;
	*t = glp_mip_obj_val(P);
	for (int c = 0; c < C; c++)
		n[c] = (int)lround(glp_mip_col_val(P, cn + c));
	if (L->want) {
		/* phase 2: the fewest layers moved within tolerance of T */
		double cap = *t * (1 + L->tol) + 1e-9 * (1 + *t);
		glp_set_col_bnds(P, ct, GLP_DB, 0, cap);
		glp_set_obj_coef(P, ct, 0);
		cdev = add_cols(P, C, "dev", GLP_CV, 0, L->total);
		for (int c = 0; c < C; c++) {
			glp_set_obj_coef(P, cdev + c, 1);
			for (int s = -1; s <= 1; s += 2) {
				/* dev_c ≥ ±(n_c − want_c) */
				ind[1] = cdev + c;
				val[1] = 1;
				ind[2] = cn + c;
				val[2] = -s;
				row = glp_add_rows(P, 1);
				glp_set_mat_row(P, row, 2, ind, val);
				glp_set_row_bnds(P, row, GLP_LO, -s * L->want[c], 0);
			}
		}
		if (glp_intopt(P, &ip) == 0 && glp_mip_status(P) == GLP_OPT) {
			for (int c = 0; c < C; c++)
				n[c] = (int)lround(glp_mip_col_val(P, cn + c));
			*t = glp_mip_col_val(P, ct);
		}
	}
	rc = 0;
out:
	glp_delete_prob(P);
	free(E);
	free(dl);
	free(H);
	free(ind);
	free(val);
	return rc;
}

/* ---- placement and layers in turn ---------------------------------------- */

static int *flat_of(const tm_run *run)
{
	int *flat = xmalloc(sizeof(int) * (size_t)run->pb->nranks);
	tm_placement_to_flat(run->pb, run->sol.pl, flat);
	return flat;
}

/* Alternation stops where the placement step is indifferent: the placement
 * ILP breaks ties of time by temperature, not by what the layers could then
 * gain. On small jobs, pairwise exchanges of GPUs (and moves to idle ones)
 * in a host, each scored by the exact layer program, go on while one
 * shortens the iteration. */
#define DESCEND_MAX_RANKS 64

typedef struct desc_state {
	lprob *L;
	double bt;     /* the best time so far */
	int *n, *bn;   /* layers tried, layers of the best */
	bool any;      /* an exchange was kept */
} desc_state;

static bool keep_shorter(void *ud, const int *flat)
{
	desc_state *D = ud;
	double t;
	D->L->flat = flat;
	if (solve_layers(D->L, D->n, &t) != 0 ||
	    (t += tm_allreduce_ms(D->L->pb, flat)) >= D->bt - 1e-9 * (1 + D->bt))
		return false;
	D->bt = t;
	memcpy(D->bn, D->n, sizeof(int) * (size_t)D->L->pb->job->nstages);
	D->any = true;
	return true;
}

static void descend(const tm_cluster *c, const tm_profile *p,
                    const tm_job *job, const tm_policy *pol, bool allow,
                    lprob *L, tm_run *best)
{
	const tm_problem *pb = best->pb;
	int N = pb->nranks, C = job->nstages, *flat;
	desc_state D;
	tm_run nr;
	tm_error e = { 0, "" };

	if (N > DESCEND_MAX_RANKS)
		return;
	flat = flat_of(best);
	L->pb = pb;
	D = (desc_state){ L, best->sol.ev.iteration_ms,
	                  xmalloc(sizeof(int) * (size_t)C),
	                  xmalloc(sizeof(int) * (size_t)C), false };
	tm_swap_descent(pb, flat, 20, keep_shorter, &D);
	if (D.any) {
		/* the exchanges kept the program's memory rows but not the
		 * policy's other constraints: those decide here */
		char why[256];
		memset(&nr, 0, sizeof nr);
		nr.job = tm_job_relayer(job, D.bn);
		if (tm_problem_new(c, p, nr.job, pol, allow, &nr.pb, &e) == 0 &&
		    tm_constraints_ok(nr.pb, flat, tm_eval_flat(nr.pb, flat, 0,
		                      &nr.sol.ev), why, sizeof why) &&
		    nr.sol.ev.iteration_ms < best->sol.ev.iteration_ms -
		    1e-9 * (1 + best->sol.ev.iteration_ms)) {
			nr.sol = best->sol;   /* its status and bounds, then … */
			best->sol.pl = NULL;
			tm_placement_free(nr.sol.pl);
			nr.sol.pl = tm_placement_new(N);
			tm_flat_to_placement(nr.pb, flat, nr.sol.pl);
			tm_eval_flat(nr.pb, flat, 0, &nr.sol.ev);
			nr.sol.ev.feasible = true;
			nr.sol.t_ref_ms = nr.sol.ev.iteration_ms;
			tm_run_clear(best);
			*best = nr;
		} else {
			tm_run_clear(&nr);
		}
	}
	free(flat);
	free(D.n);
	free(D.bn);
}

int tm_rebalance(const tm_cluster *c, const tm_profile *p, const tm_job *job,
                 const tm_policy *pol, bool allow, tm_run *out, tm_error *err)
{
	int C = job->nstages, total = tm_job_total_layers(job), rc, rounds;
	int *orig = xmalloc(sizeof(int) * (size_t)C);
	int *seen = xmalloc(sizeof(int) * (size_t)C * (MAX_ROUNDS + 2));
	int *n = xmalloc(sizeof(int) * (size_t)C), nseen = 1;
	tm_run *best = xcalloc(1, sizeof *best), *prev;
	lprob L;
	double lb, t;

	for (int i = 0; i < C; i++)
		orig[i] = job->stages[i].layers;
	memcpy(seen, orig, sizeof(int) * (size_t)C);
	if ((rc = tm_run_job(c, p, NULL, job, pol, allow, best, err)))
		goto out;
	prev = best;
	L = (lprob){ NULL, NULL, orig, orig, total, pol->min_layers,
	             pol->tolerance, pol->time_limit_s };
	for (rounds = 1; rounds <= MAX_ROUNDS; rounds++) {
		int *flat = flat_of(prev), dup = 0;
		tm_run *next;
		L.pb = prev->pb;
		L.flat = flat;
		rc = solve_layers(&L, n, &t);
		free(flat);
		if (rc)
			break;  /* no split fits this placement: keep what we have */
		for (int k = 0; k < nseen && !dup; k++)
			dup = !memcmp(&seen[k * C], n, sizeof(int) * (size_t)C);
		if (dup)
			break;  /* a fixed point (or a cycle): nothing new to try */
		memcpy(&seen[nseen++ * C], n, sizeof(int) * (size_t)C);
		next = xcalloc(1, sizeof *next);
		if (tm_run_job(c, p, tm_job_relayer(job, n), job, pol, allow,
		               next, err)) {
			/* these layers cannot be placed under the policy */
			tm_run_clear(next);
			free(next);
			memset(err, 0, sizeof *err);
			break;
		}
		if (prev != best) {
			tm_run_clear(prev);
			free(prev);
		}
		if (next->sol.ev.iteration_ms < best->sol.ev.iteration_ms -
		    1e-9 * (1 + best->sol.ev.iteration_ms)) {
			tm_run_clear(best);
			free(best);
			best = next;
		}
		prev = next;
	}
	if (prev != best) {
		tm_run_clear(prev);
		free(prev);
	}
	rc = 0;
	descend(c, p, job, pol, allow, &L, best);
	/* the bound: the layer program with every instance at the best
	 * derate and every hop at its least, valid for every placement */
	L.pb = best->pb;
	L.flat = NULL;
	L.want = NULL;
	lb = solve_layers(&L, n, &t) == 0 ? t : 0;
	{
		tm_solution *s = &best->sol;
		double obj = s->ev.iteration_ms;
		snprintf(s->formulation, sizeof s->formulation,
		         "placement+layers");
		s->objective = obj;
		s->bound = fmin(lb, obj);
		s->gap = obj > 0 ? (obj - s->bound) / obj : 0;
		if (s->gap < 1e-9)
			s->gap = 0;
		snprintf(s->status, sizeof s->status, "%s",
		         s->gap == 0 ? "optimal" : "heuristic");
	}
	best->rounds = rounds;
out:
	if (rc)
		tm_run_clear(best);
	else
		*out = *best;
	free(best);
	free(orig);
	free(seen);
	free(n);
	return rc;
}
