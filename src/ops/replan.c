/*
 * replan.c — `thermap replan` (docs/replan.md): at a checkpoint, decide
 * whether a new placement is worth a restart.
 *
 * The previous plan's placement becomes the reference of the moves
 * criterion: each rank's GPU found again in the cluster by host and UUID
 * (index when either side has no UUID), or lost. Three placements are
 * weighed under the new profile:
 *
 *   keep    the previous placement, when every GPU is still there and it
 *           still satisfies the policy;
 *   least   otherwise its least change: the fewest moved ranks that make
 *           it valid (exact by the integer program with moves first where
 *           the direct program applies, else a repair that keeps every
 *           node it can and refills the rest);
 *   best    the policy's placement, moves priced at move_cost_ms each in
 *           the time criterion and counted by the moves criterion.
 *
 * best is written only when it beats keep (or least) by more than the
 * minimum gain; else keep exits 3, and least is written when something
 * had to move. The decision goes out as one JSON line.
 *
 * In that order: the candidates are evaluated, replan_decide (pure: the
 * evaluations and thresholds in, enum tm_decision and its numbers out)
 * applies the rule, reason_text says why, and only then is anything
 * written. The rule lives in replan_decide and nowhere else.
 */
#include <stdlib.h>
#include <string.h>


#include "ops/ops.h"

/* ---- the previous plan ---------------------------------------------------- */

typedef struct prev {
	tm_plan_doc d;        /* plan.json: id, ranks (planread.c) */
	int *layers;          /* chunk → layers, NULL when the plan has none */
	int nchunks;
} prev;

static void prev_free(prev *P)
{
	tm_plan_doc_clear(&P->d);
	free(P->layers);
	memset(P, 0, sizeof *P);
}

/* plan.json of the previous plan, and the layers per chunk it chose. */
static int prev_load(const char *dir, prev *P, tm_error *err)
{
	int rc;

	memset(P, 0, sizeof *P);
	if ((rc = tm_plan_doc_load(dir, &P->d, err)) ||
	    (rc = tm_plan_doc_chunks(&P->d, &P->layers, &P->nchunks, err)))
		prev_free(P);
	return rc;
}

/* The job as the previous plan ran it: its layers per chunk, when the
 * plan chose them; its ranks must have the job's coordinates. */
static int prev_job(const prev *P, const tm_job *j, tm_job **jr,
                    tm_error *err)
{
	int total = 0;

	*jr = NULL;
	if (P->d.n != j->world)
		return tm_fail(err, TM_EINPUT, "%s: %d ranks; %s has %d: replan "
		               "needs the same world size (plan anew with thermap "
		               "plan)", P->d.file, P->d.n, j->file, j->world);
	for (int r = 0; r < P->d.n; r++) {
		int c[TM_NDIM];
		tm_job_coords(j, r, c);
		for (int d = 0; d < TM_NDIM; d++)
			if (c[d] != P->d.r[r].coord[d])
				return tm_fail(err, TM_EINPUT, "%s: ranks[%d].%s is %d; "
				               "%s gives %d: the parallel layout changed "
				               "(plan anew with thermap plan)", P->d.file, r,
				               tm_dim_names[d], P->d.r[r].coord[d], j->file, c[d]);
	}
	if (!P->layers)
		return 0;
	for (int c = 0; c < P->nchunks; c++)
		total += P->layers[c];
	if (!j->by_layers || P->nchunks != j->nstages ||
	    total != tm_job_total_layers(j))
		return tm_fail(err, TM_EINPUT, "%s: layers.chunks: %d chunks of %d "
		               "layers in all do not fit %s (%d chunks%s)", P->d.file,
		               P->nchunks, total, j->file, j->nstages,
		               j->by_layers ? "" : ", not given by layers");
	*jr = tm_job_relayer(j, P->layers);
	return 0;
}

/* Ranks of the previous plan (ctx) by host, GPU index, then rank. */
static int cmp_prev_gpu(const void *a, const void *b, void *ctx)
{
	const prev *P = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	int c = strcmp(P->d.r[x].host, P->d.r[y].host);
	if (c)
		return c;
	if (P->d.r[x].gpu != P->d.r[y].gpu)
		return P->d.r[x].gpu < P->d.r[y].gpu ? -1 : 1;
	return x - y;
}

/* Two ranks of the previous plan on one GPU: found by sorting, so that a
 * plan of a million ranks takes a moment, not hours. */
static int prev_shared_gpu(const prev *P, tm_error *err)
{
	int *o = xmalloc(sizeof(int) * (size_t)P->d.n), rc = 0;
	for (int r = 0; r < P->d.n; r++)
		o[r] = r;
	tm_sort(o, (size_t)P->d.n, sizeof(int), cmp_prev_gpu, (void *)P);
	for (int i = 1; i < P->d.n && !rc; i++) {
		const tm_plan_rank *a = &P->d.r[o[i]], *b = &P->d.r[o[i - 1]];
		if (!strcmp(a->host, b->host) && a->gpu == b->gpu)
			rc = tm_fail(err, TM_EINPUT, "%s: ranks[%d]: GPU %s:%d is also "
			             "rank %d's", P->d.file, o[i], a->host, a->gpu,
			             o[i - 1]);
	}
	free(o);
	return rc;
}

/* Hosts of the cluster (ctx) by name. */
static int cmp_host_name(const void *a, const void *b, void *ctx)
{
	const tm_cluster *c = ctx;
	return strcmp(c->nodes[*(const int *)a].host,
	              c->nodes[*(const int *)b].host);
}

