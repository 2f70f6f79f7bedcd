/*
 * greedy.c — the heuristics behind tm_solve: greedy (node ranks by
 * decreasing work onto hosts whose GPUs are faster and cooler, each node
 * rank's heaviest ranks on the best free GPUs, then pairwise swaps inside
 * hosts and replica balancing), the coolest-first rule of thumb that uses
 * no model, and the pieces other solvers reuse (tm_greedy_node,
 * tm_swap_descent). The greedy placement is also the integer program's
 * warm start. Which method runs, and what is reported, is solve.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "solve/solve.h"

/* ---- greedy -------------------------------------------------------------- */

/* Indices by decreasing key, ties by decreasing key2 (when not NULL),
 * then by index: the context of cmp_key_desc. */
typedef struct key_order {
	const double *key;
	const double *key2;
} key_order;

static int cmp_key_desc(const void *a, const void *b, void *ctx)
{
	const key_order *o = ctx;
	int i = *(const int *)a, j = *(const int *)b;
	double x = o->key[i], y = o->key[j];
	if (x != y)
		return x < y ? 1 : -1;
	if (o->key2 && o->key2[i] != o->key2[j])
		return o->key2[i] < o->key2[j] ? 1 : -1;
	return i - j;
}

/* Sorts n indices at idx by decreasing key, then key2 (may be NULL). */
static void sort_desc(int *idx, int n, const double *key, const double *key2)
{
	key_order o = { key, key2 };
	tm_sort(idx, (size_t)n, sizeof(int), cmp_key_desc, &o);
}

/* Better GPUs first: faster, then cooler under full load; ctx is the
 * problem. */
static int cmp_gpu(const void *a, const void *b, void *ctx)
{
	int g = *(const int *)a, h = *(const int *)b;
	const tm_problem *pb = ctx;
	double x = tm_gpu_temp(pb, g, 1), y = tm_gpu_temp(pb, h, 1);
	if (pb->derate[g] != pb->derate[h])
		return pb->derate[g] < pb->derate[h] ? -1 : 1;
	if (x != y)
		return x < y ? -1 : 1;
	return g - h;
}

/* Places node n on host h: tensor-parallel groups (or single ranks) in
 * decreasing work, each on the best free GPUs that satisfy tp_nvlink. */
bool tm_greedy_node(const tm_problem *pb, int n, int h, int *flat)
{
	const tm_node *node = &pb->c->nodes[h];
	int first = pb->host_first[h], ng = node->ngpus;
	int tp = pb->pol->tp_nvlink ? pb->job->size[TM_TP] : 1;
	int *gpus = xmalloc(sizeof(int) * (size_t)ng);
	int *slots = xmalloc(sizeof(int) * (size_t)pb->nproc);
	double *key = xmalloc(sizeof(double) * (size_t)pb->nranks);
	unsigned char *taken = xcalloc((size_t)ng, 1), *done;
	bool ok = true;

	done = xcalloc((size_t)pb->nproc, 1);
	for (int i = 0; i < ng; i++)
		gpus[i] = first + i;
	tm_sort(gpus, (size_t)ng, sizeof(int), cmp_gpu, (void *)pb);
	for (int i = 0; i < pb->nproc; i++) {
		int r = n * pb->nproc + i;
		slots[i] = r;
		key[r] = pb->work[pb->rank_stage[r]];
	}
	sort_desc(slots, pb->nproc, key, NULL);
	for (int i = 0; i < pb->nproc && ok; i++) {
		int r = slots[i], grp[64], ngrp = 0, chosen[64];
		if (done[r - n * pb->nproc])
			continue;
		/* the rank's tensor-parallel group, when it must be on NVLink */
		if (tp > 1 && tp <= 64) {
			int base = (pb->rank_rep[r] * pb->npp + pb->rank_stage[r]) *
			           pb->nmember + pb->rank_member[r] / tp * tp;
			for (int k = 0; k < tp; k++)
				grp[ngrp++] = pb->inst_rank[base + k];
		} else {
			grp[ngrp++] = r;
		}
		ok = false;
		for (int s = 0; s < ng && !ok; s++) {
			int nc = 0;
			for (int k = s; k < ng && nc < ngrp; k++) {
				int g = gpus[k], fit = !taken[g - first] &&
				        tm_fits(pb, grp[nc], g);
				for (int q = 0; q < nc && fit && tp > 1; q++)
					fit = tm_nvlink(pb, chosen[q], g);
				if (fit)
					chosen[nc++] = g;
			}
			if (nc == ngrp)
				ok = true;
		}
		for (int k = 0; ok && k < ngrp; k++) {
			int rr = grp[k];
			if (rr / pb->nproc != n) {
				ok = false;
				break;
			}
			flat[rr] = chosen[k];
			taken[chosen[k] - first] = 1;
			done[rr - n * pb->nproc] = 1;
		}
	}
	free(gpus);
	free(slots);
	free(key);
	free(taken);
	free(done);
	return ok;
}

void tm_swap_descent(const tm_problem *pb, int *flat, int passes,
                     bool (*keep)(void *ud, const int *flat), void *ud)
{
	int *owner = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	bool improved = true;

	for (int pass = 0; improved && pass < passes; pass++) {
		improved = false;
		for (int g = 0; g < pb->ngpu; g++)
			owner[g] = -1;
		for (int r = 0; r < pb->nranks; r++)
			owner[flat[r]] = r;
		for (int r = 0; r < pb->nranks; r++) {
			int h = pb->gpu_host[flat[r]], first = pb->host_first[h];
			for (int g = first; g < first + pb->c->nodes[h].ngpus; g++) {
				int o = owner[g], old = flat[r];
				if (g == old || (o >= 0 && o < r))
					continue;
				flat[r] = g;
				if (o >= 0)
					flat[o] = old;
				if (keep(ud, flat)) {
					owner[g] = r;
					owner[old] = o;
					improved = true;
					continue;
				}
				flat[r] = old;
				if (o >= 0)
					flat[o] = g;
			}
		}
	}
	free(owner);
}

/* local_search keeps a change better by the lexicographic objective and
 * feasible */
typedef struct lex_state {
	const tm_problem *pb;
	tm_eval cur;
} lex_state;

static bool keep_lex(void *ud, const int *flat)
{
	lex_state *L = ud;
	tm_eval ev;
	char why[256];
	tm_eval_flat(L->pb, flat, 0, &ev);
	if (!tm_eval_better(L->pb, &ev, &L->cur) ||
	    !tm_constraints_ok(L->pb, flat, ev.iteration_ms, why, sizeof why))
		return false;
	L->cur = ev;
	return true;
}

/* Pairwise swaps (and moves to idle GPUs) inside each host while they
 * improve the lexicographic objective. */
static void local_search(const tm_problem *pb, int *flat)
{
	lex_state L;
	L.pb = pb;
	tm_eval_flat(pb, flat, 0, &L.cur);
	tm_swap_descent(pb, flat, 50, keep_lex, &L);
}

/* The rule of thumb without a model: on the hosts torchrun would use, the
 * ranks of each node in decreasing work on that host's GPUs in increasing
 * full-load temperature. No derates, links or swaps. */
