/*
 * calibrate.c — `thermap calibrate` (docs/calibrate.md): the model's
 * parameters of the GPUs a plan ran on, fitted to what was measured while
 * it ran, and written back into the profile.
 *
 * From the telemetry of the run (read by the readers of `thermap profile`,
 * with the settling rule of docs/profile.md applied to in-job samples) it
 * takes each GPU's settled mean power, temperature and SM clock, with
 * their standard errors, and the power of work that is not the job's
 * (busy samples outside the job's span; the GPUs of the plan's hosts
 * that the plan leaves unused). With the process lists taken while the
 * job ran it tells the job's processes from others. It fits:
 *  - derate: each GPU's speed against the fastest GPU of its stage, from
 *    the job's measured per-rank times, else from the in-job clocks;
 *  - background_power_w: the power of another process on a GPU, measured
 *    outside the job, else from the GPU's floor while its rank waits,
 *    else (a process listed, nothing to measure it by) a range;
 *  - power_wait_w: the power of a rank that waits, from the measured power
 *    and the model's own busy fraction where the rank waits long enough
 *    to say, pooled with the other GPUs of its model (random effects);
 *    a GPU without an estimate of its own takes that pool, or its prior;
 *  - temp_fit_sd_c: the spread of the thermal fit, from its residuals at
 *    the job's (power, temperature) points, with the heat of each GPU's
 *    neighbours.
 *  - a coupling (profile --phases) with its steady states: the run's joins
 *    them and the joint fit is refitted (tm_coupling_fit).
 * Otherwise it does not move ambient_c or r_c_per_w: a job point measures
 * the conditions of one run as much as the fit (docs/calibrate.md, "The
 * thermal fit"). It does not plan, and a calibration replaces earlier
 * calibrated values rather than accumulating runs (a coupling's run
 * points excepted).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "ops/ops.h"

/* Which samples count: the rule of `thermap profile` (docs/profile.md,
 * "Which samples count"), for busy samples. */
#define BUSY_UTIL 10.0     /* % utilisation: busy from here */
#define BUSY_PFRAC 0.25    /* without utilisation: 25 % of the power limit */
#define SETTLE_S 30.0      /* settled after this long in one state */
#define GUARD_S 1.0        /* the last second before a change is mixed */
#define QCAP 1024          /* samples held for the guard, per GPU */
/* Standard errors by batch means over blocks of this length: samples
 * 0.5 s apart are not independent (temperature follows the heat sink's
 * time constant), means of 10 s blocks nearly are. */
#define BLOCK_S 10.0
/* The smallest standard error of a mean power: two runs of the same GPU
 * in the same stage of fixtures/real/h200x4-vm agreed within 0.3 W; a
 * batch-means error from a few blocks can come out smaller than that. */
#define POWER_SE_FLOOR_W 1.0
/* One SM clock step: smaller clock differences are below resolution
 * (docs/profile.md, derate). */
#define CLOCK_STEP_MHZ 15.0
/* The smallest uncertainty of a derate from measured times: per-rank
 * compute of one stage differed by 1.45 % between two GPUs of one run of
 * fixtures/real/h200x4-vm (21.25 and 21.56 ms per microbatch) and by
 * 0.4 % with another partner in the other run, with no GPU slowed; the
 * compute of a rank that shares its GPU with spinning NCCL kernels varies
 * this much. */
#define DERATE_TIME_FLOOR 0.02
/* A rank's measured time is a speed from this many iterations: on
 * fixtures/real/h200x4-vm the median of 1 to 5 consecutive iterations
 * strayed from the run's by up to 2.3 % (as much as DERATE_TIME_FLOOR),
 * of 10 by at most 0.8 %. */
#define MIN_ITERATIONS 10
/* The relative uncertainty of the model's busy fraction: its iteration
 * time against the measured one (measured.iteration_ms), at least
 * BUSY_REL_FLOOR, since the busy fraction uses the stage's time and a
 * rank's own compute strays from it by as much as DERATE_TIME_FLOOR;
 * without a measured iteration, BUSY_REL_DEFAULT, the model's miss on
 * fixtures/real/h200x4-vm (309.95 against 328.3 ms). */
#define BUSY_REL_FLOOR 0.02
#define BUSY_REL_DEFAULT 0.06
/* A rank's own waiting power needs it to wait this share of the
 * iteration: the estimate's uncertainty grows as 1/(1 − b)² through the
 * busy fraction's, from ±20–24 W at b = 0.56 to ±110–128 W at b = 0.93
 * on fixtures/real/h200x4-vm, and a 2×H200 run at b = 0.95 gave 636 ±
 * 71 W for a GPU whose light stage then ran 7.6 °C cooler than that
 * predicted. */
#define WAIT_SHARE_MIN 0.2
/* How many standard uncertainties make a difference: an estimate
 * outside idle..load, a floor above its peers' waiting power, a derate
 * above 1 (a one-sided 2.3 % chance each, by noise alone). */
#define RESOLVE_K 2.0
/* The model's waiting power without a measured one (problem.c): this
 * share of idle → load, with this uncertainty; WAIT_SHARE_SD is also
 * the between-GPU spread taken where too few GPUs waited to measure it. */
#define WAIT_SHARE 0.45
#define WAIT_SHARE_SD 0.07
/* GPUs that must have waited to measure the between-GPU spread
 * (DerSimonian–Laird): two give one difference, which says little. */
#define TAU_MIN_GPUS 3
/* Background power measured directly: busy samples outside the job's
 * span, this long into their busy run (the first samples of a burst
 * climb), and at least this many seconds of them. */
#define BG_SETTLE_S 2.0
#define BG_MIN_S 3.0
/* problem.c's rule for a clock under the power cap: capped in at least
 * half the samples and thermally slowed in under 5 %. */
#define PCAP_FRAC 0.5
#define THERMAL_FRAC 0.05
/* The thermal fit's spread when the profile does not give it
 * (problem.c's FIT_SD_DEFAULT_C). */
#define FIT_SD_DEFAULT_C 0.5

/* ---- telemetry: in the job, and around it ----------------------------------- */

enum { F_TEMP, F_POWER, F_CLOCK, NF };

typedef struct wstat {      /* Welford: count, mean, sum of squares */
	double n, mean, m2;
} wstat;

static void ws_add(wstat *w, double x)
{
	double d;
	if (isnan(x))
		return;
	w->n++;
	d = x - w->mean;
	w->mean += d / w->n;
	w->m2 += d * (x - w->mean);
}

static double ws_mean(const wstat *w)
{
	return w->n > 0 ? w->mean : NAN;
}

static double ws_sd(const wstat *w)
{
	return w->n > 1 ? sqrt(w->m2 / (w->n - 1)) : NAN;
}

/* Where a sample lies against the job's span (measured.start_unix_s and
 * end_unix_s): before it, in it, after it, or in the second beyond
 * either end, which is neither. Without a span every sample is in it. */
enum { P_BEFORE, P_IN, P_AFTER, P_EDGE };

/* What a settled sample counts for: the job (busy in its span), power
 * that is not the job's (busy outside its span), or an idle GPU in its
 * span (a GPU the plan leaves unused). */
enum { K_JOB, K_BG, K_IDLE, NK };

typedef struct held {       /* a settled sample waiting out the guard */
	double t;
	double v[NF];
	double pcap, thermal;   /* reason flags, NAN when not logged */
	int kind;               /* K_JOB, K_BG, K_IDLE */
	long run;               /* its state run */
} held;

/* The settled samples of one kind. */
typedef struct acc {
	long n;                 /* samples */
	wstat f[NF];            /* over the samples */
	wstat blk[NF];          /* over block means */
	double bt0, blast;      /* the open block's first and last time */
	double bs[NF], bn[NF];  /* its sums and counts */
	wstat pcap, thermal;    /* reason flags over the samples */
	double t0, t1;          /* first and last time, NAN */
	double secs;            /* seconds of the closed stretches: one
	                           stretch per state run */
	double s0, s1;          /* the open stretch's first and last time */
	long srun;              /* its state run */
} acc;

/* One telemetry GPU. */
typedef struct tacc {
	long seen;              /* samples of it in the window */
	double first, last;     /* their first and last time, NAN */
	int key;                /* the current run's state and period */
	bool started;
	double run_start;       /* s */
	long run;               /* state runs so far */
	double plimit;          /* last power limit seen, W */
	held *q;                /* settled samples inside the guard, a ring
	                           of qcap (grown to QCAP) */
	int qhead, qn, qcap;
	acc k[NK];              /* by kind */
} tacc;

typedef struct tele {
	tacc **g;               /* by the sink's GPU id; NULL when unseen */
	int n, cap;
	double start, end;      /* the job's span, s since 1970; NAN */
} tele;

static tacc *tacc_new(void)
{
	tacc *a = xcalloc(1, sizeof *a);
	a->plimit = a->first = a->last = NAN;
	for (int k = 0; k < NK; k++) {
		acc *x = &a->k[k];
		x->bt0 = x->blast = x->t0 = x->t1 = x->s0 = x->s1 = NAN;
	}
	return a;
}

static void block_close(acc *x)
{
	for (int k = 0; k < NF; k++)
		if (x->bn[k] > 0)
			ws_add(&x->blk[k], x->bs[k] / x->bn[k]);
	memset(x->bs, 0, sizeof x->bs);
	memset(x->bn, 0, sizeof x->bn);
	x->bt0 = x->blast = NAN;
}

static void acc_add(acc *x, const held *h)
{
	x->n++;
	for (int k = 0; k < NF; k++)
		ws_add(&x->f[k], h->v[k]);
	ws_add(&x->pcap, h->pcap);
	ws_add(&x->thermal, h->thermal);
	if (isnan(h->t))
		return;
	if (isnan(x->t0))
		x->t0 = h->t;
	x->t1 = h->t;
	if (isnan(x->s0) || h->run != x->srun) {
		if (!isnan(x->s0))
			x->secs += x->s1 - x->s0;
		x->s0 = h->t;
		x->srun = h->run;
	}
	x->s1 = h->t;
	if (!isnan(x->bt0) && h->t - x->bt0 >= BLOCK_S)
		block_close(x);
	if (isnan(x->bt0))
		x->bt0 = h->t;
	x->blast = h->t;
	for (int k = 0; k < NF; k++)
		if (!isnan(h->v[k])) {
			x->bs[k] += h->v[k];
			x->bn[k]++;
		}
}

static void release(tacc *a, const held *h)
{
	acc_add(&a->k[h->kind], h);
}

static int state_of(tacc *a, const tl_sample *s)
{
	double u = s->v[TL_UTIL], p = s->v[TL_POWER];
	double lim = !isnan(s->v[TL_POWER_LIMIT]) ? s->v[TL_POWER_LIMIT]
	                                          : a->plimit;
	if (!isnan(u))
		return u >= BUSY_UTIL;
	if (isnan(p) || isnan(lim) || lim <= 0)
		return -1;
	return p >= BUSY_PFRAC * lim;
}

static int period_of(const tele *T, double t)
{
	if (t < T->start)
		return t < T->start - GUARD_S ? P_BEFORE : P_EDGE;
	if (t > T->end)
		return t > T->end + GUARD_S ? P_AFTER : P_EDGE;
	return P_IN;
}

/* What a sample of state st in period per counts for once settled, and
 * after how long in its run: -1 for nothing. */
static int kind_of(int st, int per, double *settle)
{
	*settle = SETTLE_S;
	if (per == P_IN)
		return st == 1 ? K_JOB : st == 0 ? K_IDLE : -1;
	*settle = BG_SETTLE_S;
	return per != P_EDGE && st == 1 ? K_BG : -1;
}

static void tele_grow(tele *T, int gpu)
{
	int ncap = T->cap ? 2 * T->cap : 16;
	while (ncap <= gpu)
		ncap *= 2;
	T->g = xrealloc(T->g, sizeof *T->g * (size_t)ncap);
	memset(T->g + T->cap, 0, sizeof *T->g * (size_t)(ncap - T->cap));
	T->cap = ncap;
}

static void hold(tacc *a, const held *h)
{
	if (a->qn == a->qcap && a->qcap < QCAP) {
		int ncap = a->qcap ? 2 * a->qcap : 8;
		held *nq = xmalloc(sizeof *nq * (size_t)ncap);
		for (int i = 0; i < a->qn; i++)
			nq[i] = a->q[(a->qhead + i) % a->qcap];
		free(a->q);
		a->q = nq;
		a->qcap = ncap;
		a->qhead = 0;
	}
	if (a->qn == a->qcap) {   /* more than QCAP samples within a second */
		release(a, &a->q[a->qhead]);
		a->qhead = (a->qhead + 1) % a->qcap;
		a->qn--;
	}
	a->q[(a->qhead + a->qn) % a->qcap] = *h;
	a->qn++;
}

/* The telemetry sink's tap: every sample of the window, in each GPU's
 * order. A run is a stretch of one state (busy, idle, unknown) in one
 * period of the job's span; a settled sample waits out GUARD_S for the
 * next change of run. */
static void tap(void *ctx, int gpu, const tl_sample *s)
{
	tele *T = ctx;
	tacc *a;
	held h;
	int st, key;
	double settle;

	if (gpu >= T->cap)
		tele_grow(T, gpu);
	if (gpu >= T->n)
		T->n = gpu + 1;
	if (!T->g[gpu])
		T->g[gpu] = tacc_new();
	a = T->g[gpu];
	a->seen++;
	st = state_of(a, s);
	if (!isnan(s->v[TL_POWER_LIMIT]))
		a->plimit = s->v[TL_POWER_LIMIT];
	h.t = s->t;
	h.v[F_TEMP] = s->v[TL_TEMP];
	h.v[F_POWER] = s->v[TL_POWER];
	h.v[F_CLOCK] = s->v[TL_SM_CLOCK];
	h.pcap = s->v[TL_PCAP];
	h.thermal = s->v[TL_THERMAL];
	h.run = -1;
	if (isnan(s->t)) {
		/* a snapshot without time: nothing to settle against, it
		 * counts as profile.md says, and as the job's */
		if (st >= 0) {
			h.kind = st ? K_JOB : K_IDLE;
			release(a, &h);
		}
		return;
	}
	if (isnan(a->first))
		a->first = s->t;
	a->last = s->t;
	key = (st + 1) * 4 + period_of(T, s->t);
	if (!a->started || key != a->key) {
		/* a change of run: what is held more than GUARD_S before it
		 * is settled, the rest was mixed */
		for (; a->qn; a->qhead = (a->qhead + 1) % a->qcap, a->qn--)
			if (s->t - a->q[a->qhead].t > GUARD_S)
				release(a, &a->q[a->qhead]);
		a->started = true;
		a->key = key;
		a->run_start = s->t;
		a->run++;
	}
	while (a->qn && s->t - a->q[a->qhead].t > GUARD_S) {
		release(a, &a->q[a->qhead]);
		a->qhead = (a->qhead + 1) % a->qcap;
		a->qn--;
	}
	h.kind = kind_of(st, period_of(T, s->t), &settle);
	if (h.kind < 0 || s->t - a->run_start < settle)
		return;
	h.run = a->run;
	hold(a, &h);
}

static void acc_finish(acc *x)
{
	/* a last block shorter than half a block says little */
	if (!isnan(x->bt0) && x->blast - x->bt0 >= BLOCK_S / 2)
		block_close(x);
	if (!isnan(x->s0))
		x->secs += x->s1 - x->s0;
	x->s0 = x->s1 = NAN;
}

/* The end of the log is no change of state: what is held is settled. */
static void tacc_finish(tacc *a)
{
	for (; a->qn; a->qhead = (a->qhead + 1) % a->qcap, a->qn--)
		release(a, &a->q[a->qhead]);
	free(a->q);
	a->q = NULL;
	a->qcap = 0;
	for (int k = 0; k < NK; k++)
		acc_finish(&a->k[k]);
}

/* The standard error of the mean of field k: by batch means when there
 * are two blocks or more, else from the samples as if independent. */
static double acc_se(const acc *x, int k)
{
	if (x->blk[k].n >= 2)
		return ws_sd(&x->blk[k]) / sqrt(x->blk[k].n);
	if (x->f[k].n >= 2)
		return ws_sd(&x->f[k]) / sqrt(x->f[k].n);
	return NAN;
}

