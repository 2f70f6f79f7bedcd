/*
 * bound.c — lower bounds on the best iteration time, the lowest peak
 * temperature and the least wear, cheap enough for any cluster size. They prove how far a
 * placement found by a heuristic (or by a solver stopped at its time limit)
 * can be from the optimum; docs/model.md, "Bounds", derives them.
 *
 * The first two rest on one fact. Drop every constraint but "one rank per
 * GPU" and ask whether all ranks fit under a threshold X, where rank r may
 * use GPU g when its value v(r, g) <= X. When v grows with the work of the rank's
 * pipeline rank on every GPU, the GPUs each rank may use are nested:
 * a heavier rank's set lies inside a lighter rank's. For nested sets Hall's
 * condition needs checking only for the k heaviest classes of ranks: the
 * c_k ranks of the k heaviest pipeline ranks need c_k GPUs usable by the
 * k-th heaviest. So the least feasible X is the largest, over k, of the
 * c_k-th smallest v(s_k, g) over the GPUs. The wear bound, at the end,
 * is the dual of a transportation problem.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Indices by decreasing key (ctx), ties by index. */
static int cmp_stage_desc(const void *a, const void *b, void *ctx)
{
	const double *key = ctx;
	int s = *(const int *)a, t = *(const int *)b;
	if (key[s] != key[t])
		return key[s] < key[t] ? 1 : -1;
	return s - t;
}

/* The GPUs of usable hosts, flat, and their number. */
static int usable_gpus(const tm_problem *pb, int **out)
{
	int n = 0, *g;
	for (int u = 0; u < pb->nusable; u++)
		n += pb->c->nodes[pb->usable[u]].ngpus;
	g = xmalloc(sizeof(int) * (size_t)(n ? n : 1));
	n = 0;
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u];
		for (int i = 0; i < pb->c->nodes[h].ngpus; i++)
			g[n++] = pb->host_first[h] + i;
	}
	*out = g;
	return n;
}

/* Pipeline ranks by work, heaviest first. */
static int *stages_by_work(const tm_problem *pb)
{
	int *s = xmalloc(sizeof(int) * (size_t)pb->npp);
	for (int i = 0; i < pb->npp; i++)
		s[i] = i;
	tm_sort(s, (size_t)pb->npp, sizeof(int), cmp_stage_desc, pb->work);
	return s;
}

/* The least X such that every rank has a GPU of value at most X, where
 * val(s, g) grows with the work of s: the nested Hall bound above. */
static double nested_bound(const tm_problem *pb, const int *gpus, int ng,
                           double (*val)(const tm_problem *, int, int,
                                         const void *),
                           const void *ctx)
{
	int *st = stages_by_work(pb), need = 0;
	int per_stage = pb->nrep * pb->nmember;
	double *v = xmalloc(sizeof(double) * (size_t)(ng ? ng : 1)), x = 0;
	for (int k = 0; k < pb->npp; k++) {
		int s = st[k];
		need += per_stage;
		if (need > ng) {
			x = INFINITY;
			break;
		}
		for (int i = 0; i < ng; i++)
			v[i] = val(pb, s, gpus[i], ctx);
		qsort(v, (size_t)ng, sizeof(double), cmp_dbl);
		if (v[need - 1] > x)
			x = v[need - 1];
	}
	free(v);
	free(st);
	return x;
}

static double stage_temp(const tm_problem *pb, int s, int g, const void *ctx)
{
	double t_ref = *(const double *)ctx, busy;
	busy = pb->job->microbatches * pb->work[s] * pb->derate[g] / t_ref;
	if (busy > 1)
		busy = 1;
	return tm_gpu_temp(pb, g, busy);
}

/* The fastest a hop of act_mib can be between two GPUs of one usable host
 * (same), or of two different usable hosts. */
