/*
 * decide.c — the evidence of the evidence rule (docs/model.md, section
 * 16): a prediction's uncertainty, the gains of one placement over another
 * with theirs, and whether a gain is lost, won or worth its trade at the
 * policy's exchange rate. A plan moves ranks off torchrun's placement only
 * for a predicted gain larger than the model's uncertainty, and trades
 * time for temperature (or back) only at the policy's stated rate; the
 * rule itself, which re-solves without losses when the solver's best
 * trades and writes the verdict into the solution, is tm_decide in
 * solve/run.c. Nothing here solves or changes how placements are ranked.
 */
#include <stdlib.h>
#include <string.h>

#include "model/model.h"

/* Floors of the uncertainties (docs/model.md, section 16); time's is
 * TM_TIME_FLOOR_PCT (model.h). Temperature: a prediction's error that
 * the model does not explain (the chassis fans follow the hottest GPU,
 * the chassis warms, and without a coupling the neighbours' heat): for a
 * GPU without a coupling, the RMS of the model's per-GPU errors over the
 * committed real comparisons made without one (tests/real: 15
 * GPU-phases, 0.0 to 4.2 °C), 1.7 °C; for a GPU whose coupling the
 * profile gives, the RMS of the held-out errors of the coupled model over
 * the committed loop recordings (tests/real/loop.sh: 12 GPU-runs on two
 * machines, 0.0 to 1.4 °C, 0.71 °C), taken up to 1 °C, what nvidia-smi's
 * whole degrees resolve. Differences of temperatures at least 1 °C, for
 * the same reason. */
#define TEMP_ENV_SD_C 1.7
#define TEMP_ENV_COUPLED_SD_C 1.0
#define TEMP_FLOOR_C 1.0

/* What the model does not see of GPU g's temperature. */
static double env_sd(const tm_problem *pb, int g)
{
	return pb->coupled && pb->cp_first[g] < pb->cp_first[g + 1] ?
	       TEMP_ENV_COUPLED_SD_C : TEMP_ENV_SD_C;
}

double tm_temp_sd(const tm_problem *pb, int g, double busy)
{
	double w = (1 - busy) * pb->t_wait_sd[g], e = env_sd(pb, g);
	return sqrt(pb->t_fit_sd[g] * pb->t_fit_sd[g] + w * w + e * e);
}

double tm_rank_temp_sd_in(const tm_problem *pb, const int *flat, int r,
                          double t)
{
	double c;
	tm_rank_heat_in(pb, flat, r, t, &c);
	return hypot(tm_temp_sd(pb, flat[r], tm_rank_busy(pb, r, flat[r], t)),
	             c);
}

typedef struct hot {
	double t;    /* predicted temperature */
	int g;       /* GPU */
	int r;       /* its rank */
	double busy; /* its rank's busy fraction */
} hot;

static int cmp_hot(const void *x, const void *y)
{
	const hot *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? 1 : -1;
	return a->g - b->g;
}

/* The GPUs in use, hottest first. */
static hot *sorted_temps(const tm_problem *pb, const int *flat, double t)
{
	hot *h = xmalloc(sizeof(hot) * (size_t)pb->nranks);
	for (int r = 0; r < pb->nranks; r++) {
		h[r].t = tm_rank_temp_in(pb, flat, r, t);
		h[r].g = flat[r];
		h[r].r = r;
		h[r].busy = tm_rank_busy(pb, r, flat[r], t);
	}
	qsort(h, (size_t)pb->nranks, sizeof(hot), cmp_hot);
	return h;
}

/* One placement at its iteration time, for comparisons. */
typedef struct side {
	const int *flat;
	double t;
} side;

/* Does any other GPU of g's host draw another power in B than in A?
 * (a, b: the ranks on g in each.) */
static bool host_changed(const tm_problem *pb, const side *A, int a,
                         const side *B, int b, int g)
{
	int h0 = pb->host_first[pb->gpu_host[g]];
	int n = pb->c->nodes[pb->gpu_host[g]].ngpus;
	for (int h = h0; h < h0 + n; h++) {
		double x, y;
		if (h == g)
			continue;
		x = tm_host_power_in(pb, A->flat, a, h, A->t);
		y = tm_host_power_in(pb, B->flat, b, h, B->t);
		if (isfinite(x) != isfinite(y) || fabs(x - y) > 1)
			return true;
	}
	return false;
}

/* The uncertainty of the difference of two predictions. Of one GPU: at
 * the same work and with its neighbours at the same powers it errs the
 * same way in both; at other work its waiting share and what the model
 * does not see differ; with its neighbours at other powers, their
 * coupling's uncertainty enters — and, where the profile gives the GPU no
 * coupling, what the model does not see, for the neighbours' heat is in
 * it. Two GPUs err apart. */
