/*
 * test_profile.c — `thermap profile` end to end through the library:
 * the real H200 recording against the independent Python derivation and
 * against what the recording shows; the settling rule, the fit and the
 * counters on hand-made logs with known answers; every malformed input
 * class with its exact message; and the threaded reader against the
 * line-by-line one on a multi-megabyte replay of the recording.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static char dir[] = "/tmp/thermap-test-profile-XXXXXX";
static char path[512];

/* Writes text to dir/name and returns its path. */
static const char *put(const char *name, const char *text, size_t len)
{
	FILE *f;
	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
	return path;
}

static const char *puts_(const char *name, const char *text)
{
	return put(name, text, strlen(text));
}

/* Profiles the files; returns the exit code, the parsed profile in *out
 * (or NULL) and the summary text in *summ when asked. */
static int run(const char *const *files, int n, const char *host,
               json_t **out, tm_error *err, char **summ)
{
	tm_tele_input in[8];
	tm_tele_opts o = { NAN, NAN, false, false };
	char *prof = NULL, *s = NULL;
	int rc;
	for (int i = 0; i < n; i++) {
		in[i].file = files[i];
		in[i].host = host;
		in[i].fields = NULL;
	}
	memset(err, 0, sizeof *err);
	rc = tm_profile_from_telemetry(in, n, &o, &prof, &s, err);
	*out = NULL;
	if (rc == 0) {
		json_error_t je;
		*out = json_loads(prof, 0, &je);
		assert_non_null(*out);
	}
	if (summ)
		*summ = s;
	else
		free(s);
	free(prof);
	return rc;
}

static int run1(const char *file, const char *host, json_t **out,
                tm_error *err)
{
	return run(&file, 1, host, out, err, NULL);
}

static json_t *gpu(json_t *prof, int i)
{
	json_t *g = json_array_get(json_object_get(prof, "gpus"), (size_t)i);
	assert_non_null(g);
	return g;
}

static double num(json_t *g, const char *k)
{
	json_t *v = json_object_get(g, k);
	assert_non_null(v);
	return json_is_null(v) ? NAN : json_number_value(v);
}

#define assert_near(a, b, tol) \
	assert_true(fabs((double)(a) - (double)(b)) <= (tol))

/* The line of estimated.k saying how field k was estimated; "" when the
 * field is not marked. */
static const char *est(json_t *g, const char *k)
{
	json_t *m = json_object_get(json_object_get(g, "estimated"), k);
	return json_is_string(m) ? json_string_value(m) : "";
}

static double rnd4(double x)
{
	return round(x * 1e4) / 1e4;
}

/* ---- the real recording -------------------------------------------------- */

static const char *H200 = "fixtures/h200x4-a/telemetry.csv";

/* scripts/derive-h200x4a.py implements the same rules separately (Python,
 * whole file in memory, medians of sorted lists, no streaming); every
 * number must agree. */
static void test_h200_matches_python(void **state)
{
	json_t *p, *ref;
	json_error_t je;
	tm_error e;
	const char *k;
	json_t *v;
	(void)state;
	assert_int_equal(run1(H200, "h200x4-a", &p, &e), 0);
	ref = json_load_file("fixtures/h200x4-a/profile.json", 0, &je);
	assert_non_null(ref);
	assert_int_equal(json_array_size(json_object_get(p, "gpus")), 4);
	for (int i = 0; i < 4; i++) {
		json_t *a = gpu(p, i), *b = gpu(ref, i);
		/* the same fields, none more */
		assert_int_equal(json_object_size(a), json_object_size(b));
		json_object_foreach(b, k, v) {
			if (!strcmp(k, "uuid") || !strcmp(k, "host") ||
			    !strcmp(k, "pci_bus_id"))
				continue;
			assert_non_null(json_object_get(a, k));
			if (json_is_string(v) || json_is_object(v)) {
				if (!json_equal(json_object_get(a, k), v))
					fail_msg("GPU %d %s differs from python", i, k);
				continue;
			}
			if (json_is_null(v)) {
				assert_true(isnan(num(a, k)));
				continue;
			}
			if (fabs(num(a, k) - json_number_value(v)) > 1e-9)
				fail_msg("GPU %d %s: thermap %g, python %g", i, k,
				         num(a, k), json_number_value(v));
		}
	}
	json_decref(p);
	json_decref(ref);
}

