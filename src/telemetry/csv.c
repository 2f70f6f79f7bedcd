/*
 * csv.c — nvidia-smi `--query-gpu` CSV logs (with or without a header,
 * units, [N/A]...), and the `--query-gpu` sections inside
 * nvidia_gpu_exporter capture files (`dmon` logs: dmon.c). Rows become
 * samples for the sink (tl_gpu, tl_push); large files are parsed, and
 * their samples pushed, by several threads ("parallel parsing" below).
 *
 * The CSV path is the hot one (multi-gigabyte logs): a row is parsed in one
 * pass over its bytes, numbers without strtod, the date of the previous row
 * reused, and the GPU of a row found from its raw identity bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/telemetry.h"

enum col_kind {
	C_SKIP,     /* a column thermap does not read */
	C_TIME, C_INDEX, C_PCI, C_UUID,
	C_NAME,     /* the GPU model (`name`): groups GPUs for a pooled fit */
	C_NUM,      /* a number into field */
	C_MASK,     /* clocks_event_reasons.active: hex bitmask */
	C_FLAG,     /* Active / Not Active into field (ORed) */
	C_COUNT,    /* counter in µs into field (summed) */
};

typedef struct colspec {
	const char *name;   /* normalised header name */
	enum col_kind kind;
	int field;
	int rank;           /* among names for one field, lower wins */
} colspec;

/* Header names, normalised: lower case, unit in brackets removed, '_'
 * and '.' alike. The first group is what nvidia-smi prints; the rest are
 * spellings seen in logs that reformat its output. */
static const colspec names[] = {
	{ "timestamp", C_TIME, 0, 0 },
	{ "index", C_INDEX, 0, 0 },
	{ "pci.bus.id", C_PCI, 0, 0 },
	{ "uuid", C_UUID, 0, 0 },
	{ "name", C_NAME, 0, 0 },
	{ "temperature.gpu", C_NUM, TL_TEMP, 0 },
	{ "power.draw", C_NUM, TL_POWER, 0 },
	{ "power.draw.average", C_NUM, TL_POWER, 1 },
	{ "power.draw.instant", C_NUM, TL_POWER, 2 },
	{ "enforced.power.limit", C_NUM, TL_POWER_LIMIT, 0 },
	{ "power.limit", C_NUM, TL_POWER_LIMIT, 1 },
	{ "clocks.sm", C_NUM, TL_SM_CLOCK, 0 },
	{ "clocks.current.sm", C_NUM, TL_SM_CLOCK, 0 },
	{ "clocks.max.sm", C_NUM, TL_SM_CLOCK_MAX, 0 },
	{ "clocks.max.sm.clock", C_NUM, TL_SM_CLOCK_MAX, 0 },
	{ "utilization.gpu", C_NUM, TL_UTIL, 0 },
	{ "temperature.gpu.tlimit", C_NUM, TL_TLIMIT, 0 },
	{ "clocks.event.reasons.active", C_MASK, 0, 0 },
	{ "clocks.throttle.reasons.active", C_MASK, 0, 0 },
	{ "clocks.event.reasons.sw.thermal.slowdown", C_FLAG, TL_THERMAL, 0 },
	{ "clocks.event.reasons.hw.thermal.slowdown", C_FLAG, TL_THERMAL, 0 },
	{ "clocks.throttle.reasons.sw.thermal.slowdown", C_FLAG, TL_THERMAL, 0 },
	{ "clocks.throttle.reasons.hw.thermal.slowdown", C_FLAG, TL_THERMAL, 0 },
	{ "clocks.event.reasons.sw.power.cap", C_FLAG, TL_PCAP, 0 },
	{ "clocks.throttle.reasons.sw.power.cap", C_FLAG, TL_PCAP, 0 },
	{ "clocks.event.reasons.counters.sw.thermal.slowdown", C_COUNT,
	  TL_THERMAL_US, 0 },
	{ "clocks.event.reasons.counters.hw.thermal.slowdown", C_COUNT,
	  TL_THERMAL_US, 0 },
	{ "clocks.event.reasons.counters.sw.power.cap", C_COUNT, TL_PCAP_US, 0 },
	/* reformatted logs */
	{ "gpu.index", C_INDEX, 0, 1 },
	{ "gpu", C_INDEX, 0, 2 },
	{ "pci.bus", C_SKIP, 0, 0 },
	{ "gpu.uuid", C_UUID, 0, 1 },
	{ "gpu.name", C_NAME, 0, 1 },
	{ "temperature.c", C_NUM, TL_TEMP, 1 },
	{ "temperature", C_NUM, TL_TEMP, 2 },
	{ "temp.c", C_NUM, TL_TEMP, 3 },
	{ "power.w", C_NUM, TL_POWER, 3 },
	{ "power", C_NUM, TL_POWER, 4 },
	{ "utilization.gpu.percent", C_NUM, TL_UTIL, 1 },
	{ "sm.clock.mhz", C_NUM, TL_SM_CLOCK, 1 },
};

/* Names nvidia-smi uses that thermap does not read, so that a header made
 * only of them is still recognised as one. */
static bool smi_name(const char *n)
{
	static const char *const pre[] = {
		"name", "serial", "driver.version", "pstate", "memory.",
		"utilization.", "temperature.", "power.", "clocks", "fan.",
		"pci.", "count", "display.", "persistence", "ecc.", "mig.",
		"compute", "encoder.", "gom.", "accounting.", "vbios",
		"inforom.", "module.", "retired.", "remapped", "protected",
		"addressing", "reset.", "platform", "vgpu", "driver",
		"gpu.", "fabric.", "dramencryption", "c2c", "inforom",
		"gsp", "pcie.", "nvlink", "power", "clocks.",
	};
	for (size_t i = 0; i < sizeof pre / sizeof pre[0]; i++)
		if (strncmp(n, pre[i], strlen(pre[i])) == 0)
			return true;
	return false;
}

static inline uint64_t load8(const char *p)
{
	uint64_t x;
	memcpy(&x, p, 8);
	return x;
}

/* ---- columns ------------------------------------------------------------ */

typedef struct col {
	enum col_kind kind;
	int field;
} col;

typedef struct idcache {
	char key[128];  /* index, pci.bus_id, uuid bytes, back to back */
	size_t n[3];
	int id;
} idcache;

#define NCACHE 64

