/*
 * test_oracle.c — the ILP against brute force over every placement torchrun
 * can express, on random single-host instances (2–8 GPUs, random derates,
 * thermal fits, stage costs and activations, tp ∈ {1,2}, DGX-1-like and
 * random NVLink matrices, both order strings, several policies), a set of
 * two-host instances, and instances with a data-parallel gradient
 * all-reduce (dp > 1, grad_mib, two network groups, sometimes ep = 2),
 * and instances with an expert-parallel all-to-all (ep > 1, a2a_mib).
 * Every criterion of the lexicographic objective must agree, and every ILP
 * answer must satisfy the constraints. The wear bound of bound.c is held to
 * GLPK's simplex on the transportation problem it relaxes to, and the
 * moves bound to the fewest moves over every placement under its caps.
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <glpk.h>

#include "testlib.h"

#define SINGLE_HOST_CASES 520
#define TWO_HOST_CASES 40
#define HOST_CASES 300
#define ALLREDUCE_CASES 120
#define WEAR_CASES 200
#define ALLTOALL_CASES 120
#define MOVES_CASES 300
#define COUPLED_CASES 200

static int bound_cases, bound_tight;  /* lower bounds met exactly */
static bool close_to(double a, double b)
{
	return fabs(a - b) <= 1e-6 * (1 + fabs(a) + fabs(b));
}

/* With neighbours that heat each other the program ranks wear by
 * tangents 0.25 °C apart (docs/model.md, section 10): within 3.8·10⁻⁵ of
 * itself; the phases of every other criterion stay exact. */
static double wear_slack;

static int hd_cases, hd_optimal;      /* host decomposition tried, proven */
static int hd_stopped;                /* ... and stopped by a past deadline */

/* The host decomposition on its own, held to brute force: its bound never
 * passes the optimum, its placement keeps the constraints and the earlier
 * criteria within tolerance, and what it calls optimal is. */
static void check_host(const tm_problem *pb, const tm_solution *b, int id)
{
	tm_solution h;
	int *flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	tm_eval ev;
	char why[256];

	memset(&h, 0, sizeof h);
	hd_cases++;
	assert_int_equal(tm_solve_host(pb, NULL, 0, flat, &h), 0);
	if (h.bound > b->best[0] + 1e-9 * (1 + b->best[0]) ||
	    h.bound > h.objective + 1e-9 * (1 + h.objective)) {
		print_error("case %d: host decomposition bound %.9f, its time "
		            "%.9f, best time %.9f\n", id, h.bound, h.objective,
		            b->best[0]);
		fail();
	}
	if (!tm_constraints_ok(pb, flat, h.t_ref_ms, why, sizeof why)) {
		print_error("case %d: host decomposition violates: %s\n", id, why);
		fail();
	}
	/* a deadline already past: still a valid placement, and a search
	 * that stopped claims no proof */
	{
		tm_solution h2;
		int *f2 = xmalloc(sizeof(int) * (size_t)pb->nranks);
		memset(&h2, 0, sizeof h2);
		assert_int_equal(tm_solve_host(pb, NULL, 1, f2, &h2), 0);
		assert_true(tm_constraints_ok(pb, f2, h2.t_ref_ms, why, sizeof why));
		assert_true(h2.bound <= b->best[0] + 1e-9 * (1 + b->best[0]));
		if (h2.stopped) {
			hd_stopped++;
			assert_string_not_equal(h2.status, "optimal");
		}
		free(f2);
	}
	tm_eval_flat(pb, flat, h.t_ref_ms, &ev);
	if (!strcmp(h.status, "optimal")) {
		hd_optimal++;
		for (int k = 0; k < pb->ncrit; k++) {
			int crit = pb->crit[k];
			if (!close_to(h.best[k], b->best[k]) ||
			    tm_crit_value(&ev, crit) >
			    tm_crit_bound(pb, crit, b->best[k]) + 1e-6) {
				print_error("case %d: host decomposition criterion %d: "
				            "%.9f (final %.9f), brute %.9f\n", id, k,
				            h.best[k], tm_crit_value(&ev, crit),
				            b->best[k]);
				fail();
			}
		}
	}
	free(flat);
}

static int divisors(int n, int *out)
{
	int k = 0;
	for (int d = 1; d <= n; d++)
		if (n % d == 0)
			out[k++] = d;
	return k;
}


