/*
 * test_model.c — the model and the solvers against closed forms: a
 * hand-computed iteration time and temperature, a hand-computed gradient
 * all-reduce and its ring with ep, Megatron-Core rank coordinates, the
 * sorted pairing that is optimal with uniform links and tp=1, invariance
 * of the optimum under a permutation of the input GPUs, greedy never worse
 * than identity, and infeasibility messages.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "testlib.h"

static tm_policy *policy(int method)
{
	tm_policy *pol = NULL;
	tm_error e = { 0, "" };
	assert_int_equal(tm_policy_default(&pol, &e), 0);
	pol->method = method;
	/* tests that assert a proven optimum must not depend on the clock */
	pol->time_limit_s = 1e6;
	return pol;
}

static void test_megatron_coords(void **state)
{
	/* tp2 pp2 dp2, order tp-cp-ep-dp-pp: tp fastest, then dp, then pp */
	tm_job *j = tt_job(8, 8, 2, 2, 1, true, true);
	static const int want[8][3] = { /* tp, dp, pp */
		{ 0, 0, 0 }, { 1, 0, 0 }, { 0, 1, 0 }, { 1, 1, 0 },
		{ 0, 0, 1 }, { 1, 0, 1 }, { 0, 1, 1 }, { 1, 1, 1 },
	};
	(void)state;
	for (int r = 0; r < 8; r++) {
		int c[TM_NDIM];
		tm_job_coords(j, r, c);
		assert_int_equal(c[TM_TP], want[r][0]);
		assert_int_equal(c[TM_DP], want[r][1]);
		assert_int_equal(c[TM_PP], want[r][2]);
	}
	/* ep=2 inside dp=4, ep next to dp and faster: dp index = ep + 2·outer */
	j->size[TM_TP] = 1;
	j->size[TM_PP] = 2;
	j->size[TM_DP] = 4;
	j->size[TM_EP] = 2;
	for (int r = 0; r < 8; r++) {
		int c[TM_NDIM];
		tm_job_coords(j, r, c);
		assert_int_equal(c[TM_EP], r % 2);
		assert_int_equal(c[TM_DP], r % 4);
		assert_int_equal(c[TM_PP], r / 4);
	}
	tm_job_free(j);
}

/* Two stages, two GPUs, numbers small enough to check by hand. */
static void test_hand_computed(void **state)
{
	tm_cluster *c = tt_cluster(1, 2, 3);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(2, 2, 1, 2, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_IDENTITY);
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	tm_eval ev;
	int flat[2] = { 0, 1 };
	double hop, t;
	(void)state;

	j->microbatches = 4;
	j->stages[0].fwd_ms = 1;
	j->stages[0].bwd_ms = 2;    /* w0 = 3 */
	j->stages[1].fwd_ms = 2;
	j->stages[1].bwd_ms = 4;    /* w1 = 6 */
	j->stages[0].act_mib = 100;
	p->gpus[0].derate = 1.0;
	p->gpus[1].derate = 1.5;
	for (int g = 0; g < 2; g++) {
		p->gpus[g].ambient_c = 30;
		p->gpus[g].r_c_per_w = 0.05;
		p->gpus[g].power_idle_w = 100;
		p->gpus[g].power_load_w = 500;
	}
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	/* NV2 on V100: 50 GB/s; 2·100 MiB forward and backward */
	hop = 2 * 100 * 1048576.0 / (50e9) * 1e3;
	assert_true(fabs(tm_hop_ms(pb, 100, 0, 1) - hop) < 1e-9);
	/* t0 = 3·1.0, t1 = 6·1.5 = 9; T = 3 + 9 + hop + (4 − 1)·9 */
	t = tm_eval_flat(pb, flat, 0, &ev);
	assert_true(fabs(t - (3 + 9 + hop + 27)) < 1e-9);
	/* GPU 1 busy 4·6·1.5/T; waiting it draws 100 + 0.45·400 = 280 W,
	 * computing 500 W: P = 280 + busy·220, temp = 30 + 0.05·P */
	assert_true(fabs(tm_rank_power(pb, 1, 1, t) -
	                 (280 + 4 * 9 / t * 220)) < 1e-9);
	assert_true(fabs(tm_rank_temp(pb, 1, 1, t) -
	                 (30 + 0.05 * (280 + 4 * 9 / t * 220))) < 1e-9);
	assert_true(fabs(ev.peak_temp_c - fmax(tm_rank_temp(pb, 0, 0, t),
	                                       tm_rank_temp(pb, 1, 1, t))) < 1e-12);
	/* swapped: heavy stage on the fast GPU is faster */
	flat[0] = 1;
	flat[1] = 0;
	assert_true(tm_eval_flat(pb, flat, 0, &ev) < t);
	tt_free(pb, pol, j, p, c);
}

/* dp = 2 on two hosts of one GPU each, 100 MiB of gradients: the ring's
 * two edges cross the network, at 12.5 GB/s between groups and 50 inside
 * one; with dp = 1, or without gradients, nothing changes. */