/* What the recording shows (fixtures/h200x4-a/README.md). */
static void test_h200_what_the_data_shows(void **state)
{
	/* tlimit logged under full load, GPUs 0..3 */
	static const double tlimit[4] = { 26.8, 21.4, 17.8, 24.0 };
	json_t *p;
	tm_error e;
	(void)state;
	assert_int_equal(run1(H200, "h200x4-a", &p, &e), 0);
	for (int i = 0; i < 4; i++) {
		json_t *g = gpu(p, i);
		bool hot = i == 1 || i == 2;
		assert_int_equal((int)num(g, "index"), i);
		if (hot)
			assert_true(num(g, "temp_load_c") >= 64 &&
			            num(g, "temp_load_c") <= 67);
		else
			assert_true(num(g, "temp_load_c") >= 59 &&
			            num(g, "temp_load_c") <= 61.5);
		assert_near(num(g, "headroom_c"), tlimit[i], 0.7);
		assert_near(num(g, "derate"), 1.0, 0.01);
		assert_true(num(g, "power_cap_frac") >= 0.95);
		assert_true(num(g, "thermal_slowdown_frac") == 0);
		assert_near(num(g, "power_limit_w"), 700, 1e-9);
		assert_near(num(g, "power_load_w"), 691, 2);
		assert_true(num(g, "temp_idle_c") >= 34 &&
		            num(g, "temp_idle_c") <= 37);
		assert_true(num(g, "sm_clock_load_mhz") >= 1480 &&
		            num(g, "sm_clock_load_mhz") <= 1500);
	}
	/* the hot pair is hotter than the cool pair by ~5 degrees */
	assert_true(num(gpu(p, 1), "temp_load_c") -
	            num(gpu(p, 0), "temp_load_c") > 4);
	json_decref(p);
}

/* ---- rules on hand-made logs ------------------------------------------- */

/* 40 s idle at 1 Hz (flat 30 C, 50 W), then 100 s at 100 % (60 C, 300 W). */
static char *idle_then_busy(bool flat_start)
{
	strbuf b;
	sb_init(&b);
	sb_add(&b, "timestamp, index, temperature.gpu, power.draw [W], "
	           "utilization.gpu [%]\n");
	for (int t = 0; t < 140; t++) {
		bool busy = t >= 40;
		int temp = busy ? 60 : flat_start ? 30 : 30 + t % 4;
		sb_addf(&b, "2026/01/01 00:%02d:%02d.000, 0, %d, %s, %s\n",
		        t / 60, t % 60, temp, busy ? "300.00 W" : "50.00 W",
		        busy ? "100 %" : "0 %");
	}
	return b.s;
}

static void test_settling_and_fit(void **state)
{
	char *text = idle_then_busy(true);
	json_t *p, *g;
	tm_error e;
	(void)state;
	assert_int_equal(run1(puts_("rig.csv", text), NULL, &p, &e), 0);
	g = gpu(p, 0);
	assert_string_equal(json_string_value(json_object_get(g, "host")),
	                    "rig");
	assert_int_equal((int)num(g, "samples"), 140);
	/* busy from t=40: settled from t=70 to the end (no change follows) */
	assert_int_equal((int)num(g, "load_samples"), 70);
	assert_near(num(g, "span_s"), 139, 1e-9);
	assert_near(num(g, "temp_idle_c"), 30, 1e-9);
	assert_near(num(g, "temp_load_c"), 60, 1e-9);
	assert_near(num(g, "power_idle_w"), 50, 1e-9);
	assert_near(num(g, "power_load_w"), 300, 1e-9);
	/* two points: (50 W, 30 C) and (300 W, 60 C) */
	assert_near(num(g, "r_c_per_w"), 0.12, 1e-9);
	assert_near(num(g, "ambient_c"), 24, 1e-9);
	assert_true(isnan(num(g, "derate")));
	assert_true(isnan(num(g, "headroom_c")));
	assert_true(isnan(num(g, "thermal_slowdown_frac")));
	json_decref(p);
	free(text);
}