typedef struct csv {
	tl_src *src;
	const char *host;     /* GPU host for this file */
	col *cols;
	int ncols;
	bool have_id;
	bool warned_noid;
	/* the previous row's date, to skip re-parsing it */
	char date[16];
	double date_t;
	char sec[24];         /* the previous row's time up to the second */
	double sec_t;
	bool sec_ok;
	idcache cache[NCACHE];
	int ncache, next, hit;
} csv;

static void norm_name(const char *p, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	const char *br = memchr(p, '[', n);
	if (br)
		n = (size_t)(br - p);
	while (n && isspace((unsigned char)*p))
		p++, n--;
	while (n && isspace((unsigned char)p[n - 1]))
		n--;
	for (size_t i = 0; i < n && k + 1 < cap; i++) {
		char c = (char)tolower((unsigned char)p[i]);
		out[k++] = c == '_' || c == ' ' ? '.' : c;
	}
	out[k] = '\0';
}

static void trim(const char **p, const char **e)
{
	while (*p < *e && (**p == ' ' || **p == '\t'))
		(*p)++;
	while (*e > *p && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

/* Reads a header (or the --fields list). Returns the number of columns
 * thermap reads, 0 when none is known, with the column table set. */
static int set_header(csv *C, const char *line, size_t len)
{
	int best[TL_NFIELDS + 5], known = 0, n = 1;
	const char *p = line, *e = line + len;
	for (const char *q = line; q < e; q++)
		n += *q == ',';
	free(C->cols);
	C->cols = xcalloc((size_t)n, sizeof *C->cols);
	C->ncols = n;
	C->have_id = false;
	for (int i = 0; i < TL_NFIELDS + 5; i++)
		best[i] = 99;
	/* two passes: the best-ranked name of each field wins */
	for (int pass = 0; pass < 2; pass++) {
		p = line;
		for (int c = 0; c < n; c++) {
			const char *q = memchr(p, ',', (size_t)(e - p));
			char nm[96];
			if (!q)
				q = e;
			norm_name(p, (size_t)(q - p), nm, sizeof nm);
			p = q + 1;
			for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
				const colspec *s = &names[k];
				int slot;
				if (strcmp(nm, s->name) != 0)
					continue;
				slot = s->kind == C_NUM ? s->field
				       : TL_NFIELDS + (s->kind == C_TIME ? 0
				       : s->kind == C_INDEX ? 1
				       : s->kind == C_PCI ? 2
				       : s->kind == C_UUID ? 3 : 4);
				if (s->kind == C_MASK || s->kind == C_FLAG ||
				    s->kind == C_COUNT || s->kind == C_SKIP) {
					if (pass == 1) {
						C->cols[c].kind = s->kind;
						C->cols[c].field = s->field;
						known += s->kind != C_SKIP;
					}
					break;
				}
				if (pass == 0) {
					if (s->rank < best[slot])
						best[slot] = s->rank;
				} else if (s->rank == best[slot]) {
					best[slot] = -1;  /* taken */
					C->cols[c].kind = s->kind;
					C->cols[c].field = s->field;
					known++;
					if (s->kind == C_INDEX || s->kind == C_PCI ||
					    s->kind == C_UUID)
						C->have_id = true;
				}
				break;
			}
		}
	}
	/* The bitmask holds every reason; with it, the per-reason Active
	 * columns say nothing more and are read past. */
	for (int c = 0; c < n; c++)
		if (C->cols[c].kind == C_MASK)
			for (int d = 0; d < n; d++)
				if (C->cols[d].kind == C_FLAG)
					C->cols[d].kind = C_SKIP;
	/* a skipped column carries the length of the run of skipped
	 * columns it starts, so a row passes the run in one go */
	for (int c = n - 1; c >= 0; c--)
		if (C->cols[c].kind == C_SKIP)
			C->cols[c].field = c + 1 < n && C->cols[c + 1].kind == C_SKIP
			                   ? C->cols[c + 1].field + 1 : 1;
	/* a header must name something measured, not only identities */
	for (int c = 0; c < n; c++)
		if (C->cols[c].kind == C_NUM &&
		    (C->cols[c].field == TL_TEMP || C->cols[c].field == TL_POWER ||
		     C->cols[c].field == TL_SM_CLOCK ||
		     C->cols[c].field == TL_UTIL))
			return known;
	return 0;
}

/* Does this line look like a header: its first field is a name, not a
 * time or a number, and some field is a name nvidia-smi uses? */
static bool looks_like_header(const char *line, size_t len)
{
	const char *p = line, *e = line + len;
	int names_seen = 0;
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	if (p == e || !isalpha((unsigned char)*p))
		return false;
	while (p < e) {
		const char *q = memchr(p, ',', (size_t)(e - p));
		char nm[96];
		if (!q)
			q = e;
		norm_name(p, (size_t)(q - p), nm, sizeof nm);
		for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
			if (strcmp(nm, names[k].name) == 0)
				names_seen++;
		if (smi_name(nm))
			names_seen++;
		p = q + 1;
	}
	return names_seen > 0;
}

/* "[N/A]", "N/A", "[Not Supported]", any "[...]" nvidia-smi prints in
 * place of a value, and an empty field. */
static bool is_missing(const char *p, const char *e)
{
	size_t n = (size_t)(e - p);
	if (n == 0)
		return true;
	if (*p == '[' && e[-1] == ']')
		return true;
	return (n == 3 && memcmp(p, "N/A", 3) == 0) ||
	       (n == 13 && memcmp(p, "Not Supported", 13) == 0);
}

/* A unit after a number: "78.34 W", "45 C", "0 %", "1980 MHz". */
static bool unit_ok(const char *p, const char *e)
{
	static const char *const units[] = {
		"W", "C", "%", "MHz", "MiB", "KiB", "GiB", "mW", "us", "ms",
		"s", "V", "A", "F",
	};
	while (p < e && *p == ' ')
		p++;
	if (p == e)
		return true;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if ((size_t)(e - p) == strlen(units[i]) &&
		    memcmp(p, units[i], (size_t)(e - p)) == 0)
			return true;
	return false;
}

static int bad_value(csv *C, int c, const char *p, const char *e,
                     const char *what)
{
	tl_src *S = C->src;
	return tm_fail(S->err, TM_EINPUT, "%s:%ld: field %d: expected %s, "
	               "found \"%.*s\"", S->file, S->line, c + 1, what,
	               (int)((e - p) > 40 ? 40 : (e - p)), p);
}

/* Are the bytes of x that mask m selects all ASCII digits? (Little-endian
 * byte order: byte k of the text is bits 8k..8k+7.) A digit is 0x3N with
 * N <= 9: the high nibble is 3, and adding 6 does not carry into it. */
static inline bool digits_ok(uint64_t x, uint64_t m)
{
	uint64_t hi = m & 0xf0f0f0f0f0f0f0f0ull, three = m & 0x3030303030303030ull;
	return (x & hi) == three &&
	       ((x + (m & 0x0606060606060606ull)) & hi) == three;
}

/* Are the 16 bytes at p hex digits? Eight at a time: with no byte at or
 * above 0x80, adding a constant to every byte cannot carry into the next,
 * so the top bit of each byte says whether it reached a bound. */
static inline bool hex16_ok(const char *p)
{
	const uint64_t ones = 0x0101010101010101ull, top = ones << 7;
	for (int k = 0; k < 16; k += 8) {
		uint64_t x = load8(p + k), lx, digit, af;
		if (x & top)
			return false;
		lx = x | ones * 0x20;   /* 'A'..'F' -> 'a'..'f' */
		digit = ((x + ones * 0x50) & ~(x + ones * 0x46)) & top;
		af = ((lx + ones * 0x1f) & ~(lx + ones * 0x19)) & top;
		if ((digit | af) != top)
			return false;
	}
	return true;
}

/* Fast path for nvidia-smi's "YYYY/MM/DD HH:MM:SS.mmm". */
static bool smi_time(csv *C, const char *p, const char *e, double *t)
{
	int hh, mm, ss, ms;
	if (e - p != 23 || p[19] != '.')
		return false;
	/* rows of one second share "YYYY/MM/DD HH:MM:SS": when this one
	 * does, only the milliseconds are new */
	if (C->sec_ok && load8(p) == load8(C->sec) &&
	    load8(p + 8) == load8(C->sec + 8) && p[16] == C->sec[16] &&
	    p[17] == C->sec[17] && p[18] == C->sec[18]) {
		unsigned a = (unsigned)(p[20] - '0'), b = (unsigned)(p[21] - '0'),
		         c = (unsigned)(p[22] - '0');
		if (a > 9 || b > 9 || c > 9)
			return false;
		*t = C->sec_t + (double)(a * 100 + b * 10 + c) / 1000.0;
		return true;
	}
	if (p[4] != '/' || p[7] != '/' || p[10] != ' ' || p[13] != ':' ||
	    p[16] != ':')
		return false;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	{
		/* p[11..18] "HH:MM:SS" and p[19..22] ".mmm": the digits, 8
		 * and 4 bytes at a time (the separators were checked above) */
		uint32_t b4;
		memcpy(&b4, p + 19, 4);
		if (!digits_ok(load8(p + 11), 0xffff00ffff00ffffull) ||
		    !digits_ok(b4, 0xffffff00ull))
			return false;
	}
#else
	for (int i = 11; i < 23; i++)
		if (i != 13 && i != 16 && i != 19 &&
		    (unsigned)(p[i] - '0') >= 10)
			return false;
#endif
	if (load8(p) != load8(C->date) || p[8] != C->date[8] ||
	    p[9] != C->date[9]) {
		double d;
		char buf[24];
		memcpy(buf, p, 10);
		memcpy(buf + 10, " 00:00:00", 10);
		if (!tl_parse_time(buf, 19, &d))
			return false;
		memcpy(C->date, p, 10);
		C->date_t = d;
	}
	hh = (p[11] - '0') * 10 + (p[12] - '0');
	mm = (p[14] - '0') * 10 + (p[15] - '0');
	ss = (p[17] - '0') * 10 + (p[18] - '0');
	ms = (p[20] - '0') * 100 + (p[21] - '0') * 10 + (p[22] - '0');
	if (hh > 23 || mm > 59 || ss > 60)
		return false;
	memcpy(C->sec, p, 19);
	C->sec_t = C->date_t + (double)(hh * 3600 + mm * 60 + ss);
	C->sec_ok = true;
	*t = C->sec_t + ms / 1000.0;
	return true;
}

static inline bool keq(const char *a, const char *b, size_t n)
{
	for (; n >= 8; a += 8, b += 8, n -= 8)
		if (load8(a) != load8(b))
			return false;
	for (; n; a++, b++, n--)
		if (*a != *b)
			return false;
	return true;
}

/* The GPU of a key seen before, or -1. */
static int row_gpu_known(csv *C, const char *const ids[4],
                         const size_t idn[4])
{
	/* interleaved logs cycle through their GPUs: try the entry after
	 * the last hit first */
	for (int i = 0, j = C->hit; i < C->ncache; i++, j++) {
		const idcache *c;
		if (j >= C->ncache)
			j = 0;
		c = &C->cache[j];
		if (c->n[0] == idn[0] && c->n[1] == idn[1] && c->n[2] == idn[2] &&
		    keq(c->key, ids[0], idn[0]) &&
		    keq(c->key + idn[0], ids[1], idn[1]) &&
		    keq(c->key + idn[0] + idn[1], ids[2], idn[2])) {
			C->hit = j + 1;
			return c->id;
		}
	}
	return -1;
}

static int row_gpu(csv *C, const char *const ids[4], const size_t idn[4])
{
	tl_src *S = C->src;
	char *uuid = NULL, *pci = NULL;
	int index = -1, id;
	size_t kl = idn[0] + idn[1] + idn[2];

	if ((id = row_gpu_known(C, ids, idn)) >= 0)
		return id;
	if (ids[0] && idn[0]) {
		char *end, buf[24];
		long v;
		size_t n = idn[0] < sizeof buf - 1 ? idn[0] : sizeof buf - 1;
		memcpy(buf, ids[0], n);
		buf[n] = '\0';
		v = strtol(buf, &end, 10);
		if (*end || end == buf || v < 0 || v > 65535)
			return tm_fail(S->err, TM_EINPUT, "%s:%ld: GPU index: "
			               "expected an integer from 0 to 65535, found "
			               "\"%s\"", S->file, S->line, buf), -1;
		index = (int)v;
	}
	if (ids[1] && idn[1] && !is_missing(ids[1], ids[1] + idn[1]))
		pci = strndup(ids[1], idn[1]);
	if (ids[2] && idn[2] && !is_missing(ids[2], ids[2] + idn[2])) {
		uuid = strndup(ids[2], idn[2]);
		/* it names the GPU in the profile and the plan's env files */
		if (!tm_valid_uuid(uuid)) {
			tm_fail(S->err, TM_EINPUT, "%s:%ld: GPU UUID \"%.40s\": "
			        "expected \"GPU-\" or \"MIG-\" and hex digits",
			        S->file, S->line, uuid);
			free(uuid);
			free(pci);
			return -1;
		}
	}
	if (!C->have_id && !C->warned_noid) {
		C->warned_noid = true;
		tm_warn("%s: no index, pci.bus_id or uuid column: every row is "
		        "taken as GPU 0 of host %s", S->file, C->host);
		index = 0;
	} else if (!C->have_id) {
		index = 0;
	}
	id = tl_gpu(S, C->host, uuid, pci, index);
	free(uuid);
	free(pci);
	if (id >= 0 && ids[3] && idn[3] && !is_missing(ids[3], ids[3] + idn[3]))
		tl_gpu_model(S, id, ids[3], idn[3]);
	if (id >= 0 && kl <= sizeof C->cache[0].key) {
		idcache *c = &C->cache[C->ncache < NCACHE ? C->ncache++ : C->next];
		if (C->ncache == NCACHE)
			C->next = (C->next + 1) % NCACHE;
		for (int i = 0, off = 0; i < 3; off += (int)idn[i], i++) {
			if (idn[i])
				memcpy(c->key + off, ids[i], idn[i]);
			c->n[i] = idn[i];
		}
		c->id = id;
	}
	return id;
}

/* The next ',' (or e), eight bytes at a time where the byte order lets
 * the lowest set bit name the first match. */
static inline const char *to_comma(const char *p, const char *e)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* whole words, also the last one: TL_SLACK bytes follow the line */
	const uint64_t ones = 0x0101010101010101ull;
	while (p < e) {
		uint64_t x = load8(p) ^ (ones * ',');
		uint64_t m = (x - ones) & ~x & (ones << 7);
		if (m) {
			p += __builtin_ctzll(m) >> 3;
			return p < e ? p : e;
		}
		p += 8;
	}
	return e;
#endif
	while (p < e && *p != ',')
		p++;
	return p;
}

