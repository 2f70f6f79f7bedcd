/*
 * run.c — running a policy end to end (tm_run_policy): the layers per
 * stage when the policy changes them (rebalance_layers and alternating,
 * rebalance.c), the placement (tm_solve, solve.c), and the evidence rule
 * (tm_decide, below): a plan moves ranks off torchrun's placement only for
 * a predicted gain larger than the model's uncertainty, and trades time
 * for temperature (or back) only at the policy's stated exchange rate. The
 * rule weighs the solver's placement against torchrun's with the gains of
 * model/decide.c, re-solves without losses when the solver's best trades,
 * and writes the verdict with its reason into the solution; it does not
 * change how the solvers rank placements. A relayered job is weighed
 * against torchrun's placement of the job as given instead.
 *
 * The top of solve/: ops and the command line call it, nothing in solve/
 * or below does.
 */
#include <stdlib.h>
#include <string.h>

#include "solve/solve.h"

/* The layers first (rebalance_layers chooses them with the placement;
 * alternating shifts one layer per pair of chunks), then the placement
 * (tm_solve), then the evidence rule (tm_decide) when the job kept its
 * layers; a relayered job is compared with torchrun's placement of the
 * job as given. */
int tm_run_policy(const tm_cluster *c, const tm_profile *p, const tm_job *job,
                  const tm_policy *pol, bool allow, tm_run *run,
                  tm_error *err)
{
	tm_problem *pb0 = NULL;
	int *flat, rc;

	memset(run, 0, sizeof *run);
	if ((pol->rebalance || pol->method == TM_METHOD_ALTERNATING) &&
	    !job->by_layers)
		return tm_fail(err, TM_EINPUT, "%s: policy %s changes the layers "
		               "per stage; expected every stage of %s given by "
		               "layers (layers, layer_fwd_ms, layer_bwd_ms)",
		               pol->file, pol->name, job->file);
	if (pol->rebalance)
		rc = tm_rebalance(c, p, job, pol, allow, run, err);
	else if (pol->method == TM_METHOD_ALTERNATING) {
		int *n = xmalloc(sizeof(int) * (size_t)job->nstages);
		tm_alternating_layers(job, pol->min_layers, n);
		rc = tm_run_job(c, p, tm_job_relayer(job, n), job, pol, allow, run,
		                err);
		free(n);
	} else
		rc = tm_run_job(c, p, NULL, job, pol, allow, run, err);
	if (rc) {
		tm_run_clear(run);
		return rc;
	}
	if (!run->job) {
		tm_decide(run->pb, &run->sol);
		return 0;
	}
	run->layers = xmalloc(sizeof(int) * (size_t)job->nstages);
	for (int i = 0; i < job->nstages; i++)
		run->layers[i] = run->job->stages[i].layers;
	/* the baseline stays torchrun's placement of the job as given */
	if ((rc = tm_problem_new(c, p, job, pol, allow, &pb0, err))) {
		tm_run_clear(run);
		return rc;
	}
	flat = xmalloc(sizeof(int) * (size_t)pb0->nranks);
	tm_identity(pb0, flat);
	tm_eval_flat(pb0, flat, 0, &run->sol.baseline);
	free(flat);
	tm_problem_free(pb0);
	return 0;
}

/* ---- the evidence rule ---------------------------------------------------
 * docs/model.md, section 16. The reference is torchrun's placement. The
 * policy's order is walked criterion by criterion: where the best
 * placement on a criterion (with the earlier ties held) is a resolvable
 * gain over the reference, that criterion decides; where it is not, the
 * candidates tie on it — the time held within the run-to-run floor of the
 * reference's, the peak at the reference's — and the next criterion
 * decides among them. The temperatures are one criterion: the peak, then
 * the sorted temperatures (tm_gain's hot_rank), with wear ranking the
 * placements the solver offers. Nothing here ranks placements: the
 * solver does, under the caps. */

/* Whether g resolves a gain on crit of at least the least gain asked:
 * time, or a temperature (the peak, else the first resolved place of the
 * sorted temperatures) for the peak and wear. */
static bool won_on(int crit, const tm_gain *g, const tm_min_gain *mg)
{
	if (crit == TM_CRIT_TIME)
		return g->time_pct > g->time_sd && g->time_pct >= mg->time_pct;
	return g->hot_rank > 0 && g->hot_c > 0 && g->hot_c >= mg->peak_c;
}


/* The policy's best with the time held within tcap ms and the peak at
 * the reference time at pcap °C (INFINITY: not held), ranked by the
 * criteria not held. */
