/*
 * telemetry.c — the profile builder behind `thermap profile`: reading lines,
 * naming GPUs, and turning each GPU's stream of samples into one
 * thermap.profile/1 entry with a fixed amount of state per GPU.
 *
 * The rules (which samples count as loaded, when a GPU has settled, the fit,
 * derate) are written down in docs/profile.md; the constants below are the
 * ones that page names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telemetry.h"

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
#define QMAX 1024          /* samples held for the guard, per GPU (2^k) */
#define READ_CHUNK (1u << 20)

const char *const tl_skip_names[TL_NSKIP] = {
	[TL_SKIP_CUT] = "cut_last_line",
	[TL_SKIP_WINDOW] = "outside_window",
	[TL_SKIP_NO_TIME] = "no_time_for_window",
	[TL_SKIP_UNUSED] = "unused_metric",
	[TL_SKIP_BLANK] = "blank_value",
};

/* ---- lines --------------------------------------------------------------- */

int tl_lines_open(tl_lines *L, const char *file, tm_error *err)
{
	memset(L, 0, sizeof *L);
	L->file = file;
	L->err = err;
	if (strcmp(file, "-") == 0) {
		L->fd = 0;
	} else {
		L->fd = open(file, O_RDONLY | O_CLOEXEC);
		if (L->fd < 0)
			return tm_fail(err, TM_EINPUT, "%s: cannot open: %s", file,
			               strerror(errno));
	}
	L->cap = READ_CHUNK + TL_MAX_LINE;
	L->buf = xcalloc(L->cap + 1 + TL_SLACK, 1);
	return 0;
}

void tl_lines_close(tl_lines *L)
{
	if (L->fd > 0)
		close(L->fd);
	free(L->buf);
	L->buf = NULL;
	L->fd = -1;
}

/* Reads more input after compacting; returns bytes read, 0 at the end, -1
 * on error. */
static long fill(tl_lines *L)
{
	ssize_t n;
	if (L->start > 0) {
		memmove(L->buf, L->buf + L->start, L->end - L->start);
		L->end -= L->start;
		L->base += (long long)L->start;
		L->start = 0;
	}
	if (L->end >= L->cap)
		return 0;
	do
		n = read(L->fd, L->buf + L->end, L->cap - L->end);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		tm_fail(L->err, TM_EINPUT, "%s: read error: %s", L->file,
		        strerror(errno));
		return -1;
	}
	if (n == 0)
		L->eof = true;
	L->end += (size_t)n;
	L->buf[L->end] = '\0';   /* a stop byte after the last line */
	return n;
}

long long tl_lines_tell(const tl_lines *L)
{
	return L->base + (long long)L->start;
}

int tl_lines_seek(tl_lines *L, long long off, long lineno)
{
	if (lseek(L->fd, (off_t)off, SEEK_SET) < 0)
		return tm_fail(L->err, TM_EINPUT, "%s: cannot seek: %s", L->file,
		               strerror(errno));
	L->base = off;
	L->start = L->end = 0;
	L->eof = false;
	L->lineno = lineno;
	return 0;
}

size_t tl_lines_peek(tl_lines *L, const char **p)
{
	while (!L->eof && L->end < 4096)
		if (fill(L) <= 0)
			break;
	*p = L->buf + L->start;
	return L->end - L->start;
}

int tl_lines_next(tl_lines *L, const char **line, size_t *len)
{
	char *nl;
	size_t scanned = 0;
	for (;;) {
		char *p = L->buf + L->start + scanned;
		nl = memchr(p, '\n', L->end - L->start - scanned);
		if (nl)
			break;
		scanned = L->end - L->start;
		if (scanned > TL_MAX_LINE)
			return tm_fail(L->err, TM_EINPUT,
			               "%s:%ld: line longer than %u bytes; not a "
			               "telemetry log", L->file, L->lineno + 1,
			               TL_MAX_LINE);
		if (L->eof) {
			if (scanned == 0)
				return 0;
			nl = L->buf + L->end;  /* a last line without '\n' */
			break;
		}
		if (fill(L) < 0)
			return TM_EINPUT;
	}
	L->lineno++;
	L->unterminated = nl == L->buf + L->end;
	*line = L->buf + L->start;
	*len = (size_t)(nl - *line);
	L->start = (size_t)(nl - L->buf) + !L->unterminated;
	if (*len > TL_MAX_LINE)
		return tm_fail(L->err, TM_EINPUT,
		               "%s:%ld: line longer than %u bytes; not a "
		               "telemetry log", L->file, L->lineno, TL_MAX_LINE);
	if (*len && (*line)[*len - 1] == '\r')
		(*len)--;
	if (memchr(*line, '\0', *len))
		return tm_fail(L->err, TM_EINPUT,
		               "%s:%ld: NUL byte: binary data, not a text "
		               "telemetry log", L->file, L->lineno);
	return 1;
}

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

