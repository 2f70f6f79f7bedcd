/*
 * decide.c — the evidence rule (docs/model.md, section 16): a plan moves
 * ranks off torchrun's placement only for a predicted gain larger than the
 * model's uncertainty, and trades time for temperature (or back) only at
 * the policy's stated exchange rate. It weighs the solver's placement
 * against the reference, re-solves without losses when the solver's best
 * trades, and writes the verdict with its reason into the solution. It
 * does not change how the solvers rank placements.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* Floors of the uncertainties (docs/model.md, section 16). Time: the
 * spread of one placement's step time over a real run (p10–p90 of the
 * committed 4×H200 run, ±0.6 %). Temperature: a prediction's error that
 * the model does not explain (the chassis fans follow the hottest GPU,
 * neighbours heat each other, the chassis warms): the RMS of the model's
 * per-GPU errors over every committed real comparison (tests/real: 15
 * GPU-phases, 0.0 to 4.2 °C), 1.7 °C; differences of temperatures at
 * least 1 °C, what nvidia-smi's whole degrees resolve. */
#define TIME_FLOOR_PCT 0.5
#define TEMP_ENV_SD_C 1.7
#define TEMP_FLOOR_C 1.0

double tm_temp_sd(const tm_problem *pb, int g, double busy)
{
	double w = (1 - busy) * pb->t_wait_sd[g];
	return sqrt(pb->t_fit_sd[g] * pb->t_fit_sd[g] + w * w +
	            TEMP_ENV_SD_C * TEMP_ENV_SD_C);
}

typedef struct hot {
	double t;    /* predicted temperature */
	int g;       /* GPU */
	double busy; /* its rank's busy fraction */
} hot;

static int cmp_hot(const void *x, const void *y)
{
	const hot *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? 1 : -1;
	return a->g - b->g;
}

/* The GPUs in use, hottest first. */
static hot *sorted_temps(const tm_problem *pb, const int *flat, double t)
{
	hot *h = xmalloc(sizeof(hot) * (size_t)pb->nranks);
	for (int r = 0; r < pb->nranks; r++) {
		h[r].t = tm_rank_temp(pb, r, flat[r], t);
		h[r].g = flat[r];
		h[r].busy = tm_rank_busy(pb, r, flat[r], t);
	}
	qsort(h, (size_t)pb->nranks, sizeof(hot), cmp_hot);
	return h;
}

/* The uncertainty of the difference of two predictions: the same GPU at
 * the same work errs the same way in both; at other work, its waiting
 * share and the unmodelled environment differ; two GPUs err apart. */
static double diff_sd(const tm_problem *pb, const hot *a, const hot *b)
{
	double sd;
	if (a->g == b->g)
		sd = hypot(fabs(a->busy - b->busy) * pb->t_wait_sd[a->g],
		           fabs(a->busy - b->busy) < 1e-12 ? 0 : TEMP_ENV_SD_C);
	else
		sd = hypot(tm_temp_sd(pb, a->g, a->busy),
		           tm_temp_sd(pb, b->g, b->busy));
	return fmax(TEMP_FLOOR_C, sd);
}

void tm_gain_of(const tm_problem *pb, const int *ref, const int *cand,
                tm_gain *gn)
{
	tm_eval a, b;
	double ta = tm_eval_flat(pb, ref, 0, &a);
	double tb = tm_eval_flat(pb, cand, 0, &b);
	hot *ha = sorted_temps(pb, ref, ta), *hb = sorted_temps(pb, cand, tb);
	int *ga = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	double dsd = 0;

	memset(gn, 0, sizeof *gn);
	gn->time_pct = (ta - tb) / ta * 100;
	/* a GPU whose work changed: its speed enters the difference */
	for (int g = 0; g < pb->ngpu; g++)
		ga[g] = -1;
	for (int r = 0; r < pb->nranks; r++)
		ga[ref[r]] = pb->rank_stage[r];
	for (int r = 0; r < pb->nranks; r++)
		if (ga[cand[r]] != pb->rank_stage[r])
			dsd = fmax(dsd, fmax(pb->derate_sd[cand[r]] /
			           pb->derate[cand[r]], pb->derate_sd[ref[r]] /
			           pb->derate[ref[r]]));
	gn->time_sd = fmax(TIME_FLOOR_PCT, 100 * sqrt(2.0) * dsd);
	gn->peak_c = ha[0].t - hb[0].t;
	gn->peak_sd = diff_sd(pb, &ha[0], &hb[0]);
	for (int k = 0; k < pb->nranks; k++) {
		double d = ha[k].t - hb[k].t, sd = diff_sd(pb, &ha[k], &hb[k]);
		if (fabs(d) > sd) {
			gn->hot_rank = k + 1;
			gn->hot_c = d;
			gn->hot_sd = sd;
			break;
		}
	}
	free(ha);
	free(hb);
	free(ga);
}

