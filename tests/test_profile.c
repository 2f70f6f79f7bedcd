/*
 * test_profile.c — `thermap profile` end to end through the library:
 * the real H200 recording against the independent Python derivation and
 * against what the recording shows; the settling rule, the fit and the
 * counters on hand-made logs with known answers; every malformed input
 * class with its exact message; --baseline and the one profile writer
 * (values kept, the same bytes as `thermap profile`); the threaded
 * reader against the line-by-line one on a multi-megabyte replay of the
 * recording; two readings in two threads at once; and a recording read
 * once and profiled by window (compare --replay) against reading the
 * files with each window.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ops/ops.h"
#include "telemetry/telemetry.h"
#include "testutil.h"

static char dir[128];  /* the temporary directory of this run */
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
	tm_tele_opts o = { NAN, NAN, false, false, 0 };
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

/* ---- fits against known parameters ------------------------------------- */

/* A uniform number in [-1, 1), the same sequence on every machine. */
static double noise(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(*x >> 11) / 4503599627370496.0 - 1;
}

/* A log of ngpu GPUs at 1 Hz for nsec seconds, every GPU following
 * T = a[g] + r·P + noise (uniform, ±h °C: SD h/√3). power(g, t) gives
 * the power; a negative value -P is an idle sample at P. With limit > 0
 * a power.limit column says it. */
static char *synth(int ngpu, int nsec, const double *a, double r, double h,
                   double limit, double (*power)(int g, int t))
{
	strbuf b;
	uint64_t x = 42;
	sb_init(&b);
	sb_addf(&b, "timestamp, index, temperature.gpu, power.draw [W], "
	        "utilization.gpu [%%]%s\n", limit > 0 ? ", power.limit [W]" : "");
	for (int t = 0; t < nsec; t++)
		for (int g = 0; g < ngpu; g++) {
			double P = power(g, t);
			bool idle = P < 0;
			P = fabs(P);
			sb_addf(&b, "2026/01/01 %02d:%02d:%02d.%03d, %d, %.2f, %.2f W, "
			        "%s", t / 3600, t / 60 % 60, t % 60, 10 * g, g,
			        a[g] + r * P + h * noise(&x), P, idle ? "0 %" : "100 %");
			if (limit > 0)
				sb_addf(&b, ", %.2f W", limit);
			sb_add(&b, "\n");
		}
	return b.s;
}

/* Idle for 60 s, then loaded at 400 and 600 W in turns of 7 s. */
static double p_idle_then_levels(int g, int t)
{
	return t < 60 ? -(75 + 2 * g) : (t / 7) % 2 ? 600 : 400;
}

/* Never idle: GPUs 0 and 1 swing 350/650 W (a fit of their own), GPUs
 * 2 and 3 hold 600 W give or take 4 W. */
static double p_mixed(int g, int t)
{
	static uint64_t x = 7;
	if (g < 2)
		return (t / 10) % 2 ? 650 : 350;
	return 600 + 4 * noise(&x);
}

/* Never idle, each GPU 90 W between its two levels: too little for a fit
 * of its own (FIT_SPAN_W), enough pooled (SD 45 W). */
static double p_narrow(int g, int t)
{
	return 450 + 40 * g + ((t / 10) % 2 ? 45 : -45);
}

/* At the power cap: 690 W give or take 2 W. */
static double p_capped(int g, int t)
{
	static uint64_t x = 9;
	(void)g;
	(void)t;
	return 690 + 2 * noise(&x);
}

static const double A4[4] = { 30, 33.5, 27, 36 };
#define R_TRUE 0.045
#define NOISE_C 0.6   /* uniform ±0.6 °C: SD 0.346 */

/* Each GPU's own fit recovers its ambient and the slope, and the
 * residual spread is the noise's. */
static void test_own_fit_recovers(void **state)
{
	char *text = synth(4, 400, A4, R_TRUE, NOISE_C, 700, p_idle_then_levels);
	json_t *p;
	tm_error e;
	(void)state;
	assert_int_equal(run1(puts_("own.csv", text), "own", &p, &e), 0);
	for (int g = 0; g < 4; g++) {
		json_t *x = gpu(p, g);
		/* standard errors: r ~3e-4 °C/W, ambient ~0.1 °C */
		assert_near(num(x, "r_c_per_w"), R_TRUE, 0.0015);
		assert_near(num(x, "ambient_c"), A4[g], 0.4);
		assert_near(num(x, "temp_fit_sd_c"), NOISE_C / sqrt(3), 0.06);
		assert_null(json_object_get(x, "estimated"));
	}
	json_decref(p);
	free(text);
}

/* GPUs without a fit of their own take the slope pooled over their
 * host's GPUs, with their own ambient. */
static void test_pooled_fit_recovers(void **state)
{
	char *mixed = synth(4, 400, A4, R_TRUE, NOISE_C, 700, p_mixed);
	char *narrow = synth(4, 400, A4, R_TRUE, NOISE_C, 0, p_narrow);
	json_t *p;
	tm_error e;
	(void)state;
	assert_int_equal(run1(puts_("mixed.csv", mixed), "mixed", &p, &e), 0);
	for (int g = 0; g < 4; g++) {
		json_t *x = gpu(p, g);
		assert_near(num(x, "r_c_per_w"), R_TRUE, 0.0015);
		/* the pooled slope's error times ~600 W, plus the mean noise */
		assert_near(num(x, "ambient_c"), A4[g], g < 2 ? 0.4 : 0.8);
		assert_near(num(x, "temp_fit_sd_c"), NOISE_C / sqrt(3), 0.06);
		if (g < 2) {
			assert_string_equal(est(x, "r_c_per_w"), "");
		} else {
			assert_non_null(strstr(est(x, "r_c_per_w"), "pooled: "
			                "one slope fitted over the settled samples "
			                "of the 4 GPUs of host mixed"));
			assert_non_null(strstr(est(x, "ambient_c"), "pooled"));
			assert_non_null(strstr(est(x, "temp_fit_sd_c"), "pooled"));
		}
		/* never idle: 11 % of the 700 W limit, the fit there */
		assert_near(num(x, "power_idle_w"), 77, 1e-9);
		assert_near(num(x, "temp_idle_c"),
		            num(x, "ambient_c") + num(x, "r_c_per_w") * 77, 0.051);
		assert_non_null(strstr(est(x, "power_idle_w"), "11 % of the power "
		                       "limit of 700.00 W"));
		assert_string_equal(est(x, "temp_idle_c"),
		                    "no idle samples: the fit at power_idle_w");
	}
	json_decref(p);
	/* no GPU has a fit of its own; pooled, all four recover it */
	assert_int_equal(run1(puts_("narrow.csv", narrow), "narrow", &p, &e), 0);
	for (int g = 0; g < 4; g++) {
		json_t *x = gpu(p, g);
		assert_near(num(x, "r_c_per_w"), R_TRUE, 0.002);
		assert_near(num(x, "ambient_c"), A4[g], 1.0);
		assert_non_null(strstr(est(x, "r_c_per_w"), "power spread "
		                       "within a GPU 45.0 W"));
	}
	json_decref(p);
	free(mixed);
	free(narrow);
}

/* Power held at the cap: nothing to fit a slope to, on any GPU; the
 * last resort is 30 °C over the power limit, said plainly. */
static void test_last_resort_slope(void **state)
{
	char *text = synth(4, 300, A4, R_TRUE, NOISE_C, 700, p_capped);
	json_t *p;
	tm_error e;
	(void)state;
	assert_int_equal(run1(puts_("capped.csv", text), "capped", &p, &e), 0);
	for (int g = 0; g < 4; g++) {
		json_t *x = gpu(p, g);
		double pl = num(x, "power_load_w");
		assert_near(num(x, "r_c_per_w"), rnd4(30.0 / 700), 1e-9);
		/* the ambient puts the line through the GPU's own means */
		assert_near(num(x, "ambient_c") + 30.0 / 700 * pl,
		            num(x, "temp_load_c"), 0.1);
		assert_non_null(strstr(est(x, "r_c_per_w"), "last resort, not "
		                       "fitted: 30 °C above ambient at the power "
		                       "limit of 700.00 W"));
		assert_non_null(strstr(est(x, "ambient_c"), "last-resort"));
	}
	json_decref(p);
	free(text);
}

