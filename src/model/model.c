/*
 * model.c — the prediction model of docs/model.md, applied to one placement:
 * stage-instance times (slowest GPU sets the pace), activation transfers,
 * the 1F1B iteration time with fill/drain and the bottleneck stage, data
 * parallel replicas waiting for the slowest, the ring all-reduce of their
 * gradients after them, and each GPU's busy fraction, power and
 * temperature (from the per-GPU coefficients problem.c derives from the
 * profile). Also the constraint check every solver shares.
 * The ILP in solve/ilp.c encodes exactly these formulas; tests hold the two
 * to the same numbers.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* Forward activation plus backward gradient of one microbatch, in ms. */
double tm_hop_ms(const tm_problem *pb, double act_mib, int g, int h)
{
	return 2.0 * act_mib * 1048576.0 / (tm_bw(pb, g, h) * 1e6);
}

int tm_tied_reps(const tm_problem *pb, int rep, int stage, const int **reps)
{
	const int *g = &pb->ep_reps[pb->ep_group[rep] * pb->nep];
	int k = 0;
	if (pb->nep > 1 && pb->a2a[stage] > 0) {
		*reps = g;
		return pb->nep;
	}
	while (g[k] != rep)   /* rep is in its own group */
		k++;
	*reps = &g[k];
	return 1;
}

double tm_inst_derate(const tm_problem *pb, const int *flat, int rep,
                      int stage)
{
	const int *reps;
	int n = tm_tied_reps(pb, rep, stage, &reps);
	double d = 0;
	for (int e = 0; e < n; e++) {
		const int *m = &pb->inst_rank[(reps[e] * pb->npp + stage) *
		                              pb->nmember];
		for (int k = 0; k < pb->nmember; k++)
			if (pb->derate[flat[m[k]]] > d)
				d = pb->derate[flat[m[k]]];
	}
	return d;
}

/* One piece of an all-to-all of a2a_mib: the 1/ep share one rank sends
 * one peer, from GPU g to GPU h, in ms. */
double tm_a2a_piece_ms(const tm_problem *pb, double a2a_mib, int g, int h)
{
	return a2a_mib / pb->nep * 1048576.0 / (tm_bw(pb, g, h) * 1e6);
}

/* The all-to-all of pipeline rank s in expert-parallel group o, per
 * microbatch: each rank sends a 1/ep share of its a2a MiB to each peer of
 * the same member position, one piece after another over its links; the
 * exchange lasts as long as its slowest sender (docs/model.md, 4). */
double tm_a2a_ms(const tm_problem *pb, const int *flat, int o, int s)
{
	const int *reps = &pb->ep_reps[o * pb->nep];
	double a = pb->a2a[s], x = 0;
	if (pb->nep < 2 || !(a > 0))
		return 0;
	for (int q = 0; q < pb->nmember; q++)
		for (int i = 0; i < pb->nep; i++) {
			int r = pb->inst_rank[(reps[i] * pb->npp + s) *
			                      pb->nmember + q];
			double sum = 0;
			for (int k = 0; k < pb->nep; k++)
				if (k != i)
					sum += tm_a2a_piece_ms(pb, a, flat[r], flat[
					       pb->inst_rank[(reps[k] * pb->npp + s) *
					                     pb->nmember + q]]);
			x = fmax(x, sum);
		}
	return x;
}

double tm_alltoall_max_ms(const tm_problem *pb, const int *flat)
{
	double x = 0;
	for (int o = 0; pb->nep > 1 && o < pb->nrep / pb->nep; o++)
		for (int s = 0; s < pb->npp; s++)
			x = fmax(x, tm_a2a_ms(pb, flat, o, s));
	return x;
}

bool tm_has_a2a(const tm_problem *pb)
{
	return pb->nep > 1;
}

/* A stage instance's time per microbatch: its compute at its slowest GPU;
 * at a stage with an all-to-all, every instance of the expert-parallel
 * group waits for the slowest of them at each exchange (tm_inst_derate
 * takes the group's), and the exchange adds its own time. */
double tm_inst_ms(const tm_problem *pb, const int *flat, int rep, int stage)
{
	double c = pb->work[stage] * tm_inst_derate(pb, flat, rep, stage);
	if (pb->nep < 2 || !(pb->a2a[stage] > 0))
		return c;
	return c + tm_a2a_ms(pb, flat, pb->ep_group[rep], stage);
}

