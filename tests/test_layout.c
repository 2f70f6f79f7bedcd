/*
 * test_layout.c — cmocka tests for layout.c. Every layout string of the
 * public fixture (fixtures/megatron-layout, section A, read at run time)
 * parses to PP x VPP stages, passes Megatron's checks for its model and
 * survives format and parse again; hand cases have exact per-stage counts,
 * every rejected input its exact message. An oracle written the way
 * Megatron's parser works (delete commas, expand "(...)*N" then "x*N" as
 * text, split on '|') must agree with tm_layout_parse on random strings;
 * random layouts must round-trip; the uneven-split flags are checked
 * against the fixture's section B and against each other.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "testutil.h"

#define FIXTURE "fixtures/megatron-layout/megatron-pipeline-layouts-and-uneven-splits.md"

/* ---- helpers ------------------------------------------------------------ */

/* The whole file, through the library's bounded reader. */
static void assert_same_layout(const tm_layout *a, const tm_layout *b)
{
	assert_int_equal(a->nstages, b->nstages);
	for (int i = 0; i < a->nstages; i++) {
		assert_int_equal(a->st[i].emb, b->st[i].emb);
		assert_int_equal(a->st[i].dec, b->st[i].dec);
		assert_int_equal(a->st[i].mtp, b->st[i].mtp);
		assert_int_equal(a->st[i].loss, b->st[i].loss);
	}
}

/* format, parse the result, compare; and format is a fixed point */
static void assert_round_trip(const tm_layout *l)
{
	char err[160];
	tm_layout back;
	char *s = tm_layout_format(l), *s2;

	assert_non_null(s);
	if (tm_layout_parse(s, &back, err, sizeof err) != 0)
		fail_msg("format wrote \"%.200s\", which does not parse: %s", s, err);
	assert_same_layout(l, &back);
	s2 = tm_layout_format(&back);
	assert_non_null(s2);
	assert_string_equal(s, s2);
	free(s2);
	free(s);
	tm_layout_clear(&back);
}

/* ---- the fixture's section A table -------------------------------------- */

typedef struct row {
	int id;            /* the table's "#" */
	char layout[512];  /* the string, unescaped */
	int pp;            /* PP column, first number (parenthesised: derived) */
	int vpp;           /* VPP column, first number; -1 where it has none */
} row;

/* Decoder and MTP layers per row, from the "num-layers (+MTP)" column,
 * which is prose ("61 (+1 MTP)", "GLM-5/5.2 (78 decoder layers + 1 MTP
 * ...)") and so is written out here rather than parsed. */
static const int model_of[24][2] = {
	[1] = { 61, 1 }, [2] = { 61, 1 }, [3] = { 14, 1 }, [4] = { 14, 1 },
	[5] = { 16, 1 }, [6] = { 15, 1 }, [7] = { 15, 0 }, [8] = { 13, 1 },
	[9] = { 61, 1 }, [10] = { 61, 1 }, [11] = { 61, 1 }, [12] = { 61, 1 },
	[13] = { 61, 0 }, [14] = { 61, 0 }, [15] = { 14, 1 }, [16] = { 14, 1 },
	[17] = { 80, 0 }, [18] = { 48, 1 }, [19] = { 78, 1 }, [20] = { 78, 1 },
	[21] = { 78, 1 }, [22] = { 78, 1 }, [23] = { 43, 1 },
};

static int first_int(const char *s, const char *end)
{
	for (; s < end; s++)
		if (*s >= '0' && *s <= '9')
			return atoi(s);
	return -1;
}

/* The text between the backticks of "Exact text of #21 ...: `...`". */
static void exact_21(const char *text, char *out, size_t cap)
{
	const char *p = strstr(text, "Exact text of #21");
	const char *a, *b;
	assert_non_null(p);
	a = strchr(p, '`');
	assert_non_null(a);
	b = strchr(a + 1, '`');
	assert_non_null(b);
	assert_true((size_t)(b - a - 1) < cap);
	memcpy(out, a + 1, (size_t)(b - a - 1));
	out[b - a - 1] = '\0';
}

/* Reads the rows "| N | `layout` | PP | VPP | ..." between "## A." and
 * "## B."; returns how many. */
static int read_rows(const char *text, row *rows, int cap)
{
	const char *p = strstr(text, "## A.");
	const char *end = strstr(text, "## B.");
	int n = 0;

	assert_non_null(p);
	assert_non_null(end);
	while (p < end) {
		const char *eol = strchr(p, '\n');
		const char *cell[6];
		int ncell = 0;
		if (!eol || eol > end)
			eol = end;
		/* cells are split on '|' that the markdown does not escape */
		if (p[0] == '|' && p[1] == ' ' && p[2] >= '0' && p[2] <= '9') {
			for (const char *q = p; q < eol && ncell < 6; q++)
				if (*q == '|' && (q == p || q[-1] != '\\'))
					cell[ncell++] = q + 1;
			assert_int_equal(ncell, 6);
			assert_true(n < cap);
			row *r = &rows[n++];
			r->id = atoi(cell[0]);
			const char *a = memchr(cell[1], '`', (size_t)(cell[2] - cell[1]));
			const char *b = cell[2] - 1;
			assert_non_null(a);
			while (b > a && *b != '`')
				b--;
			assert_true(b > a);
			size_t len = 0;
			for (const char *q = a + 1; q < b; q++) {
				if (*q == '\\' && q[1] == '|')
					continue;
				assert_true(len + 1 < sizeof r->layout);
				r->layout[len++] = *q;
			}
			r->layout[len] = '\0';
			/* #13 is written "'Et|...'" in its script. Taken as it
			 * is, Megatron and thermap both refuse the quote (no layer,
			 * see test_errors); taken without, as section C of the
			 * fixture takes it, it is the layout meant */
			if (len >= 2 && r->layout[0] == '\'' && r->layout[len - 1] == '\'') {
				memmove(r->layout, r->layout + 1, len - 2);
				r->layout[len - 2] = '\0';
			}
			/* #21 is shortened in the table; the full line is below it */
			if (strstr(r->layout, "..."))
				exact_21(text, r->layout, sizeof r->layout);
			r->pp = first_int(cell[2], cell[3]);
			r->vpp = first_int(cell[3], cell[4]);
		}
		p = eol + 1;
	}
	return n;
}