int tm_solve_held(const tm_problem *pb, double tcap, double pcap,
                  const int *hint, int *flat)
{
	tm_error e2 = { 0, "" };
	tm_policy pol = *pb->pol;
	tm_problem *v;
	tm_solution s2;
	int n = 0, rc;

	for (int k = 0; k < pb->ncrit; k++) {
		int c = pb->crit[k];
		if ((c == TM_CRIT_TIME && isfinite(tcap)) ||
		    (c == TM_CRIT_PEAK && isfinite(pcap)))
			continue;
		pol.crit[n++] = c;
	}
	/* the peak held, wear is what is left to rank by: the policy's
	 * implicit wear follows the peak only while the peak is named */
	pol.ncrit = n;
	if (isfinite(pcap))
		pol.max_temp_c = isfinite(pol.max_temp_c) ?
		                 fmin(pol.max_temp_c, pcap) : pcap;
	v = tm_problem_view(pb, &pol);
	v->time_cap_ms = fmin(pb->time_cap_ms, tcap);
	/* a placement the caps allow, for a warm start: without one, large
	 * problems would go to the direct program whatever its size */
	if (hint) {
		v->hint = xmalloc(sizeof(int) * (size_t)pb->nranks);
		memcpy(v->hint, hint, sizeof(int) * (size_t)pb->nranks);
	}
	rc = tm_solve(v, &s2, &e2);
	if (rc == 0)
		tm_placement_to_flat(v, s2.pl, flat);
	tm_solution_clear(&s2);
	if (hint)
		free(v->hint);
	free(v);
	return rc;
}

/* The reference placement's peak at the solver's reference time: a cap
 * it keeps in any re-solve, whose reference time is no shorter. */
static double ref_peak(const tm_problem *pb, const tm_solution *sol,
                       const int *ref)
{
	tm_eval e;
	tm_eval_flat(pb, ref, sol->t_ref_ms, &e);
	return e.peak_ref_c;
}

static bool same_flat(const tm_problem *pb, const int *a, const int *b)
{
	return !memcmp(a, b, sizeof(int) * (size_t)pb->nranks);
}

/* Time decided for cand: the placements within the run-to-run floor of
 * its time tie with it on time, and the temperatures decide among them.
 * The coolest of them replaces cand (and *g) when it still wins over the
 * reference and loses no more than cand does. */
static void cooler_tied(const tm_problem *pb, const int *ref, double tcap,
                        const tm_min_gain *mg, int *cand, tm_gain *g)
{
	int *alt = xmalloc(sizeof(int) * (size_t)pb->nranks);
	tm_eval e;
	double t = tm_eval_flat(pb, cand, 0, &e) * (1 + TM_TIME_FLOOR_PCT / 100);
	if (tm_solve_held(pb, fmin(t, tcap), INFINITY, cand, alt) == 0 &&
	    !same_flat(pb, alt, cand) && !same_flat(pb, alt, ref)) {
		tm_gain ga;
		tm_gain_of(pb, ref, alt, &ga);
		if ((won_on(TM_CRIT_TIME, &ga, mg) ||
		     won_on(TM_CRIT_PEAK, &ga, mg)) &&
		    (!tm_gain_lost(&ga) || tm_gain_lost(g)) &&
		    ga.peak_c >= g->peak_c) {
			memcpy(cand, alt, sizeof(int) * (size_t)pb->nranks);
			*g = ga;
		}
	}
	free(alt);
}

static void set_placement(const tm_problem *pb, tm_solution *sol,
                          const int *flat)
{
	tm_flat_to_placement(pb, flat, sol->pl);
	tm_eval_flat(pb, flat, sol->t_ref_ms, &sol->ev);
	sol->ev.feasible = true;
}

static void time_text(const tm_gain *g, strbuf *b)
{
	sb_addf(b, "%.2f ± %.2f %% %s", fabs(g->time_pct), g->time_sd,
	        g->time_pct >= 0 ? "faster" : "slower");
}

static void peak_text(const tm_gain *g, strbuf *b)
{
	sb_addf(b, "peak %.1f ± %.1f °C %s", fabs(g->peak_c), g->peak_sd,
	        g->peak_c >= 0 ? "cooler" : "hotter");
}

/* Why a criterion tied: "time ties (the fastest placement: 2.02 ± 2.83 %
 * faster)". */
