/*
 * host.c — the host decomposition: the ilp method's exact path for
 * clusters whose hosts are interchangeable apart from their GPUs' profiles
 * (docs/model.md, section 10, "The host decomposition").
 *
 * torchrun puts each node rank on one host, so a placement is a host for
 * every node rank and, inside each host, a GPU for every local rank. When
 * every link inside a host costs the same, what happens inside a host
 * depends only on its GPUs' derates and temperatures, and each criterion
 * splits into a small problem per (node rank, host) pair and an
 * assignment of node ranks to hosts (hops between hosts are exact when
 * every pair of hosts has the same bandwidth, lower bounds otherwise):
 *
 *   time       instance "slots" (a host's derates sorted, cut into groups
 *              of tp·cp) are as good as any grouping; a lower bound from
 *              a threshold on the bottleneck plus a linear assignment of
 *              one replica's fill; a placement built from the bound's
 *              witness and improved by exchanges
 *   peak_temp  the least peak of each pair by Hall's condition on nested
 *              sets, then a bottleneck assignment
 *   moves      the fewest moves of each pair by a linear assignment, then
 *              a linear assignment of node ranks to hosts
 *
 * Each bound drops the coupling between hosts (the replicas' times), so it
 * is a relaxation; when the placement built for a phase meets its bound and
 * keeps the earlier criteria within tolerance, the phase is proven optimal.
 * Otherwise the best placement found is kept and the status says feasible.
 */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solve/solve.h"

#define BIG 1e18          /* a forbidden pair in an assignment */
#define MAX_HOSTS 128     /* beyond this the assignments cost too much */
#define MAX_WORK 1e9      /* and their operations per bottleneck value */

typedef struct hd {
	const tm_problem *pb;
	int N, U, K, nm, npp, nrep;
	double m, v;
	int *host;            /* usable index → cluster host */
	int *refhost;         /* node → usable index of its identity host */
	int *sg;              /* U × G: GPUs of each host by derate */
	int G;                /* GPUs per usable host (the fewest of them) */
	double *a;            /* U × K: slot derates */
	int *inst;            /* N × K: instance (d·npp + s) of node n */
	double *hops;         /* replica → its least hop time, plus the
	                         all-reduce when that is a constant */
	double hmin;          /* the fewest of them */
	double dmin;          /* best derate of a usable GPU */
	double wsum;          /* Σ_s w_s */
	double *bn;           /* N × U: least bottleneck of node n on host u */
	bool hops_exact;      /* hops cost the same wherever they run */
} hd;

/* ---- assignments --------------------------------------------------------- */

/* Least-cost assignment of n rows to distinct columns of an n × m matrix
 * (n ≤ m), costs of BIG forbidden: the shortest augmenting path method
 * with potentials, O(n²m). Writes the column of each row to col (when not
 * NULL) and returns the cost, or INFINITY when no assignment avoids the
 * forbidden pairs. */
static double lap(int n, int m, const double *c0, int *col)
{
	double *c = xmalloc(sizeof(double) * (size_t)(n * m)), big = 0;
	double *u = xcalloc((size_t)n + 1, sizeof(double));
	double *w = xcalloc((size_t)m + 1, sizeof(double));
	double *minv = xmalloc(sizeof(double) * ((size_t)m + 1));
	int *p = xcalloc((size_t)m + 1, sizeof(int));
	int *way = xcalloc((size_t)m + 1, sizeof(int));
	bool *used = xmalloc((size_t)m + 1);
	double total = 0;

	/* a forbidden pair costs more than any assignment of allowed ones,
	 * but not so much that the potentials lose the costs' precision */
	for (int i = 0; i < n * m; i++)
		if (c0[i] < BIG)
			big = fmax(big, fabs(c0[i]));
	big = 2 * (n + 1) * (big + 1);
	for (int i = 0; i < n * m; i++)
		c[i] = c0[i] < BIG ? c0[i] : big;
	for (int i = 1; i <= n; i++) {
		int j0 = 0;
		p[0] = i;
		for (int j = 0; j <= m; j++) {
			minv[j] = INFINITY;
			used[j] = false;
		}
		do {
			int i0 = p[j0], j1 = 0;
			double delta = INFINITY;
			used[j0] = true;
			for (int j = 1; j <= m; j++) {
				double cur;
				if (used[j])
					continue;
				cur = c[(i0 - 1) * m + j - 1] - u[i0] - w[j];
				if (cur < minv[j]) {
					minv[j] = cur;
					way[j] = j0;
				}
				if (minv[j] < delta) {
					delta = minv[j];
					j1 = j;
				}
			}
			for (int j = 0; j <= m; j++) {
				if (used[j]) {
					u[p[j]] += delta;
					w[j] -= delta;
				} else {
					minv[j] -= delta;
				}
			}
			j0 = j1;
		} while (p[j0] != 0);
		do {
			int j1 = way[j0];
			p[j0] = p[j1];
			j0 = j1;
		} while (j0);
	}
	for (int j = 1; j <= m; j++) {
		if (!p[j])
			continue;
		if (c0[(p[j] - 1) * m + j - 1] >= BIG) {
			total = INFINITY;
			break;
		}
		total += c[(p[j] - 1) * m + j - 1];
		if (col)
			col[p[j] - 1] = j - 1;
	}
	free(c);
	free(u);
	free(w);
	free(minv);
	free(p);
	free(way);
	free(used);
	return total;
}

/* Kuhn's augmenting path for the bottleneck assignment below. */
static bool augment(int i, int m, const bool *ok, int *match, bool *seen)
{
	for (int j = 0; j < m; j++) {
		if (!ok[i * m + j] || seen[j])
			continue;
		seen[j] = true;
		if (match[j] < 0 || augment(match[j], m, ok, match, seen)) {
			match[j] = i;
			return true;
		}
	}
	return false;
}

/* The least X such that every row has its own column with c ≤ X, or
 * INFINITY. */