/* Solves one instance both ways; returns 1 if it was feasible. */
static int compare(tm_cluster *c, tm_profile *p, tm_job *j, tm_policy *pol,
                   int id)
{
	tm_problem *pb = NULL;
	tm_solution a, b;
	tm_error ea = { 0, "" }, eb = { 0, "" }, e0 = { 0, "" };
	int ra, rb, *flat;
	char why[256];

	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	if (getenv("TM_DEBUG_CASE") && atoi(getenv("TM_DEBUG_CASE")) == id)
		fprintf(stderr, "case %d: hosts %d gpus %d world %d nproc %d tp %d pp %d vpp %d dp %d m %d tol %g tpnv %d ppnv %d maxT %g maxmv %d crit %d,%d,%d ncrit %d\n", id, c->nnodes, c->nodes[0].ngpus, j->world, j->nproc_per_node, j->size[TM_TP], j->size[TM_PP], j->vpp, j->size[TM_DP], j->microbatches, pol->tolerance, pol->tp_nvlink, pol->pp_nvlink, pol->max_temp_c, pol->max_moves, pol->crit[0], pol->crit[1], pol->crit[2], pol->ncrit);
	if (tm_problem_new(c, p, j, pol, false, &pb, &e0)) {
		print_error("case %d: problem: %s\n", id, e0.msg);
		fail();
	}
	pol->method = TM_METHOD_ILP;
	ra = tm_solve(pb, &a, &ea);
	pol->method = TM_METHOD_BRUTE;
	rb = tm_solve(pb, &b, &eb);
	if (ra != rb) {
		print_error("case %d: ilp rc %d (%s), brute rc %d (%s)\n", id, ra,
		            ea.msg, rb, eb.msg);
		fail();
	}
	if (ra == 0) {
		flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
		tm_placement_to_flat(pb, a.pl, flat);
		if (!tm_constraints_ok(pb, flat, a.t_ref_ms, why, sizeof why)) {
			print_error("case %d: ilp plan violates: %s\n", id, why);
			fail();
		}
		free(flat);
		assert_string_equal(a.status, "optimal");
		if (tm_host_decomposable(pb))
			check_host(pb, &b, id);
		if (!close_to(a.t_ref_ms, b.t_ref_ms)) {
			print_error("case %d: reference time ilp %.9f brute %.9f\n", id,
			            a.t_ref_ms, b.t_ref_ms);
			fail();
		}
		/* the cheap lower bounds never pass the optimum */
		{
			double lbt = tm_time_lower_bound(pb);
			if (lbt > b.t_ref_ms + 1e-9 * (1 + b.t_ref_ms)) {
				print_error("case %d: time bound %.9f above the best "
				            "time %.9f\n", id, lbt, b.t_ref_ms);
				fail();
			}
			bound_tight += close_to(lbt, b.t_ref_ms);
			bound_cases++;
			for (int k = 0; k < pb->ncrit; k++) {
				double lbp = tm_peak_lower_bound(pb, b.t_ref_ms);
				if (pb->crit[k] == TM_CRIT_PEAK &&
				    lbp > b.best[k] + 1e-9 * (1 + fabs(b.best[k]))) {
					print_error("case %d: peak bound %.9f above the "
					            "least peak %.9f\n", id, lbp, b.best[k]);
					fail();
				}
			}
		}
		for (int k = 0; k < pb->ncrit; k++) {
			/* each phase's optimum agrees; the final placement keeps every
			 * criterion within its tolerance of that optimum */
			double x = a.best[k], y = b.best[k];
			double fin = tm_crit_value(&a.ev, pb->crit[k]);
			if (fin > tm_crit_bound(pb, pb->crit[k], y) + 1e-6) {
				print_error("case %d: criterion %d: final %.9f is beyond "
				            "the tolerance of %.9f\n", id, pb->crit[k], fin, y);
				fail();
			}
			if (pb->crit[k] == TM_CRIT_WEAR && wear_slack > 0 ?
			    fabs(x - y) > wear_slack * fabs(y) : !close_to(x, y)) {
				print_error("case %d: criterion %d (%d of %d): ilp %.9f "
				            "brute %.9f\n", id, pb->crit[k], k, pb->ncrit, x,
				            y);
				fail();
			}
			/* a phase after an approximate wear may differ where wear
			 * held the two apart: past it, only the bounds are held */
			if (pb->crit[k] == TM_CRIT_WEAR && wear_slack > 0)
				break;
		}
	} else {
		assert_int_equal(ra, TM_EINFEASIBLE);
	}
	tm_solution_clear(&a);
	tm_solution_clear(&b);
	tm_problem_free(pb);
	return ra == 0;
}

