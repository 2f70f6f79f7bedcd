/*
 * test_output.c — cmocka tests for what thermap writes from input text:
 * tm_utf8_len against an independent decoder over every sequence of up to
 * three bytes; tm_text and sb_add_text on crafted byte strings (controls,
 * DEL, C1, overlong forms, surrogates, code points above U+10FFFF, cut
 * sequences), cut only between characters, and showing shown text again
 * changing nothing; tm_fail, tm_vfail_at and tm_warn giving one line of
 * valid UTF-8 without control characters; jw_escape giving valid UTF-8
 * JSON that jansson reads back as the same text (or U+FFFD per bad byte);
 * and the SVG picture's text. Random byte strings hold all of it. And the
 * registry of report formats (enum tm_format) and its names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ops/ops.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* The code point at s[0..n) decoded the long way, or -1 when it is no
 * well-formed UTF-8 (Unicode 15, table 3-7); *len gets its bytes. */
static long decode(const unsigned char *s, size_t n, int *len)
{
	static const long least[] = { 0, 0, 0x80, 0x800, 0x10000 };
	long cp;
	int k;
	if (n == 0)
		return -1;
	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if ((s[0] & 0xe0) == 0xc0) {
		k = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		k = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		k = 4;
		cp = s[0] & 0x07;
	} else {
		return -1;
	}
	if ((size_t)k > n)
		return -1;
	for (int i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < least[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = k;
	return cp;
}

/* s is valid UTF-8 and, unless lines, holds no control character (C0,
 * DEL, C1); with lines, '\n' is allowed */
static void assert_inert(const char *s, bool lines)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0;
	while (i < n) {
		int k = 0;
		long cp = decode(u + i, n - i, &k);
		if (cp < 0)
			fail_msg("invalid UTF-8 at byte %zu of \"%s\"", i, s);
		if ((cp < 0x20 && !(lines && cp == '\n')) ||
		    (cp >= 0x7f && cp <= 0x9f))
			fail_msg("control character U+%04lX at byte %zu", cp, i);
		i += (size_t)k;
	}
}

static char *shown(const char *s)
{
	strbuf b;
	sb_init(&b);
	sb_add_text(&b, s);
	return b.s;
}

static void assert_shown(const char *in, const char *want)
{
	char *got = shown(in), buf[256];
	assert_string_equal(got, want);
	tm_text(buf, sizeof buf, in);
	assert_string_equal(buf, want);
	free(got);
}

static char *escaped(const char *s)
{
	strbuf b;
	sb_init(&b);
	jw_escape(&b, s);
	return b.s;
}

/* jw_escape(in) is want, valid UTF-8 JSON, and jansson reads it back as
 * back (NULL: as in) */
static void assert_json(const char *in, const char *want, const char *back)
{
	char *got = escaped(in), *doc;
	json_error_t je;
	json_t *v;
	size_t n = strlen(got);
	assert_string_equal(got, want);
	assert_inert(got, false);
	doc = xmalloc(n + 3);
	snprintf(doc, n + 3, "[%s]", got);
	v = json_loads(doc, 0, &je);
	if (!v)
		fail_msg("jansson: %s in %s", je.text, doc);
	assert_string_equal(json_string_value(json_array_get(v, 0)),
	                    back ? back : in);
	json_decref(v);
	free(doc);
	free(got);
}

/* n random bytes, NUL-free, biased towards the interesting ones */
static void random_bytes(char *s, size_t n)
{
	static const unsigned char pick[] = {
		0x01, 0x07, 0x09, 0x0a, 0x0d, 0x1b, 0x7f, 0x80, 0x9b, 0xbf,
		0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5,
		0xff, '\\', '"', 'a', '|', '<', '&'
	};
	for (size_t i = 0; i < n; i++) {
		uint32_t r = next();
		s[i] = (char)(r % 3 ? pick[(r >> 8) % sizeof pick]
		                    : 1 + (r >> 8) % 255);
	}
	s[n] = '\0';
}

/* ---- the UTF-8 decoder --------------------------------------------------- */

/* every string of one to three bytes (and its NUL), then random four */
static void test_utf8_len_exhaustive(void **state)
{
	unsigned char s[5] = { 0 };
	(void)state;
	for (long x = 1L << 16; x < (1L << 24); x++) {
		int want = 0, k = 0;
		size_t n;
		s[0] = (unsigned char)(x >> 16);
		s[1] = (unsigned char)(x >> 8);
		s[2] = (unsigned char)x;
		s[3] = 0;
		if (!s[0])
			continue;
		n = strlen((char *)s);
		if (decode(s, n, &k) >= 0)
			want = k;
		if (tm_utf8_len((char *)s) != want)
			fail_msg("%02x %02x %02x: tm_utf8_len %d, expected %d",
			         s[0], s[1], s[2], tm_utf8_len((char *)s), want);
	}
	for (int i = 0; i < 2000000; i++) {
		uint32_t r = next();
		int k = 0, want;
		s[0] = (unsigned char)(0xf0 | (r & 7));
		for (int j = 1; j < 4; j++)
			s[j] = (unsigned char)(0x70 + (r >> (3 + 8 * (j - 1))) % 0x60);
		s[4] = 0;
		want = decode(s, 4, &k) >= 0 ? 4 : 0;
		assert_int_equal(tm_utf8_len((char *)s), want);
	}
}

static void test_utf8_len_cases(void **state)
{
	static const struct { const char *s; int n; } c[] = {
		{ "a", 1 }, { "\x7f", 1 }, { "\x01", 1 },
		{ "\xc2\x80", 2 }, { "\xdf\xbf", 2 },                 /* U+0080, U+07FF */
		{ "\xe0\xa0\x80", 3 }, { "\xef\xbf\xbf", 3 },         /* U+0800, U+FFFF */
		{ "\xf0\x90\x80\x80", 4 }, { "\xf4\x8f\xbf\xbf", 4 }, /* U+10000, U+10FFFF */
		{ "\xc0\x80", 0 }, { "\xc1\xbf", 0 },                 /* overlong */
		{ "\xe0\x80\x80", 0 }, { "\xe0\x9f\xbf", 0 },
		{ "\xf0\x80\x80\x80", 0 }, { "\xf0\x8f\xbf\xbf", 0 },
		{ "\xed\xa0\x80", 0 }, { "\xed\xbf\xbf", 0 },         /* surrogates */
		{ "\xed\x9f\xbf", 3 },                                /* U+D7FF */
		{ "\xf4\x90\x80\x80", 0 }, { "\xf5\x80\x80\x80", 0 }, /* > U+10FFFF */
		{ "\xff", 0 }, { "\xfe", 0 },
		{ "\x80", 0 }, { "\xbf", 0 },                         /* stray */
		{ "\xe2\x82", 0 }, { "\xe2\x82" "A", 0 },             /* cut short */
		{ "\xf0\x9f\x98", 0 }, { "\xc3", 0 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
		if (tm_utf8_len(c[i].s) != c[i].n)
			fail_msg("case %zu: %d, expected %d", i, tm_utf8_len(c[i].s),
			         c[i].n);
}

/* ---- text for people ------------------------------------------------------ */

static void test_text_cases(void **state)
{
	(void)state;
	/* valid UTF-8 without controls passes unchanged */
	assert_shown("h200x4-a: 61.6 °C ± 1.7 → ok", "h200x4-a: 61.6 °C ± 1.7 → ok");
	assert_shown("nœud-ß \xc2\xa0 \xf0\x9f\x94\xa5 日本", "nœud-ß \xc2\xa0 \xf0\x9f\x94\xa5 日本");
	assert_shown("C:\\dir \"q\" 'x' |", "C:\\dir \"q\" 'x' |");
	assert_shown("", "");
	/* C0 controls and DEL */
	assert_shown("a\nthermap: error: forged", "a\\nthermap: error: forged");
	assert_shown("\a\b\t\n\v\f\r\033", "\\a\\b\\t\\n\\v\\f\\r\\e");
	assert_shown("\x01\x1f\x7f", "\\x01\\x1f\\x7f");
	assert_shown("\033]0;pwned\a\033[2J", "\\e]0;pwned\\a\\e[2J");
	/* C1 controls, encoded: a code point; U+00A0 is no control */
	assert_shown("\xc2\x80\xc2\x9b" "1m\xc2\x9f\xc2\xa0", "\\u0080\\u009b1m\\u009f\xc2\xa0");
	/* bytes of no well-formed sequence, one escape each */
	assert_shown("tele\xff.csv", "tele\\xff.csv");
	assert_shown("\x9b" "2J", "\\x9b2J");
	assert_shown("\xc0\xaf", "\\xc0\\xaf");                   /* overlong '/' */
	assert_shown("\xe0\x80\xaf", "\\xe0\\x80\\xaf");
	assert_shown("\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf");
	assert_shown("\xed\xa0\x80\xed\xb0\x80", "\\xed\\xa0\\x80\\xed\\xb0\\x80");
	assert_shown("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
	assert_shown("\xe2\x82", "\\xe2\\x82");                   /* cut at the end */
	assert_shown("\xe2\x82" "A\xe2\x82\xac", "\\xe2\\x82" "A\xe2\x82\xac");
	assert_shown("\xf0\x9f\x98" "\n", "\\xf0\\x9f\\x98\\n");
}

/* shown text shows as itself: the escapes are printable ASCII and a
 * backslash stays a backslash, so messages may quote messages */
static void test_text_idempotent(void **state)
{
	char in[200];
	(void)state;
	for (int i = 0; i < 20000; i++) {
		char *a, *b;
		random_bytes(in, (size_t)(next() % 199));
		a = shown(in);
		assert_inert(a, false);
		b = shown(a);
		assert_string_equal(a, b);
		free(a);
		free(b);
	}
}

/* a full buffer is cut between characters and escapes, never inside */
static void test_text_cut(void **state)
{
	static const char *const in[] = {
		"ab\ncd", "a°b", "\xf0\x9f\x94\xa5\xf0\x9f\x94\xa5", "\xff\xfe",
		"x\xc2\x9by", "\033\033\033"
	};
	char buf[64], in2[64];
	(void)state;
	tm_text(buf, 4, "ab\ncd");
	assert_string_equal(buf, "ab");
	tm_text(buf, 5, "ab\ncd");
	assert_string_equal(buf, "ab\\n");
	tm_text(buf, 3, "a°b");
	assert_string_equal(buf, "a");
	tm_text(buf, 4, "a°b");
	assert_string_equal(buf, "a°");
	tm_text(buf, 1, "abc");
	assert_string_equal(buf, "");
	for (size_t k = 0; k < sizeof in / sizeof in[0]; k++) {
		char *full = shown(in[k]);
		for (size_t size = 1; size <= strlen(full) + 1; size++) {
			tm_text(buf, size, in[k]);
			assert_true(strlen(buf) < size);
			assert_inert(buf, false);
			/* a prefix of the whole, and nothing that would fit left */
			assert_memory_equal(buf, full, strlen(buf));
		}
		free(full);
	}
	for (int i = 0; i < 5000; i++) {
		size_t size = 1 + next() % 40;
		char *full;
		random_bytes(in2, (size_t)(next() % 63));
		full = shown(in2);
		tm_text(buf, size, in2);
		assert_inert(buf, false);
		assert_true(strlen(buf) < size);
		assert_memory_equal(buf, full, strlen(buf));
		free(full);
	}
}

/* ---- messages -------------------------------------------------------------- */

static char warned[2048];
static int nwarned;

static void on_warn(void *ud, const char *msg)
{
	(void)ud;
	snprintf(warned, sizeof warned, "%s", msg);
	nwarned++;
}

static int fail_at(tm_error *err, const char *file, long line,
                   const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = tm_vfail_at(err, TM_EINPUT, file, line, fmt, ap);
	va_end(ap);
	return rc;
}

static void test_messages(void **state)
{
	tm_error err = { 0, "" };
	char in[300], big[3000];
	(void)state;

	assert_int_equal(tm_fail(&err, TM_EINPUT, "%s: nodes[0].host: \"%s\" is "
	                         "not a usable host name", "c\xff.json",
	                         "a\nthermap: error: forged"), TM_EINPUT);
	assert_string_equal(err.msg, "c\\xff.json: nodes[0].host: \"a\\nthermap: "
	                    "error: forged\" is not a usable host name");
	/* the first error stays */
	tm_fail(&err, TM_EUSAGE, "second");
	assert_int_equal(err.code, TM_EINPUT);
	/* a message quoting a message is unchanged by it */
	{
		tm_error e2 = { 0, "" };
		tm_fail(&e2, TM_EINPUT, "%s; expected the cluster", err.msg);
		assert_string_equal(e2.msg, "c\\xff.json: nodes[0].host: \"a\\nthermap: "
		                    "error: forged\" is not a usable host name; "
		                    "expected the cluster");
	}

	memset(&err, 0, sizeof err);
	fail_at(&err, "n\033.xml", 5, "<nvlink> target \"%.40s\" is not a PCI "
	        "bus id", "\033]0;pwned\a\033[2J");
	assert_string_equal(err.msg, "n\\e.xml:5: <nvlink> target "
	                    "\"\\e]0;pwned\\a\\e[2J\" is not a PCI bus id");

	tm_set_warn(on_warn, NULL);
	tm_warn("%s: %s: unknown field, ignored", "c.json", "nodes[0].gpu\n\r\x7f");
	assert_int_equal(nwarned, 1);
	assert_string_equal(warned, "c.json: nodes[0].gpu\\n\\r\\x7f: unknown "
	                    "field, ignored");

	/* hostile bytes everywhere, messages of any length: one line of
	 * valid UTF-8 without controls, within the buffer */
	for (int i = 0; i < 3000; i++) {
		size_t n = next() % 299;
		random_bytes(in, n);
		memset(&err, 0, sizeof err);
		if (i % 3 == 0) {
			memset(big, 'x', sizeof big);
			big[next() % 1100 + 900] = '\0';
			tm_fail(&err, TM_EINPUT, "%s%s", big, in);
		} else if (i % 3 == 1) {
			fail_at(&err, in, i, "%s", in);
		} else {
			tm_fail(&err, TM_EINPUT, "%s: %s", in, in);
		}
		assert_true(strlen(err.msg) < sizeof err.msg);
		assert_inert(err.msg, false);
		tm_warn("%s", in);
		assert_inert(warned, false);
	}
	tm_set_warn(NULL, NULL);
}

/* ---- JSON -------------------------------------------------------------------- */

static void test_json_cases(void **state)
{
	(void)state;
	assert_json("thermal", "\"thermal\"", NULL);
	assert_json("61.6 °C ± → 日本 \xf0\x9f\x94\xa5 \xc2\xa0",
	            "\"61.6 °C ± → 日本 \xf0\x9f\x94\xa5 \xc2\xa0\"", NULL);
	assert_json("q\"b\\s/", "\"q\\\"b\\\\s/\"", NULL);
	assert_json("a\nb\tc\rd\be\ff", "\"a\\nb\\tc\\u000dd\\u0008e\\u000cf\"", NULL);
	assert_json("\033]0;x\a", "\"\\u001b]0;x\\u0007\"", NULL);
	assert_json("\x7f\xc2\x80\xc2\x9b\xc2\x9f", "\"\\u007f\\u0080\\u009b\\u009f\"",
	            NULL);
	/* bytes that are no UTF-8: U+FFFD each, written as an escape */
	assert_json("tele\xff.csv", "\"tele\\ufffd.csv\"", "tele\xef\xbf\xbd.csv");
	assert_json("\xc0\xaf", "\"\\ufffd\\ufffd\"", "\xef\xbf\xbd\xef\xbf\xbd");
	assert_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"",
	            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	assert_json("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"",
	            "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	assert_json("a\xe2\x82", "\"a\\ufffd\\ufffd\"", "a\xef\xbf\xbd\xef\xbf\xbd");
	assert_json("\xe2\x82" "A", "\"\\ufffd\\ufffdA\"", "\xef\xbf\xbd\xef\xbf\xbd" "A");
	/* a genuine U+FFFD passes as it is */
	assert_json("\xef\xbf\xbd", "\"\xef\xbf\xbd\"", NULL);
}

/* random bytes: always JSON that jansson reads, with every valid UTF-8
 * character kept and every other byte U+FFFD */
static void test_json_random(void **state)
{
	char in[200];
	(void)state;
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(next() % 199), k = 0;
		char *doc, *got, *want = xmalloc(3 * n + 1);
		json_error_t je;
		json_t *v;
		random_bytes(in, n);
		for (size_t j = 0; j < n;) {
			int len = 0;
			if (decode((unsigned char *)in + j, n - j, &len) >= 0) {
				memcpy(want + k, in + j, (size_t)len);
				k += (size_t)len;
				j += (size_t)len;
			} else {
				memcpy(want + k, "\xef\xbf\xbd", 3);
				k += 3;
				j++;
			}
		}
		want[k] = '\0';
		got = escaped(in);
		assert_inert(got, false);
		doc = xmalloc(strlen(got) + 3);
		sprintf(doc, "[%s]", got);
		v = json_loads(doc, 0, &je);
		if (!v)
			fail_msg("jansson: %s in %s", je.text, doc);
		assert_string_equal(json_string_value(json_array_get(v, 0)), want);
		json_decref(v);
		free(doc);
		free(got);
		free(want);
	}
}

/* the writer's keys go through the same escaping */
static void test_json_writer(void **state)
{
	strbuf b;
	jw w;
	json_error_t je;
	json_t *v;
	(void)state;
	sb_init(&b);
	jw_init(&w, &b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "file", "tele\xff\033\n.csv");
	jw_obj(&w, "k\xfe\a", true);
	jw_str(&w, "policy", "a\n|b");
	jw_end_obj(&w);
	jw_end_obj(&w);
	assert_inert(b.s, true);
	assert_non_null(strstr(b.s, "\"file\": \"tele\\ufffd\\u001b\\n.csv\""));
	assert_non_null(strstr(b.s, "\"k\\ufffd\\u0007\": {\"policy\": \"a\\n|b\"}"));
	v = json_loads(b.s, JSON_REJECT_DUPLICATES, &je);
	if (!v)
		fail_msg("jansson: %s in %s", je.text, b.s);
	json_decref(v);
	sb_free(&b);
}

/* The writer as it was, one character and one printf at a time: the
 * faster one must write the same bytes. */
static void ref_escape(strbuf *b, const char *s)
{
	sb_add(b, "\"");
	while (*s) {
		unsigned char c = (unsigned char)*s;
		int n = tm_utf8_len(s);
		char tmp[8];
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
			memcpy(tmp, s, (size_t)n);
			tmp[n] = '\0';
			sb_add(b, tmp);
		}
		s += n ? n : 1;
	}
	sb_add(b, "\"");
}

/* jw_escape, jw_int, the indentation and sb_addf against what they wrote
 * before they were made faster: the same bytes, on random strings (runs
 * of plain ASCII among the interesting bytes), every edge of a long, deep
 * nesting, and appends across the buffer's growth. */
static void test_writer_bytes(void **state)
{
	static const long ints[] = { 0, 1, -1, 9, 10, -10, 99, 100, 65535,
		-65536, 2147483647L, -2147483647L - 1, LONG_MAX, LONG_MIN };
	char in[300], want[64];
	strbuf a, b;
	jw w;
	(void)state;
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(next() % 299);
		random_bytes(in, n);
		for (size_t j = 0; j < n; j++)   /* and plain runs */
			if (next() % 3 == 0)
				in[j] = (char)(0x20 + next() % 0x5f);
		sb_init(&a);
		sb_init(&b);
		ref_escape(&a, in);
		jw_escape(&b, in);
		assert_int_equal(a.len, b.len);
		assert_string_equal(a.s, b.s);
		sb_free(&a);
		sb_free(&b);
	}
	sb_init(&b);
	jw_init(&w, &b);
	jw_arr(&w, NULL, true);
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
		jw_int(&w, NULL, ints[i]);
	jw_end_arr(&w);
	sb_init(&a);
	sb_add(&a, "[");
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		snprintf(want, sizeof want, "%s%ld", i ? ", " : "", ints[i]);
		sb_add(&a, want);
	}
	sb_add(&a, "]\n");
	assert_string_equal(b.s, a.s);
	sb_free(&a);
	sb_free(&b);
	/* the deepest nesting the writer holds, indented two spaces a level */
	sb_init(&b);
	jw_init(&w, &b);
	for (int d = 0; d < 63; d++)
		jw_arr(&w, NULL, false);
	jw_int(&w, NULL, 7);
	for (int d = 0; d < 63; d++)
		jw_end_arr(&w);
	sb_init(&a);
	for (int d = 0; d < 63; d++) {
		sb_add(&a, "[\n");
		for (int k = 0; k <= d; k++)
			sb_add(&a, "  ");
	}
	sb_add(&a, "7");
	for (int d = 62; d >= 0; d--) {
		sb_add(&a, "\n");
		for (int k = 0; k < d; k++)
			sb_add(&a, "  ");
		sb_add(&a, "]");
	}
	sb_add(&a, "\n");
	assert_string_equal(b.s, a.s);
	sb_free(&a);
	sb_free(&b);
	/* sb_addf: what snprintf gives, whether or not it fits the room */
	sb_init(&b);
	sb_init(&a);
	for (int i = 0; i < 3000; i++) {
		int k = (int)(next() % 700);
		memset(in, 'a' + i % 26, (size_t)(k % 290));
		in[k % 290] = '\0';
		sb_addf(&b, "%d:%s;", k, in);
		snprintf(want, sizeof want, "%d:", k);
		sb_add(&a, want);
		sb_add(&a, in);
		sb_add(&a, ";");
		assert_int_equal(a.len, b.len);
	}
	sb_addf(&b, "%s", "");
	assert_string_equal(b.s, a.s);
	sb_free(&a);
	sb_free(&b);
}

