/*
 * job.c — loads and validates a thermap.job/1 document (parallel sizes, the
 * Megatron-Core order string, schedule and per-stage costs) and maps global
 * ranks to their coordinates. Expert parallelism follows Megatron-Core: it
 * splits the data-parallel dimension, so the world size is tp·cp·dp·pp and
 * ep must divide dp.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "format/format.h"

/* the names of enum tm_dim, as job files, plans and messages spell them */
const char *const tm_dim_names[TM_NDIM] = { "tp", "cp", "ep", "dp", "pp" };

void tm_job_free(tm_job *j)
{
	if (!j)
		return;
	free(j->stages);
	free(j->file);
	free(j);
}

static int parse_order(const jin *J, const char *s, tm_job *j)
{
	char tok[8];
	const char *p = s;
	bool seen[TM_NDIM] = { false };
	int ep_pos = -1, dp_pos = -1;

	j->norder = 0;
	while (*p) {
		size_t n = strcspn(p, "-");
		int d = -1;
		if (n == 0 || n >= sizeof tok)
			return jin_fail(J, "parallel", "order", "\"%.60s\": expected "
			                "dimensions tp, cp, ep, dp, pp joined by '-'", s);
		memcpy(tok, p, n);
		tok[n] = '\0';
		for (int k = 0; k < TM_NDIM; k++)
			if (!strcmp(tok, tm_dim_names[k]))
				d = k;
		if (d < 0)
			return jin_fail(J, "parallel", "order", "\"%s\" is not a "
			                "dimension; expected tp, cp, ep, dp or pp", tok);
		if (seen[d])
			return jin_fail(J, "parallel", "order", "names %s twice", tok);
		seen[d] = true;
		if (d == TM_EP)
			ep_pos = j->norder;
		if (d == TM_DP)
			dp_pos = j->norder;
		j->order[j->norder++] = d;
		p += n;
		if (*p == '-' && p[1] == '\0')
			return jin_fail(J, "parallel", "order", "\"%.60s\" ends with '-'",
			                s);
		if (*p == '-')
			p++;
	}
	for (int k = 0; k < TM_NDIM; k++)
		if (!seen[k] && j->size[k] > 1)
			return jin_fail(J, "parallel", "order", "\"%.60s\" leaves out %s, "
			                "whose size is %d", s, tm_dim_names[k], j->size[k]);
	if (ep_pos >= 0 && j->size[TM_EP] > 1 &&
	    (dp_pos < 0 || abs(ep_pos - dp_pos) != 1))
		return jin_fail(J, "parallel", "order", "\"%.60s\": ep must sit next "
		                "to dp (Megatron-Core splits dp into ep groups)", s);
	return 0;
}

/* The mixed-radix digits of a rank, fastest dimension first. dp is the
 * combined data-parallel index of its ep and outer parts. */
void tm_job_coords(const tm_job *j, int rank, int coord[TM_NDIM])
{
	int ep = j->size[TM_EP], dpo = j->size[TM_DP] / ep;
	int r = rank, epc = 0, dpc = 0, ep_pos = -1, dp_pos = -1;

	for (int k = 0; k < TM_NDIM; k++)
		coord[k] = 0;
	for (int i = 0; i < j->norder; i++) {
		int d = j->order[i];
		int size = d == TM_DP ? dpo : j->size[d];
		int digit = r % size;
		r /= size;
		if (d == TM_EP) {
			epc = digit;
			ep_pos = i;
		} else if (d == TM_DP) {
			dpc = digit;
			dp_pos = i;
		} else {
			coord[d] = digit;
		}
	}
	coord[TM_EP] = epc;
	if (ep == 1)
		coord[TM_DP] = dpc;
	else if (ep_pos < dp_pos)	/* ep varies faster than the rest of dp */
		coord[TM_DP] = epc + ep * dpc;
	else
		coord[TM_DP] = dpc + dpo * epc;
}