static void random_policy(tm_policy *pol, int tp)
{
	static const double tols[] = { 0, 0.01, 0.05 };
	int kind = tt_int(0, 3);
	pol->tolerance = tols[tt_int(0, 2)];
	pol->tp_nvlink = tp > 1 && tt_int(0, 3) != 0;
	pol->pp_nvlink = tt_int(0, 9) == 0;
	pol->max_temp_c = tt_int(0, 9) == 0 ? tt_unif(40, 60) : NAN;
	pol->max_moves = tt_int(0, 9) == 0 ? tt_int(0, 3) : -1;
	pol->ncrit = kind == 3 ? 1 : 2;
	pol->crit[0] = kind == 2 ? TM_CRIT_PEAK : TM_CRIT_TIME;
	pol->crit[1] = kind == 2 ? TM_CRIT_TIME : TM_CRIT_PEAK;
	/* the oracle asserts proven optima: no wall-clock limit that a loaded
	 * machine (or a sanitizer build) could hit decides the outcome; every
	 * instance here is small enough for GLPK to finish */
	pol->time_limit_s = 1e6;
}

static void test_single_host(void **state)
{
	int feasible = 0, eight = 0;
	(void)state;
	tt_seq.s = 0x9e3779b97f4a7c15ull;
	for (int id = 0; id < SINGLE_HOST_CASES; id++) {
		int n = tt_int(2, 8), nproc, tp, pp, vpp = 1, dv[16], nd;
		tm_cluster *c = tt_cluster(1, n, tt_int(0, 2));
		tm_profile *p = tt_profile(c, false);
		tm_policy *pol = NULL;
		tm_error e = { 0, "" };
		tm_job *j;

		/* nproc ≤ n: sometimes GPUs stay free for the planner to skip */
		nproc = tt_int(0, 3) ? n : tt_int(2, n);
		tp = nproc % 2 == 0 && tt_int(0, 1) ? 2 : 1;
		nd = divisors(nproc / tp, dv);
		pp = dv[tt_int(0, nd - 1)];
		if (pp > 1 && tt_int(0, 5) == 0)
			vpp = 2;
		j = tt_job(nproc, nproc, tp, pp, vpp, tt_int(0, 1), false);
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		random_policy(pol, tp);
		feasible += compare(c, p, j, pol, id);
		eight += n == 8 && nproc == 8;
		tt_free(NULL, pol, j, p, c);
	}
	print_message("single host: %d instances, %d feasible, %d with 8 of 8 "
	              "GPUs\n", SINGLE_HOST_CASES, feasible, eight);
	assert_true(feasible > SINGLE_HOST_CASES * 3 / 4);
	assert_true(eight > 20);
}

/* Neighbours that heat each other (a coupling between every pair of a
 * host's GPUs, some at zero), a background load now and then, and the
 * policies of test_single_host: the program's linear temperature of a
 * GPU from its whole host, and its tangents for wear, against every
 * placement. */
static void test_coupled(void **state)
{
	int feasible = 0, capped = 0;
	(void)state;
	tt_seq.s = 0x5eed2828ull;
	wear_slack = 5e-5;
	for (int id = 0; id < COUPLED_CASES; id++) {
		int n = tt_int(2, 6), nh = n <= 3 && tt_int(0, 3) == 0 ? 2 : 1;
		int nproc = tt_int(0, 2) ? n : tt_int(2, n), pp, dv[16], nd;
		int nn = nh == 2 ? tt_int(1, 2) : 1;
		tm_cluster *c = tt_cluster(nh, n, tt_int(0, 2));
		tm_profile *p = tt_profile(c, false);
		tm_policy *pol = NULL;
		tm_error e = { 0, "" };
		tm_job *j;

		for (int k = 0; k < p->ngpus; k++) {
			tm_gpu_profile *x = &p->gpus[k];
			tm_coupling *cp;
			if (tt_int(0, 4) == 0) {
				x->background_power_w = tt_unif(100, 800);
				x->background_power_sd_w = 10;
			}
			if (tt_int(0, 5) == 0)
				continue;
			cp = x->coupling = xcalloc(1, sizeof *cp);
			cp->how = xstrdup("test");
			cp->from = xcalloc((size_t)n, sizeof *cp->from);
			for (int h = 0; h < n; h++) {
				if (h == x->index)
					continue;
				cp->from[cp->nfrom].index = h;
				cp->from[cp->nfrom].c_per_w = tt_int(0, 2) ?
				                              tt_unif(0, 0.012) : 0;
				cp->from[cp->nfrom].sd_c_per_w = 0.001;
				cp->nfrom++;
			}
		}
		nd = divisors(nproc, dv);
		pp = dv[tt_int(0, nd - 1)];
		j = tt_job(nproc * nn, nproc, 1, pp, 1, tt_int(0, 1), false);
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		random_policy(pol, 1);
		capped += isfinite(pol->max_temp_c);
		feasible += compare(c, p, j, pol, id);
		tt_free(NULL, pol, j, p, c);
	}
	wear_slack = 0;
	print_message("coupled: %d instances, %d feasible, %d with max_temp_c\n",
	              COUPLED_CASES, feasible, capped);
	assert_true(feasible > COUPLED_CASES * 3 / 4);
}

