/*
 * test_calibrate.c — tm_calibrate (src/ops/calibrate.c) on synthetic runs of
 * known parameters: a cluster, profile, job and identity plan written to
 * a temporary directory, and nvidia-smi telemetry of that plan made from
 * the model itself with each GPU's true waiting power, derate, thermal
 * fit and residual, plus noise that averages out.
 *
 *  - waiting power: equal true values come back within 3 W (GPUs that
 *    wait half the time) and 6 W (GPUs busy 93 %, which take their
 *    peers'); unequal ones within 10 W, each nearer its own truth than
 *    the other's;
 *  - only where identified: a rank busy 95 % (or all but 0.06 %) has no
 *    estimate of its own and takes its peers' pooled value, exactly, as
 *    uncertain as their mean and the default spread between GPUs (two
 *    GPUs do not measure one); with no peers, the profile's value, else
 *    the model's 45 % default; estimates below idle or above full load by
 *    2 sd are refused; the table, the notes and the lines say so;
 *  - background power: another process on a GPU (by pid, or one more
 *    than its rank without pids) measured from busy samples outside the
 *    job's span, else from the GPU's floor above its peers' (with a
 *    process listed, or a job 30 % slower there), else, busy all the
 *    time, the midpoint of waiting and full load; the GPU left out of the
 *    pool, named in the table; an earlier value removed where the run
 *    tests it, kept where nothing does; an unused GPU busy in the job's
 *    span has background, and its heat (the coupling) is in its
 *    neighbour's residual and prediction;
 *  - a coupling with its phases takes the run's steady state and is
 *    refitted (the run's residual shrinks); the same run replaces its
 *    point; at 256 points the oldest run's goes, never a phase's; too few
 *    points leave everything as it was, with a note;
 *  - the process list's parser (every accepted form, every refusal with
 *    its exact line) and the job's pid and span (ranges, all or none);
 *  - speed: measured per-rank times give a 6 % slower GPU derate 1.06
 *    (basis job) within 0.005, and one 0.5 % slower derate 1 (inside the
 *    2 % floor); without times, in-job clocks do the same, with basis
 *    power-cap when the telemetry says the cap was active; a GPU alone in
 *    its stage, or whose rank ran 9 iterations, keeps its derate;
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
 *    off the fit or a rank 300 times slower (values no profile can hold),
 *    a bad process list, two ranks of one host with one pid, telemetry
 *    outside the job's span (another time zone); never a crash.
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

#define NG 4          /* GPUs of the synthetic host that run ranks */
#define NX (NG + 1)   /* with the one the plan leaves unused (extra) */
#define P_IDLE 80.0   /* W */
#define P_LOAD 700.0  /* W */
#define CLOCK 1500.0  /* MHz at derate 1 */

static char tmp[64];   /* the temporary directory of this run */
static bool procs_given;  /* calibrate_files gives procs.csv */

/* What the synthetic run is made of. */
typedef struct truth {
	double wait[NG];      /* W, the power of a waiting rank */
	double derate[NG];    /* true slowness of each GPU */
	double ambient[NX], r[NX];
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
	double bg[NX];        /* W another process draws in the job, NAN */
	double bg_out[NX];    /* W it draws outside the job, NAN: idle */
	double bg_prior[NX];  /* the profile's background_power_w, NAN */
	double prior_wait[NG];/* the profile's power_wait_w, NAN */
	double cp[NX];        /* °C per W GPU 0 gets from GPU k (its coupling
	                         when any is above 0: every other GPU) */
	int cp_points;        /* its phase points (idle, all, all but one) */
	bool cp_old_run;      /* and an earlier run's point */
	bool span;            /* the job gives start_unix_s, end_unix_s */
	bool pids;            /* the job gives each rank's pid, 1000 + r */
	bool extra;           /* a fifth GPU on the host, unused by the plan */
	const char *procs;    /* a process list (procs.csv), or NULL */
} truth;

/* The true power of a waiting rank: the larger of its own and another
 * process's (docs/model.md, section 5). */
static double true_wait(const truth *t, int g)
{
	return isnan(t->bg[g]) ? t->wait[g] : fmax(t->wait[g], t->bg[g]);
}