static double best_hop_ms(const tm_problem *pb, double act_mib, bool same)
{
	double bw = 0, lo;
	if (!same) {
		if (!tm_net_range(pb, &lo, &bw))
			bw = 0;
	} else {
		for (int u = 0; u < pb->nusable; u++) {
			const tm_node *n = &pb->c->nodes[pb->usable[u]];
			for (int i = 0; i < n->ngpus * n->ngpus; i++)
				if (i / n->ngpus != i % n->ngpus && n->bw[i] > bw)
					bw = n->bw[i];
		}
	}
	return bw > 0 ? 2.0 * act_mib * 1048576.0 / (bw * 1e6) : 0;
}

/* When all members of every stage instance are ranks of one node
 * (pb->inst_in_node), an instance's GPUs are on one host, and its time is
 * set by the slowest of them: a host offers instance "slots" whose best
 * derate is that of its nmember-th, 2·nmember-th, ... fastest GPU. */
int tm_host_slots(const tm_problem *pb, int h, int size, double *out)
{
	int first = pb->host_first[h], ng = pb->c->nodes[h].ngpus, n;
	double *d = xmalloc(sizeof(double) * (size_t)ng);
	for (int i = 0; i < ng; i++)
		d[i] = pb->derate[first + i];
	qsort(d, (size_t)ng, sizeof(double), cmp_dbl);
	n = size >= 1 ? ng / size : 0;
	for (int j = 0; j < n; j++)
		out[j] = d[(j + 1) * size - 1];
	free(d);
	return n;
}

/* One stand-in GPU per instance slot of every usable host: the host's
 * first GPUs, whose entries of slot (indexed like pb->derate) get the
 * slots' derates. Returns their number. */
static int instance_slots(const tm_problem *pb, int size, int *gpus,
                          double *slot)
{
	int n = 0;
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], first = pb->host_first[h];
		int k = tm_host_slots(pb, h, size, slot + first);
		for (int j = 0; j < k; j++)
			gpus[n++] = first + j;
	}
	return n;
}

/* Work times speed: ctx is a derate per flat GPU (pb->derate, or the
 * slots' derates). */
static double stage_time(const tm_problem *pb, int s, int g, const void *ctx)
{
	return pb->work[s] * ((const double *)ctx)[g];
}

/* The nested bound over instance slots instead of GPUs: each pipeline rank
 * needs nrep slots. */
static double slot_bound(const tm_problem *pb, const int *gpus, int n,
                         const double *slot)
{
	tm_problem q = *pb;
	q.nmember = 1;   /* one slot per instance */
	return nested_bound(&q, gpus, n, stage_time, slot);
}

/* The all-reduce at the least: every edge of a data-parallel ring stays
 * inside a node rank or leaves it, which the rank numbers say, so it takes
 * at least its time at the best bandwidth inside a host or between two
 * hosts; a ring is as slow as its slowest edge, the all-reduce as its
 * slowest ring (docs/model.md, 11). */
static double allreduce_lower_bound(const tm_problem *pb)
{
	double dp = pb->nrep, lb = 0;
	if (pb->nrep < 2)
		return 0;
	for (int s = 0; s < pb->npp; s++) {
		double grad = tm_grad_mib(pb, s), same, cross;
		if (!(grad > 0))
			continue;
		/* best_hop_ms is 2·MiB at the best bandwidth; an edge carries
		 * (dp − 1)/dp of that */
		same = (dp - 1) / dp * best_hop_ms(pb, grad, true);
		cross = (dp - 1) / dp * best_hop_ms(pb, grad, false);
		for (int q = 0; q < pb->nmember; q++)
			for (int d = 0; d < pb->nrep; d++) {
				int a = pb->inst_rank[(d * pb->npp + s) * pb->nmember + q];
				int b = tm_ring_rank(pb, a, 1);
				lb = fmax(lb, a / pb->nproc == b / pb->nproc ? same : cross);
			}
	}
	return lb;
}