/* The first run counts from its start only when it is flat; the sample
 * 1 s before the change never counts. */
static void test_flat_start(void **state)
{
	char *flat = idle_then_busy(true), *moving = idle_then_busy(false);
	json_t *p;
	tm_error e;
	(void)state;
	/* flat: idle samples t=0..38 settled (39), t=39 is guarded */
	assert_int_equal(run1(puts_("a.csv", flat), NULL, &p, &e), 0);
	assert_near(num(gpu(p, 0), "temp_idle_c"), 30, 1e-9);
	json_decref(p);
	/* not flat (30..33 C): only t=30..38 are 30 s into the run: temps
	 * 30+t%4 for t=30..38 = 32,33,30,31,32,33,30,31,32 -> mean 31.56 */
	assert_int_equal(run1(puts_("b.csv", moving), NULL, &p, &e), 0);
	assert_near(num(gpu(p, 0), "temp_idle_c"), 31.6, 1e-9);
	json_decref(p);
	free(flat);
	free(moving);
}

/* 200 s at 100 % (never idle) at 1 Hz, power alternating between lo and
 * hi W, temperature exactly 30 + 0.05·P: what a power controller gives. */
static char *alternating(int lo, int hi)
{
	strbuf b;
	sb_init(&b);
	sb_add(&b, "timestamp, index, temperature.gpu, power.draw [W], "
	           "utilization.gpu [%]\n");
	for (int t = 0; t < 200; t++) {
		int P = t % 2 ? hi : lo;
		sb_addf(&b, "2026/01/01 00:%02d:%02d.000, 0, %.2f, %d.00 W, "
		        "100 %%\n", t / 60, t % 60, 30 + 0.05 * P, P);
	}
	return b.s;
}

/* Without idle samples the fit needs the settled power to span 100 W. */
static void test_fit_without_idle(void **state)
{
	char *wide = alternating(300, 500), *narrow = alternating(300, 350);
	json_t *p, *g;
	tm_error e;
	(void)state;
	assert_int_equal(run1(puts_("ctl.csv", wide), NULL, &p, &e), 0);
	g = gpu(p, 0);
	/* not flat (45..55 C): settled from t=30 to the end */
	assert_int_equal((int)num(g, "load_samples"), 170);
	assert_near(num(g, "ambient_c"), 30, 1e-9);
	assert_near(num(g, "r_c_per_w"), 0.05, 1e-9);
	assert_string_equal(est(g, "r_c_per_w"), "");   /* its own fit */
	assert_near(num(g, "temp_fit_sd_c"), 0, 1e-9);  /* an exact line */
	/* never idle: 11 % of the largest power seen, 500 W, and the fit
	 * there, both marked */
	assert_near(num(g, "power_idle_w"), 55, 1e-9);
	assert_near(num(g, "temp_idle_c"), 32.8, 0.051);
	assert_non_null(strstr(est(g, "power_idle_w"), "11 % of 500.00 W"));
	assert_string_equal(est(g, "temp_idle_c"),
	                    "no idle samples: the fit at power_idle_w");
	json_decref(p);
	/* 50 W apart: too close to tell the slope from noise; no other GPU
	 * to pool with and no power limit, so the last-resort slope over the
	 * largest power seen, marked as such */
	assert_int_equal(run1(puts_("ctl-narrow.csv", narrow), NULL, &p, &e),
	                 0);
	g = gpu(p, 0);
	assert_int_equal((int)num(g, "load_samples"), 170);
	assert_near(num(g, "r_c_per_w"), rnd4(30.0 / 350), 1e-9);
	assert_non_null(strstr(est(g, "r_c_per_w"), "last resort"));
	assert_non_null(strstr(est(g, "ambient_c"), "last-resort"));
	json_decref(p);
	free(wide);
	free(narrow);
}

/* Without utilisation, load comes from power against the limit; the
 * reasons come from the microsecond counters. */