static void base_truth(truth *t)
{
	memset(t, 0, sizeof *t);
	for (int g = 0; g < NX; g++) {
		t->wait[g % NG] = 350;
		t->derate[g % NG] = 1;
		t->ambient[g] = 30 + g;
		t->r[g] = 0.04 + 0.002 * g;
		t->fit_sd[g % NG] = NAN;
		t->prior_wait[g % NG] = NAN;
		t->bg[g] = t->bg_out[g] = t->bg_prior[g] = NAN;
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

static void write_cluster(const truth *t)
{
	strbuf b;
	int n = t->extra ? NX : NG;
	sb_init(&b);
	sb_add(&b, "{\"format\": \"thermap.cluster/1\", \"nodes\": [{\"host\": "
	       "\"h0\", \"gpus\": [");
	for (int g = 0; g < n; g++)
		sb_addf(&b, "%s{\"index\": %d, \"uuid\": \"GPU-a000000%d-0000-4000-"
		        "8000-00000000000%d\", \"model\": \"NVIDIA H200\"}",
		        g ? ", " : "", g, g, g);
	sb_add(&b, "], \"links\": [");
	for (int g = 0; g < n; g++) {
		sb_add(&b, g ? ", [" : "[");
		for (int h = 0; h < n; h++)
			sb_addf(&b, "%s\"%s\"", h ? ", " : "", g == h ? "X" : "NV18");
		sb_add(&b, "]");
	}
	sb_add(&b, "]}]}\n");
	put_file(path("cluster.json"), b.s);
	sb_free(&b);
}

/* GPU 0's steady state in phase i of a --phases profile: idle, all,
 * then all but one GPU in turn; T = a + r·P + Σ c·(P_k − idle). */
static void phase_point(const truth *t, int i, int n, strbuf *b,
                        const char *sep)
{
	int kind = i % (n + 2);
	double P[NX], T;
	for (int g = 0; g < n; g++)
		P[g] = kind == 0 || (kind >= 2 && kind - 2 == g) ? P_IDLE : P_LOAD;
	T = t->ambient[0] + t->r[0] * P[0];
	for (int g = 1; g < n; g++)
		T += t->cp[g] * (P[g] - P_IDLE);
	sb_addf(b, "%s{\"temp_c\": %.2f, \"power_w\": [", sep, T);
	for (int g = 0; g < n; g++)
		sb_addf(b, "%s%.2f", g ? ", " : "", P[g]);
	sb_addf(b, "], \"source\": \"phase %d\"}", kind);
}

/* GPU 0's coupling: every other GPU a source, t->cp_points phase points
 * and an earlier run's. */
static void write_coupling(strbuf *b, const truth *t)
{
	int n = t->extra ? NX : NG;
	bool any = false;
	for (int g = 1; g < n; g++)
		any |= t->cp[g] > 0;
	if (!any)
		return;
	sb_add(b, ", \"coupling\": {\"how\": \"thermap profile: a test\", "
	       "\"from\": [");
	for (int g = 1; g < n; g++)
		sb_addf(b, "%s{\"index\": %d, \"uuid\": \"GPU-a000000%d-0000-4000-"
		        "8000-00000000000%d\", \"c_per_w\": %g, \"sd_c_per_w\": "
		        "0.001}", g > 1 ? ", " : "", g, g, g, t->cp[g]);
	sb_add(b, "], \"points\": [");
	for (int i = 0; i < t->cp_points; i++)
		phase_point(t, i, n, b, i ? ", " : "");
	if (t->cp_old_run) {
		strbuf x;
		sb_init(&x);
		phase_point(t, 1, n, &x, "");
		sb_addf(b, "%s%.*s\"run plan 0000000000000000 (telemetry old.csv)\"}",
		        t->cp_points ? ", " : "",
		        (int)(strstr(x.s, "\"phase") - x.s), x.s);
		sb_free(&x);
	}
	sb_add(b, "]}");
}

/* The profile the run is calibrated from: the true fit, the model's
 * default waiting power (or t->prior_wait), derate 1 from clocks, an
 * earlier background where t->bg_prior says, GPU 0's coupling to the
 * neighbours (t->cp); one more entry for a GPU of another host, which
 * must come out untouched. */
static void write_profile(const truth *t)
{
	strbuf b;
	sb_init(&b);
	sb_add(&b, "{\"format\": \"thermap.profile/1\", \"gpus\": [\n");
	for (int g = 0; g < (t->extra ? NX : NG); g++) {
		sb_addf(&b, "{\"host\": \"h0\", \"uuid\": \"GPU-a000000%d-0000-4000-"
		        "8000-00000000000%d\", \"index\": %d, \"temp_idle_c\": %.2f, "
		        "\"temp_load_c\": %.2f, \"power_idle_w\": %g, "
		        "\"power_load_w\": %g, \"ambient_c\": %g, \"r_c_per_w\": %g, "
		        "\"sm_clock_load_mhz\": %g, \"derate\": 1, \"derate_basis\": "
		        "\"clock\", \"estimated\": {\"derate\": \"a guess\"}", g, g, g,
		        t->ambient[g] + t->r[g] * P_IDLE,
		        t->ambient[g] + t->r[g] * P_LOAD, P_IDLE, P_LOAD,
		        t->ambient[g], t->r[g], CLOCK);
		if (g < NG && !isnan(t->fit_sd[g]))
			sb_addf(&b, ", \"temp_fit_sd_c\": %g", t->fit_sd[g]);
		if (g < NG && !isnan(t->prior_wait[g]))
			sb_addf(&b, ", \"power_wait_w\": %g, \"power_wait_sd_w\": 12",
			        t->prior_wait[g]);
		if (!isnan(t->bg_prior[g]))
			sb_addf(&b, ", \"background_power_w\": %g, "
			        "\"background_power_sd_w\": 10, \"calibrated\": "
			        "{\"background_power_w\": \"an earlier run\"}",
			        t->bg_prior[g]);
		if (g == 0)
			write_coupling(&b, t);
		sb_add(&b, "},\n");
	}
	sb_add(&b, "{\"host\": \"other\", \"index\": 0, \"temp_idle_c\": 30, "
	       "\"temp_load_c\": 60, \"derate\": 1.5}\n]}\n");
	put_file(path("profile.json"), b.s);
	sb_free(&b);
}

/* The job's span in the telemetry of write_tele: the job's samples are
 * from 10 s to 10 s + busy_s. */
static double span_start(void)
{
	return 1.8e9 + 10;
}

static double span_end(const truth *t)
{
	return 1.8e9 + 10 + t->busy_s - 0.4;
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
	if (t->times || t->span) {
		sb_add(&b, ",\n\"measured\": {");
		if (t->span)
			sb_addf(&b, "\"start_unix_s\": %.1f, \"end_unix_s\": %.1f%s",
			        span_start(), span_end(t), t->times ? ", " : "");
		if (t->times)
			sb_addf(&b, "\"iteration_ms\": %.4f, \"ranks\": [", iter_ms);
		for (int r = 0; r < NG && t->times; r++) {
			/* identity placement: rank r on GPU r, stage r / dp */
			double w = (r / dp == t->pp - 1 ? t->w1 : t->w0) * t->derate[r];
			sb_addf(&b, "%s{\"rank\": %d, \"fwd_ms\": %.4f, \"bwd_ms\": "
			        "%.4f, \"sd_ms\": 0.05, \"iterations\": 300",
			        r ? ", " : "", r, w / 3, 2 * w / 3);
			if (t->pids)
				sb_addf(&b, ", \"pid\": %d", 1000 + r);
			sb_add(&b, "}");
		}
		sb_add(&b, t->times ? "]}" : "}");
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

/* What GPU 0's neighbours, drawing P, add to its temperature. */
static double heat_of(const truth *t, const double *P)
{
	double x = 0;
	for (int g = 1; g < NX; g++)
		x += t->cp[g] * (P[g] - P_IDLE);
	return x;
}

/* nvidia-smi telemetry at 2 Hz: 10 s before the job, the job, 10 s
 * after. In the job each GPU of a rank draws P = w + b·(P_load − w) ±
 * 2 W, w the larger of its waiting power and another process's, runs at
 * ambient + r·P + resid ± 0.2 °C (GPU 0 also coupling·(P_4 − idle)) and
 * at CLOCK / derate ± 5 MHz (the ± alternate, so means are exact); the
 * extra GPU draws its background, else idles. Outside the job a GPU
 * idles, or draws bg_out busy. */
static void write_tele(const truth *t, const double *busy)
{
	strbuf b;
	double end = 20 + t->busy_s;
	long k = 0;
	sb_init(&b);
	sb_addf(&b, "timestamp, index, uuid, temperature.gpu, power.draw [W], "
	        "power.limit [W], clocks.sm [MHz], utilization.gpu [%%]%s\n",
	        t->pcap ? ", clocks_event_reasons.active" : "");
	for (double s = 0; s < end; s += 0.5, k++) {
		bool job = s >= 10 && s < 10 + t->busy_s;
		double sign = k % 2 ? 1 : -1, P[NX], T[NX];
		bool on[NX];
		for (int g = 0; g < NX; g++) {
			double w = true_wait(t, g % NG);
			if (g < NG && job)
				P[g] = w + busy[g] * (P_LOAD - w);
			else if (job && g == NG && !isnan(t->bg[g]))
				P[g] = t->bg[g];
			else
				P[g] = isnan(t->bg_out[g]) ? P_IDLE : t->bg_out[g];
			on[g] = P[g] > P_IDLE;
		}
		for (int g = 0; g < NX; g++)
			T[g] = t->ambient[g] + t->r[g] * P[g] +
			       (job && g < NG ? t->resid[g] : 0) +
			       (g == 0 ? heat_of(t, P) : 0);
		for (int g = 0; g < (t->extra ? NX : NG); g++) {
			if (g == t->skip)
				continue;
			sb_addf(&b, "%.1f, %d, GPU-a000000%d-0000-4000-8000-00000000000%d,"
			        " %.3f, %.3f W, 700.00 W, %.1f MHz, %d %%", 1.8e9 + s,
			        g, g, g, T[g] + 0.2 * sign, P[g] + 2 * sign,
			        job && g < NG ? CLOCK / t->derate[g] + 5 * sign :
			        on[g] ? CLOCK : 345.0, on[g] ? 100 : 0);
			if (t->pcap)
				sb_addf(&b, ", 0x%04x", on[g] ? 0x4 : 0x1);
			sb_add(&b, "\n");
		}
	}
	put_file(path("tele.csv"), b.s);
	sb_free(&b);
}

/* Writes every input of t; busy gets the model's busy fractions. */
static void make_run(const truth *t, double *busy)
{
	double T;
	truth t0 = *t;
	write_cluster(t);
	write_profile(t);
	/* the model's iteration time needs the job; the job's measured
	 * iteration is that time, so that b is as sure as it gets */
	t0.times = false;
	write_job(&t0, 0);
	T = model_busy(t, busy);
	write_job(t, T);
	write_plan();
	write_tele(t, busy);
	if (t->procs)
		put_file(path("procs.csv"), t->procs);
	procs_given = t->procs != NULL;
}

static int calibrate_files(const char *tele, const char *host,
                           tm_cal_result *res, tm_error *err)
{
	tm_tele_input in = { tele, host, NULL };
	tm_cal_opts o;
	const char *procs[1] = { path("procs.csv") };
	memset(&o, 0, sizeof o);
	o.procs = procs;
	o.nprocs = procs_given;
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

/* The random-effects pool of GPUs lo..hi−1's own estimates with a
 * between-GPU variance tau2: its mean, and its uncertainty as a
 * statement about another GPU. */
static double pool_of(const tm_cal_result *res, int lo, int hi, double tau2,
                      double *sd)
{
	double num = 0, den = 0;
	for (int g = lo; g < hi; g++) {
		const tm_cal_gpu *G = &res->gpu[g];
		double v = G->wait_own_sd * G->wait_own_sd + tau2;
		assert_false(isnan(G->wait_own));
		num += G->wait_own / v;
		den += 1 / v;
	}
	*sd = sqrt(1 / den + tau2);
	return num / den;
}

/* A stage busy all but 0.06 % of the time: no own estimate; the pooled
 * value of the GPUs that waited, the same for both. Two GPUs cannot
 * measure how alike GPUs are: the spread between them is the model's
 * default, 7 % of idle to load. */
static void test_busy_one(void **state)
{
	truth t;
	double busy[NG], want, sd, tau = 0.07 * (P_LOAD - P_IDLE);
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
	want = pool_of(&res, 0, 2, tau * tau, &sd);
	for (int g = 0; g < 2; g++)
		assert_true(fabs(res.gpu[g].wait_w - 330) < 3);
	for (int g = 2; g < NG; g++) {
		const tm_cal_gpu *G = &res.gpu[g];
		assert_true(isnan(G->wait_own));
		assert_int_equal(G->own_why, TM_OWN_BUSY);
		assert_int_equal(G->wait_how, TM_WAIT_PEERS);
		if (fabs(G->wait_w - want) > 0.01)
			fail_msg("GPU %d: power_wait_w %.3f; the pooled value is %.3f",
			         g, G->wait_w, want);
		/* as uncertain as the mean and the spread between GPUs */
		assert_true(fabs(G->wait_sd - sd) < 0.01);
		assert_true(G->wait_sd > tau);
	}
	assert_non_null(strstr(res.table, "(peers'; no own)"));
	tm_cal_result_clear(&res);
}

/* A rank busy 95 %: its own estimate would be uncertain by ~1/(1 − b)²;
 * under the 20 % of waiting a GPU's own estimate needs, it takes its
 * peers' (the GPUs of stage 0, busy 56 %, which have their own), and
 * the table, the note and the "calibrated" line say so. */
static void test_busy_95(void **state)
{
	truth t;
	double busy[NG], sd, want;
	tm_cal_result res;
	json_t *root;
	const char *line;
	(void)state;
	base_truth(&t);
	t.microbatches = 12;
	make_run(&t, busy);
	assert_true(busy[2] > 0.94 && busy[2] < 0.97);
	assert_true(busy[0] > 0.45 && busy[0] < 0.65);
	calibrate_ok(&t, &res);
	for (int g = 0; g < 2; g++) {
		assert_int_equal(res.gpu[g].own_why, TM_OWN_USED);
		assert_int_equal(res.gpu[g].wait_how, TM_WAIT_OWN);
		assert_true(fabs(res.gpu[g].wait_own - 350) < 1);
	}
	want = pool_of(&res, 0, 2, pow(0.07 * (P_LOAD - P_IDLE), 2), &sd);
	for (int g = 2; g < NG; g++) {
		const tm_cal_gpu *G = &res.gpu[g];
		assert_int_equal(G->own_why, TM_OWN_BUSY);
		assert_true(isfinite(G->floor_w) == false);
		assert_true(fabs(G->wait_w - want) < 0.01);
		assert_true(fabs(G->wait_sd - sd) < 0.01);
	}
	assert_non_null(strstr(res.table, "h0:2 (rank 2): busy 0.9"));
	assert_non_null(strstr(res.table, "under the 20 % an estimate of its "
	                       "own needs; it takes its peers' pooled value"));
	root = json_loads(res.profile, 0, NULL);
	line = json_string_value(json_object_get(json_object_get(
	       json_array_get(json_object_get(root, "gpus"), 2), "calibrated"),
	       "power_wait_w"));
	assert_non_null(line);
	assert_non_null(strstr(line, "own: none (busy 0.9"));
	assert_non_null(strstr(line, "its own data could not give one: it "
	                       "takes its peers' pooled value"));
	assert_non_null(strstr(line, "the model's default: too few GPUs waited"));
	json_decref(root);
	tm_cal_result_clear(&res);
}

/* No GPU waits long enough: each keeps its prior, the profile's value
 * where it has one, else the model's default share. */
static void test_prior(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	t.microbatches = 12;
	t.w0 = 36;
	t.prior_wait[1] = 300;
	make_run(&t, busy);
	for (int g = 0; g < NG; g++)
		assert_true(busy[g] > 0.8);
	calibrate_ok(&t, &res);
	for (int g = 0; g < NG; g++) {
		const tm_cal_gpu *G = &res.gpu[g];
		assert_int_equal(G->own_why, TM_OWN_BUSY);
		if (g == 1) {
			assert_int_equal(G->wait_how, TM_WAIT_PROFILE);
			assert_true(G->wait_w == 300 && G->wait_sd == 12);
		} else {
			assert_int_equal(G->wait_how, TM_WAIT_DEFAULT);
			assert_true(fabs(G->wait_w - (P_IDLE + 0.45 * (P_LOAD - P_IDLE)))
			            < 1e-9);
			assert_true(fabs(G->wait_sd - 0.07 * (P_LOAD - P_IDLE)) < 1e-9);
		}
	}
	assert_non_null(strstr(res.table, "(profile's; no own)"));
	assert_non_null(strstr(res.table, "(default; no own)"));
	assert_non_null(strstr(res.table, "it takes the model's default, 45 % "
	                       "of idle to load"));
	assert_non_null(strstr(res.profile, "it takes the profile's value, its "
	                       "prior (300.00 +- 12.00 W)"));
	tm_cal_result_clear(&res);
}

/* Estimates outside what is physical are no waiting power: a GPU that
 * would wait below idle (0 W), one above full load (1400 W). The first
 * takes the default; the second too, and its floor is named as a sign
 * of another process. */
static void test_refused(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	t.wait[0] = 0;
	t.wait[1] = 1400;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_int_equal(res.gpu[0].own_why, TM_OWN_BELOW_IDLE);
	assert_int_equal(res.gpu[1].own_why, TM_OWN_ABOVE_LOAD);
	assert_true(fabs(res.gpu[0].floor_w) < 3);
	assert_true(fabs(res.gpu[1].floor_w - 1400) < 5);
	for (int g = 0; g < NG; g++) {
		assert_true(isnan(res.gpu[g].wait_own));
		assert_int_equal(res.gpu[g].wait_how, TM_WAIT_DEFAULT);
		assert_int_equal(res.gpu[g].bg_how, TM_BG_NONE);
	}
	assert_non_null(strstr(res.table, "is below power_idle_w 80.00 W by "
	                       "more than 2 sd: not a waiting power"));
	assert_non_null(strstr(res.table, "is above power_load_w 700.00 W by "
	                       "more than 2 sd: not a waiting power"));
	assert_non_null(strstr(res.table, "note: h0:1 (rank 1): its floor while "
	                       "the rank waits"));
	assert_non_null(strstr(res.table, "if another process runs there, "
	                       "--processes names it"));
	tm_cal_result_clear(&res);
}

/* ---- background power ---------------------------------------------------------- */

/* The job's four processes (pids 1000 + r) and another, pid 4242, on
 * GPU 3. */
#define PROCS_HEADER "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"
#define PROC(g, pid, name) "GPU-a000000" #g "-0000-4000-8000-00000000000" \
	#g ", " #pid ", " name ", 1024 MiB\n"
static const char procs_other3[] = PROCS_HEADER PROC(0, 1000, "python3")
	PROC(1, 1001, "python3") PROC(2, 1002, "python3")
	PROC(3, 1003, "python3") PROC(3, 4242, "burn");
static const char procs_job[] = PROCS_HEADER PROC(0, 1000, "python3")
	PROC(1, 1001, "python3") PROC(2, 1002, "python3")
	PROC(3, 1003, "python3");

/* Every stage light (busy ~0.6-0.7): every GPU has an estimate of its
 * own. */
static void light_truth(truth *t)
{
	base_truth(t);
	t->w1 = 22;
	t->microbatches = 2;
	t->span = t->pids = true;
}

static json_t *entry_json(json_t *root, int g)
{
	return json_array_get(json_object_get(root, "gpus"), (size_t)g);
}

/* Another process on GPU 3 draws 600 W before, during and after the job:
 * measured directly from the samples outside the job's span; GPU 3 is
 * left out of the waiting-power pool and takes the others' 350 W; the
 * model after calibration draws what was measured. */
static void test_bg_direct(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	json_t *root;
	const char *line;
	(void)state;
	light_truth(&t);
	t.bg[3] = t.bg_out[3] = 600;
	t.procs = procs_other3;
	make_run(&t, busy);
	for (int g = 0; g < NG; g++)
		assert_true(busy[g] < 0.8);
	calibrate_ok(&t, &res);
	{
		const tm_cal_gpu *G = &res.gpu[3];
		assert_int_equal(G->nforeign, 1);
		assert_int_equal(G->bg_how, TM_BG_DIRECT);
		assert_true(fabs(G->bg_w - 600) < 0.01);
		assert_true(G->bg_sd >= 1 && G->bg_sd < 1.5);
		/* 2..8.5 s before, and after, 2 s into each busy run */
		assert_true(G->bg_s >= 12 && G->bg_s <= 14);
		assert_int_equal(G->own_why, TM_OWN_BACKGROUND);
		assert_int_equal(G->wait_how, TM_WAIT_PEERS);
		assert_true(fabs(G->wait_w - 350) < 3);
		assert_true(fabs(G->power_after - G->power_w) < 2.5);
		assert_true(fabs(G->temp_after - G->temp_c) < 0.15);
	}
	for (int g = 0; g < 3; g++) {
		assert_int_equal(res.gpu[g].nforeign, 0);
		assert_int_equal(res.gpu[g].bg_how, TM_BG_NONE);
		assert_int_equal(res.gpu[g].wait_how, TM_WAIT_OWN);
		assert_true(fabs(res.gpu[g].wait_w - 350) < 3);
	}
	assert_non_null(strstr(res.table, "h0:3: another process (pid 4242 "
	                       "burn) draws 600.0 ± 1."));
	assert_non_null(strstr(res.table, "W besides the job (measured before "
	                       "the job started and after it ended)\n"));
	root = json_loads(res.profile, 0, NULL);
	assert_true(fabs(json_number_value(json_object_get(entry_json(root, 3),
	            "background_power_w")) - 600) < 0.01);
	line = json_string_value(json_object_get(json_object_get(
	       entry_json(root, 3), "calibrated"), "background_power_w"));
	assert_non_null(strstr(line, "another process (pid 4242 burn) draws "
	                       "this besides the job (processes "));
	assert_non_null(strstr(line, "procs.csv); measured before the job "
	                       "started and after it ended: "));
	assert_non_null(strstr(line, "before: none"));
	assert_null(json_object_get(entry_json(root, 2), "background_power_w"));
	json_decref(root);
	tm_cal_result_clear(&res);
}

/* The same process only while the job ran: nothing outside the span to
 * measure it by; GPU 3's floor (P − b·P_load)/(1 − b) is its power, far
 * above the others' waiting power. Without the process list, a job that
 * runs 30 % slower there is the evidence; without either, the floor is
 * only named. */
static void test_bg_indirect(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	light_truth(&t);
	t.bg[3] = 600;
	t.procs = procs_other3;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_INDIRECT);
	assert_true(fabs(res.gpu[3].bg_w - 600) < 3);
	assert_true(fabs(res.gpu[3].wait_w - 350) < 3);
	assert_non_null(strstr(res.table, "h0:3: another process (pid 4242 "
	                       "burn) draws 60"));
	assert_non_null(strstr(res.table, "W besides the job (from its floor "
	                       "while the rank waits, above 35"));
	tm_cal_result_clear(&res);

	t.procs = NULL;
	t.derate[3] = 1.3;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_true(res.gpu[3].slow);
	assert_int_equal(res.gpu[3].nforeign, 0);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_INDIRECT);
	assert_true(fabs(res.gpu[3].bg_w - 600) < 3);
	assert_non_null(strstr(res.table, "h0:3: work that is not the job's "
	                       "draws 60"));
	assert_non_null(strstr(res.table, "; the job runs 30 % slower there "
	                       "(derate 1.300 ± 0.020)\n"));
	tm_cal_result_clear(&res);

	t.derate[3] = 1;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_NONE);
	assert_true(isnan(res.gpu[3].bg_w));
	assert_non_null(strstr(res.table, "note: h0:3 (rank 3): its floor while "
	                       "the rank waits, 60"));
	tm_cal_result_clear(&res);

	/* slower, and nothing besides the job to be seen */
	t.bg[3] = NAN;
	t.derate[3] = 1.12;
	t.procs = procs_job;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_true(res.gpu[3].slow);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_NONE);
	assert_non_null(strstr(res.table, "h0:3: runs the job 12 % slower than "
	                       "its stage's fastest GPU (derate 1.120 ± 0.020); "
	                       "no other process listed\n"));
	tm_cal_result_clear(&res);
}

/* The process on a GPU that computes nearly all the time, nothing
 * outside the job: background unknown between the waiting power its
 * peers give it and full load. */
static void test_bg_unknown(void **state)
{
	truth t;
	double busy[NG], lo;
	tm_cal_result res;
	(void)state;
	base_truth(&t);
	t.microbatches = 12;
	t.span = t.pids = true;
	t.bg[3] = 600;
	t.procs = procs_other3;
	make_run(&t, busy);
	assert_true(busy[3] > 0.9);
	calibrate_ok(&t, &res);
	lo = res.gpu[2].wait_w;   /* the peers' pool, GPUs 0 and 1 */
	assert_int_equal(res.gpu[2].wait_how, TM_WAIT_PEERS);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_UNKNOWN);
	assert_true(fabs(res.gpu[3].bg_w - (lo + P_LOAD) / 2) < 0.01);
	assert_true(fabs(res.gpu[3].bg_sd - (P_LOAD - lo) / sqrt(12)) < 0.01);
	assert_true(fabs(res.gpu[3].wait_w - lo) < 0.01);
	assert_non_null(strstr(res.table, "h0:3: another process (pid 4242 "
	                       "burn) is listed on it; what it draws besides the "
	                       "job cannot be measured"));
	tm_cal_result_clear(&res);
}