/* The all-to-all of each pipeline rank at the least (out[s], 0 without
 * one): each piece a sender sends stays inside its node rank or leaves
 * it, which the rank numbers say, so it takes at least its time at the
 * best bandwidth inside a host or between two hosts; a sender's pieces add
 * up, the exchange takes its slowest sender, and the bound is the least
 * over the expert-parallel groups (docs/model.md, 11). */
static void alltoall_lower(const tm_problem *pb, double *out)
{
	int E = pb->nep;
	for (int s = 0; s < pb->npp; s++) {
		double a = pb->a2a[s], same, cross;
		out[s] = 0;
		if (E < 2 || !(a > 0))
			continue;
		/* best_hop_ms is 2·MiB at the best bandwidth; a piece is
		 * a/E MiB */
		same = best_hop_ms(pb, a / E, true) / 2;
		cross = best_hop_ms(pb, a / E, false) / 2;
		out[s] = INFINITY;
		for (int o = 0; o < pb->nrep / E; o++) {
			const int *reps = &pb->ep_reps[o * E];
			double grp = 0;
			for (int q = 0; q < pb->nmember; q++)
				for (int i = 0; i < E; i++) {
					int r = pb->inst_rank[(reps[i] * pb->npp + s) *
					                      pb->nmember + q];
					double sum = 0;
					for (int k = 0; k < E; k++) {
						int t = pb->inst_rank[(reps[k] * pb->npp + s) *
						                      pb->nmember + q];
						if (k != i)
							sum += r / pb->nproc == t / pb->nproc ?
							       same : cross;
					}
					grp = fmax(grp, sum);
				}
			out[s] = fmin(out[s], grp);
		}
	}
}

void tm_replica_hops_lower(const tm_problem *pb, double *out)
{
	int nh = pb->nhops;
	double *same_hop = xmalloc(sizeof(double) * (size_t)(nh + 1));
	double *cross_hop = xmalloc(sizeof(double) * (size_t)(nh + 1));

	for (int k = 0; k < nh; k++) {
		same_hop[k] = best_hop_ms(pb, pb->hops[k].act_mib, true);
		cross_hop[k] = best_hop_ms(pb, pb->hops[k].act_mib, false);
	}
	/* a rank's node is fixed by its number, so whether a hop leaves the
	 * node is known before placing anything */
	for (int d = 0; d < pb->nrep; d++) {
		out[d] = 0;
		for (int k = 0; k < nh; k++) {
			const tm_hop *hp = &pb->hops[k];
			double worst = 0;
			for (int q = 0; q < pb->nmember; q++) {
				int a = pb->inst_rank[(d * pb->npp + hp->from) *
				                      pb->nmember + q];
				int b = pb->inst_rank[(d * pb->npp + hp->to) *
				                      pb->nmember + q];
				double c = a / pb->nproc == b / pb->nproc ?
				           same_hop[k] : cross_hop[k];
				if (c > worst)
					worst = c;
			}
			out[d] += worst;
		}
	}
	free(same_hop);
	free(cross_hop);
}