static void test_power_rule_and_counters(void **state)
{
	strbuf b;
	json_t *p, *g;
	tm_error e;
	(void)state;
	sb_init(&b);
	sb_add(&b, "timestamp,pci.bus_id,temperature.gpu,power.draw,"
	           "power.limit,clocks_event_reasons_counters.sw_power_cap "
	           "[us],clocks_event_reasons_counters.sw_thermal_slowdown "
	           "[us]\n");
	for (int t = 0; t < 100; t++)
		sb_addf(&b, "2026-01-01T00:%02d:%02dZ,00000000:3B:00.0,%d,%s,"
		        "400,%d,%d\n", t / 60, t % 60, t < 20 ? 35 : 70,
		        t < 20 ? "60" : "390", t < 20 ? 0 : (t - 20) * 500000,
		        t < 20 ? 0 : (t - 20) * 100000);
	assert_int_equal(run1(puts_("pw.csv", b.s), "n1", &p, &e), 0);
	g = gpu(p, 0);
	assert_string_equal(json_string_value(json_object_get(g, "pci_bus_id")),
	                    "0000:3b:00.0");
	assert_true(json_is_null(json_object_get(g, "index")));
	/* busy from t=20 (390 W >= 25 % of 400 W), settled t=50..99 */
	assert_int_equal((int)num(g, "load_samples"), 50);
	assert_near(num(g, "temp_load_c"), 70, 1e-9);
	assert_near(num(g, "power_cap_frac"), 0.5, 1e-9);
	assert_near(num(g, "thermal_slowdown_frac"), 0.1, 1e-9);
	json_decref(p);
	sb_free(&b);
}

/* Units in values, [N/A], the Active columns, the bitmask, a cut last
 * line, GPUs interleaved, uuid identity, derate with the clock step. */
static void test_smi_shapes(void **state)
{
	strbuf b;
	json_t *p;
	tm_error e;
	char *summ;
	const char *f;
	(void)state;
	sb_init(&b);
	sb_add(&b, "timestamp, uuid, temperature.gpu, power.draw [W], "
	           "clocks.current.sm [MHz], utilization.gpu [%], "
	           "clocks_throttle_reasons.active, "
	           "clocks_throttle_reasons.hw_thermal_slowdown, "
	           "temperature.gpu.tlimit\n");
	for (int t = 0; t < 60; t++)
		for (int gi = 0; gi < 2; gi++)
			sb_addf(&b, "2026/01/01 10:00:%02d.%03d, GPU-%d0000000-0000-"
			        "4000-8000-000000000000, %d C, %s, %d MHz, 100 %%, "
			        "%s, %s, %s\n", t, 100 * gi, gi, 50 + 10 * gi,
			        t % 7 ? "400.00 W" : "[N/A]", gi ? 1300 : 1410,
			        gi ? "0x0000000000000020" : "0x0000000000000004",
			        gi ? "Active" : "Not Active", t % 5 ? "20" : "N/A");
	sb_add(&b, "2026/01/01 10:01:00.000, GPU-0000");  /* cut */
	f = puts_("shapes.csv", b.s);
	assert_int_equal(run(&f, 1, "n2", &p, &e, &summ), 0);
	assert_non_null(strstr(summ, "\"cut_last_line\": 1"));
	assert_non_null(strstr(summ, "\"rows\": 120,"));
	for (int gi = 0; gi < 2; gi++) {
		json_t *g = gpu(p, gi);
		/* the whole log is one flat busy run: every sample counts */
		assert_int_equal((int)num(g, "load_samples"), 60);
		assert_near(num(g, "temp_load_c"), 50 + 10 * gi, 1e-9);
		assert_near(num(g, "power_load_w"), 400, 1e-9);
		assert_near(num(g, "headroom_c"), 20, 1e-9);
		assert_near(num(g, "thermal_slowdown_frac"), gi, 1e-9);
		assert_near(num(g, "power_cap_frac"), 1 - gi, 1e-9);
	}
	assert_near(num(gpu(p, 0), "derate"), 1, 1e-9);
	assert_near(num(gpu(p, 1), "derate"), 1.085, 1e-9);  /* 1410/1300 */
	json_decref(p);
	free(summ);
	sb_free(&b);
}

