/*
 * test_rebalance.c — the policies that change layers per stage.
 *
 *  - rebalance against brute force: on one host of 4 GPUs with unequal
 *    derates, every placement × every split of the layers (each chunk at
 *    least one) gives the joint optimum; rebalance must never be worse
 *    than placing alone, must hold layers optimal for its own placement,
 *    and wherever it says "optimal" it must be the joint optimum;
 *  - the alternating rule, min_layers and the memory limit;
 *  - a job whose stages are measured, not given by layers, is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "testlib.h"

/* The stages of j given by layers: layer times lf/lb, random extras. */
static void by_layers(tm_job *j, const int *layers, double lf, double lb)
{
	j->by_layers = true;
	j->layer_fwd_ms = lf;
	j->layer_bwd_ms = lb;
	for (int c = 0; c < j->nstages; c++) {
		tm_stage *st = &j->stages[c];
		st->measured = false;
		st->layers = layers[c];
		st->extra_fwd_ms = c == 0 ? lf : c == j->nstages - 1 ?
		                   tt_unif(0, 6) * lf : 0;
		st->extra_bwd_ms = 2 * st->extra_fwd_ms;
		st->fwd_ms = st->extra_fwd_ms + st->layers * lf;
		st->bwd_ms = st->extra_bwd_ms + st->layers * lb;
	}
}

/* The model's time of placement flat with the layers n. */
static double time_with(const tm_cluster *c, const tm_profile *p,
                        const tm_job *j, const tm_policy *pol, const int *n,
                        const int *flat)
{
	tm_job *k = tm_job_relayer(j, n);
	tm_problem *pb = NULL;
	tm_error err = { 0, "" };
	tm_eval ev;
	double t;
	assert_int_equal(tm_problem_new(c, p, k, pol, false, &pb, &err), 0);
	t = tm_eval_flat(pb, flat, 0, &ev);
	tm_problem_free(pb);
	tm_job_free(k);
	return t;
}

/* Calls f on every split of total layers over C chunks, each ≥ 1. */
static void splits(int *n, int c, int C, int left,
                   void (*f)(const int *, void *), void *ud)
{
	if (c == C - 1) {
		n[c] = left;
		f(n, ud);
		return;
	}
	for (int x = 1; x <= left - (C - 1 - c); x++) {
		n[c] = x;
		splits(n, c + 1, C, left - x, f, ud);
	}
}

typedef struct brute {
	const tm_cluster *c;
	const tm_profile *p;
	const tm_job *j;
	const tm_policy *pol;
	const int *flat;      /* fixed placement, or NULL for all 24 */
	double best;
} brute;

static int perms[24][4];

static void try_split(const int *n, void *ud)
{
	brute *B = ud;
	tm_job *k = tm_job_relayer(B->j, n);
	tm_problem *pb = NULL;
	tm_error err = { 0, "" };
	tm_eval ev;
	assert_int_equal(tm_problem_new(B->c, B->p, k, B->pol, false, &pb,
	                                &err), 0);
	for (int q = 0; q < (B->flat ? 1 : 24); q++) {
		double t = tm_eval_flat(pb, B->flat ? B->flat : perms[q], 0, &ev);
		if (t < B->best)
			B->best = t;
	}
	tm_problem_free(pb);
	tm_job_free(k);
}

static void test_brute_force(void **state)
{
	int q = 0, proven = 0, joint = 0, cases = 60;
	(void)state;
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			for (int c = 0; c < 4; c++)
				for (int d = 0; d < 4; d++)
					if (a != b && a != c && a != d && b != c && b != d &&
					    c != d) {
						perms[q][0] = a;
						perms[q][1] = b;
						perms[q][2] = c;
						perms[q++][3] = d;
					}
	tt_seq.s = 20261121;
	for (int it = 0; it < cases; it++) {
		tm_cluster *c = tt_cluster(1, 4, 0);
		tm_profile *p = tt_profile(c, false);
		tm_job *j = tt_job(4, 4, 1, 4, 1, false, false);
		tm_policy *pol = NULL, *place = NULL;
		tm_error err = { 0, "" };
		tm_run run, plain;
		int total = tt_int(8, 14), n[4], *flat;
		int base = total / 4, rest = total % 4;
		brute B = { c, p, j, NULL, NULL, INFINITY };

		for (int k = 0; k < 4; k++)
			n[k] = base + (k < rest);
		by_layers(j, n, tt_unif(0.5, 2), tt_unif(1, 4));
		assert_int_equal(tm_policy_default(&pol, &err), 0);
		assert_int_equal(tm_policy_default(&place, &err), 0);
		pol->rebalance = true;
		pol->tolerance = place->tolerance = 0;
		B.pol = pol;
		assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err), 0);
		assert_int_equal(tm_run_policy(c, p, j, place, false, &plain, &err),
		                 0);
		splits(n, 0, 4, total, try_split, &B);
		/* never below the joint optimum, never above placing alone */
		assert_true(run.sol.ev.iteration_ms >= B.best - 1e-9 * B.best);
		assert_true(run.sol.ev.iteration_ms <= plain.sol.ev.iteration_ms +
		            1e-9 * plain.sol.ev.iteration_ms);
		/* its layers are the best for its own placement */
		flat = xmalloc(sizeof(int) * 4);
		tm_placement_to_flat(run.pb, run.sol.pl, flat);
		{
			brute F = { c, p, j, pol, flat, INFINITY };
			int m[4];
			double t = time_with(c, p, j, pol, run.layers ? run.layers :
			                     (int[]){ j->stages[0].layers,
			                     j->stages[1].layers, j->stages[2].layers,
			                     j->stages[3].layers }, flat);
			splits(m, 0, 4, total, try_split, &F);
			assert_true(fabs(t - F.best) <= 1e-9 * F.best);
		}
		if (!strcmp(run.sol.status, "optimal")) {
			proven++;
			assert_true(fabs(run.sol.ev.iteration_ms - B.best) <=
			            1e-9 * B.best);
		}
		joint += fabs(run.sol.ev.iteration_ms - B.best) <= 1e-9 * B.best;
		free(flat);
		tm_run_clear(&run);
		tm_run_clear(&plain);
		tm_policy_free(place);
		tt_free(NULL, pol, j, p, c);
	}
	print_message("rebalance: %d of %d cases at the joint optimum, %d "
	              "proven\n", joint, cases, proven);
	/* alternation is not a proof; it should still find most optima */
	assert_true(joint * 10 >= cases * 8);
}