void tm_solve_coolest(const tm_problem *pb, int *flat)
{
	int *slots = xmalloc(sizeof(int) * (size_t)pb->nproc);
	double *key = xmalloc(sizeof(double) * (size_t)pb->nranks);
	double *cool = xmalloc(sizeof(double) * (size_t)pb->ngpu);

	tm_identity(pb, flat);
	for (int g = 0; g < pb->ngpu; g++)
		cool[g] = -tm_gpu_temp(pb, g, 1);
	for (int r = 0; r < pb->nranks; r++)
		key[r] = pb->work[pb->rank_stage[r]];
	for (int n = 0; n < pb->nnodes; n++) {
		int h = pb->gpu_host[flat[n * pb->nproc]];
		int first = pb->host_first[h], ng = pb->c->nodes[h].ngpus;
		int *gpus = xmalloc(sizeof(int) * (size_t)ng);
		for (int i = 0; i < ng; i++)
			gpus[i] = first + i;
		sort_desc(gpus, ng, cool, NULL);
		for (int i = 0; i < pb->nproc; i++)
			slots[i] = n * pb->nproc + i;
		sort_desc(slots, pb->nproc, key, NULL);
		for (int i = 0; i < pb->nproc; i++)
			flat[slots[i]] = gpus[i];
		free(gpus);
	}
	free(slots);
	free(key);
	free(cool);
}

/* ---- replica balancing ---------------------------------------------------
 * Two node ranks whose local ranks have the same pipeline rank and member
 * position, place by place, are interchangeable: each can take the other's
 * GPUs as they are, and every constraint still holds. Exchanging them
 * moves work between data-parallel replicas without changing which work
 * any GPU does, so temperatures at a fixed reference time do not change;
 * only the replicas' times do. Starting from the slowest replica, take the
 * exchange that shortens it most, while one does. */

static bool same_kind(const tm_problem *pb, int n1, int n2)
{
	for (int i = 0; i < pb->nproc; i++) {
		int a = n1 * pb->nproc + i, b = n2 * pb->nproc + i;
		if (pb->rank_stage[a] != pb->rank_stage[b] ||
		    pb->rank_member[a] != pb->rank_member[b])
			return false;
	}
	return true;
}

static void swap_nodes(const tm_problem *pb, int *flat, int n1, int n2)
{
	for (int i = 0; i < pb->nproc; i++) {
		int a = n1 * pb->nproc + i, b = n2 * pb->nproc + i, t = flat[a];
		flat[a] = flat[b];
		flat[b] = t;
	}
}

/* The replicas whose times depend on nodes n1 and n2, into reps
 * (distinct; room for 2·nproc·nep): those with ranks on them and, with an
 * expert-parallel all-to-all, their groups' other replicas, which wait
 * for them. Returns their number. */
static int node_reps(const tm_problem *pb, int n1, int n2, int *reps)
{
	int k = 0;
	for (int j = 0; j < 2; j++) {
		int n = j ? n2 : n1;
		for (int i = 0; i < pb->nproc; i++) {
			int d = pb->rank_rep[n * pb->nproc + i];
			for (int e = 0; e < pb->nep; e++) {
				int x = pb->nep > 1 ? pb->ep_reps[pb->ep_group[d] *
				        pb->nep + e] : d, seen = 0;
				for (int q = 0; q < k && !seen; q++)
					seen = reps[q] == x;
				if (!seen)
					reps[k++] = x;
			}
		}
	}
	return k;
}

/* Replica d's time (tm_rep_ms) after its instance of stage s moves to
 * the GPUs of node rank n2, when every node rank is one stage instance
 * on its own host: the other stages as they are (from the cache R: their
 * times, sum and two largest), the stage at n2's slowest derate, and the
 * hops that touch s between n2's host and their other ends. The same
 * terms as tm_rep_ms added in another order; NAN when a hop of s stays
 * on one host (the cache cannot tell). */
typedef struct repcut {
	double *inst, *hop;   /* per stage, per hop, of the replica */
	double sum, comm;     /* their sums */
	double top[2];        /* the two largest stage times */
	int top_s;            /* the stage of top[0] */
	int d;                /* the replica */
} repcut;

static void repcut_fill(const tm_problem *pb, const int *flat, int d,
                        repcut *R)
{
	R->d = d;
	R->sum = R->comm = 0;
	R->top[0] = R->top[1] = -INFINITY;
	R->top_s = -1;
	for (int s = 0; s < pb->npp; s++) {
		double x = R->inst[s] = tm_inst_ms(pb, flat, d, s);
		R->sum += x;
		if (x > R->top[0]) {
			R->top[1] = R->top[0];
			R->top[0] = x;
			R->top_s = s;
		} else if (x > R->top[1]) {
			R->top[1] = x;
		}
	}
	for (int k = 0; k < pb->nhops; k++)
		R->comm += R->hop[k] = tm_hop_inst_ms(pb, flat, d, &pb->hops[k]);
}

static double repcut_time(const tm_problem *pb, const int *flat,
                          const repcut *R, int s, int n2, double dnew)
{
	double v = pb->job->vpp, m = pb->job->microbatches;
	double x = pb->work[s] * dnew, comm = R->comm;
	double mx = R->top_s == s ? R->top[1] : R->top[0];
	int g2 = flat[n2 * pb->nproc];
	for (int k = 0; k < pb->nhops; k++) {
		const tm_hop *h = &pb->hops[k];
		int o, g;
		if (h->from != s && h->to != s)
			continue;
		o = h->from == s ? h->to : h->from;
		g = flat[pb->inst_rank[(R->d * pb->npp + o) * pb->nmember]];
		if (o == s || pb->gpu_host[g] == pb->gpu_host[g2])
			return NAN;
		comm += tm_hop_ms(pb, h->act_mib, g2, g) - R->hop[k];
	}
	return (R->sum - R->inst[s] + x) / v + comm +
	       (m - 1.0 / v) * fmax(mx, x);
}