/* ---- malformed inputs ----------------------------------------------------- */

static void expect_fail(const char *name, const char *text, size_t len,
                        const char *want_fmt)
{
	json_t *p;
	tm_error e;
	char want[1024];
	const char *f = put(name, text, len);
	int rc = run1(f, "h", &p, &e);
	snprintf(want, sizeof want, want_fmt, f);
	if (rc != TM_EINPUT || strcmp(e.msg, want) != 0)
		fail_msg("%s: rc %d, message\n  got:  %s\n  want: %s", name, rc,
		         e.msg, want);
	assert_null(p);
}

static void test_malformed(void **state)
{
	static const char hdr[] = "timestamp, index, temperature.gpu\n";
	char *big;
	(void)state;
#define FAIL(n, t, w) expect_fail(n, t, sizeof t - 1, w)
	FAIL("cols.csv", "timestamp, index, temperature.gpu\n"
	     "2026/01/01 00:00:00.000, 0, 40\n"
	     "2026/01/01 00:00:01.000, 0\n"
	     "2026/01/01 00:00:02.000, 0, 40\n",
	     "%s:3: expected 3 fields, found 2");
	FAIL("skiprun.csv", "timestamp, index, foo, bar, temperature.gpu\n"
	     "2026/01/01 00:00:00.000, 0, 1\n"
	     "2026/01/01 00:00:01.000, 0, 1, 2, 40\n",
	     "%s:2: expected 5 fields, found 3");
	FAIL("more.csv", "timestamp, index, temperature.gpu\n"
	     "2026/01/01 00:00:00.000, 0, 40, 7\n",
	     "%s:2: expected 3 fields, found more");
	FAIL("nan.csv", "timestamp, index, temperature.gpu\n"
	     "2026/01/01 00:00:00.000, 0, hot\n",
	     "%s:2: field 3: expected a number, found \"hot\"");
	FAIL("unit.csv", "timestamp, index, temperature.gpu\n"
	     "2026/01/01 00:00:00.000, 0, 40 parsecs\n",
	     "%s:2: field 3: expected a number, found \"40 parsecs\"");
	FAIL("back.csv", "timestamp, index, temperature.gpu\n"
	     "2026/01/01 00:00:05.000, 0, 40\n"
	     "2026/01/01 00:00:05.000, 1, 40\n"
	     "2026/01/01 00:00:04.500, 0, 40\n",
	     "%s:4: time goes backwards for GPU h index 0 (0.500 s before "
	     "its previous sample)");
	FAIL("time.csv", "timestamp, index, temperature.gpu\n"
	     "2026/13/01 00:00:00.000, 0, 40\n",
	     "%s:2: field 1: expected a time (YYYY/MM/DD HH:MM:SS.mmm or ISO "
	     "8601), found \"2026/13/01 00:00:00.000\"");
	FAIL("empty.csv", "", "%s: empty file");
	FAIL("blank.csv", "\n \n\n", "%s: empty file");
	FAIL("nul.csv", "timestamp, index\0\x01\x02\n", "%s: binary data "
	     "(NUL bytes), not a telemetry log");
	FAIL("late-nul.csv", "timestamp, index, temperature.gpu\n"
	     "2026/01/01 00:00:00.000, 0, 4\0\n",
	     "%s:2: NUL byte: binary data, not a text telemetry log");
	FAIL("noheader.csv", "2026/01/01 00:00:00.000, 0, 40\n",
	     "%s:1: no header line; name the columns with --fields (the "
	     "--query-gpu list)");
	FAIL("names.csv", "alpha, beta\n1, 2\n", "%s:1: the header names no "
	     "column thermap reads (temperature.gpu, power.draw, clocks.sm, "
	     "utilization.gpu); found \"alpha, beta\"");
	FAIL("hdronly.csv", "timestamp, index, temperature.gpu\n",
	     "%s: no GPU samples to profile");
	FAIL("mask.csv", "timestamp, index, temperature.gpu, "
	     "clocks_event_reasons.active\n"
	     "2026/01/01 00:00:00.000, 0, 40, 0xZZ\n",
	     "%s:2: field 4: expected a bitmask like 0x0000000000000004, "
	     "found \"0xZZ\"");
	FAIL("mask2.csv", "timestamp, index, temperature.gpu, "
	     "clocks_event_reasons.active\n"
	     "2026/01/01 00:00:00.000, 0, 40, 0x00000000000\x10" "0004\n",
	     "%s:2: field 4: expected a bitmask like 0x0000000000000004, "
	     "found \"0x00000000000\x10" "0004\"");
	/* a 10 MB line */
	big = xmalloc(10u << 20);
	memcpy(big, hdr, sizeof hdr - 1);
	memset(big + sizeof hdr - 1, '7', (10u << 20) - sizeof hdr + 1);
	expect_fail("long.csv", big, 10u << 20,
	            "%s:2: line longer than 65536 bytes; not a telemetry log");
	/* garbage without structure: deterministic pseudo-random bytes */
	for (size_t i = 0, x = 12345; i < 4096; i++) {
		x = x * 1103515245 + 12345;
		big[i] = (char)(0x80 | (x >> 16));
	}
	expect_fail("garbage.bin", big, 4096, "%s:1: no header line; name "
	            "the columns with --fields (the --query-gpu list)");
	free(big);
#undef FAIL
}

