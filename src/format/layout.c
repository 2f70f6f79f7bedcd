/* layout.c — Megatron-Core pipeline layout strings and the uneven split.
 *
 * Does: a one-pass parser (no recursion, no backtracking: groups do not
 * nest in Megatron, and a group is repeated by copying the stages its first
 * copy built, so the work is linear in input plus expanded output, which
 * TM_LAYOUT_MAX bounds); a writer that emits the canonical short form; the
 * checks of Megatron's validate_layer_layout and TransformerConfig for the
 * uneven-split flags. Does not: print, exit, or keep state between calls.
 * The grammar, the quirks of Megatron's parser refused on purpose, and the
 * flag rule with its source: docs/layout.md.
 */
#include "format/format.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Layer kinds in the only order Megatron accepts inside a stage. */
enum { K_EMB, K_DEC, K_MTP, K_LOSS, K_N };
static const char kind_sym[K_N] = { 'E', 't', 'm', 'L' };

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (err && errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static int *count_of(tm_layout_stage *s, int k)
{
	switch (k) {
	case K_EMB:
		return &s->emb;
	case K_DEC:
		return &s->dec;
	case K_MTP:
		return &s->mtp;
	default:
		return &s->loss;
	}
}

static int count_get(const tm_layout_stage *s, int k)
{
	switch (k) {
	case K_EMB:
		return s->emb;
	case K_DEC:
		return s->dec;
	case K_MTP:
		return s->mtp;
	default:
		return s->loss;
	}
}

/* highest kind present, -1 for an empty stage */
static int max_kind(const tm_layout_stage *s)
{
	for (int k = K_N - 1; k >= 0; k--)
		if (count_get(s, k) > 0)
			return k;
	return -1;
}

/* lowest kind present, K_N for an empty stage */
static int min_kind(const tm_layout_stage *s)
{
	for (int k = 0; k < K_N; k++)
		if (count_get(s, k) > 0)
			return k;
	return K_N;
}

static int kind_of(int c)
{
	switch (c) {
	case 'E':
		return K_EMB;
	case 't':
		return K_DEC;
	case 'm':
		return K_MTP;
	case 'L':
		return K_LOSS;
	default:
		return -1;
	}
}

/* ---- parser ---- */

typedef struct parser {
	const char *s;     /* input, borrowed */
	size_t i;          /* index of the next byte to read */
	tm_layout *out;    /* stages so far; the last one is still open */
	int cap;           /* entries allocated in out->st */
	long long total;   /* layers and '|' expanded so far (cap: TM_LAYOUT_MAX) */
	char *err;         /* caller's message buffer */
	size_t errlen;     /* its size in bytes */
} parser;

/* What the first copy of an open '(...)' built, so the rest can be copied. */
typedef struct group {
	size_t col;           /* column of '(' */
	int start;            /* index of the stage open at '(' */
	long long size;       /* layers and '|' in one copy */
	int seps;             /* '|' in one copy */
	tm_layout_stage p0;   /* layers before the group's first '|' */
	size_t p0_col;        /* column of p0's first layer, for order errors */
} group;

/* Commas are deleted by Megatron before anything else, even inside a
 * count ("t*1,2" is t*12), so they are skipped wherever they stand. */
static size_t skip_commas(const char *s, size_t i)
{
	while (s[i] == ',')
		i++;
	return i;
}

static int push_stage(parser *p)
{
	tm_layout *l = p->out;
	if (l->nstages == p->cap) {
		int ncap = p->cap ? 2 * p->cap : 16;
		tm_layout_stage *st = realloc(l->st, (size_t)ncap * sizeof *st);
		if (!st)
			return fail(p->err, p->errlen, "out of memory");
		l->st = st;
		p->cap = ncap;
	}
	memset(&l->st[l->nstages++], 0, sizeof *l->st);
	return 0;
}

static tm_layout_stage *open_stage(parser *p)
{
	return &p->out->st[p->out->nstages - 1];
}

/* Reads the count after a '*' (p->i is just past it) into *n; *col gets
 * the column of its first digit. Digits past the cap are read and
 * dropped, so no count overflows. */
static int read_count(parser *p, long long *n, size_t *col)
{
	size_t j = skip_commas(p->s, p->i);
	long long v = 0;

	if (p->s[j] < '0' || p->s[j] > '9')
		return fail(p->err, p->errlen, "column %zu: expected a count after '*'", j + 1);
	*col = j + 1;
	while ((p->s[j] >= '0' && p->s[j] <= '9') || p->s[j] == ',') {
		if (p->s[j] != ',') {
			v = v * 10 + (p->s[j] - '0');
			if (v > TM_LAYOUT_MAX)
				v = TM_LAYOUT_MAX + 1;
		}
		j++;
	}
	p->i = j;
	if (v == 0)
		return fail(p->err, p->errlen, "column %zu: a repeat count must be at least 1", *col);
	*n = v;
	return 0;
}

/* An optional "*N" after a symbol, '|' or ')'; *n stays 1 without one. */
static int read_repeat(parser *p, long long *n, size_t *col)
{
	size_t j = skip_commas(p->s, p->i);
	if (p->s[j] != '*')
		return 0;
	p->i = j + 1;
	return read_count(p, n, col);
}

static int grow_total(parser *p, long long add, size_t col)
{
	if (add > TM_LAYOUT_MAX - p->total)
		return fail(p->err, p->errlen, "column %zu: layout expands past %d layers and separators",
			    col, TM_LAYOUT_MAX);
	p->total += add;
	return 0;
}

static int order_error(parser *p, size_t col, int k, int before)
{
	return fail(p->err, p->errlen,
		    "column %zu: '%c' after '%c' in one stage; Megatron wants E, t, m, L in that order",
		    col, kind_sym[k], kind_sym[before]);
}

static int parse_layer(parser *p, int k, size_t col, group *g, bool in_group)
{
	long long n = 1;
	size_t ncol = col;
	tm_layout_stage *st;

	if (read_repeat(p, &n, &ncol) < 0 || grow_total(p, n, ncol) < 0)
		return -1;
	st = open_stage(p);
	if (max_kind(st) > k)
		return order_error(p, col, k, max_kind(st));
	*count_of(st, k) += (int)n;
	if (in_group) {
		g->size += n;
		if (g->seps == 0) {
			if (g->p0_col == 0)
				g->p0_col = col;
			*count_of(&g->p0, k) += (int)n;
		}
	}
	return 0;
}

static int parse_separator(parser *p, size_t col, group *g, bool in_group)
{
	long long n = 1;
	size_t ncol = col;

	if (read_repeat(p, &n, &ncol) < 0 || grow_total(p, n, ncol) < 0)
		return -1;
	for (long long r = 0; r < n; r++)
		if (push_stage(p) < 0)
			return -1;
	if (in_group) {
		g->size += n;
		g->seps += (int)n;
	}
	return 0;
}

/* Appends n - 1 more copies of the group whose first copy is in place. */
static int repeat_group(parser *p, const group *g, long long n)
{
	const tm_layout_stage *p0 = &g->p0;
	tm_layout_stage *st;

	if (n < 2)
		return 0;
	if (g->seps == 0) {
		/* the group lies inside one stage: copies follow each other there */
		if (max_kind(p0) > min_kind(p0))
			return order_error(p, g->p0_col, min_kind(p0), max_kind(p0));
		st = open_stage(p);
		for (int k = 0; k < K_N; k++)
			*count_of(st, k) += (int)((n - 1) * count_get(p0, k));
		return 0;
	}
	/* one copy is p0 | p1 | ... | ps: p0 joins the open stage (ps of the
	 * copy before), p1..ps-1 are the whole stages the first copy built */
	tm_layout_stage ps = *open_stage(p);
	for (long long r = 1; r < n; r++) {
		st = open_stage(p);
		if (min_kind(p0) < K_N && max_kind(st) > min_kind(p0))
			return order_error(p, g->p0_col, min_kind(p0), max_kind(st));
		for (int k = 0; k < K_N; k++)
			*count_of(st, k) += count_get(p0, k);
		for (int j = 1; j < g->seps; j++) {
			if (push_stage(p) < 0)
				return -1;
			/* by index: push_stage may have moved the array */
			p->out->st[p->out->nstages - 1] = p->out->st[g->start + j];
		}
		if (push_stage(p) < 0)
			return -1;
		*open_stage(p) = ps;
	}
	return 0;
}

static int unexpected(parser *p, int c, size_t col, bool in_group)
{
	const char *want = in_group ? "E, t, m, L, '|' or ')'" : "E, t, m, L, '|' or '('";
	if (c == '*')
		return fail(p->err, p->errlen, "column %zu: '*' must follow E, t, m, L, '|' or ')'", col);
	if (c >= 0x20 && c < 0x7f)
		return fail(p->err, p->errlen, "column %zu: unexpected '%c'; expected %s", col, c, want);
	return fail(p->err, p->errlen, "column %zu: unexpected byte 0x%02x; expected %s", col, c, want);
}

int tm_layout_parse(const char *s, tm_layout *out, char *err, size_t errlen)
{
	parser p = { .s = s ? s : "", .out = out, .err = err, .errlen = errlen };
	group g = { 0 };
	bool in_group = false, any = false;

	out->nstages = 0;
	out->st = NULL;
	if (err && errlen > 0)
		err[0] = '\0';
	if (push_stage(&p) < 0)
		goto fail;
	for (;;) {
		p.i = skip_commas(p.s, p.i);
		int c = (unsigned char)p.s[p.i];
		size_t col = p.i + 1;
		long long n;
		size_t ncol;

		if (c == '\0')
			break;
		any = true;
		p.i++;
		if (kind_of(c) >= 0) {
			if (parse_layer(&p, kind_of(c), col, &g, in_group) < 0)
				goto fail;
		} else if (c == '|') {
			if (parse_separator(&p, col, &g, in_group) < 0)
				goto fail;
		} else if (c == '(') {
			if (in_group) {
				fail(err, errlen, "column %zu: groups cannot nest; "
				     "Megatron expands one level of (...)*N", col);
				goto fail;
			}
			memset(&g, 0, sizeof g);
			g.col = col;
			g.start = out->nstages - 1;
			in_group = true;
		} else if (c == ')') {
			if (!in_group) {
				fail(err, errlen, "column %zu: ')' without a matching '('", col);
				goto fail;
			}
			if (g.size == 0) {
				fail(err, errlen, "column %zu: empty group", g.col);
				goto fail;
			}
			size_t j = skip_commas(p.s, p.i);
			if (p.s[j] != '*') {
				fail(err, errlen, "column %zu: expected '*' and a count after ')'", j + 1);
				goto fail;
			}
			p.i = j + 1;
			if (read_count(&p, &n, &ncol) < 0 ||
			    grow_total(&p, (n - 1) * g.size, ncol) < 0 ||
			    repeat_group(&p, &g, n) < 0)
				goto fail;
			in_group = false;
		} else {
			unexpected(&p, c, col, in_group);
			goto fail;
		}
	}
	if (in_group) {
		fail(err, errlen, "column %zu: expected ')' to close the '(' at column %zu",
		     p.i + 1, g.col);
		goto fail;
	}
	if (!any) {
		fail(err, errlen, "column 1: empty layout");
		goto fail;
	}
	return 0;
fail:
	tm_layout_clear(out);
	return -1;
}

void tm_layout_clear(tm_layout *l)
{
	if (!l)
		return;
	free(l->st);
	l->st = NULL;
	l->nstages = 0;
}

/* ---- writer ---- */

typedef struct buf {
	char *p;      /* text so far, NUL-terminated while not failed */
	size_t n;     /* bytes used, without the NUL */
	size_t cap;   /* bytes allocated */
	bool failed;  /* an allocation failed; p is freed */
} buf;

static void put(buf *b, const char *s, size_t n)
{
	if (b->failed)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t ncap = b->cap ? b->cap : 64;
		while (b->n + n + 1 > ncap)
			ncap *= 2;
		char *np = realloc(b->p, ncap);
		if (!np) {
			free(b->p);
			b->p = NULL;
			b->failed = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

static void put_count(buf *b, long long v)
{
	char num[24];
	int len = snprintf(num, sizeof num, "%lld", v);
	put(b, num, (size_t)len);
}

static size_t num_len(long long v)
{
	size_t len = 1;
	while (v >= 10) {
		v /= 10;
		len++;
	}
	return len;
}

/* A layer run is spelled out up to two ("tt"), x*N from three on: "t*3"
 * is no longer than "ttt" and is how Megatron's own examples write it. */
static size_t run_len(int c)
{
	return c <= 0 ? 0 : c <= 2 ? (size_t)c : 2 + num_len(c);
}

static size_t stage_len(const tm_layout_stage *s)
{
	size_t len = 0;
	for (int k = 0; k < K_N; k++)
		len += run_len(count_get(s, k));
	return len;
}

static void put_stage(buf *b, const tm_layout_stage *s)
{
	for (int k = 0; k < K_N; k++) {
		int c = count_get(s, k);
		if (c <= 0)
			continue;
		if (c <= 2) {
			put(b, &kind_sym[k], 1);
			if (c == 2)
				put(b, &kind_sym[k], 1);
		} else {
			put(b, &kind_sym[k], 1);
			put(b, "*", 1);
			put_count(b, c);
		}
	}
}

static bool same_stage(const tm_layout_stage *a, const tm_layout_stage *b)
{
	return a->emb == b->emb && a->dec == b->dec && a->mtp == b->mtp && a->loss == b->loss;
}

/* Whether parse could have produced l (so the string written parses back). */
static bool formattable(const tm_layout *l)
{
	long long total;
	if (!l || l->nstages < 1 || !l->st)
		return false;
	if (l->nstages == 1 && max_kind(&l->st[0]) < 0)
		return false;
	total = l->nstages - 1;
	for (int i = 0; i < l->nstages; i++) {
		for (int k = 0; k < K_N; k++) {
			int c = count_get(&l->st[i], k);
			if (c < 0)
				return false;
			total += c;
		}
		if (total > TM_LAYOUT_MAX)
			return false;
	}
	return true;
}

char *tm_layout_format(const tm_layout *l)
{
	buf b = { 0 };
	int n;

	if (!formattable(l))
		return NULL;
	n = l->nstages;
	put(&b, "", 0);
	for (int i = 0; i < n;) {
		const tm_layout_stage *s = &l->st[i];
		if (i == n - 1) {
			put_stage(&b, s);
			break;
		}
		/* a run of equal stages each followed by '|'; the last stage never
		 * joins one, so "(s|)*r" leaves no stray empty stage behind */
		int r = 1;
		while (i + r < n - 1 && same_stage(&l->st[i + r], s))
			r++;
		size_t len = stage_len(s);
		if (r >= 2 && len + 4 + num_len(r) < (size_t)r * (len + 1)) {
			put(&b, "(", 1);
			put_stage(&b, s);
			put(&b, "|)*", 3);
			put_count(&b, r);
		} else {
			for (int j = 0; j < r; j++) {
				put_stage(&b, s);
				put(&b, "|", 1);
			}
		}
		i += r;
	}
	return b.failed ? NULL : b.p;
}

/* ---- layouts thermap emits, and Megatron's checks ---- */

int tm_layout_from_layers(int pp, int vpp, const int *layers, bool mtp, tm_layout *out)
{
	long long total;
	int n;

	out->nstages = 0;
	out->st = NULL;
	if (!layers || pp < 1 || vpp < 1 || pp > TM_LAYOUT_MAX / vpp)
		return -1;
	n = pp * vpp;
	/* separators, E, L and m count against the same cap parse applies */
	total = (long long)n - 1 + 2 + (mtp ? 1 : 0);
	for (int i = 0; i < n; i++) {
		if (layers[i] < 0)
			return -1;
		total += layers[i];
		if (total > TM_LAYOUT_MAX)
			return -1;
	}
	/* unsigned: n is positive here, which GCC cannot see */
	out->st = calloc((unsigned)n, sizeof *out->st);
	if (!out->st)
		return -1;
	out->nstages = n;
	for (int i = 0; i < n; i++)
		out->st[i].dec = layers[i];
	out->st[0].emb = 1;
	out->st[n - 1].mtp = mtp ? 1 : 0;
	out->st[n - 1].loss = 1;
	return 0;
}

int tm_layout_check(const tm_layout *l, int pp, int vpp, int num_layers, int mtp_layers,
		    char *err, size_t errlen)
{
	long long sum[K_N] = { 0 };
	int first = -1, last = -1, first_mtp = -1, late_dec = -1;

	if (!l || !l->st || l->nstages < 1)
		return fail(err, errlen, "the layout has no stages");
	if (pp < 1 || vpp < 1)
		return fail(err, errlen, "PP and VPP must be at least 1");
	if ((long long)pp * vpp != l->nstages)
		return fail(err, errlen, "the layout has %d stages; PP %d x VPP %d needs %lld",
			    l->nstages, pp, vpp, (long long)pp * vpp);
	for (int i = 0; i < l->nstages; i++) {
		const tm_layout_stage *s = &l->st[i];
		for (int k = 0; k < K_N; k++) {
			if (count_get(s, k) < 0)
				return fail(err, errlen, "stage %d has a negative count", i);
			sum[k] += count_get(s, k);
		}
		if (max_kind(s) >= 0) {
			if (first < 0)
				first = i;
			last = i;
		}
		/* stage order is Megatron's flattened layer order */
		if (s->dec > 0 && first_mtp >= 0 && late_dec < 0)
			late_dec = i;
		if (s->mtp > 0 && first_mtp < 0)
			first_mtp = i;
	}
	/* in the order validate_layer_layout asserts, so the first complaint
	 * is the one Megatron would make */
	if (first < 0)
		return fail(err, errlen, "the layout holds no layers");
	if (min_kind(&l->st[first]) != K_EMB)
		return fail(err, errlen, "the first layer must be E (embedding), not '%c'",
			    kind_sym[min_kind(&l->st[first])]);
	if (max_kind(&l->st[last]) != K_LOSS)
		return fail(err, errlen, "the last layer must be L (loss), not '%c'",
			    kind_sym[max_kind(&l->st[last])]);
	if (sum[K_EMB] != 1)
		return fail(err, errlen, "E (embedding) must appear once, not %lld times", sum[K_EMB]);
	if (sum[K_LOSS] != 1)
		return fail(err, errlen, "L (loss) must appear once, not %lld times", sum[K_LOSS]);
	if (sum[K_DEC] != num_layers)
		return fail(err, errlen, "the layout has %lld decoder layers (t); the model has %d",
			    sum[K_DEC], num_layers);
	if (sum[K_MTP] != mtp_layers)
		return fail(err, errlen, "the layout has %lld MTP layers (m); the model has %d",
			    sum[K_MTP], mtp_layers);
	if (late_dec >= 0)
		return fail(err, errlen, "decoder layer (t) in stage %d after the MTP layer (m) "
			    "in stage %d; decoder layers come first", late_dec, first_mtp);
	if (first_mtp >= 0) {
		if (first_mtp / pp != vpp - 1)
			return fail(err, errlen, "MTP layers (m) in stage %d, chunk %d of PP rank %d; "
				    "Megatron wants them in the rank's last chunk (%d)",
				    first_mtp, first_mtp / pp, first_mtp % pp, vpp - 1);
		if (l->st[first_mtp].mtp != mtp_layers)
			return fail(err, errlen, "MTP layers (m) are split over several stages; "
				    "Megatron wants them all in one");
	}
	return 0;
}

/* ---- the uneven split (TransformerConfig.__post_init__, "Uneven PP") ---- */

/* Whether Megatron accepts the flags for this model; *per_mid gets the
 * layers of each middle rank (ranks the flags do not name). */
static bool split_ok(int pp, int vpp, int num_layers, int first, int last, int *per_mid)
{
	int mid_layers = num_layers, mid_ranks = pp;

	if (pp < 1 || vpp < 1 || num_layers < 0 || first < -1 || last < -1)
		return false;
	if (first == -1 && last == -1) {
		/* the default split: every rank and every chunk the same */
		*per_mid = num_layers / pp;
		return num_layers % pp == 0 && *per_mid % vpp == 0;
	}
	/* with one rank there is nothing to split; thermap never asks */
	if (pp < 2)
		return false;
	if (first != -1) {
		if (first == 0 || first % vpp != 0)
			return false;
		mid_layers -= first;
		mid_ranks--;
	}
	if (last != -1) {
		if (last == 0 || last % vpp != 0)
			return false;
		mid_layers -= last;
		mid_ranks--;
	}
	/* middle ranks hold layers, or there are neither */
	if (mid_layers < 0 || (mid_layers != 0) != (mid_ranks != 0))
		return false;
	*per_mid = 0;
	if (mid_ranks > 0) {
		if (mid_layers % mid_ranks != 0)
			return false;
		*per_mid = mid_layers / mid_ranks;
		if (*per_mid % vpp != 0)
			return false;
	}
	return true;
}

/* layers on PP rank p, all of its chunks together */
static int rank_layers(int pp, int first, int last, int per_mid, int p)
{
	if (p == 0 && first != -1)
		return first;
	if (p == pp - 1 && last != -1)
		return last;
	return per_mid;
}

int tm_layout_split_flags(int pp, int vpp, int num_layers, int first, int last, int *layers)
{
	int per_mid;

	if (!layers || !split_ok(pp, vpp, num_layers, first, last, &per_mid) || pp > INT_MAX / vpp)
		return -1;
	for (int p = 0; p < pp; p++)
		for (int v = 0; v < vpp; v++)
			layers[v * pp + p] = rank_layers(pp, first, last, per_mid, p) / vpp;
	return 0;
}

int tm_layout_uneven_flags(int pp, int vpp, const int *layers, int *first, int *last)
{
	long long sum = 0, r0 = 0, rl = 0;

	if (!layers || !first || !last || pp < 1 || vpp < 1 || pp > INT_MAX / vpp)
		return 0;
	for (int v = 0; v < vpp; v++) {
		r0 += layers[v * pp];
		rl += layers[v * pp + pp - 1];
	}
	for (int i = 0; i < pp * vpp; i++) {
		if (layers[i] < 0)
			return 0;
		sum += layers[i];
	}
	if (sum > INT_MAX)
		return 0;
	/* a flag, when given, is the whole first (last) rank; so four
	 * candidates, fewest flags first */
	const int cand[4][2] = {
		{ -1, -1 }, { (int)r0, -1 }, { -1, (int)rl }, { (int)r0, (int)rl },
	};
	for (int c = 0; c < 4; c++) {
		int f = cand[c][0], l = cand[c][1], per_mid;
		bool match = split_ok(pp, vpp, (int)sum, f, l, &per_mid);
		for (int i = 0; match && i < pp * vpp; i++)
			match = layers[i] == rank_layers(pp, f, l, per_mid, i % pp) / vpp;
		if (match) {
			*first = f;
			*last = l;
			return 1;
		}
	}
	return 0;
}