/* A background of an earlier calibration: removed where the run shows
 * no other work (its floor is the others'; the list names only the
 * job), kept where nothing tests it. */
static void test_bg_removed(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	json_t *root, *e;
	(void)state;
	light_truth(&t);
	t.bg_prior[1] = 500;
	t.procs = procs_job;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_true(res.gpu[1].bg_before == 500);
	assert_int_equal(res.gpu[1].bg_how, TM_BG_REMOVED);
	assert_int_equal(res.gpu[1].wait_how, TM_WAIT_OWN);
	assert_non_null(strstr(res.table, "h0:1: background_power_w 500.0 W of "
	                       "an earlier calibration removed: its floor while "
	                       "the rank waits"));
	root = json_loads(res.profile, 0, NULL);
	e = entry_json(root, 1);
	assert_null(json_object_get(e, "background_power_w"));
	assert_null(json_object_get(e, "background_power_sd_w"));
	assert_non_null(strstr(json_string_value(json_object_get(
	                json_object_get(e, "calibrated"), "background_power_w")),
	                "removed: its floor while the rank waits"));
	json_decref(root);
	tm_cal_result_clear(&res);

	/* a heavy GPU, no list: nothing tests it */
	base_truth(&t);
	t.microbatches = 12;
	t.bg_prior[3] = 500;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_KEPT);
	assert_non_null(strstr(res.table, "h0:3: background_power_w 500.0 W of "
	                       "an earlier calibration kept: nothing in this run "
	                       "tests it"));
	assert_non_null(strstr(res.profile, "\"background_power_w\": 500"));
	tm_cal_result_clear(&res);
	/* the list alone tests it */
	t.procs = procs_job;
	t.pids = true;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_REMOVED);
	assert_non_null(strstr(res.table, "removed: no process but the job's "
	                       "listed on it"));
	tm_cal_result_clear(&res);
}