/* ---- derate and its evidence ------------------------------------------ */

/* Two GPUs at full load for 60 s, flat at 50 °C (so every sample counts),
 * GPU 0 at clock0 and GPU 1 at clock1(t) MHz, with a reasons bitmask and
 * the power drawn (limit 700 W). */
static char *clocks_log(int clock0, int (*clock1)(int t), const char *mask,
                        double power)
{
	strbuf b;
	sb_init(&b);
	sb_addf(&b, "timestamp, index, temperature.gpu, power.draw [W], "
	        "power.limit [W], clocks.sm [MHz], utilization.gpu [%%]%s\n",
	        mask ? ", clocks_event_reasons.active" : "");
	for (int t = 0; t < 60; t++)
		for (int g = 0; g < 2; g++) {
			sb_addf(&b, "2026/01/01 00:%02d:%02d.%03d, %d, 50, %.2f W, "
			        "700.00 W, %d MHz, 100 %%", t / 60, t % 60, 100 * g, g,
			        power, g ? clock1(t) : clock0);
			if (mask)
				sb_addf(&b, ", %s", mask);
			sb_add(&b, "\n");
		}
	return b.s;
}

static int c1492(int t)
{
	(void)t;
	return 1492;
}

/* 1300 and 1684 MHz (mean 1492) in runs of 15 samples: a slow wander */
static int c_slow(int t)
{
	return (t / 15) % 2 ? 1684 : 1300;
}

/* the same two clocks every other sample: as noisy, but independent */
static int c_fast(int t)
{
	return t % 2 ? 1684 : 1300;
}

static json_t *profile_text(const char *name, char *text)
{
	json_t *p;
	tm_error e;
	assert_int_equal(run1(puts_(name, text), "d", &p, &e), 0);
	free(text);
	return p;
}

static const char *basis(json_t *g)
{
	return json_string_value(json_object_get(g, "derate_basis"));
}

/* The user report: both GPUs power-capped, 1525 vs 1492 MHz. */
static void test_derate_power_cap(void **state)
{
	json_t *p, *g;
	(void)state;
	p = profile_text("cap.csv", clocks_log(1525, c1492,
	                 "0x0000000000000004", 690));
	g = gpu(p, 1);
	assert_string_equal(basis(g), "power-cap");
	assert_near(num(g, "derate"), 1, 1e-9);
	/* the observed ratio, kept as uncertainty */
	assert_near(num(g, "derate_sd"), rnd4(1525.0 / 1492 - 1), 1e-9);
	g = gpu(p, 0);
	assert_string_equal(basis(g), "power-cap");
	assert_near(num(g, "derate"), 1, 1e-9);
	/* constant clocks: one clock step is the uncertainty */
	assert_near(num(g, "derate_sd"), rnd4(15.0 / 1525), 1e-9);
	json_decref(p);
	/* without reason columns: 690 W is over 95 % of the 700 W limit */
	p = profile_text("cap-power.csv", clocks_log(1525, c1492, NULL, 690));
	assert_string_equal(basis(gpu(p, 1)), "power-cap");
	assert_near(num(gpu(p, 1), "derate"), 1, 1e-9);
	json_decref(p);
}

/* Thermal slowdown: the clock ratio is a real speed loss. */
static void test_derate_thermal_and_clock(void **state)
{
	json_t *p, *g;
	(void)state;
	p = profile_text("hot.csv", clocks_log(1525, c1492,
	                 "0x0000000000000020", 690));
	g = gpu(p, 1);
	assert_string_equal(basis(g), "thermal");
	assert_near(num(g, "derate"), 1.022, 1e-9);
	assert_near(num(g, "derate_sd"), rnd4(1525.0 / 1492 * 15 / 1492), 1e-9);
	json_decref(p);
	/* neither capped nor hot, below 95 % of the limit: the clocks */
	p = profile_text("clk.csv", clocks_log(1525, c1492,
	                 "0x0000000000000000", 500));
	assert_string_equal(basis(gpu(p, 1)), "clock");
	assert_near(num(gpu(p, 1), "derate"), 1.022, 1e-9);
	json_decref(p);
}

/* The same mean clocks and spread: a slow wander leaves few independent
 * samples and the 2 % difference inside the uncertainty (derate 1);
 * independent samples pin the mean down and the difference stands. */
static void test_derate_inside_uncertainty(void **state)
{
	json_t *p, *g;
	(void)state;
	p = profile_text("slow.csv", clocks_log(1525, c_slow, NULL, 500));
	g = gpu(p, 1);
	assert_string_equal(basis(g), "clock");
	assert_near(num(g, "sm_clock_load_mhz"), 1492, 1e-9);
	assert_near(num(g, "derate"), 1, 1e-9);
	assert_true(num(g, "derate_sd") > 0.05);
	json_decref(p);
	p = profile_text("fast.csv", clocks_log(1525, c_fast, NULL, 500));
	g = gpu(p, 1);
	assert_near(num(g, "derate"), 1.022, 1e-9);
	assert_true(num(g, "derate_sd") < 0.022);
	json_decref(p);
}

/* About 1500 MHz, wandering: each sample 0.8 of the last one's offset
 * plus a fresh ±60 MHz */
static int c_wander(int t)
{
	uint64_t x = 3;
	double y = 0;
	for (int i = 0; i <= t; i++)
		y = 0.8 * y + 60 * noise(&x);
	return 1500 + (int)lround(y);
}

/* derate_sd by the formula of docs/profile.md, computed here from the
 * clocks: the streaming sums, the lag-1 pairs and the merge of the log's
 * first 30 s (settled late, as the first run is flat) must give it. */
static void test_derate_sd_formula(void **state)
{
	double x[60], m = 0, ss = 0, c1 = 0, rho, neff, se, q, sd;
	json_t *p;
	(void)state;
	for (int t = 0; t < 60; t++) {
		x[t] = c_wander(t);
		m += x[t] / 60;
	}
	for (int t = 0; t < 60; t++)
		ss += (x[t] - m) * (x[t] - m);
	for (int t = 1; t < 60; t++)
		c1 += (x[t - 1] - m) * (x[t] - m) / 59;
	rho = fmax(0, c1 / (ss / 60));
	neff = fmax(1, 60 * (1 - rho) / (1 + rho));
	se = sqrt(ss / 59 / neff);
	q = 1700.0 / m;
	/* GPU 0 holds 1700 MHz: no spread of its own */
	sd = fmax(q * se / m, q * 15 / m);
	assert_true(rho > 0.3 && se > 15);   /* the formula, not the floor */
	p = profile_text("wander.csv", clocks_log(1700, c_wander, NULL, 500));
	assert_near(num(gpu(p, 1), "derate_sd"), rnd4(sd), 1e-9);
	assert_near(num(gpu(p, 1), "derate"),
	            round(q * 1000) / 1000 - 1 <= rnd4(sd) ? 1
	            : round(q * 1000) / 1000, 1e-9);
	json_decref(p);
}

/* ---- training-only logs ------------------------------------------------- */

/* Builds the planner's problem from a profile text; returns its code. */
static int plan_with(const char *prof, const char *cluster, const char *job,
                     tm_error *e)
{
	tm_cluster *c = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	tm_profile *p = NULL;
	tm_problem *pb = NULL;
	int rc;
	memset(e, 0, sizeof *e);
	assert_int_equal(tm_cluster_load(cluster, &c, e), 0);
	assert_int_equal(tm_job_load(job, &j, e), 0);
	assert_int_equal(tm_policy_default(&pol, e), 0);
	rc = tm_profile_loadb("window.json", prof, strlen(prof), &p, e);
	if (!rc)
		rc = tm_problem_new(c, p, j, pol, false, &pb, e);
	tm_problem_free(pb);
	tm_profile_free(p);
	tm_policy_free(pol);
	tm_job_free(j);
	tm_cluster_free(c);
	return rc;
}