static double bottleneck(int n, int m, const double *c)
{
	double *v = xmalloc(sizeof(double) * (size_t)(n * m));
	bool *ok = xmalloc((size_t)(n * m)), *seen = xmalloc((size_t)m);
	int *match = xmalloc(sizeof(int) * (size_t)m), k = 0, lo, hi;
	double x = INFINITY;

	for (int i = 0; i < n * m; i++)
		if (c[i] < INFINITY)
			v[k++] = c[i];
	qsort(v, (size_t)k, sizeof(double), tm_cmp_dbl);
	lo = 0;
	hi = k - 1;
	while (lo <= hi) {          /* the smallest feasible value */
		int mid = (lo + hi) / 2, got = 0;
		for (int i = 0; i < n * m; i++)
			ok[i] = c[i] <= v[mid];
		for (int j = 0; j < m; j++)
			match[j] = -1;
		for (int i = 0; i < n && got == i; i++) {
			memset(seen, 0, (size_t)m);
			got += augment(i, m, ok, match, seen);
		}
		if (got == n) {
			x = v[mid];
			hi = mid - 1;
		} else {
			lo = mid + 1;
		}
	}
	free(v);
	free(ok);
	free(seen);
	free(match);
	return x;
}

/* ---- when it applies ----------------------------------------------------- */

/* Where peak_temp, wear and moves stand in the policy's order (-1 when
 * it has none). */
static void crit_positions(const tm_problem *pb, int *kp, int *kw, int *km)
{
	*kp = *kw = *km = -1;
	for (int k = 0; k < pb->ncrit; k++)
		if (pb->crit[k] == TM_CRIT_PEAK)
			*kp = k;
		else if (pb->crit[k] == TM_CRIT_WEAR)
			*kw = k;
		else if (pb->crit[k] == TM_CRIT_MOVES)
			*km = k;
}

/* Every hop and every link inside a host costs the same wherever it runs,
 * NVLink joins every pair of a host's GPUs when tensor-parallel groups
 * need it, every rank fits every GPU, no cap or move limit, time first and
 * temperature (if asked) before moves, torchrun's placement the reference,
 * no coupling between GPUs. */
bool tm_host_decomposable(const tm_problem *pb)
{
	const tm_policy *pol = pb->pol;
	double in_bw = NAN, N = pb->nnodes, U = pb->nusable;
	double K = (double)pb->nproc / pb->nmember;
	int kp = -1, kw = -1, km = -1;

	crit_positions(pb, &kp, &kw, &km);
	/* replan's reference (a previous plan, maybe with GPUs gone) and
	 * move prices are the direct program's business; so is an expert-
	 * parallel all-to-all, which ties replicas' instance times together
	 * (the decomposition times each replica on its own) */
	/* neighbours that heat each other make a GPU's temperature depend on
	 * the whole host's placement, not on its own rank alone: that is the
	 * direct program's business too, as is a cap on the time */
	if (pb->ref_custom || pb->crit[0] != TM_CRIT_TIME || tm_has_a2a(pb) ||
	    pb->coupled || isfinite(pb->time_cap_ms) ||
	    (kp >= 0 && kp > km) || (kw >= 0 && (kw > km || kw < kp)) ||
	    pol->pp_nvlink ||
	    !isnan(pol->max_temp_c) || pol->max_moves >= 0 ||
	    !tm_instances_in_nodes(pb))
		return false;
	/* the time bound's assignments, per value of the bottleneck, must
	 * stay affordable whatever the input */
	if (U > MAX_HOSTS || (pb->npp + 2.0) * pb->nrep *
	    (N * U * K * K * K + N * U * U) > MAX_WORK)
		return false;
	for (int u = 0; u < pb->nusable; u++) {
		int h = pb->usable[u], first = pb->host_first[h];
		const tm_node *nd = &pb->c->nodes[h];
		for (int i = 0; i < nd->ngpus; i++) {
			for (int j = 0; j < nd->ngpus; j++) {
				if (i == j)
					continue;
				if (isnan(in_bw))
					in_bw = nd->bw[i * nd->ngpus + j];
				if (nd->bw[i * nd->ngpus + j] != in_bw)
					return false;
				if (pol->tp_nvlink && pb->job->size[TM_TP] > 1 &&
				    !tm_nvlink(pb, first + i, first + j))
					return false;
			}
			for (int s = 0; s < pb->npp; s++)
				if (!tm_fits(pb, pb->inst_rank[s * pb->nmember],
				             first + i))
					return false;
		}
	}
	return true;
}

/* Does every pair of usable hosts have the same bandwidth? Then every hop
 * costs the same wherever it runs. */
static bool net_uniform(const tm_problem *pb)
{
	double lo, hi;
	return !tm_net_range(pb, &lo, &hi) || lo == hi;
}

/* ---- the decomposition's tables ------------------------------------------ */

/* Flat GPUs by increasing derate, ties by number; ctx is the problem. */
static int cmp_gpu_derate(const void *x, const void *y, void *ctx)
{
	const double *derate = ((const tm_problem *)ctx)->derate;
	int g = *(const int *)x, h = *(const int *)y;
	if (derate[g] != derate[h])
		return derate[g] < derate[h] ? -1 : 1;
	return g - h;
}

/* Instances (d·npp + s) by decreasing work; ties by replica, then stage.
 * ctx is the problem. */
static int cmp_inst_work(const void *x, const void *y, void *ctx)
{
	const tm_problem *pb = ctx;
	int i = *(const int *)x, j = *(const int *)y;
	double wi = pb->work[i % pb->npp];
	double wj = pb->work[j % pb->npp];
	if (wi != wj)
		return wi > wj ? -1 : 1;
	return i - j;
}

static void hd_free(hd *H)
{
	free(H->host);
	free(H->refhost);
	free(H->sg);
	free(H->a);
	free(H->inst);
	free(H->hops);
	free(H->bn);
}