static void tie_text(const tm_tie *t, strbuf *b)
{
	static const char *const what[] = {
		[TM_CRIT_TIME] = "the fastest placement",
		[TM_CRIT_PEAK] = "the coolest with the time held",
		[TM_CRIT_WEAR] = "the least wear with the time and peak held",
	};
	static const char *const is[] = {
		[TM_CRIT_TIME] = "is the fastest",
		[TM_CRIT_PEAK] = "is the coolest with the time held",
		[TM_CRIT_WEAR] = "has the least wear with the time and peak held",
	};
	bool time = t->crit == TM_CRIT_TIME;
	sb_addf(b, "%s tie%s (", time ? "time" : t->crit == TM_CRIT_PEAK ?
	        "the temperatures" : "the sorted temperatures", time ? "s" : "");
	if (t->same) {
		sb_addf(b, "torchrun's placement %s)", is[t->crit]);
		return;
	}
	sb_addf(b, "%s: ", what[t->crit]);
	if (time)
		time_text(&t->gain, b);
	else if (t->gain.hot_rank == 0)
		peak_text(&t->gain, b), sb_add(b, ", every GPU's temperature "
		                                  "within its uncertainty");
	else
		tm_gain_text(&t->gain, b);
	sb_add(b, ")");
}

/* What decided, and what came with it: "the peak decides: 3.2 ± 1.7 °C
 * cooler (time 0.00 ± 1.28 %)". */
static void decisive_text(int crit, const tm_gain *g, strbuf *b)
{
	char o[16];
	if (crit == TM_CRIT_TIME) {
		sb_add(b, "time decides: ");
		time_text(g, b);
		sb_add(b, " (");
		peak_text(g, b);
		sb_add(b, ")");
		return;
	}
	if (g->hot_rank == 1) {
		sb_addf(b, "the peak decides: %.1f ± %.1f °C %s (time ",
		        fabs(g->hot_c), g->hot_sd, g->hot_c >= 0 ? "cooler" :
		        "hotter");
	} else {
		sb_addf(b, "the %s hottest GPU decides: %.1f ± %.1f °C %s (",
		        tm_ordinal(g->hot_rank, o, sizeof o), fabs(g->hot_c),
		        g->hot_sd, g->hot_c >= 0 ? "cooler" : "hotter");
		peak_text(g, b);
		sb_add(b, ", time ");
	}
	time_text(g, b);
	sb_add(b, ")");
}

/* The criteria the walk takes, in the policy's order: time, the peak,
 * and wear after the peak (with the peak held, it ranks the sorted
 * temperatures below it). */
static int walk_order(const tm_problem *pb, int *order)
{
	int n = 0;
	for (int k = 0; k < pb->ncrit; k++)
		if (pb->crit[k] == TM_CRIT_TIME || pb->crit[k] == TM_CRIT_PEAK ||
		    (pb->crit[k] == TM_CRIT_WEAR && n &&
		     order[n - 1] == TM_CRIT_PEAK))
			order[n++] = pb->crit[k];
	return n;
}