/* A fifth GPU the plan leaves unused runs another process at 450 W while
 * the job runs: its power is background, and the heat it gives GPU 0
 * (coupling 0.01 °C/W) is in GPU 0's residual and in the prediction. */
static void test_unused(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	json_t *root;
	static const char procs[] = PROCS_HEADER PROC(4, 777, "other-job");
	(void)state;
	base_truth(&t);
	t.extra = true;
	t.bg[NG] = 450;
	t.cp[NG] = 0.01;
	t.procs = procs;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_int_equal(res.nunused, 1);
	assert_int_equal(res.unused[0].rank, -1);
	assert_int_equal(res.unused[0].index, 4);
	assert_int_equal(res.unused[0].nforeign, 1);
	assert_int_equal(res.unused[0].bg_how, TM_BG_IN_JOB);
	assert_true(fabs(res.unused[0].bg_w - 450) < 0.01);
	assert_int_equal(res.nentries, NG + 1);
	/* the fit's residuals are 0 with the neighbour's heat: the spread is
	 * the prior's, 0.5 °C over 2k numbers of which k are 0 */
	for (int g = 0; g < NG; g++)
		assert_true(fabs(res.gpu[g].fit_sd_c - sqrt(0.125)) < 0.006);
	/* the model after calibration has GPU 4 at 450 W: GPU 0 is 3.7 °C
	 * warmer than before, as measured */
	assert_true(fabs(res.gpu[0].temp_after - res.gpu[0].temp_c) < 0.1);
	assert_true(res.gpu[0].temp_c - res.gpu[0].temp_before > 3.5);
	assert_non_null(strstr(res.table, "h0:4 (unused by the plan): another "
	                       "process (pid 777 other-job) draws 450.0 ± "));
	root = json_loads(res.profile, 0, NULL);
	assert_true(fabs(json_number_value(json_object_get(entry_json(root, 4),
	            "background_power_w")) - 450) < 0.01);
	json_decref(root);
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

/* A rank measured over fewer than 10 iterations gives no speed: its GPU
 * keeps the profile's derate and the table says why; its partner, alone
 * with a speed in its stage, keeps its own too. */
static void test_derate_few(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	char *job, *bad, *p;
	(void)state;
	base_truth(&t);
	t.derate[1] = 1.06;
	make_run(&t, busy);
	job = get_file(path("job.json"));
	bad = xstrdup(job);
	free(job);
	p = strstr(bad, "\"rank\": 1");
	assert_non_null(p);
	p = strstr(p, "\"iterations\": 300");
	assert_non_null(p);
	memcpy(p + strlen("\"iterations\": "), "9  ", 3);
	put_file(path("job.json"), bad);
	free(bad);
	calibrate_ok(&t, &res);
	assert_true(isnan(res.gpu[0].derate) && isnan(res.gpu[1].derate));
	assert_true(res.gpu[2].derate == 1 && res.gpu[3].derate == 1);
	assert_non_null(strstr(res.table, "note: h0:1 (rank 1) measured 9 "
	                       "iteration(s) (job measured.ranks[1]), fewer than "
	                       "the 10 a speed needs; its derate stays the "
	                       "profile's (1.000)\n"));
	assert_non_null(strstr(res.table, "note: h0:0 (rank 0) has no other GPU "
	                       "of its stage with a speed to compare; its derate "
	                       "stays the profile's (1.000)\n"));
	tm_cal_result_clear(&res);
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

/* Without the ranks' pids, a second process on a rank's GPU is another's,
 * but which one cannot be told; the table says so. */
static void test_bg_nopids(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	(void)state;
	light_truth(&t);
	t.pids = false;
	t.bg[3] = t.bg_out[3] = 600;
	t.procs = procs_other3;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	for (int g = 0; g < 3; g++)
		assert_int_equal(res.gpu[g].nforeign, 0);
	assert_int_equal(res.gpu[3].nforeign, 1);
	assert_int_equal(res.gpu[3].bg_how, TM_BG_DIRECT);
	assert_non_null(strstr(res.table, "h0:3: one of 2 processes (pid 1003 "
	                       "python3, pid 4242 burn; the job gives no pids to "
	                       "tell which are its rank's) draws 600.0"));
	tm_cal_result_clear(&res);
}

/* What calibrate refuses of the new inputs. */
static void test_bg_refusals(void **state)
{
	truth t;
	double busy[NG];
	char *job;
	(void)state;
	light_truth(&t);
	t.procs = procs_job;
	make_run(&t, busy);
	/* a process list that is not one */
	put_file(path("procs.csv"), PROCS_HEADER "GPU-a0000000-0000-4000-"
	         "8000-000000000000, abc, p, 1 MiB\n");
	refuse(path("tele.csv"), "h0", "procs.csv:2: pid \"abc\": expected");
	put_file(path("procs.csv"), t.procs);
	/* two ranks of one host with one pid */
	job = get_file(path("job.json"));
	{
		char *bad = xstrdup(job), *p = strstr(bad, "\"pid\": 1001");
		assert_non_null(p);
		p[10] = '0';
		put_file(path("job.json"), bad);
		refuse(path("tele.csv"), "h0", "job.json: measured.ranks[1].pid: "
		       "1000 is also rank 0's, on host h0; expected one process "
		       "per rank");
		free(bad);
	}
	/* a span the telemetry is not in: times of another zone */
	{
		char *bad = xstrdup(job), *p = strstr(bad, "\"start_unix_s\": 18");
		assert_non_null(p);
		memcpy(p + strlen("\"start_unix_s\": "), "19", 2);
		p = strstr(bad, "\"end_unix_s\": 18");
		memcpy(p + strlen("\"end_unix_s\": "), "19", 2);
		put_file(path("job.json"), bad);
		refuse(path("tele.csv"), "h0", "tele.csv: host h0 GPU 0 has samples "
		       "from 2027-01-15 08:00:00 UTC to 2027-01-15 08:02:19 UTC, none "
		       "in the job's span");
		refuse(path("tele.csv"), "h0", "a time without a zone is read as "
		       "UTC: log with TZ=UTC");
		free(bad);
	}
	put_file(path("job.json"), job);
	free(job);
	procs_given = false;
}

/* ---- the coupling refit ----------------------------------------------------------- */

static json_t *coupling_json(json_t *root, int g)
{
	return json_object_get(entry_json(root, g), "coupling");
}

/* GPU 0 heated by its neighbours (0.01, 0.005, 0.002 °C/W), its profile's
 * coupling fitted on six phases: the run's steady state, 0.3 °C warmer
 * than the fit, joins the points and the whole is refitted; the fit, its
 * spread and the coupling are the refit's, each line saying so. The same
 * run calibrated again replaces its own point. */
static void test_coupling_refit(void **state)
{
	truth t;
	double busy[NG], a0;
	tm_cal_result res, again;
	json_t *root, *c, *pts;
	const char *src;
	char *before;
	(void)state;
	base_truth(&t);
	t.cp[1] = 0.01;
	t.cp[2] = 0.005;
	t.cp[3] = 0.002;
	t.cp_points = 6;
	t.resid[0] = 0.3;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	root = json_loads(res.profile, 0, NULL);
	c = coupling_json(root, 0);
	pts = json_object_get(c, "points");
	assert_int_equal(json_array_size(pts), 7);
	src = json_string_value(json_object_get(json_array_get(pts, 6),
	                                        "source"));
	assert_non_null(strstr(src, "run plan "));
	assert_non_null(strstr(src, res.plan_id));
	assert_non_null(strstr(src, "tele.csv)"));
	assert_true(fabs(json_number_value(json_object_get(json_array_get(pts, 6),
	            "temp_c")) - res.gpu[0].temp_c) < 0.006);
	assert_non_null(strstr(json_string_value(json_object_get(c, "how")),
	                "thermap calibrate: joint fit over 7 steady states (6 of "
	                "the profile, 1 of runs: the last plan "));
	/* a 0.3 °C residual among seven points moves the fit a little
	 * towards the run: its residual under the refit is smaller */
	{
		json_t *e = entry_json(root, 0), *pt = json_array_get(pts, 6);
		json_t *pw = json_object_get(pt, "power_w");
		double fit = json_number_value(json_object_get(e, "ambient_c")) +
		             json_number_value(json_object_get(e, "r_c_per_w")) *
		             json_number_value(json_array_get(pw, 0));
		for (int k = 0; k < 3; k++)
			fit += json_number_value(json_object_get(json_array_get(
			       json_object_get(c, "from"), (size_t)k), "c_per_w")) *
			       (json_number_value(json_array_get(pw, (size_t)k + 1)) -
			        P_IDLE);
		a0 = json_number_value(json_object_get(pt, "temp_c")) - fit;
		if (!(a0 > 0 && a0 < 0.28))
			fail_msg("the run's residual under the refit is %.3f C", a0);
	}
	assert_true(fabs(json_number_value(json_object_get(json_array_get(
	            json_object_get(c, "from"), 0), "c_per_w")) - 0.01) < 0.002);
	assert_true(res.gpu[0].fit_sd_c >= 0.2);
	assert_non_null(strstr(json_string_value(json_object_get(json_object_get(
	                entry_json(root, 0), "calibrated"), "ambient_c")),
	                "added to its coupling's points and the whole refitted"));
	assert_non_null(json_object_get(json_object_get(entry_json(root, 0),
	                "calibrated"), "r_c_per_w"));
	/* the others have no coupling: their fit is kept */
	assert_true(json_number_value(json_object_get(entry_json(root, 1),
	            "ambient_c")) == t.ambient[1]);
	json_decref(root);
	/* the same run again: its point replaced, not added */
	before = get_file(path("profile.json"));
	put_file(path("profile.json"), res.profile);
	calibrate_ok(&t, &again);
	root = json_loads(again.profile, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(coupling_json(root, 0),
	                 "points")), 7);
	json_decref(root);
	put_file(path("profile.json"), before);
	free(before);
	tm_cal_result_clear(&again);
	tm_cal_result_clear(&res);
}

/* At 256 points the oldest run's point goes, never a phase's; with too
 * few points to identify the refit, nothing moves and a note says why. */
static void test_coupling_bounds(void **state)
{
	truth t;
	double busy[NG];
	tm_cal_result res;
	json_t *root, *pts;
	(void)state;
	base_truth(&t);
	t.cp[1] = 0.01;
	t.cp[2] = 0.005;
	t.cp[3] = 0.002;
	t.cp_points = 255;
	t.cp_old_run = true;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	root = json_loads(res.profile, 0, NULL);
	pts = json_object_get(coupling_json(root, 0), "points");
	assert_int_equal(json_array_size(pts), 256);
	assert_null(strstr(res.profile, "telemetry old.csv"));
	assert_non_null(strstr(json_string_value(json_object_get(
	                json_array_get(pts, 255), "source")), res.plan_id));
	assert_non_null(strstr(json_string_value(json_object_get(
	                json_array_get(pts, 0), "source")), "phase 0"));
	json_decref(root);
	tm_cal_result_clear(&res);

	t.cp_points = 2;
	t.cp_old_run = false;
	make_run(&t, busy);
	calibrate_ok(&t, &res);
	assert_non_null(strstr(res.table, "note: h0:0 (rank 0): its coupling, "
	                       "refitted with the run's steady state, is not "
	                       "identified (3 steady states for 5 unknowns"));
	root = json_loads(res.profile, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(coupling_json(root, 0),
	                 "points")), 2);
	assert_true(json_number_value(json_object_get(entry_json(root, 0),
	            "ambient_c")) == t.ambient[0]);
	assert_null(json_object_get(json_object_get(entry_json(root, 0),
	            "calibrated"), "ambient_c"));
	json_decref(root);
	tm_cal_result_clear(&res);
}