static void test_two_hosts(void **state)
{
	int feasible = 0;
	(void)state;
	tt_seq.s = 0x2545f4914f6cdd1dull;
	for (int id = 0; id < TWO_HOST_CASES; id++) {
		int nh = tt_int(2, 3), n = nh == 3 ? 2 : tt_int(2, 3);
		int nproc = tt_int(1, n), nnodes = tt_int(1, nh);
		int world = nproc * nnodes, tp = 1, pp, dv[16], nd;
		tm_cluster *c = tt_cluster(nh, n, tt_int(0, 2));
		tm_profile *p = tt_profile(c, false);
		tm_policy *pol = NULL;
		tm_error e = { 0, "" };
		tm_job *j;

		nd = divisors(world, dv);
		pp = dv[tt_int(0, nd - 1)];
		j = tt_job(world, nproc, tp, pp, 1, tt_int(0, 1), false);
		c->nodes[1].net_gb_per_s = 50;
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		random_policy(pol, tp);
		feasible += compare(c, p, j, pol, 10000 + id);
		tt_free(NULL, pol, j, p, c);
	}
	print_message("multi host: %d instances, %d feasible\n", TWO_HOST_CASES,
	              feasible);
	assert_true(feasible > TWO_HOST_CASES / 2);
	print_message("time lower bound equal to the optimum in %d of %d "
	              "feasible instances\n", bound_tight, bound_cases);
}

/* Gradient all-reduce: dp > 1 and gradients on most instances, on one
 * host with mixed links or on two or three hosts in two network groups
 * (cross-group bandwidth below same-group), sometimes with ep = 2. */
/* Instances the host decomposition takes: hosts whose GPUs are all joined
 * by the same NVLink, derates with many ties, time first. */
static void test_host_decomposition(void **state)
{
	int feasible = 0;
	(void)state;
	tt_seq.s = 0x7f4a7c159e3779b9ull;
	for (int id = 0; id < HOST_CASES; id++) {
		/* three hosts of four GPUs took GLPK seconds: at most three */
		int nh = tt_int(1, 3), n = nh == 1 ? tt_int(2, 8) :
		         nh == 2 ? tt_int(2, 4) : tt_int(2, 3);
		int nproc = tt_int(0, 2) ? n : tt_int(1, n);
		int nnodes = nh == 1 ? 1 : tt_int(1, nh), world = nproc * nnodes;
		int tp = nproc % 2 == 0 && tt_int(0, 1) ? 2 : 1, pp, dv[16], nd;
		tm_cluster *c = tt_cluster(nh, n, 3);
		tm_profile *p = tt_profile(c, false);
		tm_policy *pol = NULL;
		tm_error e = { 0, "" };
		tm_job *j;

		nd = divisors(world / tp, dv);
		pp = dv[tt_int(0, nd - 1)];
		j = tt_job(world, nproc, tp, pp, pp > 1 && !tt_int(0, 4) ? 2 : 1,
		           tt_int(0, 1), false);
		if (tt_int(0, 2) == 0)   /* a gradient all-reduce, sometimes */
			for (int s = 0; s < j->nstages; s++)
				j->stages[s].grad_mib = tt_unif(0, 2000);
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		random_policy(pol, tp);
		pol->pp_nvlink = false;
		pol->max_temp_c = NAN;
		pol->max_moves = -1;
		pol->crit[0] = TM_CRIT_TIME;
		pol->crit[1] = TM_CRIT_PEAK;
		feasible += compare(c, p, j, pol, 30000 + id);
		tt_free(NULL, pol, j, p, c);
	}
	print_message("host decomposition: %d instances, %d feasible; taken "
	              "by it %d, proven optimal %d; stopped by a past "
	              "deadline %d\n", HOST_CASES, feasible, hd_cases,
	              hd_optimal, hd_stopped);
	assert_true(hd_cases > HOST_CASES / 2 && hd_optimal > hd_cases / 2);
	assert_true(hd_stopped > 0);
}

/* The instances with collectives, in two network groups: host 0 alone in
 * "x", the others in "y" or without one; inside a group 50 GB/s, across
 * 12.5 or 25. Solves the instance both ways under a random policy, and
 * counts it in *traffic when torchrun's placement has the collective that
 * ms times. Returns 1 if it was feasible. */
