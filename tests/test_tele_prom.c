/*
 * test_tele_prom.c — the dcgm-exporter readers (Prometheus text and
 * query_range JSON) and the time parser, through the sink's interface:
 * every sample tl_push accepts is recorded by a tap and checked value by
 * value, and every rejection by its exact one-line message and exit code
 * (FILE stands for the file name).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "telemetry/telemetry.h"
#include "testutil.h"

/* The real scrape: two dcgm-exporter captures merged by Datadog's tests. */
static const char T4[] = "fixtures/telemetry/dcgm-exporter-metrics_tesla-t4_"
	"datadog-integrations-core.prom";

#define MAXREC 64

typedef struct rec {
	int gpu;
	tl_sample s;
} rec;

/* One reading: a sink with a tap, a source, and what came out. */
typedef struct run {
	tl_sink *k;
	rec r[MAXREC];
	int n;
	tl_src src;
	tm_error err;
	char file[64];
	int rc;
} run;

static void tap(void *ctx, int gpu, const tl_sample *s)
{
	run *x = ctx;
	if (x->n < MAXREC) {
		x->r[x->n].gpu = gpu;
		x->r[x->n].s = *s;
	}
	x->n++;
}

static void run_init(run *x)
{
	tl_opts o = { NAN, NAN, false, false, 0 };
	memset(x, 0, sizeof *x);
	x->k = tl_sink_new(&o);
	tl_sink_tap(x->k, tap, x);
}

static void src_init(run *x, tl_src *s, const char *file, const char *host)
{
	memset(s, 0, sizeof *s);
	s->sink = x->k;
	s->file = file;
	s->host = host;
	s->err = &x->err;
	s->t_first = s->t_last = NAN;
}

static void run_free(run *x)
{
	tl_sink_free(x->k);   /* and the points it holds unflushed */
}

static int read_file(run *x, const char *file, const char *host)
{
	tl_lines L;
	src_init(x, &x->src, file, host);
	x->rc = tl_lines_open(&L, file, &x->err);
	if (x->rc)
		return x->rc;
	x->rc = tl_read_prom(&x->src, &L);
	tl_lines_close(&L);
	return x->rc;
}

/* Reads text through a temporary file; tmpl decides the host the file
 * name gives ("/tmp/.tprom-XXXXXX" gives none). */
static int read_text_as(run *x, const char *text, size_t len,
                        const char *host, const char *tmpl)
{
	run_init(x);
	tt_write_tmp(x->file, sizeof x->file, tmpl, text, len);
	read_file(x, x->file, host);
	unlink(x->file);
	return x->rc;
}

static int read_text(run *x, const char *text, const char *host)
{
	return read_text_as(x, text, strlen(text), host, "/tmp/tpromXXXXXX");
}

/* err->msg must be want with FILE replaced by the file name. */
static void expect_msg(const run *x, const char *want)
{
	tt_expect_msg(x->err.msg, x->src.file, want);
}

static void expect_ident(const run *x, int id, const char *host,
                         const char *uuid, const char *pci, int index)
{
	const char *h, *u, *p;
	int i;
	tl_gpu_ident(x->k, id, &h, &u, &p, &i);
	assert_string_equal(h, host);
	if (uuid)
		assert_string_equal(u, uuid);
	else
		assert_null(u);
	if (pci)
		assert_string_equal(p, pci);
	else
		assert_null(p);
	assert_int_equal(i, index);
}

/* Every field of s is NAN except those listed as (field, value) pairs,
 * ended by -1; the doubles compare exactly. */
static void expect_sample(const tl_sample *s, double t, ...)
{
	bool set[TL_NFIELDS] = { false };
	va_list ap;
	int f;
	if (isnan(t))
		assert_true(isnan(s->t));
	else
		assert_true(s->t == t);
	va_start(ap, t);
	while ((f = va_arg(ap, int)) >= 0) {
		double v = va_arg(ap, double);
		set[f] = true;
		if (s->v[f] != v)
			fail_msg("field %d: %.17g, expected %.17g", f, s->v[f], v);
	}
	va_end(ap);
	for (f = 0; f < TL_NFIELDS; f++)
		if (!set[f] && !isnan(s->v[f]))
			fail_msg("field %d: %.17g, expected NAN", f, s->v[f]);
}

/* ---- Prometheus text ------------------------------------------------------ */

static void t4_scrape(void **state)
{
	const char *file = T4;
	run x;
	(void)state;
	run_init(&x);
	assert_int_equal(read_file(&x, file, NULL), 0);
	assert_string_equal(x.src.format, "prometheus text");
	/* 23 samples: 7 read (4 of host 424773df46e0, 3 of 551bdf382151),
	 * 16 of metrics thermap does not read */
	assert_int_equal(x.src.rows, 23);
	assert_int_equal(x.src.skipped[TL_SKIP_UNUSED], 16);
	assert_int_equal(x.src.skipped[TL_SKIP_BLANK], 0);
	assert_int_equal(x.src.skipped[TL_SKIP_CUT], 0);
	assert_int_equal(x.src.ngpus, 2);
	assert_int_equal(x.src.samples, 2);
	assert_int_equal(x.n, 2);
	expect_ident(&x, 0, "424773df46e0",
	             "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e", NULL, 0);
	expect_ident(&x, 1, "551bdf382151",
	             "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5", NULL, 0);
	assert_int_equal(x.r[0].gpu, 0);
	expect_sample(&x.r[0].s, NAN, TL_SM_CLOCK, 300.0, TL_TEMP, 25.0,
	              TL_POWER, 8.969, TL_UTIL, 0.0, -1);
	/* CLOCK_THROTTLE_REASONS 1: GPU idle, neither thermal nor power cap */
	assert_int_equal(x.r[1].gpu, 1);
	expect_sample(&x.r[1].s, NAN, TL_SLOWDOWN_C, 93.0, TL_POWER_LIMIT, 70.0,
	              TL_THERMAL, 0.0, TL_PCAP, 0.0, -1);
	run_free(&x);
}

#define ID0 "gpu=\"0\",UUID=\"GPU-aaaa\",Hostname=\"n1\""
#define ID1 "gpu=\"1\",UUID=\"GPU-bbbb\",Hostname=\"n1\""