/* ---- the process list and the job's new fields ----------------------------------- */

#define U0 "GPU-a0000000-0000-4000-8000-000000000000"
#define HDR "gpu_uuid, pid, process_name, used_gpu_memory [MiB]\n"

static const struct {
	const char *text;
	int rows;          /* rows read, when no error */
	const char *err;   /* the message, else NULL */
} procs_cases[] = {
	{ "", 0, NULL },
	{ HDR, 0, NULL },
	{ "No running processes found\n", 0, NULL },
	{ HDR U0 ", 4242, python3, 1024 MiB\n" U0 ", 17, /usr/bin/x, 0 MiB\n",
	  2, NULL },
	{ U0 ", 4242, python3, 1024 MiB\n", 1, NULL },                /* no header */
	{ HDR U0 ", [N/A], [N/A], [N/A]\r\n", 1, NULL },
	{ HDR U0 ", 12, a, [Not Supported]\n" HDR U0 ", 13, b, 1\n", 2, NULL },
	{ "pid, gpu_uuid\n12, " U0 "\n", 1, NULL },
	{ HDR U0 ", 12, python3 -c a,b, 100 MiB\n", 1, NULL },
	{ "gpu_name, gpu_uuid, pid, name, used_memory [MiB]\nH200, " U0
	  ", 12, x, 5\n", 1, NULL },
	{ "GPU-x, 12, p, 1 MiB\n", 0, "P:1: gpu_uuid \"GPU-x\": expected a "
	  "GPU UUID (GPU-..., MIG-...) or [N/A]" },
	{ HDR U0 ", abc, p, 1 MiB\n", 0, "P:2: pid \"abc\": expected a process "
	  "id, 1 to 2147483647, or [N/A]" },
	{ HDR U0 ", 0, p, 1 MiB\n", 0, "P:2: pid \"0\": expected" },
	{ HDR U0 ", -5, p, 1 MiB\n", 0, "P:2: pid \"-5\": expected" },
	{ HDR U0 ", 2147483648, p, 1 MiB\n", 0, "P:2: pid \"2147483648\": "
	  "expected" },
	{ HDR U0 ", 12x, p, 1 MiB\n", 0, "P:2: pid \"12x\": expected" },
	{ HDR U0 ", 12, p, lots\n", 0, "P:2: used_gpu_memory \"lots\": expected "
	  "MiB, 0 to 10^9, or [N/A]" },
	{ HDR U0 ", 12, p, 5 GiB\n", 0, "P:2: used_gpu_memory \"5 GiB\"" },
	{ HDR U0 ", 12\n", 0, "P:2: 2 field(s); the header names 4: expected "
	  "one value per column" },
	{ U0 ", 12\n", 0, "P:1: 2 field(s); without a header, gpu_uuid, pid, "
	  "process_name, used_gpu_memory are 4: expected one value per "
	  "column" },
	{ "gpu_uuid, pid\n" U0 ", 12, x\n", 0, "P:2: 3 field(s); the header "
	  "names 2: expected one value per column" },
	{ "gpu_uuid, process_name\n", 0, "P:1: the header names no pid "
	  "column; expected the output of nvidia-smi --query-compute-apps="
	  "gpu_uuid,pid,process_name,used_gpu_memory --format=csv" },
	{ "gpu_uuid, pid, pid\n", 0, "P:1: the header names pid twice; "
	  "expected each column once" },
	{ U0 ", 12, p, 1\n" HDR, 0, "P:2: a header after data; expected it on "
	  "the first line" },
	{ HDR U0 ", 12, p, 1\ngpu_uuid, pid\n", 0, "P:3: a header unlike line "
	  "1's; expected one list of the same columns" },
};