static int load_stage(const jin *J, json_t *o, const char *path,
                      tm_stage *s, bool *uses_layers)
{
	static const char *const known[] = { "layers", "fwd_ms", "bwd_ms",
		"extra_fwd_ms", "extra_bwd_ms", "act_mib", "grad_mib", "a2a_mib",
		"mem_gib", NULL };
	double efwd = 0, ebwd = 0;
	int rc;

	s->layers = -1;
	s->fwd_ms = s->bwd_ms = NAN;
	s->act_mib = 0;
	s->grad_mib = 0;
	s->a2a_mib = 0;
	s->mem_gib = NAN;
	s->extra_fwd_ms = s->extra_bwd_ms = 0;
	if (!json_is_object(o))
		return jin_fail(J, path, NULL, "expected a stage object");
	jin_unknown(J, o, path, known);
	if ((rc = jin_int(J, o, path, "layers", 0, 0, 100000, &s->layers)) ||
	    (rc = jin_num(J, o, path, "fwd_ms", 0, 0, 1e7, &s->fwd_ms)) ||
	    (rc = jin_num(J, o, path, "bwd_ms", 0, 0, 1e7, &s->bwd_ms)) ||
	    (rc = jin_num(J, o, path, "extra_fwd_ms", 0, 0, 1e7, &efwd)) ||
	    (rc = jin_num(J, o, path, "extra_bwd_ms", 0, 0, 1e7, &ebwd)) ||
	    (rc = jin_num(J, o, path, "act_mib", 0, 0, 1e7, &s->act_mib)) ||
	    (rc = jin_num(J, o, path, "grad_mib", 0, 0, 1e7, &s->grad_mib)) ||
	    (rc = jin_num(J, o, path, "a2a_mib", 0, 0, 1e7, &s->a2a_mib)) ||
	    (rc = jin_num(J, o, path, "mem_gib", JF_NULL, 0, 1e6, &s->mem_gib)))
		return rc;
	if (isfinite(s->fwd_ms) || isfinite(s->bwd_ms)) {
		if (!isfinite(s->fwd_ms) || !isfinite(s->bwd_ms))
			return jin_fail(J, path, isfinite(s->fwd_ms) ? "bwd_ms" :
			                "fwd_ms", "missing; a measured stage gives both "
			                "fwd_ms and bwd_ms");
		if (json_object_get(o, "extra_fwd_ms") ||
		    json_object_get(o, "extra_bwd_ms"))
			return jin_fail(J, path, NULL, "gives fwd_ms/bwd_ms and "
			                "extra_*_ms; extras apply only to layers × "
			                "layer_*_ms");
		s->measured = true;
	} else {
		if (s->layers < 0)
			return jin_fail(J, path, NULL, "expected either fwd_ms and "
			                "bwd_ms, or layers");
		*uses_layers = true;
		s->fwd_ms = s->extra_fwd_ms = efwd;
		s->bwd_ms = s->extra_bwd_ms = ebwd;
	}
	return 0;
}

/* ---- "measured": what a run of the job measured ------------------------- */

void tm_job_measured_clear(tm_job_measured *m)
{
	free(m->ranks);
	m->ranks = NULL;
	m->nranks = 0;
}

/* The run's span: the first rank ready before any work on a GPU, the
 * last one finished (seconds since 1970; up to 10^11, the year 5138). */
static int load_span(const jin *J, json_t *o, tm_job_measured *m)
{
	int rc;
	if ((rc = jin_num(J, o, "measured", "start_unix_s", JF_NULL, 0, 1e11,
	                  &m->start_unix_s)) ||
	    (rc = jin_num(J, o, "measured", "end_unix_s", JF_NULL, 0, 1e11,
	                  &m->end_unix_s)))
		return rc;
	if (m->end_unix_s < m->start_unix_s)
		return jin_fail(J, "measured", "end_unix_s", "%.17g is before "
		                "start_unix_s %.17g; expected the time the last "
		                "rank finished, after the first was ready",
		                m->end_unix_s, m->start_unix_s);
	return 0;
}