/* Every entry with full-load samples has a thermal model, each estimate
 * marked; the planner takes the profile. */
static void check_plannable(json_t *p)
{
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(p, "gpus"), i, g) {
		if (isnan(num(g, "temp_load_c")))
			continue;
		assert_false(isnan(num(g, "ambient_c")));
		assert_false(isnan(num(g, "r_c_per_w")));
		assert_false(isnan(num(g, "power_idle_w")));
		assert_false(isnan(num(g, "power_load_w")));
		assert_false(isnan(num(g, "temp_idle_c")));
		/* never idle here: both idle fields are estimates */
		assert_non_null(strstr(est(g, "power_idle_w"), "no idle samples"));
		assert_non_null(strstr(est(g, "temp_idle_c"), "no idle samples"));
	}
}

static void test_training_only_plans(void **state)
{
	static const char *const nano = "fixtures/telemetry/gpu_metrics_8gpu_"
		"power-temp_nanoGPT-pr643_3ebdf094.csv";
	tm_tele_input in = { "fixtures/real/h200x4-vm/telemetry-identity.csv",
	                     "vm", NULL };
	tm_tele_opts o = { 25, 115, true, true, 0 };   /* the job running */
	char *prof = NULL, *summ = NULL;
	json_t *p, *g;
	tm_error e;
	size_t i;
	(void)state;
	assert_int_equal(run1(nano, "vp-h100", &p, &e), 0);
	check_plannable(p);
	prof = json_dumps(p, 0);
	assert_int_equal(plan_with(prof, "fixtures/nanogpt-h100x8/cluster.json",
	                           "fixtures/nanogpt-h100x8/job-pp8.json", &e), 0);
	free(prof);
	/* the same profile without the estimates is what plan refused */
	json_array_foreach(json_object_get(p, "gpus"), i, g) {
		json_object_set_new(g, "power_idle_w", json_null());
		json_object_set_new(g, "temp_idle_c", json_null());
		json_object_del(g, "estimated");
	}
	prof = json_dumps(p, 0);
	assert_int_equal(plan_with(prof, "fixtures/nanogpt-h100x8/cluster.json",
	                           "fixtures/nanogpt-h100x8/job-pp8.json", &e),
	                 TM_EINPUT);
	assert_non_null(strstr(e.msg, "no thermal model"));
	free(prof);
	json_decref(p);

	/* a window cut from a running job: no idle, power steady */
	memset(&e, 0, sizeof e);
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &prof, &summ,
	                                           &e), 0);
	p = json_loads(prof, 0, NULL);
	assert_non_null(p);
	check_plannable(p);
	assert_int_equal(plan_with(prof, "fixtures/real/h200x4-vm/cluster.json",
	                           "fixtures/real/h200x4-vm/job.json", &e), 0);
	json_decref(p);
	free(prof);
	free(summ);
}

/* Without a power column there is no fit: the idle temperature is the
 * lowest the GPU showed, marked, and the planner has its two levels. */
static void test_no_power_column(void **state)
{
	strbuf b;
	json_t *p, *g;
	tm_error e;
	(void)state;
	sb_init(&b);
	sb_add(&b, "timestamp, index, temperature.gpu, utilization.gpu [%]\n");
	for (int t = 0; t < 120; t++)
		sb_addf(&b, "2026/01/01 00:%02d:%02d.000, 0, %d, 100 %%\n", t / 60,
		        t % 60, 40 + (t < 60 ? t / 3 : 20));
	assert_int_equal(run1(puts_("nopower.csv", b.s), "np", &p, &e), 0);
	g = gpu(p, 0);
	/* settled from 30 s: 50..59 °C rising, then 60 */
	assert_near(num(g, "temp_load_c"), 58.2, 0.051);
	assert_near(num(g, "temp_idle_c"), 40, 1e-9);
	assert_true(isnan(num(g, "power_idle_w")));
	assert_non_null(strstr(est(g, "temp_idle_c"), "lowest temperature"));
	json_decref(p);
	sb_free(&b);
}

/* GPUs are pooled by model when the log names it: the model whose power
 * swings gets a pooled slope, the steady one the last resort, though one
 * host holds all four. */
static void test_pooled_by_model(void **state)
{
	strbuf b;
	json_t *p;
	tm_error e;
	uint64_t x = 5;
	(void)state;
	sb_init(&b);
	sb_add(&b, "timestamp, index, name, temperature.gpu, power.draw [W], "
	           "utilization.gpu [%], power.limit [W]\n");
	for (int t = 0; t < 200; t++)
		for (int g = 0; g < 4; g++) {
			/* model A swings 90 W about its level, model B holds */
			double P = g < 2 ? 450 + 40 * g + ((t / 10) % 2 ? 45 : -45)
			                 : 600 + 3 * noise(&x);
			sb_addf(&b, "2026/01/01 00:%02d:%02d.%03d, %d, %s, %.2f, "
			        "%.2f W, 100 %%, 700.00 W\n", t / 60, t % 60, g, g,
			        g < 2 ? "Model A" : "Model B",
			        A4[g] + R_TRUE * P + 0.3 * noise(&x), P);
		}
	assert_int_equal(run1(puts_("models.csv", b.s), "m", &p, &e), 0);
	for (int g = 0; g < 2; g++)
		assert_non_null(strstr(est(gpu(p, g), "r_c_per_w"), "pooled: one "
		                       "slope fitted over the settled samples of "
		                       "the 2 GPUs of model Model A"));
	for (int g = 2; g < 4; g++)
		assert_non_null(strstr(est(gpu(p, g), "r_c_per_w"), "last resort"));
	json_decref(p);
	sb_free(&b);
}

/* ---- warnings ------------------------------------------------------------ */

static char warnings[2048];

static void on_warn(void *ud, const char *msg)
{
	(void)ud;
	strncat(warnings, msg, sizeof warnings - strlen(warnings) - 2);
	strcat(warnings, "\n");
}

static void test_warnings(void **state)
{
	char want[2048];
	const char *f;
	json_t *p;
	tm_error e;
	(void)state;
	f = puts_("gpu-w01.csv", "timestamp, index, pci.bus_id, "
	          "temperature.gpu\n2026/01/01 00:00:00.000, 0, "
	          "00000000:00:06.0, 40\n");
	tm_set_warn(on_warn, NULL);
	warnings[0] = '\0';
	assert_int_equal(run1(f, NULL, &p, &e), 0);
	json_decref(p);
	snprintf(want, sizeof want, "%s: no --host and no Hostname label: "
	         "its GPUs are taken to be on host \"gpu-w01\", from the file's "
	         "name; give the host with --host NAME before the file\n"
	         "%s: no GPU UUID: its GPUs are known by host and PCI bus id "
	         "only, so a profile of another machine with the same bus ids "
	         "would match them too, while a profile belongs to a physical "
	         "GPU; log uuid as well (nvidia-smi --query-gpu=uuid,...)\n",
	         f, f);
	assert_string_equal(warnings, want);
	/* once per reading: the same file given twice warns once */
	warnings[0] = '\0';
	{
		const char *twice[2] = { f, f };
		assert_int_equal(run(twice, 2, NULL, &p, &e, NULL), 0);
	}
	json_decref(p);
	assert_string_equal(warnings, want);
	/* --host given and a UUID logged: nothing to say */
	warnings[0] = '\0';
	f = puts_("w02.csv", "timestamp, index, uuid, temperature.gpu\n"
	          "2026/01/01 00:00:00.000, 0, "
	          "GPU-a0000000-0000-4000-8000-000000000000, 40\n");
	assert_int_equal(run1(f, "h", &p, &e), 0);
	json_decref(p);
	assert_string_equal(warnings, "");
	tm_set_warn(NULL, NULL);
}

/* ---- --baseline ------------------------------------------------------------ */

/* A coupling goes with the fit it was fitted with: a GPU that takes the
 * earlier profile's fit takes its coupling (or none with it), and one
 * that keeps its own fit keeps its own coupling. */
