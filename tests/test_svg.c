/*
 * test_svg.c — cmocka tests for svg.c. Two panels of 2 hosts x 4 GPUs (one
 * GPU unused) render to a well-formed document: the XML declaration first,
 * "</svg>\n" last, tags balanced, one tooltipped <rect> per GPU, hostile
 * host names escaped, every cell labelled with its GPU, stage and °C, the
 * shared scale's ends in the legend and on the hottest and coolest cells,
 * a fixed scale that does not paint a 2 °C spread as red against blue,
 * identical bytes twice. No temperature at all never prints nan or inf;
 * many panels wrap, and 1024 hosts fold into 32 rows of the hottest;
 * tm_svg_write fails cleanly into a missing directory and writes exactly
 * the rendering into a real one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"
#include "testutil.h"

#define COOL "#4575b4"  /* the ramp's ends, as svg.h documents them */
#define HOT "#d73027"
#define MID "#ffffbf"
#define BAD_HOST "n<&\">1"
#define BAD_HOST_ESC "n&lt;&amp;&quot;&gt;1"

/* ---- helpers ------------------------------------------------------------ */

static char *render(const tm_svg_panel *p, int n)
{
	strbuf b;
	sb_init(&b);
	tm_svg_render(&b, p, n, NULL);
	return b.s;
}

/* Walks every tag with a stack of names: each </name> closes the innermost
 * open <name>, "/>" closes itself, "<?...?>" is skipped; nothing is left
 * open at the end. Text must hold no raw '<' (that would start a tag) and
 * no '>' (escaped everywhere by svg.c). */
static void assert_balanced(const char *s)
{
	char stack[64][32];
	int depth = 0;
	const char *p = s;

	while ((p = strpbrk(p, "<>")) != NULL) {
		char name[32];
		size_t n;
		int close;
		const char *end;

		if (*p == '>')
			fail_msg("stray '>' at offset %td", p - s);
		if (p[1] == '?') {
			p = strstr(p, "?>");
			assert_non_null(p);
			p += 2;
			continue;
		}
		close = p[1] == '/';
		p += 1 + close;
		n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
		assert_true(n > 0 && n < sizeof name);
		memcpy(name, p, n);
		name[n] = '\0';
		end = strchr(p, '>');
		assert_non_null(end);
		/* attribute values hold no '<' */
		assert_null(memchr(p, '<', (size_t)(end - p)));
		if (close) {
			assert_true(depth > 0);
			assert_string_equal(stack[--depth], name);
		} else if (end[-1] != '/') {
			assert_true(depth < 64);
			strcpy(stack[depth++], name);
		}
		p = end + 1;
	}
	assert_int_equal(depth, 0);
}

/* <rect ...> elements with a <title> child, i.e. the GPU cells */
static int count_cells(const char *s)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, "<rect")) != NULL; p++) {
		const char *end = strchr(p, '>');
		if (end[-1] != '/' && strncmp(end + 1, "<title>", 7) == 0)
			n++;
	}
	return n;
}

/* the fill of the one cell whose tooltip is tip */
static bool fill_is(const char *s, const char *tip, const char *fill)
{
	char want[160];
	snprintf(want, sizeof want, "fill=\"%s\"><title>%s</title></rect>",
	         fill, tip);
	return strstr(s, want) != NULL;
}

static void assert_fill(const char *s, const char *tip, const char *fill)
{
	char want[160];
	const char *t;
	snprintf(want, sizeof want, "fill=\"%s\"><title>%s</title></rect>",
	         fill, tip);
	t = strstr(s, want);
	if (!t)
		fail_msg("no cell %s filled %s", tip, fill);
	assert_null(strstr(t + strlen(want), tip));  /* one cell only */
}

static int count(const char *s, const char *w)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, w)) != NULL; p++)
		n++;
	return n;
}

static bool has_word_ci(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (; *s; s++) {
		size_t i = 0;
		while (i < n && tolower((unsigned char)s[i]) == w[i])
			i++;
		if (i == n)
			return true;
	}
	return false;
}

/* ---- the two-panel picture ---------------------------------------------- */

static const char *const hosts[] = { "node-a", BAD_HOST };
static const int ngpus[] = { 4, 4 };
static const double temp_a[] = { 41.5, 50.0, 55.0, 60.0,
                                 62.0, 64.0, 70.0, 78.3 };
static const char *const label_a[] = { "s0", "s1", "s2", "s3",
                                       "s0", "s1", "s2", "s3" };
static const double temp_b[] = { 45.0, 46.0, 47.0, NAN,
                           51.0, 52.0, 53.0, 54.0 };
static const char *const label_b[] = { "s0/d0", "s1/d0", "s2/d0", NULL,
                                       "s0/d1", "s1/d1", "s2/d1", "s3&" };