/* Hex digit values; 0x80 marks a byte that is not one. */
static unsigned char hexval[256];

static void hexval_init(void)
{
	for (int i = 0; i < 256; i++)
		hexval[i] = 0x80;
	for (int i = 0; i < 10; i++)
		hexval['0' + i] = (unsigned char)i;
	for (int i = 0; i < 6; i++)
		hexval['a' + i] = hexval['A' + i] = (unsigned char)(10 + i);
}

/* The value of column c, from p to the comma (or e), trimmed. */
static int one_value(csv *C, int c, const char *vp, const char *ve,
                     tl_sample *s, const char **ids, size_t *idn)
{
	trim(&vp, &ve);
	switch (C->cols[c].kind) {
	case C_TIME:
		if (!smi_time(C, vp, ve, &s->t) &&
		    !tl_parse_time(vp, (size_t)(ve - vp), &s->t))
			return bad_value(C, c, vp, ve, "a time "
			       "(YYYY/MM/DD HH:MM:SS.mmm or ISO 8601)");
		break;
	case C_INDEX:
	case C_PCI:
	case C_UUID:
	case C_NAME: {
		int k = C->cols[c].kind == C_INDEX ? 0
		        : C->cols[c].kind == C_PCI ? 1
		        : C->cols[c].kind == C_UUID ? 2 : 3;
		ids[k] = vp;
		idn[k] = (size_t)(ve - vp);
		break;
	}
	case C_NUM: {
		double v;
		const char *r = tl_parse_num(vp, ve, &v);
		if (r && unit_ok(r, ve))
			s->v[C->cols[c].field] = v;
		else if (!is_missing(vp, ve))
			return bad_value(C, c, vp, ve, "a number");
		break;
	}
	case C_MASK: {
		unsigned long long m = 0;
		const char *r = vp;
		if (ve - vp > 2 && vp[0] == '0' && (vp[1] == 'x' || vp[1] == 'X')) {
			for (r = vp + 2; r < ve && isxdigit((unsigned char)*r); r++)
				m = m << 4 | (unsigned)(isdigit((unsigned char)*r)
				    ? *r - '0' : tolower((unsigned char)*r) - 'a' + 10);
		}
		if (r == ve && ve - vp > 2 && ve - vp <= 18)
			tl_reasons(s, m);
		else if (!is_missing(vp, ve))
			return bad_value(C, c, vp, ve,
			                 "a bitmask like 0x0000000000000004");
		break;
	}
	case C_FLAG: {
		double v, *f = &s->v[C->cols[c].field];
		if (ve - vp == 6 && memcmp(vp, "Active", 6) == 0)
			v = 1;
		else if (ve - vp == 10 && memcmp(vp, "Not Active", 10) == 0)
			v = 0;
		else if (is_missing(vp, ve))
			break;
		else
			return bad_value(C, c, vp, ve, "Active or Not Active");
		*f = isnan(*f) ? v : (double)(*f != 0 || v != 0);
		break;
	}
	case C_COUNT: {
		double v, *f = &s->v[C->cols[c].field];
		const char *r = tl_parse_num(vp, ve, &v);
		if (r && unit_ok(r, ve))
			*f = isnan(*f) ? v : *f + v;
		else if (!is_missing(vp, ve))
			return bad_value(C, c, vp, ve, "a number");
		break;
	}
	case C_SKIP:
		break;
	}
	return 0;
}