/* ---- the SVG picture ---------------------------------------------------------- */

static void test_svg_text(void **state)
{
	static const char *const host[] = { "h\n<a>" };
	static const int ngpus[] = { 1 };
	static const double temp[] = { 60.0 };
	static const char *const label[] = { "s0\033" };
	tm_svg_panel p = { "pol\033]0;x\a\n<&>\xff\xef\xbf\xbf\xc2\x9b",
	                   "sub\ttitle", 1, host, ngpus, temp, label };
	strbuf b;
	(void)state;
	sb_init(&b);
	tm_svg_render(&b, &p, 1, NULL);
	/* XML 1.0: no control character but the file's line breaks, no
	 * U+FFFF, valid UTF-8 */
	assert_inert(b.s, true);
	assert_null(strstr(b.s, "\xef\xbf\xbf"));
	assert_non_null(strstr(b.s, ">pol\\e]0;x\\a\\n&lt;&amp;&gt;\\xff"
	                       "\xef\xbf\xbd\\u009b</text>"));
	assert_non_null(strstr(b.s, ">sub\\ttitle</text>"));
	assert_non_null(strstr(b.s, ">h\\n&lt;a&gt;</text>"));
	assert_non_null(strstr(b.s, ">0 s0\\e</text>"));
	sb_free(&b);
}