static void test_fixture_rows(void **state)
{
	(void)state;
	char *text = tt_slurp(FIXTURE, NULL);
	row rows[40];
	int n = read_rows(text, rows, 40);

	assert_true(n >= 23);
	for (int i = 0; i < n; i++) {
		row *r = &rows[i];
		tm_layout l;
		char err[160];
		int vpp = r->vpp;

		if (tm_layout_parse(r->layout, &l, err, sizeof err) != 0)
			fail_msg("row %d \"%s\": %s", r->id, r->layout, err);
		assert_true(r->pp >= 1);
		if (vpp < 0) {
			/* #15 says "(implied)": the row gives PP 4 only, so the
			 * stage count must be a multiple of it (section C: VPP 2) */
			assert_int_equal(r->id, 15);
			assert_int_equal(l.nstages % r->pp, 0);
			vpp = l.nstages / r->pp;
			assert_int_equal(vpp, 2);
		}
		if (l.nstages != r->pp * vpp)
			fail_msg("row %d: %d stages, PP %d x VPP %d", r->id, l.nstages, r->pp, vpp);
		assert_true(r->id >= 1 && r->id <= 23);
		if (tm_layout_check(&l, r->pp, vpp, model_of[r->id][0], model_of[r->id][1],
				    err, sizeof err) != 0)
			fail_msg("row %d: %s", r->id, err);
		assert_round_trip(&l);
		tm_layout_clear(&l);
	}
	free(text);
}

/* Section C holds the same strings unescaped, one a line, with PP and VPP
 * (or '-' for 1): each must parse to what its section A row parses to. */
static void test_fixture_section_c(void **state)
{
	(void)state;
	char *text = tt_slurp(FIXTURE, NULL);
	row rows[40];
	int n = read_rows(text, rows, 40), seen = 0;
	const char *p = strstr(text, "## C.");

	assert_non_null(p);
	p = strstr(p, "```\n");
	assert_non_null(p);
	p += 4;
	while (strncmp(p, "```", 3) != 0) {
		char layout[512], pps[16], vpps[16];
		int id;
		const char *eol = strchr(p, '\n');
		assert_non_null(eol);
		assert_int_equal(sscanf(p, "%d\t%511[^\t]\t%15[^\t]\t%15[^\t]", &id, layout, pps, vpps), 4);
		for (int i = 0; i < n; i++) {
			tm_layout a, c;
			char err[160];
			int pp = atoi(pps), vpp = vpps[0] == '-' ? 1 : atoi(vpps);
			if (rows[i].id != id)
				continue;
			assert_int_equal(tm_layout_parse(layout, &c, err, sizeof err), 0);
			assert_int_equal(tm_layout_parse(rows[i].layout, &a, err, sizeof err), 0);
			assert_same_layout(&a, &c);
			assert_int_equal(c.nstages, pp * vpp);
			tm_layout_clear(&a);
			tm_layout_clear(&c);
			seen++;
		}
		p = eol + 1;
	}
	assert_int_equal(seen, 23);
	free(text);
}

/* ---- hand cases --------------------------------------------------------- */

/* Megatron's docs, example 1: PP16 x VPP2; stage = vpp_chunk * 16 + pp_rank.
 * PP0/VPP0 embedding + 3 decoders, PP1-13 two decoders in both chunks,
 * PP14/VPP1 the MTP layer, PP15/VPP1 the loss. */
static void test_example_1(void **state)
{
	(void)state;
	tm_layout l;
	char err[160];

	assert_int_equal(tm_layout_parse("Et*3|(tt|)*29,m|L", &l, err, sizeof err), 0);
	assert_int_equal(l.nstages, 32);
	for (int pp = 0; pp < 16; pp++) {
		for (int vpp = 0; vpp < 2; vpp++) {
			const tm_layout_stage *s = &l.st[vpp * 16 + pp];
			int emb = 0, dec = 2, mtp = 0, loss = 0;
			if (pp == 0 && vpp == 0) {
				emb = 1;
				dec = 3;
			} else if (pp == 14 && vpp == 1) {
				dec = 0;
				mtp = 1;
			} else if (pp == 15 && vpp == 1) {
				dec = 0;
				loss = 1;
			}
			assert_int_equal(s->emb, emb);
			assert_int_equal(s->dec, dec);
			assert_int_equal(s->mtp, mtp);
			assert_int_equal(s->loss, loss);
		}
	}
	assert_int_equal(tm_layout_check(&l, 16, 2, 61, 1, err, sizeof err), 0);
	tm_layout_clear(&l);
}

typedef struct hand {
	const char *in;            /* layout string */
	int n;                     /* stages */
	tm_layout_stage st[12];    /* expected, emb dec mtp loss */
} hand;

static void test_hand_cases(void **state)
{
	(void)state;
	static const hand cases[] = {
		/* the docs' empty-stage example */
		{ "E||t|L", 4, { { 1, 0, 0, 0 }, { 0 }, { 0, 1, 0, 0 }, { 0, 0, 0, 1 } } },
		/* TransformerConfig's docstring example */
		{ "E|(tt|)*2,(t|)*4,mL", 8,
		  { { 1, 0, 0, 0 }, { 0, 2, 0, 0 }, { 0, 2, 0, 0 }, { 0, 1, 0, 0 },
		    { 0, 1, 0, 0 }, { 0, 1, 0, 0 }, { 0, 1, 0, 0 }, { 0, 0, 1, 1 } } },
		/* Megatron deletes every comma first, even inside a count */
		{ "t*1,2", 1, { { 0, 12, 0, 0 } } },
		{ "t,*3", 1, { { 0, 3, 0, 0 } } },
		{ ",E,|,L,", 2, { { 1, 0, 0, 0 }, { 0, 0, 0, 1 } } },
		{ "(t),*,2", 1, { { 0, 2, 0, 0 } } },
		/* leading zeros, as Python's int() reads them */
		{ "t*007", 1, { { 0, 7, 0, 0 } } },
		/* '|' repeats like a symbol */
		{ "E|*3L", 4, { { 1, 0, 0, 0 }, { 0 }, { 0 }, { 0, 0, 0, 1 } } },
		{ "(t|*2)*2", 5, { { 0, 1, 0, 0 }, { 0 }, { 0, 1, 0, 0 }, { 0 }, { 0 } } },
		/* a group inside one stage, groups that start or end mid-stage */
		{ "(t)*3", 1, { { 0, 3, 0, 0 } } },
		{ "E(t)*2(|t)*2L", 3, { { 1, 2, 0, 0 }, { 0, 1, 0, 0 }, { 0, 1, 0, 1 } } },
		{ "Et(t|tt)*3mL", 4, { { 1, 2, 0, 0 }, { 0, 3, 0, 0 }, { 0, 3, 0, 0 }, { 0, 2, 1, 1 } } },
		{ "(|)*3", 4, { { 0 }, { 0 }, { 0 }, { 0 } } },
		{ "|", 2, { { 0 }, { 0 } } },
		{ "E|", 2, { { 1, 0, 0, 0 }, { 0 } } },
		/* parse counts; only tm_layout_check minds E twice */
		{ "EEtL", 1, { { 2, 1, 0, 1 } } },
		{ "(tm)*1", 1, { { 0, 1, 1, 0 } } },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		tm_layout l;
		char err[160];
		if (tm_layout_parse(cases[c].in, &l, err, sizeof err) != 0)
			fail_msg("\"%s\": %s", cases[c].in, err);
		if (l.nstages != cases[c].n)
			fail_msg("\"%s\": %d stages, want %d", cases[c].in, l.nstages, cases[c].n);
		for (int i = 0; i < l.nstages; i++) {
			const tm_layout_stage *w = &cases[c].st[i], *g = &l.st[i];
			if (g->emb != w->emb || g->dec != w->dec || g->mtp != w->mtp ||
			    g->loss != w->loss)
				fail_msg("\"%s\" stage %d: E%d t%d m%d L%d, want E%d t%d m%d L%d",
					 cases[c].in, i, g->emb, g->dec, g->mtp, g->loss,
					 w->emb, w->dec, w->mtp, w->loss);
		}
		assert_round_trip(&l);
		tm_layout_clear(&l);
	}
}

