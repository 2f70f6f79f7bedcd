/*
 * diff.c — `thermap diff OLD NEW`: reads two plan.json files, checks that
 * they place the same ranks (same world size, same coordinates per rank)
 * and lists the ranks whose GPU differs. A GPU is host + UUID when both
 * plans name the rank's UUID (indices can change across a reboot, UUIDs
 * cannot), else host + nvidia-smi index. The reason for a move is the one
 * `thermap replan` recorded when NEW replaces OLD, else what the two plans'
 * predicted temperatures say. The same inputs give the same bytes.
 */
#include <stdlib.h>
#include <string.h>


#include "ops/ops.h"


/* ---- comparing ----------------------------------------------------------- */

/* A rank's GPU in two plans: by UUID when both know it, else by index. */
static bool same_gpu(const tm_plan_rank *a, const tm_plan_rank *b)
{
	if (strcmp(a->host, b->host) != 0)
		return false;
	if (a->uuid && b->uuid)
		return strcmp(a->uuid, b->uuid) == 0;
	return a->gpu == b->gpu;
}

static int cmp_host_uuid(const void *x, const void *y)
{
	const tm_plan_rank *a = *(const tm_plan_rank *const *)x;
	const tm_plan_rank *b = *(const tm_plan_rank *const *)y;
	int c = strcmp(a->host, b->host);
	return c ? c : strcmp(a->uuid, b->uuid);
}

static int cmp_host_gpu(const void *x, const void *y)
{
	const tm_plan_rank *a = *(const tm_plan_rank *const *)x;
	const tm_plan_rank *b = *(const tm_plan_rank *const *)y;
	int c = strcmp(a->host, b->host);
	return c ? c : (a->gpu > b->gpu) - (a->gpu < b->gpu);
}

/* NEW's GPUs sorted three ways, so that "is OLD's GPU still used" costs a
 * binary search, not a pass over a world of up to 2^20 ranks. */
typedef struct gpuset {
	const tm_plan_rank **by_uuid;  /* ranks with a UUID, by host and UUID */
	const tm_plan_rank **bare;     /* ranks without one, by host and index */
	const tm_plan_rank **all;      /* every rank, by host and index */
	size_t nu, nb, na;
} gpuset;

static void gpuset_init(gpuset *S, const tm_plan_doc *P)
{
	size_t n = (size_t)P->n;
	memset(S, 0, sizeof *S);
	S->by_uuid = xmalloc(n * sizeof *S->by_uuid);
	S->bare = xmalloc(n * sizeof *S->bare);
	S->all = xmalloc(n * sizeof *S->all);
	for (size_t r = 0; r < n; r++) {
		const tm_plan_rank *d = &P->r[r];
		if (d->uuid)
			S->by_uuid[S->nu++] = d;
		else
			S->bare[S->nb++] = d;
		S->all[S->na++] = d;
	}
	qsort(S->by_uuid, S->nu, sizeof *S->by_uuid, cmp_host_uuid);
	qsort(S->bare, S->nb, sizeof *S->bare, cmp_host_gpu);
	qsort(S->all, S->na, sizeof *S->all, cmp_host_gpu);
}

static void gpuset_free(gpuset *S)
{
	free(S->by_uuid);
	free(S->bare);
	free(S->all);
}

/* Whether some rank of the set is on d's GPU under same_gpu's rule. */
static bool gpuset_has(const gpuset *S, const tm_plan_rank *d)
{
	if (!d->uuid)
		return bsearch(&d, S->all, S->na, sizeof *S->all, cmp_host_gpu);
	return bsearch(&d, S->by_uuid, S->nu, sizeof *S->by_uuid,
	               cmp_host_uuid) ||
	       bsearch(&d, S->bare, S->nb, sizeof *S->bare, cmp_host_gpu);
}

static void add_gpu(strbuf *b, const tm_plan_rank *d, bool uuid)
{
	sb_addf(b, "%s GPU %d", d->host, d->gpu);
	if (uuid && d->uuid)
		sb_addf(b, " (%s)", d->uuid);
}

static void derive_why(const tm_plan_rank *o, const tm_plan_rank *n,
                       bool freed, strbuf *b)
{
	sb_addf(b, "stage %d", o->coord[TM_PP]);
	if (isfinite(o->temp) && isfinite(n->temp))
		sb_addf(b, ": predicted %.1f °C on the old GPU, %.1f °C on the "
		        "new (%.1f °C %s)", o->temp, n->temp,
		        fabs(n->temp - o->temp), n->temp <= o->temp ? "cooler" :
		        "hotter");
	if (freed)
		sb_add(b, "; the old GPU is not used by the new plan");
}

static void json_gpu(jw *w, const char *key, const tm_plan_rank *d)
{
	jw_obj(w, key, true);
	jw_str(w, "host", d->host);
	jw_int(w, "gpu_index", d->gpu);
	jw_str(w, "uuid", d->uuid);
	jw_end_obj(w);
}