static void test_allreduce_hand(void **state)
{
	tm_cluster *c = tt_cluster(2, 1, 3);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(2, 1, 1, 1, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_IDENTITY);
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	tm_eval ev;
	int flat[2] = { 0, 1 };
	double rep, ar;
	(void)state;

	j->stages[0].fwd_ms = 1;
	j->stages[0].bwd_ms = 2;    /* w = 3 */
	j->stages[0].grad_mib = 100;
	c->nodes[0].net_gb_per_s = c->nodes[1].net_gb_per_s = 100;
	c->nodes[0].net_group = xstrdup("leaf-a");
	c->nodes[1].net_group = xstrdup("leaf-b");
	c->same_group_gb_per_s = 50;
	c->cross_group_gb_per_s = 12.5;
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	/* 2·(2−1)/2 · 100 MiB at 12.5 GB/s: 100·2^20 / (12.5·10^6) ms */
	ar = 100 * 1048576.0 / 12.5e6;
	assert_true(fabs(ar - 8.388608) < 1e-12);
	assert_true(fabs(tm_allreduce_ms(pb, flat) - ar) < 1e-12);
	rep = fmax(tm_rep_ms(pb, flat, 0), tm_rep_ms(pb, flat, 1));
	/* one stage: T_d = m·w (no hops); the all-reduce follows */
	assert_true(fabs(rep - j->microbatches * 3.0) < 1e-12);
	assert_true(fabs(tm_eval_flat(pb, flat, 0, &ev) - (rep + ar)) < 1e-12);
	/* busy fractions use T, all-reduce included */
	assert_true(fabs(tm_rank_busy(pb, 0, 0, ev.iteration_ms) -
	                 j->microbatches * 3.0 / (rep + ar)) < 1e-12);
	/* the bound knows the edges leave the node: it is exact here */
	assert_true(fabs(tm_time_lower_bound(pb) - (rep + ar)) < 1e-9);
	tm_problem_free(pb);
	/* the same two hosts in one group: 50 GB/s */
	free(c->nodes[1].net_group);
	c->nodes[1].net_group = xstrdup("leaf-a");
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_true(fabs(tm_allreduce_ms(pb, flat) - 100 * 1048576.0 / 50e6) <
	            1e-12);
	assert_true(fabs(tm_eval_flat(pb, flat, 0, &ev) -
	                 (rep + 2.097152)) < 1e-9);
	tm_problem_free(pb);
	/* no gradients: no all-reduce, and T is the slowest replica exactly */
	j->stages[0].grad_mib = 0;
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_true(tm_allreduce_ms(pb, flat) == 0);
	assert_true(tm_eval_flat(pb, flat, 0, &ev) == rep);
	tt_free(pb, pol, j, p, c);
}

/* tp1 ep2 dp4 on one host of four GPUs: the four data-parallel ranks form
 * one ring in data-parallel order (ep folded in), not a ring per expert
 * group. Links 0-1-2-3-0 are NVLink, 0-2 and 1-3 SYS, so only that ring
 * runs at NVLink speed; with dp = 1 gradients cost nothing. */
static void test_allreduce_ring_ep(void **state)
{
	(void)state;
	for (int ord = 0; ord < 2; ord++) {
		tm_cluster *c = tt_cluster(1, 4, 3);
		tm_profile *p = tt_profile(c, true);
		tm_job *j = tt_job(4, 4, 1, 1, 1, true, true);
		tm_policy *pol = policy(TM_METHOD_IDENTITY);
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_node *n = &c->nodes[0];
		int flat[4] = { 0, 1, 2, 3 }, swapped[4] = { 0, 2, 1, 3 };
		double nv = n->bw[1], want;

		j->size[TM_EP] = 2;
		/* tp-cp-ep-dp-pp or tp-cp-dp-ep-pp: ep next to dp either way */
		j->order[2] = ord ? TM_DP : TM_EP;
		j->order[3] = ord ? TM_EP : TM_DP;
		j->order[4] = TM_PP;
		j->stages[0].grad_mib = 64;
		for (int a = 0; a < 4; a++)
			for (int b = 0; b < 4; b++)
				if (a != b && (a + b) % 2 == 0) {
					n->link[a * 4 + b] = TM_LINK_SYS;
					n->nv[a * 4 + b] = 0;
					n->bw[a * 4 + b] = 8.0;
				}
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		for (int r = 0; r < 4; r++)
			assert_int_equal(pb->rank_rep[r], r);
		/* 2·(4−1)/4 · 64 MiB over the slowest edge */
		want = 2.0 * 3 / 4 * 64 * 1048576.0 / (nv * 1e6);
		assert_true(fabs(tm_allreduce_ms(pb, flat) - want) < 1e-12);
		/* ranks 1 and 2 exchanged: the ring 0→1→2→3→0 runs over
		 * GPUs 0, 2, 1, 3, whose edges 0-2 and 1-3 are SYS */
		want = 2.0 * 3 / 4 * 64 * 1048576.0 / (8.0 * 1e6);
		assert_true(fabs(tm_allreduce_ms(pb, swapped) - want) < 1e-12);
		tm_problem_free(pb);
		/* dp = 1 (tp = 4): gradients, but no data-parallel peers */
		j->size[TM_EP] = 1;
		j->size[TM_DP] = 1;
		j->size[TM_TP] = 4;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_true(tm_allreduce_ms(pb, flat) == 0);
		tt_free(pb, pol, j, p, c);
	}
}

