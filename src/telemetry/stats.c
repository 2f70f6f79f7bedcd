/*
 * stats.c — the profile statistics: how each GPU's stream of samples
 * becomes one thermap.profile/1 entry. Per GPU, the settling rule (which
 * samples count as idle, busy or at full load, when a GPU has settled,
 * the guard before a change), the idle and load levels, the temperature
 * histogram, the full-load clocks; over the GPUs, the thermal fit (own,
 * pooled over one model or host, last resort), what was estimated, and
 * the derate against the fastest GPU. A fixed amount of state per GPU,
 * and with --phases a mean per phase (phases.c fits them).
 *
 * The rules are written down in docs/profile.md; the constants below are
 * the ones that page names. It knows no files and no GPU identities but
 * what the sink (sink.c) hands it; the entries go to format/profile.c's
 * writer.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

#define BUSY_UTIL 10.0     /* % utilisation: busy from here */
#define FULL_UTIL 95.0     /* % utilisation: full load from here */
#define BUSY_PFRAC 0.25    /* without utilisation: busy at 25 % of limit */
#define FULL_PFRAC 0.75    /* ... full load at 75 % of the power limit */
#define SETTLE_S 30.0      /* settled after this long in one state */
#define GUARD_S 1.0        /* the last second before a change is mixed */
#define FLAT_C 1.0         /* a log that starts at rest varies this little */
#define CLOCK_STEP_MHZ 15.0/* SM clock resolution: smaller gaps are noise */
#define FIT_SPAN_W 100.0   /* fit without idle: settled power spans this */
#define FIT_MIN_N 10       /* ... over at least this many samples */
#define POOL_SD_W 30.0     /* pooled fit: within-GPU power SD, W: that of
                              FIT_SPAN_W spread evenly (100/√12) */