double tm_hop_inst_ms(const tm_problem *pb, const int *flat, int rep,
                      const tm_hop *hop)
{
	const int *a = &pb->inst_rank[(rep * pb->npp + hop->from) * pb->nmember];
	const int *b = &pb->inst_rank[(rep * pb->npp + hop->to) * pb->nmember];
	double c = 0;
	/* two instances on two hosts: every member pair crosses the same
	 * network, so one pair gives the time */
	if (pb->inst_in_node &&
	    pb->gpu_host[flat[a[0]]] != pb->gpu_host[flat[b[0]]])
		return tm_hop_ms(pb, hop->act_mib, flat[a[0]], flat[b[0]]);
	for (int k = 0; k < pb->nmember; k++) {
		double x = tm_hop_ms(pb, hop->act_mib, flat[a[k]], flat[b[k]]);
		if (x > c)
			c = x;
	}
	return c;
}

/* The time of data-parallel replica d's pipeline (docs/model.md, 4). */
double tm_rep_ms(const tm_problem *pb, const int *flat, int d)
{
	double v = pb->job->vpp, m = pb->job->microbatches;
	double sum = 0, mx = 0, comm = 0;
	for (int s = 0; s < pb->npp; s++) {
		double x = tm_inst_ms(pb, flat, d, s);
		sum += x;
		if (x > mx)
			mx = x;
	}
	for (int k = 0; k < pb->nhops; k++)
		comm += tm_hop_inst_ms(pb, flat, d, &pb->hops[k]);
	return sum / v + comm + (m - 1.0 / v) * mx;
}

double tm_grad_mib(const tm_problem *pb, int s)
{
	double g = 0;
	for (int j = s; j < pb->job->nstages; j += pb->npp)
		g += pb->job->stages[j].grad_mib;
	return g;
}

/* A ring all-reduce of grad_mib over dp ranks moves 2·(dp−1)/dp of it
 * through every edge; this is that at the edge g → h's bandwidth. */
double tm_ring_edge_ms(const tm_problem *pb, double grad_mib, int g, int h)
{
	double dp = pb->nrep;
	return 2.0 * (dp - 1) / dp * grad_mib * 1048576.0 /
	       (tm_bw(pb, g, h) * 1e6);
}

/* The rings of (pipeline rank s, member q): replica d sends to d+1 mod dp.
 * A ring runs at its slowest edge; the all-reduce takes the slowest ring. */
int tm_ring_rank(const tm_problem *pb, int r, int step)
{
	int dp = pb->nrep, d = ((pb->rank_rep[r] + step) % dp + dp) % dp;
	return pb->inst_rank[(d * pb->npp + pb->rank_stage[r]) * pb->nmember +
	                     pb->rank_member[r]];
}

double tm_allreduce_ms(const tm_problem *pb, const int *flat)
{
	double a = 0;
	if (pb->nrep < 2)
		return 0;
	for (int s = 0; s < pb->npp; s++) {
		double grad = tm_grad_mib(pb, s);
		if (!(grad > 0))
			continue;
		for (int q = 0; q < pb->nmember; q++)
			for (int d = 0; d < pb->nrep; d++) {
				int r = pb->inst_rank[(d * pb->npp + s) * pb->nmember + q];
				int t = tm_ring_rank(pb, r, 1);
				a = fmax(a, tm_ring_edge_ms(pb, grad, flat[r], flat[t]));
			}
	}
	return a;
}

/* ---- each GPU's busy fraction, temperature and power ------------------------
 * A GPU runs at its waiting level plus its slope times the share of the
 * iteration it computes for its rank; the coefficients per GPU come from
 * the profile (problem.c). tm_gpu_temp and tm_gpu_power are the one place
 * that says so: the bounds, the simulator and the heuristics ask them. */

double tm_gpu_temp(const tm_problem *pb, int g, double busy)
{
	return pb->t_wait[g] + busy * pb->t_slope[g];
}

double tm_gpu_power(const tm_problem *pb, int g, double busy)
{
	return pb->p_wait[g] + busy * pb->p_slope[g];
}

/* The fraction of the iteration the GPU spends computing for its rank. */
double tm_rank_busy(const tm_problem *pb, int rank, int g, double t_iter)
{
	double busy = pb->job->microbatches * pb->work[pb->rank_stage[rank]] *
	              pb->derate[g] / t_iter;
	return busy > 1 ? 1 : busy;
}

double tm_rank_temp(const tm_problem *pb, int rank, int g, double t_iter)
{
	return tm_gpu_temp(pb, g, tm_rank_busy(pb, rank, g, t_iter));
}