/* The registry of report formats: each name found in the sets that offer
 * it and nowhere else, the numbers compare has always used, and the lists
 * the command line's messages and usage lines are made of. */
static void test_formats(void **state)
{
	static const char *const names[] = { "text", "markdown", "csv",
	                                     "json" };
	char buf[64];
	(void)state;
	for (int f = 0; f < TM_NFORMATS; f++) {
		bool two = f == TM_FORMAT_TEXT || f == TM_FORMAT_JSON;
		assert_string_equal(tm_format_name(f), names[f]);
		assert_int_equal(tm_format_lookup(names[f], TM_FORMATS_COMPARE), f);
		assert_int_equal(tm_compare_format(names[f]), f);
		assert_int_equal(tm_format_lookup(names[f], TM_FORMATS_DIFF),
		                 two ? f : -1);
		assert_int_equal(tm_format_lookup(names[f], TM_FORMATS_CHECK),
		                 two ? f : -1);
		assert_int_equal(tm_format_lookup(names[f], 0), -1);
	}
	assert_int_equal(TM_FORMAT_TEXT, 0);
	assert_int_equal(TM_FORMAT_JSON, 3);
	assert_null(tm_format_name(-1));
	assert_null(tm_format_name(TM_NFORMATS));
	assert_int_equal(tm_format_lookup("JSON", TM_FORMATS_COMPARE), -1);
	assert_int_equal(tm_format_lookup("", TM_FORMATS_COMPARE), -1);
	assert_int_equal(tm_format_lookup(NULL, TM_FORMATS_COMPARE), -1);
	assert_int_equal(tm_compare_format("tsv"), -1);
	tm_format_list(TM_FORMATS_COMPARE, ", ", " or ", buf, sizeof buf);
	assert_string_equal(buf, "text, markdown, csv or json");
	tm_format_list(TM_FORMATS_DIFF, ", ", " or ", buf, sizeof buf);
	assert_string_equal(buf, "text or json");
	tm_format_list(TM_FORMATS_COMPARE, "|", "|", buf, sizeof buf);
	assert_string_equal(buf, "text|markdown|csv|json");
	tm_format_list(TM_FORMAT_BIT(TM_FORMAT_CSV), ", ", " or ", buf,
	               sizeof buf);
	assert_string_equal(buf, "csv");
	tm_format_list(0, ", ", " or ", buf, sizeof buf);
	assert_string_equal(buf, "");
	tm_format_list(TM_FORMATS_COMPARE, ", ", " or ", buf, 10);
	assert_string_equal(buf, "text, mar");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_len_cases),
		cmocka_unit_test(test_utf8_len_exhaustive),
		cmocka_unit_test(test_text_cases),
		cmocka_unit_test(test_text_idempotent),
		cmocka_unit_test(test_text_cut),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_json_cases),
		cmocka_unit_test(test_json_random),
		cmocka_unit_test(test_json_writer),
		cmocka_unit_test(test_writer_bytes),
		cmocka_unit_test(test_svg_text),
		cmocka_unit_test(test_formats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