/* ---- rejected inputs ---------------------------------------------------- */

typedef struct bad {
	const char *in;   /* layout string */
	const char *msg;  /* the exact message */
} bad;

static void test_errors(void **state)
{
	(void)state;
	static const bad cases[] = {
		{ "", "column 1: empty layout" },
		{ ",,", "column 1: empty layout" },
		{ "Et*", "column 4: expected a count after '*'" },
		{ "Et*|L", "column 4: expected a count after '*'" },
		{ "Et*-1", "column 4: expected a count after '*'" },
		{ "Et*,", "column 5: expected a count after '*'" },
		{ "Et*0", "column 4: a repeat count must be at least 1" },
		{ "Et*0,0", "column 4: a repeat count must be at least 1" },
		{ "(tt|)*0", "column 7: a repeat count must be at least 1" },
		{ "E|*0L", "column 4: a repeat count must be at least 1" },
		{ "Et*99999999999999999999999999|L",
		  "column 4: layout expands past 1000000 layers and separators" },
		{ "t*1000001", "column 3: layout expands past 1000000 layers and separators" },
		{ "Et*1000000", "column 4: layout expands past 1000000 layers and separators" },
		{ "(t|)*500001", "column 6: layout expands past 1000000 layers and separators" },
		{ "|*1000001", "column 3: layout expands past 1000000 layers and separators" },
		{ "*3", "column 1: '*' must follow E, t, m, L, '|' or ')'" },
		{ "t*2*3", "column 4: '*' must follow E, t, m, L, '|' or ')'" },
		{ "(tt|)*2*3", "column 8: '*' must follow E, t, m, L, '|' or ')'" },
		{ "(*2)*2", "column 2: '*' must follow E, t, m, L, '|' or ')'" },
		{ "((t|)*2)*2", "column 2: groups cannot nest; Megatron expands one level of (...)*N" },
		{ "(tt|", "column 5: expected ')' to close the '(' at column 1" },
		{ "E|(t", "column 5: expected ')' to close the '(' at column 3" },
		{ "tt)", "column 3: ')' without a matching '('" },
		{ "(t|)*2)*2", "column 7: ')' without a matching '('" },
		{ "(tt|)", "column 6: expected '*' and a count after ')'" },
		{ "(tt|)3", "column 6: expected '*' and a count after ')'" },
		{ "()*2", "column 1: empty group" },
		{ "E(,)*2", "column 2: empty group" },
		{ "E t|L", "column 2: unexpected ' '; expected E, t, m, L, '|' or '('" },
		{ " E|L", "column 1: unexpected ' '; expected E, t, m, L, '|' or '('" },
		{ "E|x", "column 3: unexpected 'x'; expected E, t, m, L, '|' or '('" },
		{ "e|L", "column 1: unexpected 'e'; expected E, t, m, L, '|' or '('" },
		{ "E|3", "column 3: unexpected '3'; expected E, t, m, L, '|' or '('" },
		{ "(tx)*2", "column 3: unexpected 'x'; expected E, t, m, L, '|' or ')'" },
		{ "'Et|L'", "column 1: unexpected '''; expected E, t, m, L, '|' or '('" },
		{ "E\t|L", "column 2: unexpected byte 0x09; expected E, t, m, L, '|' or '('" },
		{ "Et\n", "column 3: unexpected byte 0x0a; expected E, t, m, L, '|' or '('" },
		{ "E|\xff", "column 3: unexpected byte 0xff; expected E, t, m, L, '|' or '('" },
		{ "tE|L", "column 2: 'E' after 't' in one stage; Megatron wants E, t, m, L in that order" },
		{ "E|Lt", "column 4: 't' after 'L' in one stage; Megatron wants E, t, m, L in that order" },
		{ "E|mt*3L", "column 4: 't' after 'm' in one stage; Megatron wants E, t, m, L in that order" },
		/* repeating puts E after t: the column is the group's first layer */
		{ "(Et)*2", "column 2: 'E' after 't' in one stage; Megatron wants E, t, m, L in that order" },
		{ "(E|t)*2", "column 2: 'E' after 't' in one stage; Megatron wants E, t, m, L in that order" },
		{ "t(E|)*2", "column 3: 'E' after 't' in one stage; Megatron wants E, t, m, L in that order" },
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		tm_layout l = { 5, NULL };  /* parse must overwrite it */
		char err[160];
		if (tm_layout_parse(cases[c].in, &l, err, sizeof err) == 0)
			fail_msg("\"%s\" parsed", cases[c].in);
		if (strcmp(err, cases[c].msg) != 0)
			fail_msg("\"%s\": got \"%s\", want \"%s\"", cases[c].in, err, cases[c].msg);
		assert_int_equal(l.nstages, 0);
		assert_null(l.st);
	}
}

