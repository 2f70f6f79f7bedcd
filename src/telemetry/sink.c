/*
 * sink.c — where the readers hand their samples: the GPUs named so far
 * (one id per physical GPU, found by host and UUID, PCI bus id or index),
 * each sample's checks (value ranges, time order per GPU, the --from/--to
 * window), the counts each file's summary gives, and the warnings about
 * what a file leaves unsaid. At the end it orders the GPUs and has the
 * statistics (stats.c) make their entries, and, with --phases, the
 * couplings (phases.c) fitted.
 *
 * It calls phases.c, stats.c, lines.c and parse.c, nothing above; the
 * readers and read.c call it. All its state is in tl_sink: several sinks
 * may be used at once (one per thread).
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

#define TIME_MAX_S 1e11    /* times read, either side of 1970: from the
                              year -1199 to 5138 */

const char *const tl_skip_names[TL_NSKIP] = {
	[TL_SKIP_CUT] = "cut_last_line",
	[TL_SKIP_WINDOW] = "outside_window",
	[TL_SKIP_NO_TIME] = "no_time_for_window",
	[TL_SKIP_UNUSED] = "unused_metric",
	[TL_SKIP_BLANK] = "blank_value",
	[TL_SKIP_ENTITY] = "not_a_gpu",
};

/* ---- values --------------------------------------------------------------- */

/* What a value of each field may be (docs/profile.md, "Values"): the
 * profile's own ranges where it has them, so that what the builder writes
 * from sane values loads again; a physical bound elsewhere. A log that
 * breaks one is wrong about the GPU, and no profile is made from it. */
static const struct vrange {
	const char *name, *unit;
	double lo, hi;
	bool lo_open;         /* lo itself is out of range */
} vranges[TL_NFIELDS] = {
	[TL_TEMP] = { "temperature", "°C", -50, 200, false },
	[TL_POWER] = { "power", "W", 0, 1e5, false },
	[TL_POWER_LIMIT] = { "power limit", "W", 0, 1e5, true },
	[TL_SM_CLOCK] = { "SM clock", "MHz", 0, 1e5, false },
	[TL_SM_CLOCK_MAX] = { "maximum SM clock", "MHz", 0, 1e5, false },
	[TL_UTIL] = { "utilisation", "%", 0, 100, false },
	[TL_TLIMIT] = { "margin to the slowdown temperature", "°C", -200, 200,
	                false },
	[TL_SLOWDOWN_C] = { "slowdown temperature", "°C", 0, 150, false },
	[TL_THERMAL] = { "thermal slowdown flag", "", 0, 1, false },
	[TL_PCAP] = { "power cap flag", "", 0, 1, false },
	[TL_THERMAL_US] = { "thermal slowdown counter", "µs", 0, 9.2e18,
	                    false },
	[TL_PCAP_US] = { "power cap counter", "µs", 0, 9.2e18, false },
};

int tl_check_value(int f, double v, char *msg, size_t cap)
{
	const struct vrange *r = &vranges[f];
	if (isnan(v) || ((r->lo_open ? v > r->lo : v >= r->lo) && v <= r->hi))
		return 0;
	snprintf(msg, cap, "%s %.15g%s%s is out of range; expected %s%g %s %g%s%s",
	         r->name, v, *r->unit ? " " : "", r->unit,
	         r->lo_open ? "more than " : "", r->lo,
	         r->lo_open ? "and at most" : "to", r->hi,
	         *r->unit ? " " : "", r->unit);
	return TM_EINPUT;
}

int tl_check_time(double t, char *msg, size_t cap)
{
	if (isnan(t) || (t >= -TIME_MAX_S && t <= TIME_MAX_S))
		return 0;
	snprintf(msg, cap, "time %.17g s is out of range; expected seconds "
	         "since 1970 from %g to %g (the years -1199 to 5138)", t,
	         -TIME_MAX_S, TIME_MAX_S);
	return TM_EINPUT;
}

