/*
 * solve.c — one interface, several methods: tm_solve runs the method the
 * policy names — identity (torchrun's default), coolest-first and greedy
 * (greedy.c), brute force (brute.c; every placement torchrun can express,
 * the test oracle), the host decomposition (host.c) or the integer program
 * (ilp.c) — and ends each in the same evaluation, so their numbers are
 * comparable. The placement, solution and run objects live here too, and
 * tm_run_job, one job's problem solved into a run.
 *
 * Running a policy end to end (its layers, then tm_solve, then the
 * evidence rule) is run.c's tm_run_policy: above this file and
 * rebalance.c, whose layer policies solve each job they try here.
 */
#include <stdlib.h>
#include <string.h>

#include "solve/solve.h"

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

void tm_solution_clear(tm_solution *sol)
{
	tm_placement_free(sol->pl);
	memset(sol, 0, sizeof *sol);
}

/* ---- the dispatcher ------------------------------------------------------ */

static bool knob_set(enum tm_knob k)
{
	const char *v = tm_knob(k);
	return v && strcmp(v, "0");
}

/* A lower bound on the time criterion: on the iteration time, plus the
 * price of the moves that no placement avoids (ranks whose reference GPU
 * is gone). */
static double time_crit_lower_bound(const tm_problem *pb)
{
	return tm_time_lower_bound(pb) + pb->move_cost_ms * pb->ref_lost;
}

/* replan's hint, when it satisfies the policy and beats flat by the
 * lexicographic objective, replaces flat. */
static void weigh_hint(const tm_problem *pb, int *flat)
{
	tm_eval a, b;
	char why[256];
	if (!pb->hint)
		return;
	tm_eval_flat(pb, pb->hint, 0, &a);
	tm_eval_flat(pb, flat, 0, &b);
	if (tm_constraints_ok(pb, pb->hint, a.iteration_ms, why, sizeof why) &&
	    (!tm_constraints_ok(pb, flat, b.iteration_ms, why, sizeof why) ||
	     tm_eval_better(pb, &a, &b) > 0))
		memcpy(flat, pb->hint, sizeof(int) * (size_t)pb->nranks);
}

/* A criterion's relative gap to its bound: 0 when its value is not
 * above 0. */
static double own_gap(double value, double bound)
{
	return value > 0 ? (value - bound) / value : 0;
}

/* The fewest moves of any placement at least as good as ev in the
 * criteria before the k-th (moves): no slower, no hotter, each within the
 * policy's tolerance; wear is dropped, which only lowers the bound. */
static double moves_bound(const tm_problem *pb, int k, const tm_eval *ev)
{
	double tcap = INFINITY, pcap = INFINITY;
	for (int j = 0; j < k; j++)
		if (pb->crit[j] == TM_CRIT_TIME)
			tcap = tm_crit_bound(pb, TM_CRIT_TIME, ev->cost_ms);
		else if (pb->crit[j] == TM_CRIT_PEAK)
			pcap = tm_crit_bound(pb, TM_CRIT_PEAK, ev->peak_ref_c);
	return (double)tm_moves_lower_bound(pb, tcap, pcap);
}

/* The ilp method on a cluster too large for the direct program: the
 * greedy placement (with replica balancing), its gap proven against the
 * lower bounds of bound.c. Temperatures are those at the placement's own
 * time, as for the heuristics. */