/* Losses the evidence resolves, and gains it resolves beyond the least
 * gains asked for. */
bool tm_gain_lost(const tm_gain *g)
{
	return g->time_pct < -g->time_sd || g->peak_c < -g->peak_sd ||
	       (g->hot_rank > 0 && g->hot_c < 0);
}

static bool won(const tm_gain *g, const tm_min_gain *mg)
{
	return (g->time_pct > g->time_sd && g->time_pct >= mg->time_pct) ||
	       (g->hot_rank > 0 && g->hot_c > 0 && g->hot_c >= mg->peak_c);
}

bool tm_gain_worth(const tm_gain *g, double rate)
{
	/* the temperature side: the first place the sorted temperatures
	 * differ, the peak when that is where */
	double c = g->hot_rank ? g->hot_c : g->peak_c;
	double sd = g->hot_rank ? g->hot_sd : g->peak_sd;
	double t_lo = g->time_pct - g->time_sd, t_hi = g->time_pct + g->time_sd;
	if (!isfinite(rate))
		return false;
	if (g->time_pct < -g->time_sd)       /* slower, for cooler GPUs */
		return c - sd > 0 && c - sd >= -t_hi * rate;
	return t_lo > 0 && t_lo * rate >= -(c - sd);  /* faster, hotter */
}

static const char *ordinal(int k, char *buf, size_t n)
{
	static const char *const sfx[] = { "th", "st", "nd", "rd" };
	int u = k % 10, t = k % 100;
	snprintf(buf, n, "%d%s", k, (u >= 1 && u <= 3 && (t < 11 || t > 13)) ?
	         sfx[u] : sfx[0]);
	return buf;
}

void tm_gain_text(const tm_gain *g, strbuf *b)
{
	char o[16];
	sb_addf(b, "%.2f ± %.2f %% %s, peak %.1f ± %.1f °C %s",
	        fabs(g->time_pct), g->time_sd, g->time_pct >= 0 ? "faster" :
	        "slower", fabs(g->peak_c), g->peak_sd, g->peak_c >= 0 ?
	        "cooler" : "hotter");
	if (g->hot_rank > 1)
		sb_addf(b, ", the %s hottest GPU %.1f ± %.1f °C %s",
		        ordinal(g->hot_rank, o, sizeof o), fabs(g->hot_c),
		        g->hot_sd, g->hot_c >= 0 ? "cooler" : "hotter");
	else if (g->hot_rank == 0)
		sb_add(b, ", every GPU's temperature within its uncertainty");
}

/* The policy's best under the no-loss constraints: its peak at the
 * reference time no hotter than the reference placement's there. */
static int resolve(const tm_problem *pb, const tm_solution *sol,
                   const int *ref, int *flat)
{
	tm_error e2 = { 0, "" };
	tm_error *err = &e2;
	tm_policy pol = *pb->pol;
	tm_problem *p2 = NULL;
	tm_solution s2;
	tm_eval e;
	int rc;

	tm_eval_flat(pb, ref, sol->t_ref_ms, &e);
	pol.max_temp_c = isfinite(pol.max_temp_c) ?
	                 fmin(pol.max_temp_c, e.peak_ref_c) : e.peak_ref_c;
	if ((rc = tm_problem_clone(pb, &pol, &p2, err)))
		return rc;
	rc = tm_solve(p2, &s2, err);
	if (rc == 0)
		tm_placement_to_flat(p2, s2.pl, flat);
	tm_solution_clear(&s2);
	tm_problem_free(p2);
	return rc;
}

static void set_placement(const tm_problem *pb, tm_solution *sol,
                          const int *flat)
{
	tm_flat_to_placement(pb, flat, sol->pl);
	tm_eval_flat(pb, flat, sol->t_ref_ms, &sol->ev);
	sol->ev.feasible = true;
}