/* One data row, in one pass over its bytes. Plain numbers ("691.37")
 * are read in place; anything else (units, [N/A], hex, words) goes to
 * one_value(). */
typedef struct rowrec {   /* a parsed row waiting to be pushed */
	const char *ids[4];   /* index, pci.bus_id, uuid, name as in the
	                         row (the name does not tell GPUs apart) */
	size_t idn[4];
	tl_sample s;
} rowrec;

/* Parses one row into r. The byte after the line (line[len]) must be a
 * '\n', '\r' or '\0' -- tl_lines and the piece reader guarantee it -- so
 * that the scans for digits and spaces stop there without a bound check. */
static int parse_row(csv *C, const char *line, size_t len,
                     const char **ids, size_t *idn, tl_sample *smp)
{
	tl_src *S = C->src;
	const char *p = line, *e = line + len;
	int c = 0, rc, ncols = C->ncols;
	const col *cols = C->cols;     /* kept in a register: read per field */
	unsigned fset = 0, fval = 0;   /* Active/Not Active, per field bit */

	ids[0] = ids[1] = ids[2] = ids[3] = NULL;
	idn[0] = idn[1] = idn[2] = idn[3] = 0;
	tl_sample_clear(smp);
	for (;; c++) {
		const char *q;
		if (c >= ncols)
			return tm_fail(S->err, TM_EINPUT, "%s:%ld: expected %d "
			               "fields, found more", S->file, S->line,
			               ncols);
		switch (cols[c].kind) {
		case C_NUM: {
			const char *v = p;
			uint64_t m = 0;
			int nd, frac = 0;
			while (*v == ' ')
				v++;
			q = v;
			while ((unsigned)(*v - '0') < 10)
				m = m * 10 + (uint64_t)(*v++ - '0');
			nd = (int)(v - q);
			if (*v == '.') {
				const char *f0 = ++v;
				while ((unsigned)(*v - '0') < 10)
					m = m * 10 + (uint64_t)(*v++ - '0');
				frac = (int)(v - f0);
				nd += frac;
			}
			if (nd > 0 && nd <= 15 && (v == e || *v == ',')) {
				smp->v[cols[c].field] = frac ? (double)m /
				        tl_pow10[frac] : (double)m;
				q = v;
				goto next;
			}
			break;
		}
		case C_FLAG: {
			const char *v = p;
			unsigned bit = 1u << cols[c].field;
			while (*v == ' ')
				v++;
			if (e - v >= 10 && load8(v) == load8("Not Active") &&
			    v[8] == 'v' && v[9] == 'e' &&
			    (v + 10 == e || v[10] == ',')) {
				q = v + 10;
				fset |= bit;
			} else if (e - v >= 6 && v[0] == 'A' &&
			           !memcmp(v, "Active", 6) &&
			           (v + 6 == e || v[6] == ',')) {
				q = v + 6;
				fset |= bit;
				fval |= bit;
			} else {
				break;
			}
			goto next;
		}
		case C_MASK: {
			const char *v = p;
			while (*v == ' ')
				v++;
			/* nvidia-smi prints 0x and 16 digits; the reasons thermap
			 * reads are in the last three */
			if (e - v < 18 || v[0] != '0' || v[1] != 'x' ||
			    (v + 18 < e && v[18] != ',') ||
			    !hex16_ok(v + 2))
				break;
			tl_reasons(smp, (unsigned long long)(
			           hexval[(unsigned char)v[15]] << 8 |
			           hexval[(unsigned char)v[16]] << 4 |
			           hexval[(unsigned char)v[17]]));
			q = v + 18;
			goto next;
		}
		case C_INDEX:
		case C_PCI:
		case C_UUID:
		case C_NAME: {
			/* identities are compared as bytes later: just find them */
			const char *v = p, *ve;
			int k = cols[c].kind == C_INDEX ? 0
			        : cols[c].kind == C_PCI ? 1
			        : cols[c].kind == C_UUID ? 2 : 3;
			while (*v == ' ')
				v++;
			q = ve = to_comma(v, e);
			while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			ids[k] = v;
			idn[k] = (size_t)(ve - v);
			goto next;
		}
		case C_TIME: {
			const char *v = p;
			while (*v == ' ')
				v++;
			if (e - v >= 23 && (v + 23 == e || v[23] == ',') &&
			    smi_time(C, v, v + 23, &smp->t)) {
				q = v + 23;
				goto next;
			}
			break;
		}
		case C_SKIP: {
			/* the run of skipped columns this one starts */
			int run = cols[c].field;
			q = to_comma(p, e);
			while (--run > 0 && q != e) {
				q = to_comma(q + 1, e);
				c++;
			}
			goto next;
		}
		default:
			break;
		}
		q = to_comma(p, e);
		if ((rc = one_value(C, c, p, q, smp, ids, idn)))
			return rc;
next:
		if (q == e)
			break;
		p = q + 1;
	}
	if (c + 1 < C->ncols)
		return tm_fail(S->err, TM_EINPUT, "%s:%ld: expected %d fields, "
		               "found %d", S->file, S->line, C->ncols, c + 1);
	for (int f = 0; fset; f++, fset >>= 1, fval >>= 1) {
		double *v = &smp->v[f];
		if (fset & 1)
			*v = isnan(*v) ? (double)(fval & 1)
			     : (double)(*v != 0 || (fval & 1));
	}
	return 0;
}