static void scrapes_with_timestamps(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
		"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 40 1700000000123\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID1 "} 50 1700000000123\n"
		"# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
		"# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
		"DCGM_FI_DEV_POWER_USAGE{" ID0 "} 100.500000 1700000000123\n"
		"DCGM_FI_DEV_POWER_USAGE{" ID1 "} 200.250000 1700000000123\n"
		"\n"
		"# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n"
		"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 41 1700000015123\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID1 "} 51 1700000015123\n"
		"DCGM_FI_DEV_POWER_USAGE{" ID0 "} 101.5 1700000015123\n"
		"DCGM_FI_DEV_POWER_USAGE{" ID1 "} 201.25 1700000015123\n",
		NULL), 0);
	assert_int_equal(x.src.rows, 8);
	assert_int_equal(x.src.ngpus, 2);
	assert_int_equal(x.n, 4);
	expect_ident(&x, 0, "n1", "GPU-aaaa", NULL, 0);
	expect_ident(&x, 1, "n1", "GPU-bbbb", NULL, 1);
	assert_int_equal(x.r[0].gpu, 0);
	expect_sample(&x.r[0].s, 1700000000.123, TL_TEMP, 40.0, TL_POWER, 100.5,
	              -1);
	assert_int_equal(x.r[1].gpu, 1);
	expect_sample(&x.r[1].s, 1700000000.123, TL_TEMP, 50.0, TL_POWER, 200.25,
	              -1);
	assert_int_equal(x.r[2].gpu, 0);
	expect_sample(&x.r[2].s, 1700000015.123, TL_TEMP, 41.0, TL_POWER, 101.5,
	              -1);
	assert_int_equal(x.r[3].gpu, 1);
	expect_sample(&x.r[3].s, 1700000015.123, TL_TEMP, 51.0, TL_POWER, 201.25,
	              -1);
	assert_true(x.src.t_first == 1700000000.123);
	assert_true(x.src.t_last == 1700000015.123);
	run_free(&x);
}

/* Without timestamps a repeated metric starts the next sample; a new
 * timestamp does too, even for a metric not seen yet. */
static void scrapes_split(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 40\n"
		"DCGM_FI_DEV_GPU_UTIL{" ID0 "} 99\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 42\n"
		"DCGM_FI_DEV_GPU_UTIL{" ID0 "} 98\n", NULL), 0);
	assert_int_equal(x.n, 2);
	expect_sample(&x.r[0].s, NAN, TL_TEMP, 40.0, TL_UTIL, 99.0, -1);
	expect_sample(&x.r[1].s, NAN, TL_TEMP, 42.0, TL_UTIL, 98.0, -1);
	run_free(&x);

	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 40 1000\n"
		"DCGM_FI_DEV_GPU_UTIL{" ID0 "} 99 2000\n", NULL), 0);
	assert_int_equal(x.n, 2);
	expect_sample(&x.r[0].s, 1.0, TL_TEMP, 40.0, -1);
	expect_sample(&x.r[1].s, 2.0, TL_UTIL, 99.0, -1);
	run_free(&x);

	/* timestamps before 1970 are integers too */
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 40 -1500\n", NULL), 0);
	assert_int_equal(x.n, 1);
	expect_sample(&x.r[0].s, -1.5, TL_TEMP, 40.0, -1);
	run_free(&x);
}

static void all_fields(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 71\n"
		"DCGM_FI_DEV_POWER_USAGE{" ID0 "} 612.345000\n"
		"DCGM_FI_DEV_POWER_MGMT_LIMIT{" ID0 "} 700.000000\n"
		"DCGM_FI_DEV_ENFORCED_POWER_LIMIT{" ID0 "} 650.000000\n"
		"DCGM_FI_DEV_SM_CLOCK{" ID0 "} 1755\n"
		"DCGM_FI_DEV_MAX_SM_CLOCK{" ID0 "} 1980\n"
		"DCGM_FI_DEV_GPU_UTIL{" ID0 "} 100\n"
		"DCGM_FI_DEV_GPU_TEMP_LIMIT{" ID0 "} 14\n"
		"DCGM_FI_DEV_SLOWDOWN_TEMP{" ID0 "} 87\n"
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{" ID0 "} 36\n"
		"DCGM_FI_DEV_THERMAL_VIOLATION{" ID0 "} 3000000000\n"
		"DCGM_FI_DEV_POWER_VIOLATION{" ID0 "} 2147483631\n"
		/* the enforced limit wins in either order */
		"DCGM_FI_DEV_ENFORCED_POWER_LIMIT{" ID1 "} 640\n"
		"DCGM_FI_DEV_POWER_MGMT_LIMIT{" ID1 "} 700\n"
		"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{" ID1 "} 64\n", NULL), 0);
	assert_int_equal(x.n, 2);
	assert_int_equal(x.r[0].gpu, 0);
	expect_sample(&x.r[0].s, NAN, TL_TEMP, 71.0, TL_POWER, 612.345,
	              TL_POWER_LIMIT, 650.0, TL_SM_CLOCK, 1755.0,
	              TL_SM_CLOCK_MAX, 1980.0, TL_UTIL, 100.0, TL_TLIMIT, 14.0,
	              TL_SLOWDOWN_C, 87.0, TL_THERMAL, 1.0, TL_PCAP, 1.0,
	              TL_THERMAL_US, 3000000000.0, TL_PCAP_US, 2147483631.0, -1);
	assert_int_equal(x.r[1].gpu, 1);
	expect_sample(&x.r[1].s, NAN, TL_POWER_LIMIT, 640.0, TL_THERMAL, 1.0,
	              TL_PCAP, 0.0, -1);
	assert_int_equal(x.src.skipped[TL_SKIP_BLANK], 0);
	run_free(&x);
}

static void blanks(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 2147483632\n"
		"DCGM_FI_DEV_POWER_USAGE{" ID0 "} 140737488355328.000000\n"
		"DCGM_FI_DEV_SM_CLOCK{" ID0 "} NaN\n"
		"DCGM_FI_DEV_THERMAL_VIOLATION{" ID0 "} 9223372036854775792\n"
		"DCGM_FI_DEV_POWER_VIOLATION{" ID0 "} 2147483633\n"
		"DCGM_FI_DEV_GPU_UTIL{" ID0 "} +Inf\n"
		"DCGM_FI_DEV_POWER_MGMT_LIMIT{" ID0 "} 140737488355329\n"
		"DCGM_FI_DEV_CLOCKS_EVENT_REASONS{" ID0 "} 9223372036854775794\n"
		"DCGM_FI_DEV_MAX_SM_CLOCK{" ID0 "} 1980\n"
		/* a blank still takes the metric's place in the scrape */
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 55\n", NULL), 0);
	assert_int_equal(x.src.skipped[TL_SKIP_BLANK], 8);
	assert_int_equal(x.src.rows, 10);
	assert_int_equal(x.n, 2);
	expect_sample(&x.r[0].s, NAN, TL_SM_CLOCK_MAX, 1980.0, -1);
	expect_sample(&x.r[1].s, NAN, TL_TEMP, 55.0, -1);
	run_free(&x);
}