static void hd_init(hd *H, const tm_problem *pb)
{
	int *fill;

	memset(H, 0, sizeof *H);
	H->pb = pb;
	H->N = pb->nnodes;
	H->U = pb->nusable;
	H->nm = pb->nmember;
	H->K = pb->nproc / pb->nmember;
	H->npp = pb->npp;
	H->nrep = pb->nrep;
	H->m = pb->job->microbatches;
	H->v = pb->job->vpp;
	H->hops_exact = net_uniform(pb);
	H->host = xmalloc(sizeof(int) * (size_t)H->U);
	H->G = INT32_MAX;
	for (int u = 0; u < H->U; u++) {
		H->host[u] = pb->usable[u];
		if (pb->c->nodes[H->host[u]].ngpus < H->G)
			H->G = pb->c->nodes[H->host[u]].ngpus;
	}
	/* hosts of equal GPU counts (or a single node rank, whose host may
	 * hold more): the first G GPUs by derate of each host are its GPUs */
	H->sg = xmalloc(sizeof(int) * (size_t)(H->U * H->G));
	H->a = xmalloc(sizeof(double) * (size_t)(H->U * H->K));
	H->dmin = INFINITY;
	for (int u = 0; u < H->U; u++) {
		int first = pb->host_first[H->host[u]];
		int ng = pb->c->nodes[H->host[u]].ngpus;
		int *all = xmalloc(sizeof(int) * (size_t)ng);
		for (int i = 0; i < ng; i++)
			all[i] = first + i;
		tm_sort(all, (size_t)ng, sizeof(int), cmp_gpu_derate,
		        (void *)pb);
		memcpy(&H->sg[u * H->G], all, sizeof(int) * (size_t)H->G);
		for (int k = 0; k < H->K; k++)
			H->a[u * H->K + k] = pb->derate[all[(k + 1) * H->nm - 1]];
		H->dmin = fmin(H->dmin, pb->derate[all[0]]);
		free(all);
	}
	H->refhost = xmalloc(sizeof(int) * (size_t)H->N);
	for (int n = 0; n < H->N; n++) {
		int h = pb->gpu_host[pb->ref_gpu[n * pb->nproc]];
		for (int u = 0; u < H->U; u++)
			if (H->host[u] == h)
				H->refhost[n] = u;
	}
	H->inst = xmalloc(sizeof(int) * (size_t)(H->N * H->K));
	fill = xcalloc((size_t)H->N, sizeof(int));
	for (int i = 0; i < H->nrep * H->npp; i++) {
		int n = pb->inst_rank[i * H->nm] / pb->nproc;
		H->inst[n * H->K + fill[n]++] = i;
	}
	free(fill);
	for (int n = 0; n < H->N; n++)
		tm_sort(&H->inst[n * H->K], (size_t)H->K, sizeof(int),
		        cmp_inst_work, (void *)pb);
	/* each replica's hops at the least they can cost (exact when every
	 * pair of hosts has the same bandwidth), and the gradient all-reduce
	 * after the flush, the same wherever the ranks run when hops are (0
	 * otherwise, a lower bound) */
	H->hops = xmalloc(sizeof(double) * (size_t)H->nrep);
	tm_replica_hops_lower(pb, H->hops);
	H->hmin = INFINITY;
	for (int d = 0; d < H->nrep; d++) {
		if (H->hops_exact)
			H->hops[d] += tm_allreduce_ms(pb, pb->ref_gpu);
		H->hmin = fmin(H->hmin, H->hops[d]);
	}
	for (int s = 0; s < H->npp; s++)
		H->wsum += pb->work[s];
	/* a node's least bottleneck on a host: its instances, heaviest first,
	 * on the host's slots, best first (nested sets: this order is best) */
	H->bn = xmalloc(sizeof(double) * (size_t)(H->N * H->U));
	for (int n = 0; n < H->N; n++)
		for (int u = 0; u < H->U; u++) {
			double x = 0;
			for (int k = 0; k < H->K; k++)
				x = fmax(x, pb->work[H->inst[n * H->K + k] %
				         H->npp] * H->a[u * H->K + k]);
			H->bn[n * H->U + u] = x;
		}
}

/* ---- time ---------------------------------------------------------------- */

/* The least fill (Σ w_s · derate) of the instances of replicas d0 …
 * d0+k−1 in node n on host u, leaving out their instances of stage ex
 * (ex < 0: none), when every instance of the node needs a slot within X:
 * an assignment of the node's instances to the host's slots in which only
 * those count. */
static double local_fill(const hd *H, int n, int u, int d0, int k, int ex,
                         double X)
{
	int K = H->K;
	double *c = xmalloc(sizeof(double) * (size_t)(K * K)), x;
	for (int i = 0; i < K; i++) {
		int in = H->inst[n * K + i], s = in % H->npp, d = in / H->npp;
		bool counts = d >= d0 && d < d0 + k && s != ex;
		for (int q = 0; q < K; q++) {
			double y = H->pb->work[s] * H->a[u * K + q];
			c[i * K + q] = y > X ? BIG : counts ? y : 0;
		}
	}
	x = lap(K, K, c, NULL);
	free(c);
	return x < INFINITY ? x : BIG;
}

/* The least Σ over nodes of local_fill with every node's bottleneck at
 * most X, over assignments of nodes to hosts; col gets the hosts. */
static double fill_lap(const hd *H, double X, int d0, int k, int ex,
                       int *col)
{
	double *c = xmalloc(sizeof(double) * (size_t)(H->N * H->U)), x;
	for (int n = 0; n < H->N; n++)
		for (int u = 0; u < H->U; u++)
			c[n * H->U + u] = H->bn[n * H->U + u] <= X ?
			    local_fill(H, n, u, d0, k, ex, X) : BIG;
	x = lap(H->N, H->U, c, col);
	free(c);
	return x;
}

/* How many replicas must run an instance at exactly X when no instance
 * may exceed it: per node and host, the fewest instances at X in an
 * assignment within X, spread over as few replicas as can reach X there;
 * then the least, over assignments of nodes to hosts, of the most of any
 * node. *stage gets the only stage that reaches X, or −1. */
static int forced_at(const hd *H, double X, int *stage)
{
	int K = H->K, k;
	double *c = xmalloc(sizeof(double) * (size_t)(K * K));
	double *f = xmalloc(sizeof(double) * (size_t)(H->N * H->U)), x;
	int *reach = xmalloc(sizeof(int) * (size_t)H->nrep);

	*stage = -1;
	for (int s = 0; s < H->npp; s++)
		for (int i = 0; i < H->U * K; i++)
			if (H->pb->work[s] * H->a[i] == X)
				*stage = *stage == -1 || *stage == s ? s : -2;
	if (*stage == -2)
		*stage = -1;
	for (int n = 0; n < H->N; n++)
		for (int u = 0; u < H->U; u++) {
			int most = 0;
			memset(reach, 0, sizeof(int) * (size_t)H->nrep);
			for (int i = 0; i < K; i++) {
				int in = H->inst[n * K + i], s = in % H->npp;
				bool can = false;
				for (int q = 0; q < K; q++) {
					double y = H->pb->work[s] * H->a[u * K + q];
					c[i * K + q] = y > X ? BIG : y == X;
					can = can || y == X;
				}
				if (can && ++reach[in / H->npp] > most)
					most = reach[in / H->npp];
			}
			x = H->bn[n * H->U + u] <= X ? lap(K, K, c, NULL) :
			    INFINITY;
			f[n * H->U + u] = x == INFINITY ? INFINITY : most ?
			                  ceil(x / most) : 0;
		}
	x = bottleneck(H->N, H->U, f);
	k = x == INFINITY ? 0 : (int)x;
	free(c);
	free(f);
	free(reach);
	return k;
}

