/*
 * test_sim.c — the event-level simulator against closed forms and against
 * the model: the textbook times of 1F1B, GPipe and interleaved 1F1B with
 * equal stages, the model's formula on the cases it is exact for and
 * within a stated tolerance on random ones, and the thermal feedback rule
 * (a GPU that would pass its slowdown point settles at it, slower).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testlib.h"

/* The model's formula and the simulator may differ by this much, relative,
 * on the pipelines the formula is meant for (docs/model.md, section 14):
 * 1F1B, stages within a factor 2 of each other, at least 2·pp
 * microbatches, transfers over NVLink of at most 64 MiB. The formula
 * charges every transfer once and every microbatch after the first at the
 * bottleneck's pace; a real schedule hides some transfers, exposes others,
 * and lets fast stages run ahead of slow ones. */
#define MODEL_TOL 0.08

typedef struct fixture {
	tm_cluster *c;
	tm_profile *p;
	tm_job *j;
	tm_policy *pol;
	tm_problem *pb;
	int *flat;
} fixture;

static void build(fixture *f, int nhost, int ngpu, int tp, int pp, int vpp,
                  bool uniform)
{
	tm_error e = { 0, "" };
	int world = nhost * ngpu;
	memset(f, 0, sizeof *f);
	f->c = tt_cluster(nhost, ngpu, uniform ? 3 : 2);
	f->p = tt_profile(f->c, uniform);
	f->j = tt_job(world, ngpu, tp, pp, vpp, true, true);
	assert_int_equal(tm_policy_default(&f->pol, &e), 0);
	f->pol->method = TM_METHOD_IDENTITY;
	for (int s = 0; s < f->j->nstages; s++) {
		tm_stage *st = &f->j->stages[s];
		st->fwd_ms = uniform ? 2 : tt_unif(1, 10);
		st->bwd_ms = 2 * st->fwd_ms;
		if (uniform)
			st->act_mib = 0;
	}
	assert_int_equal(tm_problem_new(f->c, f->p, f->j, f->pol, false, &f->pb,
	                                &e), 0);
	f->flat = xmalloc(sizeof(int) * (size_t)f->pb->nranks);
	tm_identity(f->pb, f->flat);
}

static void unbuild(fixture *f)
{
	free(f->flat);
	tt_free(f->pb, f->pol, f->j, f->p, f->c);
}

/* Equal stages (f = 2, b = 4 ms, no transfers): 1F1B and GPipe take
 * (m + pp − 1)·(f + b); interleaved with v chunks of a rank's work each
 * takes m·w + (pp − 1)·w / v for m a multiple of pp. */
static void test_textbook(void **state)
{
	(void)state;
	for (int pp = 1; pp <= 8; pp++)
		for (int m = 1; m <= 17; m += 4)
			for (int kind = 0; kind < 3; kind++) {
				fixture f;
				tm_sim s;
				double want;
				int v = kind == 1 ? 2 : 1;
				build(&f, 1, pp, 1, pp, v, true);
				f.j->sched = kind == 0 ? TM_SCHED_1F1B : kind == 1 ?
				    TM_SCHED_INTERLEAVED : TM_SCHED_GPIPE;
				f.j->microbatches = kind == 1 ? pp * ((m + pp - 1) /
				                                      pp) : m;
				for (int g = 0; g < f.pb->ngpu; g++)
					f.pb->derate[g] = 1;
				assert_int_equal(tm_simulate(f.pb, f.flat, false, &s),
				                 0);
				if (kind == 1)   /* w = v·6 per rank */
					want = f.j->microbatches * 12.0 + (pp - 1) *
					       12.0 / 2;
				else
					want = (f.j->microbatches + pp - 1) * 6.0;
				assert_true(fabs(s.flush_ms - want) < 1e-9);
				assert_true(fabs(s.iteration_ms - want) < 1e-9);
				/* and the model agrees */
				{
					tm_eval ev;
					assert_true(fabs(tm_eval_flat(f.pb, f.flat, 0,
					            &ev) - want) < 1e-9);
				}
				/* busy share: pp·m·6 of pp·T (kind 1: 12) */
				assert_true(fabs(s.bubble - (1 - f.j->microbatches *
				            (kind == 1 ? 12.0 : 6.0) / want)) < 1e-9);
				tm_sim_clear(&s);
				unbuild(&f);
			}
}

/* Random pipelines of unequal stages, 1F1B: half with random derates and
 * no transfers, half with equal derates and transfers over NVLink. The
 * simulator never beats the busiest instance's compute, and
 * the model's formula stays within MODEL_TOL of it. */