static void test_error_buffer(void **state)
{
	(void)state;
	tm_layout l;
	char small[8];

	/* cut to the buffer, never past it; no buffer at all is fine */
	assert_int_equal(tm_layout_parse("E|x", &l, small, sizeof small), -1);
	assert_string_equal(small, "column ");
	assert_int_equal(tm_layout_parse("E|x", &l, NULL, 0), -1);
	assert_int_equal(tm_layout_parse(NULL, &l, small, sizeof small), -1);
	/* success empties err */
	assert_int_equal(tm_layout_parse("EtL", &l, small, sizeof small), 0);
	assert_string_equal(small, "");
	tm_layout_clear(&l);
	tm_layout_clear(&l);
	tm_layout_clear(NULL);
}

/* Inputs meant to cost time or memory: each ends in well under a second
 * (the whole test is linear; a quadratic step would take minutes here). */
static void test_hostile(void **state)
{
	(void)state;
	enum { BIG = 2400000 };
	char *s = malloc(BIG + 1);
	char err[160];
	tm_layout l;
	size_t n;

	assert_non_null(s);

	/* deep nesting stops at the second '(' */
	memset(s, '(', 100000);
	s[100000] = '\0';
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), -1);
	assert_string_equal(err, "column 2: groups cannot nest; Megatron expands one level of (...)*N");

	/* 400,000 stages spelled out: fine */
	for (n = 0; n < 800000; n += 2)
		memcpy(s + n, "t|", 2);
	s[n] = '\0';
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), 0);
	assert_int_equal(l.nstages, 400001);
	assert_round_trip(&l);
	tm_layout_clear(&l);

	/* 1.2 million spelled out: stops at the 1,000,001st */
	for (n = 0; n < BIG; n += 2)
		memcpy(s + n, "t|", 2);
	s[n] = '\0';
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), -1);
	assert_string_equal(err, "column 1000001: layout expands past 1000000 layers and separators");

	/* exactly the cap, as one count and as a group */
	assert_int_equal(tm_layout_parse("t*1000000", &l, err, sizeof err), 0);
	assert_int_equal(l.st[0].dec, 1000000);
	assert_round_trip(&l);
	tm_layout_clear(&l);
	assert_int_equal(tm_layout_parse("(t|)*500000", &l, err, sizeof err), 0);
	assert_int_equal(l.nstages, 500001);
	tm_layout_clear(&l);

	/* a group of 2,000 items repeated: refused before any copy past the
	 * cap, accepted below it */
	n = 0;
	s[n++] = '(';
	for (int i = 0; i < 1000; i++) {
		s[n++] = 't';
		s[n++] = '|';
	}
	memcpy(s + n, ")*999", 6);
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), -1);
	assert_string_equal(err, "column 2004: layout expands past 1000000 layers and separators");
	memcpy(s + n, ")*499", 6);
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), 0);
	assert_int_equal(l.nstages, 499001);
	tm_layout_clear(&l);

	/* a million commas around one layer, and between a layer and its '*' */
	memset(s, ',', BIG);
	s[1000000] = 't';
	memcpy(s + BIG - 3, "*2", 3);
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), 0);
	assert_int_equal(l.nstages, 1);
	assert_int_equal(l.st[0].dec, 2);
	tm_layout_clear(&l);

	/* a count of a million digits */
	s[0] = 't';
	s[1] = '*';
	memset(s + 2, '9', BIG - 2);
	s[BIG] = '\0';
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), -1);
	assert_string_equal(err, "column 3: layout expands past 1000000 layers and separators");

	/* many short groups */
	n = 0;
	while (n + 6 < BIG) {
		memcpy(s + n, "(t|)*1", 6);
		n += 6;
	}
	s[n] = '\0';
	assert_int_equal(tm_layout_parse(s, &l, err, sizeof err), 0);
	assert_int_equal(l.nstages, (int)(n / 6) + 1);
	tm_layout_clear(&l);

	free(s);
}

/* ---- the writer --------------------------------------------------------- */

static void check_format(const char *in, const char *want)
{
	tm_layout l;
	char err[160], *got;
	if (tm_layout_parse(in, &l, err, sizeof err) != 0)
		fail_msg("\"%s\": %s", in, err);
	got = tm_layout_format(&l);
	assert_non_null(got);
	if (strcmp(got, want) != 0)
		fail_msg("format(\"%s\") = \"%s\", want \"%s\"", in, got, want);
	free(got);
	tm_layout_clear(&l);
}

static void test_format(void **state)
{
	(void)state;
	/* the fixture's #1 comes back as its #2, #11 as #12 */
	check_format("Et*3|(tt|)*29,m|L", "Et*3|(tt|)*29m|L");
	check_format("Et*4|(tttt|)*14tmL", "Et*4|(t*4|)*14tmL");
	check_format("Et|(tt|)*30mL", "Et|(tt|)*30mL");
	check_format("E||t|L", "E||t|L");
	check_format("ttt", "t*3");
	check_format("tt", "tt");
	check_format("EEttmmmmLL", "EEttm*4LL");
}

static void test_format_cases(void **state)
{
	(void)state;
	/* a run of equal stages is grouped only where that is shorter */
	check_format("t|t|t", "t|t|t");
	check_format("t|t|t|t|t|t|t", "(t|)*6t");
	check_format("(|)*10", "(|)*10");
	check_format("|||", "|||");
	check_format("tt|tt|E", "tt|tt|E");
	check_format("(t*12|)*2E", "(t*12|)*2E");
	/* the last stage never joins a run: no stray empty stage */
	check_format("(tt|)*3tt", "(tt|)*3tt");
	check_format("Et*11|t*11|t*11|t*10mL", "Et*11|(t*11|)*2t*10mL");
	check_format("Et*2|(t*2|)*34,t*3|(t*2|)*3,tL", "Ett|(tt|)*34t*3|(tt|)*3tL");
}

static void test_format_refuses(void **state)
{
	(void)state;
	tm_layout_stage st[2] = { { 0 }, { 0 } };
	tm_layout l = { 0, st };

	assert_null(tm_layout_format(NULL));
	assert_null(tm_layout_format(&l));     /* no stage */
	l.nstages = 1;
	assert_null(tm_layout_format(&l));     /* one empty stage: "" does not parse */
	st[0].dec = -1;
	assert_null(tm_layout_format(&l));
	st[0].dec = TM_LAYOUT_MAX;
	char *s = tm_layout_format(&l);
	assert_string_equal(s, "t*1000000");
	free(s);
	l.nstages = 2;                        /* plus a '|' is past the cap */
	assert_null(tm_layout_format(&l));
}