/* Replicas that no bound can tell apart: the same stages in every node
 * and the same hops. kind[d] is the first such replica. */
static void replica_kinds(const hd *H, int *kind)
{
	for (int d = 0; d < H->nrep; d++) {
		kind[d] = d;
		for (int e = 0; e < d && kind[d] == d; e++) {
			bool same = kind[e] == e && H->hops[e] == H->hops[d];
			for (int i = 0; same && i < H->N * H->K; i++) {
				int in = H->inst[i];
				if (in / H->npp == d) {
					int j = i - i % H->K, hit = 0;
					for (; j < i - i % H->K + H->K; j++)
						hit += H->inst[j] / H->npp == e &&
						       H->inst[j] % H->npp ==
						       in % H->npp;
					same = hit > 0;
				}
			}
			if (same)
				kind[d] = e;
		}
	}
}

typedef struct witness {
	double X;     /* bottleneck */
	int d, k;     /* replicas d … d+k−1 hold it */
	int ex;       /* their stage that does (−1: any) */
	int *col;     /* node → usable host */
} witness;

/* A lower bound on the best iteration time (docs/model.md, section 10).
 * For a bottleneck X, a replica that holds it takes at least
 *   E1 = (m − 1/v)·X + its hops + its least fill / v
 *   E2 = m·X + its hops + the least fill of its other instances / v,
 * with every node's least bottleneck at most X. When ties force k > 1
 * replicas of one kind to hold X, the slowest of them takes at least their
 * mean: the same with the k replicas' joint least fill divided by k. The
 * least over the values X can take is the bound; w records where. */
static double time_bound(const hd *H, witness *w)
{
	int *kind = xmalloc(sizeof(int) * (size_t)H->nrep), nx = 0;
	double *xs = xmalloc(sizeof(double) * (size_t)(H->npp * H->U * H->K));
	double bstar = bottleneck(H->N, H->U, H->bn), best = INFINITY;
	double free_fill = INFINITY, pace = H->m - 1 / H->v;
	bool one_kind = true;

	replica_kinds(H, kind);
	for (int d = 0; d < H->nrep; d++) {
		one_kind = one_kind && kind[d] == 0;
		if (kind[d] == d)
			free_fill = fmin(free_fill, H->hops[d] + fill_lap(H,
			                 INFINITY, d, 1, -1, NULL) / H->v);
	}
	for (int s = 0; s < H->npp; s++)
		for (int i = 0; i < H->U * H->K; i++) {
			double x = H->pb->work[s] * H->a[i];
			if (x >= bstar)
				xs[nx++] = x;
		}
	qsort(xs, (size_t)nx, sizeof(double), tm_cmp_dbl);
	for (int i = 0; i < nx && pace * xs[i] + free_fill < best; i++) {
		double X = xs[i], e = INFINITY, f;
		int ed = 0, ek = 1, eex = -1, st, k;
		if (i > 0 && xs[i] == xs[i - 1])
			continue;
		{
			double e1 = INFINITY, e2 = INFINITY;
			int d1 = 0, d2 = 0, ex2 = -1;
			for (int d = 0; d < H->nrep; d++) {
				if (kind[d] != d)
					continue;
				f = pace * X + H->hops[d] +
				    fill_lap(H, X, d, 1, -1, NULL) / H->v;
				if (f < e1) {
					e1 = f;
					d1 = d;
				}
				for (int s = 0; s < H->npp; s++) {
					f = H->m * X + H->hops[d] +
					    fill_lap(H, X, d, 1, s, NULL) / H->v;
					if (f < e2) {
						e2 = f;
						d2 = d;
						ex2 = s;
					}
				}
			}
			e = fmax(e1, e2);
			ed = e2 >= e1 ? d2 : d1;
			eex = e2 >= e1 ? ex2 : -1;
		}
		k = one_kind ? forced_at(H, X, &st) : 1;
		if (k > 1) {    /* k replicas of the one kind hold X */
			double ek1, ek2 = -INFINITY;
			ek1 = pace * X + H->hops[0] +
			      fill_lap(H, X, 0, k, -1, NULL) / (k * H->v);
			if (st >= 0)
				ek2 = H->m * X + H->hops[0] +
				      fill_lap(H, X, 0, k, st, NULL) / (k * H->v);
			if (fmax(ek1, ek2) > e) {
				e = fmax(ek1, ek2);
				ed = 0;
				ek = k;
				eex = ek2 > ek1 ? st : -1;
			}
		}
		if (e < best) {
			best = e;
			w->X = X;
			w->d = ed;
			w->k = ek;
			w->ex = eex;
		}
	}
	if (best < INFINITY)
		fill_lap(H, w->X, w->d, w->k, w->ex, w->col);
	free(kind);
	free(xs);
	return best;
}

/* Replica times are compared worst first: a change is better when the
 * sorted times (largest first) are lexicographically smaller. */
static int cmp_desc(const void *x, const void *y)
{
	return tm_cmp_dbl(y, x);
}

static bool leximax_better(double *a, double *b, int n)
{
	qsort(a, (size_t)n, sizeof(double), cmp_desc);
	qsort(b, (size_t)n, sizeof(double), cmp_desc);
	for (int i = 0; i < n; i++) {
		double tol = 1e-12 * fmax(1, fabs(b[i]));
		if (a[i] < b[i] - tol)
			return true;
		if (a[i] > b[i] + tol)
			return false;
	}
	return false;
}

