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

/* Floors of the uncertainties (docs/model.md, section 16). Time: the
 * spread of one placement's step time over a real run (p10–p90 of the
 * committed 4×H200 run, ±0.6 %). Temperature: a prediction's error that
 * the model does not explain (the chassis fans follow the hottest GPU,
 * neighbours heat each other, the chassis warms): the RMS of the model's
 * per-GPU errors over every committed real comparison (tests/real: 15
 * GPU-phases, 0.0 to 4.2 °C), 1.7 °C; differences of temperatures at
 * least 1 °C, what nvidia-smi's whole degrees resolve. */
#define TIME_FLOOR_PCT 0.5
#define TEMP_ENV_SD_C 1.7
#define TEMP_FLOOR_C 1.0

double tm_temp_sd(const tm_problem *pb, int g, double busy)
{
	double w = (1 - busy) * pb->t_wait_sd[g];
	return sqrt(pb->t_fit_sd[g] * pb->t_fit_sd[g] + w * w +
	            TEMP_ENV_SD_C * TEMP_ENV_SD_C);
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
		h[r].busy = tm_rank_busy(pb, r, flat[r], t);
	}
	qsort(h, (size_t)pb->nranks, sizeof(hot), cmp_hot);
	return h;
}

/* The uncertainty of the difference of two predictions: the same GPU at
 * the same work errs the same way in both; at other work, its waiting
 * share and the unmodelled environment differ; two GPUs err apart. */
static double diff_sd(const tm_problem *pb, const hot *a, const hot *b)
{
	double sd;
	if (a->g == b->g)
		sd = hypot(fabs(a->busy - b->busy) * pb->t_wait_sd[a->g],
		           fabs(a->busy - b->busy) < 1e-12 ? 0 : TEMP_ENV_SD_C);
	else
		sd = hypot(tm_temp_sd(pb, a->g, a->busy),
		           tm_temp_sd(pb, b->g, b->busy));
	return fmax(TEMP_FLOOR_C, sd);
}

void tm_gain_of(const tm_problem *pb, const int *ref, const int *cand,
                tm_gain *gn)
{
	tm_eval a, b;
	double ta = tm_eval_flat(pb, ref, 0, &a);
	double tb = tm_eval_flat(pb, cand, 0, &b);
	hot *ha = sorted_temps(pb, ref, ta), *hb = sorted_temps(pb, cand, tb);
	int *ga = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	double dsd = 0;

	memset(gn, 0, sizeof *gn);
	gn->time_pct = (ta - tb) / ta * 100;
	/* a GPU whose work changed: its speed enters the difference */
	for (int g = 0; g < pb->ngpu; g++)
		ga[g] = -1;
	for (int r = 0; r < pb->nranks; r++)
		ga[ref[r]] = pb->rank_stage[r];
	for (int r = 0; r < pb->nranks; r++)
		if (ga[cand[r]] != pb->rank_stage[r])
			dsd = fmax(dsd, fmax(pb->derate_sd[cand[r]] /
			           pb->derate[cand[r]], pb->derate_sd[ref[r]] /
			           pb->derate[ref[r]]));
	gn->time_sd = fmax(TIME_FLOOR_PCT, 100 * sqrt(2.0) * dsd);
	gn->peak_c = ha[0].t - hb[0].t;
	gn->peak_sd = diff_sd(pb, &ha[0], &hb[0]);
	for (int k = 0; k < pb->nranks; k++) {
		double d = ha[k].t - hb[k].t, sd = diff_sd(pb, &ha[k], &hb[k]);
		if (fabs(d) > sd) {
			gn->hot_rank = k + 1;
			gn->hot_c = d;
			gn->hot_sd = sd;
			break;
		}
	}
	free(ha);
	free(hb);
	free(ga);
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

static const char *ordinal(int k, char *buf, size_t n)
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
		        ordinal(g->hot_rank, o, sizeof o), fabs(g->hot_c),
		        g->hot_sd, g->hot_c >= 0 ? "cooler" : "hotter");
	else if (g->hot_rank == 0)
		sb_add(b, ", every GPU's temperature within its uncertainty");
}