static void bounded_heuristic(const tm_problem *pb, const int *flat,
                              double deadline_ms, tm_solution *sol)
{
	tm_eval ev;
	double lb = time_crit_lower_bound(pb);
	tm_eval_flat(pb, flat, 0, &ev);
	snprintf(sol->status, sizeof sol->status, "feasible");
	snprintf(sol->formulation, sizeof sol->formulation, "greedy+bound");
	sol->t_ref_ms = 0;
	for (int k = 0; k < pb->ncrit; k++)
		sol->best[k] = tm_crit_value(&ev, pb->crit[k]);
	sol->objective = tm_crit_value(&ev, pb->crit[0]);
	if (pb->crit[0] == TM_CRIT_TIME)
		sol->bound = fmin(lb, sol->objective);
	else if (pb->crit[0] == TM_CRIT_PEAK)
		sol->bound = fmin(tm_peak_lower_bound(pb, ev.iteration_ms),
		                  sol->objective);
	else
		sol->bound = 0;
	sol->gap = own_gap(sol->objective, sol->bound);
	if (sol->gap < 1e-9)
		sol->gap = 0;
	/* the peak's and the wear's own gaps, which this path does not
	 * close */
	for (int k = 0; k < pb->ncrit; k++)
		if (pb->crit[k] == TM_CRIT_PEAK && k > 0)
			sol->peak_bound = fmin(tm_peak_lower_bound(pb,
			                       ev.iteration_ms), ev.peak_temp_c);
		else if (pb->crit[k] == TM_CRIT_WEAR)
			sol->wear_bound = fmin(tm_wear_lower_bound(pb,
			                       ev.iteration_ms, deadline_ms),
			                       ev.wear);
		else if (pb->crit[k] == TM_CRIT_MOVES)
			sol->moves_bound = fmin(moves_bound(pb, k, &ev), ev.moves);
	if (pb->crit[0] == TM_CRIT_WEAR) {
		sol->bound = sol->wear_bound;
		sol->gap = own_gap(sol->objective, sol->bound);
		if (sol->gap < 1e-9)
			sol->gap = 0;
	}
}