static void escapes_and_spacing(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-aaaa\",modelName=\"NVIDIA "
		"\\\"H100\\\" 80GB\\\\HBM3\\n\",Hostname=\"n1\"} 33\n"
		"  DCGM_FI_DEV_GPU_TEMP { gpu = \"1\" ,\tHostname=\"n1\", } \t34  \n"
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"2\",Hostname=\"n1\",UUID=\"\","
		"pci_bus_id=\"00000000:19:00.0\"} 35\r\n", NULL), 0);
	assert_int_equal(x.n, 3);
	expect_sample(&x.r[0].s, NAN, TL_TEMP, 33.0, -1);
	expect_sample(&x.r[1].s, NAN, TL_TEMP, 34.0, -1);
	expect_sample(&x.r[2].s, NAN, TL_TEMP, 35.0, -1);
	expect_ident(&x, 1, "n1", NULL, NULL, 1);
	/* an empty label is an absent one */
	expect_ident(&x, 2, "n1", NULL, "0000:19:00.0", 2);
	run_free(&x);

	/* identity labels are read unescaped */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\","
		"Hostname=\"bad\\\"host\"} 33\n", NULL), TM_EINPUT);
	expect_msg(&x, "FILE:1: label Hostname: \"bad\\\"host\" is not a usable "
	           "host name; expected letters, digits, '.', '-' and '_'");
	run_free(&x);
}

static void unused_metrics(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"# TYPE process_cpu_seconds_total counter\n"
		"process_cpu_seconds_total 12.5\n"
		"go_goroutines{} 7\n"
		"DCGM_FI_DEV_FB_USED{" ID0 "} 1024\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 30\n"
		"DCGM_FI_PROF_SM_ACTIVE{" ID0 "} 0.5\n", NULL), 0);
	assert_int_equal(x.src.rows, 5);
	assert_int_equal(x.src.skipped[TL_SKIP_UNUSED], 4);
	assert_int_equal(x.n, 1);
	expect_sample(&x.r[0].s, NAN, TL_TEMP, 30.0, -1);
	run_free(&x);
}

static void hosts(void **state)
{
	run x;
	char base[64];
	(void)state;
	/* --host wins over the label */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{" ID0 "} 30\n",
	                           "given"), 0);
	expect_ident(&x, 0, "given", "GPU-aaaa", NULL, 0);
	run_free(&x);
	/* no label, no --host: the file name */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\"} 30\n",
	                           NULL), 0);
	snprintf(base, sizeof base, "%s", x.file + 5);
	expect_ident(&x, 0, base, NULL, NULL, 3);
	run_free(&x);
	/* none of the three */
	read_text_as(&x, "# a comment\nDCGM_FI_DEV_GPU_TEMP{gpu=\"3\"} 30\n",
	             45, NULL, "/tmp/.tprom-XXXXXX");
	assert_int_equal(x.rc, TM_EINPUT);
	expect_msg(&x, "FILE:2: no host: give --host, or a Hostname label or "
	           "an instance label HOST:PORT");
	run_free(&x);
	/* no Hostname: the host of Prometheus's instance label */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\","
	                           "instance=\"node7:9400\"} 30\n"
	                           "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\","
	                           "instance=\"node8\"} 31\n", NULL), 0);
	expect_ident(&x, 0, "node7", NULL, NULL, 3);
	expect_ident(&x, 1, "node8", NULL, NULL, 3);
	assert_string_equal(x.src.fhost, "");
	run_free(&x);
	/* Hostname and --host come first */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{" ID0 ","
	                           "instance=\"node7:9400\"} 30\n", NULL), 0);
	expect_ident(&x, 0, "n1", "GPU-aaaa", NULL, 0);
	run_free(&x);
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\","
	                           "instance=\"node7:9400\"} 30\n", "given"), 0);
	expect_ident(&x, 0, "given", NULL, NULL, 3);
	run_free(&x);
	/* an instance without a usable host name (an IPv6 address): the
	 * file name, as without the label */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{gpu=\"3\","
	                           "instance=\"[::1]:9400\"} 30\n", NULL), 0);
	snprintf(base, sizeof base, "%s", x.file + 5);
	expect_ident(&x, 0, base, NULL, NULL, 3);
	run_free(&x);
}

/* The host a file's name gave is kept for the warning that says so (none
 * when a label or --host named it); modelName groups GPUs for the pooled
 * fit, as the profile's estimate says. */
static void file_host_and_model(void **state)
{
	static const char text[] =
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"Tesla T4\"} 60 1000\n"
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",modelName=\"Tesla T4\"} 70 1000\n"
		"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",modelName=\"Tesla T4\"} 100 1000\n"
		"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"Tesla T4\"} 60 2000\n"
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",modelName=\"Tesla T4\"} 70 2000\n"
		"DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",modelName=\"Tesla T4\"} 100 2000\n";
	run x;
	strbuf out;
	long n;
	(void)state;
	assert_int_equal(read_text(&x, text, NULL), 0);
	assert_string_equal(x.src.fhost, x.file + 5);
	sb_init(&out);
	assert_int_equal(tl_sink_finish(x.k, &out, &n, &x.err), 0);
	assert_int_equal(n, 1);
	/* no power limit, no second GPU: the last resort over 70 W */
	if (!strstr(out.s, "\"r_c_per_w\": 0.4286") ||
	    !strstr(out.s, "the largest power seen on the GPUs of model "
	                   "Tesla T4"))
		fail_msg("%s", out.s);
	sb_free(&out);
	run_free(&x);
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{" ID0 "} 30\n",
	                           NULL), 0);
	assert_string_equal(x.src.fhost, "");
	run_free(&x);
}

typedef struct bad {
	const char *text;
	const char *msg;
} bad;