#define LIMIT_RISE_C 30.0  /* last-resort slope: °C over ambient at the
                              power limit (the real recordings' fits) */
#define IDLE_SHARE 0.11    /* idle power without idle samples: share of
                              the power limit (real idle recordings) */
#define CAPPED_FRAC 0.5    /* power-capped: reason active this often */
#define CAPPED_POWER 0.95  /* ... or, without reasons, this share of the
                              limit drawn at full load */
#define THERMAL_FRAC 0.05  /* thermally slowed: reason active this often */
#define LIMIT_MAX_W 1e5    /* a power limit an estimate may rest on, at most
                              (the profile format's range of powers) */
#define QMAX 1024          /* samples held for the guard, per GPU (2^k) */
#define FIT_SD_MAX 100.0   /* a fit's residual SD, °C, at most (the
                              profile's range): beyond, it is no fit */
#define DERATE_MAX 100.0   /* derate and its SD at most (the profile's) */

/* ---- statistics ----------------------------------------------------------- */

typedef struct mean {
	double n, s;
} mean;

static inline void mean_add(mean *m, double x)
{
	if (!isnan(x)) {
		m->n++;
		m->s += x;
	}
}

static double mean_get(const mean *m)
{
	return m->n > 0 ? m->s / m->n : NAN;
}

/* Temperatures of loaded samples, counted per 0.1 °C, for the 95th
 * percentile: a few dozen distinct values in practice, at most a few
 * thousand (the profile accepts -50..200 °C). */
typedef struct hist {
	int n, cap, last;
	int32_t *key;
	long *cnt;
} hist;

static void hist_add(hist *h, int32_t k, long c)
{
	int lo = 0, hi = h->n;
	if (h->last < h->n && h->key[h->last] == k) {  /* same as before */
		h->cnt[h->last] += c;
		return;
	}
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (h->key[mid] < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	h->last = lo;
	if (lo < h->n && h->key[lo] == k) {
		h->cnt[lo] += c;
		return;
	}
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 16;
		h->key = xrealloc(h->key, (size_t)h->cap * sizeof *h->key);
		h->cnt = xrealloc(h->cnt, (size_t)h->cap * sizeof *h->cnt);
	}
	memmove(h->key + lo + 1, h->key + lo, (size_t)(h->n - lo) * sizeof *h->key);
	memmove(h->cnt + lo + 1, h->cnt + lo, (size_t)(h->n - lo) * sizeof *h->cnt);
	h->key[lo] = k;
	h->cnt[lo] = c;
	h->n++;
}

/* Nearest rank: the smallest value with at least ceil(q * n) samples at
 * or below it. */
static double hist_rank(const hist *h, double q)
{
	long total = 0, need, run = 0;
	for (int i = 0; i < h->n; i++)
		total += h->cnt[i];
	if (total == 0)
		return NAN;
	need = (long)ceil(q * (double)total - 1e-9);
	if (need < 1)
		need = 1;
	for (int i = 0; i < h->n; i++) {
		run += h->cnt[i];
		if (run >= need)
			return h->key[i] / 10.0;
	}
	return h->key[h->n - 1] / 10.0;
}

/* Full-load SM clocks, for the standard error of their mean: the spread,
 * and how alike consecutive samples are (nvidia-smi samples faster than
 * the clock wanders). Sums are of d = clock - the GPU's first full-load
 * clock, so that squares of ~2000 MHz keep their precision. */
typedef struct clocks {
	double n, s, ss;        /* samples, Σd (MHz), Σd² (MHz²) */
	double np, s0, s1, s01; /* consecutive pairs: count, Σ earlier d,
	                           Σ later d (MHz), Σ earlier·later (MHz²) */
	double first, last;     /* d of the earliest and latest sample, MHz */
	long first_seq, last_seq; /* their numbers in the GPU's stream */
} clocks;

/* What the settled samples of one GPU add up to. */
typedef struct stats {
	mean temp_idle, power_idle;
	mean temp_full, power_full, tlimit_full, margin_full, clock_full;
	clocks clk;                         /* full-load clocks, spread */
	long nidle, load;
	hist temp_load;
	double temp_max;
	mean thermal, pcap;                 /* per-sample flags, loaded */
	double th_us, th_span, pc_us, pc_span; /* counters, loaded, µs */
	double fn, fx, fy, fxx, fxy, fyy;   /* fit sums, shifted: W, °C */
	long fit_idle, fit_busy;
	double fit_pmin, fit_pmax;          /* power range of fit samples */
} stats;

static void stats_init(stats *st)
{
	memset(st, 0, sizeof *st);
	st->temp_max = NAN;
	st->fit_pmin = st->fit_pmax = NAN;
	st->clk.first_seq = st->clk.last_seq = -1;
}

static void clocks_add(clocks *c, double d, long seq)
{
	if (c->n > 0 && seq == c->last_seq + 1) {
		c->np++;
		c->s0 += c->last;
		c->s1 += d;
		c->s01 += c->last * d;
	}
	if (c->n == 0) {
		c->first = d;
		c->first_seq = seq;
	}
	c->n++;
	c->s += d;
	c->ss += d * d;
	c->last = d;
	c->last_seq = seq;
}

/* Adds b's clocks to a's. Either may hold the earlier samples (the early
 * part of a log's first run is merged into the rest); a pair that the
 * merge makes consecutive is counted as if the samples came in order. */
static void clocks_merge(clocks *a, const clocks *b)
{
	if (b->n == 0)
		return;
	if (a->n == 0) {
		*a = *b;
		return;
	}
	a->np += b->np;
	a->s0 += b->s0;
	a->s1 += b->s1;
	a->s01 += b->s01;
	if (b->last_seq + 1 == a->first_seq) {
		a->np++;
		a->s0 += b->last;
		a->s1 += a->first;
		a->s01 += b->last * a->first;
	} else if (a->last_seq + 1 == b->first_seq) {
		a->np++;
		a->s0 += a->last;
		a->s1 += b->first;
		a->s01 += a->last * b->first;
	}
	if (b->first_seq < a->first_seq) {
		a->first = b->first;
		a->first_seq = b->first_seq;
	}
	if (b->last_seq > a->last_seq) {
		a->last = b->last;
		a->last_seq = b->last_seq;
	}
	a->n += b->n;
	a->s += b->s;
	a->ss += b->ss;
}

/* Standard error of the mean full-load clock, MHz; NAN below two
 * samples. Consecutive samples are alike, so n of them count as
 * n·(1 − ρ)/(1 + ρ) independent ones (the effective size of a first-order
 * autoregressive series), ρ being the lag-1 autocorrelation over pairs of
 * consecutive samples, 0 when negative or unknown; at least 1. */
static double clocks_se(const clocks *c)
{
	double m, ss, var, rho = 0, neff;
	if (c->n < 2)
		return NAN;
	m = c->s / c->n;
	ss = c->ss - c->n * m * m;          /* Σ(d − m)² */
	var = ss / (c->n - 1);
	if (!(var > 0))
		return 0;
	if (c->np > 0) {
		double c1 = (c->s01 - m * (c->s0 + c->s1) + c->np * m * m) /
		            c->np;
		rho = c1 / (ss / c->n);
	}
	if (!(rho > 0))
		rho = 0;
	if (rho > 1)
		rho = 1;
	neff = c->n * (1 - rho) / (1 + rho);
	if (neff < 1)
		neff = 1;
	return sqrt(var / neff);
}

static void stats_free(stats *st)
{
	free(st->temp_load.key);
	free(st->temp_load.cnt);
	stats_init(st);
}

static void mean_merge(mean *a, const mean *b)
{
	a->n += b->n;
	a->s += b->s;
}

static void stats_merge(stats *a, const stats *b)
{
	mean_merge(&a->temp_idle, &b->temp_idle);
	mean_merge(&a->power_idle, &b->power_idle);
	mean_merge(&a->temp_full, &b->temp_full);
	mean_merge(&a->power_full, &b->power_full);
	mean_merge(&a->tlimit_full, &b->tlimit_full);
	mean_merge(&a->margin_full, &b->margin_full);
	mean_merge(&a->clock_full, &b->clock_full);
	clocks_merge(&a->clk, &b->clk);
	a->nidle += b->nidle;
	a->load += b->load;
	for (int i = 0; i < b->temp_load.n; i++)
		hist_add(&a->temp_load, b->temp_load.key[i], b->temp_load.cnt[i]);
	if (!isnan(b->temp_max) && !(b->temp_max <= a->temp_max))
		a->temp_max = b->temp_max;
	mean_merge(&a->thermal, &b->thermal);
	mean_merge(&a->pcap, &b->pcap);
	a->th_us += b->th_us;
	a->th_span += b->th_span;
	a->pc_us += b->pc_us;
	a->pc_span += b->pc_span;
	a->fn += b->fn;
	a->fx += b->fx;
	a->fy += b->fy;
	a->fxx += b->fxx;
	a->fxy += b->fxy;
	a->fyy += b->fyy;
	a->fit_idle += b->fit_idle;
	a->fit_busy += b->fit_busy;
	/* NAN range when b has no fit samples: nothing to take */
	if (b->fn > 0 && !(b->fit_pmin >= a->fit_pmin))
		a->fit_pmin = b->fit_pmin;
	if (b->fn > 0 && !(b->fit_pmax <= a->fit_pmax))
		a->fit_pmax = b->fit_pmax;
}

/* ---- per GPU state --------------------------------------------------------- */

enum { ST_UNKNOWN = -1, ST_IDLE = 0, ST_BUSY = 1, ST_FULL = 2 };

typedef struct held {       /* a sample waiting out the guard */
	tl_sample s;
	double dth, dpc, dt;    /* counter increments since the last sample */
	long seq;               /* its number in the GPU's stream, from 1 */
	signed char state;
	bool settled;           /* SETTLE_S into its run */
	bool initial;           /* in the run that starts the log */
} held;


/* One GPU's statistics (telemetry.h). */
struct tl_gpu_stats {
	long samples;
	double t0, t1;
	mean plimit;
	double plimit_last, smmax;
	double pmax, tmin;      /* largest busy power (W), lowest
	                           temperature (°C) of any sample; NAN: none */
	double clk0;            /* clock shift (MHz), NAN until set */
	double prev_t, prev_th, prev_pc;
	int run;                /* state of the current run */
	double run_start;
	bool initial;           /* the current run started the log */
	bool started;
	double init_min, init_max;
	bool ref_set;
	double x0, y0;          /* fit shift */
	stats main, prov;       /* prov: the early part of the first run */
	held *q;
	int qhead, qn, qcap;
	const tl_phases *ph;    /* --phases, or NULL */
	int pcur;               /* the first phase whose span may still come */
	struct pmean {          /* per phase: the samples in its span */
		long n;
		double t, p;        /* Σ temperature (°C), Σ power (W) */
	} *pm;                  /* ph->n of them once a sample counts */
};

tl_gpu_stats *tl_gpu_stats_new(void)
{
	tl_gpu_stats *g = xcalloc(1, sizeof *g);
	g->t0 = g->t1 = g->prev_t = NAN;
	g->prev_th = g->prev_pc = NAN;
	g->plimit_last = g->smmax = NAN;
	g->pmax = g->tmin = g->clk0 = NAN;
	g->run = ST_UNKNOWN;
	g->initial = true;
	g->init_min = INFINITY;
	g->init_max = -INFINITY;
	stats_init(&g->main);
	stats_init(&g->prov);
	return g;
}

void tl_gpu_stats_free(tl_gpu_stats *g)
{
	if (!g)
		return;
	stats_free(&g->main);
	stats_free(&g->prov);
	free(g->q);
	free(g->pm);
	free(g);
}

long tl_gpu_stats_samples(const tl_gpu_stats *g)
{
	return g->samples;
}

double tl_gpu_stats_last_t(const tl_gpu_stats *g)
{
	return g->prev_t;
}

/* ---- phases (profile --phases) ------------------------------------------ */

void tl_gpu_stats_phases(tl_gpu_stats *g, const tl_phases *ph)
{
	g->ph = ph;
	g->pcur = 0;
}

/* A sample with a time, a temperature and a power into the phase whose
 * counted span holds it. A GPU's samples come in time order and the
 * spans are in time order and apart, so one cursor walks them. */
static void phase_add(tl_gpu_stats *g, const tl_sample *s)
{
	const tl_phases *ph = g->ph;
	struct pmean *m;
	while (g->pcur < ph->n && s->t > ph->p[g->pcur].hi)
		g->pcur++;
	if (g->pcur == ph->n || s->t < ph->p[g->pcur].lo)
		return;
	if (!g->pm)
		g->pm = xcalloc((size_t)ph->n, sizeof *g->pm);
	m = &g->pm[g->pcur];
	m->n++;
	m->t += s->v[TL_TEMP];
	m->p += s->v[TL_POWER];
}

long tl_gpu_stats_phase(const tl_gpu_stats *g, int i, double *temp,
                        double *power)
{
	const struct pmean *m = g->pm ? &g->pm[i] : NULL;
	if (!m || m->n == 0) {
		*temp = *power = NAN;
		return 0;
	}
	*temp = m->t / (double)m->n;
	*power = m->p / (double)m->n;
	return m->n;
}

/* ---- the settling rule -------------------------------------------------- */

static int state_of(const tl_gpu_stats *g, const tl_sample *s)
{
	double u = s->v[TL_UTIL], p = s->v[TL_POWER], lim;
	if (!isnan(u))
		return u >= FULL_UTIL ? ST_FULL : u >= BUSY_UTIL ? ST_BUSY
		                                                 : ST_IDLE;
	lim = !isnan(s->v[TL_POWER_LIMIT]) ? s->v[TL_POWER_LIMIT]
	                                   : g->plimit_last;
	if (isnan(p) || isnan(lim) || lim <= 0)
		return ST_UNKNOWN;
	return p >= FULL_PFRAC * lim ? ST_FULL : p >= BUSY_PFRAC * lim
	                                         ? ST_BUSY : ST_IDLE;
}

static void stats_add(tl_gpu_stats *g, stats *st, const held *h)
{
	const double *v = h->s.v;
	double T = v[TL_TEMP], P = v[TL_POWER];
	if (h->state == ST_IDLE) {
		st->nidle++;
		mean_add(&st->temp_idle, T);
		mean_add(&st->power_idle, P);
	} else {
		st->load++;
		if (!isnan(T)) {
			hist_add(&st->temp_load, (int32_t)floor(T * 10 + 0.5), 1);
			if (!(T <= st->temp_max))
				st->temp_max = T;
		}
		mean_add(&st->thermal, v[TL_THERMAL]);
		mean_add(&st->pcap, v[TL_PCAP]);
		if (!isnan(h->dth) && h->dt > 0) {
			st->th_us += h->dth;
			st->th_span += h->dt * 1e6;
		}
		if (!isnan(h->dpc) && h->dt > 0) {
			st->pc_us += h->dpc;
			st->pc_span += h->dt * 1e6;
		}
		if (h->state == ST_FULL) {
			mean_add(&st->temp_full, T);
			mean_add(&st->power_full, P);
			mean_add(&st->tlimit_full, v[TL_TLIMIT]);
			mean_add(&st->margin_full, v[TL_SLOWDOWN_C] - T);
			mean_add(&st->clock_full, v[TL_SM_CLOCK]);
			if (!isnan(v[TL_SM_CLOCK])) {
				if (isnan(g->clk0))
					g->clk0 = v[TL_SM_CLOCK];
				clocks_add(&st->clk, v[TL_SM_CLOCK] - g->clk0,
				           h->seq);
			}
		}
	}
	if (!isnan(T) && !isnan(P)) {
		double x, y;
		if (!g->ref_set) {
			g->ref_set = true;
			g->x0 = P;
			g->y0 = T;
		}
		x = P - g->x0;
		y = T - g->y0;
		st->fn++;
		st->fx += x;
		st->fy += y;
		st->fxx += x * x;
		st->fxy += x * y;
		st->fyy += y * y;
		if (h->state == ST_IDLE)
			st->fit_idle++;
		else
			st->fit_busy++;
		if (!(P >= st->fit_pmin))
			st->fit_pmin = P;
		if (!(P <= st->fit_pmax))
			st->fit_pmax = P;
	}
}

/* A held sample whose next change of state is more than GUARD_S away. */
static void release(tl_gpu_stats *g, const held *h)
{
	if (h->state == ST_UNKNOWN)
		return;
	if (h->initial && !isnan(h->s.v[TL_TEMP])) {
		if (h->s.v[TL_TEMP] < g->init_min)
			g->init_min = h->s.v[TL_TEMP];
		if (h->s.v[TL_TEMP] > g->init_max)
			g->init_max = h->s.v[TL_TEMP];
	}
	if (h->settled)
		stats_add(g, &g->main, h);
	else if (h->initial)
		stats_add(g, &g->prov, h);
}

static void end_initial(tl_gpu_stats *g)
{
	if (!g->initial)
		return;
	g->initial = false;
	/* The log began with the GPU at rest: its first run is settled from
	 * the start when the temperature stayed within FLAT_C. */
	if (g->init_min <= g->init_max && g->init_max - g->init_min <= FLAT_C)
		stats_merge(&g->main, &g->prov);
	stats_free(&g->prov);
}

static held *qat(tl_gpu_stats *g, int i)
{
	return &g->q[(g->qhead + i) & (g->qcap - 1)];
}

static void qpop(tl_gpu_stats *g)
{
	g->qhead = (g->qhead + 1) & (g->qcap - 1);
	g->qn--;
}

/* The slot after the last held sample, made room for; feed() takes it
 * into the queue. Popping from the front never moves it. */
static held *qreserve(tl_gpu_stats *g)
{
	if (g->qn == g->qcap) {
		if (g->qcap == QMAX) {
			/* more than QMAX samples within GUARD_S: the oldest
			 * is let through, as at the end of a log */
			release(g, qat(g, 0));
			qpop(g);
		} else {
			int ncap = g->qcap ? 2 * g->qcap : 4;
			held *nq = xmalloc((size_t)ncap * sizeof *nq);
			for (int i = 0; i < g->qn; i++)
				nq[i] = *qat(g, i);
			free(g->q);
			g->q = nq;
			g->qcap = ncap;
			g->qhead = 0;
		}
	}
	return qat(g, g->qn);
}

/* h is the slot qreserve() gave (or, without a time, any held sample). */
static void feed(tl_gpu_stats *g, held *h)
{
	int busy_eq = h->state >= ST_BUSY ? ST_BUSY : h->state;
	double t = h->s.t;

	if (isnan(t)) {
		/* no time: a snapshot; nothing to settle against */
		if (h->state != ST_UNKNOWN)
			stats_add(g, &g->main, h);
		return;
	}
	if (!g->started || busy_eq != g->run) {
		while (g->qn) {
			if (t - qat(g, 0)->s.t > GUARD_S)
				release(g, qat(g, 0));
			qpop(g);
		}
		if (g->started)
			end_initial(g);
		g->started = true;
		g->run = busy_eq;
		g->run_start = t;
	} else {
		while (g->qn && t - qat(g, 0)->s.t > GUARD_S) {
			release(g, qat(g, 0));
			qpop(g);
		}
	}
	h->settled = t - g->run_start >= SETTLE_S;
	h->initial = g->initial;
	g->qn++;   /* h is the reserved slot */
}

static void finish_gpu(tl_gpu_stats *g)
{
	while (g->qn) {
		release(g, qat(g, 0));
		qpop(g);
	}
	end_initial(g);
}

void tl_gpu_stats_add(tl_gpu_stats *g, const tl_sample *s)
{
	held *h;

	g->samples++;
	h = qreserve(g);
	h->s = *s;
	h->seq = g->samples;
	h->dt = s->t - g->prev_t;
	h->dth = s->v[TL_THERMAL_US] - g->prev_th;
	h->dpc = s->v[TL_PCAP_US] - g->prev_pc;
	if (h->dth < 0)   /* counter reset: the interval says nothing */
		h->dth = NAN;
	if (h->dpc < 0)
		h->dpc = NAN;
	if (!isnan(s->t)) {
		if (isnan(g->t0))
			g->t0 = s->t;
		g->t1 = s->t;
		g->prev_t = s->t;
	}
	g->prev_th = s->v[TL_THERMAL_US];
	g->prev_pc = s->v[TL_PCAP_US];
	mean_add(&g->plimit, s->v[TL_POWER_LIMIT]);
	if (!isnan(s->v[TL_POWER_LIMIT]))
		g->plimit_last = s->v[TL_POWER_LIMIT];
	if (!isnan(s->v[TL_SM_CLOCK_MAX]) && !(s->v[TL_SM_CLOCK_MAX] <= g->smmax))
		g->smmax = s->v[TL_SM_CLOCK_MAX];
	if (!isnan(s->v[TL_TEMP]) && !(s->v[TL_TEMP] >= g->tmin))
		g->tmin = s->v[TL_TEMP];
	h->state = (signed char)state_of(g, s);
	if (h->state >= ST_BUSY && !isnan(s->v[TL_POWER]) &&
	    !(s->v[TL_POWER] <= g->pmax))
		g->pmax = s->v[TL_POWER];
	h->settled = h->initial = false;
	feed(g, h);
	if (g->ph && !isnan(s->t) && !isnan(s->v[TL_TEMP]) &&
	    !isnan(s->v[TL_POWER]))
		phase_add(g, s);
}

/* ---- the entries ---------------------------------------------------------- */

static double frac(const mean *flags, double us, double span)
{
	if (flags->n > 0)
		return flags->s / flags->n;
	if (span > 0) {
		double f = us / span;
		return f < 0 ? 0 : f > 1 ? 1 : f;
	}
	return NAN;
}

/* x rounded to d decimals as the profile writes it (printf rounds the
 * exact binary value), so that rules compare what a reader will see. */
static double rnd(double x, int d)
{
	char buf[64];
	if (!isfinite(x))
		return x;
	snprintf(buf, sizeof buf, "%.*f", d, x);
	return strtod(buf, NULL);
}

/* Number fields that may be estimated. */
enum { E_TEMP_IDLE, E_POWER_IDLE, E_AMBIENT, E_R, E_FIT_SD, NEST };
static const int est_fields[NEST] = {
	TM_PF_TEMP_IDLE_C, TM_PF_POWER_IDLE_W, TM_PF_AMBIENT_C,
	TM_PF_R_C_PER_W, TM_PF_TEMP_FIT_SD_C,
};

/* Where a GPU's slope comes from. */
enum { FIT_NONE, FIT_OWN, FIT_POOLED, FIT_LIMIT };

/* One entry of the profile between the statistics and the output. */
typedef struct ent {
	const tl_gpu_stats *g;
	const tl_ident *id;
	const char *group;      /* model name, else host: one pooled fit */
	bool by_model;          /* group is a model name, not a host */
	double n, xm, ym;       /* fit samples; mean power (W), temp (°C) */
	double sxx, sxy, syy;   /* their centred sums: W², W·°C, °C² */
	double temp_idle, power_idle, temp_load, power_load; /* °C, W */
	double plimit;          /* mean power limit, W */
	double amb, r, fit_sd;  /* ambient (°C), slope (°C/W), residual SD */
	int fit;                /* FIT_* */
	double clock, clock_se; /* mean full-load clock, its std error, MHz */
	double thermal, pcap;   /* shares of loaded samples */
	double der, der_sd;     /* derate and its standard uncertainty */
	int basis;              /* enum tm_derate_basis */
	char *est[NEST];        /* how each estimated field was estimated */
} ent;

static void est_set(ent *e, int f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void est_set(ent *e, int f, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	free(e->est[f]);
	e->est[f] = xstrdup(buf);
}

/* The GPU's own fit. The steady-state fit needs settled samples at two
 * power levels: idle and busy, or a power span of FIT_SPAN_W (a power
 * controller or a varying load moves power without idling); otherwise
 * the slope is noise and the GPU gets no fit of its own. */
static void own_fit(ent *e, const stats *st)
{
	bool levels = st->fit_idle >= 2 && st->fit_busy >= 2;
	bool spread = st->fn >= FIT_MIN_N &&
	              st->fit_pmax - st->fit_pmin >= FIT_SPAN_W;
	double r, amb, sd = NAN;
	if ((!levels && !spread) || !(e->sxx > 0))
		return;
	r = e->sxy / e->sxx;
	amb = e->ym - r * e->xm;
	if (!(r > 0 && r <= 10) || !(amb >= -50 && amb <= 200))
		return;
	/* two parameters from these samples */
	if (e->n > 2)
		sd = sqrt(fmax(0, e->syy - e->sxy * e->sxy / e->sxx) / (e->n - 2));
	if (sd > FIT_SD_MAX)
		return;
	e->r = r;
	e->amb = amb;
	e->fit = FIT_OWN;
	e->fit_sd = sd;
}

/* A given slope r for a GPU without a fit of its own: its ambient from
 * its own means, its residual spread about that line (one parameter
 * from these samples). False when the ambient is not physical. */
static bool slope_fit(ent *e, double r, int kind)
{
	double amb = e->ym - r * e->xm, sd = NAN;
	if (!(e->n >= 1) || !(r > 0 && r <= 10) ||
	    !(amb >= -50 && amb <= 200))
		return false;
	if (e->n > 1)
		sd = sqrt(fmax(0, e->syy - 2 * r * e->sxy + r * r * e->sxx) /
		          (e->n - 1));
	if (sd > FIT_SD_MAX)
		return false;
	e->r = r;
	e->amb = amb;
	e->fit = kind;
	e->fit_sd = sd;
	return true;
}

static int cmp_group(const void *pa, const void *pb)
{
	const ent *a = *(const ent *const *)pa, *b = *(const ent *const *)pb;
	int c;
	if (a->by_model != b->by_model)
		return a->by_model ? -1 : 1;
	if ((c = strcmp(a->group, b->group)))
		return c;
	return a < b ? -1 : a > b;   /* output order within a group */
}

/* The GPUs of one group (one model, or one host) without a fit of their
 * own: a pooled slope when the group's within-GPU power variation
 * supports one, else the last-resort slope from the power limit. Power
 * levels for GPUs without idle samples come from the same group. */
static void group_fits(ent **m, int n)
{
	double sxx = 0, sxy = 0, N = 0, G = 0, pmax = NAN, sd, r = NAN;
	const char *what = m[0]->by_model ? "model" : "host";

	for (int i = 0; i < n; i++) {
		const ent *e = m[i];
		if (!isnan(e->g->pmax) && !(e->g->pmax <= pmax))
			pmax = e->g->pmax;
		if (e->n < 2)
			continue;
		sxx += e->sxx;
		sxy += e->sxy;
		N += e->n;
		G++;
	}
	/* fixed effects: one slope, an intercept per GPU; the slope rests on
	 * each GPU's power moving about its own mean */
	sd = N > G ? sqrt(sxx / (N - G)) : NAN;
	if (G >= 2 && N - G >= FIT_MIN_N && sd >= POOL_SD_W && sxx > 0)
		r = sxy / sxx;
	for (int i = 0; i < n; i++) {
		ent *e = m[i];
		double lim;
		/* only a GPU that worked can be planned with */
		if (e->fit != FIT_NONE || !(e->n >= 1) || e->g->main.load == 0)
			continue;
		if (slope_fit(e, r, FIT_POOLED)) {
			est_set(e, E_R, "pooled: one slope fitted over the settled "
			        "samples of the %.0f GPUs of %s %s, each about its "
			        "own means (power spread within a GPU %.1f W over "
			        "%.0f samples); no fit of its own", G, what,
			        e->group, sd, N);
			est_set(e, E_AMBIENT, "this GPU's mean temperature less "
			        "the pooled slope times its mean power");
			est_set(e, E_FIT_SD, "this GPU's samples about the pooled "
			        "slope");
			continue;
		}
		lim = e->plimit > 0 ? e->plimit : pmax;
		if (!(lim > 0 && lim <= LIMIT_MAX_W) ||
		    !slope_fit(e, LIMIT_RISE_C / lim, FIT_LIMIT))
			continue;
		if (e->plimit > 0)
			est_set(e, E_R, "last resort, not fitted: %.0f °C above "
			        "ambient at the power limit of %.2f W; no fit of its "
			        "own, nor a pooled one over its %s's GPUs",
			        LIMIT_RISE_C, lim, what);
		else
			est_set(e, E_R, "last resort, not fitted: %.0f °C above "
			        "ambient at %.2f W, the largest power seen on the "
			        "GPUs of %s %s (no power limit in the log); no fit "
			        "of its own, nor a pooled one over its %s's GPUs",
			        LIMIT_RISE_C, lim, what, e->group, what);
		est_set(e, E_AMBIENT, "this GPU's mean temperature less the "
		        "last-resort slope times its mean power");
		est_set(e, E_FIT_SD, "this GPU's samples about the last-resort "
		        "slope");
	}
	/* idle level of a GPU that was never seen idle */
	for (int i = 0; i < n; i++) {
		ent *e = m[i];
		const stats *st = &e->g->main;
		double base;
		if (st->load == 0)
			continue;
		base = e->plimit > 0 ? e->plimit : pmax;
		if (isnan(e->power_idle) && base > 0 && base <= LIMIT_MAX_W) {
			e->power_idle = IDLE_SHARE * base;
			/* idle draws no more than the GPU did when settled */
			if (e->power_idle > st->fit_pmin)
				est_set(e, E_POWER_IDLE, "no idle samples: the lowest "
				        "settled power of this GPU, %.2f W, which is below "
				        "%.0f %% of %.2f W", st->fit_pmin,
				        100 * IDLE_SHARE, base);
			else if (e->plimit > 0)
				est_set(e, E_POWER_IDLE, "no idle samples: %.0f %% of "
				        "the power limit of %.2f W (real idle recordings: "
				        "5-16 %%)", 100 * IDLE_SHARE, base);
			else
				est_set(e, E_POWER_IDLE, "no idle samples: %.0f %% of "
				        "%.2f W, the largest power seen on the GPUs of "
				        "%s %s, for the power limit the log lacks (real "
				        "idle recordings: 5-16 %% of the limit)",
				        100 * IDLE_SHARE, base, what, e->group);
			if (e->power_idle > st->fit_pmin)
				e->power_idle = st->fit_pmin;
		}
		if (!isnan(e->temp_idle))
			continue;
		if (e->fit != FIT_NONE && !isnan(e->power_idle) &&
		    e->amb + e->r * e->power_idle >= -50 &&
		    e->amb + e->r * e->power_idle <= 200) {
			/* (a fit that puts idle outside the profile's range
			 * is no estimate of it) */
			e->temp_idle = e->amb + e->r * e->power_idle;
			est_set(e, E_TEMP_IDLE, "no idle samples: the fit at "
			        "power_idle_w");
		} else if (!isnan(e->temp_load) && !isnan(e->g->tmin)) {
			e->temp_idle = e->g->tmin;
			est_set(e, E_TEMP_IDLE, "no idle samples and no fit: the "
			        "lowest temperature this GPU showed, so at most its "
			        "idle temperature");
		}
	}
}

/* derate, its uncertainty and what it stands on (docs/profile.md,
 * "Speed"). f is the GPU with the fastest mean full-load clock. */
static bool derate(ent *e, const ent *f)
{
	double q, rel, sd, d;
	bool capped, hot = e->thermal >= THERMAL_FRAC;

	e->basis = TM_BASIS_NONE;
	e->der = e->der_sd = NAN;
	if (!(e->clock > 0) || !f)
		return true;
	q = f->clock / e->clock;
	rel = 0;
	if (e->clock_se > 0)
		rel += (e->clock_se / e->clock) * (e->clock_se / e->clock);
	if (f->clock_se > 0)
		rel += (f->clock_se / f->clock) * (f->clock_se / f->clock);
	sd = fmax(q * sqrt(rel), q * CLOCK_STEP_MHZ / e->clock);
	capped = !isnan(e->pcap) ? e->pcap >= CAPPED_FRAC
	         : e->plimit > 0 && e->power_load >= CAPPED_POWER * e->plimit;
	if (capped && !hot) {
		/* a clock held down by the power cap under a synthetic load
		 * is no speed for another workload: kept as uncertainty */
		e->basis = TM_BASIS_POWER_CAP;
		sd = fmax(sd, q - 1);
		d = 1;
	} else {
		e->basis = hot ? TM_BASIS_THERMAL : TM_BASIS_CLOCK;
		d = q;
	}
	e->der_sd = rnd(sd, 4);
	e->der = rnd(d, 3);
	if (e->der - 1 <= e->der_sd)   /* inside its own uncertainty */
		e->der = 1;
	/* beyond what a profile holds: no speed of one GPU model */
	return rnd(q, 3) <= DERATE_MAX && e->der_sd <= DERATE_MAX;
}

/* "host UUID", "host PCI-bus-id" or "host index N", for messages. */
static const char *gpu_text(const tl_ident *g, char *buf, size_t cap)
{
	if (g->uuid || g->pci)
		snprintf(buf, cap, "%s %s", g->host, g->uuid ? g->uuid : g->pci);
	else
		snprintf(buf, cap, "%s index %d", g->host, g->index);
	return buf;
}


int tl_stats_build(const tl_ident *id, tl_gpu_stats *const *gs, int m,
                   tm_gpu_profile *out, tm_error *err)
{
	ent *es, **grp;
	const ent *fast = NULL;
	int rc = 0;

	for (int i = 0; i < m; i++)
		finish_gpu(gs[i]);
	es = xcalloc((size_t)(m ? m : 1), sizeof *es);
	grp = xmalloc((size_t)(m ? m : 1) * sizeof *grp);
	for (int i = 0; i < m; i++) {
		ent *e = &es[i];
		const tl_gpu_stats *g = gs[i];
		const stats *st = &g->main;
		e->g = g;
		e->id = &id[i];
		e->by_model = id[i].model != NULL;
		e->group = id[i].model ? id[i].model : id[i].host;
		e->n = st->fn;
		if (e->n > 0) {
			e->xm = g->x0 + st->fx / e->n;
			e->ym = g->y0 + st->fy / e->n;
			e->sxx = st->fxx - st->fx * st->fx / e->n;
			e->sxy = st->fxy - st->fx * st->fy / e->n;
			e->syy = st->fyy - st->fy * st->fy / e->n;
		}
		e->temp_idle = mean_get(&st->temp_idle);
		e->power_idle = mean_get(&st->power_idle);
		e->temp_load = mean_get(&st->temp_full);
		e->power_load = mean_get(&st->power_full);
		e->plimit = mean_get(&g->plimit);
		e->amb = e->r = e->fit_sd = NAN;
		own_fit(e, st);
		e->clock = mean_get(&st->clock_full);
		e->clock_se = clocks_se(&st->clk);
		e->thermal = frac(&st->thermal, st->th_us, st->th_span);
		e->pcap = frac(&st->pcap, st->pc_us, st->pc_span);
		if (e->clock > 0 && (!fast || e->clock > fast->clock))
			fast = e;
		grp[i] = e;
	}
	qsort(grp, (size_t)m, sizeof *grp, cmp_group);
	for (int i = 0, j; i < m; i = j) {
		for (j = i + 1; j < m && grp[j]->by_model == grp[i]->by_model &&
		     !strcmp(grp[j]->group, grp[i]->group); j++)
			;
		group_fits(grp + i, j - i);
	}
	for (int i = 0; i < m && !rc; i++)
		if (!derate(&es[i], fast)) {
			char a[300], b[300];
			rc = tm_fail(err, TM_EINPUT, "%s: GPU %s: its mean full-load "
			             "SM clock, %.15g MHz, is %.3g times below GPU %s's "
			             "(%.15g MHz), beyond a derate of %g with its "
			             "uncertainty: GPUs of different models, or clocks "
			             "not in MHz?", es[i].id->file,
			             gpu_text(es[i].id, a, sizeof a),
			             es[i].clock, fast->clock / es[i].clock,
			             gpu_text(fast->id, b, sizeof b), fast->clock,
			             DERATE_MAX);
		}
	if (rc)
		goto out;

	for (int i = 0; i < m; i++) {
		const ent *e = &es[i];
		const tl_gpu_stats *g = e->g;
		const stats *st = &g->main;
		tm_gpu_profile *o = &out[i];
		double head = mean_get(&st->tlimit_full);
		if (isnan(head))
			head = mean_get(&st->margin_full);
		o->host = xstrdup(id[i].host);
		o->uuid = id[i].uuid ? xstrdup(id[i].uuid) : NULL;
		o->pci_bus_id = id[i].pci ? xstrdup(id[i].pci) : NULL;
		o->index = id[i].index;
		o->samples = (double)g->samples;
		o->load_samples = (double)st->load;
		o->span_s = g->t1 - g->t0;
		o->temp_idle_c = e->temp_idle;
		o->temp_load_c = e->temp_load;
		o->temp_p95_c = hist_rank(&st->temp_load, 0.95);
		o->temp_max_c = st->temp_max;
		o->headroom_c = head;
		o->power_idle_w = e->power_idle;
		o->power_load_w = e->power_load;
		o->power_limit_w = e->plimit;
		o->ambient_c = e->amb;
		o->r_c_per_w = e->r;
		o->temp_fit_sd_c = e->fit_sd;
		/* rounded as every other field: to nearest, a tie to even */
		o->sm_clock_load_mhz = e->clock;
		o->sm_clock_max_mhz = g->smmax;
		o->thermal_slowdown_frac = e->thermal;
		o->power_cap_frac = e->pcap;
		o->derate = e->der;
		o->derate_sd = e->der_sd;
		o->derate_basis = e->basis;
		for (int f = 0; f < NEST; f++)
			if (e->est[f])
				tm_gpu_profile_mark(o, false, est_fields[f], e->est[f]);
		tm_gpu_profile_round(o);
	}
out:
	for (int i = 0; i < m; i++)
		for (int f = 0; f < NEST; f++)
			free(es[i].est[f]);
	free(es);
	free(grp);
	return rc;
}