/* A placement as slots: instance i (d·npp + s) in slot slot[i] of host
 * host[i]. */
typedef struct slotplan {
	int *host, *slot;
} slotplan;

static double slot_rep_ms(const hd *H, const slotplan *P, int d)
{
	double sum = 0, mx = 0;
	for (int s = 0; s < H->npp; s++) {
		int i = d * H->npp + s;
		double x = H->pb->work[s] * H->a[P->host[i] * H->K + P->slot[i]];
		sum += x;
		mx = fmax(mx, x);
	}
	return H->hops[d] + sum / H->v + (H->m - 1 / H->v) * mx;
}

static void slot_times(const hd *H, const slotplan *P, double *t)
{
	for (int d = 0; d < H->nrep; d++)
		t[d] = slot_rep_ms(H, P, d);
}

/* Exchanges, while one helps: the slots of two instances of a node, or
 * the hosts of two nodes (slot for slot). */
static void slot_search(const hd *H, slotplan *P, const int *col)
{
	int R = H->nrep, *hostof = xmalloc(sizeof(int) * (size_t)H->N);
	double *cur = xmalloc(sizeof(double) * (size_t)R);
	double *t = xmalloc(sizeof(double) * (size_t)R);
	double *c1 = xmalloc(sizeof(double) * (size_t)R);
	bool improved = true;

	memcpy(hostof, col, sizeof(int) * (size_t)H->N);
	for (int pass = 0; improved && pass < 100; pass++) {
		improved = false;
		for (int n = 0; n < H->N; n++)
			for (int x = 0; x < H->K; x++)
				for (int y = x + 1; y < H->K; y++) {
					int i = H->inst[n * H->K + x];
					int j = H->inst[n * H->K + y], tmp;
					slot_times(H, P, cur);
					tmp = P->slot[i];
					P->slot[i] = P->slot[j];
					P->slot[j] = tmp;
					slot_times(H, P, t);
					memcpy(c1, cur, sizeof(double) * (size_t)R);
					if (leximax_better(t, c1, R)) {
						improved = true;
						continue;
					}
					P->slot[j] = P->slot[i];
					P->slot[i] = tmp;
				}
		for (int n1 = 0; H->hops_exact && n1 < H->N; n1++)
			for (int n2 = n1 + 1; n2 < H->N; n2++) {
				int h1 = hostof[n1], h2 = hostof[n2];
				slot_times(H, P, cur);
				for (int k = 0; k < H->K; k++) {
					P->host[H->inst[n1 * H->K + k]] = h2;
					P->host[H->inst[n2 * H->K + k]] = h1;
				}
				slot_times(H, P, t);
				memcpy(c1, cur, sizeof(double) * (size_t)R);
				if (leximax_better(t, c1, R)) {
					hostof[n1] = h2;
					hostof[n2] = h1;
					improved = true;
					continue;
				}
				for (int k = 0; k < H->K; k++) {
					P->host[H->inst[n1 * H->K + k]] = h1;
					P->host[H->inst[n2 * H->K + k]] = h2;
				}
			}
	}
	free(hostof);
	free(cur);
	free(t);
	free(c1);
}

/* The placement the bound's witness suggests: its hosts; in every node,
 * the least fill of the witness's replicas in every node (their instance
 * at X on a worse slot, the others' instances after them), within X; then
 * the exchanges of slot_search. */
static void time_build(const hd *H, const witness *w, int *flat)
{
#define PRIORITY(i) ((i) / H->npp >= w->d && (i) / H->npp < w->d + w->k)
	int ni = H->nrep * H->npp, K = H->K;
	slotplan P;
	double *c = xmalloc(sizeof(double) * (size_t)(K * K));
	int *col = xmalloc(sizeof(int) * (size_t)K);

	P.host = xmalloc(sizeof(int) * (size_t)ni);
	P.slot = xmalloc(sizeof(int) * (size_t)ni);
	for (int n = 0; n < H->N; n++) {
		int u = w->col[n];
		for (int x = 0; x < K; x++) {
			int i = H->inst[n * K + x], s = i % H->npp;
			for (int q = 0; q < K; q++) {
				double y = H->pb->work[s] * H->a[u * K + q];
				c[x * K + q] = y > w->X ? BIG : !PRIORITY(i) ?
				    1e-6 * y : s == w->ex ? -1e-6 * y : y;
			}
		}
		if (lap(K, K, c, col) == INFINITY)   /* cannot happen */
			for (int x = 0; x < K; x++)
				col[x] = x;
		for (int x = 0; x < K; x++) {
			P.host[H->inst[n * K + x]] = u;
			P.slot[H->inst[n * K + x]] = col[x];
		}
	}
	slot_search(H, &P, w->col);
	for (int i = 0; i < ni; i++)
		for (int q = 0; q < H->nm; q++)
			flat[H->pb->inst_rank[i * H->nm + q]] =
				H->sg[P.host[i] * H->G + P.slot[i] * H->nm + q];
	free(P.host);
	free(P.slot);
	free(c);
	free(col);
#undef PRIORITY
}

/* ---- peak temperature and moves ------------------------------------------ */

/* The least X such that node n's ranks have distinct GPUs of host u with
 * val[s·ngpu + g] ≤ X (val grows with the work of s on every GPU, so the
 * sets nest: Hall's condition on the heaviest stages first). */
static double node_hall(const hd *H, int n, int u, const double *val)
{
	const tm_problem *pb = H->pb;
	int first = pb->host_first[H->host[u]];
	int ng = pb->c->nodes[H->host[u]].ngpus, need = 0;
	double *v = xmalloc(sizeof(double) * (size_t)ng), x = -INFINITY;
	for (int k = 0; k < H->K; k++) {
		int s = H->inst[n * H->K + k] % H->npp;
		need += H->nm;
		if (k + 1 < H->K && H->inst[n * H->K + k + 1] % H->npp == s)
			continue;   /* count a stage's instances together */
		for (int i = 0; i < ng; i++)
			v[i] = val[(size_t)s * pb->ngpu + first + i];
		qsort(v, (size_t)ng, sizeof(double), tm_cmp_dbl);
		x = fmax(x, v[need - 1]);
	}
	free(v);
	return x;
}