static const bad bads[] = {
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"}\n",
	  "FILE:1: DCGM_FI_DEV_GPU_TEMP: expected a value after the metric name "
	  "and labels, found the end of the line" },
	{ "# HELP up\n\nup\n",
	  "FILE:3: up: expected a value after the metric name, found the end of "
	  "the line" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\"\n",
	  "FILE:1: expected '}' to close the labels opened at column 21, found the "
	  "end of the line" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0} 45\n",
	  "FILE:1: expected '\"' to close the value of label gpu opened at column "
	  "26, found the end of the line" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 12abc\n",
	  "FILE:1: DCGM_FI_DEV_GPU_TEMP: expected a number, NaN, +Inf or -Inf as "
	  "the value, found \"12abc\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 0x1A\n",
	  "FILE:1: DCGM_FI_DEV_GPU_TEMP: expected a number, NaN, +Inf or -Inf as "
	  "the value, found \"0x1A\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"a\\tb\"} 45\n",
	  "FILE:1: label modelName: bad escape \"\\\\t\" at column 42; expected "
	  "\\\\, \\\" or \\n" },
	{ "DCGM_FI_DEV_GPU_TEMP{0gpu=\"0\"} 45\n",
	  "FILE:1: expected a label name ([a-zA-Z_][a-zA-Z0-9_]*) at column 22, "
	  "found \"0gpu=\\\"0\\\"} 45\"" },
	{ "9DCGM 45\n",
	  "FILE:1: expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at column 1, "
	  "found \"9DCGM\"" },
	{ "DCGM-FI 45\n",
	  "FILE:1: expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at column 1, "
	  "found \"DCGM-FI\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu \"0\"} 45\n",
	  "FILE:1: expected '=' after the label name gpu, found \"\\\"0\\\"} 45\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=0} 45\n",
	  "FILE:1: expected '\"' to open the value of label gpu, found \"0} 45\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\" UUID=\"GPU-1\"} 45\n",
	  "FILE:1: expected ',' or '}' after the value of label gpu, found "
	  "\"UUID=\\\"GPU-1\\\"} 45\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 45 12.5\n",
	  "FILE:1: expected an integer timestamp in milliseconds after the value, "
	  "found \"12.5\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 45 1000 x\n",
	  "FILE:1: expected the end of the line after the timestamp, found \"x\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\"} 45\n",
	  "FILE:1: DCGM_FI_DEV_GPU_TEMP has no gpu, UUID or pci_bus_id label; "
	  "expected one to tell which GPU it is" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"x1\",Hostname=\"n1\"} 45\n",
	  "FILE:1: label gpu: \"x1\" is not a GPU index; expected an integer from 0 "
	  "to 65535" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"70000\",Hostname=\"n1\"} 45\n",
	  "FILE:1: label gpu: \"70000\" is not a GPU index; expected an integer "
	  "from 0 to 65535" },
	{ "DCGM_FI_DEV_GPU_TEMP{UUID=\"nope\",Hostname=\"n1\"} 45\n",
	  "FILE:1: label UUID: \"nope\" is not a GPU UUID; expected \"GPU-\" or "
	  "\"MIG-\" and hex digits" },
	{ "DCGM_FI_DEV_GPU_TEMP{pci_bus_id=\"19:00\",Hostname=\"n1\"} 45\n",
	  "FILE:1: label pci_bus_id: \"19:00\" is not a PCI bus id; expected like "
	  "\"00000000:00:06.0\"" },
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",gpu=\"1\",Hostname=\"n1\"} 45\n",
	  "FILE:1: label gpu appears twice; expected it once" },
	{ "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu=\"0\",Hostname=\"n1\"} 1.5\n",
	  "FILE:1: DCGM_FI_DEV_CLOCKS_EVENT_REASONS: expected a bitmask (an "
	  "integer from 0), found 1.5" },
	/* binary junk without a NUL byte */
	{ "\x89PNG\r\n\x1a\n",
	  "FILE:1: expected a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*) at column 1, "
	  "found \"\\x89PNG\"" },
	/* the error is on the line, the lines before it were fine */
	{ "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n1\"} 45\n"
	  "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n1\"} 4,5\n",
	  "FILE:2: DCGM_FI_DEV_GPU_TEMP: expected a number, NaN, +Inf or -Inf as "
	  "the value, found \"4,5\"" },
};

static void malformed(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
		run x;
		if (read_text(&x, bads[i].text, NULL) != TM_EINPUT)
			fail_msg("case %zu: rc %d", i, x.rc);
		assert_int_equal(x.err.code, TM_EINPUT);
		expect_msg(&x, bads[i].msg);
		run_free(&x);
	}
}

/* The last line cut off mid-sample: skipped, the rest is kept. */
static void cut_last_line(void **state)
{
	run x;
	(void)state;
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 45\n"
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUI", NULL), 0);
	assert_int_equal(x.src.skipped[TL_SKIP_CUT], 1);
	assert_int_equal(x.n, 1);
	expect_sample(&x.r[0].s, NAN, TL_TEMP, 45.0, -1);
	run_free(&x);
	/* a complete last line without '\n' is a sample */
	assert_int_equal(read_text(&x, "DCGM_FI_DEV_GPU_TEMP{" ID0 "} 45", NULL),
	                 0);
	assert_int_equal(x.src.skipped[TL_SKIP_CUT], 0);
	assert_int_equal(x.n, 1);
	run_free(&x);
}

static void time_backwards(void **state)
{
	run x;
	char want[256];
	(void)state;
	assert_int_equal(read_text(&x,
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 45 2000\n"
		"DCGM_FI_DEV_GPU_TEMP{" ID0 "} 46 1000\n", NULL), TM_EINPUT);
	/* the builder words it; the place is the line of the late sample */
	snprintf(want, sizeof want, "%s:2: time goes backwards", x.file);
	assert_true(strncmp(x.err.msg, want, strlen(want)) == 0);
	assert_int_equal(x.n, 1);
	run_free(&x);
}

static void long_line(void **state)
{
	size_t n = 200000;
	char *text = malloc(n + 1), want[128];
	run x;
	(void)state;
	memset(text, 'a', n);
	memcpy(text, "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",x=\"", 33);
	memcpy(text + n - 6, "\"} 1\n", 5);
	text[n - 1] = '\n';
	read_text_as(&x, text, n, NULL, "/tmp/tpromXXXXXX");
	assert_int_equal(x.rc, TM_EINPUT);
	snprintf(want, sizeof want, "%s:1: ", x.file);
	assert_true(strncmp(x.err.msg, want, strlen(want)) == 0);
	assert_non_null(strstr(x.err.msg, "65536"));
	assert_int_equal(x.n, 0);
	free(text);
	run_free(&x);
}

static void binary(void **state)
{
	static const char elf[] = "\x7f" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03";
	char want[128];
	run x;
	(void)state;
	read_text_as(&x, elf, sizeof elf - 1, NULL, "/tmp/tpromXXXXXX");
	assert_int_equal(x.rc, TM_EINPUT);
	snprintf(want, sizeof want, "%s:1: ", x.file);
	assert_true(strncmp(x.err.msg, want, strlen(want)) == 0);
	run_free(&x);
}

/* Random lines made of the exposition's own characters: each reading
 * either succeeds or fails with one message naming the file. */