static void test_procs_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof procs_cases / sizeof *procs_cases; i++) {
		tm_procs P;
		tm_error err = { 0, "" };
		int rc = tm_procs_loadb("P", procs_cases[i].text,
		                        strlen(procs_cases[i].text), &P, &err);
		if (procs_cases[i].err) {
			if (rc != TM_EINPUT || strncmp(err.msg, procs_cases[i].err,
			                               strlen(procs_cases[i].err)))
				fail_msg("case %zu: expected \"%s\"; got %d: %s", i,
				         procs_cases[i].err, rc, err.msg);
			assert_int_equal(P.n, 0);
			assert_null(P.p);
		} else {
			if (rc || P.n != procs_cases[i].rows)
				fail_msg("case %zu: %d: %s (%d rows)", i, rc, err.msg, P.n);
		}
		tm_procs_clear(&P);
	}
	{
		/* the values */
		const char *t = HDR U0 ", 4242, python3 -c a,b, 1024 MiB\n"
		                "[N/A], [N/A], [N/A], [N/A]\n";
		tm_procs P;
		tm_error err = { 0, "" };
		assert_int_equal(tm_procs_loadb("P", t, strlen(t), &P, &err), 0);
		assert_int_equal(P.n, 2);
		assert_string_equal(P.p[0].uuid, U0);
		assert_int_equal(P.p[0].pid, 4242);
		assert_string_equal(P.p[0].name, "python3 -c a,b");
		assert_true(P.p[0].mem_mib == 1024);
		assert_int_equal(P.p[0].line, 2);
		assert_null(P.p[1].uuid);
		assert_int_equal(P.p[1].pid, -1);
		assert_null(P.p[1].name);
		assert_true(isnan(P.p[1].mem_mib));
		tm_procs_clear(&P);
		/* a NUL byte */
		assert_int_equal(tm_procs_loadb("P", HDR "\0", sizeof HDR, &P, &err),
		                 TM_EINPUT);
		assert_string_equal(err.msg, "P:2: a NUL byte; expected the text "
		                    "nvidia-smi writes");
		tm_procs_clear(&P);
		/* every cut of a good list: never a crash */
		for (size_t n = 0; n < strlen(t); n++) {
			err.code = 0;
			tm_procs_loadb("P", t, n, &P, &err);
			tm_procs_clear(&P);
		}
	}
}