double tm_rank_power(const tm_problem *pb, int rank, int g, double t_iter)
{
	return tm_gpu_power(pb, g, tm_rank_busy(pb, rank, g, t_iter));
}

/* ---- the heat of the neighbours --------------------------------------------
 * With a coupling in the profile a GPU's temperature depends on what the
 * other GPUs of its host draw: a rank's power, or, where the job leaves a
 * GPU unused, its idle (or background) power. A host holds one node rank,
 * so the ranks on a GPU's neighbours are among its own node rank's.
 * tm_rank_temp_in is the one place that adds that heat; without coupling
 * it is tm_rank_temp's own level. */

/* The power GPU h draws in placement flat, where h is on the host of node
 * rank n. */
static double power_at(const tm_problem *pb, const int *flat, int n, int h,
                       double t)
{
	for (int q = n * pb->nproc; q < (n + 1) * pb->nproc; q++)
		if (flat[q] == h)
			return tm_rank_power(pb, q, h, t);
	return pb->p_unused[h];
}

double tm_host_power_in(const tm_problem *pb, const int *flat, int r, int h,
                        double t)
{
	return power_at(pb, flat, r / pb->nproc, h, t);
}

/* The joint fit's row of rank r in placement flat at time t: 1, its
 * GPU's power, each source's power above its idle power (k numbers). */
static void fit_row(const tm_problem *pb, const int *flat, int r, double t,
                    double *x)
{
	int g = flat[r], n = r / pb->nproc, k = 2;
	x[0] = 1;
	x[1] = tm_rank_power(pb, r, g, t);
	for (int j = pb->cp_first[g]; j < pb->cp_first[g + 1]; j++) {
		int h = pb->cp_src[j];
		x[k++] = power_at(pb, flat, n, h, t) - pb->p_idle[h];
	}
}

double tm_fit_spread_in(const tm_problem *pb, const int *fa, int ra,
                        double ta, const int *fb, int rb, double tb)
{
	int g = fa[ra], k;
	double *x, *y, q = 0;
	const double *V;
	if (!pb->coupled || !pb->cp_cov_at || pb->cp_cov_at[g] < 0)
		return NAN;
	k = 2 + pb->cp_first[g + 1] - pb->cp_first[g];
	V = &pb->cp_cov[pb->cp_cov_at[g]];
	x = xmalloc(sizeof(double) * (size_t)k * 2);
	y = x + k;
	fit_row(pb, fa, ra, ta, x);
	if (fb) {
		fit_row(pb, fb, rb, tb, y);
		for (int i = 0; i < k; i++)
			x[i] -= y[i];
	}
	for (int i = 0; i < k; i++)
		for (int j = 0; j < k; j++)
			q += x[i] * V[(size_t)i * (size_t)k + (size_t)j] * x[j];
	free(x);
	return isfinite(q) ? pb->t_fit_sd[g] * sqrt(fmax(0, q)) : NAN;
}

double tm_rank_heat_in(const tm_problem *pb, const int *flat, int r,
                       double t, double *sd)
{
	int g = flat[r], n = r / pb->nproc;
	double x = 0, v = 0;
	for (int k = pb->coupled ? pb->cp_first[g] : 0;
	     pb->coupled && k < pb->cp_first[g + 1]; k++) {
		int h = pb->cp_src[k];
		double dp = power_at(pb, flat, n, h, t) - pb->p_idle[h];
		if (!isfinite(dp))
			continue;
		x += pb->cp_c[k] * dp;
		v += pb->cp_sd[k] * dp * (pb->cp_sd[k] * dp);
	}
	if (sd) {
		/* the fit's coefficients with their correlations where its
		 * points give them; else each coupling's own uncertainty */
		double f = tm_fit_spread_in(pb, flat, r, t, NULL, 0, 0);
		*sd = isfinite(f) ? f : sqrt(v);
	}
	return x;
}

double tm_rank_temp_in(const tm_problem *pb, const int *flat, int r,
                       double t)
{
	return tm_rank_temp(pb, r, flat[r], t) +
	       tm_rank_heat_in(pb, flat, r, t, NULL);
}

/* ---- the evaluation of a placement --------------------------------------- */

/* Returns the iteration time and fills ev (temperatures at the placement's
 * own iteration time, and at t_ref when t_ref > 0). */