static double diff_sd(const tm_problem *pb, const side *A, const hot *a,
                      const side *B, const hot *b)
{
	double sd;
	if (a->g == b->g) {
		int g = a->g;
		double db = fabs(a->busy - b->busy), v = 0, env = 0;
		bool coupled = pb->coupled && pb->cp_first[g] < pb->cp_first[g + 1];
		double f = coupled ? tm_fit_spread_in(pb, A->flat, a->r, A->t,
		                                      B->flat, b->r, B->t) : NAN;
		for (int k = coupled ? pb->cp_first[g] : 0;
		     coupled && !isfinite(f) && k < pb->cp_first[g + 1]; k++) {
			int h = pb->cp_src[k];
			double d = tm_host_power_in(pb, A->flat, a->r, h, A->t) -
			           tm_host_power_in(pb, B->flat, b->r, h, B->t);
			if (isfinite(d))
				v += pb->cp_sd[k] * d * (pb->cp_sd[k] * d);
		}
		if (isfinite(f))
			v = f * f;
		if (db > 1e-12 ||
		    (!coupled && host_changed(pb, A, a->r, B, b->r, g)))
			env = env_sd(pb, g);
		sd = sqrt(db * pb->t_wait_sd[g] * (db * pb->t_wait_sd[g]) + v +
		          env * env);
	} else {
		sd = hypot(tm_rank_temp_sd_in(pb, A->flat, a->r, A->t),
		           tm_rank_temp_sd_in(pb, B->flat, b->r, B->t));
	}
	return fmax(TEMP_FLOOR_C, sd);
}

/* Replica times of one placement, with its largest two, for asking
 * cheaply what one GPU's slower derate does to the iteration time. */
typedef struct reps {
	double *ms;        /* replica → its time */
	int top;           /* the slowest replica */
	double second;     /* the slowest time of the others */
	double ar;         /* the all-reduce (derates do not enter it) */
} reps;

static void reps_of(const tm_problem *pb, const int *flat, reps *R)
{
	R->ms = xmalloc(sizeof(double) * (size_t)pb->nrep);
	R->top = 0;
	R->second = -INFINITY;
	for (int d = 0; d < pb->nrep; d++) {
		R->ms[d] = tm_rep_ms(pb, flat, d);
		if (R->ms[d] > R->ms[R->top] || d == 0) {
			if (d)
				R->second = R->ms[R->top];
			R->top = d;
		} else if (R->ms[d] > R->second) {
			R->second = R->ms[d];
		}
	}
	R->ar = tm_allreduce_ms(pb, flat);
}

/* The iteration time of flat when q (pb with one derate changed) times
 * the replicas that rank r's instance ties together: only theirs change. */
static double time_with(const tm_problem *q, const int *flat, const reps *R,
                        int r)
{
	const int *tied;
	int n = tm_tied_reps(q, q->rank_rep[r], q->rank_stage[r], &tied);
	double t = -INFINITY;
	if (n == 1) {
		t = tied[0] == R->top ? R->second : R->ms[R->top];
		return fmax(t, tm_rep_ms(q, flat, tied[0])) + R->ar;
	}
	for (int d = 0; d < q->nrep; d++) {
		bool in = false;
		for (int e = 0; e < n && !in; e++)
			in = tied[e] == d;
		t = fmax(t, in ? tm_rep_ms(q, flat, d) : R->ms[d]);
	}
	return t + R->ar;
}

/* The uncertainty of the time gain of cand over ref: each GPU's derate
 * uncertainty carried through both placements' iteration times (the
 * gain's change when that derate rises by its uncertainty). An iteration
 * runs at its slowest GPU, so of the GPUs that would make the reference
 * slower the largest change counts, of those that would make the
 * candidate slower too, and the two with the run-to-run floor: ten GPUs
 * tied at the slowest are not ten times as uncertain as one. One rule for
 * a GPU's derate and for the plan-level gain it makes: a derate that
 * alone sets the gain makes it resolvable when the derate is. */