/* Node n's ranks on GPUs of host u with val ≤ X: instances heaviest
 * first, each on the fastest free GPUs it may use. Any choice works for
 * the lighter ones, whose sets contain the heavier ones'. */
static bool node_place(const hd *H, int n, int u, const double *val,
                       double X, int *flat)
{
	const tm_problem *pb = H->pb;
	int first = pb->host_first[H->host[u]];
	int ng = pb->c->nodes[H->host[u]].ngpus;
	int *order = xmalloc(sizeof(int) * (size_t)ng);
	bool *used = xcalloc((size_t)ng, 1), ok = true;

	for (int i = 0; i < ng; i++)
		order[i] = first + i;
	tm_sort(order, (size_t)ng, sizeof(int), cmp_gpu_derate, (void *)pb);
	for (int k = 0; k < H->K && ok; k++) {
		int in = H->inst[n * H->K + k], s = in % H->npp;
		for (int q = 0; q < H->nm && ok; q++) {
			int i = 0;
			while (i < ng && (used[i] ||
			       val[(size_t)s * pb->ngpu + order[i]] > X))
				i++;
			if (i == ng) {
				ok = false;
				break;
			}
			used[i] = true;
			flat[pb->inst_rank[in * H->nm + q]] = order[i];
		}
	}
	free(order);
	free(used);
	return ok;
}

/* Exchanges of two ranks of one pipeline rank inside a node: every GPU
 * keeps the same work, so temperatures at the reference time and every
 * per-GPU limit stay; made while the replicas' times improve and, with
 * keep_moves, the moves do not grow. */
static void flat_search(const hd *H, int *flat, bool keep_moves)
{
	const tm_problem *pb = H->pb;
	int R = H->nrep;
	double *cur = xmalloc(sizeof(double) * (size_t)R);
	double *t = xmalloc(sizeof(double) * (size_t)R);
	double *c1 = xmalloc(sizeof(double) * (size_t)R);
	double *c2 = xmalloc(sizeof(double) * (size_t)R);
	bool improved = true;

	for (int d = 0; d < R; d++)
		cur[d] = tm_rep_ms(pb, flat, d);
	for (int pass = 0; improved && pass < 100; pass++) {
		improved = false;
		for (int r1 = 0; r1 < pb->nranks; r1++) {
			int end = (r1 / pb->nproc + 1) * pb->nproc;
			for (int r2 = r1 + 1; r2 < end; r2++) {
				int d1 = pb->rank_rep[r1], d2 = pb->rank_rep[r2];
				int g1 = flat[r1], g2 = flat[r2], before, after;
				if (pb->rank_stage[r1] != pb->rank_stage[r2])
					continue;
				before = (g1 != pb->ref_gpu[r1]) +
				         (g2 != pb->ref_gpu[r2]);
				after = (g2 != pb->ref_gpu[r1]) +
				        (g1 != pb->ref_gpu[r2]);
				if (keep_moves && after > before)
					continue;
				flat[r1] = g2;
				flat[r2] = g1;
				memcpy(t, cur, sizeof(double) * (size_t)R);
				t[d1] = tm_rep_ms(pb, flat, d1);
				t[d2] = tm_rep_ms(pb, flat, d2);
				memcpy(c1, t, sizeof(double) * (size_t)R);
				memcpy(c2, cur, sizeof(double) * (size_t)R);
				if (leximax_better(c1, c2, R)) {
					memcpy(cur, t, sizeof(double) * (size_t)R);
					improved = true;
					continue;
				}
				flat[r1] = g1;
				flat[r2] = g2;
			}
		}
	}
	free(cur);
	free(t);
	free(c1);
	free(c2);
}

/* The fewest moves of node n on its identity host u, each rank on a GPU
 * with val < INFINITY; a tiny second term puts heavy work on fast GPUs.
 * Writes the GPUs to flat when given. Returns INFINITY if impossible. */
static double node_moves(const hd *H, int n, int u, const double *val,
                         int *flat)
{
	const tm_problem *pb = H->pb;
	int first = pb->host_first[H->host[u]], P = pb->nproc;
	int ng = pb->c->nodes[H->host[u]].ngpus;
	double *c = xmalloc(sizeof(double) * (size_t)(P * ng)), x, wmax = 0;
	double dmax = 0, eps = 0.5 / P;
	int *col = xmalloc(sizeof(int) * (size_t)P);

	for (int s = 0; s < H->npp; s++)
		wmax = fmax(wmax, pb->work[s]);
	for (int i = 0; i < ng; i++)
		dmax = fmax(dmax, pb->derate[first + i]);
	for (int q = 0; q < P; q++) {
		int r = n * P + q, s = pb->rank_stage[r];
		for (int i = 0; i < ng; i++) {
			int g = first + i;
			c[q * ng + i] = val[(size_t)s * pb->ngpu + g] == INFINITY ?
			    BIG : (g != pb->ref_gpu[r]) + eps * pb->work[s] *
			    pb->derate[g] / (wmax * dmax);
		}
	}
	x = lap(P, ng, c, col);
	if (x < INFINITY) {
		x = floor(x);
		if (flat)
			for (int q = 0; q < P; q++)
				flat[n * P + q] = first + col[q];
	}
	free(c);
	free(col);
	return x;
}

/* Node n's ranks on GPUs of host u with val < INFINITY, at the least
 * mw·moved + lam·wear: moved counts ranks off their identity GPU (all of
 * them on another host than the identity one), wear the ranks' shares at
 * the reference time (wr, per stage and GPU). A tie term far below both
 * puts heavy work on fast GPUs. Returns the exact value of the assignment
 * found (without the tie term), and through *lo a lower bound on the
 * least value (the tie term's largest total taken off); INFINITY when no
 * assignment avoids the excluded pairs. Writes the GPUs to flat when
 * given. */