/* Random layouts, drawn from a few stage shapes so runs of equal stages
 * (and so groups) are common. */
static void test_random_round_trip(void **state)
{
	(void)state;
	tt_rng seed = { 0x5eed1a7017ull };
	tm_layout_stage pool[6];
	tm_layout_stage st[80];

	for (int iter = 0; iter < 3000; iter++) {
		tm_layout l = { 1 + tt_below(&seed, 80), st };
		for (int k = 0; k < 6; k++) {
			int big = tt_below(&seed, 8) == 0;
			pool[k].emb = tt_below(&seed, 6) == 0 ? 1 + tt_below(&seed, 2) : 0;
			pool[k].dec = tt_below(&seed, 4) == 0 ? 0 : tt_below(&seed, big ? 200 : 9);
			pool[k].mtp = tt_below(&seed, 6) == 0 ? 1 + tt_below(&seed, 3) : 0;
			pool[k].loss = tt_below(&seed, 6) == 0 ? 1 : 0;
		}
		for (int i = 0; i < l.nstages; i++)
			st[i] = pool[tt_below(&seed, iter % 2 ? 2 : 6)];
		if (l.nstages == 1 && !st[0].emb && !st[0].dec && !st[0].mtp && !st[0].loss)
			st[0].dec = 1;
		assert_round_trip(&l);
	}
}

/* ---- an oracle: Megatron's parser as text rewriting --------------------- */

/* parse_str_to_list: delete commas; replace each "(body)*N" (body without
 * ')') by N copies; replace each "x*N" by N copies of x; split on '|'.
 * Returns the expanded text (malloc'd). */
static char *megatron_expand(const char *in)
{
	size_t cap = 1 << 14, n = 0;  /* rand_item expands to at most 8,640 */
	char *a = malloc(strlen(in) + 1), *b = malloc(cap), *c = malloc(cap);
	size_t na = 0;

	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	for (const char *p = in; *p; p++)
		if (*p != ',')
			a[na++] = *p;
	a[na] = '\0';
	/* r'\(([^)]+)\)\*(\d+)' */
	for (size_t i = 0; i < na;) {
		if (a[i] == '(') {
			size_t j = i + 1;
			while (j < na && a[j] != ')')
				j++;
			if (j < na && j > i + 1 && a[j + 1] == '*' && a[j + 2] >= '0' && a[j + 2] <= '9') {
				size_t k = j + 2;
				long r = strtol(a + k, NULL, 10);
				while (a[k] >= '0' && a[k] <= '9')
					k++;
				for (long x = 0; x < r; x++) {
					assert_true(n + (j - i - 1) < cap);
					memcpy(b + n, a + i + 1, j - i - 1);
					n += j - i - 1;
				}
				i = k;
				continue;
			}
		}
		assert_true(n + 1 < cap);
		b[n++] = a[i++];
	}
	b[n] = '\0';
	/* r'(.)\*(\d+)' */
	size_t m = 0;
	for (size_t i = 0; i < n;) {
		if (i + 2 < n + 1 && b[i + 1] == '*' && b[i + 2] >= '0' && b[i + 2] <= '9') {
			size_t k = i + 2;
			long r = strtol(b + k, NULL, 10);
			while (b[k] >= '0' && b[k] <= '9')
				k++;
			for (long x = 0; x < r; x++) {
				assert_true(m + 1 < cap);
				c[m++] = b[i];
			}
			i = k;
			continue;
		}
		assert_true(m + 1 < cap);
		c[m++] = b[i++];
	}
	c[m] = '\0';
	free(a);
	free(b);
	return c;
}

static const char *rand_count(tt_rng *seed, int max, char *buf)
{
	int v = 1 + tt_below(seed, max);
	int len = snprintf(buf, 16, "%d", v);
	/* a comma inside a count now and then: Megatron deletes it */
	if (len >= 2 && tt_below(seed, 4) == 0) {
		memmove(buf + 2, buf + 1, (size_t)len);
		buf[1] = ',';
	}
	return buf;
}

static void rand_item(tt_rng *seed, char *s, size_t *n, bool in_group)
{
	static const char syms[] = "tttttttmEL";
	char num[20];
	int what = tt_below(seed, in_group ? 4 : 5);

	if (what == 0 || what == 1) {
		s[(*n)++] = syms[tt_below(seed, (int)sizeof syms - 1)];
		if (what == 1)
			*n += (size_t)sprintf(s + *n, "*%s", rand_count(seed, 12, num));
	} else if (what == 2) {
		s[(*n)++] = '|';
		if (tt_below(seed, 5) == 0)
			*n += (size_t)sprintf(s + *n, "*%s", rand_count(seed, 3, num));
	} else if (what == 3) {
		s[(*n)++] = ',';
	} else {
		int items = 1 + tt_below(seed, 5);
		s[(*n)++] = '(';
		for (int i = 0; i < items; i++)
			rand_item(seed, s, n, true);
		/* a group needs a layer or a '|' in it; commas alone are "()" */
		s[(*n)++] = tt_below(seed, 2) ? 't' : '|';
		*n += (size_t)sprintf(s + *n, ")*%s", rand_count(seed, 6, num));
	}
}

static int kind_rank(char c)
{
	return c == 'E' ? 0 : c == 't' ? 1 : c == 'm' ? 2 : 3;
}