static double time_sd(const tm_problem *pb, const int *ref, const int *cand,
                      double ta, double tb)
{
	tm_problem q = *pb;   /* the same problem, its derates a copy */
	double *der = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	double up = 0, down = 0;
	double g0 = (ta - tb) / ta * 100;
	int *ra = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	int *rb = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	reps A, B;

	memcpy(der, pb->derate, sizeof(double) * (size_t)pb->ngpu);
	q.derate = der;
	for (int g = 0; g < pb->ngpu; g++)
		ra[g] = rb[g] = -1;
	for (int r = 0; r < pb->nranks; r++) {
		ra[ref[r]] = r;
		rb[cand[r]] = r;
	}
	reps_of(pb, ref, &A);
	reps_of(pb, cand, &B);
	for (int g = 0; g < pb->ngpu; g++) {
		double xa = ta, xb = tb, d;
		if ((ra[g] < 0 && rb[g] < 0) || !(pb->derate_sd[g] > 0))
			continue;
		der[g] += pb->derate_sd[g];
		if (ra[g] >= 0)
			xa = time_with(&q, ref, &A, ra[g]);
		if (rb[g] >= 0)
			xb = time_with(&q, cand, &B, rb[g]);
		der[g] = pb->derate[g];
		d = (xa - xb) / xa * 100 - g0;
		up = fmax(up, d);
		down = fmax(down, -d);
	}
	free(A.ms);
	free(B.ms);
	free(ra);
	free(rb);
	free(der);
	return sqrt(TM_TIME_FLOOR_PCT * TM_TIME_FLOOR_PCT + up * up + down * down);
}

void tm_gain_of(const tm_problem *pb, const int *ref, const int *cand,
                tm_gain *gn)
{
	tm_eval a, b;
	double ta = tm_eval_flat(pb, ref, 0, &a);
	double tb = tm_eval_flat(pb, cand, 0, &b);
	side A = { ref, ta }, B = { cand, tb };
	hot *ha = sorted_temps(pb, ref, ta), *hb = sorted_temps(pb, cand, tb);

	memset(gn, 0, sizeof *gn);
	gn->time_pct = (ta - tb) / ta * 100;
	gn->time_sd = time_sd(pb, ref, cand, ta, tb);
	gn->peak_c = ha[0].t - hb[0].t;
	gn->peak_sd = diff_sd(pb, &A, &ha[0], &B, &hb[0]);
	for (int k = 0; k < pb->nranks; k++) {
		double d = ha[k].t - hb[k].t;
		double sd = diff_sd(pb, &A, &ha[k], &B, &hb[k]);
		if (fabs(d) > sd) {
			gn->hot_rank = k + 1;
			gn->hot_c = d;
			gn->hot_sd = sd;
			break;
		}
	}
	free(ha);
	free(hb);
}

/* Losses the evidence resolves, and gains it resolves beyond the least
 * gains asked for. */
bool tm_gain_lost(const tm_gain *g)
{
	return g->time_pct < -g->time_sd || g->peak_c < -g->peak_sd ||
	       (g->hot_rank > 0 && g->hot_c < 0);
}

bool tm_gain_won(const tm_gain *g, const tm_min_gain *mg)
{
	return (g->time_pct > g->time_sd && g->time_pct >= mg->time_pct) ||
	       (g->hot_rank > 0 && g->hot_c > 0 && g->hot_c >= mg->peak_c);
}

bool tm_gain_worth(const tm_gain *g, double rate)
{
	/* the temperature side: the first place the sorted temperatures
	 * differ, the peak when that is where */
	double c = g->hot_rank ? g->hot_c : g->peak_c;
	double sd = g->hot_rank ? g->hot_sd : g->peak_sd;
	double t_lo = g->time_pct - g->time_sd, t_hi = g->time_pct + g->time_sd;
	if (!isfinite(rate))
		return false;
	if (g->time_pct < -g->time_sd)       /* slower, for cooler GPUs */
		return c - sd > 0 && c - sd >= -t_hi * rate;
	return t_lo > 0 && t_lo * rate >= -(c - sd);  /* faster, hotter */
}

const char *tm_ordinal(int k, char *buf, size_t n)
{
	static const char *const sfx[] = { "th", "st", "nd", "rd" };
	int u = k % 10, t = k % 100;
	snprintf(buf, n, "%d%s", k, (u >= 1 && u <= 3 && (t < 11 || t > 13)) ?
	         sfx[u] : sfx[0]);
	return buf;
}

void tm_gain_text(const tm_gain *g, strbuf *b)
{
	char o[16];
	sb_addf(b, "%.2f ± %.2f %% %s, peak %.1f ± %.1f °C %s",
	        fabs(g->time_pct), g->time_sd, g->time_pct >= 0 ? "faster" :
	        "slower", fabs(g->peak_c), g->peak_sd, g->peak_c >= 0 ?
	        "cooler" : "hotter");
	if (g->hot_rank > 1)
		sb_addf(b, ", the %s hottest GPU %.1f ± %.1f °C %s",
		        tm_ordinal(g->hot_rank, o, sizeof o), fabs(g->hot_c),
		        g->hot_sd, g->hot_c >= 0 ? "cooler" : "hotter");
	else if (g->hot_rank == 0)
		sb_add(b, ", every GPU's temperature within its uncertainty");
}
