/*
 * prom.c — what dcgm-exporter publishes, as thermap meets it: the
 * Prometheus text exposition (one scrape, or scrapes appended to one file)
 * and the JSON of the Prometheus HTTP API (query_range, or an instant
 * query) over the same series. Both become per-GPU samples for the
 * sink (tl_gpu, tl_push); times are read by parse.c.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "telemetry/telemetry.h"

/* DCGM's "no value" sentinels, as NVIDIA/DCGM dcgmlib/dcgm_structs.h
 * defines them: DCGM_INT32_BLANK 0x7ffffff0, DCGM_INT64_BLANK
 * 0x7ffffffffffffff0, DCGM_FP64_BLANK 140737488355328.0 (2^47); the
 * NOT_FOUND, NOT_SUPPORTED and NOT_PERMISSIONED values are BLANK + 1..3,
 * and DCGM_*_IS_BLANK(v) is v >= BLANK. dcgm-exporter's ToString() tests
 * an INT64 field against the int32 blanks as well as the int64 ones, so a
 * 64-bit field may carry either. */
#define INT32_BLANK 0x7ffffff0ull
#define INT32_BLANK_END 0x7fffffffull
#define INT64_BLANK 0x7ffffffffffffff0ull
#define FP64_BLANK 140737488355328.0

enum vkind {
	K_GAUGE,  /* small integer gauge: blank from INT32_BLANK up */
	K_FP,     /* fp64 gauge: blank from FP64_BLANK up */
	K_COUNT,  /* int64 counter: the int32 blanks exactly, or INT64_BLANK up */
	K_MASK,   /* clock event reasons, an int64 bitmask */
};

enum {
	M_TEMP, M_POWER, M_MGMT_LIMIT, M_ENFORCED_LIMIT, M_SM_CLOCK,
	M_SM_CLOCK_MAX, M_UTIL, M_TLIMIT, M_SLOWDOWN, M_REASONS, M_THROTTLE,
	M_THERMAL_US, M_PCAP_US, NMETRICS
};

/* The metrics read. DCGM_FI_DEV_THERMAL_VIOLATION and _POWER_VIOLATION
 * are cumulative microseconds: dcgm_fields.h says "Thermal Violation time
 * in usec" (field 241) and "Power Violation time in usec" (field 240). */