/* What the settled samples of one GPU add up to. */
typedef struct stats {
	mean temp_idle, power_idle;
	mean temp_full, power_full, tlimit_full, margin_full, clock_full;
	long nidle, load;
	hist temp_load;
	double temp_max;
	mean thermal, pcap;                 /* per-sample flags, loaded */
	double th_us, th_span, pc_us, pc_span; /* counters, loaded, µs */
	double fn, fx, fy, fxx, fxy;        /* fit sums, shifted */
	long fit_idle, fit_busy;
	double fit_pmin, fit_pmax;          /* power range of fit samples */
} stats;

static void stats_init(stats *st)
{
	memset(st, 0, sizeof *st);
	st->temp_max = NAN;
	st->fit_pmin = st->fit_pmax = NAN;
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
	signed char state;
	bool settled;           /* SETTLE_S into its run */
	bool initial;           /* in the run that starts the log */
} held;

typedef struct tgpu {
	char *host, *uuid, *pci;
	int index;
	const tl_src *last_src;
	long samples;
	double t0, t1;
	mean plimit;
	double plimit_last, smmax;
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
} tgpu;

typedef struct hslot {
	char *key;
	int id;
} hslot;

struct tl_sink {
	tl_opts o;
	tgpu *g;
	int n, cap;
	hslot *h;
	size_t hcap, hn;
	void (*tap)(void *, int, const tl_sample *);
	void *tap_ctx;
};

tl_sink *tl_sink_new(const tl_opts *o)
{
	tl_sink *k = xcalloc(1, sizeof *k);
	k->o = *o;
	k->hcap = 64;
	k->h = xcalloc(k->hcap, sizeof *k->h);
	return k;
}

void tl_sink_free(tl_sink *k)
{
	if (!k)
		return;
	for (int i = 0; i < k->n; i++) {
		tgpu *g = &k->g[i];
		free(g->host);
		free(g->uuid);
		free(g->pci);
		stats_free(&g->main);
		stats_free(&g->prov);
		free(g->q);
	}
	for (size_t i = 0; i < k->hcap; i++)
		free(k->h[i].key);
	free(k->h);
	free(k->g);
	free(k);
}

void tl_sink_tap(tl_sink *k, void (*fn)(void *, int, const tl_sample *),
                 void *ctx)
{
	k->tap = fn;
	k->tap_ctx = ctx;
}