static bool balance_replicas(const tm_problem *pb, double deadline_ms,
                             int *flat)
{
	int nn = pb->nnodes, *kind = xmalloc(sizeof(int) * (size_t)nn);
	int *first = xmalloc(sizeof(int) * (size_t)nn), nfirst = 0;
	int *kfrom = xmalloc(sizeof(int) * (size_t)nn);
	int *kcount = xcalloc((size_t)nn, sizeof(int));
	int *members = xmalloc(sizeof(int) * (size_t)nn);
	int *reps = xmalloc(sizeof(int) * 2 * (size_t)pb->nproc *
	                    (size_t)pb->nep);
	double *td = xmalloc(sizeof(double) * (size_t)pb->nrep);
	double ar = tm_allreduce_ms(pb, flat);
	unsigned char *mine = xmalloc((size_t)nn);
	/* node ranks that are one stage instance each: an exchange is first
	 * timed from the cache (repcut_time, with nd the slowest derate of
	 * each node's GPUs), and evaluated only when it may shorten the
	 * slowest replica (not with an all-to-all: an instance's time then
	 * depends on its expert-parallel group, which the cache does not
	 * hold) */
	bool cut = pb->inst_in_node && pb->nproc == pb->nmember &&
	           !tm_has_a2a(pb);
	double *nd = cut ? xmalloc(sizeof(double) * (size_t)nn) : NULL;
	repcut R = { 0 };
	bool stopped = false;

	if (cut) {
		R.inst = xmalloc(sizeof(double) * (size_t)pb->npp);
		R.hop = xmalloc(sizeof(double) * (size_t)(pb->nhops + 1));
		for (int n = 0; n < nn; n++) {
			nd[n] = 0;
			for (int i = 0; i < pb->nproc; i++)
				nd[n] = fmax(nd[n], pb->derate[flat[n * pb->nproc + i]]);
		}
	}
	/* kinds: the first node rank of the same kind; compared only with
	 * the first of each kind found so far (a few: one per pipeline
	 * rank, typically) */
	for (int n = 0; n < nn; n++) {
		kind[n] = n;
		for (int i = 0; i < nfirst; i++)
			if (same_kind(pb, first[i], n)) {
				kind[n] = first[i];
				break;
			}
		if (kind[n] == n)
			first[nfirst++] = n;
	}
	/* the node ranks of each kind in increasing order: members[kfrom[n]
	 * .. kfrom[n] + kcount[n]) for the kind's first node rank n */
	for (int n = 0; n < nn; n++)
		kcount[kind[n]]++;
	for (int n = 0, at = 0; n < nn; n++)
		if (kind[n] == n) {
			kfrom[n] = at;
			at += kcount[n];
			kcount[n] = 0;
		}
	for (int n = 0; n < nn; n++)
		members[kfrom[kind[n]] + kcount[kind[n]]++] = n;
	for (int d = 0; d < pb->nrep; d++)
		td[d] = tm_rep_ms(pb, flat, d);
	/* each exchange shortens the slowest replica or a tie of it; the cap
	 * only bounds the work on huge inputs */
	for (int iter = 0; iter < 4096; iter++) {
		int worst = 0, b1 = -1, b2 = -1;
		double best, tmax;
		if (deadline_ms > 0 && tm_now_ms() > deadline_ms) {
			stopped = true;
			break;
		}
		for (int d = 1; d < pb->nrep; d++)
			if (td[d] > td[worst])
				worst = d;
		best = tmax = td[worst];
		memset(mine, 0, (size_t)nn);
		for (int i = 0; i < pb->npp * pb->nmember; i++)
			mine[pb->inst_rank[worst * pb->npp * pb->nmember + i] /
			     pb->nproc] = 1;
		if (cut)
			repcut_fill(pb, flat, worst, &R);
		for (int n1 = 0; n1 < nn; n1++) {
			if (!mine[n1])
				continue;
			const int *mem = &members[kfrom[kind[n1]]];
			for (int i2 = 0; i2 < kcount[kind[n1]]; i2++) {
				int k, n2 = mem[i2];
				double hi = 0;
				if (n2 == n1)
					continue;
				/* the slowest replica's time after the exchange,
				 * from the cache: no shorter than best (with room
				 * for rounding far below the tolerance), no need
				 * to evaluate it */
				if (cut && repcut_time(pb, flat, &R, pb->rank_stage[
				    n1 * pb->nproc], n2, nd[n2]) >= best -
				    0.5e-9 * (1 + tmax))
					continue;
				bool ar_ok = true;
				swap_nodes(pb, flat, n1, n2);
				k = node_reps(pb, n1, n2, reps);
				/* one replica no faster than best settles it */
				for (int q = 0; q < k; q++) {
					hi = fmax(hi, tm_rep_ms(pb, flat, reps[q]));
					if (hi >= best - 1e-9 * (1 + tmax))
						break;
				}
				/* the gradient all-reduce must not grow (it moves
				 * only when the network has groups) */
				if (ar > 0 && hi < best - 1e-9 * (1 + tmax))
					ar_ok = tm_allreduce_ms(pb, flat) <=
					        ar + 1e-9 * (1 + ar);
				swap_nodes(pb, flat, n1, n2);
				/* strictly better, by more than rounding */
				if (ar_ok && hi < best - 1e-9 * (1 + tmax)) {
					best = hi;
					b1 = n1;
					b2 = n2;
				}
			}
		}
		if (b1 < 0)
			break;
		swap_nodes(pb, flat, b1, b2);
		if (cut) {
			double t = nd[b1];
			nd[b1] = nd[b2];
			nd[b2] = t;
		}
		for (int q = 0, k = node_reps(pb, b1, b2, reps); q < k; q++)
			td[reps[q]] = tm_rep_ms(pb, flat, reps[q]);
		if (ar > 0)
			ar = tm_allreduce_ms(pb, flat);
	}
	free(kind);
	free(first);
	free(kfrom);
	free(kcount);
	free(members);
	free(reps);
	free(td);
	free(mine);
	free(nd);
	free(R.inst);
	free(R.hop);
	return stopped;
}

/* ---- the peak after the time ---------------------------------------------
 * With time first and peak_temp among the criteria, the placement's time
 * is held (within the policy's tolerance) while the hottest node rank's
 * host is given lighter work: exchange it with the node rank of a lighter
 * pipeline rank whose host, doing the heavier work, stays cooler than
 * the peak. Temperatures are taken at the starting placement's time; the
 * result is kept only when the model's own evaluation finds it better by
 * the policy's order and every constraint holds. */

/* Node rank n's hottest GPU if its ranks ran on node rank m's GPUs (place
 * by place) at an iteration of t ms. */
static double node_temp_on(const tm_problem *pb, const int *flat, int n, int m,
                           double t)
{
	double x = -INFINITY;
	for (int i = 0; i < pb->nproc; i++)
		x = fmax(x, tm_rank_temp(pb, n * pb->nproc + i,
		                         flat[m * pb->nproc + i], t));
	return x;
}

/* Node rank n's ranks moved to host h, each to the GPU at the position
 * it has now (positions_fit must hold). */
static void move_node(const tm_problem *pb, int *flat, int n, int h)
{
	for (int i = 0; i < pb->nproc; i++) {
		int *g = &flat[n * pb->nproc + i];
		*g = pb->host_first[h] + pb->gpu_pos[*g];
	}
}

/* Has host h a GPU at every position node rank n's GPUs have now? */
static bool positions_fit(const tm_problem *pb, const int *flat, int n, int h)
{
	for (int i = 0; i < pb->nproc; i++)
		if (pb->gpu_pos[flat[n * pb->nproc + i]] >= pb->c->nodes[h].ngpus)
			return false;
	return true;
}

/* Node rank n's hottest GPU on host h (as move_node puts it) at t ms. */
static double node_temp_at(const tm_problem *pb, const int *flat, int n,
                           int h, double t)
{
	double x = -INFINITY;
	for (int i = 0; i < pb->nproc; i++) {
		int r = n * pb->nproc + i;
		x = fmax(x, tm_rank_temp(pb, r, pb->host_first[h] +
		                         pb->gpu_pos[flat[r]], t));
	}
	return x;
}

/* Does moving node rank n to host h (or exchanging it with node rank m,
 * m ≥ 0) keep the time within tcap? The other replicas are unchanged,
 * and the all-reduce follows the slowest (model.md, 4). flat is as it
 * was on return. */