static double node_lag(const hd *H, int n, int u, const double *val,
                       const double *wr, double mw, double lam, int *flat,
                       double *lo)
{
	const tm_problem *pb = H->pb;
	int first = pb->host_first[H->host[u]], P = pb->nproc;
	int ng = pb->c->nodes[H->host[u]].ngpus;
	double *c = xmalloc(sizeof(double) * (size_t)(P * ng)), x, wmax = 0;
	double dmax = 0, tie, exact = 0;
	int *col = xmalloc(sizeof(int) * (size_t)P);
	bool home = u == H->refhost[n];

	for (int s = 0; s < H->npp; s++)
		wmax = fmax(wmax, pb->work[s]);
	for (int i = 0; i < ng; i++)
		dmax = fmax(dmax, pb->derate[first + i]);
	/* the tie term stays below a millionth of the coarser of the two
	 * costs' steps, so it only orders equals */
	tie = 1e-6 / P * fmin(mw > 0 ? mw : INFINITY, lam > 0 ? lam * 1e-3 :
	                      INFINITY);
	if (!isfinite(tie))
		tie = 1e-9;
	for (int q = 0; q < P; q++) {
		int r = n * P + q, s = pb->rank_stage[r];
		for (int i = 0; i < ng; i++) {
			int g = first + i;
			size_t k = (size_t)s * pb->ngpu + g;
			c[q * ng + i] = val[k] == INFINITY ? BIG :
			    mw * (home ? g != pb->ref_gpu[r] : 1) + lam * wr[k] +
			    tie * pb->work[s] * pb->derate[g] / (wmax * dmax);
		}
	}
	x = lap(P, ng, c, col);
	if (x < INFINITY) {
		for (int q = 0; q < P; q++) {
			int r = n * P + q, g = first + col[q];
			exact += mw * (home ? g != pb->ref_gpu[r] : 1) +
			         lam * wr[(size_t)pb->rank_stage[r] * pb->ngpu + g];
			if (flat)
				flat[r] = g;
		}
		*lo = x - tie * P;
	} else {
		exact = *lo = INFINITY;
	}
	free(c);
	free(col);
	return exact;
}

/* A placement from node_lag on every (node, host) pair and an assignment
 * of nodes to hosts at the least total; its value exact, *lo a lower
 * bound on the least total. INFINITY when there is none. */
static double lag_place(const hd *H, const double *val, const double *wr,
                        double mw, double lam, int *flat, double *lo)
{
	int N = H->N, U = H->U, *col = xmalloc(sizeof(int) * (size_t)N);
	double *c = xmalloc(sizeof(double) * (size_t)(N * U)), x, l;
	double *ex = xmalloc(sizeof(double) * (size_t)(N * U)), exact = 0;

	for (int n = 0; n < N; n++)
		for (int u = 0; u < U; u++) {
			ex[n * U + u] = node_lag(H, n, u, val, wr, mw, lam, NULL, &l);
			c[n * U + u] = l < INFINITY ? l : BIG;
		}
	x = lap(N, U, c, col);
	*lo = x;
	for (int n = 0; x < INFINITY && n < N; n++) {
		exact += ex[n * U + col[n]];
		node_lag(H, n, col[n], val, wr, mw, lam, flat, &l);
	}
	free(c);
	free(ex);
	free(col);
	return x < INFINITY ? exact : INFINITY;
}

/* The hosts of the nodes in a placement. */
static void hosts_of(const hd *H, const int *flat, int *col)
{
	for (int n = 0; n < H->N; n++) {
		int h = H->pb->gpu_host[flat[n * H->pb->nproc]];
		for (int u = 0; u < H->U; u++)
			if (H->host[u] == h)
				col[n] = u;
	}
}

/* ---- the method ---------------------------------------------------------- */