static void fuzz(void **state)
{
	static const char alpha[] = "DCGM_FI_DEV_GPU_TEMP{}=\",\\ \t\n#0123456789."
		"eE+-NaInfgpuUIDHostname\x01\xff";
	uint64_t r = 0x9e3779b97f4a7c15ull;
	char text[400];
	(void)state;
	for (int it = 0; it < 3000; it++) {
		size_t n;
		run x;
		r ^= r << 13;
		r ^= r >> 7;
		r ^= r << 17;
		n = r % sizeof text;
		if (it % 3 == 0) {
			/* mutate a valid line */
			n = (size_t)snprintf(text, sizeof text, "DCGM_FI_DEV_GPU_TEMP{"
			                     ID0 "} 45 1000\n");
			for (int m = 0; m < 3; m++) {
				r ^= r << 13;
				r ^= r >> 7;
				r ^= r << 17;
				text[r % n] = alpha[(r >> 20) % (sizeof alpha - 1)];
			}
		} else {
			for (size_t i = 0; i < n; i++) {
				r ^= r << 13;
				r ^= r >> 7;
				r ^= r << 17;
				text[i] = alpha[r % (sizeof alpha - 1)];
			}
		}
		read_text_as(&x, text, n, NULL, "/tmp/tpromXXXXXX");
		assert_true(x.rc == 0 || x.rc == TM_EINPUT);
		if (x.rc)
			assert_true(strncmp(x.err.msg, x.file, strlen(x.file)) == 0 &&
			            !strchr(x.err.msg, '\n'));
		run_free(&x);
	}
}

/* ---- query_range ---------------------------------------------------------- */

#define QR_HEAD "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\"," \
	"\"result\":["
#define QR_TAIL "]}}"
#define QID0 "\"gpu\":\"0\",\"UUID\":\"GPU-aaaa\",\"Hostname\":\"n1\"," \
	"\"instance\":\"n1:9400\",\"job\":\"dcgm\""
#define QID1 "\"gpu\":\"1\",\"UUID\":\"GPU-bbbb\",\"Hostname\":\"n1\""

static const char qr_temp[] = QR_HEAD
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID0 "},"
	" \"values\":[[1700000000.5,\"40\"],[1700000015.5,\"41\"],"
	"[1700000030.5,\"NaN\"]]},"
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID1 "},"
	" \"values\":[[1700000000.5,\"50\"],[1700000015.5,\"51\"]]},"
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_FB_USED\"," QID1 "},"
	" \"values\":[[1700000000.5,\"1024\"],[1700000015.5,\"1024\"]]}"
	QR_TAIL;

static const char qr_power[] = QR_HEAD
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\"," QID1 "},"
	" \"values\":[[1700000000.5,\"200.25\"],[1700000015.5,\"201.5\"],"
	"[1700000045.5,\"202\"]]},"
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_USAGE\"," QID0 "},"
	" \"values\":[[1700000000.5,\"100.5\"],[1700000015.5,\"101\"],"
	"[1700000030.5,\"102.75\"]]},"
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_CLOCKS_EVENT_REASONS\"," QID0 "},"
	" \"values\":[[1700000015.5,\"4\"]]},"
	/* the enforced limit wins over the management limit, in any order */
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_ENFORCED_POWER_LIMIT\"," QID1 "},"
	" \"values\":[[1700000045.5,\"640\"]]},"
	"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_POWER_MGMT_LIMIT\"," QID1 "},"
	" \"values\":[[1700000045.5,\"700\"]]}"
	QR_TAIL;

static void qrange_merge(void **state)
{
	run x;
	tl_src s2;
	(void)state;
	run_init(&x);
	src_init(&x, &x.src, "temp.json", NULL);
	src_init(&x, &s2, "power.json", NULL);
	assert_int_equal(tl_read_qrange(&x.src, qr_temp, strlen(qr_temp)), 0);
	assert_int_equal(tl_read_qrange(&s2, qr_power, strlen(qr_power)), 0);
	assert_string_equal(x.src.format, "prometheus query_range");
	assert_int_equal(x.src.rows, 7);
	assert_int_equal(x.src.skipped[TL_SKIP_UNUSED], 2);
	assert_int_equal(x.src.skipped[TL_SKIP_BLANK], 1);
	assert_int_equal(x.src.ngpus, 2);
	assert_int_equal(s2.rows, 9);
	assert_int_equal(x.n, 0);  /* nothing before the flush */
	assert_true(x.src.t_first == 1700000000.5);
	assert_true(x.src.t_last == 1700000015.5);
	assert_true(s2.t_first == 1700000000.5);
	assert_true(s2.t_last == 1700000045.5);
	assert_int_equal(tl_qrange_flush(x.k, &x.err), 0);
	assert_int_equal(x.n, 6);
	/* a sample counts in the file of its first point (by metric) */
	assert_int_equal(x.src.samples, 4);
	assert_int_equal(s2.samples, 2);
	assert_true(x.src.t_last == 1700000015.5);
	expect_ident(&x, 0, "n1", "GPU-aaaa", NULL, 0);
	expect_ident(&x, 1, "n1", "GPU-bbbb", NULL, 1);
	/* by time, then GPU */
	assert_int_equal(x.r[0].gpu, 0);
	expect_sample(&x.r[0].s, 1700000000.5, TL_TEMP, 40.0, TL_POWER, 100.5,
	              -1);
	assert_int_equal(x.r[1].gpu, 1);
	expect_sample(&x.r[1].s, 1700000000.5, TL_TEMP, 50.0, TL_POWER, 200.25,
	              -1);
	assert_int_equal(x.r[2].gpu, 0);
	expect_sample(&x.r[2].s, 1700000015.5, TL_TEMP, 41.0, TL_POWER, 101.0,
	              TL_THERMAL, 0.0, TL_PCAP, 1.0, -1);
	assert_int_equal(x.r[3].gpu, 1);
	expect_sample(&x.r[3].s, 1700000015.5, TL_TEMP, 51.0, TL_POWER, 201.5,
	              -1);
	assert_int_equal(x.r[4].gpu, 0);  /* its temperature was NaN */
	expect_sample(&x.r[4].s, 1700000030.5, TL_POWER, 102.75, -1);
	assert_int_equal(x.r[5].gpu, 1);
	expect_sample(&x.r[5].s, 1700000045.5, TL_POWER, 202.0, TL_POWER_LIMIT,
	              640.0, -1);
	/* a second flush has nothing left */
	assert_int_equal(tl_qrange_flush(x.k, &x.err), 0);
	assert_int_equal(x.n, 6);
	run_free(&x);
}