/* The cluster's hosts in name order, for find_host. */
static int *hosts_by_name(const tm_cluster *c)
{
	int *o = xmalloc(sizeof(int) * (size_t)(c->nnodes ? c->nnodes : 1));
	for (int h = 0; h < c->nnodes; h++)
		o[h] = h;
	tm_sort(o, (size_t)c->nnodes, sizeof(int), cmp_host_name, (void *)c);
	return o;
}

/* The host named name, or -1. */
static int find_host(const tm_cluster *c, const int *byname,
                     const char *name)
{
	int lo = 0, hi = c->nnodes - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int k = strcmp(c->nodes[byname[mid]].host, name);
		if (!k)
			return byname[mid];
		if (k < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* Each rank's previous GPU in this cluster (-1 where it is gone), with
 * why in lost[r]. A previous plan whose node ranks span hosts or whose
 * ranks share a GPU is not a plan thermap wrote. */
static int prev_map(const prev *P, const tm_problem *pb, int *ref,
                    char **lost, tm_error *err)
{
	const tm_cluster *c = pb->c;
	char buf[512];
	int rc;

	int *byname;

	if ((rc = prev_shared_gpu(P, err)))
		return rc;
	byname = hosts_by_name(c);
	for (int r = 0; r < P->d.n; r++) {
		int h = -1, g = -1;
		int r0 = r / pb->nproc * pb->nproc;
		if (strcmp(P->d.r[r].host, P->d.r[r0].host)) {
			free(byname);
			return tm_fail(err, TM_EINPUT, "%s: ranks[%d].host: %s, but "
			               "node rank %d is on %s", P->d.file, r, P->d.r[r].host,
			               r / pb->nproc, P->d.r[r0].host);
		}
		h = find_host(c, byname, P->d.r[r].host);
		lost[r] = NULL;
		if (h < 0) {
			snprintf(buf, sizeof buf, "host %s is not in %s", P->d.r[r].host,
			         c->file);
			lost[r] = xstrdup(buf);
			ref[r] = -1;
			continue;
		}
		for (int k = 0; k < c->nodes[h].ngpus && g < 0; k++) {
			const tm_gpu *x = &c->nodes[h].gpus[k];
			if (P->d.r[r].uuid && x->uuid ? !strcmp(P->d.r[r].uuid, x->uuid)
			                          : x->index == P->d.r[r].gpu)
				g = k;
		}
		if (g < 0) {
			snprintf(buf, sizeof buf, "GPU %s:%d%s%s is not in %s",
			         P->d.r[r].host, P->d.r[r].gpu, P->d.r[r].uuid ? " " : "",
			         P->d.r[r].uuid ? P->d.r[r].uuid : "", c->file);
			lost[r] = xstrdup(buf);
			ref[r] = -1;
			continue;
		}
		ref[r] = pb->host_first[h] + g;
	}
	free(byname);
	return 0;
}

/* ---- placements ------------------------------------------------------------ */

/* A host can take a node rank: it has nproc_per_node GPUs (problem.c's
 * rule for pb->usable). */
static bool host_usable(const tm_problem *pb, int h)
{
	return pb->c->nodes[h].ngpus >= pb->nproc;
}

/* Whether flat is a placement torchrun can run that the policy accepts. */
static bool valid(const tm_problem *pb, const int *flat, char *why,
                  size_t len)
{
	tm_eval ev;
	for (int r = 0; r < pb->nranks; r++) {
		if (flat[r] < 0)
			return false;
		if (!host_usable(pb, pb->gpu_host[flat[r]])) {
			snprintf(why, len, "host %s has %d GPUs; the job needs %d per "
			         "node", pb->c->nodes[pb->gpu_host[flat[r]]].host,
			         pb->c->nodes[pb->gpu_host[flat[r]]].ngpus, pb->nproc);
			return false;
		}
		if (!tm_fits(pb, r, flat[r])) {
			snprintf(why, len, "rank %d does not fit the memory of GPU "
			         "%s:%d", r, pb->c->nodes[pb->gpu_host[flat[r]]].host,
			         tm_gpu_of(pb, flat[r])->index);
			return false;
		}
	}
	return tm_constraints_ok(pb, flat, tm_eval_flat(pb, flat, 0, &ev), why,
	                         len);
}

/* The cheap least change: every node whose host is still usable keeps its
 * ranks and refills the GPUs it lost from its host's free ones (best
 * derate for the heaviest work); the other nodes move whole to hosts
 * nothing runs on. false when that does not give a valid placement. */
static bool repair(const tm_problem *pb, int *flat)
{
	int N = pb->nnodes, P = pb->nproc;
	unsigned char *used = xcalloc((size_t)pb->ngpu, 1);
	unsigned char *hused = xcalloc((size_t)pb->nhost, 1);
	bool *homeless = xcalloc((size_t)N, sizeof(bool)), ok = true;
	char why[256];

	for (int n = 0; n < N; n++) {
		int h = -1;
		for (int i = 0; i < P; i++)
			if (pb->ref_gpu[n * P + i] >= 0)
				h = pb->gpu_host[pb->ref_gpu[n * P + i]];
		homeless[n] = h < 0 || !host_usable(pb, h);
		for (int i = 0; i < P && !homeless[n]; i++) {
			int r = n * P + i;
			flat[r] = pb->ref_gpu[r];
			if (flat[r] >= 0)
				used[flat[r]] = 1;
		}
		if (!homeless[n])
			hused[h] = 1;
	}
	for (int n = 0; n < N; n++) {
		if (homeless[n])
			continue;
		/* lost ranks, heaviest first, onto the best free GPUs */
		for (;;) {
			int r = -1, best = -1, h;
			for (int i = 0; i < P; i++)
				if (flat[n * P + i] < 0 && (r < 0 ||
				    pb->work[pb->rank_stage[n * P + i]] >
				    pb->work[pb->rank_stage[r]]))
					r = n * P + i;
			if (r < 0)
				break;
			h = -1;
			for (int i = 0; i < P; i++)
				if (flat[n * P + i] >= 0)
					h = pb->gpu_host[flat[n * P + i]];
			for (int g = pb->host_first[h];
			     g < pb->host_first[h] + pb->c->nodes[h].ngpus; g++)
				if (!used[g] && tm_fits(pb, r, g) &&
				    (best < 0 || pb->derate[g] < pb->derate[best] ||
				     (pb->derate[g] == pb->derate[best] &&
				      pb->t_slope[g] < pb->t_slope[best])))
					best = g;
			if (best < 0) {
				homeless[n] = true;
				break;
			}
			flat[r] = best;
			used[best] = 1;
		}
	}
	for (int n = 0, u = 0; n < N && ok; n++) {
		int h = -1;
		if (!homeless[n])
			continue;
		/* hosts only fill up, so one pass over them serves all nodes */
		for (; u < pb->nusable && h < 0; u++)
			if (!hused[pb->usable[u]])
				h = pb->usable[u];
		ok = h >= 0 && tm_greedy_node(pb, n, h, flat);
		if (ok)
			hused[h] = 1;
	}
	ok = ok && valid(pb, flat, why, sizeof why);
	free(used);
	free(hused);
	free(homeless);
	return ok;
}

/* The least change is solved exactly (the integer program, moves first)
 * up to this many ranks × GPUs; past it, by repair(). The program's first
 * phase, the best time, is what costs: at 16 ranks × 24 GPUs it can take
 * the whole time limit. */
#define LEAST_EXACT_MAX 256

/* A solution for a placement no solver phase produced (the repair). Its
 * moves have a proven bound, lb: every rank whose GPU is gone moves, and
 * a previous placement that cannot stay moves at least one rank. */
static void hand_solution(const tm_problem *pb, const int *flat, int lb,
                          tm_solution *sol)
{
	int *id = xmalloc(sizeof(int) * (size_t)pb->nranks);
	memset(sol, 0, sizeof *sol);
	/* none proven for a repair */
	sol->peak_bound = sol->wear_bound = sol->moves_bound = NAN;
	tm_identity(pb, id);
	tm_eval_flat(pb, id, 0, &sol->baseline);
	sol->baseline_ok = true;
	free(id);
	tm_eval_flat(pb, flat, 0, &sol->ev);
	sol->ev.feasible = true;
	snprintf(sol->status, sizeof sol->status, "feasible");
	snprintf(sol->formulation, sizeof sol->formulation, "repair");
	sol->objective = sol->ev.moves;
	sol->bound = fmin(lb, sol->objective);
	sol->gap = sol->objective > 0 ? (sol->objective - sol->bound) /
	           sol->objective : 0;
	/* proven for the moves, the first criterion; not for the rest */
	for (int k = 0; k < TM_MAX_CRIT; k++)
		sol->gaps[k] = k == 0 ? sol->gap : NAN;
	sol->t_ref_ms = sol->ev.iteration_ms;
	sol->pl = tm_placement_new(pb->nranks);
	tm_flat_to_placement(pb, flat, sol->pl);
}

/* Keep, or the least change. *keep_ok: the previous placement ref can
 * stay as it is (least is ref then); else why says why not, least gets
 * the fewest moves that make it valid, and *pl and lsol the problem
 * (moves first, under the policy *lc, which *pl borrows: the caller's,
 * to outlive it) and the solution to write it with. nl: ranks whose GPU
 * is gone. */
static int least_change(const tm_cluster *c, const tm_profile *p,
                        const tm_job *j, const tm_policy *pol,
                        bool allow_unprofiled, tm_problem *pb,
                        const int *ref, char **lost, int nl, int *least,
                        bool *keep_ok, char *why, size_t whylen,
                        tm_policy *lc, tm_problem **pl, tm_solution *lsol,
                        tm_error *err)
{
	bool fixed;
	int rc;

	memcpy(least, ref, sizeof(int) * (size_t)pb->nranks);
	tm_problem_set_reference(pb, ref, pol->move_cost_ms, NULL);
	*keep_ok = valid(pb, ref, why, whylen);
	if (*keep_ok)
		return 0;
	if (nl) {
		for (int r = 0; r < pb->nranks; r++)
			if (lost[r]) {
				snprintf(why, whylen, "%s%s", lost[r], nl > 1 ?
				         " (and more)" : "");
				break;
			}
	}
	fixed = repair(pb, least);
	/* the fewest moves, exactly, where the direct program applies */
	*lc = *pol;
	lc->method = TM_METHOD_ILP;
	lc->move_cost_ms = 0;
	lc->ncrit = 0;
	lc->crit[lc->ncrit++] = TM_CRIT_MOVES;
	for (int k = 0; k < pol->ncrit; k++)
		if (pol->crit[k] != TM_CRIT_MOVES)
			lc->crit[lc->ncrit++] = pol->crit[k];
	if ((rc = tm_problem_open(c, p, j, lc, allow_unprofiled, true, pl,
	                          err)))
		return rc;
	tm_problem_set_reference(*pl, ref, 0, fixed ? least : NULL);
	if ((double)(*pl)->nranks * (*pl)->ngpu <= LEAST_EXACT_MAX) {
		int *x = xmalloc(sizeof(int) * (size_t)(*pl)->nranks);
		tm_eval a, b;
		rc = tm_solve(*pl, lsol, err);
		if (rc && !(fixed && rc == TM_ELIMIT)) {
			free(x);
			return rc;
		}
		/* a program stopped by its time limit may have no answer, or
		 * one that moves more than the repair: the repair stands */
		if (!rc) {
			tm_placement_to_flat(*pl, lsol->pl, x);
			tm_eval_flat(*pl, x, 0, &a);
			tm_eval_flat(*pl, least, 0, &b);
		}
		if (!rc && (!fixed || a.moves <= b.moves))
			memcpy(least, x, sizeof(int) * (size_t)(*pl)->nranks);
		else
			tm_solution_clear(lsol);
		free(x);
	} else if (!fixed) {
		return tm_fail(err, TM_EINFEASIBLE, "infeasible: the previous "
		               "placement cannot stay (%s), and no node can move "
		               "to a free host", why);
	}
	if (!lsol->pl)
		hand_solution(*pl, least, nl > 1 ? nl : 1, lsol);
	return 0;
}

/* ---- the decision ---------------------------------------------------------- */

int tm_min_gain_parse(const char *s, tm_min_gain *g)
{
	char *buf, *tok, *save = NULL;
	int rc = 0;

	g->time_pct = g->peak_c = INFINITY;
	if (!s || !*s || strlen(s) > 200)
		return -1;
	buf = xstrdup(s);
	for (tok = strtok_r(buf, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		char *end;
		double v = strtod(tok, &end);
		if (end == tok || !isfinite(v) || v < 0 || v > 1e6)
			rc = -1;
		else if (!strcmp(end, "%"))
			g->time_pct = v;
		else if (!strcmp(end, "C") || !strcmp(end, "°C"))
			g->peak_c = v;
		else if (!*end && v == 0)
			g->time_pct = g->peak_c = 0;
		else
			rc = -1;
	}
	free(buf);
	return rc;
}

/* The two placements replan weighs, evaluated under the new profile. */
typedef struct candidates {
	tm_eval from;        /* the previous placement, or its least change
	                        when it cannot stay */
	tm_eval best;        /* the policy's best (moves priced) */
	bool keep_ok;        /* the previous placement can stay */
	bool same;           /* best is from itself */
	bool ranked_below;   /* the policy's order puts best below from */
	tm_gain g;           /* best over from, with the model's uncertainty */
	bool tied;           /* best is the coolest placement that holds
	                        from's time: the policy's fastest tied on
	                        time (docs/model.md, section 16) */
	tm_gain tie_g;       /* then: what the fastest offered */
} candidates;

/* Why the policy's best is not written, when it is not. */
enum stay_why {
	STAY_NONE,           /* it is written (TM_MOVE) */
	STAY_SAME,           /* it is from itself */
	STAY_TRADE,          /* past a threshold, but it trades time and peak
	                        temperature beyond the policy's exchange rate */
	STAY_ORDER,          /* past a threshold, but the policy's order of
	                        criteria ranks it below from */
	STAY_SHORT           /* short of the minimum gain, or of the model's
	                        uncertainty */
};

/* What replan decided, and the numbers it decided on. */
typedef struct decision {
	int decision;        /* enum tm_decision */
	int why;             /* enum stay_why */
	double gain_t;       /* best over from: iteration time, % of from's */
	double gain_net;     /* the same net of move costs (cost_ms), % */
	double gain_p;       /* peak temperature drop, °C */
} decision;

static const char *const decision_names[] = {
	[TM_KEEP] = "keep", [TM_MOVE] = "move", [TM_REPAIR] = "repair",
};

/* The rule (docs/replan.md): best is written when it differs from from
 * and gains more than either minimum and more than that gain's own
 * uncertainty (a gain the model cannot tell from noise moves nothing),
 * trades time and temperature only at the policy's exchange rate
 * (rate, °C per 1 %; NAN: none), and the policy's own order does not rank
 * it below from. Otherwise the previous plan is kept, or its least change
 * written when it cannot stay. Pure: no I/O, nothing but its answer. */
static decision replan_decide(const candidates *C, const tm_min_gain *mg,
                              double rate)
{
	decision D;
	bool past, trade;

	D.gain_t = (C->from.iteration_ms - C->best.iteration_ms) /
	           C->from.iteration_ms * 100;
	D.gain_net = (C->from.cost_ms - C->best.cost_ms) /
	             C->from.iteration_ms * 100;
	D.gain_p = C->from.peak_temp_c - C->best.peak_temp_c;
	D.decision = C->keep_ok ? TM_KEEP : TM_REPAIR;
	if (C->same) {
		D.why = STAY_SAME;
		return D;
	}
	past = (D.gain_net > mg->time_pct && D.gain_net > C->g.time_sd) ||
	       (D.gain_p > mg->peak_c && D.gain_p > C->g.peak_sd);
	trade = tm_gain_lost(&C->g) && !tm_gain_worth(&C->g, rate);
	/* a tie's candidate holds from's time by construction: the order,
	 * which ranks time first, does not get to refuse it for that */
	if (past && !trade && (!C->ranked_below || C->tied) &&
	    !(C->tied && D.gain_net < -C->g.time_sd)) {
		D.decision = TM_MOVE;
		D.why = STAY_NONE;
	} else {
		D.why = !past ? STAY_SHORT : trade ? STAY_TRADE : STAY_ORDER;
	}
	return D;
}

/* The coolest placement within the run-to-run floor of from's time
 * (docs/model.md, section 16): when it wins what replan asks for, it
 * replaces the fastest in C, best and D. 0, or an error of the solver. */
static int tie_candidate(const tm_problem *pb, const int *from,
                         candidates *C, const tm_min_gain *mg, int *best,
                         decision *D)
{
	int *cand = xmalloc(sizeof(int) * (size_t)pb->nranks), rc;
	bool names_peak = false;
	candidates C2 = *C;
	decision D2;

	for (int k = 0; k < pb->ncrit; k++)
		names_peak = names_peak || pb->crit[k] == TM_CRIT_PEAK;
	if (!names_peak) {
		free(cand);
		return 0;
	}
	/* held at the fastest's time, as a plan made now would hold it: a
	 * replan that held the previous plan's could give up the floor's
	 * time again at every checkpoint */
	rc = tm_solve_held(pb, fmin(C->from.iteration_ms,
	                            C->best.iteration_ms) * (1 + TM_TIME_FLOOR_PCT / 100),
	                   INFINITY, C->from.iteration_ms <= C->best.iteration_ms ?
	                   from : best, cand);
	if (rc) {
		free(cand);
		return rc;
	}
	tm_eval_flat(pb, cand, 0, &C2.best);
	tm_gain_of(pb, from, cand, &C2.g);
	C2.same = !memcmp(cand, from, sizeof(int) * (size_t)pb->nranks);
	C2.ranked_below = tm_eval_better(pb, &C2.from, &C2.best);
	C2.tied = true;
	C2.tie_g = C->g;
	D2 = replan_decide(&C2, mg, pb->pol->exchange_c_per_pct);
	if (D2.decision == TM_MOVE) {
		*C = C2;
		*D = D2;
		memcpy(best, cand, sizeof(int) * (size_t)pb->nranks);
	}
	free(cand);
	return 0;
}

/* ---- the reason ------------------------------------------------------------ */

/* x for printing with one or two decimals: no "-0.0" */
static double nz(double x)
{
	return fabs(x) < 0.005 ? 0 : x;
}

static void fmt_need(const tm_min_gain *mg, strbuf *b)
{
	if (isfinite(mg->time_pct))
		sb_addf(b, "more than %g %% iteration time", mg->time_pct);
	if (isfinite(mg->time_pct) && isfinite(mg->peak_c))
		sb_add(b, " or ");
	if (isfinite(mg->peak_c))
		sb_addf(b, "more than %g °C peak temperature", mg->peak_c);
	if (!isfinite(mg->time_pct) && !isfinite(mg->peak_c))
		sb_add(b, "a gain");
}

/* The decision in one sentence, for people and for plan.json: pb gives
 * the policy's criteria and exchange rate, keep_why why the previous
 * placement cannot stay, must the fewest moves that make it valid. */
static void reason_text(const decision *D, const candidates *C,
                        const tm_min_gain *mg, const tm_problem *pb,
                        const char *keep_why, int must, strbuf *b)
{
	const char *over = C->keep_ok ? "keeping the previous plan" :
	                   "its least change";

	if (D->decision == TM_MOVE && C->tied) {
		sb_addf(b, "time ties (the fastest placement: %.2f ± %.2f %% "
		        "faster), so the temperatures decide: the coolest that "
		        "holds the time gains %.2f %% iteration time (%.2f ± %.2f "
		        "%% net of move costs) and %.1f ± %.1f °C peak over %s, "
		        "moving %d rank(s); the minimum is ", nz(C->tie_g.time_pct),
		        C->tie_g.time_sd, nz(D->gain_t), nz(D->gain_net),
		        C->g.time_sd, nz(D->gain_p), C->g.peak_sd, over,
		        C->best.moves);
		fmt_need(mg, b);
		sb_add(b, ", beyond the model's uncertainty");
		return;
	}
	if (D->decision == TM_MOVE) {
		sb_addf(b, "the best placement gains %.2f %% iteration time "
		        "(%.2f ± %.2f %% net of move costs) and %.1f ± %.1f °C "
		        "peak over %s, moving %d rank(s); the minimum is ",
		        nz(D->gain_t), nz(D->gain_net), C->g.time_sd,
		        nz(D->gain_p), C->g.peak_sd, over, C->best.moves);
		fmt_need(mg, b);
		sb_add(b, ", beyond the model's uncertainty");
		return;
	}
	if (D->why == STAY_SAME)
		sb_addf(b, "the policy's best placement is %s",
		        C->keep_ok ? "the previous one" : "the least change");
	else
		sb_addf(b, "the best placement gains %.2f %% iteration time "
		        "(%.2f ± %.2f %% net of move costs) and %.1f ± %.1f °C "
		        "peak over %s; ", nz(D->gain_t), nz(D->gain_net),
		        C->g.time_sd, nz(D->gain_p), C->g.peak_sd, over);
	if (D->why == STAY_TRADE) {
		/* past a threshold, but it loses what the rate does not buy */
		sb_add(b, "it would trade one for the other (");
		tm_gain_text(&C->g, b);
		if (isfinite(pb->pol->exchange_c_per_pct))
			sb_addf(b, ") beyond the policy's rate of %g °C per 1 %%",
			        pb->pol->exchange_c_per_pct);
		else
			sb_add(b, ") and the policy sets no exchange rate");
	} else if (D->why == STAY_ORDER) {
		/* past a threshold, but a trade the policy's order refuses */
		sb_add(b, "the policy ranks it below that (criteria");
		for (int k = 0; k < pb->ncrit; k++)
			sb_addf(b, "%s%s", k ? ", " : " ", tm_crit_name(pb->crit[k]));
		sb_add(b, ")");
	} else if (D->why == STAY_SHORT) {
		sb_add(b, "that falls short of ");
		fmt_need(mg, b);
		sb_add(b, ", or of the model's uncertainty");
	}
	if (!C->keep_ok)
		sb_addf(b, "; the previous placement cannot stay (%s), so the "
		        "fewest moves (%d) are written", keep_why, must);
}

/* ---- writing --------------------------------------------------------------- */

/* What the writers need: the decision, its reason, and the placements. */
typedef struct replan {
	const tm_problem *pb;     /* the problem of the written plan */
	const prev *P;
	const int *ref;           /* previous GPUs (-1 gone) */
	char **lost;              /* why a previous GPU is gone */
	const int *flat;          /* the written placement */
	const int *from;          /* the placement compared with */
	candidates C;
	decision D;
	const char *reason;
	const char *keep_why;     /* NULL when the previous plan can stay */
	int must;                 /* fewest moves of any valid placement */
	const tm_min_gain *mg;
	double move_cost_ms;      /* the policy's price of a moved rank */
} replan;

static void gpu_name(const tm_problem *pb, int g, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%d", pb->c->nodes[pb->gpu_host[g]].host,
	         tm_gpu_of(pb, g)->index);
}

static int cmp_work(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return tm_cmp_dbl(a, b);
}

/* For each pipeline stage, how many stages do more work: from the works
 * sorted once, so that a plan that moves every rank of a deep pipeline
 * does not count over the stages for each of them. */
static int *stages_heavier(const tm_problem *pb)
{
	double *w = xmalloc(sizeof(double) * (size_t)pb->npp);
	int *n = xmalloc(sizeof(int) * (size_t)pb->npp);
	memcpy(w, pb->work, sizeof(double) * (size_t)pb->npp);
	tm_sort(w, (size_t)pb->npp, sizeof(double), cmp_work, NULL);
	for (int s = 0; s < pb->npp; s++) {
		double x = pb->work[s] * (1 + 1e-9);
		int lo = 0, hi = pb->npp;  /* the first work above x */
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (w[mid] > x)
				hi = mid;
			else
				lo = mid + 1;
		}
		n[s] = pb->npp - lo;
	}
	free(w);
	return n;
}

/* Why rank r moves from its previous GPU to flat[r]; heavier_than: per
 * stage, how many stages do more work. */
static void move_why(const replan *R, const int *heavier_than, int r,
                     strbuf *b)
{
	const tm_problem *pb = R->pb;
	int s = pb->rank_stage[r], g = R->flat[r], o = R->ref[r];
	int heavier = heavier_than[s];
	char a[300], z[300];
	int n0 = r / pb->nproc * pb->nproc;

	if (o < 0) {
		sb_addf(b, "forced: %s", R->lost[r]);
		return;
	}
	if (!host_usable(pb, pb->gpu_host[o])) {
		sb_addf(b, "forced: host %s has %d GPUs, fewer than the %d a node "
		        "needs", pb->c->nodes[pb->gpu_host[o]].host,
		        pb->c->nodes[pb->gpu_host[o]].ngpus, pb->nproc);
		return;
	}
	if (R->D.decision == TM_REPAIR) {
		for (int i = 0; i < pb->nproc; i++)
			if (R->ref[n0 + i] < 0) {
				sb_addf(b, "forced: node rank %d makes room for rank %d "
				        "(%s)", r / pb->nproc, n0 + i, R->lost[n0 + i]);
				return;
			}
		sb_add(b, "forced: the previous placement breaks the policy "
		       "under the new profile");
		return;
	}
	gpu_name(pb, o, a, sizeof a);
	gpu_name(pb, g, z, sizeof z);
	{
		double t0 = tm_rank_temp_in(pb, R->ref, r, R->C.from.iteration_ms);
		double t1 = tm_rank_temp_in(pb, R->flat, r,
		                            R->C.best.iteration_ms);
		/* what this rank's move does, then what the plan buys with it:
		 * a rank may run hotter in a plan that is cooler at its peak */
		sb_addf(b, "move: stage %d", s);
		if (heavier)
			sb_addf(b, " (%d stage(s) do more work)", heavier);
		else
			sb_add(b, ", the heaviest,");
		sb_addf(b, " %s → %s: derate %.3f → %.3f, predicted %.1f → %.1f "
		        "°C (%.1f °C %s); the plan: ", a, z, pb->derate[o],
		        pb->derate[g], t0, t1, fabs(t1 - t0),
		        t1 <= t0 ? "cooler" : "hotter");
		tm_gain_text(&R->C.g, b);
	}
}

static void write_min_gain(jw *w, const tm_min_gain *mg)
{
	jw_obj(w, "min_gain", true);
	jw_num(w, "time_pct", mg->time_pct, 3);
	jw_num(w, "peak_c", mg->peak_c, 2);
	jw_end_obj(w);
}

static void write_eval(jw *w, const char *key, const tm_eval *e)
{
	jw_obj(w, key, true);
	jw_num(w, "iteration_ms", e->iteration_ms, 4);
	jw_num(w, "peak_temp_c", e->peak_temp_c, 2);
	jw_int(w, "moved_ranks", e->moves);
	jw_end_obj(w);
}

/* plan.json's "replan" object. */
static void write_replan(jw *w, void *ud)
{
	const replan *R = ud;
	const tm_problem *pb = R->pb;
	strbuf b;
	char x[300];
	int *heavier;

	sb_init(&b);
	jw_obj(w, "replan", false);
	jw_str(w, "previous", R->P->d.id);
	jw_str(w, "decision", decision_names[R->D.decision]);
	jw_str(w, "reason", R->reason);
	jw_bool(w, "previous_valid", R->C.keep_ok);
	if (R->keep_why)
		jw_str(w, "previous_invalid_why", R->keep_why);
	else
		jw_null(w, "previous_invalid_why");
	jw_int(w, "fewest_moves", R->must);
	write_eval(w, R->C.keep_ok ? "kept" : "least_change", &R->C.from);
	write_eval(w, "written", R->flat == R->from ? &R->C.from :
	           &R->C.best);
	jw_obj(w, "gain", true);
	jw_num(w, "time_pct", R->D.gain_t, 3);
	jw_num(w, "net_time_pct", R->D.gain_net, 3);
	jw_num(w, "peak_c", R->D.gain_p, 2);
	jw_end_obj(w);
	write_min_gain(w, R->mg);
	jw_num(w, "move_cost_ms", R->move_cost_ms, 4);
	jw_arr(w, "from", true);
	for (int r = 0; r < pb->nranks; r++) {
		snprintf(x, sizeof x, "%s:%d", R->P->d.r[r].host, R->P->d.r[r].gpu);
		jw_str(w, NULL, x);
	}
	jw_end_arr(w);
	jw_arr(w, "moves", false);
	heavier = stages_heavier(pb);
	for (int r = 0; r < pb->nranks; r++) {
		if (R->flat[r] == R->ref[r])
			continue;
		jw_obj(w, NULL, true);
		jw_int(w, "rank", r);
		snprintf(x, sizeof x, "%s:%d", R->P->d.r[r].host, R->P->d.r[r].gpu);
		jw_str(w, "from", x);
		gpu_name(pb, R->flat[r], x, sizeof x);
		jw_str(w, "to", x);
		b.len = 0;
		b.s[0] = '\0';
		move_why(R, heavier, r, &b);
		jw_str(w, "why", b.s);
		jw_end_obj(w);
	}
	jw_end_arr(w);
	jw_end_obj(w);
	free(heavier);
	sb_free(&b);
}

/* The ranks the placement that runs next moves off the previous plan. */
static int moved_ranks(const replan *R)
{
	return R->D.decision == TM_MOVE ? R->C.best.moves :
	       R->D.decision == TM_REPAIR ? R->C.from.moves : 0;
}

/* The one-line decision for scripts. */
static char *decision_line(const replan *R, const char *plan_id)
{
	const tm_min_gain *mg = R->mg;
	strbuf b;
	jw w;
	sb_init(&b);
	jw_init(&w, &b);
	jw_obj(&w, NULL, true);
	jw_str(&w, "decision", decision_names[R->D.decision]);
	jw_int(&w, "exit", R->D.decision == TM_KEEP ? TM_ENOCHANGE : 0);
	jw_str(&w, "reason", R->reason);
	jw_str(&w, "previous", R->P->d.id);
	if (plan_id && *plan_id)
		jw_str(&w, "plan", plan_id);
	else
		jw_null(&w, "plan");
	jw_bool(&w, "previous_valid", R->C.keep_ok);
	jw_int(&w, "fewest_moves", R->must);
	jw_int(&w, "moved_ranks", moved_ranks(R));
	write_eval(&w, R->C.keep_ok ? "kept" : "least_change", &R->C.from);
	write_eval(&w, "best", &R->C.best);
	jw_obj(&w, "gain", true);
	jw_num(&w, "time_pct", R->D.gain_t, 3);
	jw_num(&w, "net_time_pct", R->D.gain_net, 3);
	jw_num(&w, "time_sd_pct", R->C.g.time_sd, 3);
	jw_num(&w, "peak_c", R->D.gain_p, 2);
	jw_num(&w, "peak_sd_c", R->C.g.peak_sd, 2);
	jw_int(&w, "hot_rank", R->C.g.hot_rank);
	jw_num(&w, "hot_c", R->C.g.hot_c, 2);
	jw_num(&w, "hot_sd_c", R->C.g.hot_sd, 2);
	jw_end_obj(&w);
	write_min_gain(&w, mg);
	if (R->D.decision != TM_MOVE) {
		/* against the larger of the minimum and the uncertainty */
		jw_obj(&w, "short_by", true);
		jw_num(&w, "time_pct", fmax(mg->time_pct, R->C.g.time_sd) -
		       R->D.gain_net, 3);
		jw_num(&w, "peak_c", fmax(mg->peak_c, R->C.g.peak_sd) -
		       R->D.gain_p, 2);
		jw_end_obj(&w);
	}
	jw_num(&w, "move_cost_ms", R->move_cost_ms, 4);
	jw_end_obj(&w);
	while (b.len && b.s[b.len - 1] == '\n')
		b.s[--b.len] = '\0';
	return b.s;
}

/* res from the decision: the placement that runs next (in pb's GPUs) and
 * the two descriptions; id: the plan written ("" when kept); wpb and
 * wsol: the problem and solution of the placement written. */
static void fill_result(const replan *R, const char *id,
                        const tm_problem *pb, const tm_problem *wpb,
                        const tm_solution *wsol, tm_replan_result *res)
{
	strbuf text;

	res->decision = R->D.decision;
	memcpy(res->plan_id, id, 17);
	memcpy(res->prev_id, R->P->d.id, 17);
	res->pl = tm_placement_new(pb->nranks);
	tm_flat_to_placement(pb, R->flat, res->pl);
	res->moved = moved_ranks(R);
	res->fewest_moves = R->must;
	res->json = decision_line(R, id);
	/* the reason may name the cluster file: shown, it stays one line */
	sb_init(&text);
	sb_addf(&text, "replan %s: ", decision_names[R->D.decision]);
	sb_add_text(&text, R->reason);
	sb_add(&text, "\n");
	if (R->D.decision != TM_KEEP) {
		char *s = tm_plan_summary(wpb, wsol);
		sb_add(&text, s);
		free(s);
	}
	res->text = text.s;
}

/* ---- replan ---------------------------------------------------------------- */

int tm_replan(const tm_cluster *c, const tm_profile *p, const tm_job *j0,
              const tm_policy *pol, const char *prev_dir,
              bool allow_unprofiled, const tm_min_gain *mg,
              const char *out_dir, tm_replan_result *res, tm_error *err)
{
	prev P;
	tm_job *jr = NULL;
	const tm_job *j;
	tm_problem *pb = NULL, *pl = NULL;
	tm_policy lc;             /* the least change's policy: pl's */
	tm_solution sol, lsol;
	int *ref = NULL, *least = NULL, *best = NULL, rc, nl = 0;
	char **lost = NULL, why[512] = "", id[17] = "";
	replan R;
	strbuf reason;
	const tm_problem *wpb;
	const tm_solution *wsol;

	memset(res, 0, sizeof *res);
	memset(&sol, 0, sizeof sol);
	memset(&lsol, 0, sizeof lsol);
	memset(&R, 0, sizeof R);
	if (pol->rebalance || pol->method == TM_METHOD_ALTERNATING)
		return tm_fail(err, TM_EUSAGE, "policy %s chooses layers per "
		               "stage; replan keeps the previous plan's layers and "
		               "moves ranks only (plan anew with thermap plan to "
		               "change layers)", pol->name);
	if ((rc = prev_load(prev_dir, &P, err)))
		return rc;
	sb_init(&reason);
	if ((rc = prev_job(&P, j0, &jr, err)))
		goto out;
	j = jr ? jr : j0;
	/* a host that lost GPUs is what replan is for: no equal counts */
	if ((rc = tm_problem_open(c, p, j, pol, allow_unprofiled, true, &pb,
	                          err)))
		goto out;
	ref = xmalloc(sizeof(int) * (size_t)pb->nranks);
	least = xmalloc(sizeof(int) * (size_t)pb->nranks);
	lost = xcalloc((size_t)pb->nranks, sizeof(char *));
	if ((rc = prev_map(&P, pb, ref, lost, err)))
		goto out;
	for (int r = 0; r < pb->nranks; r++)
		nl += ref[r] < 0;

	/* the candidates: keep (or the least change), and the policy's best,
	 * which weighs the least change as a candidate of its own */
	if ((rc = least_change(c, p, j, pol, allow_unprofiled, pb, ref, lost,
	                       nl, least, &R.C.keep_ok, why, sizeof why, &lc,
	                       &pl, &lsol, err)))
		goto out;
	tm_eval_flat(pb, least, 0, &R.C.from);
	R.must = R.C.keep_ok ? 0 : R.C.from.moves;
	tm_problem_set_reference(pb, ref, pol->move_cost_ms, least);
	if ((rc = tm_solve(pb, &sol, err)))
		goto out;
	best = xmalloc(sizeof(int) * (size_t)pb->nranks);
	tm_placement_to_flat(pb, sol.pl, best);
	tm_eval_flat(pb, best, 0, &R.C.best);
	tm_gain_of(pb, least, best, &R.C.g);
	R.C.same = !memcmp(best, least, sizeof(int) * (size_t)pb->nranks);
	R.C.ranked_below = tm_eval_better(pb, &R.C.from, &R.C.best);

	/* decide; where the fastest gains nothing beyond its uncertainty on
	 * time, time ties and the coolest placement that holds the previous
	 * plan's time is weighed instead (the evidence rule's walk) */
	R.D = replan_decide(&R.C, mg, pb->pol->exchange_c_per_pct);
	if (R.D.decision != TM_MOVE && R.C.keep_ok &&
	    !(R.C.g.time_pct > R.C.g.time_sd) &&
	    (rc = tie_candidate(pb, least, &R.C, mg, best, &R.D)))
		goto out;
	if (R.C.tied) {
		/* the written placement is the tie's, not the solver's */
		tm_flat_to_placement(pb, best, sol.pl);
		tm_eval_flat(pb, best, sol.t_ref_ms, &sol.ev);
		sol.ev.feasible = true;
	}
	R.keep_why = R.C.keep_ok ? NULL : why;
	reason_text(&R.D, &R.C, mg, pb, why, R.must, &reason);
	R.reason = reason.s;
	R.P = &P;
	R.ref = ref;
	R.lost = lost;
	R.from = least;
	R.mg = mg;
	R.move_cost_ms = pol->move_cost_ms;
	if (R.D.decision == TM_MOVE) {
		R.pb = wpb = pb;
		R.flat = best;
		wsol = &sol;
	} else {
		R.pb = wpb = pl ? pl : pb;
		R.flat = least;
		wsol = &lsol;
	}

	/* then write */
	if (R.D.decision != TM_KEEP && out_dir &&
	    (rc = tm_plan_write_ex(wpb, wsol, write_replan, &R, out_dir, id,
	                           err)))
		goto out;
	if (R.D.decision != TM_KEEP && !out_dir)
		tm_plan_id(wpb, R.flat, id);
	fill_result(&R, id, pb, wpb, wsol, res);
	rc = R.D.decision == TM_KEEP ? TM_ENOCHANGE : 0;
out:
	for (int r = 0; lost && r < P.d.n; r++)
		free(lost[r]);
	free(lost);
	free(ref);
	free(least);
	free(best);
	tm_solution_clear(&sol);
	tm_solution_clear(&lsol);
	tm_problem_free(pl);
	tm_problem_free(pb);
	tm_job_free(jr);
	prev_free(&P);
	sb_free(&reason);
	return rc;
}

void tm_replan_result_clear(tm_replan_result *r)
{
	tm_placement_free(r->pl);
	free(r->json);
	free(r->text);
	memset(r, 0, sizeof *r);
}
