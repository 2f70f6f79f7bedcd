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

/* The two orders for tm_sort, a merge sort: n log n whatever the input,
 * where the C library's qsort may fall back to a quicksort. */
static int sort_host_uuid(const void *x, const void *y, void *ctx)
{
	(void)ctx;
	return cmp_host_uuid(x, y);
}

static int sort_host_gpu(const void *x, const void *y, void *ctx)
{
	(void)ctx;
	return cmp_host_gpu(x, y);
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
	tm_sort(S->by_uuid, S->nu, sizeof *S->by_uuid, sort_host_uuid, NULL);
	tm_sort(S->bare, S->nb, sizeof *S->bare, sort_host_gpu, NULL);
	tm_sort(S->all, S->na, sizeof *S->all, sort_host_gpu, NULL);
}

static void gpuset_clear(gpuset *S)
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

/* ---- the moves --------------------------------------------------------------- */

/* One rank on another GPU in NEW. */
typedef struct move {
	int rank;
	bool uuids;          /* same host and index, another UUID: show them */
	char *why;           /* what NEW's replan recorded, else derived */
} move;

/* The comparison of two plans, ready to render. */
typedef struct diff {
	tm_plan_doc O, N;    /* OLD and NEW */
	bool extra;          /* some rank has a tp, cp or ep coordinate */
	bool same_job;       /* both were made for the same job file */
	int n;               /* moves */
	move *m;             /* in rank order */
} diff;

static void diff_clear(diff *D)
{
	for (int i = 0; i < D->n; i++)
		free(D->m[i].why);
	free(D->m);
	tm_plan_doc_clear(&D->O);
	tm_plan_doc_clear(&D->N);
}

/* Reads both plans into D and finds the ranks that move, with why. */
static int diff_read(const char *old_dir, const char *new_dir, diff *D,
                     tm_error *err)
{
	tm_plan_doc *O = &D->O, *N = &D->N;
	gpuset S;
	strbuf why;
	bool replaces;
	int rc;

	memset(D, 0, sizeof *D);
	rc = tm_plan_doc_load(old_dir, O, err);
	if (!rc)
		rc = tm_plan_doc_load(new_dir, N, err);
	if (rc)
		return rc;
	if (O->n != N->n)
		return tm_fail(err, TM_EINPUT, "%s and %s: %d and %d ranks; diff "
		               "compares plans of one job", O->file, N->file, O->n,
		               N->n);
	/* the same rank must do the same work in both, or a "move" means
	 * nothing */
	for (int r = 0; r < O->n; r++) {
		const tm_plan_rank *a = &O->r[r], *c = &N->r[r];
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
		if (what)
			return tm_fail(err, TM_EINPUT, "ranks[%d]: %s %d in %s, %d in "
			               "%s; the plans are of different parallel "
			               "layouts", r, what, x, O->file, y, N->file);
		for (int d = TM_TP; d <= TM_EP; d++)
			D->extra = D->extra || a->coord[d] != 0;
	}
	D->m = xmalloc(sizeof *D->m * (size_t)O->n);
	for (int r = 0; r < O->n; r++)
		if (!same_gpu(&O->r[r], &N->r[r]))
			D->m[D->n++].rank = r;
	D->same_job = strcmp(O->job, N->job) == 0;
	replaces = N->previous && N->why && strcmp(N->previous, O->id) == 0;
	memset(&S, 0, sizeof S);
	if (D->n)
		gpuset_init(&S, N);
	sb_init(&why);
	for (int i = 0; i < D->n; i++) {
		int r = D->m[i].rank;
		const tm_plan_rank *a = &O->r[r], *c = &N->r[r];
		const char *reason = replaces ? N->why[r] : NULL;
		D->m[i].uuids = !strcmp(a->host, c->host) && a->gpu == c->gpu;
		if (!reason) {
			why.len = 0;
			why.s[0] = '\0';
			derive_why(a, c, !gpuset_has(&S, a), &why);
			reason = why.s;
		}
		D->m[i].why = xstrdup(reason);
	}
	sb_free(&why);
	gpuset_clear(&S);
	return 0;
}