static void qrange_vector(void **state)
{
	/* with a byte order mark, as some Windows tools save it */
	static const char v[] = "\xef\xbb\xbf" "{\"status\":\"success\",\"data\":{\"resultType\":"
		"\"vector\",\"result\":[{\"metric\":{\"__name__\":"
		"\"DCGM_FI_DEV_GPU_TEMP\"," QID1 "},\"value\":[1700000000,\"61\"]},"
		"{\"metric\":{\"__name__\":\"DCGM_FI_DEV_SM_CLOCK\"," QID1 "},"
		"\"value\":[1700000000,\"1410\"]}]}}";
	run x;
	(void)state;
	run_init(&x);
	src_init(&x, &x.src, "now.json", "given");
	assert_int_equal(tl_read_qrange(&x.src, v, strlen(v)), 0);
	assert_int_equal(tl_qrange_flush(x.k, &x.err), 0);
	assert_int_equal(x.n, 1);
	expect_sample(&x.r[0].s, 1700000000.0, TL_TEMP, 61.0, TL_SM_CLOCK,
	              1410.0, -1);
	expect_ident(&x, 0, "given", "GPU-bbbb", NULL, 1);
	run_free(&x);
}

static const bad qbads[] = {
	{ "{\"status\":", "FILE:1:10: unexpected token near end of file" },
	{ "[]", "FILE: (top level): expected a JSON object (a Prometheus API "
	  "response)" },
	{ "{\"data\":{}}", "FILE: status: missing; expected \"success\" (a "
	  "Prometheus API response)" },
	{ "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
	  "\"invalid parameter \\\"query\\\"\"}",
	  "FILE: status: \"error\" (errorType \"bad_data\", error \"invalid "
	  "parameter \\\"query\\\"\"); expected \"success\"" },
	{ "{\"status\":\"success\"}", "FILE: data: missing; expected an object" },
	{ "{\"status\":\"success\",\"data\":{\"resultType\":\"scalar\","
	  "\"result\":[1,\"2\"]}}",
	  "FILE: data.resultType: \"scalar\" is not supported; expected "
	  "\"matrix\" (query_range) or \"vector\" (query)" },
	{ "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
	  "\"result\":{}}}", "FILE: data.result: expected an array" },
	{ QR_HEAD "3" QR_TAIL, "FILE: data.result[0]: expected an object with "
	  "\"metric\" and \"values\"" },
	{ QR_HEAD "{\"values\":[]}" QR_TAIL,
	  "FILE: data.result[0].metric: missing; expected an object" },
	{ QR_HEAD "{\"metric\":{\"gpu\":\"0\"},\"values\":[]}" QR_TAIL,
	  "FILE: data.result[0].metric.__name__: missing; expected the name of a "
	  "DCGM metric (query raw series such as DCGM_FI_DEV_GPU_TEMP, not an "
	  "expression of them)" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID0 "}}"
	  QR_TAIL, "FILE: data.result[0].values: missing; expected an array" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\",\"Hostname\":"
	  "\"n1\"},\"values\":[[1,\"2\"]]}" QR_TAIL,
	  "FILE: data.result[0].metric: DCGM_FI_DEV_GPU_TEMP has no gpu, UUID or "
	  "pci_bus_id label; expected one to tell which GPU it is" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\",\"gpu\":0,"
	  "\"Hostname\":\"n1\"},\"values\":[[1,\"2\"]]}" QR_TAIL,
	  "FILE: data.result[0].metric.gpu: expected a string" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID0 "},"
	  "\"values\":[[1,\"2\"]]},{\"metric\":{\"__name__\":"
	  "\"DCGM_FI_DEV_GPU_TEMP\"," QID1 "},\"values\":[[1,\"2\"],[2,\"3\"],"
	  "[3,4]]}" QR_TAIL,
	  "FILE: data.result[1].values[2]: expected [time, \"value\"]" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID0 "},"
	  "\"values\":[[\"1\",\"2\"]]}" QR_TAIL,
	  "FILE: data.result[0].values[0]: expected [time, \"value\"]" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID0 "},"
	  "\"values\":[[1,\"12abc\"]]}" QR_TAIL,
	  "FILE: data.result[0].values[0][1]: \"12abc\" is not a number; "
	  "expected a number, NaN, +Inf or -Inf" },
	{ QR_HEAD "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_CLOCKS_EVENT_REASONS\","
	  QID0 "},\"values\":[[1,\"-4\"]]}" QR_TAIL,
	  "FILE: data.result[0].values[0][1]: DCGM_FI_DEV_CLOCKS_EVENT_REASONS: "
	  "expected a bitmask (an integer from 0), found -4" },
	{ "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
	  "\"result\":[{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_TEMP\"," QID0
	  "}}]}}", "FILE: data.result[0].value: missing; expected [time, "
	  "\"value\"]" },
};

static void qrange_rejects(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof qbads / sizeof qbads[0]; i++) {
		run x;
		run_init(&x);
		src_init(&x, &x.src, "q.json", NULL);
		x.rc = tl_read_qrange(&x.src, qbads[i].text, strlen(qbads[i].text));
		if (x.rc != TM_EINPUT)
			fail_msg("case %zu: rc %d", i, x.rc);
		expect_msg(&x, qbads[i].msg);
		run_free(&x);
	}
}

/* A rejected file leaves nothing pending; the good one still flushes. */
static void qrange_rejected_file_dropped(void **state)
{
	static const char badf[] = QR_HEAD "{\"metric\":{\"__name__\":"
		"\"DCGM_FI_DEV_UTIL\"},\"values\":[]},{\"metric\":{\"__name__\":"
		"\"DCGM_FI_DEV_GPU_UTIL\"," QID0 "},\"values\":[[1700000000.5,\"7\"],"
		"[1,\"x\"]]}" QR_TAIL;
	run x;
	tl_src s2;
	(void)state;
	run_init(&x);
	src_init(&x, &x.src, "temp.json", NULL);
	src_init(&x, &s2, "bad.json", NULL);
	assert_int_equal(tl_read_qrange(&x.src, qr_temp, strlen(qr_temp)), 0);
	assert_int_equal(tl_read_qrange(&s2, badf, strlen(badf)), TM_EINPUT);
	assert_string_equal(x.err.msg, "bad.json: data.result[1].values[1][1]: "
	                    "\"x\" is not a number; expected a number, NaN, +Inf "
	                    "or -Inf");
	memset(&x.err, 0, sizeof x.err);
	assert_int_equal(tl_qrange_flush(x.k, &x.err), 0);
	assert_int_equal(x.n, 4);
	expect_sample(&x.r[0].s, 1700000000.5, TL_TEMP, 40.0, -1);
	run_free(&x);
}

/* Two sinks reading query_range files at once keep their points apart:
 * one sink's flush pushes none of the other's, and neither loses any. */
