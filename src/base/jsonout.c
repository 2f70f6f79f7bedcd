/*
 * jsonout.c — a small JSON writer with a fixed layout and fixed number
 * rounding, so that identical plans are identical bytes. Containers are
 * written either indented (two spaces) or inline on one line.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

void jw_init(jw *w, strbuf *b)
{
	memset(w, 0, sizeof *w);
	w->b = b;
	w->first[0] = true;
}

/* A line break and the indentation of depth (two spaces a level). */
static void newline(jw *w, int depth)
{
	static const char sp[] = "\n" /* and 128 spaces, depth 64 */
		"                                                                "
		"                                                                ";
	size_t n = 1 + 2 * (size_t)depth;
	if (n <= sizeof sp - 1) {
		sb_addn(w->b, sp, n);
		return;
	}
	sb_addn(w->b, "\n", 1);
	for (int i = 0; i < depth; i++)
		sb_addn(w->b, "  ", 2);
}

static void sep(jw *w, const char *key)
{
	if (w->depth > 0) {
		if (!w->first[w->depth])
			sb_add(w->b, w->inline_[w->depth] ? ", " : ",");
		if (!w->inline_[w->depth])
			newline(w, w->depth);
	}
	w->first[w->depth] = false;
	if (key) {
		jw_escape(w->b, key);
		sb_addn(w->b, ": ", 2);
	}
}

/* A JSON string of s, valid UTF-8 whatever s holds: control characters
 * (C0, DEL and C1) escaped as \u00XX (\n and \t as such), and each byte
 * that starts no well-formed UTF-8 sequence written as \ufffd, the
 * replacement character. Valid UTF-8 text is copied as it is. */
void jw_escape(strbuf *b, const char *s)
{
	sb_addn(b, "\"", 1);
	while (*s) {
		unsigned char c = (unsigned char)*s;
		int n;
		char tmp[8];
		/* a run of printable ASCII but '"' and '\\', as it is */
		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			const char *p = s;
			while ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f &&
			       *p != '"' && *p != '\\')
				p++;
			sb_addn(b, s, (size_t)(p - s));
			s = p;
			continue;
		}
		n = tm_utf8_len(s);
		if (n == 0) {
			sb_add(b, "\\ufffd");
		} else if (c == '"') {
			sb_add(b, "\\\"");
		} else if (c == '\\') {
			sb_add(b, "\\\\");
		} else if (c == '\n') {
			sb_add(b, "\\n");
		} else if (c == '\t') {
			sb_add(b, "\\t");
		} else if (c < 0x20 || c == 0x7f) {
			snprintf(tmp, sizeof tmp, "\\u%04x", c);
			sb_add(b, tmp);
		} else if (n == 2 && c == 0xc2 && (unsigned char)s[1] < 0xa0) {
			snprintf(tmp, sizeof tmp, "\\u%04x", (unsigned char)s[1]);
			sb_add(b, tmp);
		} else {
			sb_addn(b, s, (size_t)n);
		}
		s += n ? n : 1;
	}
	sb_addn(b, "\"", 1);
}

static void open_(jw *w, const char *key, bool inline_, const char *ch)
{
	sep(w, key);
	sb_add(w->b, ch);
	w->depth++;
	w->first[w->depth] = true;
	w->inline_[w->depth] = inline_ || w->inline_[w->depth - 1];
}

void jw_obj(jw *w, const char *key, bool inline_)
{
	open_(w, key, inline_, "{");
}

void jw_arr(jw *w, const char *key, bool inline_)
{
	open_(w, key, inline_, "[");
}

static void close_(jw *w, const char *ch)
{
	bool was_empty = w->first[w->depth];
	bool inl = w->inline_[w->depth];
	w->depth--;
	if (!inl && !was_empty)
		newline(w, w->depth);
	sb_add(w->b, ch);
	if (w->depth == 0)
		sb_add(w->b, "\n");
}

void jw_end_obj(jw *w)
{
	close_(w, "}");
}

void jw_end_arr(jw *w)
{
	close_(w, "]");
}

void jw_str(jw *w, const char *key, const char *v)
{
	if (!v) {
		jw_null(w, key);
		return;
	}
	sep(w, key);
	jw_escape(w->b, v);
}

/* Fixed decimals, trailing zeros dropped, -0 written as 0. */
void jw_num(jw *w, const char *key, double v, int decimals)
{
	char buf[64];
	size_t n;
	if (!isfinite(v)) {
		jw_null(w, key);
		return;
	}
	snprintf(buf, sizeof buf, "%.*f", decimals, v);
	n = strlen(buf);
	if (strchr(buf, '.')) {
		while (n > 0 && buf[n - 1] == '0')
			buf[--n] = '\0';
		if (n > 0 && buf[n - 1] == '.')
			buf[--n] = '\0';
	}
	if (strcmp(buf, "-0") == 0)
		strcpy(buf, "0");
	sep(w, key);
	sb_add(w->b, buf);
}

void jw_real(jw *w, const char *key, double v)
{
	char buf[40];
	if (!isfinite(v)) {
		jw_null(w, key);
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, sizeof buf, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (strcmp(buf, "-0") == 0)
		strcpy(buf, "0");
	sep(w, key);
	sb_add(w->b, buf);
}

/* What "%ld" writes, without printf (plan.json has a dozen per rank). */
void jw_int(jw *w, const char *key, long v)
{
	char buf[24], *p = buf + sizeof buf;
	unsigned long u = v < 0 ? 0ul - (unsigned long)v : (unsigned long)v;
	sep(w, key);
	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	sb_addn(w->b, p, (size_t)(buf + sizeof buf - p));
}

void jw_bool(jw *w, const char *key, bool v)
{
	sep(w, key);
	sb_add(w->b, v ? "true" : "false");
}

void jw_null(jw *w, const char *key)
{
	sep(w, key);
	sb_add(w->b, "null");
}