/* The expert-parallel all-to-all by hand: two hosts of two NVLink-joined
 * GPUs (GPU 1 of the first 10 % slow), tp1 pp2 dp2 ep2, 100 MiB of
 * all-to-all at stage 0 only. Ordered tp-cp-ep-dp-pp, the two expert-
 * parallel ranks of stage 0 share host 0: each sends the other 50 MiB over
 * NVLink, and both instances wait for the slow GPU. Ordered tp-cp-pp-ep-
 * dp, they sit on different hosts: 50 MiB at 25 GB/s = 2.097152 ms, and
 * the slow GPU runs stage 1 untied. With one microbatch the simulator's
 * pipeline (forward 0, forward 1, backward 1, backward 0, the exchange
 * half in each pass of stage 0) takes the model's time exactly. */
static void test_alltoall_hand(void **state)
{
	(void)state;
	for (int ord = 0; ord < 2; ord++) {
		tm_cluster *c = tt_cluster(2, 2, 3);
		tm_profile *p = tt_profile(c, true);
		tm_job *j = tt_job(4, 2, 1, 2, 1, true, true);
		tm_policy *pol = policy(TM_METHOD_IDENTITY);
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_sim sim;
		tm_eval ev;
		int flat[4] = { 0, 1, 2, 3 };
		double x, t0, t1, rep, m;

		p->gpus[1].derate = 1.1;
		c->nodes[0].net_gb_per_s = c->nodes[1].net_gb_per_s = 25;
		j->size[TM_EP] = 2;
		if (ord) {
			j->order[2] = TM_PP;
			j->order[3] = TM_EP;
			j->order[4] = TM_DP;
		}
		j->stages[0].act_mib = j->stages[1].act_mib = 0;
		j->stages[0].a2a_mib = 100;   /* w0 = 3 + 6 = 9, w1 = 12 */
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		m = j->microbatches;
		if (!ord) {
			x = 50 * 1048576.0 / (c->nodes[0].bw[1] * 1e6);
			t0 = 9 * 1.1 + x;         /* tied to the slow GPU */
			t1 = 12;
		} else {
			x = 50 * 1048576.0 / 25e6;
			assert_true(fabs(x - 2.097152) < 1e-12);
			t0 = 9 + x;
			t1 = 12 * 1.1;            /* replica 0's stage 1 */
		}
		assert_true(fabs(tm_alltoall_max_ms(pb, flat) - x) < 1e-12);
		for (int d = 0; d < 2; d++)
			assert_true(fabs(tm_inst_ms(pb, flat, d, 0) - t0) < 1e-12);
		assert_true(fabs(tm_inst_ms(pb, flat, 0, 1) - t1) < 1e-12);
		rep = t0 + t1 + (m - 1) * fmax(t0, t1);
		assert_true(fabs(tm_rep_ms(pb, flat, 0) - rep) < 1e-9);
		assert_true(fabs(tm_eval_flat(pb, flat, 0, &ev) - rep) < 1e-9);
		assert_true(tm_time_lower_bound(pb) <= rep + 1e-9);
		tm_problem_free(pb);
		/* one microbatch: the simulator agrees */
		j->microbatches = 1;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_int_equal(tm_simulate(pb, flat, false, &sim), 0);
		assert_true(fabs(sim.iteration_ms - (t0 + t1)) < 1e-9);
		tm_sim_clear(&sim);
		/* without ep there is no exchange, whatever a2a_mib says */
		tm_problem_free(pb);
		j->size[TM_EP] = 1;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_true(tm_alltoall_max_ms(pb, flat) == 0);
		tt_free(pb, pol, j, p, c);
	}
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Uniform links, tp=1, one stage per GPU: the k-th heaviest stage on the
 * k-th fastest GPU minimises both the sum and the bottleneck, so it is the
 * optimum of the time criterion. */
static void test_sorted_pairing(void **state)
{
	(void)state;
	tt_seq.s = 12345;
	for (int it = 0; it < 60; it++) {
		int n = tt_int(2, 8);
		tm_cluster *c = tt_cluster(1, n, 3);
		tm_profile *p = tt_profile(c, false);
		tm_job *j = tt_job(n, n, 1, n, 1, true, false);
		tm_policy *pol = policy(TM_METHOD_ILP);
		tm_problem *pb = NULL;
		tm_solution sol;
		tm_error e = { 0, "" };
		double w[8], d[8], sum = 0, mx = 0, want;

		for (int s = 0; s < n; s++) {
			j->stages[s].act_mib = 0;
			w[s] = j->stages[s].fwd_ms + j->stages[s].bwd_ms;
			p->gpus[s].derate = 1 + tt_unif(0, 0.3);
			d[s] = p->gpus[s].derate;
		}
		pol->ncrit = 1;
		pol->tolerance = 0;
		qsort(w, (size_t)n, sizeof(double), cmp_dbl);
		qsort(d, (size_t)n, sizeof(double), cmp_dbl);
		for (int s = 0; s < n; s++) {
			double t = w[s] * d[n - 1 - s];
			sum += t;
			mx = fmax(mx, t);
		}
		want = sum + (j->microbatches - 1) * mx;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_int_equal(tm_solve(pb, &sol, &e), 0);
		assert_true(fabs(sol.ev.iteration_ms - want) < 1e-6 * want);
		assert_string_equal(sol.status, "optimal");
		tm_solution_clear(&sol);
		tt_free(pb, pol, j, p, c);
	}
}

/* Reordering the GPUs of the cluster file (indices and links travel with
 * them) leaves every optimal criterion value unchanged. */
static void test_permutation_invariance(void **state)
{
	(void)state;
	tt_seq.s = 777;
	for (int it = 0; it < 40; it++) {
		int n = tt_int(3, 7), perm[8];
		tm_cluster *c = tt_cluster(1, n, tt_int(0, 2));
		tm_profile *p = tt_profile(c, false);
		tm_job *j = tt_job(n, n, 1, tt_int(0, 1) ? n : 1, 1, true, false);
		tm_cluster *c2 = tt_cluster(1, n, 3);
		tm_policy *pol = policy(TM_METHOD_ILP);
		tm_problem *pb = NULL, *pb2 = NULL;
		tm_solution a, b;
		tm_error e = { 0, "" };
		tm_node *x = &c->nodes[0], *y = &c2->nodes[0];

		for (int i = 0; i < n; i++)
			perm[i] = i;
		for (int i = n - 1; i > 0; i--) {
			int k = tt_int(0, i), t = perm[i];
			perm[i] = perm[k];
			perm[k] = t;
		}
		/* position i of c2 holds GPU perm[i] of c */
		for (int i = 0; i < n; i++) {
			y->gpus[i].index = x->gpus[perm[i]].index;
			for (int k = 0; k < n; k++) {
				y->link[i * n + k] = x->link[perm[i] * n + perm[k]];
				y->nv[i * n + k] = x->nv[perm[i] * n + perm[k]];
				y->bw[i * n + k] = x->bw[perm[i] * n + perm[k]];
			}
		}
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_int_equal(tm_problem_new(c2, p, j, pol, false, &pb2, &e), 0);
		assert_int_equal(tm_solve(pb, &a, &e), 0);
		assert_int_equal(tm_solve(pb2, &b, &e), 0);
		for (int k = 0; k < pb->ncrit; k++)
			assert_true(fabs(a.best[k] - b.best[k]) <=
			            1e-6 * (1 + fabs(a.best[k])));
		tm_solution_clear(&a);
		tm_solution_clear(&b);
		tm_problem_free(pb);
		tm_problem_free(pb2);
		tt_free(NULL, pol, j, p, c);
		tm_cluster_free(c2);
	}
}

static void test_greedy_not_worse(void **state)
{
	(void)state;
	tt_seq.s = 4242;
	for (int it = 0; it < 100; it++) {
		int n = tt_int(2, 8);
		tm_cluster *c = tt_cluster(1, n, tt_int(0, 3));
		tm_profile *p = tt_profile(c, false);
		tm_job *j = tt_job(n, n, 1, n, 1, true, false);
		tm_policy *pol = policy(TM_METHOD_GREEDY);
		tm_problem *pb = NULL;
		tm_solution s;
		tm_error e = { 0, "" };
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_int_equal(tm_solve(pb, &s, &e), 0);
		assert_false(tm_eval_better(pb, &s.baseline, &s.ev));
		tm_solution_clear(&s);
		tt_free(pb, pol, j, p, c);
	}
}

/* The policy's time limit ends replica balancing with the best so far:
 * a deadline already past stops it (and says so), the placement is still
 * a valid one, and the search without a deadline ends no slower. */
static void test_greedy_deadline(void **state)
{
	(void)state;
	tt_seq.s = 0xdead11e5ull;
	for (int it = 0; it < 30; it++) {
		tm_cluster *c = tt_cluster(8, 2, 3);
		tm_profile *p = tt_profile(c, false);
		tm_job *j = tt_job(16, 2, 1, 2, 1, true, false);
		tm_policy *pol = policy(TM_METHOD_GREEDY);
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_eval a, b;
		int *cut = xmalloc(sizeof(int) * 16);
		int *full = xmalloc(sizeof(int) * 16);
		bool stopped = false;
		char why[256];
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		assert_int_equal(tm_solve_greedy(pb, 1, cut, &stopped), 0);
		assert_true(stopped);
		assert_true(tm_constraints_ok(pb, cut, tm_eval_flat(pb, cut, 0, &a),
		                              why, sizeof why));
		assert_int_equal(tm_solve_greedy(pb, 0, full, &stopped), 0);
		assert_false(stopped);
		tm_eval_flat(pb, full, 0, &b);
		assert_true(b.iteration_ms <= a.iteration_ms + 1e-9);
		free(cut);
		free(full);
		tt_free(pb, pol, j, p, c);
	}
}

/* Host h in group names[h mod ng], NICs of 100 GB/s, 50 GB/s inside a
 * group and 12.5 across. */
static void interleaved_groups(tm_cluster *c, int ng)
{
	static const char *const names[] = { "a", "b", "c" };
	c->same_group_gb_per_s = 50;
	c->cross_group_gb_per_s = 12.5;
	for (int h = 0; h < c->nnodes; h++) {
		c->nodes[h].net_gb_per_s = 100;
		c->nodes[h].net_group = xstrdup(names[h % ng]);
	}
}

/* Solves with the given policy and asserts the time equals the lower
 * bound; the problem (the caller frees it) and solution come back. */
static tm_problem *solve_at_bound(tm_cluster *c, tm_profile *p, tm_job *j,
                                  tm_policy *pol, tm_solution *s)
{
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	double lb;
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_int_equal(tm_solve(pb, s, &e), 0);
	lb = tm_time_lower_bound(pb);
	assert_true(fabs(s->ev.iteration_ms - lb) <= 1e-9 * (1 + lb));
	return pb;
}

/* Replicas inside network groups: with equal derates, hosts in groups of
 * four that the greedy order interleaves (heat decides it, and host h is in
 * group h mod ng), and a pipeline of four node ranks per replica that hops
 * between hosts, the greedy placement keeps every replica inside one group,
 * so every hop runs at the same-group bandwidth and the time equals the
 * lower bound exactly (which prices every hop between hosts at the best
 * bandwidth any two hosts have). Ranked by work alone, a replica's stages
 * would land in different groups. */
static void test_replica_groups(void **state)
{
	(void)state;
	tt_seq.s = 0x6e0d5ull;
	for (int it = 0; it < 40; it++) {
		int ng = tt_int(2, 3), nh = 4 * ng;
		tm_cluster *c = tt_cluster(nh, 1, 3);
		tm_profile *p = tt_profile(c, true);
		tm_job *j = tt_job(nh, 1, 1, 4, 1, tt_int(0, 1), false);
		tm_policy *pol = policy(TM_METHOD_GREEDY);
		tm_problem *pb;
		tm_solution s;
		interleaved_groups(c, ng);
		for (int st = 0; st < 4; st++)
			j->stages[st].act_mib = 64;
		pb = solve_at_bound(c, p, j, pol, &s);
		for (int r = 0; r < nh; r++)
			for (int q = 0; q < nh; q++)
				if (pb->rank_rep[r] == pb->rank_rep[q])
					assert_int_equal(pb->grp[s.pl->host[r]],
					                 pb->grp[s.pl->host[q]]);
		tm_solution_clear(&s);
		tt_free(pb, pol, j, p, c);
	}
	/* the same with experts: tp1 pp2 dp4 ep2, two groups of four hosts;
	 * an expert-parallel group (two replicas, four node ranks) fits one
	 * network group, its all-to-alls and hops at the same-group figure */
	for (int it = 0; it < 20; it++) {
		tm_cluster *c = tt_cluster(8, 1, 3);
		tm_profile *p = tt_profile(c, true);
		tm_job *j = tt_job(8, 1, 1, 2, 1, true, false);
		tm_policy *pol = policy(TM_METHOD_GREEDY);
		tm_problem *pb;
		tm_solution s;
		interleaved_groups(c, 2);
		j->size[TM_EP] = 2;
		for (int st = 0; st < 2; st++) {
			j->stages[st].act_mib = 64;
			j->stages[st].a2a_mib = 128;
		}
		pb = solve_at_bound(c, p, j, pol, &s);
		tm_solution_clear(&s);
		tt_free(pb, pol, j, p, c);
	}
}

/* The peak after the time: a node rank on a hot host moves to the spare
 * host at the same time, and whatever tm_cool_peak returns, the placement
 * it leaves is valid and no worse by the policy's order. */
static void test_cool_peak(void **state)
{
	(void)state;
	tt_seq.s = 0xc001ull;
	for (int it = 0; it < 200; it++) {
		int nh = tt_int(2, 6), ng = 2, nodes = tt_int(1, nh - 1);
		tm_cluster *c = tt_cluster(nh, ng, 3);
		tm_profile *p = tt_profile(c, it == 0 || it % 2);
		tm_job *j = tt_job(nodes * ng, ng, 1, nodes * ng > 1 ? 2 : 1, 1,
		                   true, false);
		tm_policy *pol = policy(TM_METHOD_ILP);
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_eval a, b;
		int *flat = xmalloc(sizeof(int) * (size_t)(nodes * ng));
		int *was = xmalloc(sizeof(int) * (size_t)(nodes * ng));
		bool stopped = false, moved;
		char why[256];
		/* the first host hot in the directed cases */
		if (it == 0)
			for (int g = 0; g < ng; g++)
				p->gpus[g].ambient_c = 60;
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		tm_identity(pb, flat);
		memcpy(was, flat, sizeof(int) * (size_t)(nodes * ng));
		tm_eval_flat(pb, flat, 0, &a);
		moved = tm_cool_peak(pb, 0, flat, &stopped);
		assert_false(stopped);
		tm_eval_flat(pb, flat, 0, &b);
		if (moved) {
			assert_true(tm_eval_better(pb, &b, &a));
			assert_true(tm_constraints_ok(pb, flat, b.iteration_ms, why,
			                              sizeof why));
		} else {
			assert_memory_equal(flat, was, sizeof(int) *
			                    (size_t)(nodes * ng));
		}
		if (it == 0) {
			/* host 0 (GPUs 0 and 1) is left for a spare */
			assert_true(moved);
			for (int r = 0; r < nodes * ng; r++)
				assert_true(pb->gpu_host[flat[r]] != 0);
			assert_true(b.iteration_ms <= tm_crit_bound(pb,
			            TM_CRIT_TIME, a.iteration_ms));
			assert_true(b.peak_temp_c < a.peak_temp_c - 1);
		}
		free(flat);
		free(was);
		tt_free(pb, pol, j, p, c);
	}
}

/* Moves after the rest: from a random valid placement, tm_fewer_moves
 * either leaves it as it is or returns one that moves fewer ranks, no
 * slower, no hotter, with no more wear and every constraint holding, and
 * never below the moves bound at those caps. On identical hosts with
 * stages of equal work, node ranks shuffled between hosts and ranks
 * inside them all go back home: no move is left. */
static void test_fewer_moves(void **state)
{
	int fewer = 0;
	(void)state;
	tt_seq.s = 0xfe3e5ull;
	for (int it = 0; it < 300; it++) {
		bool home = it % 3 == 0;
		int nh = tt_int(2, 8), ng = tt_int(1, 2), nodes = tt_int(1, nh);
		int world = nodes * ng, pp = world % 2 ? 1 : 2;
		tm_cluster *c = tt_cluster(nh, ng, 3);
		tm_profile *p = tt_profile(c, home);
		tm_job *j = tt_job(world, ng, 1, pp, 1, tt_int(0, 1), false);
		tm_policy *pol = policy(TM_METHOD_ILP);
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		tm_eval a, b;
		int *flat = xmalloc(sizeof(int) * (size_t)world);
		int *was = xmalloc(sizeof(int) * (size_t)world);
		int *hosts = xmalloc(sizeof(int) * (size_t)nh);
		bool stopped = false, moved;
		char why[256];

		for (int st = 0; st < pp; st++) {
			if (home || tt_int(0, 1)) {
				j->stages[st].fwd_ms = j->stages[0].fwd_ms;
				j->stages[st].bwd_ms = j->stages[0].bwd_ms;
			}
			if (home)
				j->stages[st].act_mib = 0;
			j->stages[st].grad_mib = home || tt_int(0, 2) ? 0 : 500;
		}
		for (int g = 0; home && g < p->ngpus; g++) {
			p->gpus[g].ambient_c = 30;
			p->gpus[g].r_c_per_w = 0.04;
			p->gpus[g].power_idle_w = 70;
			p->gpus[g].power_load_w = 500;
		}
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		/* node ranks on shuffled hosts, each host's GPUs reversed */
		for (int h = 0; h < nh; h++)
			hosts[h] = h;
		for (int h = nh - 1; h > 0; h--) {
			int x = tt_int(0, h), t = hosts[h];
			hosts[h] = hosts[x];
			hosts[x] = t;
		}
		for (int r = 0; r < world; r++)
			flat[r] = pb->host_first[hosts[r / ng]] + ng - 1 - r % ng;
		tm_eval_flat(pb, flat, 0, &a);
		if (!tm_constraints_ok(pb, flat, a.iteration_ms, why, sizeof why)) {
			free(flat);
			free(was);
			free(hosts);
			tt_free(pb, pol, j, p, c);
			continue;
		}
		memcpy(was, flat, sizeof(int) * (size_t)world);
		moved = tm_fewer_moves(pb, 0, flat, &stopped);
		assert_false(stopped);
		tm_eval_flat(pb, flat, 0, &b);
		if (moved) {
			fewer++;
			assert_true(b.moves < a.moves);
			assert_true(b.cost_ms <= a.cost_ms + 1e-9 * (1 + a.cost_ms));
			assert_true(b.peak_ref_c <= a.peak_ref_c + 1e-9);
			assert_true(b.wear_ref <= a.wear_ref * (1 + 1e-12) + 1e-9);
			assert_true(tm_constraints_ok(pb, flat, b.iteration_ms, why,
			                              sizeof why));
			assert_true(tm_moves_lower_bound(pb, a.cost_ms,
			                                 a.peak_ref_c) <= b.moves);
		} else {
			assert_memory_equal(flat, was, sizeof(int) * (size_t)world);
		}
		if (home)
			assert_int_equal(b.moves, 0);
		free(flat);
		free(was);
		free(hosts);
		tt_free(pb, pol, j, p, c);
	}
	print_message("fewer moves: %d of 300 placements moved less\n", fewer);
	assert_true(fewer > 100);
}

/* A spare host without the GPU positions the hot node rank uses is not a
 * place to move it to (without the check, the sanitizer build sees the
 * read past the cluster's GPUs). */
static void test_cool_peak_positions(void **state)
{
	tm_cluster *c = tt_cluster(2, 4, 3);
	tm_profile *p;
	tm_job *j = tt_job(2, 2, 1, 2, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_ILP);
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	int flat[2];
	bool stopped = false;
	(void)state;
	c->nodes[1].ngpus = 2;   /* GPUs 0 and 1 of the 4 its links describe */
	p = tt_profile(c, true);
	for (int g = 0; g < 4; g++)
		p->gpus[g].ambient_c = 60;   /* host 0 hot, host 1 cool */
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_int_equal(pb->ngpu, 6);
	flat[0] = 2;             /* host 0, positions 2 and 3 */
	flat[1] = 3;
	tm_cool_peak(pb, 0, flat, &stopped);
	for (int r = 0; r < 2; r++)
		assert_true(flat[r] >= 0 && flat[r] < 4);
	tt_free(pb, pol, j, p, c);
}

static void test_infeasible_tp_nvlink(void **state)
{
	tm_cluster *c = tt_cluster(1, 4, 2);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(4, 4, 2, 2, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_ILP);
	tm_problem *pb = NULL;
	tm_solution s;
	tm_error e = { 0, "" };
	tm_node *n = &c->nodes[0];
	(void)state;

	for (int i = 0; i < 16; i++)
		if (n->link[i] != TM_LINK_X) {
			n->link[i] = TM_LINK_SYS;
			n->nv[i] = 0;
		}
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_int_equal(tm_solve(pb, &s, &e), TM_EINFEASIBLE);
	assert_string_equal(e.msg, "infeasible: tp_nvlink: tensor-parallel group "
	                    "(ranks 0,1) needs 2 GPUs joined by NVLink; host h0 "
	                    "has no such set; missing links: GPU0-GPU1 SYS, "
	                    "GPU0-GPU2 SYS, GPU0-GPU3 SYS, GPU1-GPU2 SYS, "
	                    "GPU1-GPU3 SYS, GPU2-GPU3 SYS");
	tm_solution_clear(&s);
	tt_free(pb, pol, j, p, c);
}

static void test_too_few_hosts(void **state)
{
	tm_cluster *c = tt_cluster(1, 4, 0);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(8, 4, 1, 2, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_ILP);
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	(void)state;
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e),
	                 TM_EINFEASIBLE);
	assert_string_equal(e.msg, "infeasible: the job needs 2 node(s) of 4 GPUs "
	                    "(8 ranks); cluster.json has 1 host(s) with at least "
	                    "4 GPUs");
	tt_free(NULL, pol, j, p, c);
}