/* A short row is fine only as the cut last line. */
static void test_cut_only_at_end(void **state)
{
	json_t *p;
	tm_error e;
	(void)state;
	assert_int_equal(run1(puts_("cut.csv",
	    "timestamp, index, temperature.gpu\n"
	    "2026/01/01 00:00:00.000, 0, 40\n"
	    "2026/01/01 00:00:01.000, 0"), "h", &p, &e), 0);
	assert_int_equal((int)num(gpu(p, 0), "samples"), 1);
	json_decref(p);
	/* ...and leaves no error behind for the next file to trip over */
	{
		char a[600], b[600], want[700];
		const char *files[2] = { a, b };
		snprintf(a, sizeof a, "%s", path);
		snprintf(b, sizeof b, "%s", puts_("bad.csv",
		         "timestamp, index, temperature.gpu\n"
		         "2026/01/01 00:00:00.000, 0, cold\n"));
		assert_int_equal(run(files, 2, "h", &p, &e, NULL), TM_EINPUT);
		snprintf(want, sizeof want, "%s:2: field 3: expected a number, "
		         "found \"cold\"", b);
		assert_string_equal(e.msg, want);
	}
}

/* ---- the threaded reader ----------------------------------------------- */

/* A replay of the recording, about 6 MB, with shifted times; optionally
 * (bad 1) one bad value far into it, or (bad 2) three rows whose time
 * goes backwards, for GPUs 2, 1 and 0 in that order, which threads pushing
 * different GPUs meet in any order. */
static const char *replay(const char *name, int bad)
{
	char *text;
	size_t len;
	tm_error e;
	strbuf b;
	const char *rows, *end;
	assert_int_equal(tm_read_file(H200, 1u << 30, &text, &len, &e), 0);
	rows = strchr(text, '\n') + 1;
	end = text + len;
	while (end > rows && end[-1] != '\n')
		end--;
	sb_init(&b);
	sb_add(&b, "timestamp, index, pci.bus_id, temperature.gpu, "
	           "temperature.memory, power.draw [W], power.limit [W], "
	           "clocks.current.sm [MHz], clocks.current.memory [MHz], "
	           "clocks.max.sm [MHz], utilization.gpu [%], "
	           "clocks_event_reasons.active, "
	           "clocks_event_reasons.sw_thermal_slowdown, "
	           "clocks_event_reasons.hw_thermal_slowdown, "
	           "clocks_event_reasons.sw_power_cap, "
	           "clocks_event_reasons.hw_slowdown, temperature.gpu.tlimit\n");
	for (int k = 0; k < 17; k++) {
		const char *p = rows;
		while (p < end) {
			const char *nl = strchr(p, '\n');
			/* "2026/11/21 12:MM:SS.mmm": replay k at hour k */
			sb_addf(&b, "2026/11/21 %02d%.*s\n", k,
			        (int)(nl - p - 13), p + 13);
			p = nl + 1;
		}
		if (bad == 1 && k == 15)
			sb_add(&b, "2026/11/21 15:59:59.000, 0, 00000000:00:06.0, "
			       "x\n");
		for (int g = 2; bad == 2 && k == 15 && g >= 0; g--)
			sb_addf(&b, "2026/11/21 15:00:00.000, %d, 00000000:00:0%d.0, "
			        "35, 33, 78.34, 700.00, 345, 3201, 1980, 0, "
			        "0x0000000000000001, Not Active, Not Active, "
			        "Not Active, Not Active, 52\n", g, 6 + g);
	}
	put(name, b.s, b.len);
	sb_free(&b);
	free(text);
	return path;
}