static bool time_holds(const tm_problem *pb, int *flat, int n, int m, int h,
                       double tcap, double ar, int *reps, int *keep)
{
	int k;
	bool ok = true;
	if (m >= 0) {
		swap_nodes(pb, flat, n, m);
		k = node_reps(pb, n, m, reps);
	} else {
		memcpy(keep, &flat[n * pb->nproc], sizeof(int) * (size_t)pb->nproc);
		move_node(pb, flat, n, h);
		k = node_reps(pb, n, n, reps);
	}
	for (int q = 0; q < k && ok; q++)
		ok = tm_rep_ms(pb, flat, reps[q]) + ar <= tcap;
	if (ok && ar > 0)
		ok = tm_allreduce_ms(pb, flat) <= ar + 1e-9 * (1 + ar);
	if (m >= 0)
		swap_nodes(pb, flat, n, m);
	else
		memcpy(&flat[n * pb->nproc], keep, sizeof(int) * (size_t)pb->nproc);
	return ok;
}

bool tm_cool_peak(const tm_problem *pb, double deadline_ms, int *flat,
                  bool *stopped)
{
	int nn = pb->nnodes, *before, *reps, *keep, *hfree, nf = 0;
	unsigned char *used;
	double *temp, t0, tcap, ar;
	tm_eval e0, e1;
	char why[256];
	bool peak = false, better;

	for (int k = 1; k < pb->ncrit; k++)
		peak = peak || pb->crit[k] == TM_CRIT_PEAK;
	if (pb->crit[0] != TM_CRIT_TIME || !peak || nn < 1)
		return false;
	t0 = tm_eval_flat(pb, flat, 0, &e0);
	tcap = tm_crit_bound(pb, TM_CRIT_TIME, t0);
	before = xmalloc(sizeof(int) * (size_t)pb->nranks);
	memcpy(before, flat, sizeof(int) * (size_t)pb->nranks);
	temp = xmalloc(sizeof(double) * (size_t)nn);
	reps = xmalloc(sizeof(int) * 2 * (size_t)pb->nproc * (size_t)pb->nep);
	keep = xmalloc(sizeof(int) * (size_t)pb->nproc);
	/* the usable hosts no node rank is on */
	used = xcalloc((size_t)pb->nhost, 1);
	hfree = xmalloc(sizeof(int) * (size_t)pb->nusable);
	for (int n = 0; n < nn; n++)
		used[pb->gpu_host[flat[n * pb->nproc]]] = 1;
	for (int u = 0; u < pb->nusable; u++)
		if (!used[pb->usable[u]])
			hfree[nf++] = pb->usable[u];
	for (int n = 0; n < nn; n++)
		temp[n] = node_temp_on(pb, flat, n, n, t0);
	ar = tm_allreduce_ms(pb, flat);
	for (int iter = 0; iter < nn; iter++) {
		int a = 0, b = -1;
		double best, na = 0, nb = 0, sa;
		if (deadline_ms > 0 && tm_now_ms() > deadline_ms) {
			*stopped = true;
			break;
		}
		for (int n = 1; n < nn; n++)
			if (temp[n] > temp[a])
				a = n;
		best = temp[a] - 0.05;   /* a tenth of the shown resolution */
		sa = pb->work[pb->rank_stage[a * pb->nproc]];
		/* a host nothing runs on, with the GPU positions a uses */
		for (int f = 0; f < nf; f++) {
			double x;
			if (!positions_fit(pb, flat, a, hfree[f]))
				continue;
			x = node_temp_at(pb, flat, a, hfree[f], t0);
			if (x < best && time_holds(pb, flat, a, -1, hfree[f], tcap,
			                           ar, reps, keep)) {
				best = x;
				b = -2 - f;
				na = x;
			}
		}
		/* the node rank of a lighter pipeline rank */
		for (int n = 0; n < nn; n++) {
			double x, y;
			if (pb->work[pb->rank_stage[n * pb->nproc]] >= sa)
				continue;
			/* a's work on n's GPUs, n's on a's */
			x = node_temp_on(pb, flat, a, n, t0);
			if (x >= best)
				continue;
			y = node_temp_on(pb, flat, n, a, t0);
			if (y >= best || !time_holds(pb, flat, a, n, -1, tcap, ar,
			                             reps, keep))
				continue;
			best = fmax(x, y);
			b = n;
			na = x;
			nb = y;
		}
		if (b == -1)
			break;
		if (b <= -2) {
			int f = -2 - b, h = pb->gpu_host[flat[a * pb->nproc]];
			move_node(pb, flat, a, hfree[f]);
			hfree[f] = h;
			temp[a] = na;
		} else {
			swap_nodes(pb, flat, a, b);
			temp[a] = na;
			temp[b] = nb;
		}
	}
	/* the model's word, and the constraints */
	tm_eval_flat(pb, flat, 0, &e1);
	better = memcmp(before, flat, sizeof(int) * (size_t)pb->nranks) &&
	         tm_eval_better(pb, &e1, &e0) &&
	         tm_constraints_ok(pb, flat, e1.iteration_ms, why, sizeof why);
	if (!better)
		memcpy(flat, before, sizeof(int) * (size_t)pb->nranks);
	free(before);
	free(temp);
	free(reps);
	free(keep);
	free(used);
	free(hfree);
	return better;
}

/* ---- fewer moves at the same time and heat -------------------------------
 * Moves come last in every policy, and past the direct program nothing
 * searches them: greedy fills hosts in its own order, which moves nearly
 * every rank off torchrun's GPU. Two node ranks whose ranks, place by
 * place, have the same member position, the same work (forward and
 * backward), memory and all-to-all load each leave the other's GPUs with
 * exactly the load they had, so every GPU's busy fraction, temperature and
 * wear at a fixed iteration time stay as they are. Exchanging them only
 * changes which replicas and rings run where. So each node rank off its
 * reference host takes that host from the node rank on it when the two
 * are alike in this way, every touched replica stays within the slowest
 * one, some replica keeps the slowest time, and no ring edge of the
 * all-reduce at the slowest edge's time is touched: the iteration time
 * is then unchanged, and with it every temperature. A node rank whose
 * reference host nothing runs on goes back to it when, besides, none of
 * its ranks runs hotter there. Then, on their reference host, ranks alike
 * in load take their reference GPUs among the GPUs such ranks have, under
 * the same rule for time. The whole result is kept
 * only when the model finds time, peak and wear no worse, fewer moves, and
 * every constraint holding. */

/* The slowest all-reduce ring edge that touches node rank n's ranks. */
static double ring_edges(const tm_problem *pb, const int *flat, int n)
{
	double x = 0;
	if (pb->nrep < 2)
		return 0;
	for (int i = 0; i < pb->nproc; i++) {
		int r = n * pb->nproc + i;
		double grad = tm_grad_mib(pb, pb->rank_stage[r]);
		if (!(grad > 0))
			continue;
		x = fmax(x, tm_ring_edge_ms(pb, grad, flat[tm_ring_rank(pb, r, -1)],
		                            flat[r]));
		x = fmax(x, tm_ring_edge_ms(pb, grad, flat[r],
		                            flat[tm_ring_rank(pb, r, 1)]));
	}
	return x;
}