static int push_row(csv *C, rowrec *r)
{
	int id;
	C->src->rows++;
	id = row_gpu(C, r->ids, r->idn);
	if (id < 0)
		return TM_EINPUT;
	return tl_push(C->src, id, &r->s);
}

static int csv_row(csv *C, const char *line, size_t len)
{
	rowrec r;
	int rc = parse_row(C, line, len, r.ids, r.idn, &r.s);
	return rc ? rc : push_row(C, &r);
}

static int csv_begin(csv *C, tl_src *src)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, hexval_init);
	memset(C, 0, sizeof *C);
	C->src = src;
	C->host = src->host;
	if (!C->host)
		return tm_fail(src->err, TM_EINPUT, "%s: no host: name it "
		               "with --host NAME or a file name like "
		               "HOST.csv", src->file);
	return 0;
}

static void csv_end(csv *C)
{
	free(C->cols);
	C->cols = NULL;
}

/* Feeds one line; pending holds a short row that is only acceptable as
 * the cut last line of the file. */
static int csv_line(csv *C, const char *line, size_t len, bool *hdr_seen)
{
	tl_src *S = C->src;
	const char *p = line;
	while (p < line + len && (*p == ' ' || *p == '\t'))
		p++;
	if (p == line + len)
		return 0;  /* blank */
	if (!*hdr_seen || (isalpha((unsigned char)*p) &&
	                   looks_like_header(line, len))) {
		if (!*hdr_seen ? isalpha((unsigned char)*p)
		               : looks_like_header(line, len)) {
			if (set_header(C, line, len) == 0)
				return tm_fail(S->err, TM_EINPUT, "%s:%ld: the "
				       "header names no column thermap reads "
				       "(temperature.gpu, power.draw, clocks.sm, "
				       "utilization.gpu); found \"%.*s%s\"",
				       S->file, S->line, len > 60 ? 60 : (int)len,
				       line, len > 60 ? "..." : "");
			*hdr_seen = true;
			return 0;
		}
		if (!S->fields)
			return tm_fail(S->err, TM_EINPUT, "%s:%ld: no header "
			               "line; name the columns with --fields "
			               "(the --query-gpu list)", S->file, S->line);
		if (set_header(C, S->fields, strlen(S->fields)) == 0)
			return tm_fail(S->err, TM_EINPUT, "--fields: no column "
			               "thermap reads (temperature.gpu, "
			               "power.draw, clocks.sm, ...)");
		*hdr_seen = true;
	}
	return csv_row(C, line, len);
}