static const struct pmetric {
	const char *name;
	int field;           /* enum tl_field; unused for K_MASK */
	enum vkind kind;
} metrics[NMETRICS] = {
	[M_TEMP] = { "DCGM_FI_DEV_GPU_TEMP", TL_TEMP, K_GAUGE },
	[M_POWER] = { "DCGM_FI_DEV_POWER_USAGE", TL_POWER, K_FP },
	[M_MGMT_LIMIT] = { "DCGM_FI_DEV_POWER_MGMT_LIMIT", TL_POWER_LIMIT, K_FP },
	[M_ENFORCED_LIMIT] = { "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
	                       TL_POWER_LIMIT, K_FP },
	[M_SM_CLOCK] = { "DCGM_FI_DEV_SM_CLOCK", TL_SM_CLOCK, K_GAUGE },
	[M_SM_CLOCK_MAX] = { "DCGM_FI_DEV_MAX_SM_CLOCK", TL_SM_CLOCK_MAX,
	                     K_GAUGE },
	[M_UTIL] = { "DCGM_FI_DEV_GPU_UTIL", TL_UTIL, K_GAUGE },
	[M_TLIMIT] = { "DCGM_FI_DEV_GPU_TEMP_LIMIT", TL_TLIMIT, K_GAUGE },
	[M_SLOWDOWN] = { "DCGM_FI_DEV_SLOWDOWN_TEMP", TL_SLOWDOWN_C, K_GAUGE },
	[M_REASONS] = { "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 0, K_MASK },
	[M_THROTTLE] = { "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 0, K_MASK },
	[M_THERMAL_US] = { "DCGM_FI_DEV_THERMAL_VIOLATION", TL_THERMAL_US,
	                   K_COUNT },
	[M_PCAP_US] = { "DCGM_FI_DEV_POWER_VIOLATION", TL_PCAP_US, K_COUNT },
};

_Static_assert(NMETRICS == TL_PROM_NMETRICS, "telemetry.h counts them");

const char *tl_prom_metric(int i)
{
	return i >= 0 && i < NMETRICS ? metrics[i].name : NULL;
}

/* The profile's main inputs: a deployment without one of them gives a
 * thinner profile, and --prometheus says so; the rest are extras. */
int tl_prom_metric_group(int i)
{
	static const signed char group[NMETRICS] = {
		[M_TEMP] = 0, [M_POWER] = 1, [M_MGMT_LIMIT] = 2,
		[M_ENFORCED_LIMIT] = 2, [M_SM_CLOCK] = 3, [M_SM_CLOCK_MAX] = 4,
		[M_UTIL] = 5, [M_REASONS] = 6, [M_THROTTLE] = 6, [M_TLIMIT] = -1,
		[M_SLOWDOWN] = -1, [M_THERMAL_US] = -1, [M_PCAP_US] = -1,
	};
	return i >= 0 && i < NMETRICS ? group[i] : -1;
}

static int find_metric(const char *name, size_t n)
{
	if (n < 12 || memcmp(name, "DCGM_FI_DEV_", 12) != 0)
		return -1;
	for (int i = 0; i < NMETRICS; i++)
		if (strlen(metrics[i].name) == n &&
		    memcmp(metrics[i].name + 12, name + 12, n - 12) == 0)
			return i;
	return -1;
}

/* The labels that name a GPU (dcgm-exporter's spelling), and its model,
 * which does not tell GPUs apart but groups them for a pooled fit; and
 * Prometheus's instance (the scraped target, HOST:PORT), whose host names
 * the GPUs' host when no Hostname label does. */
enum { ID_HOST, ID_UUID, ID_PCI, ID_GPU, ID_MODEL, ID_INST, NID };
static const char *const id_labels[NID] = {
	"Hostname", "UUID", "pci_bus_id", "gpu", "modelName", "instance"
};

/* The host of an instance label into buf: HOST of HOST:PORT, [ADDR]:PORT
 * or a bare HOST; NULL when that is not a usable host name (an IPv6
 * address, say). */
static const char *instance_host(const char *v, char *buf, size_t cap)
{
	const char *end = v + strlen(v), *colon = strrchr(v, ':');
	size_t n;
	if (colon && colon[1]) {
		const char *d = colon + 1;
		while (*d >= '0' && *d <= '9')
			d++;
		if (!*d)
			end = colon;
	}
	n = (size_t)(end - v);
	if (n == 0 || n >= cap)
		return NULL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return tm_valid_host(buf) ? buf : NULL;
}

/* ---- values ------------------------------------------------------------- */

typedef struct pval {
	double v;
	bool exact;              /* an integer, held exactly in u */
	unsigned long long u;
} pval;

static bool ieq(const char *a, const char *b)  /* b lower case */
{
	for (; *a && *b; a++, b++)
		if ((*a | 0x20) != *b)
			return false;
	return *a == *b;
}

/* A sample value as Go's ParseFloat reads it, less hex and underscores:
 * a decimal number, NaN, Inf, +Inf, -Inf. */
static bool parse_value(const char *p, size_t n, pval *out)
{
	char buf[72], *end;
	size_t i = 0, nd = 0;
	bool dot = false;

	if (n == 0 || n >= sizeof buf || memchr(p, '\0', n))
		return false;
	memcpy(buf, p, n);
	buf[n] = '\0';
	out->exact = false;
	i = buf[0] == '+' || buf[0] == '-';
	if (ieq(buf + i, "inf") || ieq(buf + i, "infinity")) {
		out->v = buf[0] == '-' ? -INFINITY : INFINITY;
		return true;
	}
	if (ieq(buf, "nan")) {
		out->v = NAN;
		return true;
	}
	for (; i < n; i++) {
		if (buf[i] >= '0' && buf[i] <= '9')
			nd++;
		else if (buf[i] == '.' && !dot)
			dot = true;
		else
			break;
	}
	if (nd == 0)
		return false;
	if (i < n && (buf[i] == 'e' || buf[i] == 'E')) {
		size_t ne = 0;
		i++;
		if (i < n && (buf[i] == '+' || buf[i] == '-'))
			i++;
		for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
			ne++;
		if (ne == 0)
			return false;
	} else if (!dot && buf[0] != '-' && nd <= 19) {
		/* an integer: exact, for the sentinels near 2^63 */
		out->exact = true;
		out->u = strtoull(buf, NULL, 10);
	}
	if (i != n)
		return false;
	out->v = strtod(buf, &end);
	return *end == '\0' && !isinf(out->v);
}

/* A DCGM blank, NaN or an infinity: no value. */
static bool is_blank(enum vkind k, const pval *pv)
{
	double v = pv->v;
	if (!isfinite(v))
		return true;
	switch (k) {
	case K_FP:
		return v >= FP64_BLANK;
	case K_COUNT:
		if (pv->exact)
			return (pv->u >= INT32_BLANK && pv->u <= INT32_BLANK_END) ||
			       pv->u >= INT64_BLANK;
		return (v >= (double)INT32_BLANK && v <= (double)INT32_BLANK_END) ||
		       v >= (double)INT64_BLANK;
	default:
		return v >= (double)INT32_BLANK;
	}
}

/* Puts one (non-blank) value of metric mi into s. The enforced power
 * limit is the one that counts: the management limit only fills in. */
static void apply(tl_sample *s, unsigned *seen, int mi, double v)
{
	const struct pmetric *m = &metrics[mi];
	if (m->kind == K_MASK)
		tl_reasons(s, (unsigned long long)v);
	else if (!(mi == M_MGMT_LIMIT && (*seen & (1u << M_ENFORCED_LIMIT)) &&
	           !isnan(s->v[TL_POWER_LIMIT])))
		s->v[m->field] = v;
	*seen |= 1u << mi;
}

/* The text at p..e for a message: quoted, at most 40 bytes, bytes that do
 * not print written as \xHH; "the end of the line" when empty. */
static const char *found(char *buf, size_t cap, const char *p, const char *e)
{
	size_t o = 0;
	if (p >= e) {
		snprintf(buf, cap, "the end of the line");
		return buf;
	}
	buf[o++] = '"';
	for (int i = 0; p < e && i < 40 && o + 8 < cap; p++, i++) {
		unsigned char c = (unsigned char)*p;
		if (c == '"' || c == '\\')
			o += (size_t)snprintf(buf + o, cap - o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", c);
		else
			buf[o++] = (char)c;
	}
	if (p < e && o + 4 < cap) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o++] = '"';
	buf[o] = '\0';
	return buf;
}

/* A label value check shared by both readers: NULL when fine, else what
 * was expected. */
static const char *bad_ident(int which, const char *v, int *index)
{
	char *end;
	long x;
	switch (which) {
	case ID_HOST:
		return tm_valid_host(v) ? NULL : "a usable host name; expected "
		       "letters, digits, '.', '-' and '_'";
	case ID_UUID:
		return tm_valid_uuid(v) ? NULL : "a GPU UUID; expected \"GPU-\" "
		       "or \"MIG-\" and hex digits";
	case ID_PCI: {
		char *n = tm_normalise_pci(v);
		bool ok = n != NULL;
		free(n);
		return ok ? NULL : "a PCI bus id; expected like "
		       "\"00000000:00:06.0\"";
	}
	case ID_MODEL:
	case ID_INST:      /* read only for its host, when it has one */
		return NULL;   /* any text; it is only compared */
	default:
		x = strtol(v, &end, 10);
		if (*end || end == v || v[0] < '0' || v[0] > '9' || x > 65535)
			return "a GPU index; expected an integer from 0 to 65535";
		*index = (int)x;
		return NULL;
	}
}

/* ---- Prometheus text ----------------------------------------------------- */

typedef struct pline {
	const char *name;        /* NULL: a comment or a blank line */
	size_t nlen;
	const char *id[NID];     /* unescaped, NUL-terminated; NULL: absent */
	pval val;
	double t;                /* NAN: no timestamp */
} pline;

typedef struct ploc {            /* where a line is, for messages */
	const char *file;
	long line;
	const char *s;           /* the line */
	tm_error *err;
} ploc;

static int perr(const ploc *P, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int perr(const ploc *P, const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = tm_vfail_at(P->err, TM_EINPUT, P->file, P->line, fmt, ap);
	va_end(ap);
	return rc;
}

static bool blank_ch(char c)
{
	return c == ' ' || c == '\t';
}

static bool name_start(char c, bool metric)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (metric && c == ':');
}

static bool name_ch(char c, bool metric)
{
	return name_start(c, metric) || (c >= '0' && c <= '9');
}

static const char *skip_blanks(const char *p, const char *e)
{
	while (p < e && blank_ch(*p))
		p++;
	return p;
}

static const char *token_end(const char *p, const char *e)
{
	while (p < e && !blank_ch(*p))
		p++;
	return p;
}

#define COL(p) ((int)((p) - P->s) + 1)
#define LN(n) ((int)((n) > 40 ? 40 : (n)))

/* The label set after '{' at open; p is past the '{'. Identity values
 * are unescaped into scratch (which holds at least the line's length). */
static int parse_labels(const ploc *P, const char **pp, const char *e,
                        const char *open, pline *pl, char *scratch)
{
	const char *p = *pp;
	char f[200];
	bool have[NID] = { false };

	for (;;) {
		const char *ln, *vopen;
		size_t lnn;
		int which = -1;
		char *out = scratch;

		p = skip_blanks(p, e);
		if (p == e)
			goto unclosed;
		if (*p == '}')
			break;
		if (!name_start(*p, false))
			return perr(P, "expected a label name ([a-zA-Z_][a-zA-Z0-9_]*) "
			            "at column %d, found %s", COL(p),
			            found(f, sizeof f, p, e));
		for (ln = p; p < e && name_ch(*p, false); p++)
			;
		lnn = (size_t)(p - ln);
		for (int i = 0; i < NID; i++)
			if (strlen(id_labels[i]) == lnn &&
			    memcmp(id_labels[i], ln, lnn) == 0)
				which = i;
		p = skip_blanks(p, e);
		if (p == e)
			goto unclosed;
		if (*p != '=')
			return perr(P, "expected '=' after the label name %.*s, "
			            "found %s", LN(lnn), ln,
			            found(f, sizeof f, p, e));
		p = skip_blanks(p + 1, e);
		if (p == e)
			goto unclosed;
		if (*p != '"')
			return perr(P, "expected '\"' to open the value of label "
			            "%.*s, found %s", LN(lnn), ln,
			            found(f, sizeof f, p, e));
		vopen = p++;
		while (p < e && *p != '"') {
			char c = *p;
			if (c == '\\') {
				if (p + 1 == e) {
					p = e;
					break;
				}
				c = p[1];
				if (c == 'n')
					c = '\n';
				else if (c != '\\' && c != '"')
					return perr(P, "label %.*s: bad escape %s at "
					            "column %d; expected \\\\, \\\" or \\n",
					            LN(lnn), ln,
					            found(f, sizeof f, p, p + 2), COL(p));
				p++;
			}
			if (which >= 0)
				*out++ = c;
			p++;
		}
		if (p == e)
			return perr(P, "expected '\"' to close the value of label %.*s "
			            "opened at column %d, found the end of the line",
			            LN(lnn), ln, COL(vopen));
		p++;
		if (which >= 0) {
			if (have[which])
				return perr(P, "label %s appears twice; expected it "
				            "once", id_labels[which]);
			have[which] = true;
			*out++ = '\0';
			/* an empty value is an absent label in Prometheus */
			if (out - scratch > 1) {
				pl->id[which] = scratch;
				scratch = out;
			}
		}
		p = skip_blanks(p, e);
		if (p == e)
			goto unclosed;
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p != '}')
			return perr(P, "expected ',' or '}' after the value of label "
			            "%.*s, found %s", LN(lnn), ln,
			            found(f, sizeof f, p, e));
		break;
	}
	*pp = p + 1;
	return 0;
unclosed:
	return perr(P, "expected '}' to close the labels opened at column %d, "
	            "found the end of the line", COL(open));
}

/* One line of the exposition: a comment, a blank line or a sample. */
static int parse_line(const ploc *P, const char *s, size_t n, pline *pl,
                      char *scratch)
{
	const char *p = s, *e = s + n, *q;
	char f[200];
	bool labels = false;
	int rc;

	memset(pl, 0, sizeof *pl);
	pl->t = NAN;
	p = skip_blanks(p, e);
	if (p == e || *p == '#')
		return 0;
	if (!name_start(*p, true))
		return perr(P, "expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at "
		            "column %d, found %s", COL(p),
		            found(f, sizeof f, p, token_end(p, e)));
	for (q = p; q < e && name_ch(*q, true); q++)
		;
	pl->name = p;
	pl->nlen = (size_t)(q - p);
	if (q < e && !blank_ch(*q) && *q != '{')
		return perr(P, "expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at "
		            "column %d, found %s", COL(p),
		            found(f, sizeof f, p, token_end(p, e)));
	p = skip_blanks(q, e);
	if (p < e && *p == '{') {
		const char *open = p++;
		labels = true;
		if ((rc = parse_labels(P, &p, e, open, pl, scratch)))
			return rc;
	}
	p = skip_blanks(p, e);
	if (p == e)
		return perr(P, "%.*s: expected a value after the metric name%s, "
		            "found the end of the line", LN(pl->nlen), pl->name,
		            labels ? " and labels" : "");
	q = token_end(p, e);
	if (!parse_value(p, (size_t)(q - p), &pl->val))
		return perr(P, "%.*s: expected a number, NaN, +Inf or -Inf as the "
		            "value, found %s", LN(pl->nlen), pl->name,
		            found(f, sizeof f, p, q));
	p = skip_blanks(q, e);
	if (p < e) {
		const char *d = p;
		long long ms = 0;
		q = token_end(p, e);
		if (*d == '-')
			d++;
		if (d == q || q - d > 18)
			goto bad_ts;
		for (; d < q; d++) {
			if (*d < '0' || *d > '9')
				goto bad_ts;
			ms = ms * 10 + (*d - '0');
		}
		pl->t = (*p == '-' ? -(double)ms : (double)ms) / 1000.0;
		p = skip_blanks(q, e);
		if (p < e)
			return perr(P, "expected the end of the line after the "
			            "timestamp, found %s", found(f, sizeof f, p, e));
	}
	return 0;
bad_ts:
	return perr(P, "expected an integer timestamp in milliseconds after the "
	            "value, found %s", found(f, sizeof f, p, q));
}

/* The sample being filled for one GPU. */
typedef struct pend {
	tl_sample s;
	unsigned seen;           /* metrics it has, 1 << M_* */
	long line;               /* where it started, for messages */
} pend;

/* The GPU of identity labels seen before in this file, so that a line
 * costs one hash lookup instead of validating and asking the builder. */
typedef struct idslot {
	char *key;               /* the label values, length-prefixed */
	size_t len;
	int id;
} idslot;

typedef struct preader {
	pend *pg;                /* by builder GPU id */
	int npg;
	char *fhost;             /* host from the file name */
	bool fhost_done;
	idslot *h;               /* open addressing, at most half full */
	size_t hcap, hn;
} preader;

#define IDKEY_MAX 1024

/* The cache key of id into key; 0 when too long to cache. */
static size_t id_key(const char *const id[NID], char key[IDKEY_MAX])
{
	size_t o = 0;
	for (int i = 0; i < NID; i++) {
		size_t n = id[i] ? strlen(id[i]) : 0;
		if (o + n + 3 > IDKEY_MAX)
			return 0;
		key[o++] = (char)(id[i] ? 1 + (n >> 8) : 0);
		key[o++] = (char)(n & 0xff);
		memcpy(key + o, id[i] ? id[i] : "", n);
		o += n;
	}
	return o;
}

static idslot *id_find(const preader *R, const char *key, size_t len)
{
	uint64_t hv = 1469598103934665603ull;  /* FNV-1a */
	size_t i;
	for (size_t k = 0; k < len; k++)
		hv = (hv ^ (unsigned char)key[k]) * 1099511628211ull;
	i = (size_t)hv & (R->hcap - 1);
	while (R->h[i].key && (R->h[i].len != len ||
	                       memcmp(R->h[i].key, key, len) != 0))
		i = (i + 1) & (R->hcap - 1);
	return &R->h[i];
}

static void id_put(preader *R, const char *key, size_t len, int id)
{
	idslot *sl;
	if (2 * (R->hn + 1) > R->hcap) {
		idslot *old = R->h;
		size_t ocap = R->hcap;
		R->hcap = ocap ? 2 * ocap : 64;
		R->h = xcalloc(R->hcap, sizeof *R->h);
		for (size_t i = 0; i < ocap; i++)
			if (old[i].key)
				*id_find(R, old[i].key, old[i].len) = old[i];
		free(old);
	}
	sl = id_find(R, key, len);
	sl->key = xmalloc(len);
	memcpy(sl->key, key, len);
	sl->len = len;
	sl->id = id;
	R->hn++;
}

static void preader_free(preader *R)
{
	for (size_t i = 0; i < R->hcap; i++)
		free(R->h[i].key);
	free(R->h);
	free(R->pg);
	free(R->fhost);
}

static int push_pend(tl_src *src, int gpu, pend *pd)
{
	long line = src->line;
	int rc;
	src->line = pd->line;
	rc = tl_push(src, gpu, &pd->s);
	src->line = line;
	pd->seen = 0;
	return rc;
}

static bool same_time(double a, double b)
{
	return a == b || (isnan(a) && isnan(b));
}

/* The GPU a sample names; -1 with src->err set. fail() formats the
 * message with the place (a line or a JSON path). */
typedef struct idplace {
	tl_src *src;
	const ploc *P;           /* text: the line */
	const jin *J;            /* JSON: the path of the metric object */
	const char *path;
} idplace;

static int id_fail(const idplace *I, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int id_fail(const idplace *I, const char *fmt, ...)
{
	char m[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m, sizeof m, fmt, ap);
	va_end(ap);
	if (I->J)
		return jin_fail(I->J, I->path, NULL, "%s", m);
	return perr(I->P, "%s", m);
}

static int resolve_gpu(const idplace *I, preader *R, const char *metric,
                       const char *const id[NID])
{
	tl_src *src = I->src;
	const char *host = src->host, *why;
	int index = -1, which, gpu;
	char key[IDKEY_MAX], ihost[256];
	size_t klen;

	if (!id[ID_GPU] && !id[ID_UUID] && !id[ID_PCI]) {
		id_fail(I, "%s has no gpu, UUID or pci_bus_id label; expected one "
		        "to tell which GPU it is", metric);
		return -1;
	}
	klen = id_key(id, key);
	if (klen && R->hn) {
		idslot *sl = id_find(R, key, klen);
		if (sl->key)
			return sl->id;
	}
	for (which = 0; which < NID; which++) {
		if (!id[which] || (which == ID_HOST && host))
			continue;
		if ((why = bad_ident(which, id[which], &index))) {
			char f[200];
			id_fail(I, "label %s: %s is not %s", id_labels[which],
			        found(f, sizeof f, id[which],
			              id[which] + strlen(id[which])), why);
			return -1;
		}
	}
	if (!host)
		host = id[ID_HOST];
	if (!host && id[ID_INST])
		host = instance_host(id[ID_INST], ihost, sizeof ihost);
	if (!host) {
		if (!R->fhost_done) {
			R->fhost = tl_host_from_file(src->file);
			R->fhost_done = true;
		}
		host = R->fhost;
		if (host && !src->fhost[0])
			snprintf(src->fhost, sizeof src->fhost, "%s", host);
	}
	if (!host) {
		id_fail(I, "no host: give --host, or a Hostname label or an "
		        "instance label HOST:PORT");
		return -1;
	}
	gpu = tl_gpu(src, host, id[ID_UUID], id[ID_PCI], index);
	if (gpu >= 0 && id[ID_MODEL])
		tl_gpu_model(src, gpu, id[ID_MODEL], strlen(id[ID_MODEL]));
	if (gpu >= 0 && klen)
		id_put(R, key, klen, gpu);
	return gpu;
}

/* One sample line of a metric we read. */
static int take(tl_src *src, const ploc *P, preader *R, const pline *pl,
                int mi)
{
	const struct pmetric *m = &metrics[mi];
	idplace I = { src, P, NULL, NULL };
	pend *pd;
	int gpu = resolve_gpu(&I, R, m->name, pl->id);

	if (gpu < 0)
		return src->err && src->err->code ? src->err->code : TM_EINPUT;
	if (gpu >= R->npg) {
		int n = gpu + 1 > 2 * R->npg ? gpu + 1 : 2 * R->npg;
		R->pg = xrealloc(R->pg, (size_t)n * sizeof *R->pg);
		memset(R->pg + R->npg, 0, (size_t)(n - R->npg) * sizeof *R->pg);
		R->npg = n;
	}
	pd = &R->pg[gpu];
	/* a metric this sample already has, or another time: the next
	 * scrape has begun */
	if (pd->seen && ((pd->seen & (1u << mi)) || !same_time(pd->s.t, pl->t))) {
		int rc = push_pend(src, gpu, pd);
		if (rc)
			return rc;
	}
	if (!pd->seen) {
		tl_sample_clear(&pd->s);
		pd->s.t = pl->t;
		pd->line = src->line;
	}
	pd->seen |= 1u << mi;
	if (is_blank(m->kind, &pl->val)) {
		src->skipped[TL_SKIP_BLANK]++;
		return 0;
	}
	if (m->kind == K_MASK && !(pl->val.v >= 0 &&
	                           pl->val.v == floor(pl->val.v)))
		return perr(P, "%s: expected a bitmask (an integer from 0), found "
		            "%g", m->name, pl->val.v);
	apply(&pd->s, &pd->seen, mi, pl->val.v);
	return 0;
}

int tl_read_prom(tl_src *src, tl_lines *L)
{
	preader R = { 0 };
	char *scratch = NULL;
	size_t scap = 0;
	const char *line;
	size_t len;
	int r, rc = 0;

	src->format = "prometheus text";
	while ((r = tl_lines_next(L, &line, &len)) == 1) {
		tm_error le = { 0 };
		ploc P = { src->file, L->lineno, line, &le };
		pline pl;
		int mi;

		src->line = L->lineno;
		if (scap < len + 1) {
			scap = len + 1 > TL_MAX_LINE + 1 ? len + 1 : TL_MAX_LINE + 1;
			free(scratch);
			scratch = xmalloc(scap);
		}
		if (parse_line(&P, line, len, &pl, scratch)) {
			/* a scrape cut off mid-line by the end of the file
			 * (a file still being written) */
			if (L->unterminated) {
				src->skipped[TL_SKIP_CUT]++;
				r = 0;
				break;
			}
			rc = tm_fail(src->err, le.code, "%s", le.msg);
			goto out;
		}
		if (!pl.name)
			continue;
		src->rows++;
		mi = find_metric(pl.name, pl.nlen);
		if (mi < 0) {
			src->skipped[TL_SKIP_UNUSED]++;
			continue;
		}
		P.err = src->err;
		if ((rc = take(src, &P, &R, &pl, mi)))
			goto out;
	}
	if (r != 0) {
		rc = r;
		goto out;
	}
	for (int g = 0; g < R.npg; g++)
		if (R.pg[g].seen && (rc = push_pend(src, g, &R.pg[g])))
			goto out;
out:
	free(scratch);
	preader_free(&R);
	return rc;
}

/* ---- Prometheus query_range JSON ------------------------------------------ */

/* The points of every query_range file read into a sink so far wait in
 * it (tl_sink_qpending), to be merged and pushed by tl_qrange_flush(k).
 * The tl_src of each file is kept by pointer, so that the pushes count in
 * that file's summary: it must stay valid until tl_qrange_flush(). */
#define QMAX_POINTS (1u << 26)
#define QMAX_FILES 65535

static void q_reset(tl_qpending *Q)
{
	free(Q->srcs);
	free(Q->p);
	memset(Q, 0, sizeof *Q);
}

static int q_add_src(tl_qpending *Q, tl_src *src)
{
	if (Q->nsrc == Q->capsrc) {
		Q->capsrc = Q->capsrc ? 2 * Q->capsrc : 8;
		Q->srcs = xrealloc(Q->srcs, (size_t)Q->capsrc * sizeof *Q->srcs);
	}
	Q->srcs[Q->nsrc] = src;
	return Q->nsrc++;
}

/* The value string of a point: 0, 1 (blank) or an error. */
static int q_value(const jin *J, const char *path, json_t *s, int mi,
                   double *v)
{
	pval pv;
	char f[200];
	const char *str = json_string_value(s);
	size_t n = json_string_length(s);
	if (!parse_value(str, n, &pv))
		return jin_fail(J, path, NULL, "%s is not a number; expected a "
		                "number, NaN, +Inf or -Inf",
		                found(f, sizeof f, str, str + n));
	if (is_blank(metrics[mi].kind, &pv))
		return -1;
	if (metrics[mi].kind == K_MASK && !(pv.v >= 0 && pv.v == floor(pv.v)))
		return jin_fail(J, path, NULL, "%s: expected a bitmask (an integer "
		                "from 0), found %g", metrics[mi].name, pv.v);
	*v = pv.v;
	return 0;
}

/* One series (a matrix or vector result). */
static int q_series(tl_src *src, const jin *J, preader *R, json_t *r,
                    const char *path, bool matrix, int si)
{
	json_t *met, *nm, *pts = NULL;
	const char *id[NID] = { NULL };
	char mpath[96], ppath[128];
	size_t npts;
	int rc, mi, gpu;
	idplace I = { src, NULL, J, mpath };
	tl_qpending *Q = tl_sink_qpending(src->sink);

	if (!json_is_object(r))
		return jin_fail(J, path, NULL, "expected an object with \"metric\" "
		                "and \"%s\"", matrix ? "values" : "value");
	if ((rc = jin_obj(J, r, path, "metric", JF_REQ, &met)))
		return rc;
	snprintf(mpath, sizeof mpath, "%s.metric", path);
	nm = json_object_get(met, "__name__");
	if (!nm)
		return jin_fail(J, mpath, "__name__", "missing; expected the name of "
		                "a DCGM metric (query raw series such as "
		                "DCGM_FI_DEV_GPU_TEMP, not an expression of them)");
	if (!json_is_string(nm))
		return jin_fail(J, mpath, "__name__", "expected a string");
	if (matrix) {
		if ((rc = jin_arr(J, r, path, "values", JF_REQ, &pts)))
			return rc;
		npts = json_array_size(pts);
	} else {
		if (!json_object_get(r, "value"))
			return jin_fail(J, path, "value", "missing; expected "
			                "[time, \"value\"]");
		npts = 1;
	}
	src->rows += (long)npts;
	mi = find_metric(json_string_value(nm), json_string_length(nm));
	if (mi < 0) {
		src->skipped[TL_SKIP_UNUSED] += (long)npts;
		return 0;
	}
	for (int i = 0; i < NID; i++) {
		json_t *l = json_object_get(met, id_labels[i]);
		if (!l)
			continue;
		if (!json_is_string(l) ||
		    strlen(json_string_value(l)) != json_string_length(l))
			return jin_fail(J, mpath, id_labels[i], "expected a string");
		if (*json_string_value(l))
			id[i] = json_string_value(l);
	}
	gpu = resolve_gpu(&I, R, metrics[mi].name, id);
	if (gpu < 0)
		return src->err && src->err->code ? src->err->code : TM_EINPUT;
	for (size_t j = 0; j < npts; j++) {
		json_t *pt = matrix ? json_array_get(pts, j)
		                    : json_object_get(r, "value");
		json_t *jt = json_array_get(pt, 0), *jv = json_array_get(pt, 1);
		tl_qpoint *q;
		double v = 0;

		if (matrix)
			snprintf(ppath, sizeof ppath, "%s.values[%zu]", path, j);
		else
			snprintf(ppath, sizeof ppath, "%s.value", path);
		if (!json_is_array(pt) || json_array_size(pt) != 2 ||
		    !json_is_number(jt) || !json_is_string(jv))
			return jin_fail(J, ppath, NULL, "expected [time, \"value\"]");
		strncat(ppath, "[1]", sizeof ppath - strlen(ppath) - 1);
		rc = q_value(J, ppath, jv, mi, &v);
		if (rc > 0)
			return rc;
		if (rc < 0) {
			src->skipped[TL_SKIP_BLANK]++;
			continue;
		}
		{
			char m[256];
			if (tl_check_time(json_number_value(jt), m, sizeof m)) {
				ppath[strlen(ppath) - 2] = '0';  /* the time */
				return jin_fail(J, ppath, NULL, "%s", m);
			}
			if (metrics[mi].kind != K_MASK &&
			    tl_check_value(metrics[mi].field, v, m, sizeof m))
				return jin_fail(J, ppath, NULL, "%s", m);
		}
		if (Q->n >= QMAX_POINTS)
			return jin_fail(J, ppath, NULL, "more than %u points in all "
			                "query_range files; expected fewer (a larger "
			                "step)", QMAX_POINTS);
		if (Q->n == Q->cap) {
			Q->cap = Q->cap ? 2 * Q->cap : 1024;
			Q->p = xrealloc(Q->p, Q->cap * sizeof *Q->p);
		}
		q = &Q->p[Q->n];
		q->t = json_number_value(jt);
		/* the file's own span, also what --from/--to relative to
		 * its first time count from */
		if (isnan(src->t_first) || q->t < src->t_first)
			src->t_first = q->t;
		if (isnan(src->t_last) || q->t > src->t_last)
			src->t_last = q->t;
		q->v = v;
		q->seq = (unsigned)Q->n++;
		q->gpu = gpu;
		q->src = (unsigned short)si;
		q->metric = (unsigned char)mi;
	}
	return 0;
}

int tl_read_qrange(tl_src *src, const char *text, size_t len)
{
	jin J = { src->file, src->err };
	preader R = { 0 };
	json_error_t je;
	json_t *root, *st, *data, *rt, *res;
	const char *rts;
	char path[64];
	tl_qpending *Q = tl_sink_qpending(src->sink);
	size_t n0 = Q->n;
	int rc, si = -1;
	bool matrix;

	src->format = "prometheus query_range";
	src->line = 0;
	if (Q->nsrc >= QMAX_FILES)
		return tm_fail(src->err, TM_EINPUT, "%s: more than %d query_range "
		               "files; expected fewer", src->file, QMAX_FILES);
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {  /* a byte order mark */
		text += 3;
		len -= 3;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		/* jansson quotes the input near the error: keep it one line */
		char m[4 * sizeof je.text + 1];
		size_t o = 0;
		for (const char *c = je.text; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				o += (size_t)snprintf(m + o, sizeof m - o, "\\x%02x",
				                      (unsigned char)*c);
			else
				m[o++] = *c;
		m[o] = '\0';
		if (je.line > 0)
			return tm_fail(src->err, TM_EINPUT, "%s:%d:%d: %s", src->file,
			               je.line, je.column, m);
		return tm_fail(src->err, TM_EINPUT, "%s: %s", src->file, m);
	}
	if (!json_is_object(root)) {
		rc = jin_fail(&J, "", NULL, "expected a JSON object (a Prometheus "
		              "API response)");
		goto out;
	}
	st = json_object_get(root, "status");
	if (!st) {
		rc = jin_fail(&J, "", "status", "missing; expected \"success\" (a "
		              "Prometheus API response)");
		goto out;
	}
	if (!json_is_string(st) || strcmp(json_string_value(st), "success")) {
		const char *et = json_string_value(json_object_get(root,
		                                                   "errorType"));
		const char *em = json_string_value(json_object_get(root, "error"));
		const char *sv = json_string_value(st);
		char f[200], det[480] = "";
		size_t o = 0;
		if (!sv) {
			rc = jin_fail(&J, "", "status", "expected the string "
			              "\"success\"");
			goto out;
		}
		if (et)
			o += (size_t)snprintf(det, sizeof det, " (errorType %s",
			                      found(f, sizeof f, et, et + strlen(et)));
		if (em)
			o += (size_t)snprintf(det + o, sizeof det - o, "%serror %s",
			                      et ? ", " : " (",
			                      found(f, sizeof f, em, em + strlen(em)));
		if (et || em)
			snprintf(det + o, sizeof det - o, ")");
		rc = jin_fail(&J, "", "status", "%s%s; expected \"success\"",
		              found(f, sizeof f, sv, sv + strlen(sv)), det);
		goto out;
	}
	if ((rc = jin_obj(&J, root, "", "data", JF_REQ, &data)))
		goto out;
	rt = json_object_get(data, "resultType");
	rts = json_string_value(rt);
	if (!rts || (strcmp(rts, "matrix") && strcmp(rts, "vector"))) {
		char f[200];
		if (!rt)
			rc = jin_fail(&J, "data", "resultType", "missing; expected "
			              "\"matrix\" (query_range) or \"vector\" (query)");
		else
			rc = jin_fail(&J, "data", "resultType", "%s is not supported; "
			              "expected \"matrix\" (query_range) or \"vector\" "
			              "(query)", rts ? found(f, sizeof f, rts,
			              rts + strlen(rts)) : "a non-string");
		goto out;
	}
	matrix = !strcmp(rts, "matrix");
	if ((rc = jin_arr(&J, data, "data", "result", JF_REQ, &res)))
		goto out;
	si = q_add_src(Q, src);
	for (size_t i = 0; i < json_array_size(res); i++) {
		snprintf(path, sizeof path, "data.result[%zu]", i);
		if ((rc = q_series(src, &J, &R, json_array_get(res, i), path, matrix,
		                   si)))
			goto out;
	}
out:
	if (rc) {
		/* nothing of a rejected file stays pending */
		Q->n = n0;
		if (si >= 0)
			Q->nsrc--;
	}
	preader_free(&R);
	json_decref(root);
	return rc;
}

/* Time first, so that a file's first pushed time is its earliest (the
 * builder's --from/--to relative to the first time rely on it); then GPU,
 * then metric (the enforced power limit after the management limit). */
static int qcmp(const void *pa, const void *pb)
{
	const tl_qpoint *a = pa, *b = pb;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->gpu != b->gpu)
		return a->gpu < b->gpu ? -1 : 1;
	if (a->metric != b->metric)
		return a->metric < b->metric ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

int tl_qrange_flush(tl_sink *k, tm_error *err)
{
	tl_qpending *Q = tl_sink_qpending(k);
	int rc = 0;
	size_t i, j;

	if (Q->n == 0)
		goto out;
	qsort(Q->p, Q->n, sizeof *Q->p, qcmp);
	for (i = 0; i < Q->n; i = j) {
		tl_sample s;
		unsigned seen = 0;
		tl_src *S = Q->srcs[Q->p[i].src];
		tm_error *e = S->err;

		tl_sample_clear(&s);
		s.t = Q->p[i].t;
		for (j = i; j < Q->n && Q->p[j].t == s.t &&
		     Q->p[j].gpu == Q->p[i].gpu; j++)
			apply(&s, &seen, Q->p[j].metric, Q->p[j].v);
		/* the sample counts in the file of its first point */
		S->line = 0;
		S->err = err ? err : e;
		rc = tl_push(S, Q->p[i].gpu, &s);
		S->err = e;
		if (rc)
			goto out;
	}
out:
	q_reset(Q);
	return rc;
}


/* ---- other answers of the HTTP API (promapi.c) ---------------------------- */

/* The answer's JSON, or NULL with err set (one line, as for a file). */
static json_t *api_load(const char *file, const char *text, size_t len,
                        tm_error *err)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	char m[200];
	if (!root) {
		tm_text(m, sizeof m, je.text);
		tm_fail(err, TM_EINPUT, "%s: not JSON (%s at %d:%d)", file, m,
		        je.line, je.column);
	}
	return root;
}

bool tl_prom_error_text(const char *text, size_t len, char *buf, size_t cap)
{
	tm_error e = { 0, "" };
	json_t *root = api_load("", text, len, &e);
	const char *et = json_string_value(json_object_get(root, "errorType"));
	const char *em = json_string_value(json_object_get(root, "error"));
	char a[100], b[400];
	if (em) {
		tm_text(a, sizeof a, et ? et : "error");
		tm_text(b, sizeof b, em);
		snprintf(buf, cap, "%s: %s", a, b);
	}
	json_decref(root);
	return em != NULL;
}

int tl_read_label_values(const char *file, const char *text, size_t len,
                         size_t max, char ***out, size_t *n, tm_error *err)
{
	json_t *root = api_load(file, text, len, err), *data, *st;
	jin J = { file, err };
	int rc = 0;
	size_t k;

	*out = NULL;
	*n = 0;
	if (!root)
		return TM_EINPUT;
	st = json_object_get(root, "status");
	if (!json_is_string(st) || strcmp(json_string_value(st), "success")) {
		char m[520];
		if (tl_prom_error_text(text, len, m, sizeof m))
			rc = jin_fail(&J, "", "status", "not \"success\" (%s)", m);
		else
			rc = jin_fail(&J, "", "status", "missing or not \"success\"; "
			              "expected a Prometheus API response");
		goto out;
	}
	data = json_object_get(root, "data");
	if (!json_is_array(data)) {
		rc = jin_fail(&J, "", "data", "expected an array of label values");
		goto out;
	}
	if (json_array_size(data) > max) {
		rc = jin_fail(&J, "", "data", "%zu values; expected at most %zu",
		              json_array_size(data), max);
		goto out;
	}
	*out = xcalloc(json_array_size(data) + 1, sizeof **out);
	for (k = 0; k < json_array_size(data); k++) {
		json_t *v = json_array_get(data, k);
		char p[40];
		if (!json_is_string(v) ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			snprintf(p, sizeof p, "data[%zu]", k);
			rc = jin_fail(&J, p, NULL, "expected a string");
			goto out;
		}
		(*out)[(*n)++] = xstrdup(json_string_value(v));
	}
out:
	if (rc) {
		for (k = 0; k < *n; k++)
			free((*out)[k]);
		free(*out);
		*out = NULL;
		*n = 0;
	}
	json_decref(root);
	return rc;
}