static void test_model_agrees(void **state)
{
	double worst = 0, low = 0;
	(void)state;
	tt_seq.s = 424242;
	for (int it = 0; it < 300; it++) {
		int pp = tt_int(1, 6), dp = tt_int(1, 2), tp = tt_int(1, 2);
		int ngpu = pp * dp * tp;
		fixture f;
		tm_sim s;
		tm_eval ev;
		double model, lo = 0;
		build(&f, 1, ngpu, tp, pp, 1, it % 2 == 1);
		for (int s0 = 0; s0 < f.j->nstages; s0++) {
			tm_stage *st = &f.j->stages[s0];
			st->fwd_ms = tt_unif(5, 10);
			st->bwd_ms = 2 * st->fwd_ms;
			st->act_mib = it % 2 ? tt_unif(0, 64) : 0;
		}
		f.j->microbatches = tt_int(2 * pp, 64);
		tm_problem_free(f.pb);
		{
			tm_error e = { 0, "" };
			assert_int_equal(tm_problem_new(f.c, f.p, f.j, f.pol, false,
			                                &f.pb, &e), 0);
		}
		assert_int_equal(tm_simulate(f.pb, f.flat, false, &s), 0);
		model = tm_eval_flat(f.pb, f.flat, 0, &ev);
		for (int d = 0; d < f.pb->nrep; d++)
			for (int s0 = 0; s0 < pp; s0++)
				lo = fmax(lo, f.j->microbatches *
				          tm_inst_ms(f.pb, f.flat, d, s0));
		assert_true(s.flush_ms >= lo - 1e-9);
		worst = fmax(worst, fabs(model - s.iteration_ms) / s.iteration_ms);
		low = fmin(low, (model - s.iteration_ms) / s.iteration_ms);
		assert_true(fabs(model - s.iteration_ms) <=
		            MODEL_TOL * s.iteration_ms);
		tm_sim_clear(&s);
		unbuild(&f);
	}
	print_message("model vs simulator, 300 random 1F1B pipelines: largest "
	              "difference %.2f %% (model lowest %.2f %%)\n", 100 * worst, 100 * low);
}

/* Interleaved schedules (microbatches a multiple of pp) and GPipe
 * finish, with feedback; interleaving with a partial group is refused. */
static void test_schedules_finish(void **state)
{
	(void)state;
	tt_seq.s = 777;
	for (int it = 0; it < 200; it++) {
		int pp = tt_int(2, 6), v = tt_int(1, 3);
		fixture f;
		tm_sim s;
		build(&f, 1, pp, 1, pp, v, false);
		f.j->microbatches = tt_int(1, 20);
		if (v > 1)
			f.j->microbatches = pp * tt_int(1, 4);
		if (v == 1 && tt_int(0, 1))
			f.j->sched = TM_SCHED_GPIPE;
		assert_int_equal(tm_simulate(f.pb, f.flat, true, &s), 0);
		assert_true(s.iteration_ms > 0 && s.bubble >= -1e-12 &&
		            s.bubble < 1);
		tm_sim_clear(&s);
		if (v > 1) {
			f.j->microbatches = pp + 1;
			assert_int_equal(tm_simulate(f.pb, f.flat, true, &s), -2);
			tm_sim_clear(&s);
		}
		unbuild(&f);
	}
}

/* One GPU of two with little headroom: without feedback it would run
 * above its slowdown point; with feedback it settles there at a lower
 * clock, the iteration gets longer, and the other GPU keeps full clock.
 * Energy is Σ power · T. */
static void test_feedback(void **state)
{
	fixture f;
	tm_sim cold, hot;
	double slow;
	(void)state;
	tt_seq.s = 99;
	build(&f, 1, 2, 1, 2, 1, true);
	f.j->microbatches = 8;
	for (int g = 0; g < 2; g++) {
		f.pb->derate[g] = 1;
		f.pb->t_wait[g] = 40;
		f.pb->t_slope[g] = 40;      /* 80 °C at full load */
		f.pb->p_wait[g] = 100;
		f.pb->p_slope[g] = 500;
		f.pb->headroom[g] = 20;
	}
	f.pb->headroom[1] = -10;            /* slows down at 70 °C */
	slow = f.pb->t_wait[1] + f.pb->t_slope[1] + f.pb->headroom[1];
	assert_int_equal(tm_simulate(f.pb, f.flat, false, &cold), 0);
	assert_true(cold.temp_c[1] > slow);
	assert_true(cold.clock[1] == 1 && cold.throttle_total_ms == 0);
	assert_int_equal(tm_simulate(f.pb, f.flat, true, &hot), 0);
	assert_true(hot.converged);
	assert_true(hot.clock[0] == 1);
	assert_true(hot.clock[1] < 1);
	assert_true(fabs(hot.temp_c[1] - slow) < 1e-6);
	assert_true(hot.iteration_ms > cold.iteration_ms);
	assert_true(hot.throttle_ms[0] == 0 && hot.throttle_ms[1] > 0);
	{
		double e = 0;
		for (int r = 0; r < 2; r++)
			e += hot.power_w[r] * hot.iteration_ms / 1000;
		assert_true(fabs(e - hot.energy_j) < 1e-9);
	}
	/* no headroom known: no feedback */
	tm_sim_clear(&hot);
	f.pb->headroom[1] = NAN;
	assert_int_equal(tm_simulate(f.pb, f.flat, true, &hot), 0);
	assert_true(hot.clock[1] == 1);
	assert_true(fabs(hot.iteration_ms - cold.iteration_ms) < 1e-12);
	tm_sim_clear(&cold);
	tm_sim_clear(&hot);
	unbuild(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_textbook),
		cmocka_unit_test(test_model_agrees),
		cmocka_unit_test(test_schedules_finish),
		cmocka_unit_test(test_feedback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