void tm_decide(const tm_problem *pb, tm_solution *sol)
{
	const tm_policy *pol = pb->pol;
	tm_ruling *R = &sol->rule;
	int *ref = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *best = xmalloc(sizeof(int) * (size_t)pb->nranks);
	bool same = true, traded = false;
	char why[256];
	strbuf b;

	memset(R, 0, sizeof *R);
	if (!pol->evidence || pb->job->relayered ||
	    (pol->method != TM_METHOD_ILP && pol->method != TM_METHOD_GREEDY &&
	     pol->method != TM_METHOD_BRUTE)) {
		R->verdict = TM_VERDICT_NONE;
		goto out;
	}
	memcpy(ref, pb->ref_gpu, sizeof(int) * (size_t)pb->nranks);
	tm_placement_to_flat(pb, sol->pl, best);
	for (int r = 0; r < pb->nranks; r++)
		same = same && best[r] == ref[r];
	sb_init(&b);
	if (same) {
		R->verdict = TM_VERDICT_SAME;
		tm_gain_of(pb, ref, best, &R->gain);
		sb_add(&b, "kept torchrun's placement: it is the policy's best");
		goto done;
	}
	/* the reference must be a placement the policy allows */
	if (!tm_constraints_ok(pb, ref, tm_eval_flat(pb, ref, 0, &R->best),
	                       why, sizeof why)) {
		R->verdict = TM_VERDICT_MOVE;
		R->ref_breaks = true;
		tm_gain_of(pb, ref, best, &R->gain);
		/* what keeping the policy costs, or buys, against it */
		sb_addf(&b, "moved: torchrun's placement breaks the policy (%s); "
		        "against it this plan is ", why);
		tm_gain_text(&R->gain, &b);
		goto done;
	}
	tm_gain_of(pb, ref, best, &R->gain);
	if (tm_gain_lost(&R->gain) &&
	    tm_gain_worth(&R->gain, pol->exchange_c_per_pct)) {
		traded = true;
	} else if (tm_gain_lost(&R->gain)) {
		/* the best placement trades; the best without a loss instead */
		int *alt = xmalloc(sizeof(int) * (size_t)pb->nranks);
		R->best_gain = R->gain;
		tm_eval_flat(pb, best, sol->t_ref_ms, &R->best);
		R->resolved = true;
		if (resolve(pb, sol, ref, alt) == 0) {
			tm_gain g2;
			tm_gain_of(pb, ref, alt, &g2);
			if (!tm_gain_lost(&g2)) {
				memcpy(best, alt, sizeof(int) * (size_t)pb->nranks);
				R->gain = g2;
			}
		}
		free(alt);
	}
	if (traded || (!tm_gain_lost(&R->gain) &&
	               won(&R->gain, &pol->min_gain))) {
		R->verdict = TM_VERDICT_MOVE;
		sb_add(&b, traded ? "moved, trading at the policy's rate of "
		       : "moved: ");
		if (traded)
			sb_addf(&b, "%g °C per 1 %% of time: ",
			        pol->exchange_c_per_pct);
		tm_gain_text(&R->gain, &b);
		if (!traded)
			sb_add(&b, "; a gain beyond the model's uncertainty");
		if (R->resolved) {
			sb_add(&b, " (the policy's fastest placement, ");
			tm_gain_text(&R->best_gain, &b);
			sb_add(&b, ", would have traded one for the other)");
		}
		set_placement(pb, sol, best);
		goto done;
	}
	/* keep torchrun's placement; say what the best one offered */
	R->verdict = TM_VERDICT_KEEP;
	if (!R->resolved) {
		R->best_gain = R->gain;
		tm_eval_flat(pb, best, sol->t_ref_ms, &R->best);
	}
	tm_gain_of(pb, ref, ref, &R->gain);
	sb_add(&b, "kept torchrun's placement: the policy's best (");
	sb_addf(&b, "%d of %d ranks moved; ", R->best.moves, pb->nranks);
	tm_gain_text(&R->best_gain, &b);
	if (tm_gain_lost(&R->best_gain))
		sb_addf(&b, ") would trade one for the other, %s",
		        isfinite(pol->exchange_c_per_pct) ?
		        "beyond the policy's exchange rate" :
		        "and the policy sets no exchange rate");
	else
		sb_add(&b, ") gains nothing beyond the model's uncertainty");
	if (pol->min_gain.time_pct > 0 || pol->min_gain.peak_c > 0)
		sb_add(&b, " or the policy's least gain");
	set_placement(pb, sol, ref);
done:
	snprintf(R->reason, sizeof R->reason, "%s", b.s);
	sb_free(&b);
out:
	free(ref);
	free(best);
}