static void test_baseline_coupling(void **state)
{
#define COUP(c) "\"coupling\": {\"how\": \"h\", \"from\": [{\"index\": 9, " \
	"\"c_per_w\": " c "}], \"points\": []}"
	static const char win[] = "{\"format\": \"thermap.profile/1\", "
		"\"gpus\": ["
		"{\"host\": \"h\", \"index\": 0, \"temp_load_c\": 60.0, "
		"\"ambient_c\": 30.0, \"r_c_per_w\": 0.04, " COUP("0.001") "},"
		"{\"host\": \"h\", \"index\": 1, \"temp_load_c\": null, "
		"\"ambient_c\": 31.0, \"r_c_per_w\": 0.0429, " COUP("0.002") ", "
		"\"estimated\": {\"r_c_per_w\": \"r\"}},"
		"{\"host\": \"h\", \"index\": 2, \"temp_load_c\": null, "
		"\"ambient_c\": null, \"r_c_per_w\": null}]}";
	static const char base[] = "{\"format\": \"thermap.profile/1\", "
		"\"gpus\": ["
		"{\"host\": \"h\", \"index\": 0, \"temp_load_c\": 61.0, "
		"\"ambient_c\": 31.8, \"r_c_per_w\": 0.0412, " COUP("0.003") "},"
		"{\"host\": \"h\", \"index\": 1, \"temp_load_c\": 62.0, "
		"\"ambient_c\": 32.0, \"r_c_per_w\": 0.041},"
		"{\"host\": \"h\", \"index\": 2, \"temp_load_c\": 63.0, "
		"\"ambient_c\": 33.0, \"r_c_per_w\": 0.039, " COUP("0.004") "}]}";
#undef COUP
	char *out;
	json_t *p, *g;
	int n;
	(void)state;
	out = tm_profile_fill(win, base, false, &n);
	p = json_loads(out, 0, NULL);
	assert_non_null(p);
	/* GPU 0 loaded here: its own fit, its own coupling */
	g = json_object_get(json_object_get(gpu(p, 0), "coupling"), "from");
	assert_near(json_number_value(json_object_get(json_array_get(g, 0),
	                                              "c_per_w")), 0.001, 1e-12);
	/* GPU 1 takes a fit without a coupling: its window's goes */
	assert_near(num(gpu(p, 1), "ambient_c"), 32, 1e-9);
	assert_null(json_object_get(gpu(p, 1), "coupling"));
	/* GPU 2 takes the fit and its coupling, and says so */
	g = json_object_get(json_object_get(gpu(p, 2), "coupling"), "from");
	assert_near(json_number_value(json_object_get(json_array_get(g, 0),
	                                              "c_per_w")), 0.004, 1e-12);
	assert_non_null(strstr(out, "\"coupling\"\n"));
	json_decref(p);
	free(out);
}

static void test_baseline_fill(void **state)
{
	/* a window: GPU 0 loaded, never idle (estimated idle level); GPU 1
	 * never at full load (no load level, a last-resort fit) */
	static const char win[] = "{\"format\": \"thermap.profile/1\", "
		"\"gpus\": ["
		"{\"host\": \"h\", \"index\": 0, \"temp_idle_c\": 33.0, "
		"\"temp_load_c\": 60.0, \"power_idle_w\": 77, \"power_load_w\": 690, "
		"\"ambient_c\": 30.0, \"r_c_per_w\": 0.0429, \"temp_fit_sd_c\": 0.5, "
		"\"derate\": 1, \"derate_sd\": 0.01, \"derate_basis\": \"power-cap\", "
		"\"estimated\": {\"temp_idle_c\": \"t\", \"power_idle_w\": \"p\", "
		"\"ambient_c\": \"a\", \"r_c_per_w\": \"r\"}},"
		"{\"host\": \"h\", \"index\": 1, \"temp_idle_c\": 35.0, "
		"\"temp_load_c\": null, \"power_idle_w\": 77, \"power_load_w\": null, "
		"\"ambient_c\": 31.0, \"r_c_per_w\": 0.0429, \"temp_fit_sd_c\": 0.4, "
		"\"derate\": null, \"derate_sd\": null, \"derate_basis\": \"none\", "
		"\"estimated\": {\"temp_idle_c\": \"t\", \"power_idle_w\": \"p\", "
		"\"ambient_c\": \"a\", \"r_c_per_w\": \"r\", "
		"\"temp_fit_sd_c\": \"s\"}}]}";
	/* the earlier profile measured both idle; GPU 1's fit was pooled */
	static const char base[] = "{\"format\": \"thermap.profile/1\", "
		"\"gpus\": ["
		"{\"host\": \"h\", \"index\": 0, \"temp_idle_c\": 35.0, "
		"\"temp_load_c\": 61.0, \"power_idle_w\": 78.5, "
		"\"power_load_w\": 691, \"ambient_c\": 31.8, \"r_c_per_w\": 0.0412, "
		"\"temp_fit_sd_c\": 0.78, \"derate\": 1, \"derate_sd\": 0.0102, "
		"\"derate_basis\": \"power-cap\"},"
		"{\"host\": \"h\", \"index\": 1, \"temp_idle_c\": 36.0, "
		"\"temp_load_c\": 65.2, \"power_idle_w\": 78.7, "
		"\"power_load_w\": 691.7, \"ambient_c\": 35.0, \"r_c_per_w\": 0.045, "
		"\"temp_fit_sd_c\": 2.78, \"derate\": 1.03, \"derate_sd\": 0.012, "
		"\"derate_basis\": \"thermal\", "
		"\"estimated\": {\"r_c_per_w\": \"pooled\", \"ambient_c\": \"pa\"}}"
		"]}";
	char *out, *again;
	json_t *p, *g;
	int n, n2;
	(void)state;
	out = tm_profile_fill(win, base, false, &n);
	again = tm_profile_fill(win, base, false, &n2);
	assert_string_equal(out, again);   /* deterministic */
	p = json_loads(out, 0, NULL);
	assert_non_null(p);
	/* GPU 0: measured idle replaces the estimate; its own fresh load
	 * level and (estimated) fit stay */
	g = gpu(p, 0);
	assert_near(num(g, "temp_idle_c"), 35, 1e-9);
	assert_near(num(g, "power_idle_w"), 78.5, 1e-9);
	assert_near(num(g, "r_c_per_w"), 0.0429, 1e-9);
	assert_string_equal(est(g, "temp_idle_c"), "");
	assert_string_equal(est(g, "power_idle_w"), "");
	assert_string_equal(est(g, "r_c_per_w"), "r");
	{
		json_t *want = json_pack("[ss]", "temp_idle_c", "power_idle_w");
		assert_true(json_equal(json_object_get(g, "from_baseline"), want));
		json_decref(want);
	}
	/* GPU 1: no load level here: the load level, the derate with its
	 * uncertainty and basis, the fit with its spread and the earlier
	 * profile's marks */
	g = gpu(p, 1);
	assert_near(num(g, "temp_load_c"), 65.2, 1e-9);
	assert_near(num(g, "derate"), 1.03, 1e-9);
	assert_near(num(g, "derate_sd"), 0.012, 1e-9);
	assert_string_equal(basis(g), "thermal");
	assert_near(num(g, "r_c_per_w"), 0.045, 1e-9);
	assert_near(num(g, "temp_fit_sd_c"), 2.78, 1e-9);
	assert_string_equal(est(g, "r_c_per_w"), "pooled");
	assert_string_equal(est(g, "ambient_c"), "pa");
	assert_string_equal(est(g, "temp_fit_sd_c"), "");
	assert_string_equal(est(g, "power_idle_w"), "");
	/* GPU 0: 2; GPU 1: idle 2, load 2, derate 3, fit 3 */
	assert_int_equal(n, 2 + 10);
	json_decref(p);
	free(out);
	free(again);
	/* compare --replay's idle-only filling: the idle estimate goes, the
	 * rest stays */
	out = tm_profile_fill(win, base, true, &n);
	p = json_loads(out, 0, NULL);
	g = gpu(p, 1);
	assert_near(num(g, "power_idle_w"), 78.7, 1e-9);
	assert_true(isnan(num(g, "temp_load_c")));
	assert_string_equal(est(g, "r_c_per_w"), "r");
	assert_null(json_object_get(g, "from_baseline"));
	json_decref(p);
	free(out);
}