#define J1 "{\"format\": \"thermap.job/1\", \"parallel\": {\"dp\": 2}, " \
	"\"nproc_per_node\": 2, \"schedule\": {\"kind\": \"1f1b\", " \
	"\"microbatches\": 4}, \"stages\": [{\"fwd_ms\": 1, \"bwd_ms\": 2}], " \
	"\"measured\": "
#define R0 "{\"rank\": 0, \"fwd_ms\": 1, \"bwd_ms\": 2"
#define R1 "{\"rank\": 1, \"fwd_ms\": 1, \"bwd_ms\": 2"

static const struct {
	const char *text;
	const char *err;
} job_cases[] = {
	{ J1 "{\"start_unix_s\": 1.8e9, \"end_unix_s\": 1.8e9, \"ranks\": ["
	  R0 ", \"pid\": 12}, " R1 ", \"pid\": 2147483647}]}}", NULL },
	{ J1 "{\"start_unix_s\": null, \"end_unix_s\": 5}}", NULL },
	{ J1 "{\"ranks\": [" R0 ", \"pid\": null}, " R1 "}]}}", NULL },
	{ J1 "{\"ranks\": [" R0 ", \"pid\": 0}, " R1 "}]}}",
	  "J: measured.ranks[0].pid: 0 is out of range; expected an integer "
	  "from 1 to 2147483647" },
	{ J1 "{\"ranks\": [" R0 ", \"pid\": 2147483648}, " R1 "}]}}",
	  "J: measured.ranks[0].pid: 2.14748e+09 is out of range; expected an "
	  "integer from 1 to 2147483647" },
	{ J1 "{\"ranks\": [" R0 ", \"pid\": 1.5}, " R1 "}]}}",
	  "J: measured.ranks[0].pid: 1.5 is not an integer; expected an "
	  "integer from 1 to 2147483647" },
	{ J1 "{\"ranks\": [" R0 ", \"pid\": \"12\"}, " R1 "}]}}",
	  "J: measured.ranks[0].pid: expected an integer from 1 to "
	  "2147483647" },
	{ J1 "{\"ranks\": [" R0 ", \"pid\": 12}, " R1 "}]}}",
	  "J: measured.ranks[1].pid: missing, but ranks[0] gives one; expected "
	  "a pid for every rank or for none" },
	{ J1 "{\"ranks\": [" R0 "}, " R1 ", \"pid\": 12}]}}",
	  "J: measured.ranks[0].pid: missing, but ranks[1] gives one; expected "
	  "a pid for every rank or for none" },
	{ J1 "{\"start_unix_s\": -1}}", "J: measured.start_unix_s: -1 is out "
	  "of range; expected a number from 0 to 1e+11" },
	{ J1 "{\"end_unix_s\": 2e11}}", "J: measured.end_unix_s: 2e+11 is out "
	  "of range; expected a number from 0 to 1e+11" },
	{ J1 "{\"start_unix_s\": \"now\"}}", "J: measured.start_unix_s: "
	  "expected a number from 0 to 1e+11" },
	{ J1 "{\"start_unix_s\": 100, \"end_unix_s\": 99.5}}",
	  "J: measured.end_unix_s: 99.5 is before start_unix_s 100; expected "
	  "the time the last rank finished, after the first was ready" },
};