/* "FILE:LINE: " or, where the reader has no line (JSON), "FILE: ". */
static int src_fail(const tl_src *src, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int src_fail(const tl_src *src, const char *fmt, ...)
{
	char m[800];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	if (src->line > 0)
		return tm_fail(src->err, TM_EINPUT, "%s:%ld: %s", src->file,
		               src->line, m);
	return tm_fail(src->err, TM_EINPUT, "%s: %s", src->file, m);
}


/* ---- the sink ------------------------------------------------------------ */

/* A GPU: who it is, and its statistics. */
typedef struct tgpu {
	char *host, *uuid, *pci;
	char *model;            /* nvidia-smi name / modelName, or NULL */
	int index;
	const tl_src *last_src; /* the last file that named it */
	tl_gpu_stats *st;
} tgpu;

typedef struct hslot {
	char *key;
	int id;
} hslot;

/* A sample kept by a recording sink (tl_sink_record). */
typedef struct recd {
	tl_sample s;
	double t_first;         /* its file's first time when it was read */
	int gpu;
} recd;

/* Warnings already given, by a hash of their text: a file read twice
 * into one sink has its warnings given once. */
#define WARNED_MAX 256

struct tl_sink {
	tl_opts o;
	tgpu *g;
	int n, cap;
	hslot *h;
	size_t hcap, hn;
	void (*tap)(void *, int, const tl_sample *);
	void *tap_ctx;
	bool rec;               /* keeping the samples it accepts */
	recd *r;                /* nr of them */
	size_t nr, rcap;
	tl_qpending qp;         /* query_range points not yet pushed */
	uint64_t warned[WARNED_MAX];
	int nwarned;
	const tl_phases *ph;    /* --phases, or NULL */
	tl_couple_report crep;  /* what their couplings came to */
	bool coupled;           /* crep is filled */
};

tl_sink *tl_sink_new(const tl_opts *o)
{
	tl_sink *k = xcalloc(1, sizeof *k);
	k->o = *o;
	k->hcap = 64;
	k->h = xcalloc(k->hcap, sizeof *k->h);
	return k;
}

void tl_sink_phases(tl_sink *k, const tl_phases *ph)
{
	k->ph = ph;
}

const tl_couple_report *tl_sink_couple_report(const tl_sink *k)
{
	return k->coupled ? &k->crep : NULL;
}

double tl_sink_interval(const tl_sink *k)
{
	return k->o.interval_s > 0 ? k->o.interval_s : 1.0;
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
		free(g->model);
		tl_gpu_stats_free(g->st);
	}
	for (size_t i = 0; i < k->hcap; i++)
		free(k->h[i].key);
	free(k->h);
	free(k->g);
	free(k->r);
	free(k->qp.p);
	free(k->qp.srcs);
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

	if (!uuid && !pci && index < 0) {
		/* a profile entry must name its GPU (docs/formats.md) */
		src_fail(src, "the sample names no GPU: its index, PCI bus id and "
		         "UUID are all missing");
		return -1;
	}
	if (pci) {
		npci = tm_normalise_pci(pci);
		if (!npci) {
			src_fail(src, "PCI bus id \"%.40s\": expected "
			         "DDDDDDDD:BB:DD.F", pci);
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
	if (id < 0 && k->n >= TL_MAX_GPUS) {
		free(npci);
		src_fail(src, "more than %d distinct GPUs; one run profiles at "
		         "most %d (memory grows with every GPU, and the profile "
		         "it writes must stay loadable): profile the hosts in "
		         "parts", TL_MAX_GPUS, TL_MAX_GPUS);
		return -1;
	}
	if (id < 0 && k->ph &&
	    (long)(k->n + 1) * k->ph->n > TL_MAX_PHASE_CELLS) {
		free(npci);
		src_fail(src, "%d GPUs with the %d phases of %s: one run keeps "
		         "the means of at most %ld GPUs times phases (memory "
		         "grows with both): profile the hosts in parts, or give "
		         "fewer phases", k->n + 1, k->ph->n, k->ph->file,
		         TL_MAX_PHASE_CELLS);
		return -1;
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
		g->st = tl_gpu_stats_new();
		if (k->ph)
			tl_gpu_stats_phases(g->st, k->ph);
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

void tl_gpu_model(tl_src *src, int gpu, const char *name, size_t len)
{
	tgpu *g = &src->sink->g[gpu];
	if (g->model || !name || !len)
		return;
	/* it is written into the profile: printable ASCII only, so that
	 * any bytes a log holds there still make valid JSON text */
	if (len > 255)
		len = 255;
	g->model = xmalloc(len + 1);
	for (size_t i = 0; i < len; i++)
		g->model[i] = name[i] >= 0x20 && name[i] < 0x7f ? name[i] : '?';
	g->model[len] = '\0';
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


/* ---- samples ------------------------------------------------------------- */

/* Whether sample s, of a file whose first time so far is t_first, is in
 * k's window; counted in skipped when not. */
static bool in_window(const tl_sink *k, const tl_sample *s, double t_first,
                      long skipped[TL_NSKIP])
{
	double from = k->o.from, to = k->o.to;
	if (isnan(from) && isnan(to))
		return true;
	if (isnan(s->t)) {
		skipped[TL_SKIP_NO_TIME]++;
		return false;
	}
	if (k->o.from_rel && !isnan(from))
		from += t_first;
	if (k->o.to_rel && !isnan(to))
		to += t_first;
	if ((!isnan(from) && s->t < from) || (!isnan(to) && s->t > to)) {
		skipped[TL_SKIP_WINDOW]++;
		return false;
	}
	return true;
}

/* A sample in the window, in its GPU's time order, into the GPU's
 * statistics (and the recording and the tap). */
static void accept(tl_sink *k, int gpu, const tl_sample *s, double t_first)
{
	if (k->rec) {
		recd *r;
		if (k->nr == k->rcap) {
			k->rcap = k->rcap ? 2 * k->rcap : 1024;
			k->r = xrealloc(k->r, k->rcap * sizeof *k->r);
		}
		r = &k->r[k->nr++];
		r->s = *s;
		r->t_first = t_first;
		r->gpu = gpu;
	}
	if (k->tap)
		k->tap(k->tap_ctx, gpu, s);
	tl_gpu_stats_add(k->g[gpu].st, s);
}

int tl_push(tl_src *src, int gpu, const tl_sample *s)
{
	tl_sink *k = src->sink;
	const tgpu *g = &k->g[gpu];
	double prev_t = tl_gpu_stats_last_t(g->st);
	char msg[256];

	if (tl_check_time(s->t, msg, sizeof msg))
		return src_fail(src, "%s", msg);
	for (int f = 0; f < TL_NFIELDS; f++)
		if (tl_check_value(f, s->v[f], msg, sizeof msg))
			return src_fail(src, "%s", msg);
	if (!isnan(s->t)) {
		if (isnan(src->t_first) || s->t < src->t_first)
			src->t_first = s->t;
		if (isnan(src->t_last) || s->t > src->t_last)
			src->t_last = s->t;
	}
	if (!in_window(k, s, src->t_first, src->skipped))
		return 0;
	if (!isnan(s->t) && !isnan(prev_t) && s->t < prev_t) {
		char idx[24];
		snprintf(idx, sizeof idx, "index %d", g->index);
		return tm_fail(src->err, TM_EINPUT,
		               "%s:%ld: time goes backwards for GPU %s %s "
		               "(%.3f s before its previous sample)", src->file,
		               src->line, g->host,
		               g->uuid ? g->uuid : g->pci ? g->pci : idx,
		               prev_t - s->t);
	}
	src->samples++;
	accept(k, gpu, s, src->t_first);
	return 0;
}

bool tl_push_parallel_ok(const tl_src *src)
{
	const tl_sink *k = src->sink;
	return !k->tap && !k->rec && !k->o.from_rel && !k->o.to_rel;
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

/* ---- recording ------------------------------------------------------------ */

void tl_sink_record(tl_sink *k)
{
	k->rec = true;
}

void tl_sink_replay(tl_sink *to, const tl_sink *from)
{
	long skipped[TL_NSKIP] = { 0 };   /* a summary is not asked for */
	to->g = xcalloc((size_t)(from->n ? from->n : 1), sizeof *to->g);
	to->n = to->cap = from->n;
	for (int i = 0; i < from->n; i++) {
		const tgpu *f = &from->g[i];
		tgpu *g = &to->g[i];
		g->host = xstrdup(f->host);
		g->uuid = f->uuid ? xstrdup(f->uuid) : NULL;
		g->pci = f->pci ? xstrdup(f->pci) : NULL;
		g->model = f->model ? xstrdup(f->model) : NULL;
		g->index = f->index;
		g->last_src = f->last_src;
		g->st = tl_gpu_stats_new();
	}
	/* each GPU's samples were in time order when they were recorded,
	 * and so is any part of them: no check is needed again */
	for (size_t i = 0; i < from->nr; i++) {
		const recd *r = &from->r[i];
		if (in_window(to, &r->s, r->t_first, skipped))
			accept(to, r->gpu, &r->s, r->t_first);
	}
}

tl_qpending *tl_sink_qpending(tl_sink *k)
{
	return &k->qp;
}

/* ---- the end -------------------------------------------------------------- */

static int cmp_str(const char *a, const char *b)
{
	if (!a || !b)
		return (a == NULL) - (b == NULL);
	return strcmp(a, b);
}

/* The order of the profile's entries: host, index, PCI bus id, UUID. */
static int cmp_gpu(const void *pa, const void *pb, void *ctx)
{
	const tl_sink *k = ctx;
	const tgpu *a = &k->g[*(const int *)pa];
	const tgpu *b = &k->g[*(const int *)pb];
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


int tl_sink_profile(tl_sink *k, tm_profile **out, tm_error *err)
{
	int *ord = xmalloc((size_t)(k->n ? k->n : 1) * sizeof *ord);
	tm_profile *p = xcalloc(1, sizeof *p);
	tl_ident *id;
	tl_gpu_stats **st;
	int m = 0, rc;

	*out = NULL;
	for (int i = 0; i < k->n; i++)
		if (tl_gpu_stats_samples(k->g[i].st) > 0)
			ord[m++] = i;
	tm_sort(ord, (size_t)m, sizeof *ord, cmp_gpu, k);
	id = xcalloc((size_t)(m ? m : 1), sizeof *id);
	st = xcalloc((size_t)(m ? m : 1), sizeof *st);
	p->gpus = xcalloc((size_t)(m ? m : 1), sizeof *p->gpus);
	p->ngpus = m;
	for (int i = 0; i < m; i++) {
		const tgpu *g = &k->g[ord[i]];
		id[i] = (tl_ident){ g->host, g->uuid, g->pci, g->index, g->model,
		                    g->last_src->file };
		st[i] = g->st;
		tm_gpu_profile_init(&p->gpus[i]);
	}
	rc = tl_stats_build(id, st, m, p->gpus, err);
	if (!rc && k->ph) {
		rc = tl_couple(k->ph, id, st, m, p->gpus, &k->crep, err);
		k->coupled = !rc;
	}
	if (rc)
		tm_profile_free(p);
	else
		*out = p;
	free(id);
	free(st);
	free(ord);
	return rc;
}

int tl_sink_finish(tl_sink *k, strbuf *out, long *ngpus, tm_error *err)
{
	tm_profile *p;
	char *text;
	int rc = tl_sink_profile(k, &p, err);
	if (rc)
		return rc;
	text = tm_profile_text(p);
	sb_add(out, text);
	*ngpus = p->ngpus;
	free(text);
	tm_profile_free(p);
	return 0;
}

/* ---- warnings ----------------------------------------------------------- */

static void warn_once(tl_sink *k, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void warn_once(tl_sink *k, const char *fmt, ...)
{
	char msg[1024];
	uint64_t h;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	h = hash_str(msg);
	for (int i = 0; i < k->nwarned; i++)
		if (k->warned[i] == h)
			return;
	if (k->nwarned < WARNED_MAX)
		k->warned[k->nwarned++] = h;
	tm_warn("%s", msg);
}

/* What a file leaves unsaid about its GPUs: the host, when it came from
 * the file's name, and the UUID, without which a GPU is known only by
 * its place in a machine. */
void tl_file_warnings(tl_sink *k, const tl_src *s)
{
	int nouuid = 0, nopci = 0;
	if (s->fhost[0])
		warn_once(k, "%s: no --host and no Hostname label: its GPUs are "
		          "taken to be on host \"%s\", from the file's name; "
		          "give the host with --host NAME before the file",
		          s->file, s->fhost);
	for (int i = 0; i < k->n; i++) {
		const tgpu *g = &k->g[i];
		if (g->last_src != s || g->uuid)
			continue;
		nouuid++;
		nopci += !g->pci;
	}
	if (nouuid)
		warn_once(k, "%s: no GPU UUID: its GPUs are known by host and %s "
		          "only, so a profile of another machine with the same "
		          "%s would match them too, while a profile belongs to a "
		          "physical GPU; log uuid as well (nvidia-smi "
		          "--query-gpu=uuid,...)", s->file,
		          nopci == 0 ? "PCI bus id" : nopci == nouuid ? "index"
		          : "PCI bus id (or index)",
		          nopci == 0 ? "bus ids" : nopci == nouuid ? "indices"
		          : "bus ids or indices");
}