/* --baseline with nothing to take writes the window's profile byte for
 * byte as `thermap profile` does: one writer. */
static void test_baseline_same_writer(void **state)
{
	static const char other[] = "{\"format\": \"thermap.profile/1\", "
		"\"gpus\": [{\"host\": \"elsewhere\", \"index\": 0, "
		"\"temp_idle_c\": 30}]}";
	tm_tele_input in = { H200, "h200x4-a", NULL };
	tm_tele_opts o = { 205, 290, true, true, 0 };
	tm_error e = { 0, "" };
	char *prof, *summ, *out;
	int n = -1;
	(void)state;
	assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &prof, &summ,
	                                           &e), 0);
	out = tm_profile_fill(prof, other, false, &n);
	assert_int_equal(n, 0);
	assert_string_equal(out, prof);
	free(out);
	free(prof);
	free(summ);
}

/* The writer keeps what it loaded: numbers a person wrote with more
 * digits than the field's decimals, the lines of estimated and
 * calibrated, from_baseline; and writing what it wrote changes nothing. */
static void test_writer_keeps_values(void **state)
{
	static const char text[] = "{\"format\": \"thermap.profile/1\", "
		"\"gpus\": [{\"host\": \"h\", \"pci_bus_id\": \"00000000:00:06.0\", "
		"\"index\": 3, \"samples\": 1234, \"span_s\": 59.4545, "
		"\"temp_idle_c\": 36.7634, \"temp_load_c\": 59.2, "
		"\"power_load_w\": 691.875, \"r_c_per_w\": 0.0363451, "
		"\"ambient_c\": 1e-7, \"derate\": 1.0005, \"derate_sd\": "
		"0.123456789012345678, \"power_wait_w\": 400.125, "
		"\"derate_basis\": \"job\", "
		"\"calibrated\": {\"power_wait_w\": \"fitted\"}, "
		"\"from_baseline\": [\"temp_idle_c\", \"derate_basis\"], "
		"\"estimated\": {\"r_c_per_w\": \"pooled\", \"temp_idle_c\": \"t\"}"
		"}]}";
	tm_profile *p, *q;
	tm_error e = { 0, "" };
	char *out, *again;
	(void)state;
	assert_int_equal(tm_profile_loadb("p", text, strlen(text), &p, &e), 0);
	out = tm_profile_text(p);
	assert_int_equal(tm_profile_loadb("q", out, strlen(out), &q, &e), 0);
	assert_int_equal(q->ngpus, 1);
	{
		const tm_gpu_profile *a = &p->gpus[0], *b = &q->gpus[0];
		const double va[] = { a->samples, a->span_s, a->temp_idle_c,
			a->temp_load_c, a->power_load_w, a->r_c_per_w, a->ambient_c,
			a->derate, a->derate_sd, a->power_wait_w, a->headroom_c };
		const double vb[] = { b->samples, b->span_s, b->temp_idle_c,
			b->temp_load_c, b->power_load_w, b->r_c_per_w, b->ambient_c,
			b->derate, b->derate_sd, b->power_wait_w, b->headroom_c };
		for (size_t i = 0; i < sizeof va / sizeof va[0]; i++)
			assert_true(va[i] == vb[i] || (isnan(va[i]) && isnan(vb[i])));
		assert_true(b->r_c_per_w == 0.0363451 && b->ambient_c == 1e-7 &&
		            b->derate_sd == 0.123456789012345678);
		assert_string_equal(b->pci_bus_id, "0000:00:06.0");
		assert_int_equal(b->index, 3);
		assert_int_equal(b->derate_basis, TM_BASIS_JOB);
		assert_true(b->estimated == a->estimated &&
		            b->calibrated == a->calibrated);
		assert_string_equal(b->estimated_how[TM_PF_R_C_PER_W], "pooled");
		assert_string_equal(b->estimated_how[TM_PF_TEMP_IDLE_C], "t");
		assert_string_equal(b->calibrated_how[TM_PF_POWER_WAIT_W],
		                    "fitted");
		assert_int_equal(b->nfrom_baseline, 2);
		assert_string_equal(b->from_baseline[1], "derate_basis");
	}
	/* the field's decimals where they say it all, else every digit */
	assert_non_null(strstr(out, "\"temp_idle_c\": 36.7634,"));
	assert_non_null(strstr(out, "\"temp_load_c\": 59.2,"));
	assert_non_null(strstr(out, "\"samples\": 1234,"));
	assert_non_null(strstr(out, "\"derate_sd\": 0.12345678901234568,"));
	/* the writer's order: marks after the numbers, estimated first */
	assert_true(strstr(out, "\"estimated\"") < strstr(out,
	            "\"from_baseline\"") && strstr(out, "\"from_baseline\"") <
	            strstr(out, "\"calibrated\""));
	again = tm_profile_text(q);
	assert_string_equal(again, out);
	free(out);
	free(again);
	tm_profile_free(p);
	tm_profile_free(q);
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
	     "found \"0x00000000000\\x10" "0004\"");  /* the byte shown */
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

/* dcgmi dmon (docs/profile.md, "dcgmi dmon"): the header's columns, then
 * logs laid out as DeviceMonitor.cpp prints them, and what is refused. */
#define DH "#Entity    TMPTR        POWER             PMLMT             " \
           "EPLMT             DVCCTR                      GPUTL             \n" \
           "ID          C            W                 W                 W" \
           "                                                              \n"

static void test_dcgmi(void **state)
{
	tl_dcgmi_col c[8];
	static const char h[] = "#Entity   TMPTR        FBUSD    DVCCTR  ";
	json_t *p, *g;
	tm_error e;
	char *summ;
	const char *f;
	(void)state;

	/* the header: where each column starts, and what it fills */
	assert_int_equal(tl_dcgmi_header(h, sizeof h - 1, c, 8), 3);
	assert_int_equal(c[0].start, 10);
	assert_int_equal(c[0].field, TL_TEMP);
	assert_int_equal(c[1].start, 23);
	assert_int_equal(c[1].field, TL_DCGMI_UNUSED);
	assert_int_equal(c[2].field, TL_DCGMI_REASONS);
	assert_int_equal(tl_dcgmi_header(h, sizeof h - 1, c, 2), -1);
	assert_int_equal(tl_dcgmi_header("#Entity", 7, c, 8), 0);
	assert_int_equal(tl_dcgmi_header("#EntityX TMPTR", 14, c, 8), -1);
	assert_int_equal(tl_dcgmi_header("# gpu pwr", 9, c, 8), -1);

	/* two passes, the second after a repeated header; a MIG instance
	 * and a CPU core skipped; N/A and a value the row lacks (empty
	 * cell) are no value; EPLMT wins over PMLMT, which fills in */
	f = puts_("dcgmi-ok.log", DH
	    "GPU 0      40           100.500           400.000           "
	    "350.000           4                           90                \n"
	    "GPU-I 0    N/A          N/A               N/A               "
	    "N/A               N/A                         N/A               \n"
	    "CPU Core 3 N/A          N/A               N/A               "
	    "N/A               N/A                         N/A               \n"
	    "GPU 1      N/A          120.000           400.000           "
	    "N/A               32                          99                \n"
	    DH
	    "GPU 0      41           101.000           400.000           "
	    "350.000           0                           90                \n"
	    "GPU 1      50                             400.000           "
	    "N/A               0                           99                \n"
	    "\n\ndmon was stopped due to receiving a signal\n");
	assert_int_equal(run(&f, 1, "h", &p, &e, &summ), 0);
	g = gpu(p, 0);
	assert_near(num(g, "samples"), 2, 0);
	assert_near(num(g, "span_s"), 1, 0);
	assert_near(num(g, "power_limit_w"), 350, 0);
	g = gpu(p, 1);
	assert_near(num(g, "samples"), 2, 0);
	assert_near(num(g, "power_limit_w"), 400, 0);
	assert_non_null(strstr(summ, "\"format\": \"dcgmi dmon\""));
	assert_non_null(strstr(summ, "\"skipped\": {\"blank_value\": 3, "
	                       "\"not_a_gpu\": 2}"));
	assert_non_null(strstr(summ, "\"rows\": 6"));
	json_decref(p);
	free(summ);

	/* a GPU seen again starts the next sample, header or not; the
	 * interval stretches them */
	{
		tm_tele_input in = { NULL, "h", NULL };
		tm_tele_opts o = { NAN, NAN, false, false, 250 };
		char *prof = NULL;
		in.file = puts_("dcgmi-pass.log", DH
		    "GPU 0 40 100 400 N/A 0 90\nGPU 0 40 100 400 N/A 0 90\n"
		    "GPU 0 40 100 400 N/A 0 90\n");
		assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &prof,
		                                           &summ, &e), 0);
		assert_non_null(strstr(summ, "\"span_s\": 0.5\n"));
		free(prof);
		free(summ);
	}