static int in_groups(tm_cluster *c, tm_profile *p, tm_job *j, int nh, int id,
                     double (*ms)(const tm_problem *, const int *),
                     int *traffic)
{
	tm_policy *pol = NULL;
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	int *flat = xmalloc(sizeof(int) * (size_t)j->world), ok;

	for (int h = 0; h < nh; h++) {
		c->nodes[h].net_gb_per_s = tt_int(0, 3) ? 50 : 40;
		c->nodes[h].net_group = h == 0 ? xstrdup("x") :
		                        tt_int(0, 3) ? xstrdup("y") : NULL;
	}
	c->same_group_gb_per_s = tt_int(0, 3) ? 50 : NAN;
	c->cross_group_gb_per_s = tt_int(0, 1) ? 12.5 : 25;
	assert_int_equal(tm_policy_default(&pol, &e), 0);
	random_policy(pol, 1);
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	tm_identity(pb, flat);
	*traffic += ms(pb, flat) > 0;
	free(flat);
	tm_problem_free(pb);
	ok = compare(c, p, j, pol, id);
	tm_policy_free(pol);
	return ok;
}

static void test_allreduce(void **state)
{
	int feasible = 0, with_ar = 0, cases = 0;
	(void)state;
	tt_seq.s = 0x5851f42d4c957f2dull;
	for (int id = 0; id < ALLREDUCE_CASES; id++) {
		int nh = tt_int(1, 3), n = nh == 1 ? tt_int(2, 6) :
		         nh == 3 ? 2 : tt_int(2, 3);
		int nproc = nh == 1 ? n : tt_int(1, n), nnodes = nh == 1 ? 1 :
		            tt_int(2, nh);
		int world = nproc * nnodes, pp, dv[16], nd;
		bool dp_first = tt_int(0, 1);
		tm_cluster *c = tt_cluster(nh, n, tt_int(1, 2));
		tm_profile *p = tt_profile(c, tt_int(0, 1));
		tm_job *j;

		nd = divisors(world, dv);
		pp = dv[tt_int(0, nd - 1)];
		if (world / pp < 2 && world > 1)  /* mostly dp > 1 */
			pp = dv[tt_int(0, nd - 2)];
		j = tt_job(world, nproc, 1, pp, 1, dp_first, false);
		if (dp_first && j->size[TM_DP] % 2 == 0 && tt_int(0, 2) == 0)
			j->size[TM_EP] = 2;
		for (int s = 0; s < j->nstages; s++)
			j->stages[s].grad_mib = tt_int(0, 3) ? tt_unif(0, 2000) : 0;
		feasible += in_groups(c, p, j, nh, 20000 + id, tm_allreduce_ms,
		                      &with_ar);
		cases++;
		tt_free(NULL, NULL, j, p, c);
	}
	print_message("all-reduce: %d instances, %d feasible, %d with an "
	              "all-reduce\n", cases, feasible, with_ar);
	print_message("time lower bound equal to the optimum in %d of %d "
	              "feasible instances in all\n", bound_tight, bound_cases);
	assert_true(feasible > cases / 2);
	assert_true(with_ar > cases / 2);
}

/* Expert-parallel all-to-alls: ep of 2 or 3 with a2a_mib on some stages,
 * ep next to dp on either side of it, sometimes a gradient all-reduce too,
 * on one to three hosts in two network groups. The ILP's all-to-all rows
 * and tied instance times must give what brute force finds with the
 * model's own evaluation, and the time bound must stay below it. */
static void test_alltoall(void **state)
{
	int feasible = 0, with_a2a = 0, cases = 0;
	(void)state;
	tt_seq.s = 0xa11702a1ull;
	for (int id = 0; id < ALLTOALL_CASES; id++) {
		int nh = tt_int(1, 3), n = nh == 1 ? tt_int(4, 6) :
		         nh == 3 ? 2 : tt_int(2, 3);
		int nproc = nh == 1 ? n : tt_int(1, n), nnodes = nh == 1 ? 1 :
		            tt_int(2, nh);
		int world = nproc * nnodes, pp, ep, dv[16], nd;
		tm_cluster *c = tt_cluster(nh, n, tt_int(1, 2));
		tm_profile *p = tt_profile(c, tt_int(0, 1));
		tm_job *j;

		nd = divisors(world, dv);
		pp = dv[tt_int(0, nd - 1)];
		if (world / pp < 2)   /* an all-to-all needs dp ≥ 2 */
			pp = world % 2 == 0 ? world / 2 : 1;
		if (world / pp < 2) {
			tm_cluster_free(c);
			tm_profile_free(p);
			continue;
		}
		j = tt_job(world, nproc, 1, pp, 1, true, false);
		ep = j->size[TM_DP] % 3 == 0 && tt_int(0, 2) == 0 ? 3 :
		     j->size[TM_DP] % 2 == 0 ? 2 : j->size[TM_DP];
		j->size[TM_EP] = ep;
		if (tt_int(0, 1)) {  /* pp fastest, then ep, then dp */
			j->order[2] = TM_PP;
			j->order[3] = TM_EP;
			j->order[4] = TM_DP;
		}
		for (int s = 0; s < j->nstages; s++) {
			j->stages[s].a2a_mib = tt_int(0, 2) ? tt_unif(0, 400) : 0;
			j->stages[s].grad_mib = tt_int(0, 3) == 0 ?
			                        tt_unif(0, 2000) : 0;
		}
		feasible += in_groups(c, p, j, nh, 30000 + id, tm_alltoall_max_ms,
		                      &with_a2a);
		cases++;
		tt_free(NULL, NULL, j, p, c);
	}
	print_message("all-to-all: %d instances, %d feasible, %d with an "
	              "all-to-all\n", cases, feasible, with_a2a);
	assert_true(feasible > cases / 2);
	assert_true(with_a2a > cases / 2);
}

