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

/* ---- the evidence rule --------------------------------------------------- */

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
	               tm_gain_won(&R->gain, &pol->min_gain))) {
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