static void test_random_oracle(void **state)
{
	(void)state;
	tt_rng seed = { 0x0dd5eed5ull };
	char s[1024];
	int accepted = 0, refused = 0;

	for (int iter = 0; iter < 20000; iter++) {
		size_t n = 0;
		int items = 1 + tt_below(&seed, 20);
		for (int i = 0; i < items; i++)
			rand_item(&seed, s, &n, false);
		s[n] = '\0';

		char *x = megatron_expand(s), err[160];
		tm_layout l;
		int rc = tm_layout_parse(s, &l, err, sizeof err);
		bool ordered = true, any = false;
		int stage = 0, prev = -1;
		/* what the oracle says, stage by stage */
		tm_layout_stage want[4096];
		memset(&want[0], 0, sizeof want[0]);
		for (const char *p = x; *p; p++) {
			if (*p == '|') {
				stage++;
				assert_true(stage < 4096);
				memset(&want[stage], 0, sizeof want[stage]);
				prev = -1;
				continue;
			}
			any = true;
			if (kind_rank(*p) < prev)
				ordered = false;
			prev = kind_rank(*p);
			switch (*p) {
			case 'E': want[stage].emb++; break;
			case 't': want[stage].dec++; break;
			case 'm': want[stage].mtp++; break;
			default: want[stage].loss++; break;
			}
		}
		/* a string of commas only: Megatron gives one empty stage, we refuse */
		if (stage == 0 && !any) {
			assert_int_equal(rc, -1);
			assert_string_equal(err, "column 1: empty layout");
		} else if (!ordered) {
			if (rc == 0)
				fail_msg("\"%s\" parsed, but expands to \"%s\"", s, x);
			assert_non_null(strstr(err, "in one stage; Megatron wants E, t, m, L"));
			refused++;
		} else {
			if (rc != 0)
				fail_msg("\"%s\" (\"%s\"): %s", s, x, err);
			assert_int_equal(l.nstages, stage + 1);
			for (int i = 0; i <= stage; i++) {
				assert_int_equal(l.st[i].emb, want[i].emb);
				assert_int_equal(l.st[i].dec, want[i].dec);
				assert_int_equal(l.st[i].mtp, want[i].mtp);
				assert_int_equal(l.st[i].loss, want[i].loss);
			}
			assert_round_trip(&l);
			tm_layout_clear(&l);
			accepted++;
		}
		free(x);
	}
	/* both sides of the order rule were exercised */
	assert_true(accepted > 1000);
	assert_true(refused > 1000);
}

/* Random bytes from the grammar's alphabet and a little more: no crash, no
 * leak (the sanitizer build), a "column N: " message or a layout that
 * round-trips. */
static void test_random_garbage(void **state)
{
	(void)state;
	static const char alpha[] = "EtmL|()*0123456789,,x \t";
	tt_rng seed = { 0x9a5ba9eull };
	char s[64];

	for (int iter = 0; iter < 50000; iter++) {
		int len = tt_below(&seed, 40);
		for (int i = 0; i < len; i++)
			s[i] = alpha[tt_below(&seed, (int)sizeof alpha - 1)];
		s[len] = '\0';
		tm_layout l;
		char err[160];
		if (tm_layout_parse(s, &l, err, sizeof err) == 0) {
			assert_string_equal(err, "");
			assert_true(l.nstages >= 1);
			assert_round_trip(&l);
			tm_layout_clear(&l);
		} else {
			assert_int_equal(strncmp(err, "column ", 7), 0);
			assert_null(l.st);
		}
	}
}

/* ---- what thermap emits, and Megatron's checks -------------------------- */

static void check_from_layers(int pp, int vpp, const int *layers, bool mtp, const char *want)
{
	tm_layout l;
	char err[160], *s;
	long long dec = 0;

	assert_int_equal(tm_layout_from_layers(pp, vpp, layers, mtp, &l), 0);
	s = tm_layout_format(&l);
	assert_non_null(s);
	assert_string_equal(s, want);
	for (int i = 0; i < pp * vpp; i++)
		dec += layers[i];
	assert_int_equal(tm_layout_check(&l, pp, vpp, (int)dec, mtp ? 1 : 0, err, sizeof err), 0);
	assert_round_trip(&l);
	free(s);
	tm_layout_clear(&l);
}

static void test_from_layers(void **state)
{
	(void)state;
	int layers[64];
	tm_layout l;

	/* the fixture's #9 (PP8 VPP4) and #14 (PP16 VPP2), written as in the
	 * recipes: E with 1 layer, 30 stages of 2, the last holds no decoder */
	layers[0] = 1;
	for (int i = 1; i < 31; i++)
		layers[i] = 2;
	layers[31] = 0;
	check_from_layers(8, 4, layers, true, "Et|(tt|)*30mL");
	check_from_layers(16, 2, layers, false, "Et|(tt|)*30L");
	/* #11 (PP8 VPP2) comes out spelled as #12 */
	for (int i = 0; i < 15; i++)
		layers[i] = 4;
	layers[15] = 1;
	check_from_layers(8, 2, layers, true, "Et*4|(t*4|)*14tmL");
	/* the docs' example 1 as thermap would write it: m joins L */
	layers[0] = 3;
	for (int i = 1; i < 30; i++)
		layers[i] = 2;
	layers[30] = 0;
	layers[31] = 0;
	check_from_layers(16, 2, layers, true, "Et*3|(tt|)*29|mL");
	/* PP1: one stage holds everything */
	layers[0] = 5;
	check_from_layers(1, 1, layers, false, "Et*5L");

	assert_int_equal(tm_layout_from_layers(0, 1, layers, false, &l), -1);
	assert_int_equal(tm_layout_from_layers(1, 0, layers, false, &l), -1);
	assert_int_equal(tm_layout_from_layers(1, 1, NULL, false, &l), -1);
	layers[0] = -1;
	assert_int_equal(tm_layout_from_layers(1, 1, layers, false, &l), -1);
	layers[0] = TM_LAYOUT_MAX;
	assert_int_equal(tm_layout_from_layers(1, 1, layers, false, &l), -1);
	assert_null(l.st);
	assert_int_equal(tm_layout_from_layers(TM_LAYOUT_MAX, 2, layers, false, &l), -1);
}

static void check_refused(const char *in, int pp, int vpp, int dec, int mtp, const char *msg)
{
	tm_layout l;
	char err[200];
	assert_int_equal(tm_layout_parse(in, &l, err, sizeof err), 0);
	assert_int_equal(tm_layout_check(&l, pp, vpp, dec, mtp, err, sizeof err), -1);
	if (strcmp(err, msg) != 0)
		fail_msg("check(\"%s\"): got \"%s\", want \"%s\"", in, err, msg);
	tm_layout_clear(&l);
}