/* Counts the fields of a line, to tell a cut last row from a bad one. */
static int nfields(const char *p, size_t n)
{
	int k = 1;
	for (size_t i = 0; i < n; i++)
		k += p[i] == ',';
	return k;
}


/* ---- parallel parsing of large CSV files ------------------------------------
 * A large regular file is cut into CHUNK-byte pieces at line starts; worker
 * threads parse pieces into rows, and the rows are pushed piece by piece in
 * file order, so the result is the same as reading line by line. Workers
 * take only plain data rows: at the first line that is anything else (a
 * header, a bad value, a cut last line, an over-long line) the piece stops
 * there and the sequential reader takes over at that line, so every
 * message and every rule stays in one place.
 *
 * Pushing is split by GPU: each GPU's samples must go in order, but
 * different GPUs' need not, so once a piece names only GPUs already known,
 * groups of its GPUs are pushed by this thread and the workers together,
 * and of their errors the earliest line is the one reported. Otherwise
 * (a new GPU, a window relative to the file's first time) this thread
 * pushes the piece row by row. */

#define CHUNK (1u << 20)
#define PAR_MIN (4u << 20)   /* files smaller than this stay sequential */
#define PAR_MAX_THREADS 16

/* A row of a piece: its GPU as a number into the piece's table of GPU
 * keys, so that the thread pushing rows reads neither the key bytes nor
 * the key of every row, only the sample. */
typedef struct prow {
	tl_sample s;
	int key;              /* into chunk.key */
	int line;             /* line within the piece */
} prow;

typedef struct pkey {     /* a GPU key as first seen in the piece */
	const char *ids[4];   /* with the name of that first row */
	size_t idn[4];
} pkey;

typedef struct chunk {
	char *buf;            /* the piece, read with pread */
	const char *data;
	prow *rec;
	long nrec, caprec;
	pkey key[NCACHE];
	int nkey, hit;
	int *klist[NCACHE];   /* per key: its rows, in file order */
	int klen[NCACHE], kcap[NCACHE];
	long nlines;          /* lines taken before a stop */
	long long stop_off;   /* -1, or where the sequential reader goes on */
	long k;               /* piece number, -1 when free */
	int state;            /* 0 free, 1 being parsed, 2 parsed */
} chunk;

/* One share of a piece's rows to push: the rows of some of its GPUs,
 * through a copy of the source of its own. */
typedef struct pgroup {
	int keys[NCACHE];
	int nkeys;
	tl_src src;
	tm_error scratch;     /* src.err */
	tm_error err;         /* the group's earliest error, at line */
	long line;
	int rc;
} pgroup;

typedef struct par {
	/* copies taken before any worker starts: the reader and its source
	 * go on changing as this thread pushes rows, workers read these */
	csv C;
	tl_src src;
	int fd;
	long long data_off, size;
	long npieces, next;
	chunk *slot;
	int nslots;
	bool quit;
	/* the piece being pushed by GPU groups, when pch is set */
	chunk *pch;
	const int *gid;
	long line_base;
	pgroup grp[PAR_MAX_THREADS];
	int ptask, pntask, pdone;
	pthread_mutex_t mu;
	pthread_cond_t cv;
} par;

