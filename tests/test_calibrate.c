/*
 * test_calibrate.c — tm_calibrate (src/ops/calibrate.c) on synthetic runs of
 * known parameters: a cluster, profile, job and identity plan written to
 * a temporary directory, and nvidia-smi telemetry of that plan made from
 * the model itself with each GPU's true waiting power, derate, thermal
 * fit and residual, plus noise that averages out.
 *
 *  - waiting power: equal true values come back within 3 W (GPUs that
 *    wait half the time) and 6 W (GPUs busy 93 %); unequal ones within
 *    10 W, each nearer its own truth than the other's;
 *  - b → 1: a stage busy all but 0.06 % of the iteration says nothing of
 *    its waiting: those GPUs have no own estimate and take the others'
 *    combined value, exactly;
 *  - speed: measured per-rank times give a 6 % slower GPU derate 1.06
 *    (basis job) within 0.005, and one 0.5 % slower derate 1 (inside the
 *    2 % floor); without times, in-job clocks do the same, with basis
 *    power-cap when the telemetry says the cap was active; a GPU alone in
 *    its stage keeps its derate;
 *  - temp_fit_sd_c is the root mean square of the prior spreads and the
 *    residuals planted at the job points; ambient_c and r_c_per_w stay;
 *  - the written profile loads, lists every calibrated field with the
 *    plan id, the telemetry file and the value before, drops those fields
 *    from "estimated", leaves GPUs outside the plan untouched, and comes
 *    out byte-identical twice; after calibration the model reproduces the
 *    measured temperatures within 0.1 °C;
 *  - refusals (exit 4, one line naming the file): a GPU of the plan
 *    missing from the telemetry, telemetry of another host, of other GPUs
 *    only, an empty window, no settled in-job samples, a binary log, a
 *    plan of another world size, layout or cluster, two ranks on one GPU,
 *    a truncated plan.json, a malformed measured section, a log 5000 °C
 *    off the fit or a rank 300 times slower (values no profile can hold);
 *    never a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "ops/ops.h"
#include "testplan.h"

#define NG 4          /* GPUs of the synthetic host; also the ranks */
#define P_IDLE 80.0   /* W */
#define P_LOAD 700.0  /* W */
#define CLOCK 1500.0  /* MHz at derate 1 */

static char tmp[64];   /* the temporary directory of this run */

/* What the synthetic run is made of. */
typedef struct truth {
	double wait[NG];      /* W, the power of a waiting rank */
	double derate[NG];    /* true slowness of each GPU */
	double ambient[NG], r[NG];
	double resid[NG];     /* °C over the fit at the job point */
	double fit_sd[NG];    /* the profile's temp_fit_sd_c, NAN = none */
	double w0, w1;        /* stage 0 and 1 work per microbatch, ms */
	int microbatches;
	int pp;               /* 2 (dp 2), or 4 (dp 1: every GPU alone) */
	bool times;           /* the job gives measured per-rank times */
	bool pcap;            /* the telemetry says the power cap is on */
	const char *tele_host;/* the host the telemetry names */
	int skip;             /* a GPU left out of the telemetry, or -1 */
	double busy_s;        /* seconds of the job in the telemetry */
} truth;

static void base_truth(truth *t)
{
	memset(t, 0, sizeof *t);
	for (int g = 0; g < NG; g++) {
		t->wait[g] = 350;
		t->derate[g] = 1;
		t->ambient[g] = 30 + g;
		t->r[g] = 0.04 + 0.002 * g;
		t->fit_sd[g] = NAN;
	}
	t->w0 = 20;
	t->w1 = 36;
	t->microbatches = 8;
	t->pp = 2;
	t->times = true;
	t->tele_host = "h0";
	t->skip = -1;
	t->busy_s = 120;
}

static const char *path(const char *name)
{
	static char buf[64][160];
	static int k;
	k = (k + 1) % 64;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmp, name);
	return buf[k];
}