int tm_solve(const tm_problem *pb, tm_solution *sol, tm_error *err)
{
	int *flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	int *warm = NULL;
	double t0 = tm_now_ms(), t_ref = 0;
	/* the heuristics stop at the policy's limit with their best so far */
	double deadline = t0 + pb->pol->time_limit_s * 1e3;
	char why[512];
	int rc = 0;

	memset(sol, 0, sizeof *sol);
	sol->peak_bound = sol->wear_bound = sol->moves_bound = NAN;
	for (int k = 0; k < TM_MAX_CRIT; k++)
		sol->gaps[k] = NAN;
	tm_identity(pb, flat);
	tm_eval_flat(pb, flat, 0, &sol->baseline);
	sol->baseline_ok = true;
	snprintf(sol->status, sizeof sol->status, "heuristic");
	switch (pb->pol->method) {
	case TM_METHOD_GREEDY_COOLEST:
		tm_solve_coolest(pb, flat);
		if (!tm_constraints_ok(pb, flat, tm_eval_flat(pb, flat, 0,
		                       &sol->ev), why, sizeof why))
			rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: the coolest-"
			             "first placement violates the policy: %s", why);
		break;
	case TM_METHOD_ALTERNATING:  /* its layers are the job's business */
	case TM_METHOD_IDENTITY:
		if (!tm_constraints_ok(pb, flat, sol->baseline.iteration_ms, why,
		                       sizeof why))
			rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: the identity "
			             "placement violates the policy: %s", why);
		break;
	case TM_METHOD_GREEDY:
		if (tm_solve_greedy(pb, deadline, flat, &sol->stopped) ||
		    !tm_constraints_ok(pb, flat, tm_eval_flat(pb, flat, 0,
		                       &sol->ev), why, sizeof why)) {
			tm_identity(pb, flat);
			weigh_hint(pb, flat);
			if (!tm_constraints_ok(pb, flat, sol->baseline.iteration_ms,
			                       why, sizeof why))
				rc = tm_explain_infeasible(pb, err);
		} else {
			weigh_hint(pb, flat);
		}
		break;
	case TM_METHOD_BRUTE:
		rc = tm_solve_brute(pb, flat, &sol->t_ref_ms, sol->best, err);
		snprintf(sol->status, sizeof sol->status, "optimal");
		break;
	default:
		warm = xmalloc(sizeof(int) * (size_t)pb->nranks);
		if (tm_solve_greedy(pb, deadline, warm, &sol->stopped) ||
		    !tm_constraints_ok(pb, warm, 0, why, sizeof why))
			tm_identity(pb, warm);
		weigh_hint(pb, warm);
		if (!tm_constraints_ok(pb, warm, 0, why, sizeof why)) {
			free(warm);
			warm = NULL;
		}
		/* THERMAP_DIRECT_ONLY=1 skips the decomposition, to measure
		 * the direct program (make bench, tests/scale) */
		if (!knob_set(TM_KNOB_DIRECT_ONLY) &&
		    tm_host_decomposable(pb) &&
		    tm_solve_host(pb, warm, deadline, flat, sol) == 0 &&
		    (!strcmp(sol->status, "optimal") || !tm_ilp_direct(pb)))
			break;
		if (warm && !tm_ilp_direct(pb)) {
			tm_cool_peak(pb, deadline, warm, &sol->stopped);
			tm_fewer_moves(pb, deadline, warm, &sol->stopped);
			bounded_heuristic(pb, warm, deadline, sol);
			memcpy(flat, warm, sizeof(int) * (size_t)pb->nranks);
			break;
		}
		memset(sol->best, 0, sizeof sol->best);
		snprintf(sol->formulation, sizeof sol->formulation,
		         "integer program");
		rc = tm_solve_ilp(pb, warm, deadline, flat, sol, err);
		if (rc == 0 && pb->crit[0] == TM_CRIT_TIME &&
		    strcmp(sol->status, "optimal")) {
			/* stopped early: the cheap bound may prove more */
			sol->bound = fmin(fmax(sol->bound,
			                       time_crit_lower_bound(pb)),
			                  sol->objective);
			sol->gap = own_gap(sol->objective, sol->bound);
		}
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
	/* each criterion's own proven gap: all closed when the search was
	 * (brute, or a proof of every phase), else the first criterion's,
	 * and the peak's from its bound on the greedy+bound path */
	for (int k = 0; k < pb->ncrit; k++)
		if (!strcmp(sol->status, "optimal"))
			sol->gaps[k] = 0;
		else if (k == 0 && !isnan(sol->gap))
			sol->gaps[k] = sol->gap;
		else if (pb->crit[k] == TM_CRIT_PEAK && !isnan(sol->peak_bound))
			sol->gaps[k] = own_gap(sol->ev.peak_temp_c, sol->peak_bound);
		else if (pb->crit[k] == TM_CRIT_WEAR && !isnan(sol->wear_bound))
			sol->gaps[k] = own_gap(sol->ev.wear, sol->wear_bound);
		else if (pb->crit[k] == TM_CRIT_MOVES &&
		         !isnan(sol->moves_bound))
			sol->gaps[k] = own_gap(sol->ev.moves, sol->moves_bound);
	sol->pl = tm_placement_new(pb->nranks);
	tm_flat_to_placement(pb, flat, sol->pl);
out:
	sol->time_ms = tm_now_ms() - t0;
	free(flat);
	free(warm);
	return rc;
}

/* ---- one job solved into a run ------------------------------------------- */

void tm_run_clear(tm_run *run)
{
	tm_solution_clear(&run->sol);
	tm_problem_free(run->pb);
	tm_job_free(run->job);
	free(run->layers);
	memset(run, 0, sizeof *run);
}

int tm_run_job(const tm_cluster *c, const tm_profile *p, tm_job *owned,
               const tm_job *job, const tm_policy *pol, bool allow,
               tm_run *run, tm_error *err)
{
	int rc;
	memset(run, 0, sizeof *run);
	run->job = owned;
	if ((rc = tm_problem_new(c, p, owned ? owned : job, pol, allow,
	                         &run->pb, err)) ||
	    (rc = tm_solve(run->pb, &run->sol, err)))
		return rc;
	return 0;
}