static void test_job_fields(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof job_cases / sizeof *job_cases; i++) {
		tm_job *j = NULL;
		tm_error err = { 0, "" };
		int rc = tm_job_loadb("J", job_cases[i].text,
		                      strlen(job_cases[i].text), &j, &err);
		if (job_cases[i].err ? rc != TM_EINPUT ||
		    strcmp(err.msg, job_cases[i].err) : rc != 0)
			fail_msg("case %zu: expected \"%s\"; got %d: %s", i,
			         job_cases[i].err ? job_cases[i].err : "ok", rc,
			         err.msg);
		tm_job_free(j);
	}
	{
		/* what calibrate reads of the first */
		tm_job *j = NULL;
		tm_job_measured m;
		tm_error err = { 0, "" };
		put_file(path("j.json"), job_cases[0].text);
		assert_int_equal(tm_job_load(path("j.json"), &j, &err), 0);
		assert_int_equal(tm_job_measured_load(j, &m, &err), 0);
		assert_true(m.pids);
		assert_int_equal(m.ranks[0].pid, 12);
		assert_int_equal(m.ranks[1].pid, 2147483647);
		assert_true(m.start_unix_s == 1.8e9 && m.end_unix_s == 1.8e9);
		assert_true(isnan(m.iteration_ms));
		tm_job_measured_clear(&m);
		tm_job_free(j);
		put_file(path("j.json"), job_cases[2].text);
		assert_int_equal(tm_job_load(path("j.json"), &j, &err), 0);
		assert_int_equal(tm_job_measured_load(j, &m, &err), 0);
		assert_false(m.pids);
		assert_true(isnan(m.start_unix_s) && isnan(m.end_unix_s));
		tm_job_measured_clear(&m);
		tm_job_free(j);
	}
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
		cmocka_unit_test(test_busy_95),
		cmocka_unit_test(test_prior),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_bg_direct),
		cmocka_unit_test(test_bg_indirect),
		cmocka_unit_test(test_bg_unknown),
		cmocka_unit_test(test_bg_removed),
		cmocka_unit_test(test_unused),
		cmocka_unit_test(test_bg_nopids),
		cmocka_unit_test(test_bg_refusals),
		cmocka_unit_test(test_coupling_refit),
		cmocka_unit_test(test_coupling_bounds),
		cmocka_unit_test(test_procs_parse),
		cmocka_unit_test(test_job_fields),
		cmocka_unit_test(test_derate_times),
		cmocka_unit_test(test_derate_clocks),
		cmocka_unit_test(test_derate_few),
		cmocka_unit_test(test_derate_alone),
		cmocka_unit_test(test_fit_spread),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