/* One rank's entry of measured.ranks at position r. */
static int load_rank(const jin *J, json_t *e, int r, bool warn,
                     tm_measured_rank *x)
{
	static const char *const known_rank[] = { "rank", "fwd_ms", "bwd_ms",
		"sd_ms", "iterations", "pid", NULL };
	char path[64];
	int rc, rank = -1, iters = 0;

	snprintf(path, sizeof path, "measured.ranks[%d]", r);
	x->sd_ms = x->iterations = NAN;
	x->pid = 0;
	if (!json_is_object(e))
		return jin_fail(J, path, NULL, "expected an object with rank, "
		                "fwd_ms and bwd_ms");
	if (warn)
		jin_unknown(J, e, path, known_rank);
	if ((rc = jin_int(J, e, path, "rank", JF_REQ, 0, TM_MAX_RANKS, &rank)))
		return rc;
	if (rank != r)
		return jin_fail(J, path, "rank", "%d; expected %d (one entry per "
		                "rank, in rank order)", rank, r);
	if ((rc = jin_num(J, e, path, "fwd_ms", JF_REQ, 0, 1e7, &x->fwd_ms)) ||
	    (rc = jin_num(J, e, path, "bwd_ms", JF_REQ, 0, 1e7, &x->bwd_ms)) ||
	    (rc = jin_num(J, e, path, "sd_ms", JF_NULL, 0, 1e7, &x->sd_ms)) ||
	    /* a process id of Linux (pid_max is at most 2^22, an int on
	     * every system) */
	    (rc = jin_int(J, e, path, "pid", JF_NULL, 1, 2147483647, &x->pid)))
		return rc;
	if (json_object_get(e, "iterations") &&
	    !json_is_null(json_object_get(e, "iterations"))) {
		if ((rc = jin_int(J, e, path, "iterations", 0, 1, 1000000000,
		                  &iters)))
			return rc;
		x->iterations = iters;
	}
	if (!(x->fwd_ms + x->bwd_ms > 0))
		return jin_fail(J, path, NULL, "measured no compute (fwd_ms + "
		                "bwd_ms is 0); expected a positive time");
	return 0;
}

/* The optional "measured" section: the run's median iteration, its span
 * and each rank's compute per microbatch and process id
 * (examples/pipeline/to_job.py writes it). */
static int load_measured(const jin *J, json_t *root, const tm_job *j,
                         bool warn, tm_job_measured *m)
{
	static const char *const known[] = { "iteration_ms", "start_unix_s",
		"end_unix_s", "ranks", NULL };
	json_t *o, *ranks;
	int rc, with_pid = -1, without_pid = -1;

	m->iteration_ms = m->start_unix_s = m->end_unix_s = NAN;
	m->nranks = 0;
	m->pids = false;
	m->ranks = NULL;
	if ((rc = jin_obj(J, root, "", "measured", JF_NULL, &o)) || !o)
		return rc;
	if (warn)   /* once, when the job is loaded */
		jin_unknown(J, o, "measured", known);
	if ((rc = jin_num(J, o, "measured", "iteration_ms", JF_NULL, 0.001, 1e7,
	                  &m->iteration_ms)) ||
	    (rc = load_span(J, o, m)) ||
	    (rc = jin_arr(J, o, "measured", "ranks", JF_NULL, &ranks)) || !ranks)
		return rc;
	if (json_array_size(ranks) != (size_t)j->world)
		return jin_fail(J, "measured", "ranks", "has %zu entries; expected "
		                "one per rank, %d", json_array_size(ranks), j->world);
	m->nranks = j->world;
	m->ranks = xcalloc((size_t)j->world, sizeof *m->ranks);
	for (int r = 0; r < j->world; r++) {
		if ((rc = load_rank(J, json_array_get(ranks, (size_t)r), r, warn,
		                    &m->ranks[r])))
			return rc;
		if (m->ranks[r].pid && with_pid < 0)
			with_pid = r;
		if (!m->ranks[r].pid && without_pid < 0)
			without_pid = r;
	}
	/* the job's own processes are told from others by their pids: a
	 * rank without one would make its process look like another's */
	if (with_pid >= 0 && without_pid >= 0) {
		char path[64];
		snprintf(path, sizeof path, "measured.ranks[%d]", without_pid);
		return jin_fail(J, path, "pid", "missing, but ranks[%d] gives "
		                "one; expected a pid for every rank or for none",
		                with_pid);
	}
	m->pids = with_pid >= 0;
	return 0;
}

int tm_job_measured_load(const tm_job *j, tm_job_measured *m, tm_error *err)
{
	json_t *root = NULL;
	jin J = { j->file, err };
	char sha[72];
	int rc;

	m->iteration_ms = m->start_unix_s = m->end_unix_s = NAN;
	m->nranks = 0;
	m->pids = false;
	m->ranks = NULL;
	if ((rc = jin_load(j->file, "thermap.job", &root, sha, err)))
		return rc;
	/* the section must belong to the job that was validated */
	if (strcmp(sha, j->sha256))
		rc = tm_fail(err, TM_EINPUT, "%s: changed while it was being read",
		             j->file);
	else if ((rc = load_measured(&J, root, j, false, m)))
		tm_job_measured_clear(m);
	json_decref(root);
	return rc;
}

/* From the file, or from len bytes of text (text non-NULL) standing for
 * it. */