static void tele_free(tele *T)
{
	for (int i = 0; i < T->n; i++)
		if (T->g[i]) {
			free(T->g[i]->q);
			free(T->g[i]);
		}
	free(T->g);
	T->g = NULL;
	T->n = T->cap = 0;
}

/* Reads every telemetry file into T through the sink's tap; the sink
 * stays for the GPUs' identities. */
static int read_tele(const tm_cal_opts *o, tele *T, tl_sink **sink,
                     tm_error *err)
{
	tl_opts to = { o->window.from, o->window.to, o->window.from_rel,
	               o->window.to_rel, o->window.interval_ms / 1000.0 };
	tl_sink *k = tl_sink_new(&to);
	tl_src *srcs = xcalloc((size_t)o->ntele, sizeof *srcs);
	int rc;

	tl_sink_tap(k, tap, T);
	rc = tl_read_inputs(k, o->tele, o->ntele, srcs, false, err);
	free(srcs);
	for (int i = 0; i < T->n; i++)
		if (T->g[i])
			tacc_finish(T->g[i]);
	*sink = k;
	return rc;
}

/* ---- process lists: nvidia-smi --query-compute-apps ------------------------ */

/* The columns calibrate reads; others are skipped. Without a header the
 * first four columns are these, in this order (the command docs/
 * calibrate.md gives). */
enum { C_UUID, C_PID, C_NAME, C_MEM, NCOL };
static const char *const col_names[NCOL] = { "gpu_uuid", "pid",
	"process_name", "used_gpu_memory" };
/* A process list is a snapshot of a few processes a GPU: 16 MiB holds
 * some 200,000 rows. */
#define PROCS_MAX_BYTES (16u << 20)
#define PROCS_MAX_FIELDS 64

static int procs_fail(const char *file, long line, tm_error *err,
                      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int procs_fail(const char *file, long line, tm_error *err,
                      const char *fmt, ...)
{
	va_list ap;
	int rc;
	va_start(ap, fmt);
	rc = tm_vfail_at(err, TM_EINPUT, file, line, fmt, ap);
	va_end(ap);
	return rc;
}

static char *trim(char *s)
{
	char *e;
	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		*--e = '\0';
	return s;
}

/* Splits line at commas into at most max fields (the last keeps the
 * rest); returns how many, or -1 when there are more. */
static int split(char *line, char **f, int max)
{
	int n = 0;
	for (char *p = line;; p++) {
		if (n == max)
			return -1;
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			return n;
		*p = '\0';
	}
}

/* nvidia-smi's words for a value it has not: "[N/A]", "[Not Supported]",
 * "[Insufficient Permissions]", "[Unknown Error]". */
static bool unknown_value(const char *v)
{
	size_t n = strlen(v);
	return !strcmp(v, "N/A") || (n >= 2 && v[0] == '[' && v[n - 1] == ']');
}

/* A header's column name, without its unit: "used_gpu_memory [MiB]". */
static int column_of(char *name)
{
	char *u = strchr(name, '[');
	if (u)
		*u = '\0';
	name = trim(name);
	for (int c = 0; c < NCOL; c++)
		if (!strcasecmp(name, col_names[c]))
			return c;
	/* the query's other spellings of the same columns */
	if (!strcasecmp(name, "name"))
		return C_NAME;
	if (!strcasecmp(name, "used_memory"))
		return C_MEM;
	return -1;
}

typedef struct pcols {
	int at[NCOL];           /* column → field, -1 when absent */
	int n;                  /* fields of a row */
	char text[512];         /* the header line, as read (to compare) */
	int line;               /* its line; 0: no header */
} pcols;

/* Is this line a header (it names gpu_uuid or pid)? C gets its columns. */
static int read_header(const char *file, int ln, const char *raw, pcols *C,
                       bool *is, tm_error *err)
{
	char buf[512], *f[PROCS_MAX_FIELDS];
	int n;
	*is = false;
	if (strlen(raw) >= sizeof buf)
		return 0;
	snprintf(buf, sizeof buf, "%s", raw);
	if ((n = split(buf, f, PROCS_MAX_FIELDS)) < 0)
		return 0;
	for (int c = 0; c < NCOL; c++)
		C->at[c] = -1;
	for (int i = 0; i < n; i++) {
		int c = column_of(f[i]);
		if (c < 0)
			continue;
		if (C->at[c] >= 0)
			return procs_fail(file, ln, err, "the header names %s twice; "
			                  "expected each column once", col_names[c]);
		C->at[c] = i;
	}
	if (C->at[C_UUID] < 0 && C->at[C_PID] < 0)
		return 0;
	*is = true;
	if (C->at[C_UUID] < 0 || C->at[C_PID] < 0)
		return procs_fail(file, ln, err, "the header names no %s column; "
		                  "expected the output of nvidia-smi "
		                  "--query-compute-apps=gpu_uuid,pid,process_name,"
		                  "used_gpu_memory --format=csv",
		                  col_names[C->at[C_UUID] < 0 ? C_UUID : C_PID]);
	C->n = n;
	C->line = ln;
	snprintf(C->text, sizeof C->text, "%s", raw);
	return 0;
}

static int parse_pid(const char *v, long *pid)
{
	char *end;
	long x;
	if (unknown_value(v)) {
		*pid = -1;
		return 0;
	}
	if (*v < '0' || *v > '9')
		return -1;
	errno = 0;
	x = strtol(v, &end, 10);
	if (*end || errno || x < 1 || x > 2147483647)
		return -1;
	*pid = x;
	return 0;
}

static int parse_mib(const char *v, double *mib)
{
	char *end;
	double x;
	if (unknown_value(v)) {
		*mib = NAN;
		return 0;
	}
	x = strtod(v, &end);
	if (end == v)
		return -1;
	end = trim(end);
	if (*end && strcmp(end, "MiB"))
		return -1;
	if (!(x >= 0 && x <= 1e9))
		return -1;
	*mib = x;
	return 0;
}

/* One row into P->p[P->n]. */
static int read_row(const char *file, int ln, char *line, const pcols *C,
                    tm_procs *P, tm_error *err)
{
	char *f[PROCS_MAX_FIELDS], *v;
	int n = split(line, f, PROCS_MAX_FIELDS), extra;
	tm_proc *x;

	if (n < 0)
		return procs_fail(file, ln, err, "more than %d fields; expected "
		                  "one process per line", PROCS_MAX_FIELDS);
	extra = n - C->n;
	/* a process name may hold commas: the fields beyond the header's are
	 * its own */
	if (extra < 0 || (extra > 0 && C->at[C_NAME] < 0))
		return procs_fail(file, ln, err, "%d field(s); %s %d: expected one "
		                  "value per column", n, C->line ? "the header "
		                  "names" : "without a header, gpu_uuid, pid, "
		                  "process_name, used_gpu_memory are", C->n);
	if (extra > 0)
		for (int i = C->at[C_NAME] + 1; i <= C->at[C_NAME] + extra; i++)
			f[i][-1] = ',';
	for (int i = 0; i < n; i++)
		f[i] = trim(f[i]);
	if (extra > 0)
		for (int i = C->at[C_NAME] + 1; i < n - extra; i++)
			f[i] = f[i + extra];
	if ((P->n & (P->n - 1)) == 0)   /* at 0, 1, 2, 4, ...: double */
		P->p = xrealloc(P->p, sizeof *P->p * (size_t)(P->n ? 2 * P->n : 1));
	x = &P->p[P->n];
	memset(x, 0, sizeof *x);
	x->line = ln;
	x->mem_mib = NAN;
	v = f[C->at[C_UUID]];
	if (!unknown_value(v) && !tm_valid_uuid(v))
		return procs_fail(file, ln, err, "gpu_uuid \"%.60s\": expected a "
		                  "GPU UUID (GPU-..., MIG-...) or [N/A]", v);
	if (parse_pid(f[C->at[C_PID]], &x->pid))
		return procs_fail(file, ln, err, "pid \"%.60s\": expected a "
		                  "process id, 1 to 2147483647, or [N/A]",
		                  f[C->at[C_PID]]);
	if (C->at[C_MEM] >= 0 && parse_mib(f[C->at[C_MEM]], &x->mem_mib))
		return procs_fail(file, ln, err, "used_gpu_memory \"%.60s\": "
		                  "expected MiB, 0 to 10^9, or [N/A]",
		                  f[C->at[C_MEM]]);
	if (!unknown_value(v))
		x->uuid = xstrdup(v);
	if (C->at[C_NAME] >= 0 && *f[C->at[C_NAME]] &&
	    !unknown_value(f[C->at[C_NAME]]))
		x->name = xstrdup(f[C->at[C_NAME]]);
	P->n++;
	return 0;
}

void tm_procs_clear(tm_procs *P)
{
	for (int i = 0; i < P->n; i++) {
		free(P->p[i].uuid);
		free(P->p[i].name);
	}
	free(P->p);
	free(P->file);
	memset(P, 0, sizeof *P);
}

int tm_procs_loadb(const char *name, const char *text, size_t len,
                   tm_procs *P, tm_error *err)
{
	pcols C = { { C_UUID, C_PID, C_NAME, C_MEM }, NCOL, "", 0 }, H;
	const char *s = text, *end = text + len;
	bool first = true;
	int rc = 0, ln = 0;

	memset(P, 0, sizeof *P);
	P->file = xstrdup(name);
	while (s < end && !rc) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		char *line, *t;
		bool is;
		ln++;
		if (memchr(s, '\0', n)) {
			rc = procs_fail(name, ln, err, "a NUL byte; expected the text "
			                "nvidia-smi writes");
			break;
		}
		line = xmalloc(n + 1);
		memcpy(line, s, n);
		line[n] = '\0';
		s += n + (nl != NULL);
		t = trim(line);
		/* nothing, or what an nvidia-smi that finds no process says */
		if (!*t || !strncasecmp(t, "No running", 10)) {
			free(line);
			continue;
		}
		if (C.line && !strcmp(t, C.text)) {
			free(line);   /* the header again: lists of several runs */
			continue;
		}
		if (!(rc = read_header(name, ln, t, &H, &is, err)) && is) {
			if (first)
				C = H;
			else if (!C.line)
				rc = procs_fail(name, ln, err, "a header after data; "
				                "expected it on the first line");
			else
				rc = procs_fail(name, ln, err, "a header unlike line %d's; "
				                "expected one list of the same columns",
				                C.line);
		} else if (!rc) {
			rc = read_row(name, ln, t, &C, P, err);
		}
		first = false;
		free(line);
	}
	if (rc)
		tm_procs_clear(P);
	return rc;
}

int tm_procs_load(const char *file, tm_procs *P, tm_error *err)
{
	char *text;
	size_t len;
	int rc;
	memset(P, 0, sizeof *P);
	if ((rc = tm_read_file(file, PROCS_MAX_BYTES, &text, &len, err)))
		return rc;
	rc = tm_procs_loadb(file, text, len, P, err);
	free(text);
	return rc;
}

/* ---- the run: inputs, the plan's placement, its GPUs' telemetry ---------- */

/* What the process lists say of one GPU of a plan host. */
typedef struct gproc {
	int foreign;            /* processes on it that are not the job's */
	bool unsure;            /* the job gives no pids: there is one more
	                           process than ranks, not told apart */
	char text[320];         /* "pid 4242 python3, ...": those processes
	                           (every one listed when unsure) */
} gproc;

typedef struct cal {
	const tm_cal_opts *o;
	tm_cluster *c;
	tm_profile *p;          /* the prior; edited in place as fields are
	                           fitted, for the next model */
	char *ptext;            /* the profile file's bytes */
	size_t plen;
	tm_job *j;
	tm_job *jr;             /* the job with the plan's layers, or NULL */
	tm_job_measured m;      /* the job's measured section */
	tm_policy *pol;         /* the built-in one: criteria are not used */
	tm_plan_doc plan;
	tm_procs *procs;        /* the --processes lists */
	int nprocs;
	int *flat;              /* rank → flat GPU */
	int *tid;               /* rank → telemetry GPU */
	int *gtid;              /* flat GPU → telemetry GPU, -1; on the
	                           plan's hosts */
	int *owner;             /* flat GPU → its rank, -1 */
	bool *plan_host;        /* host → the plan runs ranks on it */
	gproc *gp;              /* flat GPU → its other processes */
	double *gpw;            /* flat GPU → measured mean power in the
	                           job, W; NAN */
	tele T;
	tl_sink *sink;
	tm_cal_gpu *g;          /* per rank */
	tm_cal_gpu *u;          /* the unused GPUs of the plan's hosts that
	                           the telemetry has, in cluster order */
	int *uflat;             /* their flat GPUs */
	int nu;
	strbuf notes;           /* "note: ..." lines for the table */
	strbuf named;           /* lines naming GPUs with other work */
	strbuf files;           /* the telemetry files, for "calibrated" */
	strbuf pfiles;          /* the process lists, for "calibrated" */
	char (*why_derate)[768];/* per rank: what its derate stands on */
	double res_iter;        /* the model's iteration time with the
	                           calibrated derates, ms */
} cal;

static const tm_job *job_of(const cal *C)
{
	return C->jr ? C->jr : C->j;
}

static int open_problem(const cal *C, const tm_profile *p, tm_problem **pb,
                        tm_error *err)
{
	/* GPUs the plan does not use need no entry; a host's GPU count does
	 * not matter for a placement that is given */
	int rc = tm_problem_open(C->c, p, job_of(C), C->pol, true, true, pb,
	                         err);
	if (rc == TM_EINFEASIBLE) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		err->code = 0;
		rc = tm_fail(err, TM_EINPUT, "%s; expected the cluster the plan "
		             "ran on", msg);
	}
	return rc;
}

/* The layers per chunk a plan chose (a policy that changes layers): the
 * job as it ran. */
static int plan_layers(cal *C, tm_error *err)
{
	int *layers, n, rc;
	long total = 0;

	if ((rc = tm_plan_doc_chunks(&C->plan, &layers, &n, err)) || !layers)
		return rc;
	if (n != C->j->nstages)
		rc = tm_fail(err, TM_EINPUT, "%s: layers.chunks: expected %d "
		             "layer counts, one per chunk of %s", C->plan.file,
		             C->j->nstages, C->j->file);
	else if (!C->j->by_layers)
		rc = tm_fail(err, TM_EINPUT, "%s: layers.chunks: the plan chose "
		             "the layers, but %s does not give its stages by "
		             "layers", C->plan.file, C->j->file);
	for (int k = 0; k < n && !rc; k++)
		total += layers[k];
	if (!rc && total != tm_job_total_layers(C->j))
		rc = tm_fail(err, TM_EINPUT, "%s: layers.chunks: %ld layers in "
		             "all; %s has %d", C->plan.file, total, C->j->file,
		             tm_job_total_layers(C->j));
	if (!rc)
		C->jr = tm_job_relayer(C->j, layers);
	free(layers);
	return rc;
}

typedef struct gkey {       /* a GPU of the cluster, for lookups */
	int host;               /* node index */
	int index;              /* nvidia-smi index */
	const char *uuid;       /* or NULL */
	int flat;
} gkey;

static int cmp_gkey_index(const void *a, const void *b)
{
	const gkey *x = a, *y = b;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	return (x->index > y->index) - (x->index < y->index);
}

static int cmp_gkey_uuid(const void *a, const void *b)
{
	const gkey *x = a, *y = b;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	if (!x->uuid || !y->uuid)
		return (x->uuid == NULL) - (y->uuid == NULL);
	return strcmp(x->uuid, y->uuid);
}

typedef struct hname {
	const char *name;
	int host;
} hname;

static int cmp_hname(const void *a, const void *b)
{
	return strcmp(((const hname *)a)->name, ((const hname *)b)->name);
}

static int find_host(const hname *hs, int n, const char *name)
{
	hname key = { name, -1 };
	const hname *f = bsearch(&key, hs, (size_t)n, sizeof *hs, cmp_hname);
	return f ? f->host : -1;
}

