/*
 * jsonout.c — a small JSON writer with a fixed layout and fixed number
 * rounding, so that identical plans are identical bytes. Containers are
 * written either indented (two spaces) or inline on one line.
 */
#include <string.h>

#include "internal.h"

void jw_init(jw *w, strbuf *b)
{
	memset(w, 0, sizeof *w);
	w->b = b;
	w->first[0] = true;
}

static void sep(jw *w, const char *key)
{
	if (w->depth > 0) {
		if (!w->first[w->depth])
			sb_add(w->b, w->inline_[w->depth] ? ", " : ",");
		if (!w->inline_[w->depth]) {
			sb_add(w->b, "\n");
			for (int i = 0; i < w->depth; i++)
				sb_add(w->b, "  ");
		}
	}
	w->first[w->depth] = false;
	if (key) {
		jw_escape(w->b, key);
		sb_add(w->b, ": ");
	}
}

void jw_escape(strbuf *b, const char *s)
{
	sb_add(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		char tmp[8];
		if (*p == '"')
			sb_add(b, "\\\"");
		else if (*p == '\\')
			sb_add(b, "\\\\");
		else if (*p == '\n')
			sb_add(b, "\\n");
		else if (*p == '\t')
			sb_add(b, "\\t");
		else if (*p < 0x20) {
			snprintf(tmp, sizeof tmp, "\\u%04x", *p);
			sb_add(b, tmp);
		} else {
			tmp[0] = (char)*p;
			tmp[1] = '\0';
			sb_add(b, tmp);
		}
	}
	sb_add(b, "\"");
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
	if (!inl && !was_empty) {
		sb_add(w->b, "\n");
		for (int i = 0; i < w->depth; i++)
			sb_add(w->b, "  ");
	}
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

void jw_int(jw *w, const char *key, long v)
{
	sep(w, key);
	sb_addf(w->b, "%ld", v);
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