static void test_check(void **state)
{
	(void)state;
	check_refused("Et*3|(tt|)*29,m|L", 16, 1, 61, 1,
		      "the layout has 32 stages; PP 16 x VPP 1 needs 16");
	check_refused("Et|L", 0, 1, 1, 0, "PP and VPP must be at least 1");
	check_refused("|||", 2, 2, 0, 0, "the layout holds no layers");
	check_refused("t|E|L", 3, 1, 1, 0, "the first layer must be E (embedding), not 't'");
	check_refused("|t|E|L", 2, 2, 1, 0, "the first layer must be E (embedding), not 't'");
	check_refused("Et|L|t", 3, 1, 2, 0, "the last layer must be L (loss), not 't'");
	check_refused("EEt|L", 2, 1, 1, 0, "E (embedding) must appear once, not 2 times");
	check_refused("Et|t", 2, 1, 2, 0, "the last layer must be L (loss), not 't'");
	check_refused("Et|LL", 2, 1, 1, 0, "L (loss) must appear once, not 2 times");
	check_refused("Et|tL", 2, 1, 3, 0, "the layout has 2 decoder layers (t); the model has 3");
	check_refused("Et|tmL", 2, 1, 2, 0, "the layout has 1 MTP layers (m); the model has 0");
	check_refused("Et|tL", 2, 1, 2, 1, "the layout has 0 MTP layers (m); the model has 1");
	check_refused("Et|m|t|L", 2, 2, 2, 1,
		      "decoder layer (t) in stage 2 after the MTP layer (m) in stage 1; "
		      "decoder layers come first");
	/* PP2 VPP2: stage 1 is chunk 0 of rank 1 */
	check_refused("Et|tm||L", 2, 2, 2, 1,
		      "MTP layers (m) in stage 1, chunk 0 of PP rank 1; "
		      "Megatron wants them in the rank's last chunk (1)");
	check_refused("Et|t|m|mL", 2, 2, 2, 2,
		      "MTP layers (m) are split over several stages; Megatron wants them all in one");
	/* an MTP stage on a rank other than the last is fine (mtp_standalone) */
	tm_layout l;
	char err[160];
	assert_int_equal(tm_layout_parse("Et*3|(tt|)*29,m|L", &l, err, sizeof err), 0);
	assert_int_equal(tm_layout_check(&l, 16, 2, 61, 1, err, sizeof err), 0);
	tm_layout_clear(&l);
	assert_int_equal(tm_layout_check(NULL, 1, 1, 0, 0, err, sizeof err), -1);
	assert_string_equal(err, "the layout has no stages");
}

/* ---- the uneven-split flags --------------------------------------------- */

static void check_flags(int pp, int vpp, const int *layers, int rc, int first, int last)
{
	int f = 99, l = 99;
	assert_int_equal(tm_layout_uneven_flags(pp, vpp, layers, &f, &l), rc);
	if (rc) {
		assert_int_equal(f, first);
		assert_int_equal(l, last);
	}
}

/* what Megatron builds from the flags, per virtual stage in stage order */
static void check_split(int pp, int vpp, int n, int first, int last, const int *want)
{
	int got[64];
	assert_true(pp * vpp <= 64);
	assert_int_equal(tm_layout_split_flags(pp, vpp, n, first, last, got), want ? 0 : -1);
	for (int i = 0; want && i < pp * vpp; i++)
		assert_int_equal(got[i], want[i]);
}

/* Section B of the fixture, where it names PP, layers and flags. */
static void test_flags_section_b(void **state)
{
	(void)state;
	int w[64];

	/* gpt3 tp1 pp4 vp1 uneven: 12 layers, first 2, last 2 */
	const int gpt3[] = { 2, 4, 4, 2 };
	check_split(4, 1, 12, 2, 2, gpt3);
	check_flags(4, 1, gpt3, 1, 2, 2);

	/* Kimi-K2 export: 61 layers over PP16, "3, [4] * 14, 2" */
	w[0] = 3;
	for (int i = 1; i < 15; i++)
		w[i] = 4;
	w[15] = 2;
	check_split(16, 1, 61, 3, 2, w);
	check_flags(16, 1, w, 1, 3, 2);

	/* DeepSeek-V2: 60 layers, PP16 VPP2, first 2, last 2: the first and
	 * last ranks hold one layer in each chunk, the others two */
	for (int v = 0; v < 2; v++) {
		w[v * 16] = 1;
		for (int p = 1; p < 15; p++)
			w[v * 16 + p] = 2;
		w[v * 16 + 15] = 1;
	}
	check_split(16, 2, 60, 2, 2, w);
	check_flags(16, 2, w, 1, 2, 2);

	/* DeepSeek-V3: 61 layers, PP16, first 4, last 1. The first rank holds
	 * as many as a middle one, so the last flag alone gives the same split */
	w[0] = 4;
	for (int i = 1; i < 15; i++)
		w[i] = 4;
	w[15] = 1;
	check_split(16, 1, 61, 4, 1, w);
	check_split(16, 1, 61, -1, 1, w);
	check_flags(16, 1, w, 1, -1, 1);

	/* DeepSeek-V3-Proxy: 14 layers, PP4, first 2, last 2 */
	const int proxy[] = { 2, 5, 5, 2 };
	check_split(4, 1, 14, 2, 2, proxy);
	check_flags(4, 1, proxy, 1, 2, 2);

	/* DeepSeek-V3 README: 61 layers, PP4 VPP1, first 16, last 13 (again
	 * the first flag changes nothing) */
	const int v3pp4[] = { 16, 16, 16, 13 };
	check_split(4, 1, 61, 16, 13, v3pp4);
	check_split(4, 1, 61, -1, 13, v3pp4);
	check_flags(4, 1, v3pp4, 1, -1, 13);

	/* GLM-5 on GB200: PP6, first 14, last 16; with the 78 decoder layers
	 * the fixture's rows 19-22 give GLM-5.2, the middle ranks hold 12 */
	const int glm5[] = { 14, 12, 12, 12, 12, 16 };
	check_split(6, 1, 78, 14, 16, glm5);
	check_flags(6, 1, glm5, 1, 14, 16);

	/* Kimi-K2 in runtime.conf: PP4 with VPP4, first 4, last 1. Megatron
	 * refuses it: the last rank's 1 layer does not divide into 4 chunks */
	check_split(4, 4, 61, 4, 1, NULL);
	/* without VPP the same flags are fine: 56 over 2 middle ranks */
	const int kimi_pp4[] = { 4, 28, 28, 1 };
	check_split(4, 1, 61, 4, 1, kimi_pp4);

	/* Not used: DeepSeek-R1's commented 6/7 (no PP given), Step-3.7 (no
	 * layer count), Step-3.5 (48 layers with last 3 over PP8 leaves 45
	 * for 7 ranks: the count the recipe means is not the one listed),
	 * the account-for-embedding/loss rows (another mechanism) and the
	 * 0/0 of the RL doc (Megatron-Core refuses 0). */
}