static hname *hosts_sorted(const tm_cluster *c)
{
	hname *hs = xmalloc(sizeof *hs * (size_t)c->nnodes);
	for (int h = 0; h < c->nnodes; h++) {
		hs[h].name = c->nodes[h].host;
		hs[h].host = h;
	}
	qsort(hs, (size_t)c->nnodes, sizeof *hs, cmp_hname);
	return hs;
}

/* plan.json is a plan of this job: its world size, every rank's
 * coordinates, node and local rank, one host per node rank. */
static int plan_of_job(const cal *C, tm_error *err)
{
	const tm_plan_doc *P = &C->plan;
	const tm_job *j = job_of(C);
	int nproc = j->nproc_per_node;

	if (P->n != j->world)
		return tm_fail(err, TM_EINPUT, "%s: %d ranks; %s has %d: expected "
		               "a plan of this job", P->file, P->n, j->file,
		               j->world);
	for (int r = 0; r < P->n; r++) {
		const tm_plan_rank *x = &P->r[r];
		int c[TM_NDIM];
		tm_job_coords(j, r, c);
		for (int d = 0; d < TM_NDIM; d++)
			if (c[d] != x->coord[d])
				return tm_fail(err, TM_EINPUT, "%s: ranks[%d].%s is %d; %s "
				               "gives %d: expected a plan of this job's "
				               "parallel layout", P->file, r, tm_dim_names[d],
				               x->coord[d], j->file, c[d]);
		if (x->node != r / nproc || x->local != r % nproc)
			return tm_fail(err, TM_EINPUT, "%s: ranks[%d]: node rank %d, "
			               "local rank %d; with %d processes per node (%s) "
			               "rank %d is node rank %d, local rank %d",
			               P->file, r, x->node, x->local, nproc, j->file, r,
			               r / nproc, r % nproc);
		if (strcmp(x->host, P->r[r - x->local].host))
			return tm_fail(err, TM_EINPUT, "%s: ranks[%d].host: %s, but "
			               "node rank %d is on %s", P->file, r, x->host,
			               x->node, P->r[r - x->local].host);
	}
	return 0;
}

/* Each rank's GPU in the cluster, from plan.json (a plan of this job,
 * plan_of_job): GPUs of this cluster, one rank per GPU, each with a
 * profile entry. */
static int plan_flat(cal *C, const tm_problem *pb, tm_error *err)
{
	const tm_plan_doc *P = &C->plan;
	hname *hs = hosts_sorted(C->c);
	gkey *byidx = xmalloc(sizeof *byidx * (size_t)pb->ngpu);
	gkey *byuuid = xmalloc(sizeof *byuuid * (size_t)pb->ngpu);
	int *owner = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	int rc = 0;

	for (int g = 0; g < pb->ngpu; g++) {
		const tm_gpu *x = &C->c->nodes[pb->gpu_host[g]].gpus[pb->gpu_pos[g]];
		byidx[g] = (gkey){ pb->gpu_host[g], x->index, x->uuid, g };
		owner[g] = -1;
	}
	memcpy(byuuid, byidx, sizeof *byidx * (size_t)pb->ngpu);
	qsort(byidx, (size_t)pb->ngpu, sizeof *byidx, cmp_gkey_index);
	qsort(byuuid, (size_t)pb->ngpu, sizeof *byuuid, cmp_gkey_uuid);
	for (int r = 0; r < P->n && !rc; r++) {
		const tm_plan_rank *x = &P->r[r];
		int h;
		gkey key, *f = NULL;
		if ((h = find_host(hs, C->c->nnodes, x->host)) < 0) {
			rc = tm_fail(err, TM_EINPUT, "%s: ranks[%d].host: %s is not in "
			             "%s; expected the cluster the plan ran on", P->file,
			             r, x->host, C->c->file);
			break;
		}
		key = (gkey){ h, x->gpu, x->uuid, -1 };
		if (x->uuid)
			f = bsearch(&key, byuuid, (size_t)pb->ngpu, sizeof key,
			            cmp_gkey_uuid);
		if (!f) {
			f = bsearch(&key, byidx, (size_t)pb->ngpu, sizeof key,
			            cmp_gkey_index);
			/* a UUID on both sides decides */
			if (f && x->uuid && f->uuid)
				f = NULL;
		}
		if (!f) {
			rc = tm_fail(err, TM_EINPUT, "%s: ranks[%d]: GPU %s:%d%s%s is "
			             "not in %s; expected the cluster the plan ran on",
			             P->file, r, x->host, x->gpu, x->uuid ? " " : "",
			             x->uuid ? x->uuid : "", C->c->file);
			break;
		}
		if (owner[f->flat] >= 0) {
			rc = tm_fail(err, TM_EINPUT, "%s: ranks[%d]: GPU %s:%d is also "
			             "rank %d's", P->file, r, x->host, x->gpu,
			             owner[f->flat]);
			break;
		}
		owner[f->flat] = r;
		C->flat[r] = f->flat;
		if (pb->prof[f->flat] < 0)
			rc = tm_fail(err, TM_EINPUT, "%s: no entry for host %s GPU %d, "
			             "which runs rank %d of plan %s; calibrate fits the "
			             "entries of the GPUs the plan ran on",
			             C->p->file, x->host, x->gpu, r, P->id);
	}
	free(hs);
	free(byidx);
	free(byuuid);
	free(owner);
	return rc;
}

/* 3: same UUID, 2: same PCI bus id, 1: same index, 0: another GPU; the
 * join of docs/profile.md, "Hosts". */
static int same_gpu(const tm_gpu *x, const char *uuid, const char *pci,
                    int index)
{
	if (x->uuid && uuid)
		return strcmp(x->uuid, uuid) ? 0 : 3;
	if (x->pci_bus_id && pci)
		return strcmp(x->pci_bus_id, pci) ? 0 : 2;
	return index >= 0 && index == x->index;
}

static const char *first_file(const cal *C)
{
	return C->o->ntele ? C->o->tele[0].file : "(no telemetry)";
}