double tm_eval_flat(const tm_problem *pb, const int *flat, double t_ref,
                    tm_eval *ev)
{
	double t = 0;

	memset(ev, 0, sizeof *ev);
	for (int d = 0; d < pb->nrep; d++)
		t = fmax(t, tm_rep_ms(pb, flat, d));
	/* the gradient all-reduce follows the slowest pipeline's flush */
	t += tm_allreduce_ms(pb, flat);
	ev->iteration_ms = t;
	ev->peak_temp_c = ev->peak_ref_c = -INFINITY;
	for (int r = 0; r < pb->nranks; r++) {
		double x = tm_rank_temp_in(pb, flat, r, t);
		if (x > ev->peak_temp_c)
			ev->peak_temp_c = x;
		ev->wear += tm_wear_of(x);
		if (t_ref > 0) {
			x = tm_rank_temp_in(pb, flat, r, t_ref);
			if (x > ev->peak_ref_c)
				ev->peak_ref_c = x;
			ev->wear_ref += tm_wear_of(x);
		}
		ev->moves += flat[r] != pb->ref_gpu[r];
	}
	if (!(t_ref > 0)) {
		ev->peak_ref_c = ev->peak_temp_c;
		ev->wear_ref = ev->wear;
	}
	ev->cost_ms = t + pb->move_cost_ms * ev->moves;
	return t;
}

double tm_wear_of(double t)
{
	return exp2((t - 50) / 10);
}

double tm_crit_value(const tm_eval *ev, int crit)
{
	switch (crit) {
	case TM_CRIT_TIME: return ev->cost_ms;
	case TM_CRIT_PEAK: return ev->peak_ref_c;
	case TM_CRIT_WEAR: return ev->wear_ref;
	default: return ev->moves;
	}
}

/* The largest value of a criterion still "as good as" best: within the
 * policy's relative tolerance, plus a hair for floating-point noise. */
double tm_crit_bound(const tm_problem *pb, int crit, double best)
{
	double tol = pb->pol->tolerance;
	if (crit == TM_CRIT_MOVES)
		return floor(best * (1 + tol) + 1e-9);
	return best + fabs(best) * tol + 1e-9 * (1 + fabs(best));
}

int tm_eval_better(const tm_problem *pb, const tm_eval *a, const tm_eval *b)
{
	for (int k = 0; k < pb->ncrit; k++) {
		int c = pb->crit[k];
		double x = tm_crit_value(a, c), y = tm_crit_value(b, c);
		if (x > tm_crit_bound(pb, c, y))
			return 0;
		if (y > tm_crit_bound(pb, c, x))
			return 1;
	}
	for (int k = 0; k < pb->ncrit; k++) {
		int c = pb->crit[k];
		double x = tm_crit_value(a, c), y = tm_crit_value(b, c);
		if (x != y)
			return x < y;
	}
	return 0;
}

static bool nvlink_pairs(const tm_problem *pb, const int *flat,
                         const int *a, const int *b, int n, bool same,
                         char *why, size_t len, const char *what)
{
	for (int i = 0; i < n; i++)
		for (int k = same ? i + 1 : i; k < (same ? n : i + 1); k++) {
			int g = flat[a[i]], h = flat[b[k]];
			if (!tm_nvlink(pb, g, h)) {
				const tm_node *ng = &pb->c->nodes[pb->gpu_host[g]];
				const tm_node *nh = &pb->c->nodes[pb->gpu_host[h]];
				snprintf(why, len, "%s: ranks %d and %d sit on %s GPU %d and "
				         "%s GPU %d, which are not joined by NVLink", what,
				         a[i], b[k], ng->host, ng->gpus[pb->gpu_pos[g]].index,
				         nh->host, nh->gpus[pb->gpu_pos[h]].index);
				return false;
			}
		}
	return true;
}

/* Checks the policy's constraints and torchrun's form on a placement; the
 * temperature cap is judged at t_ref, and skipped when t_ref is 0. */