/* What keeps the iteration time as it is while node ranks change places:
 * each replica's time (repms), the largest (rmax) and how many replicas
 * have it (at), the all-reduce (ar), whose slowest edges are left alone;
 * room for the touched replicas (reps, nt: 2·nproc·nep) and a node rank's
 * GPUs (keep, tmp: nproc and 2·nproc). */
typedef struct held {
	double *repms, rmax, ar, *nt;
	int at, *reps, *keep, *tmp;
} held;

/* Before node ranks n and m (n again for one) change: no ring edge they
 * touch is at the all-reduce's slowest. */
static bool ring_free(const tm_problem *pb, const int *flat, const held *H,
                      int n, int m)
{
	return H->ar <= 0 || (ring_edges(pb, flat, n) < H->ar &&
	                      ring_edges(pb, flat, m) < H->ar);
}

/* After: the k touched replicas (H->reps) stay within the slowest, some
 * replica still has its time, and no ring edge of n or m passes the
 * slowest; then the new times are kept. */
static bool time_held(const tm_problem *pb, const int *flat, held *H, int k,
                      int n, int m)
{
	int left = H->at;
	bool ok = true;
	for (int q = 0; q < k && ok; q++) {
		H->nt[q] = tm_rep_ms(pb, flat, H->reps[q]);
		ok = H->nt[q] <= H->rmax;
		left += (H->nt[q] == H->rmax) - (H->repms[H->reps[q]] == H->rmax);
	}
	ok = ok && left > 0 && (H->ar <= 0 ||
	                        (ring_edges(pb, flat, n) <= H->ar &&
	                         ring_edges(pb, flat, m) <= H->ar));
	if (!ok)
		return false;
	for (int q = 0; q < k; q++)
		H->repms[H->reps[q]] = H->nt[q];
	H->at = left;
	return true;
}

/* Exchanges node ranks n and m if that keeps the iteration time as it is;
 * returns whether it did. */
static bool exchange_alike(const tm_problem *pb, int *flat, int n, int m,
                           held *H)
{
	int k = node_reps(pb, n, m, H->reps);
	if (!ring_free(pb, flat, H, n, m))
		return false;
	swap_nodes(pb, flat, n, m);
	if (time_held(pb, flat, H, k, n, m))
		return true;
	swap_nodes(pb, flat, n, m);
	return false;
}

/* Moves node rank n to the free host h, each rank to the GPU at the
 * position it has now, if that keeps the iteration time as it is and no
 * rank runs hotter at that time t (so neither the peak nor the wear
 * rises); returns whether it did. */
static bool move_cooler(const tm_problem *pb, int *flat, int n, int h,
                        double t, held *H)
{
	int k = node_reps(pb, n, n, H->reps);
	bool ok = true;
	if (!positions_fit(pb, flat, n, h) || !ring_free(pb, flat, H, n, n))
		return false;
	memcpy(H->keep, &flat[n * pb->nproc], sizeof(int) * (size_t)pb->nproc);
	move_node(pb, flat, n, h);
	for (int i = 0; i < pb->nproc && ok; i++) {
		int r = n * pb->nproc + i;
		ok = tm_fits(pb, r, flat[r]) &&
		     tm_rank_temp(pb, r, flat[r], t) <=
		     tm_rank_temp(pb, r, H->keep[i], t);
	}
	if (ok && time_held(pb, flat, H, k, n, n))
		return true;
	memcpy(&flat[n * pb->nproc], H->keep, sizeof(int) * (size_t)pb->nproc);
	return false;
}

/* Do ranks a and b carry the same load: member position, work (forward
 * and backward), memory and all-to-all, and with experts the same
 * instance? */
static bool rank_alike(const tm_problem *pb, int a, int b)
{
	int s = pb->rank_stage[a], t = pb->rank_stage[b];
	double ma = pb->mem_need[s], mb = pb->mem_need[t];
	if (pb->nep > 1)
		return s == t && pb->rank_rep[a] == pb->rank_rep[b];
	return pb->rank_member[a] == pb->rank_member[b] &&
	       pb->fwd[s] == pb->fwd[t] && pb->bwd[s] == pb->bwd[t] &&
	       pb->work[s] == pb->work[t] && pb->a2a[s] == pb->a2a[t] &&
	       isnan(ma) == isnan(mb) && (isnan(ma) || ma == mb);
}

/* Node ranks alike place by place; with experts, which tie replicas,
 * only node ranks of the same kind. */
static bool same_load(const tm_problem *pb, int n1, int n2)
{
	if (pb->nep > 1)
		return same_kind(pb, n1, n2);
	for (int i = 0; i < pb->nproc; i++)
		if (!rank_alike(pb, n1 * pb->nproc + i, n2 * pb->nproc + i))
			return false;
	return true;
}

/* May ranks a and b of one node rank trade GPUs? Members of one stage
 * instance may (its time is its slowest GPU's, whichever member has it);
 * with one rank per instance, ranks alike in load may. */
static bool may_trade(const tm_problem *pb, int a, int b)
{
	if (pb->nmember > 1)
		return pb->rank_stage[a] == pb->rank_stage[b] &&
		       pb->rank_rep[a] == pb->rank_rep[b];
	return rank_alike(pb, a, b);
}

/* On its reference host, node rank n's ranks that may trade GPUs
 * (may_trade) take their reference GPUs among those they have together;
 * the others take the remaining ones in the order they had them. Every
 * GPU keeps the load it had. tmp: room for 2·nproc. */
static void alike_order(const tm_problem *pb, int *flat, int n, int *tmp)
{
	int k = pb->nproc, base = n * k, *f = &flat[base], *to = &tmp[k];
	const int *ref = &pb->ref_gpu[base];
	for (int i = 0; i < k; i++) {
		int nt = 0, next = 0;
		bool first = true;
		for (int j = 0; j < i && first; j++)  /* once per load */
			first = !may_trade(pb, base + j, base + i);
		if (!first)
			continue;
		/* each rank's reference GPU when ranks of its load have it */
		for (int j = i; j < k; j++) {
			to[j] = -1;
			if (!may_trade(pb, base + j, base + i))
				continue;
			for (int l = i; l < k; l++)
				if (may_trade(pb, base + l, base + i) &&
				    f[l] == ref[j])
					to[j] = ref[j];
		}
		/* their GPUs no rank takes back, in order */
		for (int j = i; j < k; j++) {
			bool taken = false;
			if (!may_trade(pb, base + j, base + i))
				continue;
			for (int l = i; l < k && !taken; l++)
				taken = may_trade(pb, base + l, base + i) &&
				        to[l] == f[j];
			if (!taken)
				tmp[nt++] = f[j];
		}
		for (int j = i; j < k; j++)
			if (may_trade(pb, base + j, base + i) && to[j] < 0)
				to[j] = tmp[next++];
		for (int j = i; j < k; j++)
			if (may_trade(pb, base + j, base + i))
				f[j] = to[j];
	}
}

/* alike_order for node rank n if that keeps the iteration time as it is;
 * returns whether it changed anything. */