static void test_flags_hand(void **state)
{
	(void)state;
	int w[64], f, l;

	/* even splits need no flag */
	const int even[] = { 4, 4, 4, 4 };
	check_flags(4, 1, even, 1, -1, -1);
	const int pp1[] = { 3, 3 };
	check_flags(1, 2, pp1, 1, -1, -1);
	const int pp1b[] = { 3, 4 };
	check_flags(1, 2, pp1b, 0, 0, 0);
	/* PP2: one flag is enough, the first wins */
	const int pp2[] = { 3, 5 };
	check_flags(2, 1, pp2, 1, 3, -1);
	/* no flag gives a rank no layers, or unequal middle ranks or chunks */
	const int zero[] = { 0, 5 };
	check_flags(2, 1, zero, 0, 0, 0);
	const int zero4[] = { 0, 4, 4, 4 };
	check_flags(4, 1, zero4, 0, 0, 0);
	const int mids[] = { 2, 4, 5, 2 };
	check_flags(4, 1, mids, 0, 0, 0);
	const int chunks[] = { 1, 2, 2, 1 };  /* PP2 VPP2: rank 0 holds 1 and 2 */
	check_flags(2, 2, chunks, 0, 0, 0);
	const int neg[] = { -1, 5 };
	check_flags(2, 1, neg, 0, 0, 0);
	assert_int_equal(tm_layout_uneven_flags(0, 1, even, &f, &l), 0);
	assert_int_equal(tm_layout_uneven_flags(4, 1, NULL, &f, &l), 0);
	assert_int_equal(tm_layout_split_flags(4, 1, 12, 0, 2, w), -1);
	assert_int_equal(tm_layout_split_flags(4, 1, 12, -2, 2, w), -1);
	assert_int_equal(tm_layout_split_flags(1, 1, 12, 12, -1, w), -1);
	assert_int_equal(tm_layout_split_flags(2, 1, 12, 12, -1, w), -1);  /* middle rank, no layers */
	assert_int_equal(tm_layout_split_flags(3, 1, 4, 2, 2, w), -1);     /* middle layers, no rank */
	assert_int_equal(tm_layout_split_flags(2, 1, 4, 2, 2, w), 0);
	/* with VPP every rank's layers divide into its chunks */
	assert_int_equal(tm_layout_split_flags(2, 2, 6, -1, -1, w), -1);
	assert_int_equal(tm_layout_split_flags(2, 2, 8, -1, -1, w), 0);
	assert_int_equal(tm_layout_split_flags(4, 2, 16, 3, -1, w), -1);
	assert_int_equal(tm_layout_split_flags(4, 2, 16, -1, 3, w), -1);
	assert_int_equal(tm_layout_split_flags(4, 2, 18, 2, 4, w), 0);   /* 12 / 2 = 6: 3 a chunk */
	assert_int_equal(tm_layout_split_flags(4, 2, 16, 2, 4, w), -1);  /* 10 / 2 = 5: odd */

	/* layout strings of the fixture, as decoder layers per stage */
	static const struct {
		const char *layout;  /* fixture row */
		int pp, vpp;         /* its PP and VPP */
		int rc, first, last; /* what the flags can say */
	} rows[] = {
		{ "Et*7|t*7mL", 2, 1, 1, -1, -1 },               /* #4 */
		{ "Et*11|t*11|t*11|t*10mL", 4, 1, 1, -1, 10 },   /* #23 */
		{ "Et|(tt|)*30L", 16, 2, 0, 0, 0 },              /* #14: rank 0 holds 1 and 2 */
		{ "Et*4|(tttt|)*14tmL", 8, 2, 0, 0, 0 },         /* #11: the last rank 4 and 1 */
		{ "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL", 8, 5, 0, 0, 0 },  /* #17 */
		{ "Etttttt|tttt|tttttttt|tttttttt|tttttttt|tttttttt|tttttttt|tttttttt"
		  "|tttt|tttt|tttt|tttt|ttttmL", 13, 1, 0, 0, 0 },   /* #20 */
		{ "Et*3|(t*4|)*2t*3", 4, 1, 1, 3, 3 },            /* not in the fixture */
	};
	for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
		tm_layout lay;
		char err[160];
		assert_int_equal(tm_layout_parse(rows[r].layout, &lay, err, sizeof err), 0);
		assert_int_equal(lay.nstages, rows[r].pp * rows[r].vpp);
		for (int i = 0; i < lay.nstages; i++)
			w[i] = lay.st[i].dec;
		check_flags(rows[r].pp, rows[r].vpp, w, rows[r].rc, rows[r].first, rows[r].last);
		tm_layout_clear(&lay);
	}
}

/* Whatever flags Megatron accepts, uneven_flags finds flags for the split
 * they make, and those flags make the same split. */
static void test_flags_random(void **state)
{
	(void)state;
	tt_rng seed = { 0xf1a65ull };
	int ok = 0;

	for (int iter = 0; iter < 20000; iter++) {
		int pp = 1 + tt_below(&seed, 8), vpp = 1 + tt_below(&seed, 4);
		int n = tt_below(&seed, 100);
		int first = tt_below(&seed, 3) ? -1 : tt_below(&seed, 30);
		int last = tt_below(&seed, 3) ? -1 : tt_below(&seed, 30);
		int a[32], b[32], f, l;

		if (tm_layout_split_flags(pp, vpp, n, first, last, a) != 0)
			continue;
		ok++;
		assert_int_equal(tm_layout_uneven_flags(pp, vpp, a, &f, &l), 1);
		assert_int_equal(tm_layout_split_flags(pp, vpp, n, f, l, b), 0);
		assert_memory_equal(a, b, (size_t)(pp * vpp) * sizeof a[0]);
		/* no more flags than were given */
		assert_true((f != -1) + (l != -1) <= (first != -1) + (last != -1));
	}
	assert_true(ok > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixture_rows),
		cmocka_unit_test(test_fixture_section_c),
		cmocka_unit_test(test_example_1),
		cmocka_unit_test(test_hand_cases),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_buffer),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_cases),
		cmocka_unit_test(test_format_refuses),
		cmocka_unit_test(test_random_round_trip),
		cmocka_unit_test(test_random_oracle),
		cmocka_unit_test(test_random_garbage),
		cmocka_unit_test(test_from_layers),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_flags_section_b),
		cmocka_unit_test(test_flags_hand),
		cmocka_unit_test(test_flags_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