void tm_decide(const tm_problem *pb, tm_solution *sol)
{
	const tm_policy *pol = pb->pol;
	const tm_min_gain *mg = &pol->min_gain;
	tm_ruling *R = &sol->rule;
	int *ref = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *best = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *cand = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int order[TM_MAX_CRIT], norder;
	double tcap = INFINITY, pcap = INFINITY;
	bool traded = false, moved = false;
	char why[256];
	tm_gain g;
	tm_eval eref;
	strbuf b;

	memset(R, 0, sizeof *R);
	R->decided_by = -1;
	if (!pol->evidence || pb->job->relayered ||
	    (pol->method != TM_METHOD_ILP && pol->method != TM_METHOD_GREEDY &&
	     pol->method != TM_METHOD_BRUTE)) {
		R->verdict = TM_VERDICT_NONE;
		goto out;
	}
	memcpy(ref, pb->ref_gpu, sizeof(int) * (size_t)pb->nranks);
	tm_placement_to_flat(pb, sol->pl, best);
	sb_init(&b);
	/* the reference must be a placement the policy allows */
	if (!tm_constraints_ok(pb, ref, tm_eval_flat(pb, ref, 0, &eref),
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
	norder = walk_order(pb, order);
	memcpy(cand, best, sizeof(int) * (size_t)pb->nranks);
	for (int k = 0; k < norder && !moved; k++) {
		int c = order[k];
		tm_tie *t;
		/* the solver's best is the first criterion's; a later one's
		 * comes from the placements that tie on the earlier ones */
		if (k > 0 && tm_solve_held(pb, tcap, pcap, ref, cand))
			break;
		tm_gain_of(pb, ref, cand, &g);
		if (!same_flat(pb, cand, ref) && won_on(c, &g, mg)) {
			R->decided_by = c;
			/* past the direct program the solver's own cooling pass
			 * has lowered the winner's peak within the time's
			 * tolerance, and a second solve of that size would
			 * double the plan's time (docs/bench.md) */
			if (c == TM_CRIT_TIME && k + 1 < norder &&
			    strcmp(sol->formulation, "greedy+bound"))
				cooler_tied(pb, ref, tcap, mg, cand, &g);
			if (!tm_gain_lost(&g)) {
				moved = true;
			} else if (tm_gain_worth(&g, pol->exchange_c_per_pct)) {
				moved = traded = true;
			} else {
				/* it trades beyond the rate: the best of it that
				 * loses nothing instead */
				R->best_gain = g;
				tm_eval_flat(pb, cand, sol->t_ref_ms, &R->best);
				R->resolved = true;
				if (tm_solve_held(pb, tcap, fmin(pcap, ref_peak(pb, sol, ref)),
				                  ref, cand) == 0) {
					tm_gain g2;
					tm_gain_of(pb, ref, cand, &g2);
					if (!same_flat(pb, cand, ref) && !tm_gain_lost(&g2) &&
					    (won_on(TM_CRIT_TIME, &g2, mg) ||
					     won_on(TM_CRIT_PEAK, &g2, mg))) {
						g = g2;
						moved = true;
					}
				}
			}
			break;
		}
		/* a tie: held for the criteria after it */
		t = &R->ties[R->nties++];
		t->crit = c;
		t->gain = g;
		t->same = same_flat(pb, cand, ref);
		tm_eval_flat(pb, cand, sol->t_ref_ms, &t->best);
		if (c == TM_CRIT_TIME)
			tcap = eref.iteration_ms * (1 + TM_TIME_FLOOR_PCT / 100);
		else if (c == TM_CRIT_PEAK)
			pcap = ref_peak(pb, sol, ref);
	}
	if (moved) {
		R->verdict = TM_VERDICT_MOVE;
		R->gain = g;
		sb_add(&b, traded ? "moved, trading at the policy's rate of " :
		       "moved: ");
		if (traded)
			sb_addf(&b, "%g °C per 1 %% of time: ",
			        pol->exchange_c_per_pct);
		for (int k = 0; k < R->nties; k++) {
			tie_text(&R->ties[k], &b);
			sb_add(&b, ", so ");
		}
		if (traded || R->resolved)
			tm_gain_text(&R->gain, &b);
		else
			decisive_text(R->decided_by, &R->gain, &b);
		if (!traded)
			sb_add(&b, "; a gain beyond the model's uncertainty");
		if (R->resolved) {
			sb_add(&b, " (the policy's best, ");
			tm_gain_text(&R->best_gain, &b);
			sb_add(&b, ", would have traded one for the other)");
		}
		set_placement(pb, sol, cand);
		goto done;
	}
	/* kept: every criterion tied, or the decisive one traded beyond the
	 * policy's rate with no loss-free alternative */
	R->decided_by = -1;
	R->verdict = same_flat(pb, best, ref) && R->nties &&
	             R->ties[R->nties - 1].same && R->nties == norder ?
	             TM_VERDICT_SAME : TM_VERDICT_KEEP;
	if (!R->resolved) {
		tm_gain_of(pb, ref, best, &R->best_gain);
		tm_eval_flat(pb, best, sol->t_ref_ms, &R->best);
	}
	tm_gain_of(pb, ref, ref, &R->gain);
	if (R->verdict == TM_VERDICT_SAME) {
		sb_add(&b, "kept torchrun's placement: it is the policy's best");
		goto keep;
	}
	sb_add(&b, "kept torchrun's placement: ");
	if (R->resolved) {
		sb_addf(&b, "the policy's best (%d of %d ranks moved; ",
		        R->best.moves, pb->nranks);
		tm_gain_text(&R->best_gain, &b);
		sb_addf(&b, ") would trade one for the other, %s",
		        isfinite(pol->exchange_c_per_pct) ?
		        "beyond the policy's exchange rate" :
		        "and the policy sets no exchange rate");
	} else {
		for (int k = 0; k < R->nties; k++) {
			if (k)
				sb_add(&b, "; ");
			tie_text(&R->ties[k], &b);
		}
		if (!R->nties)
			sb_add(&b, "nothing to weigh");
	}
	if (mg->time_pct > 0 || mg->peak_c > 0)
		sb_add(&b, " (or short of the policy's least gain)");
keep:
	set_placement(pb, sol, ref);
done:
	snprintf(R->reason, sizeof R->reason, "%s", b.s);
	sb_free(&b);
out:
	free(ref);
	free(best);
	free(cand);
}