static bool reorder_alike(const tm_problem *pb, int *flat, int n, held *H)
{
	int k = node_reps(pb, n, n, H->reps);
	if (!ring_free(pb, flat, H, n, n))
		return false;
	memcpy(H->keep, &flat[n * pb->nproc], sizeof(int) * (size_t)pb->nproc);
	alike_order(pb, flat, n, H->tmp);
	if (!memcmp(H->keep, &flat[n * pb->nproc],
	            sizeof(int) * (size_t)pb->nproc))
		return false;
	if (time_held(pb, flat, H, k, n, n))
		return true;
	memcpy(&flat[n * pb->nproc], H->keep, sizeof(int) * (size_t)pb->nproc);
	return false;
}

/* Keeps flat when it moves fewer ranks than e0 with time, peak and wear no
 * worse and every constraint holding; else restores before. */
static bool keep_fewer(const tm_problem *pb, int *flat, const int *before,
                       const tm_eval *e0)
{
	tm_eval e1;
	char why[256];
	double t = tm_eval_flat(pb, flat, 0, &e1);
	bool ok = e1.moves < e0->moves &&
	          e1.cost_ms <= e0->cost_ms + 1e-9 * (1 + e0->cost_ms) &&
	          e1.peak_ref_c <= e0->peak_ref_c + 1e-9 &&
	          e1.wear_ref <= e0->wear_ref * (1 + 1e-12) + 1e-9 &&
	          tm_constraints_ok(pb, flat, t, why, sizeof why);
	if (!ok)
		memcpy(flat, before, sizeof(int) * (size_t)pb->nranks);
	return ok;
}

bool tm_fewer_moves(const tm_problem *pb, double deadline_ms, int *flat,
                    bool *stopped)
{
	int nn = pb->nnodes, k = pb->nproc, *host_node, *before;
	held H;
	tm_eval e0;
	bool moves = false, kept = false;

	for (int c = 0; c < pb->ncrit; c++)
		moves = moves || pb->crit[c] == TM_CRIT_MOVES;
	if (!moves || nn < 1)
		return false;
	tm_eval_flat(pb, flat, 0, &e0);
	if (e0.moves == 0)
		return false;
	before = xmalloc(sizeof(int) * (size_t)pb->nranks);
	memcpy(before, flat, sizeof(int) * (size_t)pb->nranks);
	host_node = xmalloc(sizeof(int) * (size_t)pb->nhost);
	H.repms = xmalloc(sizeof(double) * (size_t)pb->nrep);
	H.reps = xmalloc(sizeof(int) * 2 * (size_t)k * (size_t)pb->nep);
	H.nt = xmalloc(sizeof(double) * 2 * (size_t)k * (size_t)pb->nep);
	H.keep = xmalloc(sizeof(int) * (size_t)k);
	H.tmp = xmalloc(sizeof(int) * 2 * (size_t)k);
	H.ar = tm_allreduce_ms(pb, flat);
	/* the hosts and then the GPUs inside them; failing that, the GPUs
	 * inside the hosts alone */
	for (int pass = 0; pass < 2 && !kept; pass++) {
		H.rmax = -INFINITY;
		H.at = 0;
		for (int d = 0; d < pb->nrep; d++)
			H.rmax = fmax(H.rmax, H.repms[d] = tm_rep_ms(pb, flat, d));
		for (int d = 0; d < pb->nrep; d++)
			H.at += H.repms[d] == H.rmax;
		for (int h = 0; h < pb->nhost; h++)
			host_node[h] = -1;
		for (int n = 0; n < nn; n++)
			host_node[pb->gpu_host[flat[n * k]]] = n;
		for (int n = 0; n < nn && !pass; n++) {
			int h = tm_ref_host(pb, n), at = pb->gpu_host[flat[n * k]], m;
			if ((n & 255) == 0 && deadline_ms > 0 &&
			    tm_now_ms() > deadline_ms) {
				*stopped = true;
				break;
			}
			if (h < 0 || h == at)
				continue;
			if ((m = host_node[h]) < 0) {
				/* a host nothing runs on: there if no rank is
				 * hotter */
				if (!move_cooler(pb, flat, n, h, e0.iteration_ms, &H))
					continue;
				host_node[h] = n;
				host_node[at] = -1;
				continue;
			}
			if (!same_load(pb, n, m) ||
			    !exchange_alike(pb, flat, n, m, &H))
				continue;
			host_node[h] = n;
			host_node[at] = m;
		}
		for (int n = 0; n < nn; n++)
			if (tm_ref_host(pb, n) == pb->gpu_host[flat[n * k]])
				reorder_alike(pb, flat, n, &H);
		kept = memcmp(before, flat, sizeof(int) * (size_t)pb->nranks) &&
		       keep_fewer(pb, flat, before, &e0);
	}
	free(before);
	free(host_node);
	free(H.repms);
	free(H.reps);
	free(H.nt);
	free(H.keep);
	free(H.tmp);
	return kept;
}

/* ---- network groups in the greedy host order ----------------------------
 * Between hosts of one net_group the network may be faster than across
 * groups. When it is, and node ranks talk over it (pipeline hops between
 * node ranks, or a gradient all-reduce between replicas), the greedy order
 * fills one group before the next, so that neighbours stay inside a group
 * where they can. */

/* Are hosts a and b in one net_group? Hosts without one are, as for the
 * network's bandwidths, in one group of their own. */
static bool same_group(const tm_problem *pb, int a, int b)
{
	return pb->grp[a] == pb->grp[b];
}

/* Do groups matter? They do when two usable hosts of different groups
 * have less bandwidth between them than they would have inside one group.
 * The pair to look at is the one whose slower NIC is fastest: the host
 * with the fastest NIC and the fastest of the other groups. */
static bool groups_differ(const tm_problem *pb)
{
	const tm_cluster *c = pb->c;
	int a = -1, b = -1;
	double inside = INFINITY;

	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u];
		if (a < 0 || pb->nic[h] > pb->nic[a])
			a = h;
	}
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u];
		if (!same_group(pb, a, h) && (b < 0 || pb->nic[h] > pb->nic[b]))
			b = h;
	}
	if (b < 0)
		return false;  /* one group */
	/* inside one group: the NICs and the same-group figure; when none is
	 * known the bandwidth is a guess, and groups cannot be told apart */
	inside = fmin(pb->nic[a], pb->nic[b]);
	if (isfinite(c->same_group_gb_per_s))
		inside = fmin(inside, c->same_group_gb_per_s);
	return isfinite(inside) && tm_net_bw(pb, a, b) < inside;
}

/* Does any transfer run between node ranks: a pipeline hop, or an edge of
 * a gradient all-reduce ring? */
static bool traffic_between_nodes(const tm_problem *pb)
{
	for (int d = 0; d < pb->nrep; d++)
		for (int k = 0; k < pb->nhops; k++)
			for (int q = 0; q < pb->nmember; q++) {
				const tm_hop *hp = &pb->hops[k];
				int a = pb->inst_rank[(d * pb->npp + hp->from) *
				                      pb->nmember + q];
				int b = pb->inst_rank[(d * pb->npp + hp->to) *
				                      pb->nmember + q];
				if (a / pb->nproc != b / pb->nproc)
					return true;
			}
	for (int s = 0; pb->nrep > 1 && s < pb->npp; s++)
		if (tm_grad_mib(pb, s) > 0)
			for (int i = 0; i < pb->nmember; i++)
				for (int d = 0; d < pb->nrep; d++) {
					int r = pb->inst_rank[(d * pb->npp + s) *
					                      pb->nmember + i];
					int t = tm_ring_rank(pb, r, 1);
					if (r / pb->nproc != t / pb->nproc)
						return true;
				}
	return false;
}