/* The wear bound (tm_wear_lower_bound) against an independent solver:
 * GLPK's simplex on the transportation problem the bound relaxes to, rank
 * r on GPU g at the wear of r's pipeline rank on g at time t, one rank per
 * GPU, over random clusters, jobs (pipeline ranks of equal work too, which
 * the bound merges) and times. The bound must never exceed the LP's
 * optimum or the wear of torchrun's placement at t, and its ascent must
 * reach the optimum (within 1e-6). */
static void test_wear_bound(void **state)
{
	(void)state;
	tt_seq.s = 0x3ea5b0u;
	for (int id = 0; id < WEAR_CASES; id++) {
		int nh = tt_int(1, 3), ng = tt_int(1, 8), nproc = tt_int(1, ng);
		int nn = tt_int(1, nh), world = nproc * nn, dv[64], nd, pp;
		tm_cluster *c = tt_cluster(nh, ng, tt_int(0, 2));
		tm_profile *p = tt_profile(c, false);
		tm_policy *pol = NULL;
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_job *j;
		tm_eval ev;
		int *flat = xmalloc(sizeof(int) * (size_t)world);
		glp_prob *lp = glp_create_prob();
		glp_smcp parm;
		int G, *ind;
		double *val, t, lb, opt;

		nd = divisors(world, dv);
		pp = dv[tt_int(0, nd - 1)];
		j = tt_job(world, nproc, 1, pp, 1, tt_int(0, 1), false);
		for (int st = 1; st < pp; st++)
			if (tt_int(0, 1)) {  /* equal work: one class */
				j->stages[st].fwd_ms = j->stages[0].fwd_ms;
				j->stages[st].bwd_ms = j->stages[0].bwd_ms;
			}
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		pol->method = TM_METHOD_IDENTITY;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		tm_identity(pb, flat);
		t = tm_eval_flat(pb, flat, 0, &ev) * tt_unif(0.7, 1.6);
		tm_eval_flat(pb, flat, t, &ev);
		lb = tm_wear_lower_bound(pb, t, 0);

		G = pb->ngpu;
		glp_set_obj_dir(lp, GLP_MIN);
		glp_add_rows(lp, world + G);
		for (int r = 0; r < world; r++)
			glp_set_row_bnds(lp, r + 1, GLP_FX, 1, 1);
		for (int g = 0; g < G; g++)
			glp_set_row_bnds(lp, world + g + 1, GLP_UP, 0, 1);
		glp_add_cols(lp, world * G);
		ind = xmalloc(sizeof(int) * 3);
		val = xmalloc(sizeof(double) * 3);
		for (int r = 0; r < world; r++)
			for (int g = 0; g < G; g++) {
				int col = r * G + g + 1;
				glp_set_col_bnds(lp, col, GLP_LO, 0, 0);
				glp_set_obj_coef(lp, col, tm_wear_of(tm_rank_temp(pb, r,
				                 g, t)));
				ind[1] = r + 1;
				ind[2] = world + g + 1;
				val[1] = val[2] = 1;
				glp_set_mat_col(lp, col, 2, ind, val);
			}
		glp_init_smcp(&parm);
		parm.msg_lev = GLP_MSG_OFF;
		assert_int_equal(glp_simplex(lp, &parm), 0);
		assert_int_equal(glp_get_status(lp), GLP_OPT);
		opt = glp_get_obj_val(lp);
		assert_true(lb <= opt + 1e-9 * (1 + opt));
		assert_true(lb <= ev.wear_ref + 1e-9 * (1 + ev.wear_ref));
		if (!close_to(lb, opt))
			fail_msg("case %d: wear bound %.9g, LP optimum %.9g", id,
			         lb, opt);
		glp_delete_prob(lp);
		free(ind);
		free(val);
		free(flat);
		tt_free(pb, pol, j, p, c);
	}
}