double tm_time_lower_bound(const tm_problem *pb)
{
	int *gpus, ng = usable_gpus(pb, &gpus);
	double v = pb->job->vpp, m = pb->job->microbatches;
	double dmin = INFINITY, fill = 0, bneck, hmin = INFINITY;
	double lb_a = 0, *hops, *xlb, xmin = INFINITY;

	for (int i = 0; i < ng; i++)
		if (pb->derate[gpus[i]] < dmin)
			dmin = pb->derate[gpus[i]];
	if (ng == 0) {
		free(gpus);
		return 0;
	}
	bneck = nested_bound(pb, gpus, ng, stage_time, pb->derate);
	if (pb->nmember > 1 && pb->inst_in_node) {
		int *sg = xmalloc(sizeof(int) * (size_t)ng);
		double *slot = xmalloc(sizeof(double) * (size_t)pb->ngpu);
		int ns = instance_slots(pb, pb->nmember, sg, slot);
		double dslot = INFINITY;
		bneck = fmax(bneck, slot_bound(pb, sg, ns, slot));
		for (int i = 0; i < ns; i++)
			dslot = fmin(dslot, slot[sg[i]]);
		if (ns > 0)
			dmin = fmax(dmin, dslot);
		free(sg);
		free(slot);
	}
	xlb = xmalloc(sizeof(double) * (size_t)pb->npp);
	alltoall_lower(pb, xlb);
	for (int s = 0; s < pb->npp; s++) {
		fill += (pb->work[s] * dmin + xlb[s]) / v;
		xmin = fmin(xmin, xlb[s]);
	}
	/* the bottleneck instance also waits for its all-to-all, if any */
	bneck += xmin;
	for (int s = 0; s < pb->npp; s++)
		bneck = fmax(bneck, pb->work[s] * dmin + xlb[s]);
	hops = xmalloc(sizeof(double) * (size_t)pb->nrep);
	tm_replica_hops_lower(pb, hops);
	for (int d = 0; d < pb->nrep; d++) {
		double slowest = 0;
		if (hops[d] < hmin)
			hmin = hops[d];
		for (int s = 0; s < pb->npp; s++)
			if (pb->work[s] * dmin + xlb[s] > slowest)
				slowest = pb->work[s] * dmin + xlb[s];
		if (fill + hops[d] + (m - 1 / v) * slowest > lb_a)
			lb_a = fill + hops[d] + (m - 1 / v) * slowest;
	}
	free(gpus);
	free(hops);
	free(xlb);
	/* the replica that holds the bottleneck instance takes at least the
	 * fill, the fewest hops of any replica and the bottleneck's pace; the
	 * all-reduce follows the slowest replica */
	return fmax(lb_a, fill + hmin + (m - 1 / v) * bneck) +
	       allreduce_lower_bound(pb);
}

double tm_peak_lower_bound(const tm_problem *pb, double t_ref)
{
	int *gpus, ng = usable_gpus(pb, &gpus);
	double x = ng ? nested_bound(pb, gpus, ng, stage_temp, &t_ref) : 0;
	free(gpus);
	return x;
}

bool tm_instances_in_nodes(const tm_problem *pb)
{
	return pb->inst_in_node;
}

/* ---- wear ------------------------------------------------------------------
 * The least wear at t_ref, relaxed to "one rank per GPU": a transportation
 * problem from the pipeline ranks (n_s ranks each) to the usable GPUs (at
 * most one rank each) at cost c(s, g), the wear of GPU g running a rank of
 * s at t_ref. By weak duality any prices u give a lower bound
 *
 *   L(u) = Σ_s n_s·u_s + Σ_g min(0, min_s (c(s, g) − u_s)),
 *
 * and the relaxation's LP is integral, so the best u reaches its optimum.
 * Coordinate ascent raises L: with the other prices fixed, the best u_s is
 * the n_s-th smallest over g of c(s, g) − K_g, where K_g = min(0, the least
 * c(s', g) − u_s' over s' ≠ s). Every sweep keeps a valid bound, so it may
 * stop at any time. Constraints it drops (node ranks, NVLink, memory, the
 * earlier criteria held within tolerance) only raise the optimum. */