/* hosts[0..n), sorted best first, into out group by group: the groups in
 * the order of their best hosts, each group's hosts in their order (the
 * first host of a group not yet taken is the best of the next group: a
 * counting sort on the groups in order of first appearance). Writes each
 * group's size, in that order, to size (room for ngrp) and returns the
 * number of groups. */
static int by_group(const tm_problem *pb, const int *hosts, int n, int *out,
                    int *size)
{
	int *at = xmalloc(sizeof(int) * (size_t)pb->ngrp);
	int *order = xmalloc(sizeof(int) * (size_t)pb->ngrp);
	int *cnt = xcalloc((size_t)pb->ngrp, sizeof(int));
	int k = 0;
	for (int u = 0; u < n; u++) {
		int g = pb->grp[hosts[u]];
		if (cnt[g]++ == 0)
			order[k++] = g;
	}
	/* at[g]: where group g's next host goes */
	for (int i = 0, pos = 0; i < k; i++) {
		at[order[i]] = pos;
		pos += size[i] = cnt[order[i]];
	}
	for (int u = 0; u < n; u++)
		out[at[pb->grp[hosts[u]]]++] = hosts[u];
	free(at);
	free(order);
	free(cnt);
	return k;
}

/* Reorders the usable hosts (sorted best first) group by group (by_group);
 * returns whether that changed their order. The caller has found that
 * groups differ and node ranks talk. */
static bool group_hosts(const tm_problem *pb, int *hosts)
{
	int n = pb->nusable;
	int *out = xmalloc(sizeof(int) * (size_t)n);
	int *size = xmalloc(sizeof(int) * (size_t)pb->ngrp);
	bool moved;
	by_group(pb, hosts, n, out, size);
	moved = memcmp(hosts, out, sizeof(int) * (size_t)n) != 0;
	memcpy(hosts, out, sizeof(int) * (size_t)n);
	free(out);
	free(size);
	return moved;
}

/* Hosts by their place in an order: ctx maps host → place. */
static int cmp_place(const void *a, const void *b, void *ctx)
{
	const int *place = ctx;
	return place[*(const int *)a] - place[*(const int *)b];
}

/* With by_ep every node rank of a unit runs the same pipeline rank and
 * waits for the unit's slowest host: the heaviest units take the blocks
 * whose worst host comes first in the greedy order (place: host → place).
 * Reorders the blocks of onodes and ohosts (R each, nu of them) so. */
static void match_units(const tm_problem *pb, int R, int nu, const int *place,
                        int *onodes, int *ohosts)
{
	int *uo = xmalloc(sizeof(int) * (size_t)nu);
	int *bo = xmalloc(sizeof(int) * (size_t)nu);
	double *uw = xmalloc(sizeof(double) * (size_t)nu);
	double *bq = xmalloc(sizeof(double) * (size_t)nu);
	int *tn = xmalloc(sizeof(int) * (size_t)nu * (size_t)R);
	int *th = xmalloc(sizeof(int) * (size_t)nu * (size_t)R);
	for (int b = 0; b < nu; b++) {
		uo[b] = bo[b] = b;
		uw[b] = pb->work[pb->rank_stage[onodes[b * R] * pb->nproc]];
		/* the block's hosts are sorted: its last is its worst */
		bq[b] = -place[ohosts[b * R + R - 1]];
	}
	sort_desc(uo, nu, uw, NULL);
	sort_desc(bo, nu, bq, NULL);
	for (int k = 0; k < nu; k++) {
		memcpy(&tn[k * R], &onodes[uo[k] * R], sizeof(int) * (size_t)R);
		memcpy(&th[k * R], &ohosts[bo[k] * R], sizeof(int) * (size_t)R);
	}
	memcpy(onodes, tn, sizeof(int) * (size_t)nu * (size_t)R);
	memcpy(ohosts, th, sizeof(int) * (size_t)nu * (size_t)R);
	free(uo);
	free(bo);
	free(uw);
	free(bq);
	free(tn);
	free(th);
}

/* Replicas inside groups. Filling groups in the greedy order keeps hosts of
 * one group together, but node ranks come by work, so one replica's stages
 * still land in many groups and its pipeline hops cross them. When every
 * node rank belongs to one replica and every replica has R node ranks,
 * give each replica a block of R hosts of one group instead: the hosts the
 * greedy order would use (its first nnodes), group by group; each group
 * deals its hosts, best first, to as many whole blocks as it holds (round
 * robin, so good and poor hosts spread over the blocks) and its remainder,
 * evenly spaced, to a pool that makes the last blocks, group after group.
 * Replica d takes the d-th block (consecutive replicas share a group, as
 * the all-reduce ring's neighbours), its heaviest node rank on the block's
 * best host. With by_ep the units are instead the instances of one
 * pipeline rank in one expert-parallel group (their all-to-all runs every
 * microbatch; the hops between a replica's stages only in the fill), each
 * group's hosts are dealt in order rather than round robin, and the
 * heaviest units take the best blocks (match_units). Writes the node and
 * host orders for place_nodes; returns false when the job has no such
 * shape. */
static bool replica_blocks(const tm_problem *pb, const int *nodes,
                           const int *hosts, bool by_ep, int *onodes,
                           int *ohosts)
{
	int nn = pb->nnodes, R, nb = 0, npool = 0, ng = pb->ngrp, k;
	/* the units that get a block each: replicas, or with by_ep the
	 * instances of one pipeline rank in one expert-parallel group */
	int nu = by_ep ? pb->nrep / pb->nep * pb->npp : pb->nrep;
	int *rep = xmalloc(sizeof(int) * (size_t)nn);
	int *cnt = xcalloc((size_t)nu + 1, sizeof(int));
	int *grouped = NULL, *pool = NULL, *size = NULL;
	bool ok = nu > 1 && (!by_ep || tm_has_a2a(pb));

	for (int n = 0; n < nn && ok; n++) {
		for (int i = 0; i < pb->nproc && ok; i++) {
			int r = n * pb->nproc + i, d = pb->rank_rep[r];
			int u = by_ep ? pb->ep_group[d] * pb->npp + pb->rank_stage[r] :
			        d;
			if (i == 0)
				rep[n] = u;
			ok = rep[n] == u;
		}
		if (ok)
			cnt[rep[n]]++;
	}
	R = ok ? cnt[0] : 0;
	for (int d = 1; d < nu && ok; d++)
		ok = cnt[d] == R;
	if (!ok || R < 2) {
		free(rep);
		free(cnt);
		return false;
	}
	/* node ranks unit by unit, each unit's by decreasing work (nodes is
	 * in that order) */
	memset(cnt, 0, sizeof(int) * (size_t)nu);
	for (int i = 0; i < nn; i++) {
		int n = nodes[i];
		onodes[rep[n] * R + cnt[rep[n]]++] = n;
	}
	/* the hosts used, group by group in order of their best host */
	grouped = xmalloc(sizeof(int) * (size_t)nn);
	pool = xmalloc(sizeof(int) * (size_t)nn);
	size = xmalloc(sizeof(int) * (size_t)ng);
	k = by_group(pb, hosts, nn, grouped, size);
	for (int i = 0, pos = 0; i < k; i++) {
		int c = size[i], full = c / R, left = c - full * R;
		const int *gh = &grouped[pos];
		for (int j = 0, rr = 0; j < c; j++) {
			/* the remainder at evenly spaced places */
			if (left > 0 && (long)(j + 1) * left / c >
			    (long)j * left / c) {
				pool[npool++] = gh[j];
				continue;
			}
			/* replicas: round robin, so that every replica gets
			 * its share of good hosts; with by_ep, in order, so
			 * that the slow hosts (which hold their whole unit
			 * back) share few blocks */
			int b = by_ep ? nb + rr / R : nb + rr % full;
			int slot = by_ep ? rr % R : rr / full;
			ohosts[b * R + slot] = gh[j];
			rr++;
		}
		nb += full;
		pos += c;
	}
	/* the pool, in blocks of R, group after group */
	memcpy(&ohosts[nb * R], pool, sizeof(int) * (size_t)npool);
	/* each block's hosts best first: their order in hosts */
	int *place = xmalloc(sizeof(int) * (size_t)pb->nhost);
	for (int u = 0; u < nn; u++)
		place[hosts[u]] = u;
	for (int b = 0; b < nu; b++)
		tm_sort(&ohosts[b * R], (size_t)R, sizeof(int), cmp_place, place);
	if (by_ep)
		match_units(pb, R, nu, place, onodes, ohosts);
	free(place);
	free(rep);
	free(cnt);
	free(grouped);
	free(pool);
	free(size);
	return true;
}