int tm_plan_diff(const char *old_dir, const char *new_dir, int fmt,
                 char **out, tm_error *err)
{
	tm_plan_doc O, N;
	gpuset S;
	strbuf b, why;
	jw w;
	bool extra = false, same_job, replaces;
	int *moved = NULL, k = 0, rc;

	*out = NULL;
	if (fmt != 0 && fmt != 1)
		return tm_fail(err, TM_EUSAGE, "diff: unknown output format %d",
		               fmt);
	rc = tm_plan_doc_load(old_dir, &O, err);
	if (!rc)
		rc = tm_plan_doc_load(new_dir, &N, err);
	else
		memset(&N, 0, sizeof N);
	if (rc)
		goto out;
	if (O.n != N.n) {
		rc = tm_fail(err, TM_EINPUT, "%s and %s: %d and %d ranks; diff "
		             "compares plans of one job", O.file, N.file, O.n, N.n);
		goto out;
	}
	/* the same rank must do the same work in both, or a "move" means
	 * nothing */
	for (int r = 0; r < O.n; r++) {
		const tm_plan_rank *a = &O.r[r], *c = &N.r[r];
		const char *what = NULL;
		int x = 0, y = 0;
		for (int d = TM_NDIM - 1; d >= 0 && !what; d--)
			if (a->coord[d] != c->coord[d]) {
				what = tm_dim_names[d];
				x = a->coord[d];
				y = c->coord[d];
			}
		if (!what && a->node != c->node) {
			what = "node_rank";
			x = a->node;
			y = c->node;
		}
		if (!what && a->local != c->local) {
			what = "local_rank";
			x = a->local;
			y = c->local;
		}
		if (what) {
			rc = tm_fail(err, TM_EINPUT, "ranks[%d]: %s %d in %s, %d in %s; "
			             "the plans are of different parallel layouts", r,
			             what, x, O.file, y, N.file);
			goto out;
		}
		for (int d = TM_TP; d <= TM_EP; d++)
			extra = extra || a->coord[d] != 0;
	}
	moved = xmalloc(sizeof(int) * (size_t)O.n);
	for (int r = 0; r < O.n; r++)
		if (!same_gpu(&O.r[r], &N.r[r]))
			moved[k++] = r;
	same_job = strcmp(O.job, N.job) == 0;
	replaces = N.previous && N.why && strcmp(N.previous, O.id) == 0;
	memset(&S, 0, sizeof S);
	if (k)
		gpuset_init(&S, &N);

	sb_init(&b);
	sb_init(&why);
	jw_init(&w, &b);
	if (fmt == 0) {
		sb_addf(&b, "plan %s -> plan %s: ", O.id, N.id);
		if (k)
			sb_addf(&b, "%d of %d ranks move\n", k, O.n);
		else
			sb_add(&b, "no rank moves\n");
		if (!same_job)
			sb_add(&b, "note: the plans were made for different job "
			       "files\n");
	} else {
		jw_obj(&w, NULL, false);
		jw_str(&w, "old", O.id);
		jw_str(&w, "new", N.id);
		jw_int(&w, "world", O.n);
		jw_int(&w, "moved", k);
		jw_bool(&w, "same_job", same_job);
		jw_arr(&w, "moves", false);
	}
	for (int i = 0; i < k; i++) {
		int r = moved[i];
		const tm_plan_rank *a = &O.r[r], *c = &N.r[r];
		/* equal host and index but another UUID: show the UUIDs */
		bool uu = !strcmp(a->host, c->host) && a->gpu == c->gpu;
		const char *reason = replaces ? N.why[r] : NULL;
		if (!reason) {
			why.len = 0;
			why.s[0] = '\0';
			derive_why(a, c, !gpuset_has(&S, a), &why);
			reason = why.s;
		}
		if (fmt == 0) {
			sb_addf(&b, "rank %d (node %d, local %d; pp %d dp %d", r,
			        a->node, a->local, a->coord[TM_PP], a->coord[TM_DP]);
			for (int d = TM_TP; extra && d <= TM_EP; d++)
				sb_addf(&b, " %s %d", tm_dim_names[d], a->coord[d]);
			sb_add(&b, "): ");
			add_gpu(&b, a, uu);
			sb_add(&b, " -> ");
			add_gpu(&b, c, uu);
			sb_add(&b, ": ");
			/* text a plan carries, shown on one line */
			sb_add_text(&b, reason);
			sb_add(&b, "\n");
		} else {
			jw_obj(&w, NULL, true);
			jw_int(&w, "rank", r);
			jw_int(&w, "node_rank", a->node);
			jw_int(&w, "local_rank", a->local);
			jw_int(&w, "pp", a->coord[TM_PP]);
			jw_int(&w, "dp", a->coord[TM_DP]);
			for (int d = TM_TP; extra && d <= TM_EP; d++)
				jw_int(&w, tm_dim_names[d], a->coord[d]);
			json_gpu(&w, "from", a);
			json_gpu(&w, "to", c);
			jw_str(&w, "why", reason);
			jw_end_obj(&w);
		}
	}
	if (fmt == 1) {
		jw_end_arr(&w);
		jw_end_obj(&w);
	}
	sb_free(&why);
	gpuset_free(&S);
	*out = b.s;
out:
	free(moved);
	tm_plan_doc_free(&O);
	tm_plan_doc_free(&N);
	return rc;
}