/* The k-th smallest (0-based) of v[0..n), which it reorders. */
static double kth_smallest(double *v, int n, int k)
{
	int lo = 0, hi = n - 1;
	while (lo < hi) {
		double p = v[lo + (hi - lo) / 2];
		int i = lo, j = hi;
		while (i <= j) {
			while (v[i] < p)
				i++;
			while (v[j] > p)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

/* Raises L along the classes marked in in (their prices together) by the
 * best step: with m_g the least c(s, g) − u_s over the marked classes and
 * K_g = min(0, the least over the others), L changes by n_in·δ +
 * Σ_g (min(K_g, m_g − δ) − min(K_g, m_g)), which is largest at δ = the
 * n_in-th smallest m_g − K_g. v is scratch for ng values. */
static void line_step(const double *c, double *u, int ns, int ng,
                      const int *per, const unsigned char *in, double *v)
{
	int n = 0;
	double d;
	for (int s = 0; s < ns; s++)
		n += in[s] ? per[s] : 0;
	if (n < 1 || n > ng)
		return;
	for (int g = 0; g < ng; g++) {
		double m = INFINITY, k = 0;
		for (int s = 0; s < ns; s++) {
			double y = c[(size_t)s * ng + g] - u[s];
			if (in[s])
				m = fmin(m, y);
			else
				k = fmin(k, y);
		}
		v[g] = m - k;
	}
	d = kth_smallest(v, ng, n - 1);
	for (int s = 0; s < ns; s++)
		if (in[s])
			u[s] += d;
}

/* L(u), summed with the GPUs' terms first (the larger count). */
static double wear_dual(const double *c, const double *u, int ns, int ng,
                        const int *per)
{
	double l = 0, sum = 0;
	for (int g = 0; g < ng; g++) {
		double x = 0;
		for (int s = 0; s < ns; s++)
			x = fmin(x, c[(size_t)s * ng + g] - u[s]);
		l += x;
	}
	for (int s = 0; s < ns; s++)
		sum += per[s] * u[s];
	return sum + l;
}

double tm_wear_lower_bound(const tm_problem *pb, double t_ref,
                           double deadline_ms)
{
	int *gpus, ng = usable_gpus(pb, &gpus), ns = 0, total = 0;
	int *cls = xmalloc(sizeof(int) * (size_t)pb->npp);
	int *per = xcalloc((size_t)pb->npp, sizeof(int));
	double *c, *u, *v, best = 0;
	unsigned char *in;

	/* pipeline ranks of equal work cost the same everywhere: one class
	 * each (a class per rank would leave coordinate ascent creeping
	 * between equal prices) */
	for (int s = 0; s < pb->npp; s++) {
		int k = 0;
		while (k < ns && pb->work[cls[k]] != pb->work[s])
			k++;
		if (k == ns)
			cls[ns++] = s;
		per[k] += pb->nrep * pb->nmember;
		total += pb->nrep * pb->nmember;
	}
	/* classes heaviest first */
	for (int i = 1; i < ns; i++)
		for (int j = i; j > 0 && pb->work[cls[j]] > pb->work[cls[j - 1]];
		     j--) {
			int t = cls[j], q = per[j];
			cls[j] = cls[j - 1];
			per[j] = per[j - 1];
			cls[j - 1] = t;
			per[j - 1] = q;
		}
	if (ng < total || !(t_ref > 0) || (double)ns * ng > 64e6) {
		free(gpus);
		free(cls);
		free(per);
		return ng < total ? INFINITY : 0;
	}
	c = xmalloc(sizeof(double) * (size_t)ns * (size_t)ng);
	u = xcalloc((size_t)ns, sizeof(double));
	v = xmalloc(sizeof(double) * (size_t)ng);
	for (int s = 0; s < ns; s++)
		for (int g = 0; g < ng; g++)
			c[(size_t)s * ng + g] = tm_wear_of(stage_temp(pb, cls[s],
			                                   gpus[g], &t_ref));
	/* each sweep: every class alone, then the heaviest k classes and
	 * the lightest k together for every k (heavier classes compete for
	 * the same cool GPUs, and all of them against leaving a GPU idle),
	 * each step to its best length */
	in = xmalloc((size_t)ns);
	for (int sweep = 0; sweep < 50; sweep++) {
		double l;
		for (int dir = 0; dir < 3 * ns; dir++) {
			int k = dir % ns, kind = dir / ns;
			for (int s = 0; s < ns; s++)
				in[s] = kind == 0 ? s == k : kind == 1 ? s <= k :
				        s >= ns - 1 - k;
			line_step(c, u, ns, ng, per, in, v);
		}
		l = wear_dual(c, u, ns, ng, per);
		if (sweep > 0 && !(l > best + 1e-7 * fabs(best))) {
			best = fmax(best, l);
			break;
		}
		best = fmax(best, l);
		if (deadline_ms > 0 && tm_now_ms() > deadline_ms)
			break;
	}
	free(in);
	free(c);
	free(u);
	free(v);
	free(gpus);
	free(cls);
	free(per);
	/* a hair below, for the rounding of the sums */
	return best > 0 ? best * (1 - 1e-12) : 0;
}

/* ---- moves -----------------------------------------------------------------
 * The fewest ranks off their reference GPU (pb->ref_gpu) of any placement
 * that takes at most tcap ms (its cost_ms) and runs no GPU above pcap °C at
 * its own iteration time, at the least. A rank r of pipeline rank s and
 * replica d on GPU g
 *  - puts g in its stage instance, which then takes at least
 *    work_s·derate_g plus its all-to-all's least; replica d takes the fill,
 *    its fewest hops and (m − 1/v) times its slowest instance, so at least
 *    fill + work_s·(derate_g − dmin)/v + hops_d
 *        + (m − 1/v)·(work_s·derate_g + a2a_s),
 *    and the iteration that much plus the all-reduce's least (the terms of
 *    tm_time_lower_bound with this instance as the pace);
 *  - keeps g busy at least m·work_s·derate_g / tcap of an iteration no
 *    longer than tcap, so g is at least as hot as that (or as fully busy,
 *    should a profile's slope be negative);
 *  - needs g's memory.
 * A rank may sit on g only when none of these passes its cap. A rank whose
 * reference GPU it may not sit on moves. And a node rank runs on one host:
 * when its ranks cannot all sit on GPUs of their reference host (no
 * matching of ranks to GPUs they may sit on), the node rank leaves that
 * host and every one of its ranks moves. Last, a replica's time depends on
 * its own ranks' GPUs alone (without an all-to-all, which ties it to its
 * expert group): when the reference placement already makes it slower than
 * tcap less the all-reduce's least, some rank of it moves, and when every
 * node rank is one stage instance (nmember = nproc) on a host of nproc
 * GPUs, changing the replica takes one of its node ranks off its host
 * (inside the host, its ranks can only trade GPUs of one instance, which
 * changes no time), nproc ranks. A replica counts
 * this way only when none of its ranks is counted already, so that the
 * counts add up over disjoint sets of ranks. */

typedef struct mv_ctx {
	const tm_problem *pb;
	double tcap, pcap, fill, dmin, ar, *hops, *xlb;
} mv_ctx;

static bool may_sit(const mv_ctx *X, int r, int g)
{
	const tm_problem *pb = X->pb;
	int s = pb->rank_stage[r];
	double v = pb->job->vpp, m = pb->job->microbatches, w = pb->work[s];
	double t, busy, temp, slack = 1e-9;

	if (!tm_fits(pb, r, g))
		return false;
	t = X->fill + w * (pb->derate[g] - X->dmin) / v + X->hops[pb->rank_rep[r]] +
	    (m - 1 / v) * (w * pb->derate[g] + X->xlb[s]) + X->ar;
	if (t > X->tcap + slack * (1 + X->tcap))
		return false;
	busy = isfinite(X->tcap) && X->tcap > 0 ? m * w * pb->derate[g] / X->tcap :
	       0;
	if (busy > 1)
		busy = 1;
	temp = fmin(tm_gpu_temp(pb, g, busy), tm_gpu_temp(pb, g, 1));
	return !(temp > X->pcap + slack * (1 + fabs(X->pcap)));
}

/* Kuhn's augmenting path for rank i of a node's k ranks over the host's
 * ng GPUs (ok: k × ng may-sit table; owner: GPU → rank index or -1). */
static bool augment(const unsigned char *ok, int ng, int i, int *owner,
                    unsigned char *seen)
{
	for (int j = 0; j < ng; j++) {
		if (!ok[i * ng + j] || seen[j])
			continue;
		seen[j] = 1;
		if (owner[j] < 0 || augment(ok, ng, owner[j], owner, seen)) {
			owner[j] = i;
			return true;
		}
	}
	return false;
}

long tm_moves_lower_bound(const tm_problem *pb, double tcap, double pcap)
{
	int *gpus, ng = usable_gpus(pb, &gpus), k = pb->nproc, most = 0;
	double v = pb->job->vpp;
	long lb = 0;
	mv_ctx X = { pb, tcap, pcap, 0, INFINITY, 0, NULL, NULL };
	unsigned char *ok, *seen, *forced;
	int *owner;

	if (isfinite(pb->pol->max_temp_c))
		X.pcap = fmin(X.pcap, pb->pol->max_temp_c);
	for (int i = 0; i < ng; i++)
		X.dmin = fmin(X.dmin, pb->derate[gpus[i]]);
	free(gpus);
	if (ng == 0)
		return pb->nranks;
	X.xlb = xmalloc(sizeof(double) * (size_t)pb->npp);
	alltoall_lower(pb, X.xlb);
	for (int s = 0; s < pb->npp; s++)
		X.fill += (pb->work[s] * X.dmin + X.xlb[s]) / v;
	X.hops = xmalloc(sizeof(double) * (size_t)pb->nrep);
	tm_replica_hops_lower(pb, X.hops);
	X.ar = allreduce_lower_bound(pb);
	for (int h = 0; h < pb->nhost; h++)
		if (pb->c->nodes[h].ngpus > most)
			most = pb->c->nodes[h].ngpus;
	forced = xcalloc((size_t)pb->nranks, 1);
	ok = xmalloc((size_t)k * (size_t)(most ? most : 1));
	seen = xmalloc((size_t)(most ? most : 1));
	owner = xmalloc(sizeof(int) * (size_t)(most ? most : 1));
	for (int n = 0; n < pb->nnodes; n++) {
		const int *ref = &pb->ref_gpu[n * k];
		int h = tm_ref_host(pb, n), first, hg, placed = 0;
		if (h < 0) {  /* no single reference host: rank by rank */
			for (int i = 0; i < k; i++)
				forced[n * k + i] = ref[i] < 0 ||
				                    ref[i] >= pb->ngpu ||
				                    !may_sit(&X, n * k + i, ref[i]);
			continue;
		}
		first = pb->host_first[h];
		hg = pb->c->nodes[h].ngpus;
		for (int i = 0; i < k; i++)
			for (int j = 0; j < hg; j++)
				ok[i * hg + j] = may_sit(&X, n * k + i, first + j);
		for (int j = 0; j < hg; j++)
			owner[j] = -1;
		for (int i = 0; i < k; i++) {
			memset(seen, 0, (size_t)hg);
			placed += augment(ok, hg, i, owner, seen);
		}
		for (int i = 0; i < k; i++)
			forced[n * k + i] = placed < k ||
			                    !ok[i * hg + ref[i] - first];
	}
	for (int r = 0; r < pb->nranks; r++)
		lb += forced[r];
	if (pb->nep < 2 && pb->nranks > 0 && isfinite(tcap)) {
		unsigned char *hit = xcalloc((size_t)pb->nrep, 1);
		bool valid = true, whole = pb->nmember == k;
		for (int u = 0; u < pb->nusable && whole; u++)
			whole = pb->c->nodes[pb->usable[u]].ngpus == k;
		for (int r = 0; r < pb->nranks; r++) {
			hit[pb->rank_rep[r]] |= forced[r];
			valid = valid && pb->ref_gpu[r] >= 0 &&
			        pb->ref_gpu[r] < pb->ngpu;
		}
		for (int d = 0; d < pb->nrep && valid; d++)
			if (!hit[d] && tm_rep_ms(pb, pb->ref_gpu, d) + X.ar >
			               tcap + 1e-9 * (1 + tcap))
				lb += whole ? k : 1;
		free(hit);
	}
	free(forced);
	free(ok);
	free(seen);
	free(owner);
	free(X.xlb);
	free(X.hops);
	return lb;
}