static void qrange_two_sinks(void **state)
{
	run a, x;
	(void)state;
	run_init(&a);
	src_init(&a, &a.src, "power.json", NULL);
	assert_int_equal(tl_read_qrange(&a.src, qr_power, strlen(qr_power)), 0);
	run_init(&x);
	src_init(&x, &x.src, "temp.json", NULL);
	assert_int_equal(tl_read_qrange(&x.src, qr_temp, strlen(qr_temp)), 0);
	assert_int_equal(tl_qrange_flush(x.k, &x.err), 0);
	assert_int_equal(x.n, 4);
	expect_sample(&x.r[0].s, 1700000000.5, TL_TEMP, 40.0, -1);
	assert_int_equal(tl_qrange_flush(a.k, &a.err), 0);
	assert_int_equal(a.n, 6);   /* 3 times of each of its 2 GPUs */
	for (int i = 0; i < a.n; i++)
		assert_true(isnan(a.r[i].s.v[TL_TEMP]) &&
		            !isnan(a.r[i].s.v[TL_POWER]));
	run_free(&x);
	run_free(&a);
}

/* ---- times ----------------------------------------------------------------- */

typedef struct tcase {
	const char *s;
	double t;
} tcase;

static const tcase good_times[] = {
	{ "1970-01-01T00:00:01.5Z", 1.5 },
	{ "2026/11/21 12:15:28.037", 1795263328.037 },
	{ "2026/11/21 12:15:28", 1795263328.0 },
	{ "2026/11/21 12:15:60", 1795263360.0 },  /* a leap second */
	{ "2025-09-24T03:17:04.490Z", 1758683824.49 },
	{ "2025-09-24 03:17:04.490", 1758683824.49 },
	{ "2025-09-24t03:17:04.49z", 1758683824.49 },
	{ "2025-09-24T05:17:04.490+02:00", 1758683824.49 },
	{ "2025-09-24T05:17:04.490 +02:00", 1758683824.49 },
	{ "2025-09-23T22:17:04.490-05:00", 1758683824.49 },
	{ "2025-09-24T05:17:04+0200", 1758683824.0 },
	{ "2025-09-24T05:17:04+02", 1758683824.0 },
	{ "2024-02-29T00:00:00Z", 1709164800.0 },
	{ "2000-02-29 12:00:00", 951825600.0 },
	{ "1969-12-31T23:59:59.5Z", -0.5 },
	{ "1700000000.123", 1700000000.123 },
	{ "1700000000", 1700000000.0 },
	{ "  1700000000.5\t", 1700000000.5 },
	{ "0", 0.0 },
	/* rounded once: whole + frac / 10^k would give 6.5600000000000005 */
	{ "1970-01-01T00:00:06.56Z", 6.56 },
	{ "14.601", 14.601 },
};

static const char *const bad_times[] = {
	"2025-02-29T00:00:00Z", "1900-02-29 00:00:00", "2025-13-01T00:00:00Z",
	"2025-00-10 00:00:00", "2025-04-31 00:00:00", "2025-01-00 00:00:00",
	"2025-01-01T24:00:00Z", "2025-01-01T23:60:00Z", "2025-01-01T23:00:61Z",
	"2025-01-01T00:00:00.Z", "2025-01-01T00:00:00+2", "2025-01-01T00:00:00+24:00",
	"2025-01-01T00:00:00+02:60", "2025/01-01 00:00:00", "2025-01-01X00:00:00",
	"2025-01-01T00:00:00Zjunk", "2025-01-01", "12:15:28", "abc", "", "   ",
	"1700000000.", "17000000001234", "-5", "1e9", "2025-1-01T00:00:00Z",
	"2025-01-01T00:00:00  +02:00",
};

static void parse_time(void **state)
{
	double t;
	(void)state;
	for (size_t i = 0; i < sizeof good_times / sizeof good_times[0]; i++) {
		t = NAN;
		if (!tl_parse_time(good_times[i].s, strlen(good_times[i].s), &t))
			fail_msg("\"%s\" rejected", good_times[i].s);
		if (t != good_times[i].t)
			fail_msg("\"%s\": %.17g, expected %.17g", good_times[i].s, t,
			         good_times[i].t);
	}
	for (size_t i = 0; i < sizeof bad_times / sizeof bad_times[0]; i++)
		if (tl_parse_time(bad_times[i], strlen(bad_times[i]), &t))
			fail_msg("\"%s\" accepted as %.17g", bad_times[i], t);
	/* n bounds the text: the rest is not read */
	assert_true(tl_parse_time("1700000000.25xyz", 12, &t));
	assert_true(t == 1700000000.2);
	/* nanoseconds: to within the double's resolution */
	assert_true(tl_parse_time("2025-09-24T03:17:04.123456789Z", 30, &t));
	assert_true(fabs(t - 1758683824.123456789) < 1e-6);
}

/* ---- the HTTP API's plan (promapi.c), without a server ------------------- */

static void parse_duration(void **state)
{
	static const struct { const char *s; double v; } good[] = {
		{ "2h", 7200 }, { "30m", 1800 }, { "900s", 900 }, { "1h30m", 5400 },
		{ "500ms", 0.5 }, { "1d", 86400 }, { "1w", 604800 },
		{ "1y", 31536000 }, { "1m30s500ms", 90.5 }, { "900", 900 },
		{ "0.5", 0.5 }, { "10y", 315360000 },
	};
	static const char *const wrong[] = {
		"", "0", "0s", "-5", "h", "2x", "1.5h", "30m2h", "1h1h", "2 h",
		"1s1m", "11y", "5ms5s", "2hh", "s1", "nan", "inf",
	};
	double v;
	(void)state;
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		v = -1;
		if (!tl_parse_duration(good[i].s, &v) || v != good[i].v)
			fail_msg("\"%s\": %g, expected %g", good[i].s, v, good[i].v);
	}
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++)
		if (tl_parse_duration(wrong[i], &v))
			fail_msg("\"%s\" accepted as %g", wrong[i], v);
}

static void prom_step(void **state)
{
	static const long long w[] = {
		0, 1000, 3600000, 86400000, 10999LL * 15000, 11000LL * 15000,
		7 * 86400000LL, 30 * 86400000LL, 365 * 86400000LL,
	};
	(void)state;
	assert_int_equal(tl_prom_step_ms(3600000), 15000);
	assert_int_equal(tl_prom_step_ms(10999LL * 15000), 15000);
	assert_int_equal(tl_prom_step_ms(11000LL * 15000), 16000);
	assert_int_equal(tl_prom_step_ms(7 * 86400000LL), 55000);
	/* at least 15 s, whole seconds, within 11,000 points, and a second
	 * less would not be */
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		long long s = tl_prom_step_ms(w[i]);
		assert_true(s >= 15000 && s % 1000 == 0);
		assert_true(tl_prom_npoints(0, w[i], s) <= TL_PROM_MAX_POINTS);
		if (s > 15000)
			assert_true(tl_prom_npoints(0, w[i], s - 1000) >
			            TL_PROM_MAX_POINTS);
	}
}