/* A stage that needs more memory than some GPUs have avoids them. */
static void test_memory_fit(void **state)
{
	tm_cluster *c = tt_cluster(1, 4, 3);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(2, 2, 1, 2, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_ILP);
	tm_problem *pb = NULL;
	tm_solution s;
	tm_error e = { 0, "" };
	(void)state;
	for (int g = 0; g < 4; g++)
		c->nodes[0].gpus[g].memory_gib = g == 2 ? 80 : 40;
	j->stages[1].mem_gib = 60;
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_int_equal(tm_solve(pb, &s, &e), 0);
	assert_int_equal(s.pl->gpu[1], 2);
	tm_solution_clear(&s);
	j->stages[0].mem_gib = 60;  /* two ranks, one GPU big enough */
	tm_problem_free(pb);
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	assert_int_equal(tm_solve(pb, &s, &e), TM_EINFEASIBLE);
	tm_solution_clear(&s);
	tt_free(pb, pol, j, p, c);
}

/* Without network figures, transfers between hosts use a stated guess. */
static void test_network_note(void **state)
{
	tm_cluster *c = tt_cluster(2, 2, 0);
	tm_profile *p = tt_profile(c, true);
	tm_job *j = tt_job(4, 2, 1, 2, 1, true, true);
	tm_policy *pol = policy(TM_METHOD_GREEDY);
	tm_problem *pb = NULL;
	tm_error e = { 0, "" };
	(void)state;
	c->nodes[0].net_gb_per_s = c->nodes[1].net_gb_per_s = NAN;
	assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
	/* the other note: the profile names no UUIDs */
	assert_int_equal(pb->nnotes, 2);
	assert_string_equal(pb->notes[1], "the cluster gives no network "
	                    "bandwidth; transfers between hosts assume 25 GB/s");
	assert_true(fabs(tm_bw(pb, 0, 2) - 25) < 1e-12);
	tt_free(pb, pol, j, p, c);
}

