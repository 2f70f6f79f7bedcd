/*
 * bound.c — lower bounds on the best iteration time and the lowest peak
 * temperature, cheap enough for any cluster size. They prove how far a
 * placement found by a heuristic (or by a solver stopped at its time limit)
 * can be from the optimum; docs/model.md, "Bounds", derives them.
 *
 * Both rest on one fact. Drop every constraint but "one rank per GPU" and
 * ask whether all ranks fit under a threshold X, where rank r may use GPU g
 * when its value v(r, g) <= X. When v grows with the work of the rank's
 * pipeline rank on every GPU, the GPUs each rank may use are nested:
 * a heavier rank's set lies inside a lighter rank's. For nested sets Hall's
 * condition needs checking only for the k heaviest classes of ranks: the
 * c_k ranks of the k heaviest pipeline ranks need c_k GPUs usable by the
 * k-th heaviest. So the least feasible X is the largest, over k, of the
 * c_k-th smallest v(s_k, g) over the GPUs.
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
				int e = (d + 1) % pb->nrep;
				int a = pb->inst_rank[(d * pb->npp + s) * pb->nmember + q];
				int b = pb->inst_rank[(e * pb->npp + s) * pb->nmember + q];
				lb = fmax(lb, a / pb->nproc == b / pb->nproc ? same : cross);
			}
	}
	return lb;
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
	double lb_a = 0, *hops;

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
	for (int s = 0; s < pb->npp; s++)
		fill += pb->work[s] * dmin / v;
	hops = xmalloc(sizeof(double) * (size_t)pb->nrep);
	tm_replica_hops_lower(pb, hops);
	for (int d = 0; d < pb->nrep; d++) {
		double slowest = 0;
		if (hops[d] < hmin)
			hmin = hops[d];
		for (int s = 0; s < pb->npp; s++)
			if (pb->work[s] * dmin > slowest)
				slowest = pb->work[s] * dmin;
		if (fill + hops[d] + (m - 1 / v) * slowest > lb_a)
			lb_a = fill + hops[d] + (m - 1 / v) * slowest;
	}
	free(gpus);
	free(hops);
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