int tm_solve_host(const tm_problem *pb, const int *warm, double deadline,
                  int *flat, tm_solution *sol)
{
	hd H;
	witness w;
	tm_eval ev;
	size_t tab = (size_t)pb->npp * (size_t)pb->ngpu;
	int N, U, kp = -1, kw = -1, km = -1, *cand, *col, rc = 0;
	double lb, t_best = INFINITY, t_ref, tb, pbound = INFINITY;
	double wbound = INFINITY, *th, *val, *wr, *c;
	bool opt_t, opt_p = true, opt_w = true, opt_m = false;

	hd_init(&H, pb);
	memset(&w, 0, sizeof w);
	N = H.N;
	U = H.U;
	w.col = xmalloc(sizeof(int) * (size_t)N);
	cand = xmalloc(sizeof(int) * (size_t)pb->nranks);
	col = xmalloc(sizeof(int) * (size_t)N);
	c = xmalloc(sizeof(double) * (size_t)(N * U));
	th = xmalloc(sizeof(double) * tab);
	val = xmalloc(sizeof(double) * tab);
	wr = xmalloc(sizeof(double) * tab);

	/* time: the bound, and the better of its placement and warm's */
	lb = time_bound(&H, &w);
	if (lb < INFINITY) {
		time_build(&H, &w, cand);
		t_best = tm_eval_flat(pb, cand, 0, &ev);
		memcpy(flat, cand, sizeof(int) * (size_t)pb->nranks);
	}
	if (warm && tm_eval_flat(pb, warm, 0, &ev) < t_best) {
		t_best = ev.iteration_ms;
		memcpy(flat, warm, sizeof(int) * (size_t)pb->nranks);
	}
	if (t_best == INFINITY) {   /* nothing to start from */
		rc = -1;
		goto out;
	}
	lb = fmin(fmax(lb < INFINITY ? lb : 0, tm_time_lower_bound(pb)),
	          t_best);
	opt_t = t_best <= lb + 1e-9 * (1 + lb);
	t_ref = opt_t ? t_best : lb;
	tb = tm_crit_bound(pb, TM_CRIT_TIME, t_best);
	crit_positions(pb, &kp, &kw, &km);

	/* per stage and GPU: the temperature at t_ref, and whether a rank
	 * of the stage there can keep the time within tb at all (its
	 * instance is at least that slow, the rest at the best derate) */
	for (int s = 0; s < pb->npp; s++)
		for (int g = 0; g < pb->ngpu; g++) {
			double wk = pb->work[s];
			th[(size_t)s * pb->ngpu + g] =
				tm_rank_temp(pb, pb->inst_rank[s * H.nm], g, t_ref);
			wr[(size_t)s * pb->ngpu + g] =
				tm_wear_of(th[(size_t)s * pb->ngpu + g]);
			val[(size_t)s * pb->ngpu + g] =
				H.m * wk * pb->derate[g] + (H.wsum - wk) * H.dmin /
				H.v + H.hmin <= tb ? th[(size_t)s * pb->ngpu + g]
				: INFINITY;
		}

	if (kp > 0) {
		double plb, pk;
		bool ok = true;
		for (int n = 0; n < N; n++)
			for (int u = 0; u < U; u++)
				c[n * U + u] = node_hall(&H, n, u, val);
		plb = bottleneck(N, U, c);
		hosts_of(&H, flat, col);
		for (int n = 0; n < N; n++)
			ok = ok && c[n * U + col[n]] <= plb;
		if (!ok) {
			for (int i = 0; i < N * U; i++)
				c[i] = c[i] <= plb ? H.bn[i] : BIG;
			ok = lap(N, U, c, col) < INFINITY;
		}
		for (int n = 0; ok && n < N; n++)
			ok = node_place(&H, n, col[n], val, plb, cand);
		if (ok) {
			flat_search(&H, cand, false);
			ok = tm_eval_flat(pb, cand, t_ref, &ev) <= tb;
		}
		opt_p = ok;
		if (ok)
			memcpy(flat, cand, sizeof(int) * (size_t)pb->nranks);
		tm_eval_flat(pb, flat, t_ref, &ev);
		pk = ev.peak_ref_c;
		sol->best[kp] = pk;
		pbound = tm_crit_bound(pb, TM_CRIT_PEAK, pk);
		for (size_t i = 0; i < tab; i++)
			if (th[i] > pbound)
				val[i] = INFINITY;
	}

	/* wear: a sum of one share per rank, so the least per node and host
	 * is an assignment, and the least overall one of nodes to hosts */
	if (kw > 0) {
		double wlb, wx = lag_place(&H, val, wr, 0, 1, cand, &wlb);
		opt_w = wx < INFINITY;
		if (opt_w) {
			/* exchanges of ranks of one stage keep every share */
			flat_search(&H, cand, false);
			opt_w = tm_eval_flat(pb, cand, t_ref, &ev) <= tb &&
			        ev.peak_ref_c <= pbound;
		}
		if (opt_w) {
			memcpy(flat, cand, sizeof(int) * (size_t)pb->nranks);
			opt_w = ev.wear_ref <= wlb + 1e-9 * (1 + wlb);
		}
		tm_eval_flat(pb, flat, t_ref, &ev);
		sol->best[kw] = ev.wear_ref;
		wbound = tm_crit_bound(pb, TM_CRIT_WEAR, ev.wear_ref);
	}

	/* moves under a wear bound: Lagrange's relaxation, moves + λ·(wear −
	 * bound), is an assignment again; each λ gives a lower bound on the
	 * fewest moves and a placement, proven when a placement within the
	 * bound meets the best lower bound */
	if (kw > 0) {
		int *best = xmalloc(sizeof(int) * (size_t)pb->nranks);
		double lo_lam = 0, hi_lam = INFINITY, lam = 0, mlb = 0;
		double bestm = INFINITY;
		for (int it = 0; it < 60; it++) {
			double l, x;
			/* the limit ends the search for a proof, not the
			 * placement: the best within the bounds so far stands */
			if (deadline > 0 && tm_now_ms() > deadline) {
				sol->stopped = true;
				break;
			}
			x = lag_place(&H, val, wr, 1, lam, cand, &l);
			if (x == INFINITY)
				break;
			mlb = fmax(mlb, ceil(l - lam * wbound - 1e-6));
			flat_search(&H, cand, true);
			tm_eval_flat(pb, cand, t_ref, &ev);
			if (ev.wear_ref <= wbound && ev.iteration_ms <= tb &&
			    ev.peak_ref_c <= pbound) {
				if (ev.moves < bestm) {
					bestm = ev.moves;
					memcpy(best, cand, sizeof(int) * (size_t)pb->nranks);
				}
				hi_lam = lam;
			} else {
				lo_lam = lam;
			}
			if (bestm <= mlb)
				break;
			lam = hi_lam == INFINITY ? (lam > 0 ? lam * 4 : 1e-3) :
			      lo_lam > 0 ? sqrt(lo_lam * hi_lam) : hi_lam / 4;
			if (hi_lam < INFINITY && hi_lam - lo_lam <= 1e-9 * hi_lam)
				break;
		}
		if (bestm < INFINITY) {
			memcpy(flat, best, sizeof(int) * (size_t)pb->nranks);
			opt_m = bestm <= mlb;
		}
		free(best);
		tm_eval_flat(pb, flat, t_ref, &ev);
		sol->best[km] = ev.moves;
	} else {
	/* moves: the fewest per node and host, then per assignment */
		double mlb;
		for (int n = 0; n < N; n++)
			for (int u = 0; u < U; u++)
				c[n * U + u] = node_hall(&H, n, u, val) == INFINITY ?
				    BIG : u == H.refhost[n] ?
				    fmin(node_moves(&H, n, u, val, NULL), BIG) :
				    pb->nproc;
		mlb = lap(N, U, c, col);
		opt_m = mlb < INFINITY;
		for (int n = 0; opt_m && n < N; n++)
			opt_m = col[n] == H.refhost[n] ?
			        node_moves(&H, n, col[n], val, cand) < INFINITY :
			        node_place(&H, n, col[n], val, DBL_MAX, cand);
		if (opt_m) {
			flat_search(&H, cand, true);
			opt_m = tm_eval_flat(pb, cand, t_ref, &ev) <= tb &&
			        ev.peak_ref_c <= pbound && ev.moves <= mlb;
		}
		if (opt_m)
			memcpy(flat, cand, sizeof(int) * (size_t)pb->nranks);
		tm_eval_flat(pb, flat, t_ref, &ev);
		sol->best[km] = ev.moves;
	}

	snprintf(sol->status, sizeof sol->status, "%s",
	         opt_t && opt_p && opt_w && opt_m ? "optimal" : "feasible");
	snprintf(sol->formulation, sizeof sol->formulation,
	         "host decomposition");
	sol->best[0] = t_best;
	sol->t_ref_ms = t_ref;
	sol->objective = t_best;
	sol->bound = lb;
	sol->gap = t_best > 0 ? (t_best - lb) / t_best : 0;
	if (sol->gap < 1e-9)
		sol->gap = 0;
out:
	hd_free(&H);
	free(w.col);
	free(cand);
	free(col);
	free(c);
	free(th);
	free(val);
	free(wr);
	return rc;
}