static void two_panels(tm_svg_panel p[2])
{
	p[0] = (tm_svg_panel){ "thermal", "412.3 ms/iter, peak 78.3 °C", 2,
	                       hosts, ngpus, temp_a, label_a };
	p[1] = (tm_svg_panel){ "round'robin", NULL, 2, hosts, ngpus, temp_b,
	                       label_b };
}

static void test_two_panels(void **state)
{
	tm_svg_panel p[2];
	char *s, *s2;
	const char *legend;
	size_t n;
	(void)state;

	two_panels(p);
	s = render(p, 2);
	n = strlen(s);
	assert_true(strncmp(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n",
	                    39) == 0);
	assert_non_null(strstr(s, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_true(n > 7 && strcmp(s + n - 7, "</svg>\n") == 0);
	assert_balanced(s);
	assert_int_equal(count_cells(s), 16);
	/* host names, titles and labels escaped, never raw */
	assert_null(strstr(s, BAD_HOST));
	assert_non_null(strstr(s, ">" BAD_HOST_ESC "</text>"));
	assert_non_null(strstr(s, "<title>" BAD_HOST_ESC " GPU 3: s3, 78.3 °C"));
	assert_non_null(strstr(s, ">round&apos;robin</text>"));
	assert_non_null(strstr(s, ">3 s3&amp;</text>"));
	assert_non_null(strstr(s, ">412.3 ms/iter, peak 78.3 °C</text>"));
	/* the shared scale (here the pictured GPUs'): its ends in the legend,
	 * at the ramp's ends, with a tick every 10 °C between */
	legend = strstr(s, "<g id=\"legend\"");
	assert_non_null(legend);
	assert_non_null(strstr(legend, "the pictured GPUs' scale 41.5 to 78.3 °C"));
	assert_non_null(strstr(legend, ">50</text>"));
	assert_non_null(strstr(legend, ">70</text>"));
	assert_fill(s, "node-a GPU 0: s0, 41.5 °C", COOL);
	assert_fill(s, BAD_HOST_ESC " GPU 3: s3, 78.3 °C", HOT);
	/* every cell says its GPU index and stage, and its °C, on the cell */
	assert_non_null(strstr(s, ">2 s2</text>"));
	assert_non_null(strstr(s, ">78.3</text>"));
	assert_non_null(strstr(s, ">41.5</text>"));
	/* the unused GPU: grey, its index and a dash, a tooltip saying so */
	assert_fill(s, "node-a GPU 3: unused", "#d9d9d9");
	assert_int_equal(count(s, ">–</text>"), 1);
	/* two lines of text per cell, and the ticks 50, 60 and 70 °C */
	assert_int_equal(count(s, "text-anchor=\"middle\""), 2 * 16 + 3);
	assert_false(has_word_ci(s, "nan"));
	s2 = render(p, 2);
	assert_string_equal(s, s2);
	free(s2);
	free(s);
}

/* min == max: every used cell takes the middle colour */
static void test_flat_scale(void **state)
{
	static const char *const h[] = { "h" };
	static const int g[] = { 2 };
	static const double t[] = { 60.0, 60.0 };
	static const char *const l[] = { "s0", "s1" };
	tm_svg_panel p = { "flat", NULL, 1, h, g, t, l };
	char *s;
	(void)state;

	s = render(&p, 1);
	assert_balanced(s);
	assert_fill(s, "h GPU 0: s0, 60.0 °C", MID);
	assert_fill(s, "h GPU 1: s1, 60.0 °C", MID);
	/* the legend spans a degree around the one temperature */
	assert_non_null(strstr(strstr(s, "<g id=\"legend\""),
	                       "scale 59.5 to 60.5 °C"));
	free(s);
}

/* A fixed scale: a 2 °C spread near its middle is not painted as red
 * against blue, and what lies beyond it takes the end colours. */
static void test_fixed_scale(void **state)
{
	static const char *const h[] = { "h" };
	static const int g[] = { 4 };
	static const double t[] = { 59.0, 61.0, 20.0, 95.0 };
	static const char *const l[] = { "s0", "s1", "s2", "s3" };
	tm_svg_panel p = { "fixed", NULL, 1, h, g, t, l };
	tm_svg_scale sc = { TM_SVG_LO_C, TM_SVG_HI_C };
	strbuf b;
	(void)state;

	sb_init(&b);
	tm_svg_render(&b, &p, 1, &sc);
	assert_balanced(b.s);
	assert_false(fill_is(b.s, "h GPU 0: s0, 59.0 °C", COOL));
	assert_false(fill_is(b.s, "h GPU 1: s1, 61.0 °C", HOT));
	assert_fill(b.s, "h GPU 2: s2, 20.0 °C", COOL);
	assert_fill(b.s, "h GPU 3: s3, 95.0 °C", HOT);
	assert_non_null(strstr(b.s, "fixed scale 30.0 to 90.0 °C"));
	for (int d = 30; d <= 90; d += 10) {
		char tick[32];
		snprintf(tick, sizeof tick, ">%d</text>", d);
		assert_non_null(strstr(strstr(b.s, "<g id=\"legend\""), tick));
	}
	sb_free(&b);
}

/* nothing usable: no nan or inf in the text, still well-formed */
static void test_no_temperatures(void **state)
{
	static const char *const h[] = { "h0", "h1" };
	static const int g[] = { 2, 2 };
	double t[4] = { NAN, NAN, INFINITY, -INFINITY };
	static const char *const none[] = { NULL, NULL, NULL, NULL };
	tm_svg_panel p = { "idle", "nothing placed", 2, h, g, t, none };
	char *s;
	(void)state;

	s = render(&p, 1);
	assert_balanced(s);
	assert_int_equal(count_cells(s), 4);
	assert_false(has_word_ci(s, "nan"));
	assert_false(has_word_ci(s, "inf"));
	assert_non_null(strstr(s, "no GPU in use"));
	free(s);
	/* no panels at all */
	s = render(NULL, 0);
	assert_balanced(s);
	assert_false(has_word_ci(s, "nan"));
	free(s);
}

/* 5 panels wrap to a second row; 1024 hosts x 8 GPUs stay finite */
static void test_wrap_and_scale(void **state)
{
	enum { NH = 1024, NG = 8 };
	tm_svg_panel p[5];
	const char **h = xmalloc(NH * sizeof *h);
	int *g = xmalloc(NH * sizeof *g);
	double *t = xmalloc(NH * NG * sizeof *t);
	const char **l = xmalloc(NH * NG * sizeof *l);
	char (*names)[24] = xmalloc(NH * sizeof *names);
	char *s;
	(void)state;

	for (int i = 0; i < NH; i++) {
		snprintf(names[i], sizeof names[i], "gpu-node-%04d", i);
		h[i] = names[i];
		g[i] = NG;
	}
	for (int i = 0; i < NH * NG; i++) {
		t[i] = 40.0 + (i % 397) * 0.1;
		l[i] = "s7/d63";
	}
	for (int i = 0; i < 5; i++)
		p[i] = (tm_svg_panel){ "policy", NULL, i < 4 ? 2 : NH, h, g, t, l };
	s = render(p, 5);
	assert_balanced(s);
	/* past 32 hosts a row holds several (1024 / 32 = 32 here): 32 rows
	 * of 8 cells, each the hottest of its 32 GPUs */
	assert_int_equal(count_cells(s), 4 * 2 * NG + 32 * NG);
	assert_non_null(strstr(s, ">gpu-node-0000 … gpu-node-0031 (32)</text>"));
	assert_non_null(strstr(s, "GPU 0 of 32 hosts: 32 in use, hottest "));
	assert_non_null(strstr(s, "a row holds up to 32"));
	/* two rows of panels: two distinct translate y values */
	assert_int_equal(count(s, "<g transform=\"translate(16,"), 2);
	/* a picture that fits a screen: 32 rows, not 1024 */
	{
		int w = 0, hgt = 0;
		assert_int_equal(sscanf(strstr(s, "<svg "), "<svg xmlns=\"http://"
		                        "www.w3.org/2000/svg\" version=\"1.1\" "
		                        "width=\"%d\" height=\"%d\"", &w, &hgt),
		                 2);
		assert_true(hgt < 1600);
	}
	assert_true(strlen(s) < 1u << 20);
	free(s);
	free(names);
	free(l);
	free(t);
	free(g);
	free(h);
}

/* ---- tm_svg_write ------------------------------------------------------- */

static void test_write(void **state)
{
	const char *bad = "/nonexistent-thermap-svg-test/sub/out.svg";
	char dir[128], path[160];
	tm_error e = { 0, "" };
	tm_svg_panel p[2];
	char *want, *got = NULL;
	size_t len;
	(void)state;

	two_panels(p);
	assert_int_not_equal(tm_svg_write(bad, p, 2, NULL, &e), 0);
	assert_int_not_equal(e.code, 0);
	assert_non_null(strstr(e.msg, bad));

	assert_int_equal(tt_tmpdir(dir, sizeof dir, "test_svg"), 0);
	snprintf(path, sizeof path, "%s/out.svg", dir);
	memset(&e, 0, sizeof e);
	assert_int_equal(tm_svg_write(path, p, 2, NULL, &e), 0);
	assert_int_equal(e.code, 0);
	assert_int_equal(tm_read_file(path, 1 << 20, &got, &len, &e), 0);
	want = render(p, 2);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(got, want, len);
	free(want);
	free(got);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);  /* no temporary file left behind */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_panels),
		cmocka_unit_test(test_flat_scale),
		cmocka_unit_test(test_fixed_scale),
		cmocka_unit_test(test_no_temperatures),
		cmocka_unit_test(test_wrap_and_scale),
		cmocka_unit_test(test_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