/* The i-th node rank of nodes on the i-th host of hosts. */
static bool place_nodes(const tm_problem *pb, const int *nodes,
                        const int *hosts, int *flat)
{
	bool ok = true;
	for (int i = 0; i < pb->nnodes && ok; i++)
		ok = tm_greedy_node(pb, nodes[i], hosts[i], flat);
	return ok;
}

/* After the host order: swaps inside hosts, then replica balancing. */
static void greedy_finish(const tm_problem *pb, double deadline_ms,
                          int *flat, bool *stopped)
{
	if (pb->nranks <= 1024)
		local_search(pb, flat);
	if (pb->crit[0] == TM_CRIT_TIME && pb->nrep > 1 &&
	    balance_replicas(pb, deadline_ms, flat))
		*stopped = true;
}

/* Completes alt (local search, replica balancing) and takes it into flat
 * when flat has no placement yet (ok false) or alt is better; returns
 * whether flat has one. */
static bool finish_better(const tm_problem *pb, double deadline_ms, int *alt,
                          int *flat, bool ok, bool *stopped)
{
	tm_eval ea, eb;
	greedy_finish(pb, deadline_ms, alt, stopped);
	tm_eval_flat(pb, alt, 0, &ea);
	if (ok)
		tm_eval_flat(pb, flat, 0, &eb);
	if (!ok || tm_eval_better(pb, &ea, &eb)) {
		memcpy(flat, alt, sizeof(int) * (size_t)pb->nranks);
		ok = true;
	}
	return ok;
}

int tm_solve_greedy(const tm_problem *pb, double deadline_ms, int *flat,
                    bool *stopped)
{
	double *key = xmalloc(sizeof(double) * (size_t)pb->nranks);
	int *nodes = xmalloc(sizeof(int) * (size_t)pb->nnodes);
	int *hosts = xmalloc(sizeof(int) * (size_t)pb->nusable);
	double *hkey = xcalloc((size_t)pb->nhost, sizeof(double));
	double *hspeed = xcalloc((size_t)pb->nhost, sizeof(double));
	bool ok = true, unused;

	if (!stopped)
		stopped = &unused;
	*stopped = false;
	/* heavier node ranks on hosts whose best GPUs are faster and cooler */
	for (int n = 0; n < pb->nnodes; n++) {
		key[n] = 0;
		for (int i = 0; i < pb->nproc; i++)
			key[n] += pb->work[pb->rank_stage[n * pb->nproc + i]];
		nodes[n] = n;
	}
	sort_desc(nodes, pb->nnodes, key, NULL);
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], first = pb->host_first[h];
		int ng = pb->c->nodes[h].ngpus, size = pb->nmember, nslot;
		double *d = xmalloc(sizeof(double) * (size_t)ng), slow = 0;
		for (int g = first; g < first + ng; g++)
			hkey[h] -= tm_gpu_temp(pb, g, 1);
		/* speed as instances of tp·cp ranks see it */
		if (size < 1 || size > ng)
			size = 1;
		nslot = tm_host_slots(pb, h, size, d);
		for (int j = 0; j < nslot; j++)
			slow += d[j];
		/* time first: speed decides and heat breaks ties; otherwise a
		 * blend where 1 % of speed weighs like 10 °C */
		hkey[h] /= ng;
		hspeed[h] = -slow / nslot;
		if (pb->crit[0] != TM_CRIT_TIME)
			hkey[h] += 1000 * hspeed[h];
		free(d);
		hosts[u] = h;
	}
	if (pb->crit[0] == TM_CRIT_TIME)
		sort_desc(hosts, pb->nusable, hspeed, hkey);
	else
		sort_desc(hosts, pb->nusable, hkey, NULL);
	ok = place_nodes(pb, nodes, hosts, flat);
	if (ok)
		greedy_finish(pb, deadline_ms, flat, stopped);
	/* with network groups: also group by group, and replica by replica
	 * inside groups, and keep the best */
	if (pb->nusable >= pb->nnodes && groups_differ(pb) &&
	    traffic_between_nodes(pb)) {
		int *alt = xmalloc(sizeof(int) * (size_t)pb->nranks);
		int *on = xmalloc(sizeof(int) * (size_t)pb->nnodes);
		int *oh = xmalloc(sizeof(int) * (size_t)pb->nnodes);
		for (int by_ep = 0; by_ep < 2; by_ep++)
			if (replica_blocks(pb, nodes, hosts, by_ep, on, oh) &&
			    place_nodes(pb, on, oh, alt))
				ok = finish_better(pb, deadline_ms, alt, flat, ok,
				                   stopped);
		if (group_hosts(pb, hosts) && place_nodes(pb, nodes, hosts, alt))
			ok = finish_better(pb, deadline_ms, alt, flat, ok,
			                   stopped);
		free(alt);
		free(on);
		free(oh);
	}
	/* torchrun's placement, improved by the same swaps, when it comes out
	 * better: a descent from greedy's start can stop in a valley of wear
	 * that the placement it would replace does not have */
	if (pb->nranks <= 1024) {
		int *alt = xmalloc(sizeof(int) * (size_t)pb->nranks);
		tm_eval ea;
		char why[256];
		tm_identity(pb, alt);
		if (tm_constraints_ok(pb, alt, tm_eval_flat(pb, alt, 0, &ea), why,
		                      sizeof why))
			ok = finish_better(pb, deadline_ms, alt, flat, ok,
			                   stopped);
		free(alt);
	}
	free(key);
	free(nodes);
	free(hosts);
	free(hkey);
	free(hspeed);
	return ok ? 0 : TM_EINFEASIBLE;
}