/* ---- the renderers ----------------------------------------------------------- */

static void render_text(strbuf *b, const diff *D)
{
	const tm_plan_doc *O = &D->O, *N = &D->N;
	sb_addf(b, "plan %s -> plan %s: ", O->id, N->id);
	if (D->n)
		sb_addf(b, "%d of %d ranks move\n", D->n, O->n);
	else
		sb_add(b, "no rank moves\n");
	if (!D->same_job)
		sb_add(b, "note: the plans were made for different job files\n");
	for (int i = 0; i < D->n; i++) {
		const move *m = &D->m[i];
		const tm_plan_rank *a = &O->r[m->rank], *c = &N->r[m->rank];
		sb_addf(b, "rank %d (node %d, local %d; pp %d dp %d", m->rank,
		        a->node, a->local, a->coord[TM_PP], a->coord[TM_DP]);
		for (int d = TM_TP; D->extra && d <= TM_EP; d++)
			sb_addf(b, " %s %d", tm_dim_names[d], a->coord[d]);
		sb_add(b, "): ");
		add_gpu(b, a, m->uuids);
		sb_add(b, " -> ");
		add_gpu(b, c, m->uuids);
		sb_add(b, ": ");
		/* text a plan carries, shown on one line */
		sb_add_text(b, m->why);
		sb_add(b, "\n");
	}
}

static void render_json(strbuf *b, const diff *D)
{
	const tm_plan_doc *O = &D->O, *N = &D->N;
	jw w;
	jw_init(&w, b);
	jw_obj(&w, NULL, false);
	jw_str(&w, "old", O->id);
	jw_str(&w, "new", N->id);
	jw_int(&w, "world", O->n);
	jw_int(&w, "moved", D->n);
	jw_bool(&w, "same_job", D->same_job);
	jw_arr(&w, "moves", false);
	for (int i = 0; i < D->n; i++) {
		const move *m = &D->m[i];
		const tm_plan_rank *a = &O->r[m->rank], *c = &N->r[m->rank];
		jw_obj(&w, NULL, true);
		jw_int(&w, "rank", m->rank);
		jw_int(&w, "node_rank", a->node);
		jw_int(&w, "local_rank", a->local);
		jw_int(&w, "pp", a->coord[TM_PP]);
		jw_int(&w, "dp", a->coord[TM_DP]);
		for (int d = TM_TP; D->extra && d <= TM_EP; d++)
			jw_int(&w, tm_dim_names[d], a->coord[d]);
		json_gpu(&w, "from", a);
		json_gpu(&w, "to", c);
		jw_str(&w, "why", m->why);
		jw_end_obj(&w);
	}
	jw_end_arr(&w);
	jw_end_obj(&w);
}

/* One renderer per format diff offers (TM_FORMATS_DIFF). */
static void (*const render[TM_NFORMATS])(strbuf *, const diff *) = {
	[TM_FORMAT_TEXT] = render_text,
	[TM_FORMAT_JSON] = render_json,
};

/* ---- diff -------------------------------------------------------------------- */

int tm_diff_plans(const char *old_dir, const char *new_dir, int fmt,
                  char **out, tm_error *err)
{
	diff D;
	strbuf b;
	int rc;

	*out = NULL;
	if (fmt < 0 || fmt >= TM_NFORMATS || !render[fmt])
		return tm_fail(err, TM_EUSAGE, "diff: unknown output format %d",
		               fmt);
	if (!(rc = diff_read(old_dir, new_dir, &D, err))) {
		sb_init(&b);
		render[fmt](&b, &D);
		*out = b.s;
	}
	diff_clear(&D);
	return rc;
}

int tm_plan_diff(const char *old_dir, const char *new_dir, int fmt,
                 char **out, tm_error *err)
{
	if (fmt != 0 && fmt != 1) {
		*out = NULL;
		return tm_fail(err, TM_EUSAGE, "diff: unknown output format %d",
		               fmt);
	}
	return tm_diff_plans(old_dir, new_dir, fmt ? TM_FORMAT_JSON :
	                     TM_FORMAT_TEXT, out, err);
}