static ssize_t pread_all(int fd, char *buf, size_t n, long long off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + (long long)got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

/* The row's GPU key in the piece's table, added when new; -1 when the
 * table is full (the sequential reader then takes the row). */
static int piece_key(chunk *ch, const char *const ids[4], const size_t idn[4])
{
	pkey *k;
	for (int i = 0, j = ch->hit; i < ch->nkey; i++, j++) {
		if (j >= ch->nkey)
			j = 0;
		k = &ch->key[j];
		if (k->idn[0] == idn[0] && k->idn[1] == idn[1] &&
		    k->idn[2] == idn[2] && keq(k->ids[0], ids[0], idn[0]) &&
		    keq(k->ids[1], ids[1], idn[1]) &&
		    keq(k->ids[2], ids[2], idn[2])) {
			ch->hit = j + 1;
			return j;
		}
	}
	if (ch->nkey == NCACHE)
		return -1;
	k = &ch->key[ch->nkey];
	ch->klen[ch->nkey] = 0;
	for (int i = 0; i < 4; i++) {
		k->ids[i] = ids[i];
		k->idn[i] = idn[i];
	}
	ch->hit = ch->nkey + 1;
	return ch->nkey++;
}

static void parse_piece(par *P, chunk *ch)
{
	long long cs = P->data_off + ch->k * (long long)CHUNK;
	long long ce = cs + CHUNK < P->size ? cs + CHUNK : P->size;
	long long rs = ch->k ? cs - 1 : cs;
	size_t want = (size_t)(ce - rs) + TL_MAX_LINE + 2, pos = 0, len;
	ssize_t got;
	csv W = P->C;   /* own date cache; columns shared, read only */
	const char *nul;
	tl_src S = P->src;
	tm_error err = { 0, "" };

	W.src = &S;
	S.err = &err;
	ch->nrec = ch->nlines = 0;
	ch->nkey = ch->hit = 0;
	ch->stop_off = -1;
	if (rs + (long long)want > P->size)
		want = (size_t)(P->size - rs);
	/* pread into a buffer the slot keeps: the kernel's copy is cheaper
	 * than faulting in a fresh mapping page by page */
	ch->data = ch->buf;
	got = pread_all(P->fd, ch->buf, want, rs);
	if (got < 0 || (size_t)got != want) {
		ch->stop_off = cs;   /* let the sequential reader report it */
		return;
	}
	len = (size_t)got;
	if (ch->k) {   /* skip the line that began in the previous piece */
		char *nl = memchr(ch->data, '\n', len);
		if (!nl)
			return;
		pos = (size_t)(nl - ch->data) + 1;
	}
	/* a NUL anywhere stops the piece at its line: one scan per piece */
	nul = memchr(ch->data + pos, '\0', len - pos);
	while (rs + (long long)pos < ce) {
		const char *l = ch->data + pos, *nl = memchr(l, '\n', len - pos);
		size_t n;
		const char *p;
		if (!nl || (size_t)(nl - l) > TL_MAX_LINE) {
			ch->stop_off = rs + (long long)pos;   /* cut or too long */
			return;
		}
		n = (size_t)(nl - l);
		if (n && l[n - 1] == '\r')
			n--;
		for (p = l; p < l + n && (*p == ' ' || *p == '\t'); p++)
			;
		if (p < l + n) {
			prow *r;
			const char *ids[4];
			size_t idn[4];
			int j;
			if (!isdigit((unsigned char)*p) || (nul && nul < l + n)) {
				ch->stop_off = rs + (long long)pos;
				return;
			}
			if (ch->nrec == ch->caprec) {
				ch->caprec = ch->caprec ? 2 * ch->caprec : 4096;
				ch->rec = xrealloc(ch->rec, (size_t)ch->caprec *
				                   sizeof *ch->rec);
			}
			r = &ch->rec[ch->nrec];
			if (parse_row(&W, l, n, ids, idn, &r->s) != 0 ||
			    (j = piece_key(ch, ids, idn)) < 0) {
				ch->stop_off = rs + (long long)pos;
				return;
			}
			r->key = j;
			r->line = (int)ch->nlines;
			if (ch->klen[j] == ch->kcap[j]) {
				ch->kcap[j] = ch->kcap[j] ? 2 * ch->kcap[j] : 1024;
				ch->klist[j] = xrealloc(ch->klist[j], (size_t)
				        ch->kcap[j] * sizeof *ch->klist[j]);
			}
			ch->klist[j][ch->klen[j]++] = (int)ch->nrec;
			ch->nrec++;
		}
		ch->nlines++;
		pos = (size_t)(nl - ch->data) + 1;
	}
}

/* Pushes the rows of group t's GPUs, each GPU's in file order up to its
 * first error; keeps the error with the earliest line. */
static void push_group(par *P, int t)
{
	pgroup *G = &P->grp[t];
	const chunk *ch = P->pch;
	for (int a = 0; a < G->nkeys; a++) {
		int j = G->keys[a], gpu = P->gid[j], rc;
		const int *lst = ch->klist[j];
		for (int i = 0; i < ch->klen[j]; i++) {
			const prow *r = &ch->rec[lst[i]];
			G->src.line = P->line_base + r->line + 1;
			if ((rc = tl_push(&G->src, gpu, &r->s))) {
				if (!G->rc || G->src.line < G->line) {
					G->rc = rc;
					G->line = G->src.line;
					G->err = G->scratch;
				}
				/* tm_fail keeps a first error: clear it */
				G->scratch.code = 0;
				G->scratch.msg[0] = '\0';
				break;
			}
		}
	}
}

/* With P->mu held: claims a group of the piece being pushed, else (when
 * parse is set) the next piece, if its slot is free, and does it (the lock
 * is let go meanwhile). Returns false when there was nothing to take. */
static bool take(par *P, bool parse)
{
	long k = P->next;
	chunk *ch;
	if (P->pch && P->ptask < P->pntask) {
		int t = P->ptask++;
		pthread_mutex_unlock(&P->mu);
		push_group(P, t);
		pthread_mutex_lock(&P->mu);
		if (++P->pdone == P->pntask)
			pthread_cond_broadcast(&P->cv);
		return true;
	}
	if (!parse || P->quit || k >= P->npieces)
		return false;
	ch = &P->slot[k % P->nslots];
	if (ch->state != 0)
		return false;
	P->next++;
	ch->state = 1;
	ch->k = k;
	pthread_mutex_unlock(&P->mu);
	parse_piece(P, ch);
	pthread_mutex_lock(&P->mu);
	ch->state = 2;
	pthread_cond_broadcast(&P->cv);
	return true;
}

static void *worker(void *arg)
{
	par *P = arg;
	pthread_mutex_lock(&P->mu);
	while (!P->quit)
		if (!take(P, true))
			pthread_cond_wait(&P->cv, &P->mu);
	pthread_mutex_unlock(&P->mu);
	return NULL;
}

/* Threads for parsing: THERMAP_THREADS when set (1 = no threads), else
 * the processors online, at most PAR_MAX_THREADS (each thread adds about
 * 2 MiB of buffers). */
static int ncpus(void)
{
	const char *env = tm_knob(TM_KNOB_THREADS);
	long n = env ? strtol(env, NULL, 10)
	                     : sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > PAR_MAX_THREADS ? PAR_MAX_THREADS : (int)n;
}

/* Pushes the parsed piece ch by groups of GPUs, this thread and the
 * workers together, when its GPU keys are all known or new and name
 * distinct GPUs. Returns false, having pushed nothing, when they are not:
 * then the caller pushes row by row, so that GPUs are numbered and
 * errors come in file order. */
static bool push_split(par *P, csv *C, chunk *ch, int *gid, long line_base,
                       int *rc)
{
	tl_src *S = C->src;
	int ng = P->nslots - 2, best = -1;
	tm_error keep = *S->err;
	long bestline = 0;

	if (ng > ch->nkey)
		ng = ch->nkey;
	if (ng < 2)
		return false;
	for (int j = 0; j < ch->nkey; j++) {
		const pkey *pk = &ch->key[j];
		/* a key seen before, or one that adds its GPU without a
		 * word: anything else might fail or warn, and must come at
		 * its line */
		if (!C->have_id || (gid[j] = row_gpu_known(C, pk->ids, pk->idn)) < 0)
			return false;
		for (int i = 0; i < j; i++)
			if (gid[i] == gid[j])
				return false;
	}
	for (int t = 0; t < ng; t++) {
		P->grp[t].nkeys = 0;
		P->grp[t].rc = 0;
		tl_src_part(&P->grp[t].src, S, &P->grp[t].scratch);
	}
	for (int j = 0; j < ch->nkey; j++) {   /* GPUs dealt round */
		pgroup *G = &P->grp[j % ng];
		G->keys[G->nkeys++] = j;
	}
	pthread_mutex_lock(&P->mu);
	P->pch = ch;
	P->gid = gid;
	P->line_base = line_base;
	P->ptask = P->pdone = 0;
	P->pntask = ng;
	pthread_cond_broadcast(&P->cv);
	while (P->pdone < P->pntask)
		if (!take(P, false))
			pthread_cond_wait(&P->cv, &P->mu);
	P->pch = NULL;
	pthread_mutex_unlock(&P->mu);
	S->rows += ch->nrec;
	for (int t = 0; t < ng; t++) {
		pgroup *G = &P->grp[t];
		tl_src_merge(S, &G->src);
		if (G->rc && (best < 0 || G->line < bestline)) {
			best = t;
			bestline = G->line;
		}
	}
	*S->err = keep;
	if (best >= 0) {
		*S->err = P->grp[best].err;
		S->line = bestline;
		*rc = P->grp[best].rc;
	}
	return true;
}

/* Reads the rest of the file from L's position in parallel. Returns 0
 * with L positioned where sequential reading must go on (the end, or a
 * line the workers did not take), or an error. */
static int csv_parallel(csv *C, tl_lines *L)
{
	struct stat st;
	par P;
	pthread_t th[PAR_MAX_THREADS];
	int nth = ncpus(), started = 0, rc = 0;
	long long resume = -1;
	long line_base = L->lineno;
	int gid[NCACHE];

	if (nth < 2 || fstat(L->fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size - tl_lines_tell(L) < (long long)PAR_MIN)
		return 0;
	memset(&P, 0, sizeof P);
	P.C = *C;
	P.src = *C->src;
	P.fd = L->fd;
	P.data_off = tl_lines_tell(L);
	P.size = st.st_size;
	P.npieces = (long)((P.size - P.data_off + CHUNK - 1) / CHUNK);
	P.nslots = nth + 2;
	P.slot = xcalloc((size_t)P.nslots, sizeof *P.slot);
	for (int i = 0; i < P.nslots; i++) {
		/* a piece, the byte before it, its last line: see want */
		P.slot[i].buf = xcalloc(CHUNK + TL_MAX_LINE + 4 + TL_SLACK, 1);
		P.slot[i].k = -1;
	}
	pthread_mutex_init(&P.mu, NULL);
	pthread_cond_init(&P.cv, NULL);
	/* this thread is one of the nth: it parses too while it waits */
	for (int i = 0; i < nth - 1; i++)
		if (pthread_create(&th[i], NULL, worker, &P) == 0)
			started++;
	for (long k = 0; k < P.npieces && resume < 0 && !rc; k++) {
		chunk *ch = &P.slot[k % P.nslots];
		pthread_mutex_lock(&P.mu);
		while (ch->state != 2 || ch->k != k)
			if (!take(&P, true))
				pthread_cond_wait(&P.cv, &P.mu);
		pthread_mutex_unlock(&P.mu);
		if (nth > 1 && tl_push_parallel_ok(C->src) &&
		    push_split(&P, C, ch, gid, line_base, &rc))
			goto pushed;
		/* GPU keys are resolved as the rows reach them, so that
		 * GPUs are numbered, and errors come, in file order */
		for (int j = 0; j < ch->nkey; j++)
			gid[j] = -1;
		for (long i = 0; i < ch->nrec && !rc; i++) {
			prow *r = &ch->rec[i];
			C->src->line = line_base + r->line + 1;
			C->src->rows++;
			if (gid[r->key] < 0) {
				const pkey *pk = &ch->key[r->key];
				gid[r->key] = row_gpu(C, pk->ids, pk->idn);
				if (gid[r->key] < 0) {
					rc = TM_EINPUT;
					break;
				}
			}
			rc = tl_push(C->src, gid[r->key], &r->s);
		}
pushed:
		line_base += ch->nlines;
		if (ch->stop_off >= 0)
			resume = ch->stop_off;
		pthread_mutex_lock(&P.mu);
		ch->state = 0;
		pthread_cond_broadcast(&P.cv);
		pthread_mutex_unlock(&P.mu);
	}
	pthread_mutex_lock(&P.mu);
	P.quit = true;
	pthread_cond_broadcast(&P.cv);
	pthread_mutex_unlock(&P.mu);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < P.nslots; i++) {
		free(P.slot[i].buf);
		free(P.slot[i].rec);
		for (int j = 0; j < NCACHE; j++)
			free(P.slot[i].klist[j]);
	}
	free(P.slot);
	pthread_mutex_destroy(&P.mu);
	pthread_cond_destroy(&P.cv);
	if (rc)
		return rc;
	return tl_lines_seek(L, resume >= 0 ? resume : P.size, line_base);
}

int tl_read_csv(tl_src *src, tl_lines *L)
{
	csv C;
	bool hdr = false;
	const char *line;
	size_t len;
	int rc, tries = 0;

	src->format = "nvidia-smi csv";
	if ((rc = csv_begin(&C, src)))
		return rc;
	while ((rc = tl_lines_next(L, &line, &len)) == 1) {
		src->line = L->lineno;
		rc = csv_line(&C, line, len, &hdr);
		if (rc == 0) {
			if (hdr && tries < 64) {
				tries++;
				if ((rc = csv_parallel(&C, L)))
					break;
			}
			continue;
		}
		/* A row with too few fields that ends the file is a log cut
		 * mid-row: count it and stop. */
		if (hdr && nfields(line, len) < C.ncols) {
			const char *l2;
			size_t n2;
			if (tl_lines_next(L, &l2, &n2) == 0) {
				src->skipped[TL_SKIP_CUT]++;
				src->err->code = 0;   /* not an error after all */
				src->err->msg[0] = '\0';
				rc = 0;
				break;
			}
			rc = TM_EINPUT;
		}
		break;
	}
	csv_end(&C);
	if (rc == 0 && !hdr)
		return tm_fail(src->err, TM_EINPUT, "%s: empty: no header and "
		               "no rows", src->file);
	return rc;
}

/* ---- nvidia_gpu_exporter captures ------------------------------------------
 * Sections of raw nvidia-smi output; the `--query-gpu ... --format=csv`
 * sections are CSV with a header and one row per GPU. */

int tl_read_capture(tl_src *src, tl_lines *L)
{
	csv C;
	const char *line;
	size_t len;
	int rc, state = 0;  /* 0 outside, 1 after the command, 2 in the CSV */
	bool hdr = false;
	int sections = 0;

	src->format = "nvidia_gpu_exporter capture";
	if ((rc = csv_begin(&C, src)))
		return rc;
	while ((rc = tl_lines_next(L, &line, &len)) == 1) {
		src->line = L->lineno;
		if (len >= 4 && memcmp(line, "####", 4) == 0) {
			if (state == 1)
				state = 2;
			else if (state == 2)
				state = 0;
			continue;
		}
		if (len > 4 && memcmp(line, "# $ ", 4) == 0) {
			state = 0;
			if (tl_contains(line, len, "--query-gpu=") &&
			    tl_contains(line, len, "--format=csv")) {
				state = 1;
				hdr = false;
				sections++;
			}
			continue;
		}
		if (state == 2 && (rc = csv_line(&C, line, len, &hdr)))
			break;
	}
	csv_end(&C);
	if (rc == 0 && sections == 0)
		return tm_fail(src->err, TM_EINPUT, "%s: capture without a "
		               "--query-gpu section", src->file);
	return rc;
}