void tl_gpu_ident(const tl_sink *k, int id, const char **host,
                  const char **uuid, const char **pci, int *index)
{
	const tgpu *g = &k->g[id];
	*host = g->host;
	*uuid = g->uuid;
	*pci = g->pci;
	*index = g->index;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;  /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static hslot *hfind(tl_sink *k, const char *key)
{
	size_t i = hash_str(key) & (k->hcap - 1);
	while (k->h[i].key && strcmp(k->h[i].key, key) != 0)
		i = (i + 1) & (k->hcap - 1);
	return &k->h[i];
}

static void hput(tl_sink *k, char *key, int id)
{
	hslot *s;
	if (2 * (k->hn + 1) > k->hcap) {
		hslot *old = k->h;
		size_t ocap = k->hcap;
		k->hcap *= 2;
		k->h = xcalloc(k->hcap, sizeof *k->h);
		for (size_t i = 0; i < ocap; i++)
			if (old[i].key)
				*hfind(k, old[i].key) = old[i];
		free(old);
	}
	s = hfind(k, key);
	if (s->key) {
		free(key);
		s->id = id;
		return;
	}
	s->key = key;
	s->id = id;
	k->hn++;
}

static char *mkkey(const char *host, char kind, const char *v)
{
	strbuf b;
	sb_init(&b);
	sb_addf(&b, "%s\t%c%s", host, kind, v);
	return b.s;
}

static int lookup(tl_sink *k, const char *host, char kind, const char *v)
{
	char *key = mkkey(host, kind, v);
	hslot *s = hfind(k, key);
	free(key);
	return s->key ? s->id : -1;
}

int tl_gpu(tl_src *src, const char *host, const char *uuid, const char *pci,
           int index)
{
	tl_sink *k = src->sink;
	char ibuf[24], *npci = NULL;
	int id = -1, cand;
	tgpu *g;

	if (pci) {
		npci = tm_normalise_pci(pci);
		if (!npci) {
			tm_fail(src->err, TM_EINPUT,
			        "%s:%ld: PCI bus id \"%s\": expected "
			        "DDDDDDDD:BB:DD.F", src->file, src->line, pci);
			return -1;
		}
	}
	snprintf(ibuf, sizeof ibuf, "%d", index);
	/* The strongest key decides; a weaker key matches only a GPU whose
	 * stronger keys are unknown or equal. */
	if (uuid)
		id = lookup(k, host, 'U', uuid);
	if (id < 0 && npci) {
		cand = lookup(k, host, 'P', npci);
		if (cand >= 0 && (!uuid || !k->g[cand].uuid))
			id = cand;
	}
	if (id < 0 && index >= 0) {
		cand = lookup(k, host, 'I', ibuf);
		if (cand >= 0 && (!uuid || !k->g[cand].uuid) &&
		    (!npci || !k->g[cand].pci))
			id = cand;
	}
	if (id < 0) {
		if (k->n == k->cap) {
			k->cap = k->cap ? 2 * k->cap : 8;
			k->g = xrealloc(k->g, (size_t)k->cap * sizeof *k->g);
		}
		id = k->n++;
		g = &k->g[id];
		memset(g, 0, sizeof *g);
		g->host = xstrdup(host);
		g->index = -1;
		g->t0 = g->t1 = g->prev_t = NAN;
		g->prev_th = g->prev_pc = NAN;
		g->plimit_last = g->smmax = NAN;
		g->run = ST_UNKNOWN;
		g->initial = true;
		g->init_min = INFINITY;
		g->init_max = -INFINITY;
		stats_init(&g->main);
		stats_init(&g->prov);
	}
	g = &k->g[id];
	if (uuid && !g->uuid) {
		g->uuid = xstrdup(uuid);
		hput(k, mkkey(host, 'U', uuid), id);
	}
	if (npci && !g->pci) {
		g->pci = npci;
		npci = NULL;
		hput(k, mkkey(host, 'P', g->pci), id);
	}
	if (index >= 0 && g->index < 0) {
		g->index = index;
		hput(k, mkkey(host, 'I', ibuf), id);
	}
	free(npci);
	if (g->last_src != src) {
		g->last_src = src;
		src->ngpus++;
	}
	return id;
}

void tl_reasons(tl_sample *s, unsigned long long mask)
{
	double th = (mask & (TL_REASON_SW_THERMAL | TL_REASON_HW_THERMAL)) != 0;
	double pc = (mask & TL_REASON_SW_POWER_CAP) != 0;
	s->v[TL_THERMAL] = isnan(s->v[TL_THERMAL]) ? th
	                   : (double)(s->v[TL_THERMAL] != 0 || th != 0);
	s->v[TL_PCAP] = isnan(s->v[TL_PCAP]) ? pc
	                : (double)(s->v[TL_PCAP] != 0 || pc != 0);
}

char *tl_host_from_file(const char *file)
{
	const char *b = strrchr(file, '/'), *dot;
	char *h;
	b = b ? b + 1 : file;
	dot = strrchr(b, '.');
	h = dot && dot > b ? strndup(b, (size_t)(dot - b)) : xstrdup(b);
	if (!h || !tm_valid_host(h)) {
		free(h);
		return NULL;
	}
	return h;
}

/* ---- the settling rule -------------------------------------------------- */

static int state_of(const tgpu *g, const tl_sample *s)
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

static void stats_add(tgpu *g, stats *st, const held *h)
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
static void release(tgpu *g, const held *h)
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

static void end_initial(tgpu *g)
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

static held *qat(tgpu *g, int i)
{
	return &g->q[(g->qhead + i) & (g->qcap - 1)];
}

static void qpop(tgpu *g)
{
	g->qhead = (g->qhead + 1) & (g->qcap - 1);
	g->qn--;
}

/* The slot after the last held sample, made room for; feed() takes it
 * into the queue. Popping from the front never moves it. */
static held *qreserve(tgpu *g)
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
static void feed(tgpu *g, held *h)
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

static void finish_gpu(tgpu *g)
{
	while (g->qn) {
		release(g, qat(g, 0));
		qpop(g);
	}
	end_initial(g);
}

int tl_push(tl_src *src, int gpu, const tl_sample *s)
{
	tl_sink *k = src->sink;
	tgpu *g = &k->g[gpu];
	held *h;
	double from = k->o.from, to = k->o.to;

	if (!isnan(s->t)) {
		if (isnan(src->t_first) || s->t < src->t_first)
			src->t_first = s->t;
		if (isnan(src->t_last) || s->t > src->t_last)
			src->t_last = s->t;
	}
	if (!isnan(from) || !isnan(to)) {
		if (isnan(s->t)) {
			src->skipped[TL_SKIP_NO_TIME]++;
			return 0;
		}
		if (k->o.from_rel && !isnan(from))
			from += src->t_first;
		if (k->o.to_rel && !isnan(to))
			to += src->t_first;
		if ((!isnan(from) && s->t < from) || (!isnan(to) && s->t > to)) {
			src->skipped[TL_SKIP_WINDOW]++;
			return 0;
		}
	}
	if (!isnan(s->t) && !isnan(g->prev_t) && s->t < g->prev_t) {
		char idx[24];
		snprintf(idx, sizeof idx, "index %d", g->index);
		return tm_fail(src->err, TM_EINPUT,
		               "%s:%ld: time goes backwards for GPU %s %s "
		               "(%.3f s before its previous sample)", src->file,
		               src->line, g->host,
		               g->uuid ? g->uuid : g->pci ? g->pci : idx,
		               g->prev_t - s->t);
	}
	if (k->tap)
		k->tap(k->tap_ctx, gpu, s);
	src->samples++;
	g->samples++;
	h = qreserve(g);
	h->s = *s;
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
	h->state = (signed char)state_of(g, s);
	h->settled = h->initial = false;
	feed(g, h);
	return 0;
}

bool tl_push_parallel_ok(const tl_src *src)
{
	const tl_sink *k = src->sink;
	return !k->tap && !k->o.from_rel && !k->o.to_rel;
}

void tl_src_part(tl_src *part, const tl_src *src, tm_error *err)
{
	*part = *src;
	part->samples = 0;
	memset(part->skipped, 0, sizeof part->skipped);
	part->t_first = part->t_last = NAN;
	part->err = err;
}

void tl_src_merge(tl_src *src, const tl_src *part)
{
	src->samples += part->samples;
	for (int i = 0; i < TL_NSKIP; i++)
		src->skipped[i] += part->skipped[i];
	if (!isnan(part->t_first) &&
	    (isnan(src->t_first) || part->t_first < src->t_first))
		src->t_first = part->t_first;
	if (!isnan(part->t_last) &&
	    (isnan(src->t_last) || part->t_last > src->t_last))
		src->t_last = part->t_last;
}

/* ---- output --------------------------------------------------------------- */

static int cmp_str(const char *a, const char *b)
{
	if (!a || !b)
		return (a == NULL) - (b == NULL);
	return strcmp(a, b);
}

static const tl_sink *sort_sink;

static int cmp_gpu(const void *pa, const void *pb)
{
	const tgpu *a = &sort_sink->g[*(const int *)pa];
	const tgpu *b = &sort_sink->g[*(const int *)pb];
	int c = strcmp(a->host, b->host);
	if (c)
		return c;
	if (a->index != b->index) {
		if (a->index < 0 || b->index < 0)
			return a->index < 0 ? 1 : -1;
		return a->index < b->index ? -1 : 1;
	}
	if ((c = cmp_str(a->pci, b->pci)))
		return c;
	return cmp_str(a->uuid, b->uuid);
}

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

/* The steady-state fit needs settled samples at two power levels: idle
 * and busy, or a power span of FIT_SPAN_W (a power controller or a varying
 * load moves power without idling); otherwise the slope is noise and the
 * field is null. */
static void fit(const tgpu *g, const stats *st, double *amb, double *r)
{
	double n = st->fn, sxx, sxy;
	bool levels = st->fit_idle >= 2 && st->fit_busy >= 2;
	bool spread = st->fn >= FIT_MIN_N &&
	              st->fit_pmax - st->fit_pmin >= FIT_SPAN_W;
	*amb = *r = NAN;
	if (!levels && !spread)
		return;
	sxx = st->fxx - st->fx * st->fx / n;
	sxy = st->fxy - st->fx * st->fy / n;
	if (!(sxx > 0))
		return;
	*r = sxy / sxx;
	*amb = g->y0 + st->fy / n - *r * (g->x0 + st->fx / n);
	if (!(*r > 0 && *r <= 10) || !(*amb >= -50 && *amb <= 200))
		*amb = *r = NAN;
}

int tl_sink_finish(tl_sink *k, strbuf *out, long *ngpus)
{
	int *ord = xmalloc((size_t)(k->n ? k->n : 1) * sizeof *ord);
	double fastest = NAN;
	int m = 0;
	jw w;

	for (int i = 0; i < k->n; i++) {
		finish_gpu(&k->g[i]);
		if (k->g[i].samples > 0)
			ord[m++] = i;
	}
	sort_sink = k;
	qsort(ord, (size_t)m, sizeof *ord, cmp_gpu);
	for (int i = 0; i < m; i++) {
		double c = mean_get(&k->g[ord[i]].main.clock_full);
		if (!isnan(c) && !(c <= fastest))
			fastest = c;
	}
	jw_init(&w, out);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.profile/1");
	jw_arr(&w, "gpus", false);
	for (int i = 0; i < m; i++) {
		const tgpu *g = &k->g[ord[i]];
		const stats *st = &g->main;
		double amb, r, head, clock = mean_get(&st->clock_full), der = NAN;
		fit(g, st, &amb, &r);
		head = mean_get(&st->tlimit_full);
		if (isnan(head))
			head = mean_get(&st->margin_full);
		if (!isnan(clock) && clock > 0)
			der = fastest - clock >= CLOCK_STEP_MHZ ? fastest / clock
			                                        : 1.0;
		jw_obj(&w, NULL, false);
		jw_str(&w, "host", g->host);
		if (g->uuid)
			jw_str(&w, "uuid", g->uuid);
		else
			jw_null(&w, "uuid");
		if (g->pci)
			jw_str(&w, "pci_bus_id", g->pci);
		else
			jw_null(&w, "pci_bus_id");
		if (g->index >= 0)
			jw_int(&w, "index", g->index);
		else
			jw_null(&w, "index");
		jw_int(&w, "samples", g->samples);
		jw_int(&w, "load_samples", st->load);
		jw_num(&w, "span_s", g->t1 - g->t0, 3);
		jw_num(&w, "temp_idle_c", mean_get(&st->temp_idle), 1);
		jw_num(&w, "temp_load_c", mean_get(&st->temp_full), 1);
		jw_num(&w, "temp_p95_c", hist_rank(&st->temp_load, 0.95), 1);
		jw_num(&w, "temp_max_c", st->temp_max, 1);
		jw_num(&w, "headroom_c", head, 1);
		jw_num(&w, "power_idle_w", mean_get(&st->power_idle), 2);
		jw_num(&w, "power_load_w", mean_get(&st->power_full), 2);
		jw_num(&w, "power_limit_w", mean_get(&g->plimit), 2);
		jw_num(&w, "ambient_c", amb, 1);
		jw_num(&w, "r_c_per_w", r, 4);
		jw_num(&w, "sm_clock_load_mhz", round(clock), 0);
		jw_num(&w, "sm_clock_max_mhz", round(g->smmax), 0);
		jw_num(&w, "thermal_slowdown_frac",
		       frac(&st->thermal, st->th_us, st->th_span), 3);
		jw_num(&w, "power_cap_frac",
		       frac(&st->pcap, st->pc_us, st->pc_span), 3);
		jw_num(&w, "derate", der, 3);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
	sb_add(out, "\n");
	*ngpus = m;
	free(ord);
	return 0;
}

/* ---- files ---------------------------------------------------------------- */

static bool starts(const char *p, size_t n, const char *pre)
{
	size_t k = strlen(pre);
	return n >= k && memcmp(p, pre, k) == 0;
}

bool tl_contains(const char *p, size_t n, const char *needle)
{
	size_t k = strlen(needle);
	for (size_t i = 0; i + k <= n; i++)
		if (p[i] == needle[0] && memcmp(p + i, needle, k) == 0)
			return true;
	return false;
}

/* Is this the start of a Prometheus exposition: a metric name followed by
 * '{' or a space? */
static bool prom_line(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n && (p[i] == '_' || p[i] == ':' ||
	                 (p[i] >= 'a' && p[i] <= 'z') ||
	                 (p[i] >= 'A' && p[i] <= 'Z') ||
	                 (i > 0 && p[i] >= '0' && p[i] <= '9')))
		i++;
	return i > 0 && i < n && (p[i] == '{' || p[i] == ' ') &&
	       !tl_contains(p, i, ",");
}

int tl_read_file(tl_src *src)
{
	tl_lines L;
	const char *p;
	size_t n;
	int rc;
	char *fhost = NULL;
	const char *opt_host = src->host;

	if ((rc = tl_lines_open(&L, src->file, src->err)))
		return rc;
	n = tl_lines_peek(&L, &p);
	if (starts(p, n, "\xef\xbb\xbf")) {   /* a byte order mark */
		p += 3;
		n -= 3;
		L.start += 3;
	}
	while (n && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++, n--;
	if (n == 0) {
		rc = tm_fail(src->err, TM_EINPUT, "%s: empty file", src->file);
		goto out;
	}
	{
		const char *nl = memchr(p, '\n', n);
		if (memchr(p, '\0', nl ? (size_t)(nl - p) : n))
			goto binary;
	}
	if (0) {
binary:
		rc = tm_fail(src->err, TM_EINPUT, "%s: binary data (NUL "
		             "bytes), not a telemetry log", src->file);
		goto out;
	}
	if (*p == '{' || *p == '[') {
		char *text;
		size_t len;
		tl_lines_close(&L);
		if ((rc = tm_read_file(src->file, TM_MAX_INPUT_BYTES, &text, &len,
		                       src->err)))
			return rc;
		rc = tl_read_qrange(src, text, len);
		free(text);
		return rc;
	}
	if (!starts(p, n, "####") &&
	    (tl_contains(p, n < 512 ? n : 512, "==============NVSMI LOG") ||
	     tl_contains(p, n < 512 ? n : 512, "Clocks Event Reasons") ||
	     tl_contains(p, n < 512 ? n : 512, "Clocks Throttle Reasons"))) {
		rc = tm_fail(src->err, TM_EINPUT, "%s: `nvidia-smi -q` output: "
		             "one snapshot without a time series; log with "
		             "nvidia-smi --query-gpu=... --format=csv -l 1 "
		             "instead", src->file);
		goto out;
	}
	if (starts(p, n, "# HELP ") || starts(p, n, "# TYPE ") ||
	    prom_line(p, n)) {
		rc = tl_read_prom(src, &L);
		goto out;
	}
	if (!src->host) {
		fhost = tl_host_from_file(src->file);
		src->host = fhost;
	}
	if (starts(p, n, "####") && tl_contains(p, n, "nvidia_gpu_exporter")) {
		rc = tl_read_capture(src, &L);
	} else if (starts(p, n, "#Date") || starts(p, n, "# gpu") ||
	           starts(p, n, "#gpu") || starts(p, n, "# Date")) {
		rc = tl_read_dmon(src, &L);
	} else {
		rc = tl_read_csv(src, &L);
	}
out:
	tl_lines_close(&L);
	src->host = opt_host;
	free(fhost);
	return rc;
}

static void iso_time(char *buf, size_t cap, double t)
{
	long long s = (long long)floor(t), days = s / 86400, sod = s % 86400;
	if (sod < 0)
		sod += 86400, days--;
	int ms = (int)lround((t - (double)s) * 1000);
	long long z, era, doe, yoe, y, doy, mp, d, m;
	if (ms == 1000) {   /* rounding carried into the next second */
		ms = 0;
		sod++;
		if (sod == 86400)
			sod = 0, days++;
	}
	/* civil_from_days (H. Hinnant) */
	z = days + 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	y = yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	d = doy - (153 * mp + 2) / 5 + 1;
	m = mp < 10 ? mp + 3 : mp - 9;
	y += m <= 2;
	snprintf(buf, cap, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%03dZ",
	         y, m, d, sod / 3600, sod / 60 % 60, sod % 60, ms);
}

static void summary(strbuf *out, const tl_src *srcs, int n, long ngpus)
{
	jw w;
	long rows = 0, samples = 0;
	jw_init(&w, out);
	jw_obj(&w, NULL, false);
	jw_str(&w, "format", "thermap.profile-summary/1");
	jw_arr(&w, "files", false);
	for (int i = 0; i < n; i++) {
		const tl_src *s = &srcs[i];
		char buf[80];
		rows += s->rows;
		samples += s->samples;
		jw_obj(&w, NULL, false);
		jw_str(&w, "file", s->file);
		jw_str(&w, "format", s->format ? s->format : "unknown");
		jw_int(&w, "rows", s->rows);
		jw_int(&w, "samples", s->samples);
		jw_obj(&w, "skipped", true);
		for (int k = 0; k < TL_NSKIP; k++)
			if (s->skipped[k])
				jw_int(&w, tl_skip_names[k], s->skipped[k]);
		jw_end_obj(&w);
		jw_int(&w, "gpus", s->ngpus);
		if (isnan(s->t_first)) {
			jw_null(&w, "first");
			jw_null(&w, "last");
		} else {
			iso_time(buf, sizeof buf, s->t_first);
			jw_str(&w, "first", buf);
			iso_time(buf, sizeof buf, s->t_last);
			jw_str(&w, "last", buf);
		}
		jw_num(&w, "span_s", s->t_last - s->t_first, 3);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_int(&w, "rows", rows);
	jw_int(&w, "samples", samples);
	jw_int(&w, "gpus", ngpus);
	jw_end_obj(&w);
	sb_add(out, "\n");
}

int tm_profile_from_telemetry(const tm_tele_input *in, int n,
                              const tm_tele_opts *o, char **profile,
                              char **summ, tm_error *err)
{
	tl_opts to = { o->from, o->to, o->from_rel, o->to_rel };
	tl_sink *k = tl_sink_new(&to);
	tl_src *srcs = xcalloc((size_t)(n ? n : 1), sizeof *srcs);
	strbuf pb, sb;
	long ngpus = 0;
	int rc = 0;
	bool nq = false;

	*profile = *summ = NULL;
	for (int i = 0; i < n && !rc; i++) {
		tl_src *s = &srcs[i];
		s->sink = k;
		s->file = in[i].file;
		s->host = in[i].host;
		s->fields = in[i].fields;
		s->err = err;
		s->t_first = s->t_last = NAN;
		rc = tl_read_file(s);
		if (!rc && s->format && !strcmp(s->format,
		                                "prometheus query_range"))
			nq = true;
	}
	/* query_range series are merged across files before pushing; the
	 * tl_src of each file stays valid until here */
	if (!rc && nq)
		rc = tl_qrange_flush(k, err);
	if (!rc) {
		sb_init(&pb);
		tl_sink_finish(k, &pb, &ngpus);
		if (ngpus == 0) {
			sb_free(&pb);
			rc = tm_fail(err, TM_EINPUT, "%s%s: no GPU samples to "
			             "profile", n > 1 ? "inputs ending with " : "",
			             n ? in[n - 1].file : "(no input)");
		} else {
			sb_init(&sb);
			summary(&sb, srcs, n, ngpus);
			*profile = pb.s;
			*summ = sb.s;
		}
	}
	if (rc)   /* drop query_range points of a run that failed */
		tl_qrange_flush(NULL, NULL);
	tl_sink_free(k);
	free(srcs);
	return rc;
}