/* The UTC time of t (s since 1970) for a message. */
static void utc(char *buf, size_t n, double t)
{
	time_t x = (time_t)floor(t);
	struct tm tm;
	if (!isfinite(t) || !gmtime_r(&x, &tm) ||
	    !strftime(buf, n, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, n, "%.17g s", t);
}

/* Why a GPU of the plan has nothing to calibrate on: no settled in-job
 * sample with power and temperature. */
static int no_settled(const cal *C, const tm_node *n, const tm_gpu *x,
                      const tacc *a, tm_error *err)
{
	const acc *j = &a->k[K_JOB];
	if (j->n == 0 && (a->last < C->T.start || a->first > C->T.end)) {
		/* a log of local time read as UTC is hours off the span */
		char f[48], l[48], s[48], e[48];
		utc(f, sizeof f, a->first);
		utc(l, sizeof l, a->last);
		utc(s, sizeof s, C->T.start);
		utc(e, sizeof e, C->T.end);
		return tm_fail(err, TM_EINPUT, "%s: host %s GPU %d has samples "
		               "from %s to %s, none in the job's span (%s: "
		               "measured.start_unix_s %s, end_unix_s %s); expected "
		               "telemetry of the run, its times in UTC (a time "
		               "without a zone is read as UTC: log with TZ=UTC)",
		               first_file(C), n->host, x->index, f, l, C->j->file,
		               s, e);
	}
	return tm_fail(err, TM_EINPUT, "%s: host %s GPU %d has %ld sample(s) in "
	               "the window, %s; expected samples with power and "
	               "temperature, busy for more than %g s and not within "
	               "%g s of a change (the run, or a window inside it)",
	               first_file(C), n->host, x->index, a->seen, j->n == 0 ?
	               "none of them settled in the job" : j->f[F_POWER].n == 0 ?
	               "none settled with a power reading" : "none settled with "
	               "a temperature", SETTLE_S, GUARD_S);
}

/* Each GPU of the plan's hosts among the telemetry's: same host, then
 * the strongest key both know. Every GPU of the plan needs settled
 * samples; the others are read when the telemetry has them. */
static int match_tele(cal *C, const tm_problem *pb, tm_error *err)
{
	int nr = job_of(C)->world;
	hname *hs = hosts_sorted(C->c);
	const char *other = NULL;
	int rc = 0;

	C->gtid = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	C->owner = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	C->plan_host = xcalloc((size_t)pb->nhost, sizeof *C->plan_host);
	for (int g = 0; g < pb->ngpu; g++)
		C->gtid[g] = C->owner[g] = -1;
	for (int r = 0; r < nr; r++) {
		C->owner[C->flat[r]] = r;
		C->plan_host[pb->gpu_host[C->flat[r]]] = true;
	}
	for (int id = 0; id < C->T.n && !rc; id++) {
		const char *host, *uuid, *pci;
		int index, h, best = -1, bestq = 0, g, r;
		const tm_node *n;
		if (!C->T.g[id] || !C->T.g[id]->seen)
			continue;
		tl_gpu_ident(C->sink, id, &host, &uuid, &pci, &index);
		if ((h = find_host(hs, C->c->nnodes, host)) < 0) {
			other = host;
			continue;
		}
		if (!C->plan_host[h])
			continue;
		n = &C->c->nodes[h];
		for (int k = 0; k < n->ngpus; k++) {
			int q = same_gpu(&n->gpus[k], uuid, pci, index);
			if (q > bestq) {
				bestq = q;
				best = k;
			}
		}
		if (best < 0)
			continue;
		g = pb->host_first[h] + best;
		if ((r = C->owner[g]) >= 0 && C->gtid[g] >= 0)
			rc = tm_fail(err, TM_EINPUT, "%s: two GPUs of the telemetry "
			             "are host %s GPU %d (rank %d of plan %s); expected "
			             "one identity per GPU", first_file(C), host,
			             n->gpus[best].index, r, C->plan.id);
		if (C->gtid[g] < 0)   /* a GPU the plan leaves unused: the first */
			C->gtid[g] = id;
	}
	for (int r = 0; r < nr && !rc; r++) {
		const tm_node *n = &C->c->nodes[pb->gpu_host[C->flat[r]]];
		const tm_gpu *x = &n->gpus[pb->gpu_pos[C->flat[r]]];
		const tacc *a;
		C->tid[r] = C->gtid[C->flat[r]];
		a = C->tid[r] >= 0 ? C->T.g[C->tid[r]] : NULL;
		if (!a) {
			char hint[160] = "";
			if (other)
				snprintf(hint, sizeof hint, " (it names host %.60s: give "
				         "--host %s before the file)", other, n->host);
			rc = tm_fail(err, TM_EINPUT, "%s%s: no samples of host %s GPU "
			             "%d (%s), which runs rank %d of plan %s; expected "
			             "telemetry recorded while the plan ran%s",
			             C->o->ntele > 1 ? "telemetry ending with " : "",
			             C->o->ntele > 1 ? C->o->tele[C->o->ntele - 1].file
			                             : first_file(C), n->host, x->index,
			             x->uuid ? x->uuid : x->pci_bus_id ? x->pci_bus_id :
			             "known by index", r, C->plan.id, hint);
		} else if (a->k[K_JOB].f[F_POWER].n == 0 ||
		           a->k[K_JOB].f[F_TEMP].n == 0) {
			rc = no_settled(C, n, x, a, err);
		}
	}
	free(hs);
	return rc;
}
/* ---- other processes on the GPUs of the plan's hosts ------------------------ */

typedef struct ukey {       /* a GPU of a plan host, by UUID */
	const char *uuid;
	int flat;
} ukey;

static int cmp_ukey(const void *a, const void *b)
{
	return strcasecmp(((const ukey *)a)->uuid, ((const ukey *)b)->uuid);
}

typedef struct pkey {       /* a rank's process: its host and pid */
	int host;
	long pid;
	int rank;
} pkey;

static int cmp_pkey(const void *a, const void *b)
{
	const pkey *x = a, *y = b;
	if (x->host != y->host)
		return x->host < y->host ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

typedef struct prow {       /* a listed process on a GPU of a plan host */
	int g;                  /* flat GPU */
	long pid;               /* -1: unknown */
	const char *name;       /* or NULL */
	int order;              /* in the lists, for a stable order */
} prow;

static int cmp_prow(const void *a, const void *b)
{
	const prow *x = a, *y = b;
	if (x->g != y->g)
		return x->g < y->g ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* The ranks' processes by host and pid; two ranks of one host with one
 * pid are the job's error. */
static int rank_pids(const cal *C, const tm_problem *pb, pkey **out,
                     tm_error *err)
{
	int nr = job_of(C)->world;
	pkey *k = xmalloc(sizeof *k * (size_t)nr);
	for (int r = 0; r < nr; r++)
		k[r] = (pkey){ pb->gpu_host[C->flat[r]], C->m.ranks[r].pid, r };
	qsort(k, (size_t)nr, sizeof *k, cmp_pkey);
	for (int i = 1; i < nr; i++)
		if (k[i].host == k[i - 1].host && k[i].pid == k[i - 1].pid) {
			int rc = tm_fail(err, TM_EINPUT, "%s: measured.ranks[%d].pid: "
			                 "%ld is also rank %d's, on host %s; expected "
			                 "one process per rank", C->j->file, k[i].rank,
			                 k[i].pid, k[i - 1].rank,
			                 C->c->nodes[k[i].host].host);
			free(k);
			return rc;
		}
	*out = k;
	return 0;
}

static bool is_rank_pid(const pkey *k, int n, int host, long pid)
{
	pkey key = { host, pid, -1 };
	int lo = 0, hi = n;
	/* the first entry of (host, pid), whatever its rank */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (k[mid].host < host || (k[mid].host == host && k[mid].pid < pid))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && k[lo].host == key.host && k[lo].pid == key.pid;
}

static void proc_text(gproc *p, const prow *x, int shown)
{
	char name[72] = "";
	size_t len = strlen(p->text);
	if (shown == 3) {
		snprintf(p->text + len, sizeof p->text - len, ", ...");
		return;
	}
	if (shown > 3)
		return;
	if (x->name)
		tm_text(name, sizeof name, x->name);
	if (x->pid > 0)
		snprintf(p->text + len, sizeof p->text - len, "%spid %ld%s%s",
		         shown ? ", " : "", x->pid, *name ? " " : "", name);
	else
		snprintf(p->text + len, sizeof p->text - len, "%sa process of "
		         "unknown pid%s%s", shown ? ", " : "", *name ? " " : "",
		         name);
}

/* One GPU's listed processes, rows[0..n): which are not the job's. With
 * the ranks' pids a process is the job's when its pid is a rank's of
 * that host; one of unknown pid is taken as the rank's own where no pid
 * named it. Without pids every listed process beyond the GPU's rank is
 * another's, and none can be named as that one. */
static void classify(cal *C, const prow *rows, int n, const pkey *pk,
                     int npk, const tm_problem *pb)
{
	int g = rows[0].g, host = pb->gpu_host[g], job = 0, unk = 0, known = 0;
	int shown = 0;
	gproc *p = &C->gp[g];
	bool mine = C->owner[g] >= 0;

	for (int i = 0; i < n; i++) {
		if (rows[i].pid > 0 && pk && is_rank_pid(pk, npk, host, rows[i].pid))
			job++;
		else if (rows[i].pid > 0 && pk)
			known++;
		else
			unk++;
	}
	if (pk) {
		p->foreign = known + (unk > (mine && !job) ? unk - (mine && !job) : 0);
		for (int i = 0; i < n; i++)
			if (!(rows[i].pid > 0 && is_rank_pid(pk, npk, host,
			                                     rows[i].pid)) &&
			    p->foreign)
				proc_text(p, &rows[i], shown++);
	} else {
		p->foreign = n - mine;
		p->unsure = mine && p->foreign > 0;
		for (int i = 0; i < n && p->foreign; i++)
			proc_text(p, &rows[i], shown++);
	}
}

/* The processes each GPU of the plan's hosts had while the job ran
 * (--processes), told apart from the job's own. */
static int match_procs(cal *C, const tm_problem *pb, tm_error *err)
{
	ukey *u = xmalloc(sizeof *u * (size_t)pb->ngpu);
	pkey *pk = NULL;
	prow *rows = NULL;
	int nu = 0, nrows = 0, cap = 0, nr = job_of(C)->world, order = 0;
	int rc = 0;

	C->gp = xcalloc((size_t)pb->ngpu, sizeof *C->gp);
	if (!C->nprocs)
		goto out;
	if (C->m.pids && (rc = rank_pids(C, pb, &pk, err)))
		goto out;
	for (int g = 0; g < pb->ngpu; g++) {
		const tm_gpu *x = tm_gpu_of(pb, g);
		if (C->plan_host[pb->gpu_host[g]] && x->uuid)
			u[nu++] = (ukey){ x->uuid, g };
	}
	qsort(u, (size_t)nu, sizeof *u, cmp_ukey);
	for (int f = 0; f < C->nprocs; f++) {
		int away = 0, nogpu = 0;
		for (int i = 0; i < C->procs[f].n; i++) {
			const tm_proc *x = &C->procs[f].p[i];
			ukey key = { x->uuid, -1 }, *hit;
			if (!x->uuid) {
				nogpu++;
				continue;
			}
			if (!(hit = bsearch(&key, u, (size_t)nu, sizeof *u, cmp_ukey))) {
				away++;
				continue;
			}
			if (nrows == cap) {
				cap = cap ? 2 * cap : 64;
				rows = xrealloc(rows, sizeof *rows * (size_t)cap);
			}
			rows[nrows++] = (prow){ hit->flat, x->pid, x->name, order++ };
		}
		if (away || nogpu) {
			sb_add(&C->notes, "note: ");
			sb_add_text(&C->notes, C->procs[f].file);
			sb_addf(&C->notes, ": %d process(es) %s; left out\n",
			        away + nogpu, !nogpu ? "on GPUs the plan's hosts do not "
			        "have (by UUID)" : !away ? "without a GPU UUID" :
			        "without a GPU UUID or on GPUs the plan's hosts do not "
			        "have");
		}
	}
	if (nrows)   /* qsort takes no NULL, even for no rows */
		qsort(rows, (size_t)nrows, sizeof *rows, cmp_prow);
	/* a process listed twice (in two lists) is one */
	{
		int k = 0;
		for (int i = 0; i < nrows; i++)
			if (!k || rows[i].pid <= 0 || rows[i].g != rows[k - 1].g ||
			    rows[i].pid != rows[k - 1].pid)
				rows[k++] = rows[i];
		nrows = k;
	}
	for (int i = 0, j; i < nrows; i = j) {
		for (j = i; j < nrows && rows[j].g == rows[i].g; j++)
			;
		classify(C, rows + i, j - i, pk, nr, pb);
	}
out:
	free(u);
	free(pk);
	free(rows);
	return rc;
}

/* ---- the model on the plan --------------------------------------------------- */

/* The model's iteration time of the plan, and each rank's busy fraction,
 * power and temperature at it. */
static double predict(const tm_problem *pb, const int *flat, double *busy,
                      double *power, double *temp)
{
	tm_eval ev;
	double t = tm_eval_flat(pb, flat, 0, &ev);
	for (int r = 0; r < pb->nranks; r++) {
		if (busy)
			busy[r] = tm_rank_busy(pb, r, flat[r], t);
		if (power)
			power[r] = tm_rank_power(pb, r, flat[r], t);
		if (temp)
			temp[r] = tm_rank_temp_in(pb, flat, r, t);
	}
	return t;
}

static tm_gpu_profile *entry_of(const cal *C, const tm_problem *pb, int r)
{
	return &C->p->gpus[pb->prof[C->flat[r]]];
}

static const char *model_of(const cal *C, const tm_problem *pb, int r)
{
	int g = C->flat[r];
	return C->c->nodes[pb->gpu_host[g]].gpus[pb->gpu_pos[g]].model;
}

static bool same_model(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* ---- speed at the job's operating point ------------------------------------ */

/* A rank's measured compute per microbatch, ms; NAN when it was
 * measured over fewer than MIN_ITERATIONS iterations. */
static double rank_work(const tm_measured_rank *x)
{
	if (x->iterations < MIN_ITERATIONS)
		return NAN;
	return x->fwd_ms + x->bwd_ms;
}

/* The note of a GPU that keeps the profile's derate: why. */
static void derate_kept(cal *C, const tm_problem *pb, int r, bool in,
                        bool times)
{
	const tm_cal_gpu *G = &C->g[r];
	char was[32] = "none", why[160];
	if (!isnan(G->derate_before))
		snprintf(was, sizeof was, "%.3f", G->derate_before);
	if (!in && times)
		snprintf(why, sizeof why, "measured %.0f iteration(s) (job "
		         "measured.ranks[%d]), fewer than the %d a speed needs",
		         C->m.ranks[r].iterations, r, MIN_ITERATIONS);
	else if (!in)
		snprintf(why, sizeof why, "has no clock reading in the job");
	else if (pb->nrep * pb->nmember > 1)
		snprintf(why, sizeof why, "has no other GPU of its stage%s with a "
		         "speed to compare", times ? "" : " and model");
	else
		snprintf(why, sizeof why, "ran its stage alone");
	sb_addf(&C->notes, "note: %s:%d (rank %d) %s; its derate stays the "
	        "profile's (%s)\n", G->host, G->index, r, why, was);
}

/* The derate of every GPU that shares its stage with another: its
 * compute time per microbatch (the job's measured times), else its clock
 * (in-job telemetry, GPUs of one model), against the fastest of them. A
 * GPU alone, or one whose rank ran too few iterations, keeps the
 * profile's. A derate above 1 by more than RESOLVE_K derate_sd on the
 * job's basis marks the GPU slow: something there takes the job's
 * time. */
static void fit_derates(cal *C, const tm_problem *pb)
{
	const tm_job *j = job_of(C);
	bool times = C->m.nranks == j->world;
	int nr = j->world, *grp = xmalloc(sizeof(int) * (size_t)nr);
	bool *done = xcalloc((size_t)nr, sizeof *done);

	for (int r = 0; r < nr; r++)
		C->g[r].derate = C->g[r].derate_sd = NAN;
	for (int r = 0; r < nr; r++) {
		int k = 0, fast = -1;
		bool in = false;
		if (done[r])
			continue;
		/* the group of r: the ranks of its stage (and, for clocks, of
		 * its GPU model) that have a time or a clock */
		for (int q = r; q < nr; q++) {
			double x;
			if (done[q] || pb->rank_stage[q] != pb->rank_stage[r])
				continue;
			if (!times && !same_model(model_of(C, pb, q), model_of(C, pb, r)))
				continue;
			x = times ? rank_work(&C->m.ranks[q]) : C->g[q].clock_mhz;
			if (!(x > 0))
				continue;
			in |= q == r;
			grp[k++] = q;
			if (fast < 0 || (times ? x < rank_work(&C->m.ranks[fast])
			                       : x > C->g[fast].clock_mhz))
				fast = q;
		}
		if (!in || k < 2) {
			done[r] = true;
			derate_kept(C, pb, r, in, times);
			continue;
		}
		for (int i = 0; i < k; i++) {
			int q = grp[i];
			tm_cal_gpu *G = &C->g[q];
			double d, rel, relf;
			done[q] = true;
			if (times) {
				const tm_measured_rank *a = &C->m.ranks[q],
				                       *f = &C->m.ranks[fast];
				double wq = a->fwd_ms + a->bwd_ms, wf = f->fwd_ms + f->bwd_ms;
				/* NAN without sd_ms or iterations: the floor decides */
				rel = a->sd_ms / sqrt(a->iterations) / wq;
				relf = f->sd_ms / sqrt(f->iterations) / wf;
				d = wq / wf;
				G->derate_basis = TM_BASIS_JOB;
				snprintf(C->why_derate[q], sizeof C->why_derate[q],
				         "measured compute %.3f ms per microbatch (%.200s) "
				         "against %.3f ms of %s:%d", wq, j->file, wf,
				         C->g[fast].host, C->g[fast].index);
			} else {
				const tm_cal_gpu *F = &C->g[fast];
				rel = fmax(G->clock_se, CLOCK_STEP_MHZ) / G->clock_mhz;
				relf = fmax(F->clock_se, CLOCK_STEP_MHZ) / F->clock_mhz;
				d = F->clock_mhz / G->clock_mhz;
				snprintf(C->why_derate[q], sizeof C->why_derate[q],
				         "in-job SM clock %.0f +- %.0f MHz against %.0f "
				         "MHz of %s:%d", G->clock_mhz,
				         fmax(G->clock_se, CLOCK_STEP_MHZ), F->clock_mhz,
				         F->host, F->index);
				/* a clock the power cap sets is how the chip meets the
				 * cap, not the job's speed (problem.c ignores it) */
				G->derate_basis = G->pcap_frac >= PCAP_FRAC &&
				                  !(G->thermal_frac >= THERMAL_FRAC) ?
				                  TM_BASIS_POWER_CAP : TM_BASIS_JOB;
			}
			G->derate_sd = d * sqrt((isnan(rel) ? 0 : rel * rel) +
			                        (isnan(relf) ? 0 : relf * relf));
			if (times)
				G->derate_sd = fmax(G->derate_sd, DERATE_TIME_FLOOR);
			/* a difference inside its uncertainty is no difference */
			G->derate = d - 1 <= G->derate_sd ? 1.0 : d;
		}
	}
	for (int r = 0; r < nr; r++) {
		tm_cal_gpu *G = &C->g[r];
		G->slow = G->derate_basis == TM_BASIS_JOB && G->derate > 1 &&
		          G->derate - 1 > RESOLVE_K * G->derate_sd;
	}
	free(grp);
	free(done);
}

/* ---- the waiting power and the background ------------------------------------ */

/* What the "calibrated" lines say besides the values. */
typedef struct why {
	double pool, pool_sd;   /* its peers' waiting power for it, W */
	double tau;             /* between-GPU sd of its group, W */
	bool tau_prior;         /* τ is the model's default spread: too few
	                           GPUs waited to measure it */
	int others;             /* peers with an estimate of their own */
	double cmp, cmp_sd;     /* the waiting power its floor was held
	                           against for background, W (NAN) */
	int cmp_how;            /* where cmp comes from: enum tm_cal_wait */
	double residual;        /* the fit's residual at the job point, °C */
	double heat;            /* its neighbours' heat in the run, °C */
	int nfit;               /* GPUs whose residuals made temp_fit_sd_c */
} why;

/* The relative uncertainty of the model's busy fraction. */
static double busy_rel(const cal *C)
{
	return isfinite(C->m.iteration_ms) ?
	       fmax(BUSY_REL_FLOOR, fabs(C->m.iteration_ms - C->res_iter) /
	            C->m.iteration_ms) : BUSY_REL_DEFAULT;
}

/* Each GPU's floor P_wait = (P − b·P_load)/(1 − b), from its measured
 * power P and the model's busy fraction b, with the variance of P's
 * standard error and of b's uncertainty (both grow as b → 1), where the
 * rank waits at least WAIT_SHARE_MIN of the iteration; and whether it
 * is a waiting power: one below idle or above full load by more than
 * RESOLVE_K of its uncertainties is not (above its peers it is evidence
 * of background power, fit_background). */
static void own_floors(cal *C, const tm_problem *pb, const double *busy)
{
	int nr = job_of(C)->world;
	double relb = busy_rel(C);
	for (int r = 0; r < nr; r++) {
		tm_cal_gpu *G = &C->g[r];
		const tm_gpu_profile *e = entry_of(C, pb, r);
		double b = busy[r], L = e->power_load_w, P = G->power_w;
		double se = fmax(G->power_se, POWER_SE_FLOOR_W), sb = relb * b;
		G->busy = b;
		G->floor_w = G->floor_sd = G->wait_own = G->wait_own_sd = NAN;
		G->wait_w = G->wait_sd = NAN;
		G->wait_how = TM_WAIT_KEPT;
		if (!isfinite(L)) {
			G->own_why = TM_OWN_NO_LOAD;
			continue;
		}
		if (1 - b < WAIT_SHARE_MIN) {
			G->own_why = TM_OWN_BUSY;
			continue;
		}
		G->floor_w = (P - b * L) / (1 - b);
		/* ∂/∂P = 1/(1−b), ∂/∂b = (P − L)/(1−b)² */
		G->floor_sd = sqrt(pow(se / (1 - b), 2) +
		                   pow((P - L) / ((1 - b) * (1 - b)) * sb, 2));
		G->own_why = G->floor_w < e->power_idle_w -
		             RESOLVE_K * G->floor_sd ? TM_OWN_BELOW_IDLE :
		             G->floor_w > L + RESOLVE_K * G->floor_sd ?
		             TM_OWN_ABOVE_LOAD : TM_OWN_USED;
	}
}

/* The floor is a measurement of what the GPU draws while its rank
 * waits (above full load too: then of background power). */
static bool floor_ok(const tm_cal_gpu *G)
{
	return isfinite(G->floor_w) && G->own_why != TM_OWN_BELOW_IDLE;
}

/* A GPU's waiting power with neither an estimate of its own nor peers:
 * the profile's value, else the model's default (problem.c's rule);
 * TM_WAIT_KEPT when the profile has no powers to make it from. */
static int prior_wait(const tm_gpu_profile *e, double *v, double *sd)
{
	double pi = e->power_idle_w, pl = e->power_load_w;
	if (isfinite(e->power_wait_w)) {
		*v = e->power_wait_w;
		*sd = isfinite(e->power_wait_sd_w) ? e->power_wait_sd_w :
		      isfinite(pi) && isfinite(pl) ? WAIT_SHARE_SD * (pl - pi) :
		      0.1 * *v;
		return TM_WAIT_PROFILE;
	}
	if (isfinite(pi) && isfinite(pl)) {
		*v = pi + WAIT_SHARE * (pl - pi);
		*sd = WAIT_SHARE_SD * fabs(pl - pi);
		return TM_WAIT_DEFAULT;
	}
	*v = *sd = NAN;
	return TM_WAIT_KEPT;
}

/* The ranks of r's GPU model, in rank order, each once (done). */
static int group_of(const cal *C, const tm_problem *pb, int r, bool *done,
                    int *grp)
{
	int n = 0;
	for (int i = r; i < job_of(C)->world; i++)
		if (!done[i] && same_model(model_of(C, pb, i), model_of(C, pb, r))) {
			done[i] = true;
			grp[n++] = i;
		}
	return n;
}

/* The estimates of a group pooled under random effects: the between-GPU
 * variance τ² by DerSimonian–Laird over k ≥ TAU_MIN_GPUS GPUs,
 * τ² = max(0, (Q − (k − 1)) / (Σw − Σw²/Σw)), w = 1/σ²; with fewer, τ is
 * the model's default spread (WAIT_SHARE_SD of idle → load): nothing
 * measured how alike the GPUs are. */
typedef struct pool {
	int k;                  /* GPUs in it */
	double tau2;            /* between-GPU variance, W² */
	bool tau_prior;         /* τ² is the default's */
	double s, sx;           /* Σ w*, Σ w*·x, w* = 1/(σ² + τ²) */
	double f1, f2, fx, fxx; /* Σ w, Σ w², Σ w·x, Σ w·x², w = 1/σ² */
	double span;            /* mean idle → load of its GPUs, W */
} pool;

/* DerSimonian–Laird's τ² from the fixed-effect sums of k estimates, or
 * the default spread's where k < TAU_MIN_GPUS. */
static double dl_tau2(int k, double f1, double f2, double fx, double fxx,
                      double span, bool *prior)
{
	*prior = k < TAU_MIN_GPUS;
	if (k < TAU_MIN_GPUS)
		return k ? pow(WAIT_SHARE_SD * span, 2) : 0;
	return fmax(0, (fxx - fx * fx / f1 - (k - 1)) / (f1 - f2 / f1));
}

static void pool_make(const cal *C, const tm_problem *pb, const int *grp,
                      int n, const bool *in, pool *P)
{
	memset(P, 0, sizeof *P);
	for (int i = 0; i < n; i++) {
		const tm_cal_gpu *G = &C->g[grp[i]];
		const tm_gpu_profile *e = entry_of(C, pb, grp[i]);
		double w;
		if (!in[grp[i]])
			continue;
		w = 1 / (G->floor_sd * G->floor_sd);
		P->f1 += w;
		P->f2 += w * w;
		P->fx += w * G->floor_w;
		P->fxx += w * G->floor_w * G->floor_w;
		P->span += e->power_load_w - (isfinite(e->power_idle_w) ?
		                              e->power_idle_w : 0);
		P->k++;
	}
	if (P->k)
		P->span /= P->k;
	P->tau2 = dl_tau2(P->k, P->f1, P->f2, P->fx, P->fxx, P->span,
	                  &P->tau_prior);
	for (int i = 0; i < n; i++) {
		const tm_cal_gpu *G = &C->g[grp[i]];
		double v = G->floor_sd * G->floor_sd + P->tau2;
		if (in[grp[i]]) {
			P->s += 1 / v;
			P->sx += G->floor_w / v;
		}
	}
}

/* The others of a pool G is in, as a yardstick for G's own estimate:
 * their fixed-effect mean, uncertain by its error and their spread
 * measured without G (one GPU far off its peers would widen the spread
 * it is held to). */
static bool pool_others(const pool *P, const tm_cal_gpu *G, double *mu,
                        double *sd)
{
	double w = 1 / (G->floor_sd * G->floor_sd), x = G->floor_w;
	double f1 = P->f1 - w, fx = P->fx - w * x;
	bool prior;
	if (P->k < 2 || !(f1 > 0))
		return false;
	*mu = fx / f1;
	*sd = sqrt(1 / f1 + dl_tau2(P->k - 1, f1, P->f2 - w * w, fx,
	                            P->fxx - w * x * x, P->span, &prior));
	return true;
}

/* The pool as a statement about G (in it when in): the others' mean,
 * as uncertain as that mean plus the spread between GPUs. false when
 * no other GPU is in it. */
static bool pool_for(const pool *P, const tm_cal_gpu *G, bool in,
                     double *mu, double *sd, int *others)
{
	double so = P->s, sxo = P->sx;
	if (in) {
		double v = G->floor_sd * G->floor_sd + P->tau2;
		so -= 1 / v;
		sxo -= G->floor_w / v;
	}
	*others = P->k - in;
	if (*others <= 0 || !(so > 0))
		return false;
	*mu = sxo / so;
	*sd = sqrt(1 / so + P->tau2);
	return true;
}

/* The power of work that is not the job's, per GPU of the plan. Evidence
 * that such work ran with the job: a process listed on the GPU that is
 * not the job's, or a derate resolvably above 1. With it, the power is
 * measured from busy samples outside the job's span (direct); else from
 * the GPU's floor while its rank waits, when that is above what its
 * peers wait at by more than RESOLVE_K combined uncertainties
 * (indirect); a listed process that neither measures is somewhere
 * between the GPU's waiting power and full load (the midpoint, sd =
 * span/√12). The peers here are the GPUs of its model without such
 * evidence. An earlier value without evidence now is removed where the
 * run tests it. */
static void fit_background(cal *C, const tm_problem *pb, why *W)
{
	int nr = job_of(C)->world, *grp = xmalloc(sizeof(int) * (size_t)nr);
	bool *done = xcalloc((size_t)nr, sizeof *done);
	bool *in = xcalloc((size_t)nr, sizeof *in);

	for (int r = 0; r < nr; r++) {
		pool P;
		int n;
		if (done[r])
			continue;
		n = group_of(C, pb, r, done, grp);
		for (int i = 0; i < n; i++) {
			const tm_cal_gpu *G = &C->g[grp[i]];
			in[grp[i]] = G->own_why == TM_OWN_USED && !G->nforeign &&
			             !G->slow;
		}
		pool_make(C, pb, grp, n, in, &P);
		for (int i = 0; i < n; i++) {
			int q = grp[i], others;
			tm_cal_gpu *G = &C->g[q];
			const tm_gpu_profile *e = entry_of(C, pb, q);
			const acc *bg = &C->T.g[C->tid[q]]->k[K_BG];
			bool evidence = G->nforeign > 0 || G->slow;
			double L = e->power_load_w, cmp = NAN, cmp_sd = NAN;
			G->bg_before = e->background_power_w;
			G->bg_w = G->bg_sd = NAN;
			G->bg_s = bg->secs;
			W[q].cmp_how = TM_WAIT_PEERS;
			if (!pool_for(&P, G, in[q], &cmp, &cmp_sd, &others))
				W[q].cmp_how = prior_wait(e, &cmp, &cmp_sd);
			W[q].cmp = cmp;
			W[q].cmp_sd = cmp_sd;
			if (evidence && G->bg_s >= BG_MIN_S) {
				G->bg_how = TM_BG_DIRECT;
				G->bg_w = ws_mean(&bg->f[F_POWER]);
				G->bg_sd = fmax(POWER_SE_FLOOR_W, acc_se(bg, F_POWER));
			} else if (evidence && floor_ok(G) && isfinite(cmp) &&
			           G->floor_w - cmp > RESOLVE_K *
			           hypot(G->floor_sd, cmp_sd)) {
				G->bg_how = TM_BG_INDIRECT;
				G->bg_w = G->floor_w;
				G->bg_sd = G->floor_sd;
			} else if (G->nforeign && !floor_ok(G) && isfinite(cmp) &&
			           isfinite(L)) {
				double lo = fmin(cmp, L);
				G->bg_how = TM_BG_UNKNOWN;
				G->bg_w = (lo + L) / 2;
				G->bg_sd = fmax(POWER_SE_FLOOR_W, (L - lo) / sqrt(12));
			} else if (isfinite(G->bg_before)) {
				/* its floor shows nothing above waiting; or the lists
				 * show no other process, and nothing slows the job */
				G->bg_how = floor_ok(G) || (!evidence && C->nprocs) ?
				            TM_BG_REMOVED : TM_BG_KEPT;
			} else {
				G->bg_how = TM_BG_NONE;
				/* nothing says another process runs there, but its
				 * floor may: a note */
				if (in[q])
					pool_others(&P, G, &cmp, &cmp_sd);
				if (floor_ok(G) && G->floor_w - cmp > RESOLVE_K *
				    hypot(G->floor_sd, cmp_sd))
					sb_addf(&C->notes, "note: %s:%d (rank %d): its floor "
					        "while the rank waits, %.1f ± %.1f W, is above "
					        "what its peers wait at, %.1f ± %.1f W; if "
					        "another process runs there, --processes "
					        "names it\n", G->host, G->index, q, G->floor_w,
					        G->floor_sd, cmp, cmp_sd);
			}
		}
	}
	free(grp);
	free(done);
	free(in);
}

/* A GPU the plan leaves unused draws what runs there: its busy settled
 * samples in the job's span (at least BG_MIN_S of them) are all
 * background. One idle through the job had none. */
static void fit_background_unused(cal *C, const tm_problem *pb)
{
	for (int i = 0; i < C->nu; i++) {
		tm_cal_gpu *U = &C->u[i];
		int g = C->uflat[i];
		const acc *j = &C->T.g[C->gtid[g]]->k[K_JOB];
		const acc *idle = &C->T.g[C->gtid[g]]->k[K_IDLE];
		U->bg_before = pb->prof[g] >= 0 ?
		               C->p->gpus[pb->prof[g]].background_power_w : NAN;
		U->bg_w = U->bg_sd = NAN;
		U->bg_s = j->secs;
		if (j->secs >= BG_MIN_S) {
			U->bg_how = TM_BG_IN_JOB;
			U->bg_w = ws_mean(&j->f[F_POWER]);
			U->bg_sd = fmax(POWER_SE_FLOOR_W, acc_se(j, F_POWER));
		} else if (isfinite(U->bg_before)) {
			U->bg_how = idle->n ? TM_BG_REMOVED : TM_BG_KEPT;
		} else {
			U->bg_how = TM_BG_NONE;
		}
	}
}

static bool has_bg(const tm_cal_gpu *G)
{
	return isfinite(G->bg_w) || G->bg_how == TM_BG_KEPT;
}

/* Why a GPU has no waiting power of its own, for a note and a line. */
static void no_own_text(const tm_cal_gpu *G, const tm_gpu_profile *e,
                        char *buf, size_t n)
{
	switch (G->own_why) {
	case TM_OWN_BUSY:
		snprintf(buf, n, "busy %.3f, it waits %.1f %% of the iteration, "
		         "under the %.0f %% an estimate of its own needs", G->busy,
		         100 * (1 - G->busy), 100 * WAIT_SHARE_MIN);
		break;
	case TM_OWN_BELOW_IDLE:
	case TM_OWN_ABOVE_LOAD:
		snprintf(buf, n, "its own (P - b*P_load)/(1 - b) = %.1f +- %.1f W "
		         "is %s %s %.2f W by more than %g sd: not a waiting power",
		         G->floor_w, G->floor_sd, G->own_why == TM_OWN_BELOW_IDLE ?
		         "below" : "above", G->own_why == TM_OWN_BELOW_IDLE ?
		         "power_idle_w" : "power_load_w", G->own_why ==
		         TM_OWN_BELOW_IDLE ? e->power_idle_w : e->power_load_w,
		         RESOLVE_K);
		break;
	case TM_OWN_BACKGROUND:
		snprintf(buf, n, "another process keeps its GPU above what the "
		         "rank draws while it waits (background_power_w)");
		break;
	default:
		snprintf(buf, n, "none");
	}
}

/* What a GPU without an estimate of its own takes, for notes and lines. */
static const char *prior_name(int how)
{
	return how == TM_WAIT_PEERS ? "its peers' pooled value" :
	       how == TM_WAIT_PROFILE ? "the profile's value, its prior" :
	       "the model's default, 45 % of idle to load";
}

/* GPU q's written waiting power (fit_waits). */
static void wait_of(cal *C, const tm_problem *pb, int q, const pool *P,
                    bool in, why *W)
{
	tm_cal_gpu *G = &C->g[q];
	const tm_gpu_profile *e = entry_of(C, pb, q);
	double mu = NAN, sd = NAN, v, var, lo;
	bool have = pool_for(P, G, in, &mu, &sd, &W[q].others);
	char why_not[256];

	W[q].pool = have ? mu : NAN;
	W[q].pool_sd = have ? sd : NAN;
	W[q].tau = sqrt(P->tau2);
	W[q].tau_prior = P->tau_prior;
	if (in) {
		G->wait_own = G->floor_w;
		G->wait_own_sd = G->floor_sd;
	}
	if (G->own_why == TM_OWN_NO_LOAD) {
		sb_addf(&C->notes, "note: %s:%d (rank %d): the profile has no "
		        "power_load_w; power_wait_w stays the profile's\n", G->host,
		        G->index, q);
		return;
	}
	if (in) {
		double prec = 1 / (G->floor_sd * G->floor_sd);
		double num = G->floor_w * prec;
		if (have) {
			prec += 1 / (sd * sd);
			num += mu / (sd * sd);
		}
		v = num / prec;
		var = 1 / prec;
		G->wait_how = TM_WAIT_OWN;
	} else if (have) {
		v = mu;
		var = sd * sd;
		G->wait_how = TM_WAIT_PEERS;
	} else if ((G->wait_how = prior_wait(e, &v, &sd)) == TM_WAIT_KEPT) {
		sb_addf(&C->notes, "note: %s:%d (rank %d): no waiting power of its "
		        "own, no other GPU of its model waited, and the profile "
		        "has no power_idle_w; power_wait_w stays the profile's\n",
		        G->host, G->index, q);
		return;
	} else {
		var = sd * sd;
	}
	/* a waiting rank draws between idle and full load */
	lo = isfinite(e->power_idle_w) ? e->power_idle_w : 0;
	G->wait_w = fmin(e->power_load_w, fmax(fmin(lo, e->power_load_w), v));
	G->wait_sd = fmax(POWER_SE_FLOOR_W, sqrt(var));
	if (in)
		return;
	no_own_text(G, e, why_not, sizeof why_not);
	sb_addf(&C->notes, "note: %s:%d (rank %d): %s; it takes %s\n",
	        G->host, G->index, q, why_not, prior_name(G->wait_how));
}

/* The written waiting power of every GPU: its own estimate with its
 * peers' (inverse-variance), where it has one; else its peers' pooled
 * estimate; else its prior, the profile's value or the model's default.
 * The peers are the GPUs of its model with an estimate of their own and
 * no background power. Held between idle and full load. */
static void fit_waits(cal *C, const tm_problem *pb, why *W)
{
	int nr = job_of(C)->world, *grp = xmalloc(sizeof(int) * (size_t)nr);
	bool *done = xcalloc((size_t)nr, sizeof *done);
	bool *in = xcalloc((size_t)nr, sizeof *in);

	for (int r = 0; r < nr; r++) {
		pool P;
		int n;
		if (done[r])
			continue;
		n = group_of(C, pb, r, done, grp);
		for (int i = 0; i < n; i++) {
			tm_cal_gpu *G = &C->g[grp[i]];
			if (G->own_why == TM_OWN_USED && has_bg(G))
				G->own_why = TM_OWN_BACKGROUND;
			in[grp[i]] = G->own_why == TM_OWN_USED;
		}
		pool_make(C, pb, grp, n, in, &P);
		for (int i = 0; i < n; i++)
			wait_of(C, pb, grp[i], &P, in[grp[i]], W);
	}
	free(grp);
	free(done);
	free(in);
}
/* ---- the thermal fit's spread ----------------------------------------------- */

/* The heat GPU g's neighbours gave it in the run (docs/model.md,
 * section 5): Σ c·(P − idle) over its coupling's sources, at the powers
 * they drew as measured (the model's, where the telemetry has none). 0
 * without a coupling. */
static double heat_in(const cal *C, const tm_problem *pb, int g)
{
	double x = 0;
	for (int k = pb->coupled ? pb->cp_first[g] : 0;
	     pb->coupled && k < pb->cp_first[g + 1]; k++) {
		int h = pb->cp_src[k];
		double P = isfinite(C->gpw[h]) ? C->gpw[h] : pb->p_unused[h];
		double dp = P - pb->p_idle[h];
		if (isfinite(dp))
			x += pb->cp_c[k] * dp;
	}
	return x;
}

/* The fit's residual at the job point (measured power and temperature,
 * with the neighbours' heat): T − (ambient + r·P + heat), or without the
 * fit T against the straight line through the idle and full-load levels
 * (the model has no coupling there). NAN when neither is known. */
static double fit_residual(const tm_gpu_profile *e, double P, double T,
                           double heat)
{
	if (isfinite(e->ambient_c) && isfinite(e->r_c_per_w))
		return T - (e->ambient_c + e->r_c_per_w * P + heat);
	if (isfinite(e->temp_idle_c) && isfinite(e->temp_load_c) &&
	    isfinite(e->power_idle_w) && isfinite(e->power_load_w) &&
	    e->power_load_w - e->power_idle_w > 1)
		return T - (e->temp_idle_c + (P - e->power_idle_w) /
		            (e->power_load_w - e->power_idle_w) *
		            (e->temp_load_c - e->temp_idle_c));
	return NAN;
}

/* temp_fit_sd_c per GPU model: the root mean square of each GPU's prior
 * spread and each GPU's residual at its job point, 2k numbers for k GPUs:
 * the job points weigh as much as what the profile said. */
static void fit_spread(cal *C, const tm_problem *pb, why *W)
{
	int nr = job_of(C)->world;
	bool *done = xcalloc((size_t)nr, sizeof *done);

	for (int r = 0; r < nr; r++) {
		double ss = 0, sd;
		int k = 0;
		if (done[r])
			continue;
		for (int i = r; i < nr; i++) {
			const tm_gpu_profile *e = entry_of(C, pb, i);
			double s0;
			if (done[i] || !same_model(model_of(C, pb, i), model_of(C, pb, r)))
				continue;
			done[i] = true;
			W[i].heat = isfinite(e->ambient_c) && isfinite(e->r_c_per_w) ?
			            heat_in(C, pb, C->flat[i]) : 0;
			W[i].residual = fit_residual(e, C->g[i].power_w,
			                             C->g[i].temp_c, W[i].heat);
			C->g[i].fit_sd_c = -1;   /* of this group */
			if (isnan(W[i].residual))
				continue;
			s0 = isfinite(e->temp_fit_sd_c) ? e->temp_fit_sd_c
			                                : FIT_SD_DEFAULT_C;
			ss += s0 * s0 + W[i].residual * W[i].residual;
			k++;
		}
		sd = k ? sqrt(ss / (2 * k)) : NAN;
		for (int i = r; i < nr; i++)
			if (C->g[i].fit_sd_c < 0) {
				C->g[i].fit_sd_c = isnan(W[i].residual) ? NAN : sd;
				W[i].nfit = k;
			}
	}
	free(done);
}

/* ---- the coupling refit with the run's steady state ------------------------ */

/* A point calibrate adds to a coupling: "run plan ID (telemetry ...)";
 * every other point is the profile's (its phases) and is never dropped. */
#define RUN_POINT "run plan "
/* The most points a coupling holds (the profile format's bound). */
#define MAX_POINTS 256

/* The flat GPU that coupling source s of GPU g names: another GPU of its
 * host, by UUID where both have one, else by index (problem.c's join,
 * which the model keeps to itself); -1 when the cluster has none. */
static int source_flat(const tm_problem *pb, int g, const tm_coupling_src *s)
{
	int h = pb->gpu_host[g];
	const tm_node *n = &pb->c->nodes[h];
	for (int i = 0; i < n->ngpus; i++) {
		const tm_gpu *x = &n->gpus[i];
		int f = pb->host_first[h] + i;
		if (f != g && (s->uuid && x->uuid ? !strcmp(s->uuid, x->uuid) :
		               s->index >= 0 && x->index == s->index))
			return f;
	}
	return -1;
}

static bool run_point(const tm_coupling *c, int i)
{
	return c->point_source && c->point_source[i] &&
	       !strncmp(c->point_source[i], RUN_POINT, strlen(RUN_POINT));
}

static void drop_point(tm_coupling *c, int i)
{
	int w = 2 + c->nfrom;
	free(c->point_source ? c->point_source[i] : NULL);
	memmove(&c->points[(size_t)i * (size_t)w],
	        &c->points[(size_t)(i + 1) * (size_t)w],
	        sizeof(double) * (size_t)w * (size_t)(c->npoints - i - 1));
	if (c->point_source)
		memmove(&c->point_source[i], &c->point_source[i + 1],
		        sizeof *c->point_source * (size_t)(c->npoints - i - 1));
	c->npoints--;
}

/* The run's steady state (pt: temperature, power, the sources' powers)
 * into c's points, last: the same run's point replaced, and at
 * MAX_POINTS the oldest run's dropped. false when every point is the
 * profile's and there is no room. */
static bool add_point(tm_coupling *c, const double *pt, const char *src)
{
	int w = 2 + c->nfrom, oldest = -1;
	for (int i = 0; i < c->npoints; i++)
		if (run_point(c, i) && !strcmp(c->point_source[i], src)) {
			drop_point(c, i);
			break;
		}
	for (int i = 0; i < c->npoints && oldest < 0; i++)
		if (run_point(c, i))
			oldest = i;
	if (c->npoints >= MAX_POINTS && oldest < 0)
		return false;
	if (c->npoints >= MAX_POINTS)
		drop_point(c, oldest);
	bool named = c->point_source != NULL;
	c->points = xrealloc(c->points, sizeof(double) * (size_t)w *
	                     (size_t)(c->npoints + 1));
	c->point_source = xrealloc(c->point_source, sizeof *c->point_source *
	                           (size_t)(c->npoints + 1));
	if (!named)   /* points without sources: the profile's, unnamed */
		memset(c->point_source, 0, sizeof *c->point_source *
		       (size_t)c->npoints);
	memcpy(&c->points[(size_t)c->npoints * (size_t)w], pt,
	       sizeof(double) * (size_t)w);
	c->point_source[c->npoints++] = xstrdup(src);
	return true;
}

/* A refit of one GPU's coupling (fit_couplings). */
typedef struct refit {
	tm_coupling *c;         /* the refitted coupling, owned; NULL: none */
	tm_thermal_fit fit;
	int nruns;              /* run points among its points */
} refit;

/* "thermap calibrate: joint fit over 9 steady states (8 of the profile,
 * 1 of runs: the last plan ID), residual sd 0.31 °C". */
static char *refit_how(const cal *C, const refit *F)
{
	strbuf b;
	sb_init(&b);
	sb_addf(&b, "thermap calibrate: joint fit over %d steady states (%d of "
	        "the profile, %d of runs: the last plan %s), residual sd %.2f "
	        "°C", F->c->npoints, F->c->npoints - F->nruns, F->nruns,
	        C->plan.id, F->fit.sd_c);
	return b.s;
}

/* GPU r's coupling with the run's point, refitted; F->c set when the
 * refit is identified, else a note says why. */
static void refit_gpu(cal *C, const tm_problem *pb, int r, refit *F)
{
	const tm_cal_gpu *G = &C->g[r];
	const tm_coupling *c0 = entry_of(C, pb, r)->coupling;
	int w = 2 + c0->nfrom;
	double *pt = xmalloc(sizeof(double) * (size_t)w);
	double *idle = xmalloc(sizeof(double) * (size_t)(c0->nfrom + 1));
	char src[600];
	tm_coupling *c = NULL;

	/* as the profile writer writes a point: 0.01 °C, 0.01 W */
	pt[0] = round(G->temp_c * 100) / 100;
	pt[1] = round(G->power_w * 100) / 100;
	for (int k = 0; k < c0->nfrom; k++) {
		int h = source_flat(pb, C->flat[r], &c0->from[k]);
		if (h < 0 || !isfinite(C->gpw[h])) {
			sb_addf(&C->notes, "note: %s:%d (rank %d): its coupling is not "
			        "refitted: its neighbour %d%s has no measured power in "
			        "the run\n", G->host, G->index, r, c0->from[k].index,
			        h < 0 ? " is not in the cluster and" : "");
			goto out;
		}
		pt[2 + k] = round(C->gpw[h] * 100) / 100;
		idle[k] = pb->p_idle[h];
	}
	snprintf(src, sizeof src, "%s%s (%s)", RUN_POINT, C->plan.id,
	         C->files.s);
	c = tm_coupling_dup(c0);
	if (!add_point(c, pt, src)) {
		sb_addf(&C->notes, "note: %s:%d (rank %d): its coupling is not "
		        "refitted: its %d points are all the profile's\n", G->host,
		        G->index, r, c->npoints);
		goto out;
	}
	if (!tm_coupling_fit(c, idle, &F->fit)) {
		sb_addf(&C->notes, "note: %s:%d (rank %d): its coupling, refitted "
		        "with the run's steady state, is not identified (%s); the "
		        "fit and the coupling stay the profile's\n", G->host,
		        G->index, r, F->fit.why);
		goto out;
	}
	for (int i = 0; i < c->npoints; i++)
		F->nruns += run_point(c, i);
	F->c = c;
	c = NULL;
	free(F->c->how);
	F->c->how = refit_how(C, F);
out:
	tm_coupling_free(c);
	free(pt);
	free(idle);
}

/* Where a GPU of the plan has a coupling with its steady states (profile
 * --phases), the run is one more: its settled mean temperature and
 * power, and its neighbours' measured powers, refitted jointly with the
 * profile's points and earlier runs' (tm_coupling_fit). One run among
 * phases moves the fit by what it adds, not to itself (docs/calibrate.md,
 * "The thermal fit"). Identified: the fit, its spread and the coupling
 * are the refit's. */
static void fit_couplings(cal *C, const tm_problem *pb, refit *F)
{
	for (int r = 0; r < job_of(C)->world; r++) {
		const tm_gpu_profile *e = entry_of(C, pb, r);
		if (!e->coupling || !e->coupling->npoints)
			continue;
		refit_gpu(C, pb, r, &F[r]);
		if (F[r].c)
			C->g[r].fit_sd_c = F[r].fit.sd_c;
	}
}

/* ---- the calibrated profile --------------------------------------------------- */

/* What was fitted must fit the profile's ranges (profile.c); only inputs
 * beyond what a GPU can do (a log of 10^6 °C, a rank 100 times slower
 * than its partner) get here. temp_fit_sd_c is shared by the GPUs of a
 * model: the GPU named is the one furthest off the fit. */
static int in_range(const cal *C, const why *W, tm_error *err)
{
	int nr = job_of(C)->world, worst = -1;
	for (int r = 0; r < nr; r++) {
		const tm_cal_gpu *G = &C->g[r];
		const char *what = G->wait_sd > 1e5 ? "power_wait_sd_w" :
		                   G->derate > 100 ? "derate" :
		                   G->derate_sd > 100 ? "derate_sd" :
		                   G->bg_w > 1e5 ? "background_power_w" :
		                   G->bg_sd > 1e5 ? "background_power_sd_w" : NULL;
		double v = G->wait_sd > 1e5 ? G->wait_sd : G->derate > 100 ?
		           G->derate : G->derate_sd > 100 ? G->derate_sd :
		           G->bg_w > 1e5 ? G->bg_w : G->bg_sd;
		if (what)
			return tm_fail(err, TM_EINPUT, "%s: host %s GPU %d (rank %d) "
			               "gives %s %g, beyond the profile's range; "
			               "expected what a GPU running the plan measures",
			               what[0] == 'd' && C->m.nranks ? C->j->file :
			               first_file(C), G->host, G->index, r, what, v);
		if (G->fit_sd_c > 100 && (worst < 0 || fabs(W[r].residual) >
		                          fabs(W[worst].residual)))
			worst = r;
	}
	if (worst >= 0)
		return tm_fail(err, TM_EINPUT, "%s: host %s GPU %d (rank %d) ran "
		               "%.4g C off its thermal fit at %.4g W; temp_fit_sd_c "
		               "would be %.4g, beyond the profile's 100; expected "
		               "what a GPU running the plan measures", first_file(C),
		               C->g[worst].host, C->g[worst].index, worst,
		               W[worst].residual, C->g[worst].power_w,
		               C->g[worst].fit_sd_c);
	return 0;
}

static void fmt_or_none(char *buf, size_t n, double v, const char *unit)
{
	if (isnan(v))
		snprintf(buf, n, "none");
	else
		snprintf(buf, n, "%.4g%s", v, unit);
}

/* Sets field = v (NAN removes it), rounded to decimals, in entry e,
 * listed in "calibrated" with line, and no longer "estimated" nor
 * "from_baseline". */
static void put(tm_gpu_profile *e, int field, double v, int decimals,
                const char *line, int *n)
{
	char shown[1536];
	double f = pow(10, decimals);
	/* shown as text for people, also where snprintf cut a character */
	tm_text(shown, sizeof shown, line);
	*tm_gpu_profile_num(e, field) = round(v * f) / f;
	tm_gpu_profile_mark(e, true, field, shown);
	tm_gpu_profile_mark(e, false, field, NULL);
	tm_gpu_profile_untake(e, tm_profile_field_name(field));
	(*n)++;
}

/* "thermap calibrate: plan ID, telemetry FILES (N settled in-job samples
 * over S s)": where every line of a GPU comes from. */
static void source_of(const cal *C, const tm_cal_gpu *G, const tacc *a,
                      char *buf, size_t n)
{
	const acc *j = &a->k[K_JOB];
	snprintf(buf, n, "thermap calibrate: plan %s, %s (%ld settled "
	         "in-job samples over %.0f s)", C->plan.id, C->files.s,
	         G->samples, isnan(j->t0) ? 0.0 : j->t1 - j->t0);
}

/* The waiting power's two lines. */
static void put_wait(cal *C, tm_gpu_profile *e, const tm_cal_gpu *G,
                     const why *w, const char *src, int *ncal)
{
	char line[1536], own[320], peers[256], how[200], a[32], sdw[200];
	if (G->wait_how == TM_WAIT_KEPT)
		return;
	if (G->wait_how == TM_WAIT_OWN)
		snprintf(own, sizeof own, "own (P - b*P_load)/(1 - b) = %.1f +- "
		         "%.1f W with P %.2f W, b %.3f, P_load %.2f W", G->wait_own,
		         G->wait_own_sd, G->power_w, G->busy, e->power_load_w);
	else {
		char t[256];
		no_own_text(G, e, t, sizeof t);
		snprintf(own, sizeof own, "own: none (%s)", t);
	}
	if (isnan(w->pool))
		snprintf(peers, sizeof peers, "no other GPU of its model waited "
		         "%.0f %% of the iteration with no background power",
		         100 * WAIT_SHARE_MIN);
	else
		snprintf(peers, sizeof peers, "the other %d GPU(s) of its model "
		         "that waited give %.1f +- %.1f W (between-GPU sd %.1f W%s)",
		         w->others, w->pool, w->pool_sd, w->tau, w->tau_prior ?
		         ", the model's default: too few GPUs waited to measure "
		         "it" : "");
	if (G->wait_how == TM_WAIT_OWN)
		snprintf(how, sizeof how, "%s", isnan(w->pool) ? "its own" :
		         "inverse-variance combined");
	else
		snprintf(how, sizeof how, "its own data could not give one: it "
		         "takes %s (%.2f +- %.2f W)", prior_name(G->wait_how),
		         G->wait_w, G->wait_sd);
	fmt_or_none(a, sizeof a, e->power_wait_w, " W");
	snprintf(line, sizeof line, "%s: %s; %s; %s; before: %s (the model took "
	         "%.1f W)", src, own, peers, how, a, G->wait_before);
	put(e, TM_PF_POWER_WAIT_W, G->wait_w, 2, line, ncal);
	if (G->wait_how == TM_WAIT_OWN)
		snprintf(sdw, sizeof sdw, "from the power's standard error (at "
		         "least %g W) and the busy fraction's (%.1f %% of b)%s",
		         POWER_SE_FLOOR_W, 100 * busy_rel(C), isnan(w->pool) ? "" :
		         ", combined with its peers'");
	else if (G->wait_how == TM_WAIT_PEERS)
		snprintf(sdw, sizeof sdw, "its peers' mean's and the between-GPU "
		         "spread (%.1f W)", w->tau);
	else
		snprintf(sdw, sizeof sdw, "%s", G->wait_how == TM_WAIT_PROFILE ?
		         "the profile's" : "the model's default, 7 % of idle to "
		         "load");
	fmt_or_none(a, sizeof a, e->power_wait_sd_w, " W");
	snprintf(line, sizeof line, "%s: the uncertainty of power_wait_w: %s; "
	         "before: %s", src, sdw, a);
	put(e, TM_PF_POWER_WAIT_SD_W, G->wait_sd, 2, line, ncal);
}

/* "another process (pid 4242 python3)", "2 other processes (...)", "one
 * of 2 processes (...; the job gives no pids ...)", "work that is not the
 * job's". */
static void who_text(const cal *C, int g, char *buf, size_t n)
{
	const gproc *p = &C->gp[g];
	if (!p->foreign)
		snprintf(buf, n, "work that is not the job's");
	else if (p->unsure)
		snprintf(buf, n, "%s of %d processes (%s; the job gives no pids "
		         "to tell which are its rank's)", p->foreign == 1 ? "one" :
		         "some", p->foreign + 1, p->text);
	else if (p->foreign == 1)
		snprintf(buf, n, "another process (%s)", p->text);
	else
		snprintf(buf, n, "%d other processes (%s)", p->foreign, p->text);
}

/* When the busy samples outside the job were taken. */
static const char *bg_when(const cal *C, const acc *bg)
{
	bool before = bg->t0 < C->T.start, after = bg->t1 > C->T.end;
	return before && after ? "before the job started and after it ended" :
	       before ? "before the job started" : "after the job ended";
}

/* How background_power_w was found, for its line (and the table). */
static void bg_how_text(const cal *C, const tm_cal_gpu *G, int g,
                        const why *w, char *buf, size_t n)
{
	const acc *bg = &C->T.g[C->gtid[g]]->k[K_BG];
	switch (G->bg_how) {
	case TM_BG_DIRECT:
		snprintf(buf, n, "measured %s: %ld busy sample(s) over %.0f s, "
		         "%g s or more into their busy run, mean power %.2f +- "
		         "%.2f W (batch means, at least %g W)", bg_when(C, bg),
		         bg->n, bg->secs, BG_SETTLE_S, G->bg_w, G->bg_sd,
		         POWER_SE_FLOOR_W);
		break;
	case TM_BG_INDIRECT:
		snprintf(buf, n, "from its floor while the rank waits, (P - "
		         "b*P_load)/(1 - b) = %.1f +- %.1f W with P %.2f W, b %.3f, "
		         "above %s %.1f +- %.1f W by more than %g combined sd",
		         G->floor_w, G->floor_sd, G->power_w, G->busy,
		         w->cmp_how == TM_WAIT_PEERS ? "its peers' waiting power" :
		         w->cmp_how == TM_WAIT_PROFILE ? "the profile's waiting "
		         "power" : "the model's default waiting power", w->cmp,
		         w->cmp_sd, RESOLVE_K);
		break;
	case TM_BG_UNKNOWN:
		snprintf(buf, n, "not measurable: the rank computes %.0f %% of the "
		         "time and no busy sample lies outside the job; somewhere "
		         "between its waiting power %.1f W and power_load_w: the "
		         "midpoint, sd = span/sqrt(12)", 100 * G->busy, w->cmp);
		break;
	case TM_BG_IN_JOB:
		snprintf(buf, n, "the plan leaves it unused, and it was busy while "
		         "the job ran: %ld settled sample(s) over %.0f s, mean "
		         "power %.2f +- %.2f W", C->T.g[C->gtid[g]]->k[K_JOB].n,
		         G->bg_s, G->bg_w, G->bg_sd);
		break;
	default:
		snprintf(buf, n, "none");
	}
}

/* Why an earlier background_power_w is removed or kept. */
static void bg_gone_text(const cal *C, const tm_cal_gpu *G, const why *w,
                         char *buf, size_t n)
{
	if (G->rank < 0)
		snprintf(buf, n, G->bg_how == TM_BG_REMOVED ? "the plan leaves it "
		         "unused and it was idle while the job ran" : "the plan "
		         "leaves it unused and no settled sample shows it in the "
		         "job's span");
	else if (G->bg_how == TM_BG_REMOVED && floor_ok(G))
		snprintf(buf, n, "its floor while the rank waits, %.1f +- %.1f W, "
		         "is within %.1f +- %.1f W, what it waits at without it",
		         G->floor_w, G->floor_sd, w->cmp, w->cmp_sd);
	else if (G->bg_how == TM_BG_REMOVED)
		snprintf(buf, n, "no process but the job's listed on it (%s), and "
		         "the job runs there at its stage's speed", C->pfiles.s);
	else
		snprintf(buf, n, "nothing in this run tests it (%s, and the rank "
		         "waits too little to measure its floor)", C->nprocs ?
		         "a process is listed or the job runs slower there" :
		         "no process list");
}

/* The background power's lines (two, or one for a value removed
 * without an uncertainty). */
static void put_bg(cal *C, tm_gpu_profile *e, const tm_cal_gpu *G, int g,
                   const why *w, const char *src, int *ncal)
{
	char line[1536], who[512], how[400], a[32], procs[320] = "";
	if (G->bg_how == TM_BG_NONE || G->bg_how == TM_BG_KEPT)
		return;
	fmt_or_none(a, sizeof a, e->background_power_w, " W");
	if (G->bg_how == TM_BG_REMOVED) {
		bg_gone_text(C, G, w, how, sizeof how);
		snprintf(line, sizeof line, "%s: removed: %s; before: %s", src, how,
		         a);
		put(e, TM_PF_BACKGROUND_W, NAN, 2, line, ncal);
		if (isfinite(e->background_power_sd_w)) {
			snprintf(line, sizeof line, "%s: removed with "
			         "background_power_w; before: %.4g W", src,
			         e->background_power_sd_w);
			put(e, TM_PF_BACKGROUND_SD_W, NAN, 2, line, ncal);
		}
		return;
	}
	who_text(C, g, who, sizeof who);
	bg_how_text(C, G, g, w, how, sizeof how);
	if (C->nprocs)
		snprintf(procs, sizeof procs, " (processes %s)", C->pfiles.s);
	snprintf(line, sizeof line, "%s: %s draws this besides the job%s; %s; "
	         "before: %s", src, who, procs, how, a);
	put(e, TM_PF_BACKGROUND_W, G->bg_w, 2, line, ncal);
	fmt_or_none(a, sizeof a, e->background_power_sd_w, " W");
	snprintf(line, sizeof line, "%s: the uncertainty of background_power_w "
	         "(%s); before: %s", src, G->bg_how == TM_BG_UNKNOWN ?
	         "a uniform range's" : G->bg_how == TM_BG_INDIRECT ? "its "
	         "floor's" : "the standard error of its mean", a);
	put(e, TM_PF_BACKGROUND_SD_W, G->bg_sd, 2, line, ncal);
}

/* The refitted coupling's lines (ambient_c, r_c_per_w, temp_fit_sd_c)
 * and the coupling itself, which takes the refit's place. */
static void put_refit(tm_gpu_profile *e, const tm_cal_gpu *G, refit *F,
                      const char *src, int *ncal)
{
	char line[1536], how[600];
	tm_text(how, sizeof how, F->c->how);
	snprintf(line, sizeof line, "%s: the run's steady state (%.2f C at "
	         "%.2f W) added to its coupling's points and the whole refitted "
	         "(%s); before: %.4g C", src, G->temp_c, G->power_w, how,
	         e->ambient_c);
	put(e, TM_PF_AMBIENT_C, F->fit.ambient_c, 1, line, ncal);
	snprintf(line, sizeof line, "%s: the same refit (%s); before: %.4g C/W",
	         src, how, e->r_c_per_w);
	put(e, TM_PF_R_C_PER_W, F->fit.r_c_per_w, 4, line, ncal);
	snprintf(line, sizeof line, "%s: the refit's residual sd over %d steady "
	         "states, at least %g C; before: %.4g C", src, F->c->npoints,
	         TM_FIT_SD_FLOOR_C, e->temp_fit_sd_c);
	put(e, TM_PF_TEMP_FIT_SD_C, F->fit.sd_c, 2, line, ncal);
	tm_coupling_free(e->coupling);
	e->coupling = F->c;
	F->c = NULL;
}

/* The calibrated profile: the prior (C->p, whose derates already hold
 * the fitted ones) with every fitted field set and its line, written as
 * every profile is. Each line is made before its field is set, so that
 * "before" is the prior's value. */
static char *write_profile(cal *C, const tm_problem *pb, const why *W,
                           refit *F, int *ncal, int *nentries)
{
	int nr = job_of(C)->world;
	char line[1536], a[32], b[32], src[512];

	*ncal = *nentries = 0;
	for (int r = 0; r < nr; r++) {
		const tm_cal_gpu *G = &C->g[r];
		tm_gpu_profile *e = entry_of(C, pb, r);
		const tm_gpu_profile *e0 = e;
		int was = *ncal;
		source_of(C, G, C->T.g[C->tid[r]], src, sizeof src);
		put_bg(C, e, G, C->flat[r], &W[r], src, ncal);
		put_wait(C, e, G, &W[r], src, ncal);
		if (!isnan(G->derate)) {
			/* e0 has the fitted derate by now (the busy fractions
			 * needed it): the values before are G's */
			fmt_or_none(a, sizeof a, G->derate_before, "");
			fmt_or_none(b, sizeof b, G->derate_sd_before, "");
			snprintf(line, sizeof line, "%s: %s, the fastest GPU of stage "
			         "%d; a difference within derate_sd counts as none "
			         "(basis %s); before: %s (basis %s)", src,
			         C->why_derate[r], G->stage,
			         tm_derate_basis_name(G->derate_basis), a,
			         G->basis_before == TM_BASIS_UNSET ? "not given" :
			         tm_derate_basis_name(G->basis_before));
			put(e, TM_PF_DERATE, G->derate, 3, line, ncal);
			snprintf(line, sizeof line, "%s: the relative uncertainty of "
			         "the two %s, at least %s; before: %s", src,
			         C->m.nranks ? "measured times" : "clocks",
			         C->m.nranks ? "2 %" : "one 15 MHz step each", b);
			put(e, TM_PF_DERATE_SD, G->derate_sd, 4, line, ncal);
			e->derate_basis = G->derate_basis;
		}
		if (F[r].c) {
			put_refit(e, G, &F[r], src, ncal);
		} else if (!isnan(G->fit_sd_c)) {
			char heat[96] = "";
			if (W[r].heat != 0)
				snprintf(heat, sizeof heat, " with %+.2f C of its "
				         "neighbours' heat (coupling)", W[r].heat);
			fmt_or_none(a, sizeof a, e0->temp_fit_sd_c, " C");
			snprintf(line, sizeof line, "%s: root mean square of the prior "
			         "spread (%.2f C) and the fit's residual at the job "
			         "point over %d GPU(s) of its model; here %+.2f C at "
			         "%.2f W and %.2f C%s; ambient_c and r_c_per_w kept; "
			         "before: %s", src, isfinite(e0->temp_fit_sd_c) ?
			         e0->temp_fit_sd_c : FIT_SD_DEFAULT_C, W[r].nfit,
			         W[r].residual, G->power_w, G->temp_c, heat, a);
			put(e, TM_PF_TEMP_FIT_SD_C, G->fit_sd_c, 2, line, ncal);
		}
		*nentries += *ncal > was;
	}
	for (int i = 0; i < C->nu; i++) {
		const tm_cal_gpu *U = &C->u[i];
		int g = C->uflat[i], was = *ncal;
		if (pb->prof[g] < 0)
			continue;
		snprintf(src, sizeof src, "thermap calibrate: plan %s, %s (%ld "
		         "settled samples in the job's span; the plan leaves it "
		         "unused)", C->plan.id, C->files.s, U->samples);
		put_bg(C, &C->p->gpus[pb->prof[g]], U, g, NULL, src, ncal);
		*nentries += *ncal > was;
	}
	return tm_profile_text(C->p);
}

/* ---- the table ----------------------------------------------------------------- */

static void cell(strbuf *b, double v, const char *fmt, int width)
{
	if (isnan(v))
		sb_addf(b, " %*s", width, "n/a");
	else   /* no "-0.0" */
		sb_addf(b, fmt, width, fabs(v) < 0.05 ? 0.0 : v);
}

/* The lines that name a GPU with work that is not the job's, or with an
 * earlier background that goes or stays, or a GPU slower for the job
 * with nothing listed. */
static void name_gpu(cal *C, const tm_cal_gpu *G, int g, const why *w)
{
	strbuf *b = &C->named;
	char who[512], gone[400];
	const gproc *p = &C->gp[g];

	if (!p->foreign && !G->slow && G->bg_how == TM_BG_NONE)
		return;
	who_text(C, g, who, sizeof who);
	sb_addf(b, "%s:%d%s: ", G->host, G->index, G->rank < 0 ?
	        " (unused by the plan)" : "");
	switch (G->bg_how) {
	case TM_BG_DIRECT:
	case TM_BG_INDIRECT:
	case TM_BG_IN_JOB:
		sb_addf(b, "%s draws %.1f ± %.1f W besides the job (", who, G->bg_w,
		        G->bg_sd);
		if (G->bg_how == TM_BG_DIRECT)
			sb_addf(b, "measured %s", bg_when(C,
			        &C->T.g[C->gtid[g]]->k[K_BG]));
		else if (G->bg_how == TM_BG_INDIRECT)
			sb_addf(b, "from its floor while the rank waits, above %.1f ± "
			        "%.1f W", w->cmp, w->cmp_sd);
		else
			sb_add(b, "busy while the job ran");
		sb_add(b, ")");
		break;
	case TM_BG_UNKNOWN:
		sb_addf(b, "%s is listed on it; what it draws besides the job "
		        "cannot be measured (the rank computes %.0f %% of the time, "
		        "no busy sample outside the job): taken as %.1f ± %.1f W, "
		        "between its waiting power and full load", who,
		        100 * G->busy, G->bg_w, G->bg_sd);
		break;
	case TM_BG_REMOVED:
	case TM_BG_KEPT:
		bg_gone_text(C, G, w, gone, sizeof gone);
		sb_addf(b, "background_power_w %.1f W of an earlier calibration "
		        "%s: %s", G->bg_before, G->bg_how == TM_BG_REMOVED ?
		        "removed" : "kept", gone);
		if (p->foreign)
			sb_addf(b, "; %s is listed on it", who);
		break;
	default:
		if (p->foreign && G->rank >= 0 && floor_ok(G))
			sb_addf(b, "%s is listed on it, but its floor while the rank "
			        "waits, %.1f ± %.1f W, is within %.1f ± %.1f W: nothing "
			        "besides the job measured", who, G->floor_w,
			        G->floor_sd, w->cmp, w->cmp_sd);
		else if (p->foreign)
			sb_addf(b, "%s is listed on it; %s", who, G->rank < 0 ?
			        "the GPU was idle while the job ran" : "nothing "
			        "besides the job measured");
		else
			sb_addf(b, "runs the job %.0f %% slower than its stage's "
			        "fastest GPU (derate %.3f ± %.3f); %s", 100 *
			        (G->derate - 1), G->derate, G->derate_sd, C->nprocs ?
			        "no other process listed" : "no process list given");
		sb_add(b, "\n");
		return;
	}
	if (G->slow)
		sb_addf(b, "; the job runs %.0f %% slower there (derate %.3f ± %.3f)",
		        100 * (G->derate - 1), G->derate, G->derate_sd);
	sb_add(b, "\n");
}

/* Every GPU named, in rank order and then the unused ones. */
static void name_gpus(cal *C, const why *W)
{
	for (int r = 0; r < job_of(C)->world; r++)
		name_gpu(C, &C->g[r], C->flat[r], &W[r]);
	for (int i = 0; i < C->nu; i++)
		name_gpu(C, &C->u[i], C->uflat[i], NULL);
}

static void table(cal *C, tm_cal_result *res)
{
	strbuf b;
	int nr = res->ngpu, wn = 3;
	char name[300];

	sb_init(&b);
	for (int r = 0; r < nr; r++) {
		int k = snprintf(name, sizeof name, "%s:%d", C->g[r].host,
		                 C->g[r].index);
		wn = k > wn ? (k > 40 ? 40 : k) : wn;
	}
	sb_addf(&b, "plan %s, %d rank(s); %s\n", res->plan_id, nr, C->files.s);
	sb_addf(&b, "iteration: the model's %.2f ms before calibration, %.2f "
	        "ms after", res->iter_before_ms, res->iter_after_ms);
	if (isfinite(res->iter_measured_ms))
		sb_addf(&b, "; measured %.2f ms", res->iter_measured_ms);
	sb_add(&b, "\n");
	/* the columns of the rows below; "°C" is two bytes for one column */
	sb_addf(&b, "%*s %-20s    %-26s    %s\n", 21 + wn, "", "measured",
	        "predicted before", "predicted after");
	sb_addf(&b, "rank stage  %-*s  samples     °C       W   MHz   "
	        "     °C   err       W   err        °C   err       W   err\n",
	        wn, "GPU");
	for (int r = 0; r < nr; r++) {
		const tm_cal_gpu *G = &C->g[r];
		snprintf(name, sizeof name, "%s:%d", G->host, G->index);
		sb_addf(&b, "%4d %5d  %-*s  %7ld", r, G->stage, wn, name,
		        G->samples);
		cell(&b, G->temp_c, " %*.1f", 6);
		cell(&b, G->power_w, " %*.1f", 7);
		cell(&b, round(G->clock_mhz), " %*.0f", 5);
		sb_add(&b, "   ");
		cell(&b, G->temp_before, " %*.1f", 6);
		cell(&b, G->temp_before - G->temp_c, " %+*.1f", 5);
		cell(&b, G->power_before, " %*.1f", 7);
		cell(&b, G->power_before - G->power_w, " %+*.1f", 5);
		sb_add(&b, "   ");
		cell(&b, G->temp_after, " %*.1f", 6);
		cell(&b, G->temp_after - G->temp_c, " %+*.1f", 5);
		cell(&b, G->power_after, " %*.1f", 7);
		cell(&b, G->power_after - G->power_w, " %+*.1f", 5);
		sb_add(&b, "\n");
	}
	sb_addf(&b, "mean absolute error: before %.2f °C, %.1f W; after %.2f "
	        "°C, %.1f W\n", res->mae_temp_before, res->mae_power_before,
	        res->mae_temp_after, res->mae_power_after);
	sb_addf(&b, "\n%-*s  %-40s  %-28s  %s\n", wn, "GPU",
	        "power_wait_w (W)", "derate", "temp_fit_sd_c (°C)");
	for (int r = 0; r < nr; r++) {
		const tm_cal_gpu *G = &C->g[r];
		char w[96], d[64], f[64], was[16];
		static const char *const from[] = { [TM_WAIT_PEERS] = "peers'",
			[TM_WAIT_PROFILE] = "profile's", [TM_WAIT_DEFAULT] =
			"default" };
		snprintf(name, sizeof name, "%s:%d", G->host, G->index);
		if (G->wait_how == TM_WAIT_KEPT)
			snprintf(w, sizeof w, "%.1f kept", G->wait_before);
		else if (G->wait_how == TM_WAIT_OWN)
			snprintf(w, sizeof w, "%.1f -> %.1f ± %.1f (own %.1f)",
			         G->wait_before, G->wait_w, G->wait_sd, G->wait_own);
		else
			snprintf(w, sizeof w, "%.1f -> %.1f ± %.1f (%s; no own)",
			         G->wait_before, G->wait_w, G->wait_sd,
			         from[G->wait_how]);
		if (isnan(G->derate_before))
			snprintf(was, sizeof was, "none");
		else
			snprintf(was, sizeof was, "%.3f", G->derate_before);
		if (isnan(G->derate))
			snprintf(d, sizeof d, "%s kept", was);
		else
			snprintf(d, sizeof d, "%s -> %.3f ± %.3f %s", was, G->derate,
			         G->derate_sd, tm_derate_basis_name(G->derate_basis));
		if (isnan(G->fit_sd_c))
			snprintf(f, sizeof f, "kept");
		else
			snprintf(f, sizeof f, "%.2f", G->fit_sd_c);
		/* "±" is two bytes for one column */
		sb_addf(&b, "%-*s  %-*s  %-*s  %s\n", wn, name,
		        40 + (G->wait_how != TM_WAIT_KEPT), w,
		        28 + !isnan(G->derate), d, f);
	}
	if (C->named.len)
		sb_add(&b, C->named.s);
	if (C->notes.len)
		sb_add(&b, C->notes.s);
	res->table = b.s;
}

/* ---- the command --------------------------------------------------------------- */

static double mae(const tm_cal_gpu *g, int n, size_t pred, size_t meas)
{
	double s = 0;
	int k = 0;
	for (int i = 0; i < n; i++) {
		double p = *(const double *)((const char *)&g[i] + pred);
		double m = *(const double *)((const char *)&g[i] + meas);
		if (isfinite(p) && isfinite(m)) {
			s += fabs(p - m);
			k++;
		}
	}
	return k ? s / k : NAN;
}

void tm_cal_result_clear(tm_cal_result *res)
{
	free(res->profile);
	free(res->table);
	free(res->gpu);
	free(res->unused);
	memset(res, 0, sizeof *res);
}

/* "telemetry A, B, C and 2 more": file names as text for people (the
 * table prints them, the calibrated profile's lines quote them). */
static void name_files(strbuf *b, const char *what, const char *const *f,
                       size_t stride, int n)
{
	sb_add(b, what);
	for (int i = 0; i < n && i < 3; i++) {
		sb_add(b, i ? ", " : "");
		sb_add_text(b, *(const char *const *)((const char *)f + stride *
		                                       (size_t)i));
	}
	if (n > 3)
		sb_addf(b, " and %d more", n - 3);
}

static int load_inputs(cal *C, const tm_cal_opts *o, tm_error *err)
{
	int rc;
	if ((rc = tm_cluster_load(o->cluster, &C->c, err)) ||
	    (rc = tm_read_file(o->profile, TM_MAX_INPUT_BYTES, &C->ptext,
	                       &C->plen, err)) ||
	    (rc = tm_profile_loadb(o->profile, C->ptext, C->plen, &C->p, err)) ||
	    (rc = tm_job_load(o->job, &C->j, err)) ||
	    (rc = tm_job_measured_load(C->j, &C->m, err)) ||
	    (rc = tm_policy_default(&C->pol, err)) ||
	    (rc = tm_plan_doc_load(o->plan, &C->plan, err)) ||
	    (rc = plan_layers(C, err)) ||
	    (rc = plan_of_job(C, err)))
		return rc;
	C->procs = xcalloc((size_t)o->nprocs + 1, sizeof *C->procs);
	for (int i = 0; i < o->nprocs; i++, C->nprocs++)
		if ((rc = tm_procs_load(o->procs[i], &C->procs[i], err)))
			return rc;
	return 0;
}

/* The means of an unused GPU's settled samples in the job's span, busy
 * and idle together. */
static void unused_gpu(cal *C, const tm_problem *pb, int g, tm_cal_gpu *U)
{
	const tacc *a = C->T.g[C->gtid[g]];
	const acc *j = &a->k[K_JOB], *i = &a->k[K_IDLE];
	double n = j->f[F_POWER].n + i->f[F_POWER].n;
	double m = j->f[F_TEMP].n + i->f[F_TEMP].n;
	memset(U, 0, sizeof *U);
	U->rank = U->stage = -1;
	snprintf(U->host, sizeof U->host, "%s", C->c->nodes[pb->gpu_host[g]].host);
	U->index = tm_gpu_of(pb, g)->index;
	U->samples = j->n + i->n;
	U->power_w = n ? (j->f[F_POWER].n * ws_mean(&j->f[F_POWER]) +
	                  i->f[F_POWER].n * ws_mean(&i->f[F_POWER])) / n : NAN;
	if (!j->f[F_POWER].n && n)
		U->power_w = ws_mean(&i->f[F_POWER]);
	else if (!i->f[F_POWER].n && n)
		U->power_w = ws_mean(&j->f[F_POWER]);
	U->temp_c = !m ? NAN : !j->f[F_TEMP].n ? ws_mean(&i->f[F_TEMP]) :
	            !i->f[F_TEMP].n ? ws_mean(&j->f[F_TEMP]) :
	            (j->f[F_TEMP].n * ws_mean(&j->f[F_TEMP]) +
	             i->f[F_TEMP].n * ws_mean(&i->f[F_TEMP])) / m;
	U->busy = U->samples ? (double)j->n / U->samples : NAN;
	U->power_se = U->temp_se = U->clock_mhz = U->clock_se = NAN;
	U->pcap_frac = U->thermal_frac = NAN;
	U->temp_before = U->power_before = U->temp_after = U->power_after = NAN;
	U->floor_w = U->floor_sd = U->wait_own = U->wait_own_sd = NAN;
	U->wait_w = U->wait_sd = U->wait_before = NAN;
	U->derate = U->derate_sd = U->derate_before = U->derate_sd_before = NAN;
	U->fit_sd_c = NAN;
	U->basis_before = TM_BASIS_UNSET;
	U->nforeign = C->gp[g].foreign;
}

/* What was measured of every GPU of the plan, and what the profile's
 * model said (pw, tc); the unused GPUs of its hosts that the telemetry
 * has; each GPU's measured power (C->gpw). */
static void measure(cal *C, const tm_problem *pb, const double *pw,
                    const double *tc)
{
	int nr = job_of(C)->world;
	C->gpw = xmalloc(sizeof(double) * (size_t)pb->ngpu);
	for (int g = 0; g < pb->ngpu; g++)
		C->gpw[g] = NAN;
	for (int r = 0; r < nr; r++) {
		tm_cal_gpu *G = &C->g[r];
		const acc *a = &C->T.g[C->tid[r]]->k[K_JOB];
		const tm_gpu_profile *e = entry_of(C, pb, r);
		int g = C->flat[r];
		G->rank = r;
		G->stage = pb->rank_stage[r];
		snprintf(G->host, sizeof G->host, "%s",
		         C->c->nodes[pb->gpu_host[g]].host);
		G->index = tm_gpu_of(pb, g)->index;
		G->samples = a->n;
		G->temp_c = ws_mean(&a->f[F_TEMP]);
		G->temp_se = acc_se(a, F_TEMP);
		G->power_w = C->gpw[g] = ws_mean(&a->f[F_POWER]);
		G->power_se = acc_se(a, F_POWER);
		G->clock_mhz = ws_mean(&a->f[F_CLOCK]);
		G->clock_se = acc_se(a, F_CLOCK);
		G->pcap_frac = ws_mean(&a->pcap);
		G->thermal_frac = ws_mean(&a->thermal);
		G->temp_before = tc[r];
		G->power_before = pw[r];
		G->wait_before = pb->p_wait[g];
		G->derate_before = e->derate;
		G->derate_sd_before = e->derate_sd;
		G->basis_before = e->derate_basis;
		G->nforeign = C->gp[g].foreign;
	}
	C->uflat = xmalloc(sizeof(int) * (size_t)pb->ngpu);
	C->u = xcalloc((size_t)pb->ngpu, sizeof *C->u);
	for (int g = 0; g < pb->ngpu; g++)
		if (C->owner[g] < 0 && C->gtid[g] >= 0) {
			unused_gpu(C, pb, g, &C->u[C->nu]);
			C->gpw[g] = C->u[C->nu].power_w;
			C->uflat[C->nu++] = g;
		}
}

static void cal_free(cal *C)
{
	tm_profile_free(C->p);
	tm_cluster_free(C->c);
	tm_job_free(C->jr);
	tm_job_free(C->j);
	tm_job_measured_clear(&C->m);
	tm_policy_free(C->pol);
	tm_plan_doc_clear(&C->plan);
	for (int i = 0; i < C->nprocs; i++)
		tm_procs_clear(&C->procs[i]);
	free(C->procs);
	if (C->sink)
		tl_sink_free(C->sink);
	tele_free(&C->T);
	sb_free(&C->notes);
	sb_free(&C->named);
	sb_free(&C->files);
	sb_free(&C->pfiles);
	free(C->ptext);
	free(C->flat);
	free(C->tid);
	free(C->gtid);
	free(C->owner);
	free(C->plan_host);
	free(C->gp);
	free(C->gpw);
	free(C->g);
	free(C->u);
	free(C->uflat);
	free(C->why_derate);
}

/* The calibrated profile as any command will read it, and the model's
 * prediction of the plan with it. */
static int after(cal *C, tm_cal_result *res, double *pw, double *tc,
                 tm_error *err)
{
	tm_profile *p2 = NULL;
	tm_problem *pb2 = NULL;
	int rc;
	if ((rc = tm_profile_loadb(C->o->profile, res->profile,
	                           strlen(res->profile), &p2, err)) ||
	    (rc = open_problem(C, p2, &pb2, err))) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		err->code = 0;
		rc = tm_fail(err, TM_EINTERNAL, "the calibrated profile does not "
		             "load: %s", msg);
	} else {
		res->iter_after_ms = predict(pb2, C->flat, NULL, pw, tc);
		for (int r = 0; r < res->ngpu; r++) {
			C->g[r].temp_after = tc[r];
			C->g[r].power_after = pw[r];
		}
	}
	tm_problem_free(pb2);
	tm_profile_free(p2);
	return rc;
}

int tm_calibrate(const tm_cal_opts *o, tm_cal_result *res, tm_error *err)
{
	cal C;
	tm_problem *pb0 = NULL, *pb1 = NULL;
	why *W = NULL;
	refit *F = NULL;
	double *busy = NULL, *pw = NULL, *tc = NULL;
	int rc, nr = 0;

	memset(&C, 0, sizeof C);
	memset(res, 0, sizeof *res);
	C.o = o;
	sb_init(&C.notes);
	sb_init(&C.named);
	sb_init(&C.files);
	sb_init(&C.pfiles);
	name_files(&C.files, "telemetry ", &o->tele[0].file, sizeof *o->tele,
	           o->ntele);
	if (o->nprocs)
		name_files(&C.pfiles, "", o->procs, sizeof *o->procs, o->nprocs);
	if ((rc = load_inputs(&C, o, err)) ||
	    (rc = open_problem(&C, C.p, &pb0, err)))
		goto out;
	nr = job_of(&C)->world;
	C.flat = xcalloc((size_t)nr, sizeof(int));
	C.tid = xcalloc((size_t)nr, sizeof(int));
	C.g = xcalloc((size_t)nr, sizeof *C.g);
	C.why_derate = xcalloc((size_t)nr, sizeof *C.why_derate);
	W = xcalloc((size_t)nr, sizeof *W);
	F = xcalloc((size_t)nr, sizeof *F);
	busy = xmalloc(sizeof(double) * (size_t)nr);
	pw = xmalloc(sizeof(double) * (size_t)nr);
	tc = xmalloc(sizeof(double) * (size_t)nr);
	C.T.start = C.m.start_unix_s;
	C.T.end = C.m.end_unix_s;
	if ((rc = plan_flat(&C, pb0, err)) ||
	    (rc = read_tele(o, &C.T, &C.sink, err)) ||
	    (rc = match_tele(&C, pb0, err)) ||
	    (rc = match_procs(&C, pb0, err)))
		goto out;

	/* what was measured, and what the profile's model said */
	res->iter_before_ms = predict(pb0, C.flat, NULL, pw, tc);
	measure(&C, pb0, pw, tc);

	/* speed first: the busy fractions of the waiting power depend on it */
	fit_derates(&C, pb0);
	for (int r = 0; r < nr; r++)
		if (!isnan(C.g[r].derate)) {
			tm_gpu_profile *e = entry_of(&C, pb0, r);
			e->derate = C.g[r].derate;
			e->derate_sd = C.g[r].derate_sd;
			e->derate_basis = C.g[r].derate_basis;
		}
	if ((rc = open_problem(&C, C.p, &pb1, err)))
		goto out;
	C.res_iter = predict(pb1, C.flat, busy, NULL, NULL);
	own_floors(&C, pb1, busy);
	fit_background(&C, pb1, W);
	fit_background_unused(&C, pb1);
	fit_waits(&C, pb1, W);
	fit_spread(&C, pb0, W);
	fit_couplings(&C, pb0, F);
	name_gpus(&C, W);
	if ((rc = in_range(&C, W, err)))
		goto out;
	res->profile = write_profile(&C, pb0, W, F, &res->ncalibrated,
	                             &res->nentries);
	res->ngpu = nr;
	if ((rc = after(&C, res, pw, tc, err)))
		goto out;
	snprintf(res->plan_id, sizeof res->plan_id, "%s", C.plan.id);
	res->iter_measured_ms = C.m.iteration_ms;
	res->mae_temp_before = mae(C.g, nr, offsetof(tm_cal_gpu, temp_before),
	                           offsetof(tm_cal_gpu, temp_c));
	res->mae_temp_after = mae(C.g, nr, offsetof(tm_cal_gpu, temp_after),
	                          offsetof(tm_cal_gpu, temp_c));
	res->mae_power_before = mae(C.g, nr, offsetof(tm_cal_gpu, power_before),
	                            offsetof(tm_cal_gpu, power_w));
	res->mae_power_after = mae(C.g, nr, offsetof(tm_cal_gpu, power_after),
	                           offsetof(tm_cal_gpu, power_w));
	table(&C, res);
	res->gpu = C.g;
	C.g = NULL;
	res->unused = C.u;
	res->nunused = C.nu;
	C.u = NULL;
out:
	if (rc) {
		free(res->profile);
		res->profile = NULL;
		res->ngpu = 0;
	}
	tm_problem_free(pb0);
	tm_problem_free(pb1);
	cal_free(&C);
	for (int r = 0; F && r < nr; r++)
		tm_coupling_free(F[r].c);
	free(F);
	free(W);
	free(busy);
	free(pw);
	free(tc);
	return rc;
}
