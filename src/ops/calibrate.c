/*
 * calibrate.c — `thermap calibrate` (docs/calibrate.md): the model's
 * parameters of the GPUs a plan ran on, fitted to what was measured while
 * it ran, and written back into the profile.
 *
 * From the telemetry of the run (read by the readers of `thermap profile`,
 * with the settling rule of docs/profile.md applied to in-job samples) it
 * takes each GPU's settled mean power, temperature and SM clock, with
 * their standard errors. It fits:
 *  - power_wait_w: the power of a rank that waits, from the measured power
 *    and the model's own busy fraction, each GPU's estimate combined with
 *    those of the other GPUs of its model by inverse-variance weighting
 *    with a between-GPU spread (random effects);
 *  - derate: each GPU's speed against the fastest GPU of its stage, from
 *    the job's measured per-rank times, else from the in-job clocks;
 *  - temp_fit_sd_c: the spread of the thermal fit, from its residuals at
 *    the job's (power, temperature) points.
 * It does not move ambient_c or r_c_per_w: a job point measures the
 * conditions of one run as much as the fit (docs/calibrate.md, "The
 * thermal fit"). It does not plan, and a calibration replaces earlier
 * calibrated values rather than accumulating runs.
 */
#include <stdlib.h>
#include <string.h>

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
/* The relative uncertainty of the model's busy fraction: its iteration
 * time against the measured one (measured.iteration_ms), at least
 * BUSY_REL_FLOOR, since the busy fraction uses the stage's time and a
 * rank's own compute strays from it by as much as DERATE_TIME_FLOOR;
 * without a measured iteration, BUSY_REL_DEFAULT, the model's miss on
 * fixtures/real/h200x4-vm (309.95 against 328.3 ms). */
#define BUSY_REL_FLOOR 0.02
#define BUSY_REL_DEFAULT 0.06
/* A busy fraction within this of 1 leaves no waiting to measure. */
#define BUSY_WAIT_MIN 1e-3
/* problem.c's rule for a clock under the power cap: capped in at least
 * half the samples and thermally slowed in under 5 %. */
#define PCAP_FRAC 0.5
#define THERMAL_FRAC 0.05
/* The thermal fit's spread when the profile does not give it
 * (problem.c's FIT_SD_DEFAULT_C). */
#define FIT_SD_DEFAULT_C 0.5

/* ---- in-job telemetry ------------------------------------------------------ */

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

typedef struct held {       /* a settled sample waiting out the guard */
	double t;
	double v[NF];
	double pcap, thermal;   /* reason flags, NAN when not logged */
} held;

/* One telemetry GPU's settled in-job samples. */
typedef struct tacc {
	long seen;              /* samples of it in the window */
	int run;                /* state of the current run: -1 unknown,
	                           0 idle, 1 busy */
	bool started;
	double run_start;       /* s */
	double plimit;          /* last power limit seen, W */
	held *q;                /* settled samples inside the guard, a ring
	                           of qcap (grown to QCAP) */
	int qhead, qn, qcap;
	long n;                 /* settled samples released */
	wstat f[NF];            /* over the samples */
	wstat blk[NF];          /* over block means */
	double bt0, blast;      /* the open block's first and last time */
	double bs[NF], bn[NF];  /* its sums and counts */
	wstat pcap, thermal;    /* reason flags over the samples */
	double t0, t1;          /* first and last settled time, NAN */
} tacc;

typedef struct tele {
	tacc **g;               /* by the sink's GPU id; NULL when unseen */
	int n, cap;
} tele;

static tacc *tacc_new(void)
{
	tacc *a = xcalloc(1, sizeof *a);
	a->run = -1;
	a->plimit = a->bt0 = a->blast = a->t0 = a->t1 = NAN;
	return a;
}

static void block_close(tacc *a)
{
	for (int k = 0; k < NF; k++)
		if (a->bn[k] > 0)
			ws_add(&a->blk[k], a->bs[k] / a->bn[k]);
	memset(a->bs, 0, sizeof a->bs);
	memset(a->bn, 0, sizeof a->bn);
	a->bt0 = a->blast = NAN;
}