#define FAIL(n, t, w) expect_fail(n, t, sizeof t - 1, w)
	FAIL("dcgmi-cut.log", DH "GPU 0      40           100.500",
	     "%s:3: expected 6 fields, found 2");
	FAIL("dcgmi-more.log", DH "GPU 0 40 100 400 350 0 90 7\n",
	     "%s:3: expected 6 fields, found 7, not in the header's columns");
	FAIL("dcgmi-word.log", DH "GPU 0 hot 100 400 350 0 90\n",
	     "%s:3: field 1 (TMPTR): expected a number or N/A, found \"hot\"");
	FAIL("dcgmi-mask.log", DH "GPU 0 40 100 400 350 -4 90\n",
	     "%s:3: field 5 (DVCCTR): expected a bitmask, an integer from 0, "
	     "found \"-4\"");
	FAIL("dcgmi-gpu.log", DH "GPU 65536 40 100 400 350 0 90\n",
	     "%s:3: gpu: expected an index from 0 to 65535, found \"65536\"");
	FAIL("dcgmi-gpu2.log", DH "GPU x1 40 100 400 350 0 90\n",
	     "%s:3: gpu: expected an index from 0 to 65535, found \"x1\"");
	FAIL("dcgmi-range.log", DH "GPU 0 400 100 400 350 0 90\n",
	     "%s:3: temperature 400 °C is out of range; expected -50 to 200 °C");
	FAIL("dcgmi-junk.log", DH "Error: Host engine connection invalid\n",
	     "%s:3: expected a dcgmi dmon row such as \"GPU 0 ...\", found "
	     "\"Error: Host engine c\"");
	FAIL("dcgmi-none.log", "#Entity   FBUSD   XIDER\nGPU 0 1 2\n",
	     "%s:1: dcgmi dmon header without a field thermap reads; log "
	     "them with dcgmi dmon -e 150,155,160,100,110,112,203");
	FAIL("dcgmi-hdr.log", DH "#Entry TMPTR\n",
	     "%s:3: expected a \"#Entity ...\" header of at most 128 fields");
	FAIL("dcgmi-hdronly.log", DH, "%s: no GPU samples to profile");
	FAIL("dcgmi-nul.log", DH "GPU 0 4\0 100 400 350 0 90\n",
	     "%s:3: NUL byte: binary data, not a text telemetry log");
	/* a header that changes mid-file names the columns from there on */
	FAIL("dcgmi-change.log", DH "GPU 0 40 100 400 350 0 90\n"
	     "#Entity   POWER\nGPU 0 40 100\n",
	     "%s:5: expected 1 fields, found 2, not in the header's columns");
#undef FAIL
}
#undef DH

/* One row of one column of a log: the value is read (rc 0) or refused
 * with the message of want_fmt. */
static void one_value(const char *col, const char *v, const char *want_fmt)
{
	char text[512];
	int n = snprintf(text, sizeof text, "timestamp, index, %s, "
	                 "utilization.gpu [%%]\n2026/01/01 00:00:00.000, 0, %s, "
	                 "100 %%\n", col, v);
	if (want_fmt) {
		expect_fail("value.csv", text, (size_t)n, want_fmt);
	} else {
		json_t *p;
		tm_error e;
		if (run1(put("value.csv", text, (size_t)n), "h", &p, &e) != 0)
			fail_msg("%s %s: %s", col, v, e.msg);
		json_decref(p);
	}
}

/* Physically absurd values are refused with the line (docs/profile.md,
 * "Values"); each range's ends are read. The fuzz harness found 1e308 °C
 * written as a 309-digit temp_max_c, and a 0 W power limit accepted. */
static void test_value_ranges(void **state)
{
	static const struct {
		const char *col, *lo, *hi, *below, *above, *msg_below, *msg_above;
	} t[] = {
		{ "temperature.gpu", "-50", "200", "-50.1", "1e308",
		  "temperature -50.1 °C is out of range; expected -50 to 200 °C",
		  "temperature 1e+308 °C is out of range; expected -50 to "
		  "200 °C" },
		{ "power.draw [W]", "0", "100000", "-1", "100000.5",
		  "power -1 W is out of range; expected 0 to 100000 W",
		  "power 100000.5 W is out of range; expected 0 to 100000 W" },
		{ "enforced.power.limit [W]", "0.5", "100000", "0", "2e5",
		  "power limit 0 W is out of range; expected more than 0 and at "
		  "most 100000 W",
		  "power limit 200000 W is out of range; expected more than 0 "
		  "and at most 100000 W" },
		{ "clocks.sm [MHz]", "0", "100000", "-15", "1e9",
		  "SM clock -15 MHz is out of range; expected 0 to 100000 MHz",
		  "SM clock 1000000000 MHz is out of range; expected 0 to 100000 MHz" },
		{ "clocks.max.sm [MHz]", "0", "100000", "-1", "100001",
		  "maximum SM clock -1 MHz is out of range; expected 0 to 100000 "
		  "MHz",
		  "maximum SM clock 100001 MHz is out of range; expected 0 to "
		  "100000 MHz" },
		{ "temperature.gpu.tlimit", "-200", "200", "-201", "201",
		  "margin to the slowdown temperature -201 °C is out of range; "
		  "expected -200 to 200 °C",
		  "margin to the slowdown temperature 201 °C is out of range; "
		  "expected -200 to 200 °C" },
	};
	char want[512];
	(void)state;
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		one_value(t[i].col, t[i].lo, NULL);
		one_value(t[i].col, t[i].hi, NULL);
		snprintf(want, sizeof want, "%%s:2: %s", t[i].msg_below);
		one_value(t[i].col, t[i].below, want);
		snprintf(want, sizeof want, "%%s:2: %s", t[i].msg_above);
		one_value(t[i].col, t[i].above, want);
	}
	expect_fail("util.csv", "timestamp, index, utilization.gpu [%]\n"
	            "2026/01/01 00:00:00.000, 0, 100.5 %\n",
	            sizeof "timestamp, index, utilization.gpu [%]\n"
	            "2026/01/01 00:00:00.000, 0, 100.5 %\n" - 1,
	            "%s:2: utilisation 100.5 %% is out of range; expected 0 to "
	            "100 %%");
	/* the time of the row: seconds since 1970 within 1e11 */
	expect_fail("t.csv", "timestamp, index, temperature.gpu\n"
	            "200000000000, 0, 40\n",
	            sizeof "timestamp, index, temperature.gpu\n"
	            "200000000000, 0, 40\n" - 1,
	            "%s:2: time 200000000000 s is out of range; expected seconds "
	            "since 1970 from -1e+11 to 1e+11 (the years -1199 to 5138)");
}

/* Clocks too far apart for a derate the profile holds (at most 100,
 * and its uncertainty too): the profile used to be written, and refused
 * by every command that read it. */