/* The network without a host × host matrix: every pair's bandwidth, the
 * least and most over pairs, and the note on guessed figures, against the
 * pairwise definition, over random NICs (unknown ones too), groups
 * (hosts without one too) and group figures, ties included. */
static double net_brute(const tm_cluster *c, int a, int b, bool *guess)
{
	const tm_node *x = &c->nodes[a], *y = &c->nodes[b];
	double bw = INFINITY, grp;
	bool same = x->net_group && y->net_group &&
	            !strcmp(x->net_group, y->net_group);
	if (isfinite(x->net_gb_per_s))
		bw = fmin(bw, x->net_gb_per_s);
	if (isfinite(y->net_gb_per_s))
		bw = fmin(bw, y->net_gb_per_s);
	grp = same || (!x->net_group && !y->net_group) ?
	      c->same_group_gb_per_s : c->cross_group_gb_per_s;
	if (isfinite(grp))
		bw = fmin(bw, grp);
	if (!isfinite(bw)) {
		*guess = true;
		return 25;
	}
	return bw;
}

static void test_network_oracle(void **state)
{
	static const char *const groups[] = { NULL, "a", "b", "c" };
	static const double nics[] = { NAN, INFINITY, 12.5, 25, 50, 50, 100 };
	static const double figs[] = { NAN, INFINITY, 10, 30, 200 };
	(void)state;
	tt_seq.s = 0x6e37b0c1ull;
	for (int iter = 0; iter < 3000; iter++) {
		int n = tt_int(2, 9), ng = tt_int(1, 4);
		tm_cluster *c = tt_cluster(n, 1, 0);
		tm_profile *p = tt_profile(c, true);
		tm_job *j = tt_job(n, 1, 1, 1, 1, true, true);
		tm_policy *pol = policy(TM_METHOD_GREEDY);
		tm_problem *pb = NULL;
		tm_error e = { 0, "" };
		double lo = INFINITY, hi = -INFINITY, l2, h2;
		bool guess = false, noted = false;
		c->same_group_gb_per_s = figs[tt_int(0, 4)];
		c->cross_group_gb_per_s = figs[tt_int(0, 4)];
		for (int h = 0; h < n; h++) {
			const char *g = groups[tt_int(0, ng - 1)];
			c->nodes[h].net_group = g ? xstrdup(g) : NULL;
			c->nodes[h].net_gb_per_s = nics[tt_int(0, 6)];
		}
		assert_int_equal(tm_problem_new(c, p, j, pol, false, &pb, &e), 0);
		for (int a = 0; a < n; a++)
			for (int b = 0; b < n; b++) {
				double want;
				if (a == b)
					continue;
				want = net_brute(c, a, b, &guess);
				assert_true(tm_net_bw(pb, a, b) == want);
				assert_true(tm_bw(pb, a, b) == want);
				lo = fmin(lo, want);
				hi = fmax(hi, want);
			}
		assert_true(tm_net_range(pb, &l2, &h2));
		if (l2 != lo || h2 != hi)
			fail_msg("iteration %d: range [%g, %g], pairs give [%g, %g]",
			         iter, l2, h2, lo, hi);
		for (int k = 0; k < pb->nnotes; k++)
			noted = noted || strstr(pb->notes[k], "no network bandwidth");
		assert_int_equal(noted, guess);
		tt_free(pb, pol, j, p, c);
	}
}