/* Every placement torchrun can express, with its cost, its peak at its
 * own time, its moves and whether every constraint holds. */
typedef struct mv_enum {
	const tm_problem *pb;
	int *flat;
	unsigned char *used, *hused;
	double tcap, pcap;
	int least;            /* fewest moves under the caps; INT_MAX: none */
	long leaves;
} mv_enum;

static void mv_rank(mv_enum *B, int r)
{
	const tm_problem *pb = B->pb;
	if (r == pb->nranks) {
		tm_eval ev;
		char why[256];
		double t = tm_eval_flat(pb, B->flat, 0, &ev);
		B->leaves++;
		if (ev.cost_ms <= B->tcap && ev.peak_ref_c <= B->pcap &&
		    ev.moves < B->least &&
		    tm_constraints_ok(pb, B->flat, t, why, sizeof why))
			B->least = ev.moves;
		return;
	}
	for (int u = r % pb->nproc ? -1 : 0;
	     u < (r % pb->nproc ? 0 : pb->nusable); u++) {
		int h = u < 0 ? pb->gpu_host[B->flat[r - 1]] : pb->usable[u];
		if (u >= 0) {
			if (B->hused[h])
				continue;
			B->hused[h] = 1;
		}
		for (int g = pb->host_first[h];
		     g < pb->host_first[h] + pb->c->nodes[h].ngpus; g++) {
			if (B->used[g])
				continue;
			B->used[g] = 1;
			B->flat[r] = g;
			mv_rank(B, r + 1);
			B->used[g] = 0;
		}
		if (u >= 0)
			B->hused[h] = 0;
	}
}

/* The moves bound against every placement: on random instances (one to
 * three hosts, tp 1 or whole nodes, equal-work stages, memory needs,
 * gradients across network groups, max_temp_c, sometimes a reference
 * other than torchrun's) with caps from a random placement, with the
 * policy's tolerance or none, or no cap at all, the bound never passes the
 * fewest moves any placement under the caps makes. */