static void prom_window(void **state)
{
	long long from, to;
	(void)state;
	/* the end on the step's grid, the start the duration before it */
	tl_prom_last(1795263337500LL, 7200000, 15000, &from, &to);
	assert_int_equal(to, 1795263330000LL);
	assert_int_equal(from, 1795263330000LL - 7200000);
	assert_int_equal(tl_prom_npoints(0, 3600000, 15000), 241);
	assert_int_equal(tl_prom_npoints(0, 3614999, 15000), 241);
	assert_int_equal(tl_prom_npoints(5, 5, 15000), 1);
	assert_int_equal(tl_prom_npoints(10, 5, 15000), 0);
}

static void prom_chunks(void **state)
{
	static const struct { long long np; long budget, per, hpb; } plans[] = {
		{ 241, TL_PROM_BUDGET, 241, 67 },    /* an hour at 15 s */
		{ 20000, TL_PROM_BUDGET, 11000, 1 }, /* Prometheus's limit */
		{ 590, 400, 50, 1 },                 /* the harness's knob */
		{ 1000, 8, 1, 1 },
		{ 1, TL_PROM_BUDGET, 1, 16384 },
		{ 1, 1, 1, 1 },
	};
	(void)state;
	for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
		long long per;
		long hpb;
		tl_prom_plan(plans[i].np, plans[i].budget, &per, &hpb);
		if (per != plans[i].per || hpb != plans[i].hpb)
			fail_msg("plan %zu: %lld points, %ld hosts; expected %ld, %ld",
			         i, per, hpb, plans[i].per, plans[i].hpb);
	}
	/* the chunks cover every point of the window once, in order */
	for (long long np = 1; np < 130; np += 7)
		for (long long per = 1; per <= 40; per += 3) {
			long long nc = (np + per - 1) / per, next = 1000, s, e;
			for (long long c = 0; c < nc; c++) {
				tl_prom_chunk(1000, 15000, np, per, c, &s, &e);
				assert_int_equal(s, next);
				assert_true(e >= s && (e - s) / 15000 + 1 <= per);
				next = e + 15000;
			}
			assert_int_equal(next, 1000 + np * 15000);
		}
}

static void prom_selector(void **state)
{
	static const char *const hosts[] = { "h1.x", "h-2_b" };
	char *s;
	(void)state;
	s = tl_prom_selector("DCGM_FI_DEV_GPU_TEMP", NULL, NULL, NULL, 0);
	assert_string_equal(s, "DCGM_FI_DEV_GPU_TEMP{}");
	free(s);
	s = tl_prom_selector("M", "a\"b\\c\n", NULL, NULL, 0);
	assert_string_equal(s, "M{job=\"a\\\"b\\\\c\\x0a\"}");
	free(s);
	s = tl_prom_selector("M", "j", "k=\"v\",r=~\"x.*\"", hosts, 2);
	assert_string_equal(s, "M{job=\"j\",k=\"v\",r=~\"x.*\","
	                    "Hostname=~\"h1\\\\.x|h-2_b\"}");
	free(s);
	s = tl_prom_selector(NULL, "j", NULL, hosts + 1, 1);
	assert_string_equal(s, "{__name__=~\"DCGM_FI_DEV_.+\",job=\"j\","
	                    "Hostname=~\"h-2_b\"}");
	free(s);
	s = tl_prom_selector(NULL, NULL, "cluster=\"a\"", NULL, 0);
	assert_string_equal(s, "{__name__=~\"DCGM_FI_DEV_.+\",cluster=\"a\"}");
	free(s);
}

static void label_values(void **state)
{
	static const struct { const char *text, *msg; } wrong[] = {
		{ "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
		  "\"parse error\"}", "U: status: not \"success\" (bad_data: parse "
		  "error)" },
		{ "{\"status\":\"success\",\"data\":{}}", "U: data: expected an "
		  "array of label values" },
		{ "{\"status\":\"success\",\"data\":[\"a\",1]}", "U: data[1]: "
		  "expected a string" },
		{ "{\"status\":\"success\",\"data\":[\"a\",\"b\",\"c\"]}", "U: "
		  "data: 3 values; expected at most 2" },
		{ "<html>", "U: not JSON (" },
		{ "{}", "U: status: missing or not \"success\"" },
	};
	char **v;
	size_t n;
	tm_error err = { 0, "" };
	char buf[200];
	const char *ok = "{\"status\":\"success\",\"data\":[\"h1\",\"h2\"]}";
	(void)state;
	assert_int_equal(tl_read_label_values("U", ok, strlen(ok), 2, &v, &n,
	                                      &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "h1");
	assert_string_equal(v[1], "h2");
	free(v[0]);
	free(v[1]);
	free(v);
	for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
		err = (tm_error){ 0, "" };
		assert_int_equal(tl_read_label_values("U", wrong[i].text,
		                 strlen(wrong[i].text), 2, &v, &n, &err), TM_EINPUT);
		assert_null(v);
		assert_int_equal(n, 0);
		if (strncmp(err.msg, wrong[i].msg, strlen(wrong[i].msg)))
			fail_msg("case %zu: \"%s\", expected \"%s\"", i, err.msg,
			         wrong[i].msg);
	}
	assert_true(tl_prom_error_text(wrong[0].text, strlen(wrong[0].text), buf,
	                               sizeof buf));
	assert_string_equal(buf, "bad_data: parse error");
	assert_false(tl_prom_error_text("404 page not found", 18, buf,
	                                sizeof buf));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t4_scrape),
		cmocka_unit_test(scrapes_with_timestamps),
		cmocka_unit_test(scrapes_split),
		cmocka_unit_test(all_fields),
		cmocka_unit_test(blanks),
		cmocka_unit_test(escapes_and_spacing),
		cmocka_unit_test(unused_metrics),
		cmocka_unit_test(hosts),
		cmocka_unit_test(file_host_and_model),
		cmocka_unit_test(malformed),
		cmocka_unit_test(cut_last_line),
		cmocka_unit_test(time_backwards),
		cmocka_unit_test(long_line),
		cmocka_unit_test(binary),
		cmocka_unit_test(fuzz),
		cmocka_unit_test(qrange_merge),
		cmocka_unit_test(qrange_vector),
		cmocka_unit_test(qrange_rejects),
		cmocka_unit_test(qrange_rejected_file_dropped),
		cmocka_unit_test(qrange_two_sinks),
		cmocka_unit_test(parse_time),
		cmocka_unit_test(parse_duration),
		cmocka_unit_test(prom_step),
		cmocka_unit_test(prom_window),
		cmocka_unit_test(prom_chunks),
		cmocka_unit_test(prom_selector),
		cmocka_unit_test(label_values),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