static void test_pci_normalise(void **state)
{
	static const char *const cases[][2] = {
		{ "00000000:00:06.0", "0000:00:06.0" },
		{ "0000:00:06.0", "0000:00:06.0" },
		{ "00:06.0", "0000:00:06.0" },
		{ "0000:3B:00.0", "0000:3b:00.0" },
		{ "00000001:AF:1F.7", "0001:af:1f.7" },
	};
	static const char *const bad[] = { "", "06.0", "0000:00:06", "x:y:z.0",
		"0000:00:20.0", "0000:00:06.8", "0000:100:06.0", "-1:00:06.0" };
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = tm_normalise_pci(cases[i][0]);
		assert_non_null(s);
		assert_string_equal(s, cases[i][1]);
		free(s);
	}
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_null(tm_normalise_pci(bad[i]));
}

/* The built-in policy is byte for byte policies/thermal.json. */
static void test_default_policy_is_file(void **state)
{
	extern const char tm_default_policy_text[];
	char *text = NULL;
	size_t len;
	tm_error e = { 0, "" };
	(void)state;
	assert_int_equal(tm_read_file("policies/thermal.json", 1 << 20, &text,
	                              &len, &e), 0);
	assert_string_equal(text, tm_default_policy_text);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_megatron_coords),
		cmocka_unit_test(test_hand_computed),
		cmocka_unit_test(test_allreduce_hand),
		cmocka_unit_test(test_allreduce_ring_ep),
		cmocka_unit_test(test_alltoall_hand),
		cmocka_unit_test(test_sorted_pairing),
		cmocka_unit_test(test_permutation_invariance),
		cmocka_unit_test(test_greedy_not_worse),
		cmocka_unit_test(test_greedy_deadline),
		cmocka_unit_test(test_replica_groups),
		cmocka_unit_test(test_cool_peak),
		cmocka_unit_test(test_fewer_moves),
		cmocka_unit_test(test_cool_peak_positions),
		cmocka_unit_test(test_infeasible_tp_nvlink),
		cmocka_unit_test(test_too_few_hosts),
		cmocka_unit_test(test_memory_fit),
		cmocka_unit_test(test_network_note),
		cmocka_unit_test(test_network_oracle),
		cmocka_unit_test(test_pci_normalise),
		cmocka_unit_test(test_default_policy_is_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