static void test_moves_bound(void **state)
{
	int cases = 0, tight = 0, positive = 0;
	(void)state;
	tt_seq.s = 0x6d0e5b3au;
	for (int id = 0; id < MOVES_CASES; id++) {
		int nh = tt_int(1, 3), ng = nh == 3 ? tt_int(1, 3) : tt_int(1, 4);
		int nproc = tt_int(1, ng), nn = tt_int(1, nh), world = nproc * nn;
		int dv[64], nd, pp, tp = tt_int(0, 1) ? nproc : 1;
		tm_cluster *c = tt_cluster(nh, ng, tt_int(0, 2));
		tm_profile *p = tt_profile(c, tt_int(0, 3) == 0);
		tm_policy *pol = NULL;
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_job *j;
		tm_eval ev;
		mv_enum B;
		int *ref = xmalloc(sizeof(int) * (size_t)world);
		long lb;

		nd = divisors(world / tp, dv);
		pp = dv[tt_int(0, nd - 1)];
		j = tt_job(world, nproc, tp, pp, 1, tt_int(0, 1), false);
		for (int st = 1; st < pp; st++)
			if (tt_int(0, 1)) {
				j->stages[st].fwd_ms = j->stages[0].fwd_ms;
				j->stages[st].bwd_ms = j->stages[0].bwd_ms;
			}
		for (int st = 0; st < pp; st++) {
			j->stages[st].grad_mib = tt_int(0, 2) ? 0 : tt_unif(0, 2000);
			if (tt_int(0, 3) == 0)
				j->stages[st].mem_gib = tt_unif(40, 90);
		}
		for (int h = 0; h < nh; h++) {
			c->nodes[h].net_gb_per_s = tt_int(0, 1) ? 50 : 25;
			c->nodes[h].net_group = xstrdup(tt_int(0, 1) ? "x" : "y");
			for (int g = 0; g < ng; g++)
				c->nodes[h].gpus[g].memory_gib = tt_int(0, 1) ? 80 :
				                                 NAN;
		}
		c->cross_group_gb_per_s = 12.5;
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		pol->method = TM_METHOD_IDENTITY;
		if (tt_int(0, 4) == 0)
			pol->max_temp_c = tt_unif(50, 90);
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		memset(&B, 0, sizeof B);
		B.pb = pb;
		B.flat = xmalloc(sizeof(int) * (size_t)world);
		B.used = xcalloc((size_t)pb->ngpu, 1);
		B.hused = xcalloc((size_t)pb->nhost, 1);
		/* a random placement: the plan whose caps are tried; sometimes
		 * also the reference */
		B.tcap = B.pcap = INFINITY;
		B.least = INT_MAX;
		for (int r = 0; r < world; r++) {
			int h = r % nproc ? pb->gpu_host[B.flat[r - 1]] : -1;
			while (h < 0) {
				h = pb->usable[tt_int(0, pb->nusable - 1)];
				if (B.hused[h])
					h = -1;
			}
			B.hused[h] = 1;
			do
				B.flat[r] = pb->host_first[h] +
				            tt_int(0, c->nodes[h].ngpus - 1);
			while (B.used[B.flat[r]]);
			B.used[B.flat[r]] = 1;
		}
		memcpy(ref, B.flat, sizeof(int) * (size_t)world);
		if (tt_int(0, 3) == 0) {
			tm_identity(pb, B.flat);  /* and the random one is ref */
			tm_problem_set_reference(pb, ref, 0, NULL);
			memcpy(ref, B.flat, sizeof(int) * (size_t)world);
		}
		memset(B.used, 0, (size_t)pb->ngpu);
		memset(B.hused, 0, (size_t)pb->nhost);
		tm_eval_flat(pb, ref, 0, &ev);
		switch (tt_int(0, 3)) {
		case 0: B.tcap = ev.cost_ms; B.pcap = ev.peak_ref_c; break;
		case 1: B.tcap = tm_crit_bound(pb, TM_CRIT_TIME, ev.cost_ms); break;
		case 2: B.pcap = ev.peak_ref_c; break;
		default:
			B.tcap = ev.cost_ms * tt_unif(0.9, 1.2);
			B.pcap = ev.peak_ref_c + tt_unif(-3, 3);
		}
		mv_rank(&B, 0);
		lb = tm_moves_lower_bound(pb, B.tcap, B.pcap);
		if (B.least != INT_MAX) {
			if (lb > B.least)
				fail_msg("case %d: moves bound %ld above the fewest "
				         "moves %d (tcap %.9g pcap %.9g)", id, lb,
				         B.least, B.tcap, B.pcap);
			cases++;
			tight += lb == B.least;
			positive += lb > 0;
		}
		free(ref);
		free(B.flat);
		free(B.used);
		free(B.hused);
		tt_free(pb, pol, j, p, c);
	}
	print_message("moves bound: %d instances with a placement under the "
	              "caps, bound positive in %d, equal to the fewest moves "
	              "in %d\n", cases, positive, tight);
	assert_true(cases > MOVES_CASES / 2);
	assert_true(positive > cases / 5);

	/* A host with a GPU to spare: torchrun's pipeline of two stages on
	 * GPUs 0 and 1 is held back by the slow link between them, which no
	 * rank's own floor sees; moving stage 1 to GPU 2, joined to GPU 0 by
	 * NVLink, meets the cap. The replica must change, but by one rank,
	 * not by its whole node rank. */
	{
		tm_cluster *c = tt_cluster(1, 3, 3);
		tm_profile *p = tt_profile(c, true);
		tm_job *j = tt_job(2, 2, 1, 2, 1, false, false);
		tm_policy *pol = NULL;
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_node *n = &c->nodes[0];
		mv_enum B;
		n->link[0 * 3 + 1] = n->link[1 * 3 + 0] = TM_LINK_SYS;
		n->nv[0 * 3 + 1] = n->nv[1 * 3 + 0] = 0;
		n->bw[0 * 3 + 1] = n->bw[1 * 3 + 0] = 8;
		for (int st = 0; st < 2; st++)
			j->stages[st].act_mib = 512;
		assert_int_equal(tm_policy_default(&pol, &e), 0);
		pol->method = TM_METHOD_IDENTITY;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		memset(&B, 0, sizeof B);
		B.pb = pb;
		B.flat = xmalloc(sizeof(int) * 2);
		B.used = xcalloc((size_t)pb->ngpu, 1);
		B.hused = xcalloc((size_t)pb->nhost, 1);
		B.flat[0] = 0;
		B.flat[1] = 2;
		B.tcap = tm_eval_flat(pb, B.flat, 0, &(tm_eval){ 0 });
		B.pcap = INFINITY;
		B.least = INT_MAX;
		mv_rank(&B, 0);
		assert_int_equal(B.least, 1);
		assert_int_equal(tm_moves_lower_bound(pb, B.tcap, B.pcap), 1);
		free(B.flat);
		free(B.used);
		free(B.hused);
		tt_free(pb, pol, j, p, c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_host),
		cmocka_unit_test(test_two_hosts),
		cmocka_unit_test(test_coupled),
		cmocka_unit_test(test_host_decomposition),
		cmocka_unit_test(test_allreduce),
		cmocka_unit_test(test_alltoall),
		cmocka_unit_test(test_wear_bound),
		cmocka_unit_test(test_moves_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