static int job_load(const char *file, const char *text, size_t len,
                    tm_job **out, tm_error *err)
{
	static const char *const known[] = { "format", "name", "parallel",
		"nproc_per_node", "schedule", "layer_fwd_ms", "layer_bwd_ms",
		"layer_mem_gib", "tokens_per_iteration", "stages", "measured",
		NULL };
	static const char *const known_par[] = { "tp", "cp", "ep", "dp", "pp",
		"vpp", "order", NULL };
	static const char *const known_sched[] = { "kind", "microbatches",
		NULL };
	tm_job *j = xcalloc(1, sizeof *j);
	json_t *root = NULL, *par, *sched, *stages;
	jin J = { file, err };
	char *order = NULL, *kind = NULL, path[64];
	double lf = NAN, lb = NAN;
	bool uses_layers = false;
	long long world;
	int rc;

	j->file = xstrdup(file);
	j->layer_mem_gib = j->tokens_per_iteration = NAN;
	for (int k = 0; k < TM_NDIM; k++)
		j->size[k] = 1;
	j->vpp = 1;
	if (text) {
		char hex[65];
		tm_sha256_hex(text, len, hex);
		snprintf(j->sha256, sizeof j->sha256, "sha256:%s", hex);
		rc = jin_loadb(file, text, len, "thermap.job", &root, err);
	} else {
		rc = jin_load(file, "thermap.job", &root, j->sha256, err);
	}
	if (rc)
		goto fail;
	jin_unknown(&J, root, "", known);
	if ((rc = jin_obj(&J, root, "", "parallel", JF_REQ, &par)))
		goto fail;
	jin_unknown(&J, par, "parallel", known_par);
	for (int k = 0; k < TM_NDIM; k++)
		if ((rc = jin_int(&J, par, "parallel", tm_dim_names[k], 0, 1, 65536,
		                  &j->size[k])))
			goto fail;
	if ((rc = jin_int(&J, par, "parallel", "vpp", JF_NULL, 1, 1024,
	                  &j->vpp)) ||
	    (rc = jin_str(&J, par, "parallel", "order", JF_NULL, &order)))
		goto fail;
	if (j->size[TM_DP] % j->size[TM_EP]) {
		rc = jin_fail(&J, "parallel", "ep", "%d does not divide dp %d "
		              "(Megatron-Core folds expert parallelism into data "
		              "parallelism)", j->size[TM_EP], j->size[TM_DP]);
		goto fail;
	}
	if ((rc = parse_order(&J, order ? order : "tp-cp-ep-dp-pp", j)))
		goto fail;
	world = (long long)j->size[TM_TP] * j->size[TM_CP] * j->size[TM_DP] *
	        j->size[TM_PP];
	if (world > TM_MAX_RANKS) {
		rc = jin_fail(&J, "", "parallel", "tp·cp·dp·pp = %lld ranks; at most "
		              "%d are supported", world, TM_MAX_RANKS);
		goto fail;
	}
	j->world = (int)world;
	if ((rc = jin_int(&J, root, "", "nproc_per_node", JF_REQ, 1, 4096,
	                  &j->nproc_per_node)))
		goto fail;
	if (j->world % j->nproc_per_node) {
		rc = jin_fail(&J, "", "nproc_per_node", "%d does not divide the "
		              "world size %d (tp·cp·dp·pp)", j->nproc_per_node,
		              j->world);
		goto fail;
	}
	if ((rc = jin_obj(&J, root, "", "schedule", JF_REQ, &sched)))
		goto fail;
	jin_unknown(&J, sched, "schedule", known_sched);
	if ((rc = jin_str(&J, sched, "schedule", "kind", JF_REQ, &kind)) ||
	    (rc = jin_int(&J, sched, "schedule", "microbatches", JF_REQ, 1,
	                  1000000, &j->microbatches)))
		goto fail;
	if (!strcmp(kind, "1f1b"))
		j->sched = j->vpp > 1 ? TM_SCHED_INTERLEAVED : TM_SCHED_1F1B;
	else if (!strcmp(kind, "interleaved") ||
	         !strcmp(kind, "interleaved-1f1b"))
		j->sched = TM_SCHED_INTERLEAVED;
	else if (!strcmp(kind, "gpipe"))
		j->sched = TM_SCHED_GPIPE;
	else {
		rc = jin_fail(&J, "schedule", "kind", "\"%.40s\" is not a schedule; "
		              "expected \"1f1b\", \"interleaved\" or \"gpipe\"", kind);
		goto fail;
	}
	if (j->sched == TM_SCHED_GPIPE && j->vpp > 1) {
		rc = jin_fail(&J, "schedule", "kind", "gpipe has no virtual "
		              "stages; expected vpp 1, got %d", j->vpp);
		goto fail;
	}
	if ((rc = jin_num(&J, root, "", "layer_fwd_ms", 0, 0, 1e7, &lf)) ||
	    (rc = jin_num(&J, root, "", "layer_bwd_ms", 0, 0, 1e7, &lb)) ||
	    (rc = jin_num(&J, root, "", "layer_mem_gib", JF_NULL, 0, 1e6,
	                  &j->layer_mem_gib)) ||
	    (rc = jin_num(&J, root, "", "tokens_per_iteration", JF_NULL, 1,
	                  1e15, &j->tokens_per_iteration)) ||
	    (rc = jin_arr(&J, root, "", "stages", JF_REQ, &stages)))
		goto fail;
	j->nstages = j->size[TM_PP] * j->vpp;
	if ((int)json_array_size(stages) != j->nstages) {
		rc = jin_fail(&J, "", "stages", "has %zu entries; expected pp·vpp "
		              "= %d", json_array_size(stages), j->nstages);
		goto fail;
	}
	j->stages = xcalloc((size_t)j->nstages, sizeof *j->stages);
	j->by_layers = true;
	for (int s = 0; s < j->nstages; s++) {
		snprintf(path, sizeof path, "stages[%d]", s);
		if ((rc = load_stage(&J, json_array_get(stages, (size_t)s), path,
		                     &j->stages[s], &uses_layers)))
			goto fail;
		if (j->stages[s].measured)
			j->by_layers = false;
	}
	j->layer_fwd_ms = lf;
	j->layer_bwd_ms = lb;
	if (uses_layers && (!isfinite(lf) || !isfinite(lb))) {
		rc = jin_fail(&J, "", isfinite(lf) ? "layer_bwd_ms" : "layer_fwd_ms",
		              "missing; stages given by layers need layer_fwd_ms and "
		              "layer_bwd_ms");
		goto fail;
	}
	{
		/* validated here so that every command rejects a malformed
		 * section; only thermap calibrate reads it (tm_job_measured_load) */
		tm_job_measured m;
		rc = load_measured(&J, root, j, true, &m);
		tm_job_measured_clear(&m);
		if (rc)
			goto fail;
	}
	for (int s = 0; s < j->nstages; s++) {
		tm_stage *st = &j->stages[s];
		if (!st->measured) {
			st->fwd_ms += st->layers * lf;
			st->bwd_ms += st->layers * lb;
		}
		if (!(st->fwd_ms + st->bwd_ms > 0)) {
			snprintf(path, sizeof path, "stages[%d]", s);
			rc = jin_fail(&J, path, NULL, "does no work (forward + backward "
			              "is 0 ms); expected a positive time");
			goto fail;
		}
	}
	free(order);
	free(kind);
	json_decref(root);
	*out = j;
	return 0;
fail:
	free(order);
	free(kind);
	json_decref(root);
	tm_job_free(j);
	*out = NULL;
	return rc;
}