bool tm_constraints_ok(const tm_problem *pb, const int *flat, double t_ref,
                       char *why, size_t len)
{
	const tm_policy *pol = pb->pol;
	int tp = pb->job->size[TM_TP];
	char buf[64];
	unsigned char *used = xcalloc((size_t)pb->ngpu, 1);
	int *host_node = xmalloc(sizeof(int) * (size_t)pb->nhost);
	bool ok = true;

	for (int h = 0; h < pb->nhost; h++)
		host_node[h] = -1;
	for (int r = 0; r < pb->nranks && ok; r++) {
		int g = flat[r], n = r / pb->nproc, h;
		if (g < 0 || g >= pb->ngpu) {
			snprintf(why, len, "rank %d has no GPU", r);
			ok = false;
		} else if (used[g]++) {
			snprintf(why, len, "rank %d shares its GPU with another rank", r);
			ok = false;
		} else if (host_node[h = pb->gpu_host[g]] >= 0 &&
		           host_node[h] != n) {
			snprintf(why, len, "node ranks %d and %d share host %s",
			         host_node[h], n, pb->c->nodes[h].host);
			ok = false;
		} else {
			host_node[h] = n;
		}
	}
	free(used);
	free(host_node);
	if (!ok)
		return false;
	for (int r = 0; r < pb->nranks; r++) {
		int g = flat[r], first = flat[r - r % pb->nproc];
		if (pb->gpu_host[g] != pb->gpu_host[first]) {
			snprintf(why, len, "rank %d is not on the host of its node rank",
			         r);
			return false;
		}
		if (!tm_fits(pb, r, g)) {
			snprintf(why, len, "rank %d needs %.1f GiB; its GPU has %.1f",
			         r, pb->mem_need[pb->rank_stage[r]], pb->mem_gib[g]);
			return false;
		}
	}
	for (int r = 0; isfinite(pol->max_temp_c) && t_ref > 0 &&
	     r < pb->nranks; r++) {
		double x = tm_rank_temp_in(pb, flat, r, t_ref);
		if (x > pol->max_temp_c + 1e-9) {
			snprintf(why, len, "rank %d's GPU reaches %.1f °C, above "
			         "max_temp_c %.1f", r, x, pol->max_temp_c);
			return false;
		}
	}
	if (isfinite(pb->time_cap_ms)) {
		tm_eval ev;
		double t = tm_eval_flat(pb, flat, 0, &ev);
		if (t > pb->time_cap_ms * (1 + 1e-12)) {
			snprintf(why, len, "its iteration takes %.3f ms, more than "
			         "the %.3f ms it must keep", t, pb->time_cap_ms);
			return false;
		}
	}
	for (int i = 0; pol->tp_nvlink && tp > 1 &&
	     i < pb->nrep * pb->npp * pb->nmember; i += tp) {
		snprintf(buf, sizeof buf, "tensor-parallel group of rank %d",
		         pb->inst_rank[i]);
		if (!nvlink_pairs(pb, flat, &pb->inst_rank[i], &pb->inst_rank[i], tp,
		                  true, why, len, buf))
			return false;
	}
	for (int d = 0; pol->pp_nvlink && d < pb->nrep; d++)
		for (int k = 0; k < pb->nhops; k++) {
			const tm_hop *hp = &pb->hops[k];
			snprintf(buf, sizeof buf, "pipeline hop %d→%d of replica %d",
			         hp->from, hp->to, d);
			if (!nvlink_pairs(pb, flat,
			     &pb->inst_rank[(d * pb->npp + hp->from) * pb->nmember],
			     &pb->inst_rank[(d * pb->npp + hp->to) * pb->nmember],
			     pb->nmember, false, why, len, buf))
				return false;
		}
	if (pol->max_moves >= 0) {
		int moves = 0;
		for (int r = 0; r < pb->nranks; r++)
			moves += flat[r] != pb->ref_gpu[r];
		if (moves > pol->max_moves) {
			snprintf(why, len, "%d ranks move; max_moves is %d", moves,
			         pol->max_moves);
			return false;
		}
	}
	return true;
}

/* ---- explaining infeasibility ------------------------------------------ */

/* Most disjoint sets of k GPUs of one host, all pairs joined by NVLink. */
static int cliques(const tm_problem *pb, int first, int n, int k,
                   unsigned char *taken, int from)
{
	int best = 0, v = from, cand[64], nc = 0, pick[64];

	while (v < n && taken[v])
		v++;
	if (v >= n)
		return 0;
	/* v left out of every set */
	taken[v] = 1;
	best = cliques(pb, first, n, k, taken, v + 1);
	taken[v] = 0;
	for (int u = v + 1; u < n && nc < 64; u++)
		if (!taken[u] && tm_nvlink(pb, first + v, first + u))
			cand[nc++] = u;
	if (nc < k - 1)
		return best;
	/* choose k-1 of the candidates, all joined to each other */
	pick[0] = -1;
	for (int depth = 0; depth >= 0;) {
		int ok = 1;
		pick[depth]++;
		if (pick[depth] >= nc) {
			depth--;
			continue;
		}
		for (int i = 0; i < depth && ok; i++)
			ok = tm_nvlink(pb, first + cand[pick[i]],
			               first + cand[pick[depth]]);
		if (!ok)
			continue;
		if (depth + 1 == k - 1) {
			int got;
			taken[v] = 1;
			for (int i = 0; i <= depth; i++)
				taken[cand[pick[i]]] = 1;
			got = 1 + cliques(pb, first, n, k, taken, v + 1);
			taken[v] = 0;
			for (int i = 0; i <= depth; i++)
				taken[cand[pick[i]]] = 0;
			if (got > best)
				best = got;
		} else {
			depth++;
			pick[depth] = pick[depth - 1];
		}
	}
	return best;
}