static void test_derate_beyond_range(void **state)
{
	static const char t[] = "timestamp, index, temperature.gpu, clocks.sm "
		"[MHz], utilization.gpu [%]\n"
		"2026/01/01 00:00:00.000, 0, 40, 1980, 100 %\n"
		"2026/01/01 00:00:00.000, 1, 40, 0.5, 100 %\n";
	(void)state;
	expect_fail("clk.csv", t, sizeof t - 1, "%s: GPU h index 1: its mean "
	            "full-load SM clock, 0.5 MHz, is 3.96e+03 times below GPU h "
	            "index 0's (1980 MHz), beyond a derate of 100 with its "
	            "uncertainty: GPUs of different models, or clocks not in "
	            "MHz?");
}

/* Inputs that block or grow without bound (found by review and the fuzz
 * harness): a FIFO waited forever for a writer, and one distinct GPU per
 * row grew memory with the log. */
static void test_blocking_and_gpu_cap(void **state)
{
	char fifo[600], *text;
	json_t *p;
	tm_error e;
	strbuf b;
	(void)state;
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(run1(fifo, "h", &p, &e), TM_EINPUT);
	assert_string_equal(strstr(e.msg, ": not a regular file"),
	                    ": not a regular file (a FIFO or device could block "
	                    "or never end; give it as - on standard input)");
	unlink(fifo);
	/* TL_MAX_GPUS distinct GPUs are read, one more is refused */
	sb_init(&b);
	sb_add(&b, "timestamp, uuid, temperature.gpu, utilization.gpu [%]\n");
	for (int i = 0; i < TL_MAX_GPUS; i++)
		sb_addf(&b, "2026/01/01 00:00:00.000, GPU-%08x, 40, 100 %%\n", i);
	assert_int_equal(run1(put("cap.csv", b.s, b.len), "h", &p, &e), 0);
	assert_int_equal(json_array_size(json_object_get(p, "gpus")),
	                 TL_MAX_GPUS);
	json_decref(p);
	sb_add(&b, "2026/01/01 00:00:00.000, GPU-ffffffff, 40, 100 %\n");
	text = b.s;
	expect_fail("cap.csv", text, b.len, "%s:131074: more than 131072 "
	            "distinct GPUs; one run profiles at most 131072 (memory "
	            "grows with every GPU, and the profile it writes must stay "
	            "loadable): profile the hosts in parts");
	sb_free(&b);
	/* and a profile longer than the loaders read is not written */
	{
		static const char doc[] = "{\"format\": \"thermap.profile/1\", "
			"\"gpus\": [{\"host\": \"h\", \"index\": 0, "
			"\"ambient_c\": 30, \"r_c_per_w\": 0.05, "
			"\"power_idle_w\": 70, \"power_load_w\": 500, "
			"\"derate\": 1}]}";
		tm_profile *q = NULL;
		char *out = NULL;
		size_t len;
		assert_int_equal(tm_profile_loadb("p.json", doc, sizeof doc - 1,
		                                  &q, &e), 0);
		assert_int_equal(tl_profile_text(q, "in.csv", (size_t)-1, &out,
		                                 &e), 0);
		len = strlen(out);
		free(out);
		out = NULL;
		assert_int_equal(tl_profile_text(q, "in.csv", len, &out, &e), 0);
		free(out);
		out = NULL;
		assert_int_equal(tl_profile_text(q, "in.csv", len - 1, &out, &e),
		                 TM_EINPUT);
		assert_null(out);
		assert_non_null(strstr(e.msg, "in.csv: the profile of 1 GPUs "
		                       "would be "));
		assert_non_null(strstr(e.msg, "every command reads back: "
		                       "profile the hosts in parts"));
		tm_profile_free(q);
	}
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

/* A replay of the recording, about 6 MB, with shifted times and the GPU
 * model in a name column; optionally
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
	           "clocks_event_reasons.hw_slowdown, temperature.gpu.tlimit, "
	           "name\n");
	for (int k = 0; k < 17; k++) {
		const char *p = rows;
		while (p < end) {
			const char *nl = strchr(p, '\n');
			/* "2026/11/21 12:MM:SS.mmm": replay k at hour k */
			sb_addf(&b, "2026/11/21 %02d%.*s, NVIDIA H200\n", k,
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
			        "Not Active, Not Active, 52, NVIDIA H200\n", g, 6 + g);
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
	tm_tele_opts o = { NAN, NAN, false, false, 0 };
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
		char nt[16];
		snprintf(nt, sizeof nt, "%d", n);
		setenv("THERMAP_THREADS", nt, 1);
		memset(&e, 0, sizeof e);
		assert_int_equal(tm_profile_from_telemetry(&in, 1, &o, &par_p,
		                 &par_s, &e), TM_EINPUT);
		assert_string_equal(e.msg, msg_seq);
	}
	unsetenv("THERMAP_THREADS");
}

/* The one-hot recording replayed 9 times, replay k at hour k (4.9 MB:
 * read in pieces by several threads), with its load phases shifted to
 * each replay: 90 phases. */
static void onehot_replay(char *csv, size_t ncsv, char *phases, size_t nph)
{
	char *text = tt_slurp("fixtures/real/h200x4-onehot/telemetry.csv", NULL);
	const char *rows = strchr(text, '\n') + 1, *end = rows + strlen(rows);
	tl_phases *ph;
	tm_error e = { 0, "" };
	strbuf b, q;
	assert_int_equal(tl_phases_read("fixtures/real/h200x4-onehot/"
	                                "load-phases.txt", &ph, &e), 0);
	while (end > rows && end[-1] != '\n')
		end--;
	sb_init(&b);
	sb_init(&q);
	sb_addn(&b, text, (size_t)(rows - text));
	for (int k = 0; k < 9; k++) {
		for (const char *p = rows; p < end; ) {
			const char *nl = strchr(p, '\n');
			/* "2026/11/27 16:MM:SS.mmm, ..." at hour k */
			sb_addf(&b, "2026/11/27 %02d%.*s\n", k, (int)(nl - p - 13),
			        p + 13);
			p = nl + 1;
		}
		for (int i = 0; i < ph->n; i++)
			sb_addf(&q, "%.6f %.6f %s\n", ph->p[i].start + (k - 16) * 3600.0,
			        ph->p[i].end + (k - 16) * 3600.0, ph->p[i].label);
	}
	snprintf(csv, ncsv, "%s", put("onehot-replay.csv", b.s, b.len));
	snprintf(phases, nph, "%s", put("onehot-replay-phases.txt", q.s, q.len));
	assert_true(b.len > 4u << 20);
	sb_free(&b);
	sb_free(&q);
	tl_phases_free(ph);
	free(text);
}

/* --phases with the threaded reader: each GPU's phase means are its
 * own, pushed by one thread at a time, so the profile and the summary
 * are those of one thread, byte for byte (and TSan, which runs this
 * test, sees no race). */
static void test_phases_threads(void **state)
{
	char *seq_p = NULL, *seq_s = NULL, *par_p = NULL, *par_s = NULL;
	char csv[512], phases[512];
	tm_tele_input in = { NULL, "h200x4", NULL };
	tm_tele_opts o = { NAN, NAN, false, false, 0 };
	tm_error e = { 0, "" };
	(void)state;
	onehot_replay(csv, sizeof csv, phases, sizeof phases);
	in.file = csv;
	setenv("THERMAP_THREADS", "1", 1);
	assert_int_equal(tm_profile_from_telemetry_ex(&in, 1, &o, phases,
	                                              &seq_p, &seq_s, &e), 0);
	setenv("THERMAP_THREADS", "3", 1);
	assert_int_equal(tm_profile_from_telemetry_ex(&in, 1, &o, phases,
	                                              &par_p, &par_s, &e), 0);
	unsetenv("THERMAP_THREADS");
	assert_string_equal(seq_p, par_p);
	assert_string_equal(seq_s, par_s);
	if (!strstr(seq_s, "\"counted_min\": 90,") ||
	    !strstr(seq_s, "\"coupled\": 4,"))
		fail_msg("%s", seq_s);
	/* the couplings of the recording, nine times the steady states */
	if (!strstr(seq_p, "\"c_per_w\": 0.007"))
		fail_msg("%s", seq_p);
	free(seq_p); free(seq_s); free(par_p); free(par_s);
}