static void test_alternating(void **state)
{
	int n[8] = { 4, 6, 6, 6, 6, 6, 6, 8 }, want[8] = { 5, 5, 7, 5, 7, 5, 7, 7 };
	tm_cluster *c = tt_cluster(1, 8, 0);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(8, 8, 1, 8, 1, false, true);
	tm_policy *pol = NULL;
	tm_error err = { 0, "" };
	tm_run run;
	(void)state;
	by_layers(j, n, 1.1, 2.2);
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	pol->method = TM_METHOD_ALTERNATING;
	pol->tp_nvlink = false;
	assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err), 0);
	assert_memory_equal(run.layers, want, sizeof want);
	assert_int_equal(run.sol.ev.moves, 0);  /* torchrun's placement */
	tm_run_clear(&run);
	/* an odd chunk at min_layers keeps its layers, and so does its pair */
	j->stages[1].layers = 1;
	j->stages[0].layers = 9;
	assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err), 0);
	assert_int_equal(run.layers[0], 9);
	assert_int_equal(run.layers[1], 1);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

/* The slow GPU would take fewer layers, but memory holds every chunk
 * within its GPU: 2 GiB per layer on 25 GiB GPUs allow at most 12. */
static void test_memory(void **state)
{
	int n[2] = { 12, 12 };
	tm_cluster *c = tt_cluster(1, 2, 0);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(2, 2, 1, 2, 1, false, true);
	tm_policy *pol = NULL;
	tm_error err = { 0, "" };
	tm_run run;
	(void)state;
	p->gpus[0].derate = 1.0;
	p->gpus[1].derate = 1.5;
	by_layers(j, n, 1, 2);
	j->stages[1].extra_fwd_ms = j->stages[1].extra_bwd_ms = 0;
	j->stages[1].fwd_ms = 12;
	j->stages[1].bwd_ms = 24;
	j->microbatches = 16;
	j->layer_mem_gib = 2;
	j->stages[0].mem_gib = j->stages[1].mem_gib = 24;
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	pol->rebalance = true;
	/* memory unknown: the fast GPU takes more */
	assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err), 0);
	assert_non_null(run.layers);
	assert_int_equal(run.layers[0] + run.layers[1], 24);
	assert_true(run.layers[0] > 12 || run.layers[1] > 12);
	tm_run_clear(&run);
	/* 25 GiB: no chunk may grow past 12 layers, so none moves */
	for (int g = 0; g < 2; g++)
		c->nodes[0].gpus[g].memory_gib = 25;
	assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err), 0);
	/* the layers as the job gives them: no copy, no layers of its own */
	assert_null(run.layers);
	assert_null(run.job);
	tm_run_clear(&run);
	tt_free(NULL, pol, j, p, c);
}

static void test_measured_refused(void **state)
{
	tm_cluster *c = tt_cluster(1, 2, 0);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(2, 2, 1, 2, 1, false, true);
	tm_policy *pol = NULL;
	tm_error err = { 0, "" };
	tm_run run;
	(void)state;
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	pol->rebalance = true;
	assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err),
	                 TM_EINPUT);
	assert_non_null(strstr(err.msg, "given by layers"));
	tt_free(NULL, pol, j, p, c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_brute_force),
		cmocka_unit_test(test_alternating),
		cmocka_unit_test(test_memory),
		cmocka_unit_test(test_measured_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