static void release(tacc *a, const held *h)
{
	a->n++;
	for (int k = 0; k < NF; k++)
		ws_add(&a->f[k], h->v[k]);
	ws_add(&a->pcap, h->pcap);
	ws_add(&a->thermal, h->thermal);
	if (isnan(h->t))
		return;
	if (isnan(a->t0))
		a->t0 = h->t;
	a->t1 = h->t;
	if (!isnan(a->bt0) && h->t - a->bt0 >= BLOCK_S)
		block_close(a);
	if (isnan(a->bt0))
		a->bt0 = h->t;
	a->blast = h->t;
	for (int k = 0; k < NF; k++)
		if (!isnan(h->v[k])) {
			a->bs[k] += h->v[k];
			a->bn[k]++;
		}
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

/* The telemetry sink's tap: every sample of the window, in each GPU's
 * order. Settled busy samples wait GUARD_S for the next change of state. */
static void tap(void *ctx, int gpu, const tl_sample *s)
{
	tele *T = ctx;
	tacc *a;
	held h;
	int st;

	if (gpu >= T->cap) {
		int ncap = T->cap ? 2 * T->cap : 16;
		while (ncap <= gpu)
			ncap *= 2;
		T->g = xrealloc(T->g, sizeof *T->g * (size_t)ncap);
		memset(T->g + T->cap, 0, sizeof *T->g * (size_t)(ncap - T->cap));
		T->cap = ncap;
	}
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
	if (isnan(s->t)) {
		/* a snapshot without time: nothing to settle against, it
		 * counts as profile.md says */
		if (st == 1)
			release(a, &h);
		return;
	}
	if (!a->started || st != a->run) {
		/* a change of state: what is held more than GUARD_S before
		 * it is settled, the rest was mixed */
		for (; a->qn; a->qhead = (a->qhead + 1) % a->qcap, a->qn--)
			if (s->t - a->q[a->qhead].t > GUARD_S)
				release(a, &a->q[a->qhead]);
		a->started = true;
		a->run = st;
		a->run_start = s->t;
	}
	while (a->qn && s->t - a->q[a->qhead].t > GUARD_S) {
		release(a, &a->q[a->qhead]);
		a->qhead = (a->qhead + 1) % a->qcap;
		a->qn--;
	}
	if (st != 1 || s->t - a->run_start < SETTLE_S)
		return;
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
	a->q[(a->qhead + a->qn) % a->qcap] = h;
	a->qn++;
}

/* The end of the log is no change of state: what is held is settled. */
static void tacc_finish(tacc *a)
{
	for (; a->qn; a->qhead = (a->qhead + 1) % a->qcap, a->qn--)
		release(a, &a->q[a->qhead]);
	free(a->q);
	a->q = NULL;
	a->qcap = 0;
	/* a last block shorter than half a block says little */
	if (!isnan(a->bt0) && a->blast - a->bt0 >= BLOCK_S / 2)
		block_close(a);
}

/* The standard error of the mean of field k: by batch means when there
 * are two blocks or more, else from the samples as if independent. */
static double tacc_se(const tacc *a, int k)
{
	if (a->blk[k].n >= 2)
		return ws_sd(&a->blk[k]) / sqrt(a->blk[k].n);
	if (a->f[k].n >= 2)
		return ws_sd(&a->f[k]) / sqrt(a->f[k].n);
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

/* ---- the run: inputs, the plan's placement, its GPUs' telemetry ---------- */

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
	int *flat;              /* rank → flat GPU */
	int *tid;               /* rank → telemetry GPU */
	tele T;
	tl_sink *sink;
	tm_cal_gpu *g;          /* per rank */
	strbuf notes;           /* "note: ..." lines for the table */
	strbuf files;           /* the telemetry files, for "calibrated" */
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

/* Each rank's GPU among the telemetry's: same host, then the strongest
 * key both know. */
static int match_tele(cal *C, const tm_problem *pb, tm_error *err)
{
	int nr = job_of(C)->world, *rank_of = xmalloc(sizeof(int) *
	                                              (size_t)pb->ngpu);
	hname *hs = hosts_sorted(C->c);
	const char *other = NULL;
	int rc = 0;

	for (int g = 0; g < pb->ngpu; g++)
		rank_of[g] = -1;
	for (int r = 0; r < nr; r++) {
		rank_of[C->flat[r]] = r;
		C->tid[r] = -1;
	}
	for (int id = 0; id < C->T.n && !rc; id++) {
		const char *host, *uuid, *pci;
		int index, h, best = -1, bestq = 0;
		const tm_node *n;
		if (!C->T.g[id] || !C->T.g[id]->seen)
			continue;
		tl_gpu_ident(C->sink, id, &host, &uuid, &pci, &index);
		if ((h = find_host(hs, C->c->nnodes, host)) < 0) {
			other = host;
			continue;
		}
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
		best = rank_of[pb->host_first[h] + best];
		if (best < 0)
			continue;   /* a GPU the plan does not use */
		if (C->tid[best] >= 0)
			rc = tm_fail(err, TM_EINPUT, "%s: two GPUs of the telemetry "
			             "are host %s GPU %d (rank %d of plan %s); expected "
			             "one identity per GPU", first_file(C), host,
			             n->gpus[pb->gpu_pos[C->flat[best]]].index, best,
			             C->plan.id);
		C->tid[best] = id;
	}
	for (int r = 0; r < nr && !rc; r++) {
		const tm_node *n = &C->c->nodes[pb->gpu_host[C->flat[r]]];
		const tm_gpu *x = &n->gpus[pb->gpu_pos[C->flat[r]]];
		const tacc *a = C->tid[r] >= 0 ? C->T.g[C->tid[r]] : NULL;
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
		} else if (a->f[F_POWER].n == 0 || a->f[F_TEMP].n == 0) {
			rc = tm_fail(err, TM_EINPUT, "%s: host %s GPU %d has %ld "
			             "sample(s) in the window, %s; expected samples "
			             "with power and temperature, busy for more than "
			             "%g s and not within %g s of a change (the run, "
			             "or a window inside it)", first_file(C), n->host,
			             x->index, a->seen, a->n == 0 ? "none of them "
			             "settled in the job" : a->f[F_POWER].n == 0 ?
			             "none settled with a power reading" : "none "
			             "settled with a temperature", SETTLE_S, GUARD_S);
		}
	}
	free(hs);
	free(rank_of);
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

/* The derate of every GPU that shares its stage with another: its
 * compute time per microbatch (the job's measured times), else its clock
 * (in-job telemetry, GPUs of one model), against the fastest of them. A
 * GPU alone keeps the profile's. */
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
			x = times ? C->m.ranks[q].fwd_ms + C->m.ranks[q].bwd_ms
			          : C->g[q].clock_mhz;
			if (!(x > 0))
				continue;
			in |= q == r;
			grp[k++] = q;
			if (fast < 0 || (times ? x < C->m.ranks[fast].fwd_ms +
			                 C->m.ranks[fast].bwd_ms
			                       : x > C->g[fast].clock_mhz))
				fast = q;
		}
		if (!in || k < 2) {
			char was[32] = "none";
			done[r] = true;
			if (!isnan(C->g[r].derate_before))
				snprintf(was, sizeof was, "%.3f", C->g[r].derate_before);
			sb_addf(&C->notes, "note: %s:%d (rank %d) %s; its derate stays "
			        "the profile's (%s)\n", C->g[r].host, C->g[r].index, r,
			        !in ? "has no clock reading in the job" :
			        times ? "ran its stage alone" : "ran its stage alone "
			        "among GPUs of its model", was);
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
	free(grp);
	free(done);
}

/* ---- the waiting power ----------------------------------------------------- */

/* What the "calibrated" lines say besides the values. */
typedef struct why {
	double pool, pool_sd;   /* the other GPUs' estimate for this one, W */
	double tau;             /* between-GPU sd of the group, W */
	int others;             /* GPUs of the group with an estimate of
	                           their own, this one left out */
	double residual;        /* the fit's residual at the job point, °C */
	int nfit;               /* GPUs whose residuals made temp_fit_sd_c */
} why;

/* The power of a waiting rank, per GPU: P_wait = (P − b·P_load)/(1 − b)
 * from its measured power P and the model's busy fraction b, with the
 * variance of P's standard error and of b's uncertainty (which both grow
 * as b → 1); then each GPU's estimate with the other GPUs' of its model,
 * by inverse-variance weighting under a between-GPU spread τ
 * (DerSimonian-Laird, 0 when the estimates agree within their
 * uncertainties). A GPU with b ≈ 1 takes the others' estimate. */
static void fit_waits(cal *C, const tm_problem *pb, const double *busy,
                      double t_model, why *W)
{
	int nr = job_of(C)->world;
	double relb = isfinite(C->m.iteration_ms) ?
	              fmax(BUSY_REL_FLOOR, fabs(C->m.iteration_ms - t_model) /
	                   C->m.iteration_ms) : BUSY_REL_DEFAULT;
	bool *done = xcalloc((size_t)nr, sizeof *done);
	int *grp = xmalloc(sizeof(int) * (size_t)nr);

	for (int r = 0; r < nr; r++) {
		tm_cal_gpu *G = &C->g[r];
		const tm_gpu_profile *e = entry_of(C, pb, r);
		double b = busy[r], L = e->power_load_w, P = G->power_w;
		double se = fmax(G->power_se, POWER_SE_FLOOR_W), sb = relb * b;
		G->busy = b;
		G->wait_own = G->wait_own_sd = G->wait_w = G->wait_sd = NAN;
		if (!isfinite(L) || 1 - b < BUSY_WAIT_MIN)
			continue;
		G->wait_own = (P - b * L) / (1 - b);
		/* ∂/∂P = 1/(1−b), ∂/∂b = (P − L)/(1−b)² */
		G->wait_own_sd = sqrt(pow(se / (1 - b), 2) +
		                      pow((P - L) / ((1 - b) * (1 - b)) * sb, 2));
	}
	for (int r = 0; r < nr; r++) {
		double sw = 0, swx = 0, sww = 0, q = 0, tau2 = 0, mu, s = 0, sx = 0;
		int k = 0, n = 0;
		if (done[r])
			continue;
		for (int i = r; i < nr; i++)
			if (!done[i] && same_model(model_of(C, pb, i), model_of(C, pb, r))) {
				done[i] = true;
				grp[n++] = i;
			}
		for (int i = 0; i < n; i++) {
			const tm_cal_gpu *G = &C->g[grp[i]];
			double w;
			if (isnan(G->wait_own))
				continue;
			w = 1 / (G->wait_own_sd * G->wait_own_sd);
			sw += w;
			swx += w * G->wait_own;
			sww += w * w;
			k++;
		}
		if (k >= 2) {
			mu = swx / sw;
			for (int i = 0; i < n; i++) {
				const tm_cal_gpu *G = &C->g[grp[i]];
				if (!isnan(G->wait_own))
					q += pow(G->wait_own - mu, 2) /
					     (G->wait_own_sd * G->wait_own_sd);
			}
			tau2 = fmax(0, (q - (k - 1)) / (sw - sww / sw));
		}
		/* the random-effects weights */
		for (int i = 0; i < n; i++) {
			const tm_cal_gpu *G = &C->g[grp[i]];
			if (!isnan(G->wait_own)) {
				s += 1 / (G->wait_own_sd * G->wait_own_sd + tau2);
				sx += G->wait_own / (G->wait_own_sd * G->wait_own_sd + tau2);
			}
		}
		for (int i = 0; i < n; i++) {
			int g = grp[i];
			tm_cal_gpu *G = &C->g[g];
			const tm_gpu_profile *e = entry_of(C, pb, g);
			double so = s, sxo = sx, prec = 0, num = 0, lo, hi;
			/* the others: the group without this GPU */
			if (!isnan(G->wait_own)) {
				double v = G->wait_own_sd * G->wait_own_sd;
				so -= 1 / (v + tau2);
				sxo -= G->wait_own / (v + tau2);
				prec += 1 / v;
				num += G->wait_own / v;
			}
			W[g].others = k - !isnan(G->wait_own);
			W[g].tau = sqrt(tau2);
			W[g].pool = W[g].pool_sd = NAN;
			if (W[g].others > 0 && so > 0) {
				/* a GPU of this model: the others' mean, as uncertain
				 * as that mean plus the spread between GPUs */
				double pv = 1 / so + tau2;
				W[g].pool = sxo / so;
				W[g].pool_sd = sqrt(pv);
				prec += 1 / pv;
				num += W[g].pool / pv;
			}
			if (!(prec > 0) || !isfinite(e->power_load_w)) {
				sb_addf(&C->notes, "note: %s:%d (rank %d): %s; power_wait_w "
				        "stays the profile's\n", G->host, G->index, g,
				        !isfinite(e->power_load_w) ? "the profile has no "
				        "power_load_w" : "busy all the time, and no other "
				        "GPU of its model measured waiting");
				continue;
			}
			/* a waiting rank draws between idle and full load */
			lo = isfinite(e->power_idle_w) ? e->power_idle_w : 0;
			hi = e->power_load_w;
			G->wait_w = fmin(hi, fmax(fmin(lo, hi), num / prec));
			G->wait_sd = fmax(POWER_SE_FLOOR_W, sqrt(1 / prec));
		}
	}
	free(done);
	free(grp);
}

/* ---- the thermal fit's spread ----------------------------------------------- */

/* The fit's residual at the job point (measured power and temperature):
 * T − (ambient + r·P), or without the fit T against the straight line
 * through the idle and full-load levels. NAN when neither is known. */
static double fit_residual(const tm_gpu_profile *e, double P, double T)
{
	if (isfinite(e->ambient_c) && isfinite(e->r_c_per_w))
		return T - (e->ambient_c + e->r_c_per_w * P);
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
			W[i].residual = fit_residual(e, C->g[i].power_w, C->g[i].temp_c);
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
		                   G->derate_sd > 100 ? "derate_sd" : NULL;
		double v = G->wait_sd > 1e5 ? G->wait_sd : G->derate > 100 ?
		           G->derate : G->derate_sd;
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

/* Sets field = v, rounded to decimals, in entry e, listed in "calibrated"
 * with line, and no longer "estimated" nor "from_baseline". */
static void put(tm_gpu_profile *e, int field, double v, int decimals,
                const char *line, int *n)
{
	char shown[1024];
	double f = pow(10, decimals);
	/* shown as text for people, also where snprintf cut a character */
	tm_text(shown, sizeof shown, line);
	*tm_gpu_profile_num(e, field) = round(v * f) / f;
	tm_gpu_profile_mark(e, true, field, shown);
	tm_gpu_profile_mark(e, false, field, NULL);
	tm_gpu_profile_untake(e, tm_profile_field_name(field));
	(*n)++;
}

/* The calibrated profile: the prior (C->p, whose derates already hold
 * the fitted ones) with every fitted field set and its line, written as
 * every profile is. Each line is made before its field is set, so that
 * "before" is the prior's value. */
static char *write_profile(cal *C, const tm_problem *pb, const why *W,
                           int *ncal)
{
	int nr = job_of(C)->world;
	char line[1024], a[32], b[32];

	*ncal = 0;
	for (int r = 0; r < nr; r++) {
		const tm_cal_gpu *G = &C->g[r];
		tm_gpu_profile *e = entry_of(C, pb, r);
		const tm_gpu_profile *e0 = e;
		char src[512];
		snprintf(src, sizeof src, "thermap calibrate: plan %s, %s (%ld "
		         "settled in-job samples over %.0f s)", C->plan.id,
		         C->files.s, G->samples,
		         isnan(C->T.g[C->tid[r]]->t0) ? 0.0 :
		         C->T.g[C->tid[r]]->t1 - C->T.g[C->tid[r]]->t0);
		if (!isnan(G->wait_w)) {
			char own[160], pool[192];
			if (isnan(G->wait_own))
				snprintf(own, sizeof own, "own: none (busy %.3f leaves "
				         "nothing to measure)", G->busy);
			else
				snprintf(own, sizeof own, "own (P - b*P_load)/(1 - b) = "
				         "%.1f +- %.1f W with P %.2f W, b %.3f, P_load "
				         "%.2f W", G->wait_own, G->wait_own_sd, G->power_w,
				         G->busy, e0->power_load_w);
			if (isnan(W[r].pool))
				snprintf(pool, sizeof pool, "no other GPU of its model "
				         "measured waiting");
			else
				snprintf(pool, sizeof pool, "the other %d GPU(s) of its "
				         "model give %.1f +- %.1f W (between-GPU sd %.1f "
				         "W)", W[r].others, W[r].pool, W[r].pool_sd,
				         W[r].tau);
			fmt_or_none(a, sizeof a, e0->power_wait_w, " W");
			snprintf(line, sizeof line, "%s: %s; %s; inverse-variance "
			         "combined; before: %s (the model took %.1f W)", src,
			         own, pool, a, G->wait_before);
			put(e, TM_PF_POWER_WAIT_W, G->wait_w, 2, line, ncal);
			fmt_or_none(a, sizeof a, e0->power_wait_sd_w, " W");
			snprintf(line, sizeof line, "%s: the uncertainty of "
			         "power_wait_w, from the power's standard error (at "
			         "least %g W) and the busy fraction's (%.1f %% of b); "
			         "before: %s", src, POWER_SE_FLOOR_W,
			         100 * (isfinite(C->m.iteration_ms) ?
			                fmax(BUSY_REL_FLOOR,
			                     fabs(C->m.iteration_ms - C->res_iter) /
			                     C->m.iteration_ms) : BUSY_REL_DEFAULT), a);
			put(e, TM_PF_POWER_WAIT_SD_W, G->wait_sd, 2, line, ncal);
		}
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
		if (!isnan(G->fit_sd_c)) {
			fmt_or_none(a, sizeof a, e0->temp_fit_sd_c, " C");
			snprintf(line, sizeof line, "%s: root mean square of the prior "
			         "spread (%.2f C) and the fit's residual at the job "
			         "point over %d GPU(s) of its model; here %+.2f C at "
			         "%.2f W and %.2f C; ambient_c and r_c_per_w kept; "
			         "before: %s", src, isfinite(e0->temp_fit_sd_c) ?
			         e0->temp_fit_sd_c : FIT_SD_DEFAULT_C, W[r].nfit,
			         W[r].residual, G->power_w, G->temp_c, a);
			put(e, TM_PF_TEMP_FIT_SD_C, G->fit_sd_c, 2, line, ncal);
		}
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
	sb_addf(&b, "\n%-*s  %-36s  %-28s  %s\n", wn, "GPU",
	        "power_wait_w (W)", "derate", "temp_fit_sd_c (°C)");
	for (int r = 0; r < nr; r++) {
		const tm_cal_gpu *G = &C->g[r];
		char w[64], d[64], f[64], was[16];
		snprintf(name, sizeof name, "%s:%d", G->host, G->index);
		if (isnan(G->wait_w))
			snprintf(w, sizeof w, "%.1f kept", G->wait_before);
		else if (isnan(G->wait_own))
			snprintf(w, sizeof w, "%.1f -> %.1f ± %.1f (others')",
			         G->wait_before, G->wait_w, G->wait_sd);
		else
			snprintf(w, sizeof w, "%.1f -> %.1f ± %.1f (own %.1f)",
			         G->wait_before, G->wait_w, G->wait_sd, G->wait_own);
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
		sb_addf(&b, "%-*s  %-36s  %-28s  %s\n", wn, name, w, d, f);
	}
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
	memset(res, 0, sizeof *res);
}

int tm_calibrate(const tm_cal_opts *o, tm_cal_result *res, tm_error *err)
{
	cal C;
	tm_problem *pb0 = NULL, *pb1 = NULL, *pb2 = NULL;
	tm_profile *p2 = NULL;
	why *W = NULL;
	double *busy = NULL, *pw = NULL, *tc = NULL;
	int rc, nr = 0;

	memset(&C, 0, sizeof C);
	memset(res, 0, sizeof *res);
	C.o = o;
	sb_init(&C.notes);
	sb_init(&C.files);
	sb_add(&C.files, "telemetry ");
	/* file names as text for people: the table prints them, the
	 * calibrated profile's lines quote them */
	for (int i = 0; i < o->ntele && i < 3; i++) {
		sb_add(&C.files, i ? ", " : "");
		sb_add_text(&C.files, o->tele[i].file);
	}
	if (o->ntele > 3)
		sb_addf(&C.files, " and %d more", o->ntele - 3);
	if ((rc = tm_cluster_load(o->cluster, &C.c, err)) ||
	    (rc = tm_read_file(o->profile, TM_MAX_INPUT_BYTES, &C.ptext,
	                       &C.plen, err)) ||
	    (rc = tm_profile_loadb(o->profile, C.ptext, C.plen, &C.p, err)) ||
	    (rc = tm_job_load(o->job, &C.j, err)) ||
	    (rc = tm_job_measured_load(C.j, &C.m, err)) ||
	    (rc = tm_policy_default(&C.pol, err)) ||
	    (rc = tm_plan_doc_load(o->plan, &C.plan, err)) ||
	    (rc = plan_layers(&C, err)) ||
	    (rc = plan_of_job(&C, err)) ||
	    (rc = open_problem(&C, C.p, &pb0, err)))
		goto out;
	nr = job_of(&C)->world;
	C.flat = xcalloc((size_t)nr, sizeof(int));
	C.tid = xcalloc((size_t)nr, sizeof(int));
	C.g = xcalloc((size_t)nr, sizeof *C.g);
	C.why_derate = xcalloc((size_t)nr, sizeof *C.why_derate);
	W = xcalloc((size_t)nr, sizeof *W);
	busy = xmalloc(sizeof(double) * (size_t)nr);
	pw = xmalloc(sizeof(double) * (size_t)nr);
	tc = xmalloc(sizeof(double) * (size_t)nr);
	if ((rc = plan_flat(&C, pb0, err)) ||
	    (rc = read_tele(o, &C.T, &C.sink, err)) ||
	    (rc = match_tele(&C, pb0, err)))
		goto out;

	/* what was measured, and what the profile's model said */
	res->iter_before_ms = predict(pb0, C.flat, NULL, pw, tc);
	for (int r = 0; r < nr; r++) {
		tm_cal_gpu *G = &C.g[r];
		const tacc *a = C.T.g[C.tid[r]];
		const tm_gpu_profile *e = entry_of(&C, pb0, r);
		int g = C.flat[r];
		G->rank = r;
		G->stage = pb0->rank_stage[r];
		snprintf(G->host, sizeof G->host, "%s",
		         C.c->nodes[pb0->gpu_host[g]].host);
		G->index = C.c->nodes[pb0->gpu_host[g]].gpus[pb0->gpu_pos[g]].index;
		G->samples = a->n;
		G->temp_c = ws_mean(&a->f[F_TEMP]);
		G->temp_se = tacc_se(a, F_TEMP);
		G->power_w = ws_mean(&a->f[F_POWER]);
		G->power_se = tacc_se(a, F_POWER);
		G->clock_mhz = ws_mean(&a->f[F_CLOCK]);
		G->clock_se = tacc_se(a, F_CLOCK);
		G->pcap_frac = ws_mean(&a->pcap);
		G->thermal_frac = ws_mean(&a->thermal);
		G->temp_before = tc[r];
		G->power_before = pw[r];
		G->wait_before = pb0->p_wait[g];
		G->derate_before = e->derate;
		G->derate_sd_before = e->derate_sd;
		G->basis_before = e->derate_basis;
	}

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
	fit_waits(&C, pb1, busy, C.res_iter, W);
	fit_spread(&C, pb0, W);
	if ((rc = in_range(&C, W, err)))
		goto out;
	res->profile = write_profile(&C, pb0, W, &res->ncalibrated);

	/* the calibrated profile as any command will read it */
	if ((rc = tm_profile_loadb(o->profile, res->profile,
	                           strlen(res->profile), &p2, err)) ||
	    (rc = open_problem(&C, p2, &pb2, err))) {
		char msg[sizeof err->msg];
		snprintf(msg, sizeof msg, "%s", err->msg);
		err->code = 0;
		rc = tm_fail(err, TM_EINTERNAL, "the calibrated profile does not "
		             "load: %s", msg);
		goto out;
	}
	res->iter_after_ms = predict(pb2, C.flat, NULL, pw, tc);
	for (int r = 0; r < nr; r++) {
		C.g[r].temp_after = tc[r];
		C.g[r].power_after = pw[r];
	}
	res->ngpu = nr;
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
out:
	if (rc) {
		free(res->profile);
		res->profile = NULL;
	}
	tm_problem_free(pb0);
	tm_problem_free(pb1);
	tm_problem_free(pb2);
	tm_profile_free(p2);
	tm_profile_free(C.p);
	tm_cluster_free(C.c);
	tm_job_free(C.jr);
	tm_job_free(C.j);
	tm_job_measured_clear(&C.m);
	tm_policy_free(C.pol);
	tm_plan_doc_clear(&C.plan);
	if (C.sink)
		tl_sink_free(C.sink);
	tele_free(&C.T);
	sb_free(&C.notes);
	sb_free(&C.files);
	free(C.ptext);
	free(C.flat);
	free(C.tid);
	free(C.g);
	free(C.why_derate);
	free(W);
	free(busy);
	free(pw);
	free(tc);
	return rc;
}