int tm_job_load(const char *file, tm_job **out, tm_error *err)
{
	return job_load(file, NULL, 0, out, err);
}

int tm_job_loadb(const char *name, const char *text, size_t len,
                 tm_job **out, tm_error *err)
{
	return job_load(name, text, len, out, err);
}

int tm_job_total_layers(const tm_job *j)
{
	long n = 0;
	if (!j->by_layers)
		return -1;
	for (int c = 0; c < j->nstages; c++)
		n += j->stages[c].layers;
	return n > 1000000000 ? -1 : (int)n;
}

tm_job *tm_job_relayer(const tm_job *j, const int *layers)
{
	tm_job *k = xmalloc(sizeof *k);
	*k = *j;
	k->file = xstrdup(j->file);
	k->relayered = true;
	k->stages = xmalloc(sizeof *k->stages * (size_t)j->nstages);
	for (int c = 0; c < j->nstages; c++) {
		tm_stage *st = &k->stages[c];
		*st = j->stages[c];
		if (layers[c] == st->layers)
			continue;
		st->mem_gib += (layers[c] - st->layers) * j->layer_mem_gib;
		if (st->mem_gib < 0)  /* layer_mem_gib overstates a small stage */
			st->mem_gib = 0;
		st->layers = layers[c];
		st->fwd_ms = st->extra_fwd_ms + st->layers * j->layer_fwd_ms;
		st->bwd_ms = st->extra_bwd_ms + st->layers * j->layer_bwd_ms;
	}
	return k;
}