static void test_threads_same_result(void **state)
{
	char *seq_p = NULL, *seq_s = NULL, *par_p = NULL, *par_s = NULL;
	char f[512], msg_seq[sizeof ((tm_error *)0)->msg];
	tm_tele_input in = { NULL, "h200x4-a", NULL };
	tm_tele_opts o = { NAN, NAN, false, false };
	tm_error e = { 0, "" };
	(void)state;
	snprintf(f, sizeof f, "%s", replay("replay.csv", 0));
	in.file = f;
	setenv("THERMAP_THREADS", "1", 1);
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &seq_p, &seq_s,
	                                           &e), 0);
	setenv("THERMAP_THREADS", "3", 1);
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &par_p, &par_s,
	                                           &e), 0);
	assert_string_equal(seq_p, par_p);
	assert_string_equal(seq_s, par_s);
	if (!strstr(seq_s, "\"rows\": 40137,"))
		fail_msg("%s", seq_s);
	free(seq_p); free(seq_s); free(par_p); free(par_s);

	/* the same error, same line, either way */
	snprintf(f, sizeof f, "%s", replay("replay-bad.csv", 1));
	setenv("THERMAP_THREADS", "1", 1);
	memset(&e, 0, sizeof e);
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &seq_p, &seq_s,
	                                           &e), TM_EINPUT);
	snprintf(msg_seq, sizeof msg_seq, "%s", e.msg);
	if (!strstr(msg_seq, ":37778: field 4: expected a number, found \"x\""))
		fail_msg("%s", msg_seq);
	setenv("THERMAP_THREADS", "3", 1);
	memset(&e, 0, sizeof e);
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &par_p, &par_s,
	                                           &e), TM_EINPUT);
	assert_string_equal(e.msg, msg_seq);

	/* pushed by GPU: the first backward time in the file is the one */
	snprintf(f, sizeof f, "%s", replay("replay-back.csv", 2));
	setenv("THERMAP_THREADS", "1", 1);
	memset(&e, 0, sizeof e);
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &seq_p, &seq_s,
	                                           &e), TM_EINPUT);
	snprintf(msg_seq, sizeof msg_seq, "%s", e.msg);
	if (!strstr(msg_seq, ":37778: time goes backwards for GPU h200x4-a "
	                     "0000:00:08.0"))
		fail_msg("%s", msg_seq);
	for (int n = 2; n <= 4; n++) {
		char nt[8];
		snprintf(nt, sizeof nt, "%d", n);
		setenv("THERMAP_THREADS", nt, 1);
		memset(&e, 0, sizeof e);
		assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &par_p,
		                 &par_s, &e), TM_EINPUT);
		assert_string_equal(e.msg, msg_seq);
	}
	unsetenv("THERMAP_THREADS");
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_h200_matches_python),
		cmocka_unit_test(test_h200_what_the_data_shows),
		cmocka_unit_test(test_settling_and_fit),
		cmocka_unit_test(test_flat_start),
		cmocka_unit_test(test_fit_without_idle),
		cmocka_unit_test(test_power_rule_and_counters),
		cmocka_unit_test(test_smi_shapes),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_cut_only_at_end),
		cmocka_unit_test(test_threads_same_result),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