static void put_file(const char *file, const char *text)
{
	FILE *f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void put_bytes(const char *file, const char *data, size_t n)
{
	FILE *f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static char *get_file(const char *file)
{
	char *b;
	size_t n;
	tm_error err;
	assert_int_equal(tm_read_file(file, 1 << 26, &b, &n, &err), 0);
	return b;
}

static void write_cluster(void)
{
	strbuf b;
	sb_init(&b);
	sb_add(&b, "{\"format\": \"thermap.cluster/1\", \"nodes\": [{\"host\": "
	       "\"h0\", \"gpus\": [");
	for (int g = 0; g < NG; g++)
		sb_addf(&b, "%s{\"index\": %d, \"uuid\": \"GPU-a000000%d-0000-4000-"
		        "8000-00000000000%d\", \"model\": \"NVIDIA H200\"}",
		        g ? ", " : "", g, g, g);
	sb_add(&b, "], \"links\": [");
	for (int g = 0; g < NG; g++) {
		sb_add(&b, g ? ", [" : "[");
		for (int h = 0; h < NG; h++)
			sb_addf(&b, "%s\"%s\"", h ? ", " : "", g == h ? "X" : "NV18");
		sb_add(&b, "]");
	}
	sb_add(&b, "]}]}\n");
	put_file(path("cluster.json"), b.s);
	sb_free(&b);
}

/* The profile the run is calibrated from: the true fit, the model's
 * default waiting power, derate 1 from clocks; one more entry for a GPU
 * of another host, which must come out untouched. */
static void write_profile(const truth *t)
{
	strbuf b;
	sb_init(&b);
	sb_add(&b, "{\"format\": \"thermap.profile/1\", \"gpus\": [\n");
	for (int g = 0; g < NG; g++) {
		sb_addf(&b, "{\"host\": \"h0\", \"uuid\": \"GPU-a000000%d-0000-4000-"
		        "8000-00000000000%d\", \"index\": %d, \"temp_idle_c\": %.2f, "
		        "\"temp_load_c\": %.2f, \"power_idle_w\": %g, "
		        "\"power_load_w\": %g, \"ambient_c\": %g, \"r_c_per_w\": %g, "
		        "\"sm_clock_load_mhz\": %g, \"derate\": 1, \"derate_basis\": "
		        "\"clock\", \"estimated\": {\"derate\": \"a guess\"}", g, g, g,
		        t->ambient[g] + t->r[g] * P_IDLE,
		        t->ambient[g] + t->r[g] * P_LOAD, P_IDLE, P_LOAD,
		        t->ambient[g], t->r[g], CLOCK);
		if (!isnan(t->fit_sd[g]))
			sb_addf(&b, ", \"temp_fit_sd_c\": %g", t->fit_sd[g]);
		sb_add(&b, "},\n");
	}
	sb_add(&b, "{\"host\": \"other\", \"index\": 0, \"temp_idle_c\": 30, "
	       "\"temp_load_c\": 60, \"derate\": 1.5}\n]}\n");
	put_file(path("profile.json"), b.s);
	sb_free(&b);
}

/* The job; measured per-rank times (a GPU's rank slower by its derate)
 * and the model's iteration time when t->times. */
static void write_job(const truth *t, double iter_ms)
{
	strbuf b;
	int dp = NG / t->pp;
	sb_init(&b);
	sb_addf(&b, "{\"format\": \"thermap.job/1\", \"parallel\": {\"dp\": %d, "
	        "\"pp\": %d}, \"nproc_per_node\": %d, \"schedule\": {\"kind\": "
	        "\"1f1b\", \"microbatches\": %d}, \"stages\": [", dp, t->pp, NG,
	        t->microbatches);
	for (int s = 0; s < t->pp; s++) {
		double w = s == t->pp - 1 ? t->w1 : t->w0;
		sb_addf(&b, "%s{\"fwd_ms\": %g, \"bwd_ms\": %g, \"act_mib\": 16}",
		        s ? ", " : "", w / 3, 2 * w / 3);
	}
	sb_add(&b, "]");
	if (t->times) {
		sb_addf(&b, ",\n\"measured\": {\"iteration_ms\": %.4f, \"ranks\": [",
		        iter_ms);
		for (int r = 0; r < NG; r++) {
			/* identity placement: rank r on GPU r, stage r / dp */
			double w = (r / dp == t->pp - 1 ? t->w1 : t->w0) * t->derate[r];
			sb_addf(&b, "%s{\"rank\": %d, \"fwd_ms\": %.4f, \"bwd_ms\": "
			        "%.4f, \"sd_ms\": 0.05, \"iterations\": 300}",
			        r ? ", " : "", r, w / 3, 2 * w / 3);
		}
		sb_add(&b, "]}");
	}
	sb_add(&b, "}\n");
	put_file(path("job.json"), b.s);
	sb_free(&b);
}

/* The model's busy fraction of each rank and its iteration time, with
 * the derates calibration should find (a difference inside the 2 %
 * floor is none). */
static double model_busy(const truth *t, double *busy)
{
	tm_cluster *c = NULL;
	tm_profile *p = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	tm_problem *pb = NULL;
	tm_eval ev;
	tm_error err;
	int flat[NG];
	double T;

	assert_int_equal(tm_cluster_load(path("cluster.json"), &c, &err), 0);
	assert_int_equal(tm_profile_load(path("profile.json"), &p, &err), 0);
	assert_int_equal(tm_job_load(path("job.json"), &j, &err), 0);
	assert_int_equal(tm_policy_default(&pol, &err), 0);
	for (int g = 0; g < NG; g++) {
		p->gpus[g].derate = t->derate[g] - 1 > 0.02 ? t->derate[g] : 1;
		p->gpus[g].derate_sd = 0.02;
		p->gpus[g].derate_basis = TM_BASIS_JOB;
	}
	assert_int_equal(tm_problem_new(c, p, j, pol, true, &pb, &err), 0);
	tm_identity(pb, flat);
	T = tm_eval_flat(pb, flat, 0, &ev);
	for (int r = 0; r < NG; r++) {
		assert_int_equal(flat[r], r);
		busy[r] = tm_rank_busy(pb, r, r, T);
	}
	tm_problem_free(pb);
	tm_policy_free(pol);
	tm_job_free(j);
	tm_profile_free(p);
	tm_cluster_free(c);
	return T;
}

static void write_plan(void)
{
	tm_cluster *c = NULL;
	tm_profile *p = NULL;
	tm_job *j = NULL;
	tm_policy *pol = NULL;
	tm_run run;
	tm_error err;

	memset(&run, 0, sizeof run);
	assert_int_equal(tm_cluster_load(path("cluster.json"), &c, &err), 0);
	assert_int_equal(tm_profile_load(path("profile.json"), &p, &err), 0);
	assert_int_equal(tm_job_load(path("job.json"), &j, &err), 0);
	assert_int_equal(tm_policy_load("policies/identity.json", &pol, &err),
	                 0);
	assert_int_equal(tm_run_policy(c, p, j, pol, false, &run, &err), 0);
	tt_rm_tree(path("plan"));
	assert_int_equal(tm_plan_write(run.pb, &run.sol, path("plan"), &err), 0);
	tm_run_clear(&run);
	tm_policy_free(pol);
	tm_job_free(j);
	tm_profile_free(p);
	tm_cluster_free(c);
}

/* nvidia-smi telemetry at 2 Hz: 10 s idle, the job, 10 s idle. In the
 * job each GPU draws P = wait + b·(P_load − wait) ± 2 W, runs at
 * ambient + r·P + resid ± 0.2 °C and at CLOCK / derate ± 5 MHz (the ±
 * alternate, so means are exact). */
static void write_tele(const truth *t, const double *busy)
{
	strbuf b;
	double end = 20 + t->busy_s;
	long k = 0;
	sb_init(&b);
	sb_addf(&b, "timestamp, index, uuid, temperature.gpu, power.draw [W], "
	        "power.limit [W], clocks.sm [MHz], utilization.gpu [%%]%s\n",
	        t->pcap ? ", clocks_event_reasons.active" : "");
	for (double s = 0; s < end; s += 0.5, k++)
		for (int g = 0; g < NG; g++) {
			bool job = s >= 10 && s < 10 + t->busy_s;
			double sign = k % 2 ? 1 : -1;
			double P = job ? t->wait[g] + busy[g] * (P_LOAD - t->wait[g])
			               : P_IDLE;
			double T = t->ambient[g] + t->r[g] * P + (job ? t->resid[g] : 0);
			if (g == t->skip)
				continue;
			sb_addf(&b, "%.1f, %d, GPU-a000000%d-0000-4000-8000-00000000000%d,"
			        " %.3f, %.3f W, 700.00 W, %.1f MHz, %d %%", 1.8e9 + s,
			        g, g, g, T + 0.2 * sign, P + 2 * sign,
			        job ? CLOCK / t->derate[g] + 5 * sign : 345.0,
			        job ? 100 : 0);
			if (t->pcap)
				sb_addf(&b, ", 0x%04x", job ? 0x4 : 0x1);
			sb_add(&b, "\n");
		}
	put_file(path("tele.csv"), b.s);
	sb_free(&b);
}

/* Writes every input of t; busy gets the model's busy fractions. */
static void make_run(const truth *t, double *busy)
{
	double T;
	truth t0 = *t;
	write_cluster();
	write_profile(t);
	/* the model's iteration time needs the job; the job's measured
	 * iteration is that time, so that b is as sure as it gets */
	t0.times = false;
	write_job(&t0, 0);
	T = model_busy(t, busy);
	write_job(t, T);
	write_plan();
	write_tele(t, busy);
}

static int calibrate_files(const char *tele, const char *host,
                           tm_cal_result *res, tm_error *err)
{
	tm_tele_input in = { tele, host, NULL };
	tm_cal_opts o;
	memset(&o, 0, sizeof o);
	o.cluster = path("cluster.json");
	o.profile = path("profile.json");
	o.job = path("job.json");
	o.plan = path("plan");
	o.tele = &in;
	o.ntele = 1;
	o.window = (tm_tele_opts){ NAN, NAN, false, false, 0 };
	return tm_calibrate(&o, res, err);
}

static void calibrate_ok(const truth *t, tm_cal_result *res)
{
	tm_error err = { 0, "" };
	int rc = calibrate_files(path("tele.csv"), t->tele_host, res, &err);
	if (rc)
		fail_msg("calibrate: exit %d: %s", rc, err.msg);
	assert_int_equal(res->ngpu, NG);
}

/* ---- waiting power ------------------------------------------------------- */

static void test_wait_equal(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	make_run(&t, busy);
	assert_true(busy[0] > 0.4 && busy[0] < 0.7);
	assert_true(busy[2] > 0.85 && busy[2] < 0.99);
	calibrate_ok(&t, &res);
	for (int g = 0; g < NG; g++) {
		const tm_cal_gpu *G = &res.gpu[g];
		double tol = busy[g] < 0.8 ? 3 : 6;
		if (fabs(G->wait_w - 350) > tol)
			fail_msg("GPU %d: power_wait_w %.2f, true 350 (±%g)", g,
			         G->wait_w, tol);
		assert_true(G->wait_sd > 0);
		assert_true(fabs(G->busy - busy[g]) < 1e-9);
		/* the model after calibration reproduces the measurement */
		assert_true(fabs(G->temp_after - G->temp_c) < 0.1);
		assert_true(fabs(G->power_after - G->power_w) < 2.5);
	}
	assert_true(res.mae_temp_after < res.mae_temp_before);
	tm_cal_result_clear(&res);
}

static void test_wait_unequal(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	t.wait[0] = 300;
	t.wait[1] = 400;
	t.wait[2] = t.wait[3] = 350;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	for (int g = 0; g < 2; g++) {
		double other = t.wait[1 - g];
		if (fabs(res.gpu[g].wait_w - t.wait[g]) > 10)
			fail_msg("GPU %d: power_wait_w %.2f, true %g (±10)", g,
			         res.gpu[g].wait_w, t.wait[g]);
		assert_true(fabs(res.gpu[g].wait_w - t.wait[g]) <
		            fabs(res.gpu[g].wait_w - other));
		/* its own estimate is unbiased: the data are the model's */
		assert_true(fabs(res.gpu[g].wait_own - t.wait[g]) < 1);
	}
	tm_cal_result_clear(&res);
}

/* A stage busy all but 0.06 % of the time: no own estimate; the pooled
 * value of the GPUs that waited, the same for both. */
static void test_busy_one(void **state)
{
	truth t;
	double busy[NG], num = 0, den = 0;
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	t.microbatches = 1000;
	t.w0 = 5;
	t.wait[0] = t.wait[1] = 330;
	t.wait[2] = t.wait[3] = 200;   /* unmeasurable: never waits */
	make_run(&t, busy);
	assert_true(1 - busy[2] < 1e-3);
	calibrate_ok(&t, &res);
	for (int g = 0; g < 2; g++) {
		const tm_cal_gpu *G = &res.gpu[g];
		assert_false(isnan(G->wait_own));
		num += G->wait_own / (G->wait_own_sd * G->wait_own_sd);
		den += 1 / (G->wait_own_sd * G->wait_own_sd);
		assert_true(fabs(G->wait_w - 330) < 3);
	}
	for (int g = 2; g < NG; g++) {
		const tm_cal_gpu *G = &res.gpu[g];
		assert_true(isnan(G->wait_own));
		/* the others agree (τ = 0): their inverse-variance mean */
		if (fabs(G->wait_w - num / den) > 0.01)
			fail_msg("GPU %d: power_wait_w %.3f; the pooled value is %.3f",
			         g, G->wait_w, num / den);
		assert_true(fabs(G->wait_sd - fmax(1, sqrt(1 / den))) < 0.01);
	}
	assert_non_null(strstr(res.table, "(others')"));
	tm_cal_result_clear(&res);
}

/* ---- speed ------------------------------------------------------------------ */

static void test_derate_times(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	json_t *root;
	(void)state;
	base_truth(&t);
	t.derate[1] = 1.06;    /* stage 0: 6 % slower than GPU 0 */
	t.derate[3] = 1.005;   /* stage 1: inside the floor */
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_true(fabs(res.gpu[1].derate - 1.06) < 0.005);
	assert_int_equal(res.gpu[1].derate_basis, TM_BASIS_JOB);
	assert_true(res.gpu[0].derate == 1 && res.gpu[2].derate == 1);
	assert_true(res.gpu[3].derate == 1);
	assert_true(fabs(res.gpu[3].derate_sd - 0.02) < 1e-9);
	/* the written profile says the same */
	root = json_loads(res.profile, 0, NULL);
	assert_non_null(root);
	{
		json_t *e = json_array_get(json_object_get(root, "gpus"), 1);
		assert_true(fabs(json_number_value(json_object_get(e, "derate")) -
		                 1.06) < 0.005);
		assert_string_equal(json_string_value(json_object_get(e,
		                    "derate_basis")), "job");
		/* the estimate is gone, the calibration listed */
		assert_null(json_object_get(e, "estimated"));
		assert_non_null(json_object_get(json_object_get(e, "calibrated"),
		                                "derate"));
	}
	json_decref(root);
	tm_cal_result_clear(&res);
}

static void test_derate_clocks(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	for (int cap = 0; cap < 2; cap++) {
		base_truth(&t);
		t.times = false;
		t.pcap = cap;
		t.derate[2] = 1.10;   /* stage 1: 10 % lower clock */
		t.derate[0] = 1.004;  /* 6 MHz: below one clock step */
		make_run(&t, busy);
		calibrate_ok(&t, &res);
		assert_true(fabs(res.gpu[2].derate - 1.10) < 0.002);
		assert_int_equal(res.gpu[2].derate_basis,
		                 cap ? TM_BASIS_POWER_CAP : TM_BASIS_JOB);
		assert_true(res.gpu[0].derate == 1);
		assert_true(fabs(res.gpu[2].clock_mhz - CLOCK / 1.10) < 0.06);
		tm_cal_result_clear(&res);
	}
}

/* pp = 4, dp = 1: every GPU alone in its stage keeps its derate. */
static void test_derate_alone(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	t.pp = 4;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	for (int g = 0; g < NG; g++)
		assert_true(isnan(res.gpu[g].derate));
	assert_non_null(strstr(res.table, "ran its stage alone"));
	{
		/* no derate_sd written: null in every entry (the writer
		 * writes each field, null where it has no value) */
		json_t *root = json_loads(res.profile, 0, NULL), *e;
		size_t i;
		assert_non_null(root);
		json_array_foreach(json_object_get(root, "gpus"), i, e) {
			json_t *sd = json_object_get(e, "derate_sd");
			assert_true(!sd || json_is_null(sd));
		}
		json_decref(root);
	}
	tm_cal_result_clear(&res);
}

/* ---- the thermal fit, the profile written ------------------------------------ */

static void test_fit_spread(void **state)
{
	truth t;
	double busy[NG], ss = 0, want;
	tm_cal_result res, again;
	tm_profile *p;
	tm_error err;
	char *before;
	(void)state;
	base_truth(&t);
	t.resid[0] = 1.0;
	t.resid[1] = -0.5;
	t.resid[2] = 0.25;
	t.resid[3] = 0;
	t.fit_sd[1] = 0.3;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	for (int g = 0; g < NG; g++) {
		double s0 = isnan(t.fit_sd[g]) ? 0.5 : t.fit_sd[g];
		ss += s0 * s0 + t.resid[g] * t.resid[g];
	}
	want = sqrt(ss / (2 * NG));
	for (int g = 0; g < NG; g++)
		if (fabs(res.gpu[g].fit_sd_c - want) > 0.006)
			fail_msg("GPU %d: temp_fit_sd_c %.4f, expected %.4f", g,
			         res.gpu[g].fit_sd_c, want);
	/* the written profile: loads, keeps the fit, lists what it changed */
	assert_int_equal(tm_profile_loadb("out", res.profile,
	                                  strlen(res.profile), &p, &err), 0);
	assert_int_equal(p->ngpus, NG + 1);
	for (int g = 0; g < NG; g++) {
		const tm_gpu_profile *e = &p->gpus[g];
		assert_true(e->ambient_c == t.ambient[g]);
		assert_true(e->r_c_per_w == t.r[g]);
		assert_true(isfinite(e->power_wait_w) &&
		            isfinite(e->power_wait_sd_w));
		assert_int_equal(e->derate_basis, TM_BASIS_JOB);
	}
	/* the other host's GPU is not the plan's: untouched */
	assert_true(p->gpus[NG].derate == 1.5 && isnan(p->gpus[NG].power_wait_w));
	assert_int_equal(p->gpus[NG].calibrated, 0);
	tm_profile_free(p);
	{
		json_t *root = json_loads(res.profile, 0, NULL);
		json_t *cal = json_object_get(json_array_get(json_object_get(root,
		                              "gpus"), 0), "calibrated");
		const char *line;
		size_t nkeys = json_object_size(cal);
		assert_int_equal(nkeys, 5);
		line = json_string_value(json_object_get(cal, "power_wait_w"));
		assert_non_null(strstr(line, res.plan_id));
		assert_non_null(strstr(line, "tele.csv"));
		assert_non_null(strstr(line, "settled in-job samples"));
		assert_non_null(strstr(line, "before: none"));
		line = json_string_value(json_object_get(cal, "temp_fit_sd_c"));
		assert_non_null(strstr(line, "+1.00 C"));
		json_decref(root);
	}
	assert_int_equal(res.ncalibrated, 5 * NG);
	/* the same inputs, the same bytes; calibrating the output again
	 * says what it was before */
	calibrate_ok(&t, &again);
	assert_string_equal(res.profile, again.profile);
	assert_string_equal(res.table, again.table);
	tm_cal_result_clear(&again);
	before = get_file(path("profile.json"));
	put_file(path("profile.json"), res.profile);
	calibrate_ok(&t, &again);
	{
		char was[48];
		snprintf(was, sizeof was, "before: %.4g C", round(want * 100) / 100);
		if (!strstr(again.profile, was))
			fail_msg("the second calibration does not say \"%s\"", was);
	}
	for (int g = 0; g < NG; g++)
		assert_true(fabs(again.gpu[g].wait_before - res.gpu[g].wait_w) <
		            0.006);
	put_file(path("profile.json"), before);
	free(before);
	tm_cal_result_clear(&again);
	tm_cal_result_clear(&res);
}

/* ---- refusals ------------------------------------------------------------------- */

static void refuse(const char *tele, const char *host, const char *want)
{
	tm_cal_result res;
	tm_error err = { 0, "" };
	int rc = calibrate_files(tele, host, &res, &err);
	if (rc != TM_EINPUT || !strstr(err.msg, want))
		fail_msg("expected exit 4 with \"%s\"; got %d: %s", want, rc,
		         err.msg);
	assert_null(strchr(err.msg, '\n'));
	assert_null(res.profile);
	tm_cal_result_clear(&res);
}

static void edit_plan(void (*ed)(json_t *root))
{
	json_t *root = tt_plan_load(path("plan"));
	ed(root);
	tt_plan_save_json(path("plan"), root);
	json_decref(root);
}

static void ed_world(json_t *root)
{
	json_array_remove(json_object_get(root, "ranks"), 3);
}

static void ed_layout(json_t *root)
{
	json_object_set_new(json_array_get(json_object_get(root, "ranks"), 1),
	                    "pp", json_integer(1));
}

static void ed_same_gpu(json_t *root)
{
	json_t *r0 = json_array_get(json_object_get(root, "ranks"), 0);
	json_t *r1 = json_array_get(json_object_get(root, "ranks"), 1);
	json_object_set(r1, "gpu_index", json_object_get(r0, "gpu_index"));
	json_object_set(r1, "uuid", json_object_get(r0, "uuid"));
}

static void ed_unknown_gpu(json_t *root)
{
	json_t *r = json_array_get(json_object_get(root, "ranks"), 2);
	json_object_set_new(r, "gpu_index", json_integer(7));
	json_object_set_new(r, "uuid", json_string("GPU-ffffffff-0000-4000-"
	                                           "8000-000000000000"));
}

static void ed_host(json_t *root)
{
	for (int r = 0; r < NG; r++)
		json_object_set_new(json_array_get(json_object_get(root, "ranks"),
		                                   (size_t)r), "host",
		                    json_string("elsewhere"));
}

static void test_refusals(void **state)
{
	truth t;
	double busy[NG];
	char *job, *good;
	(void)state;
	base_truth(&t);
	t.skip = 2;
	make_run(&t, busy);
	refuse(path("tele.csv"), "h0", "no samples of host h0 GPU 2");
	refuse(path("tele.csv"), "h1", "give --host h0");
	/* telemetry of other GPUs only */
	put_file(path("other.csv"), "timestamp, index, uuid, temperature.gpu, "
	         "power.draw [W], utilization.gpu [%]\n1800000000, 9, "
	         "GPU-b0000000-0000-4000-8000-000000000000, 40, 80 W, 0 %\n");
	refuse(path("other.csv"), "h0", "no samples of host h0 GPU 0");
	put_bytes(path("bin.csv"), "timestamp, index\n1\0 2\n", 20);
	refuse(path("bin.csv"), "h0", "bin.csv");
	put_file(path("empty.csv"), "");
	refuse(path("empty.csv"), "h0", "empty.csv: empty file");

	/* the job too short to settle: samples, none settled */
	base_truth(&t);
	t.busy_s = 25;
	make_run(&t, busy);
	refuse(path("tele.csv"), "h0", "none of them settled in the job");
	{
		/* an empty window */
		tm_tele_input in = { path("tele.csv"), "h0", NULL };
		tm_cal_opts o;
		tm_cal_result res;
		tm_error err = { 0, "" };
		memset(&o, 0, sizeof o);
		o.cluster = path("cluster.json");
		o.profile = path("profile.json");
		o.job = path("job.json");
		o.plan = path("plan");
		o.tele = &in;
		o.ntele = 1;
		o.window = (tm_tele_opts){ 1e10, NAN, false, false, 0 };
		assert_int_equal(tm_calibrate(&o, &res, &err), TM_EINPUT);
		assert_non_null(strstr(err.msg, "no samples of host h0 GPU 0"));
		tm_cal_result_clear(&res);
	}

	base_truth(&t);
	make_run(&t, busy);
	good = get_file(path("plan/plan.json"));
	edit_plan(ed_world);
	refuse(path("tele.csv"), "h0", "3 ranks");
	put_file(path("plan/plan.json"), good);
	edit_plan(ed_layout);
	refuse(path("tele.csv"), "h0", "ranks[1].pp is 1");
	put_file(path("plan/plan.json"), good);
	edit_plan(ed_same_gpu);
	refuse(path("tele.csv"), "h0", "is also rank 0's");
	put_file(path("plan/plan.json"), good);
	edit_plan(ed_unknown_gpu);
	refuse(path("tele.csv"), "h0", "is not in");
	put_file(path("plan/plan.json"), good);
	edit_plan(ed_host);
	refuse(path("tele.csv"), "h0", "elsewhere is not in");
	/* every cut of plan.json: refused, never a crash */
	for (size_t n = 0; n < strlen(good); n += 97) {
		char *cut = strndup(good, n);
		tm_cal_result res;
		tm_error err = { 0, "" };
		put_file(path("plan/plan.json"), cut);
		assert_int_equal(calibrate_files(path("tele.csv"), "h0", &res, &err),
		                 TM_EINPUT);
		assert_non_null(strstr(err.msg, "plan.json"));
		tm_cal_result_clear(&res);
		free(cut);
	}
	put_file(path("plan/plan.json"), good);
	free(good);

	/* fitted values beyond the profile's ranges: the input's fault */
	/* a log thousands of degrees off its fit is refused as it is read:
	 * no GPU reads 5000 C (docs/profile.md, "Values"); calibrate's own
	 * check of temp_fit_sd_c stays behind it */
	base_truth(&t);
	t.resid[2] = 5000;
	make_run(&t, busy);
	refuse(path("tele.csv"), "h0", "is out of range; expected -50 to "
	       "200 °C");
	base_truth(&t);
	t.derate[1] = 300;
	make_run(&t, busy);
	refuse(path("tele.csv"), "h0", "job.json: host h0 GPU 1 (rank 1) gives "
	       "derate 300");

	/* a malformed measured section is the job's error */
	job = get_file(path("job.json"));
	{
		char *bad = xstrdup(job), *p = strstr(bad, "\"rank\": 2");
		assert_non_null(p);
		p[8] = '3';
		put_file(path("job.json"), bad);
		refuse(path("tele.csv"), "h0", "measured.ranks[2].rank: 3; "
		       "expected 2");
		free(bad);
	}
	put_file(path("job.json"), job);
	free(job);
}

static int setup(void **state)
{
	(void)state;
	if (tt_tmpdir(tmp, sizeof tmp, "test_calibrate"))
		return -1;
	tm_set_warn(tt_quiet, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tt_rm_tree(tmp);
	tm_set_warn(NULL, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_equal),
		cmocka_unit_test(test_wait_unequal),
		cmocka_unit_test(test_busy_one),
		cmocka_unit_test(test_derate_times),
		cmocka_unit_test(test_derate_clocks),
		cmocka_unit_test(test_derate_alone),
		cmocka_unit_test(test_fit_spread),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