static int setup(void **state)
{
	(void)state;
	return tt_tmpdir(dir, sizeof dir, "thermap-test-profile");
}

static int teardown(void **state)
{
	(void)state;
	tt_rm_tree(dir);
	return 0;
}

/* ---- two readings at once ----------------------------------------------- */

/* One host's query_range recording, temperature and power in two files:
 * their points wait in the sink until both are read. */
static void qrange_files(const char *host, double base, char *files[2])
{
	static const char *const metric[2] = { "DCGM_FI_DEV_GPU_TEMP",
		"DCGM_FI_DEV_POWER_USAGE" };
	for (int m = 0; m < 2; m++) {
		char name[64], text[32768];
		int n = snprintf(text, sizeof text, "{\"status\":\"success\","
		                 "\"data\":{\"resultType\":\"matrix\",\"result\":["
		                 "{\"metric\":{\"__name__\":\"%s\",\"gpu\":\"0\","
		                 "\"UUID\":\"GPU-%08x\",\"Hostname\":\"%s\"},"
		                 "\"values\":[", metric[m], (unsigned)base, host);
		for (int i = 0; i < 600; i++)
			n += snprintf(text + n, sizeof text - (size_t)n, "%s[%d,"
			              "\"%.1f\"]", i ? "," : "", 1700000000 + i,
			              m ? 3 * base + 2 * i : base + 0.1 * i);
		snprintf(text + n, sizeof text - (size_t)n, "]}]}}");
		snprintf(name, sizeof name, "%s-%d.json", host, m);
		files[m] = xstrdup(puts_(name, text));
	}
}

typedef struct reading {
	char *files[2];
	char *prof;          /* the profile of the last run */
	int rc;
} reading;

static void *read_often(void *arg)
{
	reading *r = arg;
	tm_tele_input in[2] = { { r->files[0], NULL, NULL },
	                        { r->files[1], NULL, NULL } };
	tm_tele_opts o = { NAN, NAN, false, false, 0 };
	for (int i = 0; i < 30 && !r->rc; i++) {
		tm_error e;
		char *summ = NULL;
		free(r->prof);
		r->rc = tm_profile_from_telemetry(in, 2, &o, &r->prof, &summ, &e);
		free(summ);
	}
	return NULL;
}

/* Two threads profile different recordings at once, over and over: each
 * gets the profile it gets alone (nothing is shared between readings;
 * make check-tsan runs this under ThreadSanitizer). */
static void test_two_readings_at_once(void **state)
{
	reading r[2] = { { { NULL }, NULL, 0 }, { { NULL }, NULL, 0 } };
	char *alone[2];
	pthread_t th[2];
	(void)state;
	qrange_files("n1", 40, r[0].files);
	qrange_files("n2", 50, r[1].files);
	for (int k = 0; k < 2; k++) {
		read_often(&r[k]);
		assert_int_equal(r[k].rc, 0);
		alone[k] = r[k].prof;
		r[k].prof = NULL;
	}
	assert_string_not_equal(alone[0], alone[1]);
	for (int k = 0; k < 2; k++)
		assert_int_equal(pthread_create(&th[k], NULL, read_often, &r[k]),
		                 0);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(pthread_join(th[k], NULL), 0);
		assert_int_equal(r[k].rc, 0);
		assert_string_equal(r[k].prof, alone[k]);
		free(r[k].prof);
		free(alone[k]);
		free(r[k].files[0]);
		free(r[k].files[1]);
	}
}

/* ---- a recording read once ------------------------------------------------ */

/* Each window's profile from the recording in memory is the one reading
 * the files with that window gives, byte for byte, or the same error. */
static void same_windows(const tm_tele_input *in, int n,
                         const tm_tele_opts *w, int nw)
{
	tl_recording *rec;
	tm_error e = { 0, "" };
	assert_int_equal(tl_recording_read(in, n, &rec, &e), 0);
	for (int k = 0; k < nw; k++) {
		tm_error e1 = { 0, "" }, e2 = { 0, "" };
		tm_profile *p = NULL;
		char *want = NULL, *summ = NULL, *got = NULL;
		int rc1 = tm_profile_from_telemetry(in, n, &w[k], &want, &summ,
		                                    &e1);
		int rc2 = tl_recording_profile(rec, &w[k], &p, &e2);
		assert_int_equal(rc2, rc1);
		assert_string_equal(e2.msg, e1.msg);
		if (!rc2) {
			got = tm_profile_text(p);
			assert_string_equal(got, want);
		}
		free(got);
		free(want);
		free(summ);
		tm_profile_free(p);
	}
	tl_recording_free(rec);
}

static void test_recording_windows(void **state)
{
	static const tm_tele_opts w[] = {
		{ NAN, NAN, false, false, 0 },
		{ 0, 60 - 1e-6, true, true, 0 }, { 60, 120 - 1e-6, true, true, 0 },
		{ 240, 300 - 1e-6, true, true, 0 }, { 205, 290, true, true, 0 },
		{ 1000, 2000, true, true, 0 },        /* after the end: none */
		{ 100, NAN, true, false, 0 }, { NAN, 30, false, true, 0 },
		{ 1795263420, NAN, false, false, 0 }, /* absolute: 12:17:00 */
	};
	tm_tele_input h200[2] = { { H200, "h200x4-a", NULL },
	                          { H200, "other", NULL } };
	char *q[2];
	tm_tele_input qr[2];
	(void)state;
	same_windows(h200, 1, w, (int)(sizeof w / sizeof w[0]));
	same_windows(h200, 2, w, (int)(sizeof w / sizeof w[0]));
	{
		/* the span: the longest file's, as the summary gives it */
		tl_recording *rec;
		tm_error e = { 0, "" };
		char *prof, *summ;
		json_t *sj;
		assert_int_equal(tl_recording_read(h200, 1, &rec, &e), 0);
		assert_int_equal(tm_profile_from_telemetry(h200, 1, &w[0], &prof,
		                                           &summ, &e), 0);
		sj = json_loads(summ, 0, NULL);
		assert_true(tl_recording_span(rec) == json_number_value(
		            json_object_get(json_array_get(json_object_get(sj,
		            "files"), 0), "span_s")));
		assert_true(tl_recording_span(rec) > 300);
		json_decref(sj);
		free(prof);
		free(summ);
		tl_recording_free(rec);
	}
	/* query_range: points merged across files before they are pushed */
	qrange_files("n3", 45, q);
	qr[0] = (tm_tele_input){ q[0], NULL, NULL };
	qr[1] = (tm_tele_input){ q[1], NULL, NULL };
	same_windows(qr, 2, w, (int)(sizeof w / sizeof w[0]));
	free(q[0]);
	free(q[1]);
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
		cmocka_unit_test(test_own_fit_recovers),
		cmocka_unit_test(test_pooled_fit_recovers),
		cmocka_unit_test(test_last_resort_slope),
		cmocka_unit_test(test_derate_power_cap),
		cmocka_unit_test(test_derate_thermal_and_clock),
		cmocka_unit_test(test_derate_inside_uncertainty),
		cmocka_unit_test(test_derate_sd_formula),
		cmocka_unit_test(test_training_only_plans),
		cmocka_unit_test(test_no_power_column),
		cmocka_unit_test(test_pooled_by_model),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_baseline_fill),
		cmocka_unit_test(test_baseline_coupling),
		cmocka_unit_test(test_baseline_same_writer),
		cmocka_unit_test(test_writer_keeps_values),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_dcgmi),
		cmocka_unit_test(test_value_ranges),
		cmocka_unit_test(test_derate_beyond_range),
		cmocka_unit_test(test_blocking_and_gpu_cap),
		cmocka_unit_test(test_cut_only_at_end),
		cmocka_unit_test(test_threads_same_result),
		cmocka_unit_test(test_phases_threads),
		cmocka_unit_test(test_two_readings_at_once),
		cmocka_unit_test(test_recording_windows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