static void missing_links(const tm_problem *pb, int h, strbuf *b)
{
	const tm_node *n = &pb->c->nodes[h];
	int shown = 0, total = 0;
	char name[16];
	for (int i = 0; i < n->ngpus; i++)
		for (int k = i + 1; k < n->ngpus; k++) {
			int l = n->link[i * n->ngpus + k];
			if (l == TM_LINK_NV)
				continue;
			if (total++ < 6)
				sb_addf(b, "%sGPU%d-GPU%d %s", shown++ ? ", " : "",
				        n->gpus[i].index, n->gpus[k].index,
				        tm_link_name(l, 0, name));
		}
	if (total > shown)
		sb_addf(b, " and %d more", total - shown);
}

int tm_explain_infeasible(const tm_problem *pb, tm_error *err)
{
	int tp = pb->job->size[TM_TP];
	int *flat = xmalloc(sizeof(int) * (size_t)pb->nranks);
	char why[512];
	strbuf b;
	int rc;

	if (pb->pol->tp_nvlink && tp > 1) {
		int groups_per_node = pb->nproc / tp, fit = 0, besth = -1, bestk = -1;
		for (int i = 0; i < pb->nranks; i += tp) {
			const int *g = &pb->inst_rank[i];
			for (int k = 1; k < tp; k++)
				if (g[k] / pb->nproc != g[0] / pb->nproc) {
					free(flat);
					return tm_fail(err, TM_EINFEASIBLE, "infeasible: "
					               "tp_nvlink: tensor-parallel group of "
					               "ranks %d and %d spans node ranks %d "
					               "and %d; NVLink joins GPUs of one host "
					               "only", g[0], g[k], g[0] / pb->nproc,
					               g[k] / pb->nproc);
				}
		}
		for (int u = 0; u < pb->nusable; u++) {
			int h = pb->usable[u], n = pb->c->nodes[h].ngpus, k;
			unsigned char *taken = xcalloc((size_t)n, 1);
			k = n <= 16 ? cliques(pb, pb->host_first[h], n, tp, taken, 0)
			            : groups_per_node;
			free(taken);
			fit += k >= groups_per_node;
			if (k > bestk) {
				bestk = k;
				besth = h;
			}
		}
		if (fit < pb->nnodes) {
			/* the first group that cannot be placed */
			int grp = bestk < groups_per_node ? bestk : 0;
			const int *g = &pb->inst_rank[0];
			for (int i = 0, seen = 0; i < pb->nranks; i += tp)
				if (pb->inst_rank[i] / pb->nproc == 0 && seen++ == grp)
					g = &pb->inst_rank[i];
			sb_init(&b);
			for (int k = 0; k < tp; k++)
				sb_addf(&b, "%s%d", k ? "," : "", g[k]);
			sb_addf(&b, ") needs %d GPUs joined by NVLink; host %s has %s",
			        tp, pb->c->nodes[besth].host,
			        bestk ? "too few disjoint such sets" : "no such set");
			if (bestk > 0)
				sb_addf(&b, " (%d, a node needs %d)", bestk,
				        groups_per_node);
			sb_add(&b, "; missing links: ");
			missing_links(pb, besth, &b);
			rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: tp_nvlink: "
			             "tensor-parallel group (ranks %s", b.s);
			sb_free(&b);
			free(flat);
			return rc;
		}
	}
	tm_identity(pb, flat);
	if (!tm_constraints_ok(pb, flat, 0, why, sizeof why))
		rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: no placement "
		             "satisfies the policy's constraints; the default "
		             "placement fails because %s", why);
	else
		rc = tm_fail(err, TM_EINFEASIBLE, "infeasible: no placement "
		             "satisfies the policy's constraints");
	free(flat);
	return rc;
}
